/* inject/early.c - --setup early: a device's set-up (inject_replay_set_up_early) runs on a
 * thread of rangeprof's, started at the first kernel launch or allocation rangeprof sees
 * on that device, so that the first measured launch does not wait for CUPTI's one-time
 * work: ~0.25 s of profiler and host set-up and ~0.15 s for a range profiler's first pass
 * on the H200 (bench/first_launch_probe.cu, bench/NOTES.md).
 * Why then rather than at context creation: by then the CUDA runtime has finished
 * initialising and registered its exit handlers, so the handler registered here runs
 * before them and waits for a set-up still under way. One that ran on under CUDA's own
 * teardown crashed inside CUPTI (bench/NOTES.md: early set-up withdrawn in session 2).
 * One set-up per device and process: a later context on the device (after a reset) is
 * set up at its first measured launch.
 * The set-up itself, and the lock it needs, are launch.c's (inject_early_configure). */
#include "inject/early.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#include "collector/api.h"
#include "inject/contexts.h"

#define EARLY_MAX_DEVICES 64

struct request {
	CUcontext ctx;
	uint32_t context_id;
	inject_context_gen gen;
};

static bool enabled;
static inject_early_fn set_up;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static bool device_started[EARLY_MAX_DEVICES];
static pthread_t threads[EARLY_MAX_DEVICES];
static unsigned thread_count;
static bool exit_handler_registered;
static bool exiting;
/* The context this thread saw at its last launch: a launch in the same context as the
 * one before it costs one comparison. */
static __thread CUcontext last_seen;

void inject_early_configure(bool on, inject_early_fn fn)
{
	enabled = on;
	set_up = fn;
}

static void *run_set_up(void *arg)
{
	struct request r = *(struct request *)arg;
	free(arg);
	set_up(r.ctx, r.context_id, r.gen);
	return NULL;
}

/* At exit, before CUDA's own handlers: the set-ups still running are waited for (each
 * takes well under a second), and none starts any more. */
void inject_early_wait(void)
{
	pthread_mutex_lock(&lock);
	exiting = true;
	unsigned n = thread_count;
	thread_count = 0;
	pthread_mutex_unlock(&lock);
	for (unsigned i = 0; i < n; i++)
		pthread_join(threads[i], NULL);
}

void inject_early_context_used(CUcontext ctx, uint32_t context_id)
{
	if (!enabled || ctx == last_seen)
		return;
	last_seen = ctx;
	CUdevice dev;
	if (rp_api.cuCtxGetDevice(&dev) != CUDA_SUCCESS || dev < 0 || dev >= EARLY_MAX_DEVICES)
		return;
	pthread_mutex_lock(&lock);
	if (exiting || device_started[dev]) {
		pthread_mutex_unlock(&lock);
		return;
	}
	device_started[dev] = true;
	struct request *r = malloc(sizeof(*r));
	if (r) {
		*r = (struct request){ ctx, context_id, inject_contexts_created(ctx) };
		if (!exit_handler_registered)
			exit_handler_registered = atexit(inject_early_wait) == 0;
		if (exit_handler_registered &&
		    pthread_create(&threads[thread_count], NULL, run_set_up, r) == 0)
			thread_count++;
		else
			free(r); /* the first measured launch sets the device up instead */
	}
	pthread_mutex_unlock(&lock);
}

void inject_early_fork_child(void)
{
	/* The parent's set-up threads do not exist here, and a child forked without exec
	 * measures nothing (init.c). The child is single-threaded now: the lock, which
	 * another of the parent's threads may have held at the fork, is made anew. */
	pthread_mutex_init(&lock, NULL);
	thread_count = 0;
	exiting = true;
}
