/* inject/range/range_memory.h - what a range workload saves (range_memory.c): the whole
 * context while a range name learns what its calls reach, then only that. Under the
 * replay lock. */
#ifndef INJECT_RANGE_MEMORY_H
#define INJECT_RANGE_MEMORY_H

#include <stdbool.h>

#include "inject/measure/measurement.h"
#include "inject/range/range.h"

/* What earlier occurrences of a range name showed. */
struct range_policy;

/* The policy of ranges named name, learning at first; NULL when out of memory or past
 * the names remembered (4096): the range is then saved whole, and learns nothing. */
struct range_policy *range_policy_of(const char *name);
/* Whether ranges of this name fall back to kernel replay (a refused call). */
bool range_policy_refused(const struct range_policy *p);
/* An occurrence was refused: true when the name now falls back for good, false when its
 * next occurrence is tried again (a transient call, the first few times). */
bool range_policy_refuse(struct range_policy *p, bool transient);

/* At the range's begin, m ready (inject_measure_get_ready): saves the memory it starts from into
 * m->save - the learned reach into the context's inputs; while learning, the hashes of
 * every tracked allocation into before, and nothing yet (range_memory_on_calls saves as
 * the calls are issued); else the whole context (CUPTI checkpoint).
 * false (said) when nothing could be saved. */
bool range_memory_begin(struct range_policy *p, struct measurement *m,
			struct mem_hashes *before);
/* A recorded call's ENTER (ops->ops[from..count) are its new ops), m the range's: while a
 * first occurrence learns, queues on each call's stream the copy of what it reaches that
 * no earlier call did, before the call. */
void range_memory_on_calls(struct measurement *m, const struct range_ops *ops, size_t from);
/* At its end, the context synchronised: learns from this occurrence, and saves its end
 * state (the reach into the context's result, or a second checkpoint into end_state).
 * false (said) when the occurrence cannot be measured: its calls reached beyond what was
 * saved, or the end state could not be saved. */
bool range_memory_end(struct range_policy *p, struct measurement *m,
		      const struct range_ops *ops, struct mem_hashes *before,
		      RP_CUpti_Checkpoint *end_state);
/* After the runs: the end state back, for the application. */
void range_memory_put_back(struct measurement *m, RP_CUpti_Checkpoint *end_state);
/* A context is being destroyed: saved copies in it that wait to be freed (a range
 * abandoned while a capture was under way) are forgotten, not freed. */
void range_memory_context_destroyed(CUcontext ctx);
/* Drops the begin state without putting it back, and the hashes. */
void range_memory_drop(struct measurement *m, struct mem_hashes *before);

#endif
