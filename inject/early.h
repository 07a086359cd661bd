/* inject/early.h - --setup early: each device's set-up on a thread of rangeprof's from the
 * first kernel launch or allocation seen there (early.c). */
#ifndef INJECT_EARLY_H
#define INJECT_EARLY_H

#include <stdbool.h>
#include <stdint.h>

#include <cuda.h>

#include "inject/session/contexts.h"

/* Runs on the set-up thread: sets the context (ctx, at generation gen) up; it must make
 * ctx current itself and do nothing if the context is gone. */
typedef void (*inject_early_fn)(CUcontext ctx, uint32_t context_id, inject_context_gen gen);

/* on: --setup early. Called once before any callback. */
void inject_early_configure(bool on, inject_early_fn set_up);
/* What inject_early_configure was told (false before it was called). */
bool inject_early_enabled(void);
/* Every kernel launch and allocation call that returned, on the application's thread with
 * ctx current: starts the set-up of ctx's device if none was started in this process.
 * A call in the same context as the thread's previous one costs one comparison. */
void inject_early_context_used(CUcontext ctx, uint32_t context_id);
/* What inject_early_start did. */
enum inject_early_start {
	INJECT_EARLY_STARTED,   /* the device's set-up thread started now */
	INJECT_EARLY_ALREADY,   /* a set-up of the device was started before in this process */
	INJECT_EARLY_OFF,       /* --setup lazy (or a clock lock), or exit has begun */
	INJECT_EARLY_FAILED,    /* no device for ctx, or no thread: the first measured launch sets up */
};
/* The control API's rangeprof_prepare (control.c), with ctx current on the calling thread:
 * as inject_early_context_used, without the per-thread shortcut, saying what it did. */
enum inject_early_start inject_early_start(CUcontext ctx, uint32_t context_id);
/* Whether exit has begun (inject_early_wait): a set-up that gets its lock after that
 * does nothing. */
bool inject_early_exiting(void);
/* Waits for the set-ups under way, at most EARLY_EXIT_WAIT_S (5 s) for all of them
 * together (early.c); none starts afterwards. Registered with atexit at the first start
 * (so that it runs before the CUDA runtime's own exit handlers). */
void inject_early_wait(void);
/* In a child forked without exec: forgets the parent's threads. */
void inject_early_fork_child(void);

#endif
