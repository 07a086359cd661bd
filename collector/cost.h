/* collector/cost.h - where a measured launch's time goes, phase by phase, so that the
 * fixed cost can be broken down on a real GPU (doc/measurements.md, "Measured launch
 * cost") and every summary record carries its own breakdown ("cost_ms"). Host wall-clock
 * milliseconds; a phase that waits for the GPU (sync) includes the GPU work queued before
 * it. */
#ifndef COLLECTOR_COST_H
#define COLLECTOR_COST_H

struct cJSON;

enum collector_cost_phase {
	COST_SETUP,      /* device set-up paid by this launch (first one on a device only):
			  * NVML, profiler initialisation, counter availability (not for a
			  * set of timer metrics only: profiler.h), metric set */
	COST_SETUP_CONTEXT,   /* the context's flush and hash kernels (first launch in it) */
	COST_SETUP_PROFILER,  /* enabling the context's range profiler */
	COST_SYNC,       /* waiting for the application's queued work */
	COST_REACH,      /* finding the memory the launch can reach */
	COST_SAVE,       /* saving that memory (or the full checkpoint) */
	COST_VERIFY,     /* hashing the memory outside the saved set */
	COST_PREPARE,    /* counter data image and profiler configuration */
	COST_START,      /* cuptiRangeProfilerStart */
	COST_RUNS,       /* queueing restore, flush and kernel for every run */
	COST_PASS_SYNC,  /* waiting for the runs of a pass */
	COST_STOP,       /* cuptiRangeProfilerStop */
	COST_DECODE,     /* decoding the counter data */
	COST_EVALUATE,   /* evaluating metric values */
	COST_RESTORE,    /* leaving the memory as the application's launch must see it */
	COST_TOTAL,      /* the whole measured launch */
	COST_PHASES
};

struct collector_cost {
	double ms[COST_PHASES];
};

/* Monotonic milliseconds. */
double collector_cost_now(void);
/* Adds the time since *since to phase and moves *since to now. */
void collector_cost_lap(struct collector_cost *cost, enum collector_cost_phase phase,
			double *since);
/* {"phase": ms, ...} with the phases that took any time; NULL when out of memory. */
struct cJSON *collector_cost_json(const struct collector_cost *cost);

#endif
