/* inject/config.c - the measurement options in force (inject.h: struct inject_config) and
 * what follows from them for every measurement: --runs auto's parameters, the runs of a
 * first pass, the kernels of one run, the ranges a profiler's first pass is sized for.
 * Written by inject_session_configure (init.c at start, before any callback; the control
 * API between measurements, with the replay lock held); read by the measuring files under
 * the same lock. A leaf.
 * Calls: collector/ (adaptive.c's parameters).
 * Called by: session.c (writes it), init.c, device.c, emit.c, kernel_workload.c, measure.c,
 * range_memory.c, save.c, range_workload.c.
 * Lock: the replay lock; not asserted by: inject_config (a read of the options),
 * inject_config_set (from inject_session_configure: before any callback, or with the lock
 * held), inject_config_adaptive_params, inject_config_first_batch_runs,
 * inject_config_kernels_per_run, inject_config_ranges_needed (arithmetic over the options
 * they are handed). */
#include "inject/config.h"

#include "collector/adaptive.h"

static struct inject_config config;

const struct inject_config *inject_config(void)
{
	return &config;
}

void inject_config_set(const struct inject_config *c)
{
	config = *c;
}

/* --runs auto's parameters, from the configuration. */
struct adaptive_params inject_config_adaptive_params(void)
{
	return (struct adaptive_params){ config.target_ci_pct, config.runs_min, config.runs_max,
					 config.runs_batch, config.runs_time_budget };
}

/* Runs of a launch's first profiler pass: all of --runs N, or --runs auto's first batch,
 * its largest. */
unsigned inject_config_first_batch_runs(void)
{
	struct adaptive_params ap = inject_config_adaptive_params();
	return config.runs == RP_RUNS_AUTO ? (unsigned)adaptive_first_batch(&ap) : config.runs;
}

/* Kernels each run launches: the flush (unless --cache-control none), then the kernel. */
unsigned inject_config_kernels_per_run(void)
{
	return config.cache_control == RP_CACHE_ALL ? 2 : 1;
}

/* The ranges a measurement's first pass holds (profiler.h sizes the counter data so). */
size_t inject_config_ranges_needed(enum inject_profiler_need need)
{
	return (size_t)inject_config_first_batch_runs() *
		(need == INJECT_PROFILER_PER_GRAPH ? 1 : inject_config_kernels_per_run());
}
