/* bench/busy_probe.c - which CUPTI state in one process keeps another process's range
 * profiler from starting on the same GPU (CUPTI_ERROR_HARDWARE_BUSY), and how soon after
 * that state ends the other process gets the hardware (issue 23).
 *
 * Two processes on device 0, forked before either initialises CUDA. Process A steps
 * through the states a measuring rangeprof process goes through; at each one process B
 * makes the calls of a measurement from nothing (metric set with its counter availability
 * query, cuptiRangeProfilerEnable, one pass: SetConfig, Start, Stop, DecodeData, then
 * Disable) and prints which call failed. Both use collector/'s own functions, so the
 * probe exercises the calls rangeprof makes, in the order it makes them.
 *   S0  A: a context and nothing else
 *   S1  A: a metric set built (profiler host, counter availability: cuptiProfilerInitialize)
 *   S2  A: a range profiler enabled (cuptiRangeProfilerEnable), no pass yet
 *   S3  A: after one pass (SetConfig, Start, Stop, DecodeData): idle, still enabled - what
 *       a process keeps between launches while it believes it is alone
 *   S4  A: the profiler disabled (cuptiRangeProfilerDisable), the metric set kept
 *   S5  A: inside a pass (Start, no Stop yet) - the turn-taking's own case
 *   S6  A: enabled and idle again; B retries every 0.2 ms while A disables after 50 ms:
 *       the time from A's Disable returning to B's first successful Start
 * A second mode, hold, is a profiler outside rangeprof that keeps the hardware: one
 * process (no fork) puts itself in S3 on device 0 for SECONDS, then disables. ncu's kernel
 * replay lets go between kernels, so it never showed rangeprof's --busy-timeout wait on
 * the GPU; this does (tests/gpu/concurrency.sh, case holder; doc/concurrency.md). It
 * prints "holding the profiling hardware for SECONDS s" once S3 is reached, then
 * "released after X s" once Disable returned; SIGTERM or SIGINT ends the wait early and
 * still disables, so that a script that stops it never leaves the hardware held.
 * Build: meson setup build-bench -Dbench=true && meson compile -C build-bench bench
 * (bench/meson.build), or by hand from the repository root after `ninja -C build`:
 *   cc -std=c11 -O2 -D_GNU_SOURCE -I. -I/usr/local/cuda/include -Icommon/cshim bench/busy_probe.c \
 *      build/collector/librp_collector.a build/collector/librp_collector_core.a \
 *      build/common/librp_common.a -lcjson -ldl -lm -lpthread -o /tmp/busy_probe
 * Run: busy_probe [metrics] (default gpu__time_duration.sum,dram__bytes_read.sum): S0-S6;
 *      busy_probe hold SECONDS [metrics]: the holder (exit 0 once released, 1 when it could
 *      not reach S3, 2 on bad arguments).
 * Result (H200, 2026-12-02, doc/concurrency.md): S3 and S5 fail, every other state lets B
 * measure; Disable takes ~12 ms and B's next try succeeds. Cited by inject/session/devlock.h,
 * inject/session/devlock.c and inject/session/session.c (the hand-over of the profiling
 * hardware). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "collector/api.h"
#include "collector/profiler.h"

/* A counter beside the timer: B then fails at the availability query in S3, not at Start. */
static const char default_metrics[] = "gpu__time_duration.sum,dram__bytes_read.sum";

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static CUcontext context(void)
{
	char err[1024];
	CUdevice dev;
	CUcontext ctx;
	if (collector_api_load("/usr/local/cuda/lib64", err, sizeof(err)) || rp_api.cuInit(0) ||
	    rp_api.cuDeviceGet(&dev, 0) || rp_api.cuDevicePrimaryCtxRetain(&ctx, dev) ||
	    rp_api.cuCtxSetCurrent(ctx)) {
		fprintf(stderr, "no context: %s\n", err);
		exit(1);
	}
	return ctx;
}

/* A metric set built, a range profiler enabled and one pass made (S3): NULL, or the step
 * that failed with CUPTI's message in err. *set and *prof are what was made, either way. */
static const char *one_pass(CUcontext ctx, const char *metrics, struct collector_metric_set **set,
			    struct collector_profiler **prof, char *err, size_t err_size)
{
	*set = NULL;
	*prof = NULL;
	if (collector_metric_set_create(ctx, 0, metrics, set, err, err_size))
		return "metric set";
	if (collector_profiler_create(ctx, COLLECTOR_RANGE_PER_KERNEL, prof, err, err_size))
		return "enable";
	if (collector_profiler_warm_up(*prof, *set, 4, err, err_size))
		return "pass";
	return NULL;
}

/* B's measurement from nothing: "ok" or the failing step and CUPTI's message. */
static const char *try_measurement(CUcontext ctx, const char *metrics, char *out, size_t size)
{
	char err[2048] = "";
	struct collector_metric_set *set;
	struct collector_profiler *prof;
	const char *step = one_pass(ctx, metrics, &set, &prof, err, sizeof(err));
	collector_profiler_destroy(prof);
	collector_metric_set_destroy(set);
	if (!step)
		snprintf(out, size, "ok");
	else
		snprintf(out, size, "FAILS at %s: %s", step, err);
	return out;
}

static void say(int fd, char c)
{
	if (write(fd, &c, 1) != 1)
		exit(1);
}

static char hear(int fd)
{
	char c = 0;
	if (read(fd, &c, 1) != 1)
		exit(0);
	return c;
}

static void process_b(int from_a, int to_a, const char *metrics)
{
	CUcontext ctx = context();
	say(to_a, 'r');
	for (;;) {
		char stage = hear(from_a);
		char result[2300];
		if (stage == '6') {
			/* Retry until the hardware is ours; A disables 50 ms after our first try. */
			double first = now_ms(), ok_at = 0;
			int tries = 0;
			say(to_a, 'g');
			while (now_ms() - first < 5000) {
				tries++;
				if (!strcmp(try_measurement(ctx, metrics, result, sizeof(result)), "ok")) {
					ok_at = now_ms();
					break;
				}
				usleep(200);
			}
			char disabled_at[64];
			ssize_t n = read(from_a, disabled_at, sizeof(disabled_at) - 1);
			disabled_at[n > 0 ? n : 0] = '\0';
			double a_done = strtod(disabled_at, NULL);
			printf("S6  B: %d tries; first success %.2f ms after A's Disable returned "
			       "(%s)\n", tries, ok_at ? ok_at - a_done : -1.0,
			       ok_at ? "ok" : result);
		} else {
			double t = now_ms();
			try_measurement(ctx, metrics, result, sizeof(result));
			printf("S%c  B: %s (%.1f ms)\n", stage, result, now_ms() - t);
		}
		fflush(stdout);
		say(to_a, 'd');
	}
}

struct peer {
	int to_b, from_b;
};

static int ask_inside_pass(void *arg, unsigned run, unsigned pass)
{
	struct peer *p = arg;
	if (run == 0 && pass == 0) {
		say(p->to_b, '5');
		hear(p->from_b);
	}
	return 0;
}

static volatile sig_atomic_t stop_holding;

static void on_stop(int sig)
{
	stop_holding = sig;
}

/* hold: S3 in this process alone (metric set, Enable, one pass, as A reaches it), kept for
 * seconds, then Disable. Nothing else runs on the GPU here: whoever asks for the
 * profiling hardware meanwhile gets CUPTI_ERROR_HARDWARE_BUSY from a client that takes no
 * part in rangeprof's lock file, which is what --busy-timeout is for. */
static int hold(double seconds, const char *metrics)
{
	/* No SA_RESTART: the signal cuts the sleep short rather than being noticed after it. */
	struct sigaction sa = { .sa_handler = on_stop };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	CUcontext ctx = context();
	char err[2048] = "";
	struct collector_metric_set *set;
	struct collector_profiler *prof;
	const char *step = one_pass(ctx, metrics, &set, &prof, err, sizeof(err));
	if (step) {
		/* Not in S3: whoever waits for the holding line must not believe it held. */
		fprintf(stderr, "hold: FAILS at %s: %s\n", step, err);
		collector_profiler_destroy(prof);
		collector_metric_set_destroy(set);
		return 1;
	}
	printf("holding the profiling hardware for %g s\n", seconds);
	fflush(stdout);
	double held_at = now_ms(), until = held_at + seconds * 1e3;
	/* nanosleep in a loop: a signal ends it early (stop_holding), nothing else does. */
	for (double left = until - now_ms(); left > 0 && !stop_holding; left = until - now_ms()) {
		long long ns = (long long)(left * 1e6);
		struct timespec t = { (time_t)(ns / 1000000000), (long)(ns % 1000000000) };
		nanosleep(&t, NULL);
	}
	collector_profiler_destroy(prof);
	if (stop_holding)
		printf("released after %.2f s (signal %d)\n", (now_ms() - held_at) / 1e3,
		       (int)stop_holding);
	else
		printf("released after %.2f s\n", (now_ms() - held_at) / 1e3);
	fflush(stdout);
	collector_metric_set_destroy(set);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "hold")) {
		char *end = NULL;
		double seconds = argc > 2 ? strtod(argv[2], &end) : -1;
		if (argc < 3 || argc > 4 || end == argv[2] || *end || !(seconds >= 0) ||
		    seconds > 86400) {
			fprintf(stderr, "usage: busy_probe hold SECONDS [metrics]\n");
			return 2;
		}
		return hold(seconds, argc > 3 ? argv[3] : default_metrics);
	}
	const char *metrics = argc > 1 ? argv[1] : default_metrics;
	int a_to_b[2], b_to_a[2];
	if (pipe(a_to_b) || pipe(b_to_a))
		return 1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	pid_t b = fork();
	if (b == 0) {
		process_b(a_to_b[0], b_to_a[1], metrics);
		return 0;
	}
	int to_b = a_to_b[1], from_b = b_to_a[0];
	CUcontext ctx = context();
	hear(from_b);
	char err[2048];
	struct collector_metric_set *set = NULL;
	struct collector_profiler *prof = NULL;
	for (int round = 0; round < 3; round++) {
		printf("-- round %d (metrics %s)\n", round, metrics);
		say(to_b, '0');
		hear(from_b);
		if (!set && collector_metric_set_create(ctx, 0, metrics, &set, err, sizeof(err)))
			printf("A: metric set: %s\n", err);
		say(to_b, '1');
		hear(from_b);
		double t = now_ms();
		if (collector_profiler_create(ctx, COLLECTOR_RANGE_PER_KERNEL, &prof, err, sizeof(err)))
			printf("A: enable: %s\n", err);
		printf("A: enable %.2f ms\n", now_ms() - t);
		say(to_b, '2');
		hear(from_b);
		t = now_ms();
		if (prof && collector_profiler_warm_up(prof, set, 4, err, sizeof(err)))
			printf("A: pass: %s\n", err);
		printf("A: pass %.2f ms\n", now_ms() - t);
		say(to_b, '3');
		hear(from_b);
		t = now_ms();
		collector_profiler_destroy(prof);
		prof = NULL;
		printf("A: disable %.2f ms\n", now_ms() - t);
		say(to_b, '4');
		hear(from_b);
		/* S5: inside a pass: B tries from within A's run function, between A's Start
		 * and Stop (the pass holds no kernel, so A's own result is not looked at). */
		if (collector_profiler_create(ctx, COLLECTOR_RANGE_PER_KERNEL, &prof, err, sizeof(err)))
			printf("A: S5 enable: %s\n", err);
		struct peer peer = { to_b, from_b };
		double values[8], clocks[4];
		unsigned passes;
		if (prof)
			collector_profiler_measure(prof, set, 1, 1, ask_inside_pass, &peer, values, clocks,
						   &passes, NULL, err, sizeof(err));
		/* S6: idle and enabled; B retries; we disable after 50 ms. */
		say(to_b, '6');
		hear(from_b); /* B has started trying */
		usleep(50000);
		collector_profiler_destroy(prof);
		prof = NULL;
		char when[64];
		int n = snprintf(when, sizeof(when), "%.4f", now_ms());
		if (write(to_b, when, (size_t)n) != n)
			return 1;
		hear(from_b);
	}
	close(to_b);
	waitpid(b, NULL, 0);
	return 0;
}
