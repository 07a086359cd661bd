/* collector/cost.c - phase timings of a measured launch.
 * Calls: none.
 * Called by: profiler.c, records.c, inject/.
 * Lock: none (the timings are the caller's; the phase names are constant). */
#include "collector/cost.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <time.h>

static const char *const phase_names[COST_PHASES] = {
	[COST_SETUP] = "setup", [COST_SETUP_CONTEXT] = "setup_context",
	[COST_SETUP_PROFILER] = "setup_profiler", [COST_SYNC] = "sync", [COST_REACH] = "reach",
	[COST_SAVE] = "save", [COST_VERIFY] = "verify", [COST_PREPARE] = "prepare",
	[COST_START] = "start", [COST_RUNS] = "runs", [COST_PASS_SYNC] = "pass_sync",
	[COST_STOP] = "stop", [COST_DECODE] = "decode", [COST_EVALUATE] = "evaluate",
	[COST_RESTORE] = "restore", [COST_TOTAL] = "total",
};

double collector_cost_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

void collector_cost_lap(struct collector_cost *cost, enum collector_cost_phase phase,
			double *since)
{
	double now = collector_cost_now();
	if (cost)
		cost->ms[phase] += now - *since;
	*since = now;
}

cJSON *collector_cost_json(const struct collector_cost *cost)
{
	cJSON *o = cJSON_CreateObject();
	for (int p = 0; o && p < COST_PHASES; p++) {
		if (cost->ms[p] <= 0.0)
			continue;
		/* Microsecond resolution is all a host timer honestly gives. */
		double ms = round(cost->ms[p] * 1e3) / 1e3;
		if (!cJSON_AddNumberToObject(o, phase_names[p], ms)) {
			cJSON_Delete(o);
			return NULL;
		}
	}
	return o;
}
