/* tests/integration/nvtx_probe.c - the NVTX bridge as its own injection library, with one
 * extra export for the test program to ask what the bridge sees on the calling thread. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "nvtx_bridge/nvtx_bridge.h"

__attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t f);
__attribute__((visibility("default"))) const char *nvtx_probe_seen(void);
__attribute__((visibility("default"))) double nvtx_probe_launch_check(int n);

int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t f)
{
	return nvtx_bridge_attach(f);
}

/* "domain@text/..." for push/pop, then "|start/end texts". */
const char *nvtx_probe_seen(void)
{
	static __thread char buf[1024];
	const struct nvtx_bridge_snapshot *s = nvtx_bridge_snapshot();
	size_t n = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < s->count && n < sizeof(buf); i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s%s%s%s",
				      i == s->push_count ? "|" : (i ? "/" : ""),
				      nvtx_bridge_domain_name(s->ranges[i].domain),
				      *nvtx_bridge_domain_name(s->ranges[i].domain) ? "@" : "",
				      s->ranges[i].text,
				      s->ranges[i].payload_type ? "#" : "");
	return buf;
}

/* What inject/callback/launch.c does at every kernel launch, n times: the filter's verdict on the
 * thread's snapshot. The filter wants "never" at the top of a stack that starts with
 * "base", any ranges between (NVTX_PROBE_INCLUDE overrides), so that the answer needs
 * the whole stack. Returns nanoseconds per check. */
double nvtx_probe_launch_check(int n)
{
	static struct nvtx_filter *filter;
	if (!filter) {
		char *include = getenv("NVTX_PROBE_INCLUDE");
		char *list[] = { include ? include : "base/*/never]" };
		char err[512];
		if (!(filter = nvtx_filter_create(list, 1, "NVTX_PROBE_INCLUDE", NULL, 0, "-", err,
						  sizeof(err)))) {
			fprintf(stderr, "%s\n", err);
			exit(2);
		}
	}
	struct timespec t0, t1;
	volatile int selected = 0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < n; i++)
		selected += nvtx_filter_selects(filter, nvtx_bridge_snapshot());
	clock_gettime(CLOCK_MONOTONIC, &t1);
	(void)selected; /* volatile: the loop's work is not optimised away */
	return ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / n;
}