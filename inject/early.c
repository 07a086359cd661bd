/* inject/early.c - --setup early: a device's set-up (inject_session_set_up_early) runs on a
 * thread of rangeprof's, started at the first kernel launch or allocation rangeprof sees
 * on that device, so that the first measured launch does not wait for CUPTI's one-time
 * work: on the H200 ~0.1 s of profiler and host set-up for time-only metrics (~0.25 s
 * with counters, whose set makes the counter availability query) and ~0.15 s for a range
 * profiler's first pass (bench/first_launch_probe.cu P1: doc/measurements.md, "Host
 * set-up" and "First Start of a range profiler object"). The first measured launch then
 * costs 15.7-18.0 ms instead of 305-376 ms (doc/measurements.md, "First measured launch;
 * early and lazy set-up").
 * Why then rather than at context creation: in a program on the CUDA runtime, the runtime
 * has by then finished initialising and registered its exit handlers, so the handler
 * registered here runs before them and waits (at most EARLY_EXIT_WAIT_S) for a set-up
 * still under way. One that ran on under CUDA's own teardown crashed inside CUPTI (SIGSEGV
 * in libnvperf_host.so, when the set-up started at context creation: doc/measurements.md,
 * "First measured launch; early and lazy set-up"). A driver-API program that starts
 * the runtime only later has its handlers registered after ours: there the order is not
 * guaranteed, and --setup lazy is the safe choice if it exits right after its first
 * allocation.
 * One set-up per device and process: a later context on the device (after a reset) is
 * set up at its first measured launch.
 * The set-up itself, and the replay lock it needs, are handed in by launch.c
 * (inject_early_configure).
 * Calls: contexts.c, collector/.
 * Called by: launch.c (configures it; a thread's first launches in a context), init.c (a
 * fork's child), control.c (rangeprof_before_exit's wait).
 * Lock: lock (the devices set up or being set up, and the set-up threads). */
#include "inject/early.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "collector/api.h"
#include "common/join.h"
#include "inject/rangeprof_control.h"
#include "inject/session/contexts.h"

/* The longest wait at exit for one set-up: it takes under a second (the `setup` record:
 * 303-746 ms on rangeprof's thread on the H200, doc/measurements.md, "First measured
 * launch; early and lazy set-up"), but it waits for the replay lock, which a replay that
 * never ends (a kernel waiting for a peer, the watchdog's case) could keep; exit must not
 * hang on it. */
#define EARLY_EXIT_WAIT_S 5

struct request {
	CUcontext ctx;
	uint32_t context_id;
	inject_context_gen gen;
};

static bool enabled;
static inject_early_fn set_up;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* Set under the lock; read without it on the launch path, so that a launch in a context
 * whose device has started costs no lock even when a thread alternates contexts. */
static atomic_bool device_started[RANGEPROF_MAX_DEVICES];
static pthread_t threads[RANGEPROF_MAX_DEVICES];
static unsigned thread_count;
static bool exit_handler_registered;
static atomic_bool exiting;
/* Contexts this thread has seen whose device's set-up has started: a launch in one of them
 * costs a few comparisons and no driver call, even for a thread that alternates contexts
 * (one thread driving several GPUs). A handle reused for another device's context after a
 * destroy only leaves that device to be set up at its first measured launch. */
#define EARLY_SEEN 8
static __thread CUcontext seen[EARLY_SEEN];
static __thread unsigned seen_next;

void inject_early_configure(bool on, inject_early_fn fn)
{
	enabled = on;
	set_up = fn;
}

bool inject_early_enabled(void)
{
	return enabled;
}

bool inject_early_exiting(void)
{
	return atomic_load(&exiting);
}

static void *run_set_up(void *arg)
{
	struct request r = *(struct request *)arg;
	free(arg);
	set_up(r.ctx, r.context_id, r.gen);
	return NULL;
}

/* At exit, before CUDA's own handlers: the set-ups still running are waited for (each
 * takes under a second, above; a set-up not yet past its lock sees the flag and does
 * nothing), and none starts any more. */
void inject_early_wait(void)
{
	pthread_mutex_lock(&lock);
	atomic_store(&exiting, true);
	unsigned n = thread_count;
	thread_count = 0;
	pthread_mutex_unlock(&lock);
	rp_join_within(threads, n, EARLY_EXIT_WAIT_S);
}

enum inject_early_start inject_early_start(CUcontext ctx, uint32_t context_id)
{
	if (!enabled)
		return INJECT_EARLY_OFF;
	CUdevice dev;
	if (rp_api.cuCtxGetDevice(&dev) != CUDA_SUCCESS || dev < 0 || dev >= RANGEPROF_MAX_DEVICES)
		return INJECT_EARLY_FAILED;
	if (atomic_load_explicit(&device_started[dev], memory_order_relaxed))
		return INJECT_EARLY_ALREADY;
	pthread_mutex_lock(&lock);
	if (atomic_load(&exiting) || atomic_load(&device_started[dev])) {
		pthread_mutex_unlock(&lock);
		return atomic_load(&exiting) ? INJECT_EARLY_OFF : INJECT_EARLY_ALREADY;
	}
	atomic_store(&device_started[dev], true);
	enum inject_early_start result = INJECT_EARLY_FAILED;
	struct request *r = malloc(sizeof(*r));
	if (r) {
		*r = (struct request){ ctx, context_id, inject_contexts_created(ctx) };
		if (!exit_handler_registered)
			exit_handler_registered = atexit(inject_early_wait) == 0;
		/* The thread inherits this thread's signal mask: with every signal blocked, the
		 * application's handlers keep running on its own threads only. */
		sigset_t all, old;
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		if (exit_handler_registered &&
		    pthread_create(&threads[thread_count], NULL, run_set_up, r) == 0) {
			thread_count++;
			result = INJECT_EARLY_STARTED;
		} else {
			free(r); /* the first measured launch sets the device up instead */
		}
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	pthread_mutex_unlock(&lock);
	return result;
}

void inject_early_context_used(CUcontext ctx, uint32_t context_id)
{
	if (!enabled)
		return;
	for (unsigned i = 0; i < EARLY_SEEN; i++)
		if (seen[i] == ctx)
			return;
	seen[seen_next++ % EARLY_SEEN] = ctx; /* its device starts below, has, or cannot */
	inject_early_start(ctx, context_id);
}

void inject_early_fork_child(void)
{
	/* The parent's set-up threads do not exist here, and a child forked without exec
	 * measures nothing (init.c). The child is single-threaded now: the lock, which
	 * another of the parent's threads may have held at the fork, is made anew. */
	pthread_mutex_init(&lock, NULL);
	thread_count = 0;
	atomic_store(&exiting, true);
}
