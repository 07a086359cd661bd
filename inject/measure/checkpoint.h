/* inject/measure/checkpoint.h - the full CUPTI checkpoint of a context (checkpoint.c). */
#ifndef INJECT_MEASURE_CHECKPOINT_H
#define INJECT_MEASURE_CHECKPOINT_H

#include <stdbool.h>

#include "collector/api.h"

struct measurement;

/* The full CUPTI checkpoint of ctx (every allocation), with the host reserve the
 * collector gives; put back, waited for and freed in one call. */
CUptiResult inject_checkpoint_cupti_save(CUcontext ctx, RP_CUpti_Checkpoint *checkpoint);
CUptiResult inject_checkpoint_cupti_put_back(RP_CUpti_Checkpoint *checkpoint);

/* Saves the full checkpoint of the context into m->save: every allocation, whatever the
 * workload can reach. false (said) when CUPTI cannot. Nothing in between may free or grow
 * the context's saved copies (one measurement runs at a time); graph nodes measured one by
 * one inside a graph's own checkpoint drop them around it (graph/graph_measure.c). Under
 * the replay lock. */
bool inject_checkpoint_save(struct measurement *m);
/* Puts it back, waits, frees it; says so when that fails. Under the replay lock. */
void inject_checkpoint_put_back(struct measurement *m);

#endif
