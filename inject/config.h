/* inject/config.h - the measurement options in force and what follows from them
 * (config.c). */
#ifndef INJECT_CONFIG_H
#define INJECT_CONFIG_H

#include <stddef.h>

#include "collector/adaptive.h"
#include "inject/inject.h"

/* What a measurement needs of the context's range profiler. */
enum inject_profiler_need {
	INJECT_PROFILER_NONE,        /* a graph launch timed by events only */
	INJECT_PROFILER_PER_KERNEL,  /* kernel launches and graph nodes (AutoRange) */
	INJECT_PROFILER_PER_GRAPH,   /* a whole graph launch with counters (UserRange) */
};

const struct inject_config *inject_config(void);
void inject_config_set(const struct inject_config *c);
struct adaptive_params inject_config_adaptive_params(void);
unsigned inject_config_first_batch_runs(void);
unsigned inject_config_kernels_per_run(void);
size_t inject_config_ranges_needed(enum inject_profiler_need need);

#endif
