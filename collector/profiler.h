/* collector/profiler.h - metric sets (profiler host: validation, config image, passes) and
 * measuring replays with the CUPTI range profiler (AutoRange + UserReplay, all runs of a
 * launch inside one Start/Stop per pass).
 * Used with the launching context current (who uses it: profiler.c's opening comment).
 * Any thread may create metric sets
 * and profilers: the one piece of process state, CUPTI's profiler
 * initialisation, is under profiler.c's own lock, whatever the caller holds. A metric set
 * or profiler object is used by one thread at a time, its caller's (inject/ measures one
 * launch at a time). */
#ifndef COLLECTOR_PROFILER_H
#define COLLECTOR_PROFILER_H

#include <cuda.h>
#include <cupti_result.h>
#include <stdbool.h>
#include <stddef.h>

#include "collector/cost.h"

struct collector_metric_set;
struct collector_profiler;

/* The clock every run reports (doc/records.md: sm_clock_hz), measured by this counter
 * when the set has counters anyway; a set of only gpu__time_duration metrics leaves it
 * out (it would make each measured launch ~7 ms slower: 1 run 7.5 ms instead of 0.15 ms,
 * bench/stop_probe.cu A, doc/measurements.md, "Start and Stop of later passes") and its
 * clock_hz are NaN: the caller takes NVML's SM clock. */
#define COLLECTOR_CLOCK_METRIC "gpc__cycles_elapsed.avg.per_second"

/* Validates the comma-separated metrics for the device of ctx and builds their config
 * image; the clock metric is added when the set has counters and lacks it. A timer-only
 * set is built from the chip name, any other with the context's counter availability
 * (profiler.c). Errors (unknown metric, counters not permitted, device not supported, the
 * profiling hardware busy) come back as a code of common/error.h (RP_ERR_HARDWARE_BUSY,
 * RP_ERR_PRIVILEGES, RP_ERR_NOT_SUPPORTED, else RP_ERR_FAILED) with the message in err;
 * the caller waits for a busy device and measures nothing on it otherwise. */
int collector_metric_set_create(CUcontext ctx, int device, const char *metric_list,
				struct collector_metric_set **out, char *err, size_t err_size);
/* The same set built from the chip name alone, with no context: for a timer-only list
 * (collector_metric_is_timer, launch__ metrics), else RP_ERR_FAILED. For
 * rangeprof_prepare, which builds it while the device's context is still being made; a
 * failure here says nothing final: collector_metric_set_create, with the context, decides
 * (and with the counter availability reports what the GPU refuses). */
int collector_metric_set_create_by_name(int device, const char *metric_list,
					struct collector_metric_set **out, char *err,
					size_t err_size);
void collector_metric_set_destroy(struct collector_metric_set *set);
/* The user's metrics (without an added clock metric), their units, and the pass count. */
size_t collector_metric_set_user_count(const struct collector_metric_set *set);
const char *const *collector_metric_set_names(const struct collector_metric_set *set);
const char *const *collector_metric_set_units(const struct collector_metric_set *set);
unsigned collector_metric_set_passes(const struct collector_metric_set *set);
/* Whether the metric name (its first len bytes, as in a comma-separated list) is one of
 * the timer's, gpu__time_duration.sum/.max/...: not a performance counter. A set of only
 * these is built without the counter availability and leaves the clock counter out. */
bool collector_metric_is_timer(const char *name, size_t len);
/* Whether user metric k is one of the launch__ metrics rangeprof supplies
 * (common/launch_metrics.h): its enum rp_launch_metric, or -1. CUPTI never sees those;
 * collector_profiler_measure leaves their values NaN for the workload to fill. */
int collector_metric_set_launch(const struct collector_metric_set *set, size_t k);
/* Whether the set measures the SM clock (COLLECTOR_CLOCK_METRIC) itself. */
bool collector_metric_set_measures_clock(const struct collector_metric_set *set);

/* How a profiler object divides a pass into ranges, fixed for its life: CUPTI keeps the
 * range mode of an object's first SetConfig (so bench/stop_probe.cu G2 makes a new object
 * for user ranges), and a second object on the same context is enabled but its Start
 * fails with CUPTI_ERROR_INVALID_PARAMETER while the first is enabled
 * (bench/graph_range_probe.cu D: doc/measurements.md, "Graph launches under the range
 * profiler"). */
enum collector_ranges {
	COLLECTOR_RANGE_PER_KERNEL,  /* AutoRange: every kernel launch is its own range */
	COLLECTOR_RANGE_USER,        /* UserRange: the run function pushes and pops one range
				      * per run (a whole graph launch: under AutoRange a
				      * graph launch alone is one range without a duration,
				      * bench/stop_probe.cu G, and one beside plain kernels and
				      * a memset fails the pass's Stop, bench/graph_range_probe.cu
				      * A: doc/measurements.md, "Graph launches under the range
				      * profiler") */
};

/* A range profiler enabled on one context. */
int collector_profiler_create(CUcontext ctx, enum collector_ranges ranges,
			      struct collector_profiler **out, char *err, size_t err_size);
enum collector_ranges collector_profiler_ranges(const struct collector_profiler *prof);
/* Around the work of run run of a pass of a COLLECTOR_RANGE_USER profiler (each run's
 * range gets its own name: CUPTI merges same-named ranges, doc/measurements.md, "Graph
 * launches under the range profiler"); 0 or a negative error for the run function to
 * return. */
int collector_profiler_push_range(struct collector_profiler *prof, unsigned run);
int collector_profiler_pop_range(struct collector_profiler *prof);
void collector_profiler_destroy(struct collector_profiler *prof);

/* One pass with no kernel in it, right after the profiler is created: a range profiler
 * object's first cuptiRangeProfilerStart costs ~145 ms on the H200 (143-153 ms), later
 * ones 0.004 ms, and a pass with no kernel right after Enable takes the 145 ms
 * (bench/first_launch_probe.cu P1, P4: doc/measurements.md, "First Start of a range
 * profiler object"), so the early set-up pays it before any measurement.
 * The counter data is sized for ranges, the first measurement's own size (see below).
 * Returns 0, or a code of common/error.h with the message in err. */
int collector_profiler_warm_up(struct collector_profiler *prof,
			       const struct collector_metric_set *set, size_t ranges, char *err,
			       size_t err_size);

/* Called once per run within each pass; must leave exactly kernels_per_run kernel
 * launches on the GPU, the measured one last (COLLECTOR_RANGE_USER: one pushed range,
 * kernels_per_run 1). Returns 0, or a code of common/error.h (RP_ERR_RESTORE,
 * RP_ERR_FLUSH, RP_ERR_RELAUNCH, RP_ERR_USER_RANGE) that aborts the measurement and is
 * returned by collector_profiler_measure, named in its message. */
typedef int (*collector_run_fn)(void *arg, unsigned run, unsigned pass);

/* Measures runs replays. values receives runs × user metric count (run-major), clock_hz
 * the SM clock of each run, NaN when the set does not measure the clock
 * (collector_metric_set_measures_clock false: the caller takes NVML's); cost (may be
 * NULL) gets the profiler's phases added. Returns 0, or a code of common/error.h (the run
 * function's, or the failing CUPTI call's) with the message in err.
 * CUPTI 13 keeps the range count of the first SetConfig in a context. The counter data
 * is sized at a profiler's first call (or warm-up) for its set and ranges; a later call
 * with the same set and more ranges grows it, one with fewer is configured with the size
 * it has, and one with another set sizes it afresh for that call's ranges, smaller or
 * larger (rangeprof gives a profiler one set, its device's, so that does not happen).
 * A caller measuring in batches (--runs auto) therefore makes its first call the
 * largest. */
int collector_profiler_measure(struct collector_profiler *prof,
			       const struct collector_metric_set *set, unsigned runs,
			       unsigned kernels_per_run, collector_run_fn run_fn, void *arg,
			       double *values, double *clock_hz, unsigned *passes_out,
			       struct collector_cost *cost, char *err, size_t err_size);

/* The first run of a measurement in a pass of its own, opened before that run is issued
 * by someone else: the application's own launch, which then is the first measured run,
 * so that a measurement adds runs - 1 executions of the kernel rather than runs
 * (inject/kernel/save.c). Prepares the counter data for ranges, the whole measurement's
 * (a new profiler object's first pass fixes the room its later passes have: sized for
 * the first run alone, the runs after it recorded 4 of their 8 ranges; H200,
 * doc/measurements.md "Cost at the physical floor"), and Starts; the run's
 * kernels_per_run launches are the caller's to issue, then close_first_pass waits for
 * them, Stops and gives the run's values and clock as collector_profiler_measure gives
 * one run's; the other runs follow in a measurement of their own. A one-pass set only
 * (a later pass would need the run again: close says so). Returns 0, or a code of
 * common/error.h with the message in err. */
int collector_profiler_open_first_pass(struct collector_profiler *prof,
				      const struct collector_metric_set *set, size_t ranges,
				      struct collector_cost *cost, char *err, size_t err_size);
int collector_profiler_close_first_pass(struct collector_profiler *prof,
				       const struct collector_metric_set *set,
				       unsigned kernels_per_run, double *values, double *clock_hz,
				       struct collector_cost *cost, char *err, size_t err_size);
/* An opened pass whose run never came (the driver refused the application's launch):
 * stopped, and whatever it holds dropped. Nothing when none is open. */
void collector_profiler_drop_open_pass(struct collector_profiler *prof);

/* Writes what a failed CUPTI call means for the user into err - counters restricted to
 * administrators (and how to lift that), device not supported, another profiler
 * attached - and returns the code callers decide on (common/error.h). */
int collector_cupti_failure(const char *call, CUptiResult r, char *err, size_t err_size);

/* Prints every metric the device of ctx supports with unit and description. */
int collector_list_metrics(CUcontext ctx, int device, char *err, size_t err_size);

#endif
