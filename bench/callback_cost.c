/* bench/callback_cost.c - what rangeprof's own CUPTI callback (inject/callback/launch.c)
 * costs the CPU for a kernel launch it does not measure, beside an empty callback of the
 * same signature (issue 35 item 6). On the H200 the callbacks together cost ~0.25 us a
 * launch over plain (session 18, lazy set-up, nothing measured); this tells rangeprof's
 * handler apart from CUPTI's dispatch, which no change here can touch.
 * It calls the real launch.c and select.c, as CUPTI calls them (ENTER, then EXIT, of
 * cuLaunchKernel), on the unit tests' stand-in driver world (tests/unit/inject/fake_world.c):
 * no GPU, no CUPTI. Each way runs in a child process of its own, as each process under the
 * library has one session: not measuring (before the driver's start); the control API's
 * gate closed (a notebook between calls); --nvtx-include never/ (launcher, no range open)
 * with lazy and early set-up; -k with a name that never matches.
 * Build: meson setup build-bench -Dbench=true && meson compile -C build-bench bench
 * (bench/meson.build; needs Criterion's tests built, for the stand-ins). Run: callback_cost
 * [LAUNCHES [REPEATS]] (defaults 1000000 and 9): the median over REPEATS loops of
 * nanoseconds per launch, ENTER and EXIT together, and the records written (0: none of the
 * launches was measured). Runs anywhere; CPU figures are the machine's own. */
#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/options.h"
#include "inject/callback/launch.h"
#include "inject/inject.h"
#include "inject/output.h"
#include "tests/unit/inject/fake_world.h"

typedef void(CUPTIAPI *callback_fn)(void *, CUpti_CallbackDomain, CUpti_CallbackId,
				     const void *);

/* The floor of a callback: CUPTI's call through a pointer into a function that does
 * nothing the compiler may drop. */
static volatile unsigned empty_calls;
static void CUPTIAPI empty_callback(void *userdata, CUpti_CallbackDomain domain,
				    CUpti_CallbackId cbid, const void *data)
{
	(void)userdata, (void)domain, (void)cbid, (void)data;
	empty_calls++;
}

static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static double ns_per_launch(callback_fn callback, long launches)
{
	cuLaunchKernel_params p = { .f = (CUfunction)1, .gridDimX = 4, .gridDimY = 1,
				    .gridDimZ = 1, .blockDimX = 128, .blockDimY = 1,
				    .blockDimZ = 1 };
	CUresult rc = CUDA_SUCCESS;
	CUpti_CallbackData cb = { .functionParams = &p, .functionReturnValue = &rc,
				  .context = fw.current, .contextUid = 1,
				  .symbolName = "_Z6tinyv" };
	double start = now_ns();
	for (long i = 0; i < launches; i++) {
		cb.callbackSite = CUPTI_API_ENTER;
		callback(NULL, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
			 &cb);
		cb.callbackSite = CUPTI_API_EXIT;
		callback(NULL, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
			 &cb);
	}
	return (now_ns() - start) / (double)launches;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median_ns(callback_fn callback, long launches, int repeats)
{
	double *v = calloc((size_t)repeats, sizeof(*v));
	if (!v) {
		fprintf(stderr, "callback_cost: out of memory\n");
		exit(1);
	}
	for (int r = 0; r < repeats; r++)
		v[r] = ns_per_launch(callback, launches);
	qsort(v, (size_t)repeats, sizeof(*v), cmp_double);
	double m = v[repeats / 2];
	free(v);
	return m;
}

struct way {
	const char *name;
	const char *setup;           /* --setup */
	const char *nvtx_include;    /* or NULL */
	const char *kernel_name;     /* or NULL */
	bool measuring;              /* inject_output_measuring_start() called */
	bool controlled;             /* the control API's gate, no annotation open */
};

static const struct way ways[] = {
	{ "not measuring", "lazy", NULL, NULL, false, false },
	{ "control, gate closed", "lazy", NULL, NULL, true, true },
	{ "--nvtx-include never/, lazy", "lazy", "never/", NULL, true, false },
	{ "--nvtx-include never/, early", "early", "never/", NULL, true, false },
	{ "-k other (never matches)", "lazy", NULL, "other", true, false },
};

static void set(struct rp_options *opts, enum rp_option id, const char *value)
{
	char err[512];
	if (rp_option_set(opts, id, value, "callback_cost", err, sizeof(err)) != 0) {
		fprintf(stderr, "callback_cost: %s\n", err);
		exit(1);
	}
}

static int run_way(const struct way *w, long launches, int repeats)
{
	struct rp_options opts;
	char err[512] = "";
	fake_world_init();
	/* This thread is the application's: launch.c takes the replay lock itself. */
	inject_session_unlock();
	rp_options_init(&opts);
	set(&opts, RP_OPT_SETUP, w->setup);
	if (w->nvtx_include)
		set(&opts, RP_OPT_NVTX_INCLUDE, w->nvtx_include);
	if (w->kernel_name)
		set(&opts, RP_OPT_KERNEL_NAME, w->kernel_name);
	fake_world_callback_stand_ins();
	if (inject_launch_configure(&opts, err, sizeof(err)) != 0 ||
	    inject_launch_enable((CUpti_SubscriberHandle)0x5b, err, sizeof(err)) != 0) {
		fprintf(stderr, "callback_cost: %s: %s\n", w->name, err);
		return 1;
	}
	if (w->measuring)
		inject_output_measuring_start();
	if (w->controlled)
		inject_launch_control();
	/* Early: the figure is the steady state after the set-up, which the device's first
	 * launch starts on rangeprof's thread (early.c). */
	if (!strcmp(w->setup, "early")) {
		ns_per_launch(inject_launch_callback, 1);
		for (int i = 0; i < 2000 && !fake_records("setup"); i++)
			nanosleep(&(struct timespec){ 0, 1000 * 1000 }, NULL);
		if (!fake_records("setup")) {
			fprintf(stderr, "callback_cost: %s: the early set-up did not run\n", w->name);
			return 1;
		}
	}
	double empty = median_ns(empty_callback, launches, repeats);
	double ours = median_ns(inject_launch_callback, launches, repeats);
	size_t records = fake_records("run");
	printf("%-30s %8.1f %10.1f %10.1f %8zu\n", w->name, empty, ours, ours - empty, records);
	fflush(stdout);
	return records == 0 ? 0 : 1;
}

static long parse_positive(const char *s, const char *what, long max)
{
	char *end = NULL;
	long v = strtol(s, &end, 10);
	if (!*s || *end || v < 1 || v > max) {
		fprintf(stderr, "callback_cost: %s '%s': expected a whole number from 1 to %ld\n",
			what, s, max);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	if (argc > 3) {
		fprintf(stderr, "usage: callback_cost [LAUNCHES [REPEATS]]\n");
		return 2;
	}
	long launches = argc > 1 ? parse_positive(argv[1], "LAUNCHES", 100000000L) : 1000000;
	int repeats = argc > 2 ? (int)parse_positive(argv[2], "REPEATS", 999) : 9;
	printf("ns per unselected launch (ENTER + EXIT), median of %d loops of %ld\n", repeats,
	       launches);
	printf("%-30s %8s %10s %10s %8s\n", "way", "empty", "rangeprof", "beyond", "records");
	int status = 0;
	for (size_t i = 0; i < sizeof(ways) / sizeof(ways[0]); i++) {
		fflush(stdout);
		pid_t child = fork();
		if (child < 0) {
			perror("callback_cost: fork");
			return 1;
		}
		if (child == 0)
			_exit(run_way(&ways[i], launches, repeats));
		int ws = 0;
		if (waitpid(child, &ws, 0) < 0 || !WIFEXITED(ws) || WEXITSTATUS(ws) != 0) {
			if (WIFSIGNALED(ws))
				fprintf(stderr, "callback_cost: %s: killed by signal %d\n",
					ways[i].name, WTERMSIG(ws));
			else
				fprintf(stderr, "callback_cost: %s: failed (a launch was measured, "
					"or the set-up was refused)\n", ways[i].name);
			status = 1;
		}
	}
	return status;
}
