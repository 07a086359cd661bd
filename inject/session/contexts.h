/* inject/session/contexts.h - which CUDA contexts are alive, and rangeprof's state for each.
 * A context handle is a pointer the driver may give again to a later context once the
 * first is destroyed (cuCtxDestroy, cudaDeviceReset); state cached under the old one would
 * then be used in a context it was never set up for (after cudaDeviceReset, state cached
 * for the old context gave cuptiRangeProfilerStart: CUPTI_ERROR_UNKNOWN: doc/measurements.md,
 * "Figures from GPU-FACTS.md"; tests/gpu/procs.cu resets and creates contexts, all 8 of its
 * launches measured: "Processes, contexts, collectives"). So each context gets a
 * generation when it is created, its state is found only while that generation lives, and
 * its destruction hands the state back to be released. No CUDA calls (the handles are
 * opaque keys), so that its tests run anywhere. Thread-safe: its own mutex. */
#ifndef INJECT_CONTEXTS_H
#define INJECT_CONTEXTS_H

#include <stdint.h>

/* 0 is never a generation. */
typedef uint64_t inject_context_gen;

/* A context was created (CUPTI's CONTEXT_CREATED) or first seen at a launch: returns its
 * generation, a new one unless the context is already known. 0 (no generation) when out
 * of memory: the context is then unknown, as one never seen. */
inject_context_gen inject_contexts_created(const void *ctx);
/* The context's current generation, 0 when it is not known (never seen, or destroyed). */
inject_context_gen inject_contexts_generation(const void *ctx);
/* The state stored for the context at generation gen, NULL when there is none or the
 * context has been destroyed (or recreated) since. */
void *inject_contexts_state(const void *ctx, inject_context_gen gen);
/* Stores state for the context at generation gen. Returns 0, or RP_ERR_FAILED
 * (common/error.h) when that generation is no longer alive: the caller keeps (and
 * releases) state. */
int inject_contexts_set_state(const void *ctx, inject_context_gen gen, void *state);
/* The context is being destroyed: forgets it and returns its state (NULL when none) for
 * the caller to release while the context is still valid. A later context with the same
 * handle gets a new generation and no state. */
void *inject_contexts_destroyed(const void *ctx);
/* How many contexts are known (for tests and the exit report). */
unsigned inject_contexts_count(void);

#endif
