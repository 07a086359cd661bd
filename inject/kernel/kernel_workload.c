/* inject/kernel/kernel_workload.c - a kernel launch as a workload (measurement.h): each run
 * restores the saved memory (the reach, or the full checkpoint), flushes the caches unless
 * --cache-control none, and launches the kernel again with its own parameters, all runs of
 * a pass inside one Start/Stop of an AutoRange profiler (every kernel its own range; the
 * flush's range is dropped by collector/profiler.c); the launch__ metrics are the
 * launch's own (launch_shape.c).
 * Calls: measure.c (NVML sample), launch_shape.c, flush.c, watchdog.c, kernel_launch.c,
 * config.c, collector/, memory/.
 * Called by: save.c (inject_kernel_workload).
 * Lock: the replay lock. */
#include "collector/profiler.h"
#include "common/error.h"
#include "inject/session/device.h"
#include "inject/session/flush.h"
#include "inject/measure/measurement.h"
#include "inject/session/session.h"
#include "inject/session/watchdog.h"

static int run_once(void *arg, unsigned run, unsigned pass)
{
	struct replay_run *rr = arg;
	if (run == 0) {
		/* Each pass gets the bound anew: a multi-pass metric set is not a hang. */
		const struct measurement *m = rr->m;
		inject_watchdog_arm(m->watchdog_seconds, m->kernel, m->fn->mangled, m->device,
				    m->launch.context_id, m->launch.index);
	}
	/* The driver's error names are not said: the code's text is the run's message. */
	char ignored[64];
	int rc;
	if (rr->save->checkpoint_saved)
		rc = rp_api.cuptiCheckpointRestore(&rr->save->checkpoint) == CUPTI_SUCCESS ? 0 :
			RP_ERR_RESTORE;
	else
		rc = mem_restore_changed(&rr->context->inputs, &rr->save->reach,
					 rr->save->changed, rr->launch->stream, ignored,
					 sizeof(ignored));
	if (!rc && rr->flush)
		rc = inject_flush_launch(&rr->context->flush, rr->launch->stream);
	if (rc)
		return rc;
	if (pass == 0) {
		inject_measure_sample_before(rr, run);
	}
	return inject_kernel_launch_again(rr->launch, ignored, sizeof(ignored));
}

static int kernel_batch(struct measurement *m, struct replay_run *rr, unsigned runs,
			double *values, double *clocks, unsigned *passes, char *err,
			size_t err_size)
{
	int rc = collector_profiler_measure(m->c->profiler, m->d->set, runs,
					    inject_config_kernels_per_run(), run_once, rr, values, clocks,
					    passes, &m->cost, err, err_size);
	/* The launch__ metrics (CUPTI left them NaN): the launch's and the driver's. */
	if (!rc)
		inject_launch_shape_metrics(m, runs, values);
	return rc;
}

static enum inject_profiler_need kernel_need(const struct collector_metric_set *set)
{
	(void)set;
	return INJECT_PROFILER_PER_KERNEL;
}

const struct inject_workload inject_kernel_workload = { kernel_need, kernel_batch };
