/* inject/measure/measurement.h - one measured launch, or any workload, from start to records, and
 * the interface its workloads implement: a kernel launch (kernel_workload.c), a whole
 * graph launch (whole_workload.c) and, next, an NVTX range. The measuring loop (measure.c)
 * drives a workload's batches; the save policy (save.c) decides what memory each run
 * starts from; emit.c writes the records. Under the replay lock. */
#ifndef INJECT_MEASUREMENT_H
#define INJECT_MEASUREMENT_H

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collector/api.h"
#include "collector/cost.h"
#include "collector/records.h"
#include "collector/thermal.h"
#include "inject/config.h"
#include "inject/inject.h"
#include "inject/output.h"
#include "memory/memory.h"

struct device_state;
struct context_state;
struct function_state;
struct measurement;
struct replay_run;
struct collector_metric_set;

/* What a workload is to the measuring loop. */
struct inject_workload {
	/* The profiler the workload needs for the device's set (a graph timed by events
	 * alone needs none). */
	enum inject_profiler_need (*need)(const struct collector_metric_set *set);
	/* One batch of runs, each restoring the saved memory, flushing and running the
	 * workload once: values get runs x the set's metrics (run-major), clocks the SM clock
	 * of each run (NaN where the set does not measure it), passes the profiler passes.
	 * 0, or a code of common/error.h with the message in err. */
	int (*batch)(struct measurement *m, struct replay_run *rr, unsigned runs, double *values,
		     double *clocks, unsigned *passes, char *err, size_t err_size);
};
extern const struct inject_workload inject_kernel_workload;
extern const struct inject_workload inject_graph_workload;
extern const struct inject_workload inject_range_workload;
/* whole_workload.c's batch and need, for any workload relaunched whole through
 * measurement.issue from the full checkpoint: a graph launch, an NVTX range. */
int inject_whole_workload_batch(struct measurement *m, struct replay_run *rr, unsigned runs,
		       double *values, double *clocks, unsigned *passes, char *err,
		       size_t err_size);
enum inject_profiler_need inject_whole_workload_need(const struct collector_metric_set *set);

/* How the memory of one measured launch is saved, and what the records say about it. */
struct save {
	const char *strategy;        /* "reach" or "checkpoint" */
	char why[320];               /* why this strategy */
	struct mem_reach reach;      /* strategy "reach" */
	RP_CUpti_Checkpoint checkpoint;  /* strategy "checkpoint" */
	bool checkpoint_saved;
	/* The ranges of reach the application's launch changed, the only ones each replay
	 * restores (save.c); NULL: all of them. */
	bool *changed;
	bool verified;               /* this launch showed the reach to be enough */
	size_t verified_bytes;       /* bytes hashed outside the reach */
};

/* One measured workload from start to records: for a kernel launch it may span the driver
 * call (ENTER to EXIT) while the application's own launch is being verified. */
struct measurement {
	const struct inject_workload *workload;
	enum inject_profiler_need need;   /* what get_ready set up */
	struct inject_launch launch;
	const char *kernel;
	int device;
	struct device_state *d;
	struct context_state *c;
	struct function_state *fn;   /* NULL for a whole graph launch */
	struct save save;
	bool turn;                   /* this process's turn on the device is held */
	double watchdog_seconds;     /* bound of one replay pass */
	struct mem_hashes before;    /* verification: hashes before the application's launch */
	struct collector_cost cost;
	double started, lap;
	CUgraphExec graph_exec;      /* a whole graph launch: relaunched whole */
	/* A workload relaunched whole (whole_workload.c's batch): queues it once on stream,
	 * the batch waiting for it - a graph launch, or a range's recorded calls forked from
	 * and joined back to stream (range_workload.c). */
	CUresult (*issue)(const struct measurement *m, CUstream stream);
	/* What a run queues before its cache flush, outside its events and user range (a
	 * range's memsets and copies under --range-scope kernels); NULL: nothing. */
	CUresult (*issue_first)(const struct measurement *m, CUstream stream);
	void *issue_arg;
	const struct collector_range *range;   /* a range workload: its records' "range" */
	/* The application's own launch is run 0 (inject_measure_open_first_run): its pass
	 * was opened at ENTER and run 0's NVML view taken then; its values once closed. */
	bool first_run_is_app;
	struct {
		double temperature, wall, sm_clock, clock;
		struct collector_run_nvml nvml;
		double *values;          /* the set's user metrics */
	} first_run;
	/* The thermal guard's wait, when it ran before the pass was opened at ENTER. */
	struct thermal_wait thermal;
	bool thermal_done;
};

/* What one batch's runs share and where each run's NVML view goes. */
struct replay_run {
	const struct measurement *m;
	const struct inject_launch *launch;
	struct context_state *context;
	struct save *save;
	bool flush;
	double *temperature;
	double *wall;
	const char *uuid;
	struct collector_run_nvml *nvml; /* per run of this batch */
	double *sm_clock;                /* NVML's SM clock per run of this batch */
	/* A whole graph launch: its runs are timed between events[2r] and events[2r + 1],
	 * or counted in one user range each when events is NULL; sample: NVML before each
	 * run of the first pass. */
	CUgraphExec exec;
	CUevent *events;
	bool sample;
};

/* What the runs of a launch were measured under, for the records. */
struct run_conditions {
	const struct collector_run_nvml *nvml;      /* per run */
	const uint64_t *throttle;                   /* per run */
	const struct collector_adaptive *adaptive;  /* NULL: fixed --runs */
	const struct collector_thermal *thermal;    /* NULL: --thermal-control off */
};

/* ---- measure.c: the measuring loop ------------------------------------------------- */

/* A new measurement of workload at the current time, or NULL when out of memory. */
struct measurement *inject_measurement_new(const struct inject_workload *workload);
/* Everything before a measurement: the application's queued work finished, this
 * process's turn on the device, the device's metric set, the context's profiler, flush
 * and hash kernels. false when it cannot be measured (said where it is news). */
bool inject_measure_get_ready(struct measurement *m);
/* Runs the measurement proper (--runs N: one batch; --runs auto: batches until
 * collector/adaptive.c says stop), with the thermal guard before, and writes the records.
 * The memory is left as the runs left it: the caller puts it back. true when every run
 * ran and the records were written. */
bool inject_measure(struct measurement *m);
/* Before the application's own launch of a kernel whose reach is saved and verified:
 * opens a profiler pass for one run and queues its flush on the launch's stream, so that
 * the launch the driver is about to make is the first measured run and inject_measure (at
 * EXIT, after inject_measure_close_first_run) replays runs - 1 more. Only for a fixed
 * --runs of 2 or more on a one-pass set; false (nothing queued, nothing said) otherwise
 * or when the pass cannot be opened, and the caller measures the usual way. */
bool inject_measure_open_first_run(struct measurement *m);
/* At EXIT, the application's launch made: waits for it and takes run 0's values from its
 * pass. 0, or a code of common/error.h with err (nothing measured: run 0 was the
 * application's launch, so its memory is as it left it). */
int inject_measure_close_first_run(struct measurement *m, char *err, size_t err_size);
/* The end of every measurement: saved copies trimmed, the turn given back, m freed. */
void inject_measurement_finish(struct measurement *m);
/* NVML's view and the wall time just before run of rr's batch is queued (the first pass
 * only: the run records' NVML fields and time). */
void inject_measure_sample_before(struct replay_run *rr, unsigned run);
/* Where gpu__time_duration.sum is in the set, SIZE_MAX when not measured. */
size_t inject_measure_time_metric(const struct collector_metric_set *set);
/* The concerns of a report about m's launch, with detail. */
const struct inject_concerns *inject_measure_concerns(const struct measurement *m,
						     struct inject_concerns *c, long long detail);

/* ---- launch_shape.c: the launch__ metrics --------------------------------------------- */

/* What the launch, its function and its device say (common/launch_metrics.h); a field
 * the driver does not give is -1. Cannot fail. */
struct rp_launch_shape;
void inject_launch_shape(const struct inject_launch *l, int device, struct rp_launch_shape *s);
/* Fills the values of the set's launch__ metrics for runs runs (run-major, as the batch
 * gives them), the same in every run; nothing when the set has none. */
void inject_launch_shape_metrics(const struct measurement *m, unsigned runs, double *values);

/* ---- emit.c: the records ------------------------------------------------------------ */

void inject_emit_records(const struct measurement *m, unsigned runs, unsigned passes,
			  const double *values, const double *clocks, const double *temps,
			  const double *walls, const struct run_conditions *cond);


#endif
