/* tests/integration/nvtx_probe.c - the NVTX bridge as its own injection library, with one
 * extra export for the test program to ask what the bridge sees on the calling thread. */
#include <stdio.h>

#include "nvtx_bridge/nvtx_bridge.h"

__attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t f);
__attribute__((visibility("default"))) const char *nvtx_probe_seen(void);

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
