/* inject/kernel/save.c - what memory a kernel launch's runs start from, and what the
 * application finds after them: the save policy of each kernel (session.h) as a state
 * machine.
 *   unverified  the first measured launch: its reach (memory/) is saved, the application's
 *               own launch runs between two hashes of all other memory (ENTER to EXIT);
 *               nothing else changed: reach from now on, and the runs follow at EXIT from
 *               the saved inputs, the application's result put back after them;
 *               something else changed: that launch ran once, unmeasured, and the kernel
 *               uses the full checkpoint from now on;
 *   reach       its reach saved and restored at every run, put back for the application;
 *   checkpoint  the full CUPTI checkpoint (also --memory-save checkpoint, and a reach that
 *               cannot be known or saved: a fall-back said once per kernel).
 * The turn is held from ENTER to EXIT.
 * Calls: measure.c, kernel_workload.c (the workload it measures), checkpoint.c, session.c,
 * config.c, output.c, collector/, memory/.
 * Called by: launch.c (ENTER and EXIT), graph_measure.c (a kernel node).
 * Lock: the replay lock. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/profiler.h"
#include "common/error.h"
#include "inject/measure/checkpoint.h"
#include "inject/session/device.h"
#include "inject/measure/measurement.h"
#include "inject/session/session.h"

/* The full checkpoint of the context: every allocation, whatever the launch can reach. */
static void measure_with_checkpoint(struct measurement *m)
{
	if (!inject_checkpoint_save(m))
		return;
	inject_measure(m);
	inject_checkpoint_put_back(m);
}

/* Puts the saved copy back for the application's launch (its inputs, or after a verified
 * launch its own result) and waits; says so when that fails, since the application's
 * memory may then differ. */
static void put_back(struct measurement *m, const struct mem_backup *b)
{
	char err[128]; /* the driver's error name */
	int rc = mem_restore(b, &m->save.reach, m->launch.stream, err, sizeof(err));
	CUresult sync = rp_api.cuCtxSynchronize();
	if (!rc && sync != CUDA_SUCCESS) {
		snprintf(err, sizeof(err), "%s", collector_cu_error(sync));
		rc = RP_ERR_SYNC;
	}
	if (rc)
		inject_output_report(INJECT_REPORT_RESTORE,
				     INJECT_CONCERNS(.kernel = m->kernel,
						     .mangled = m->launch.mangled,
						     INJECT_ON_DEVICE(m->device),
						     .call = "cuMemcpyAsync",
						     .detail = INJECT_DETAIL_PAIR(rc, sync)), true,
			      "putting back the saved memory of %s: %s; the application's memory "
			      "may differ", m->kernel, err);
}

/* Falls back to the full checkpoint for this launch, saying why once per kernel. */
static void fall_back(struct measurement *m, const char *why)
{
	snprintf(m->save.why, sizeof(m->save.why), "%s", why);
	inject_output_report(INJECT_REPORT_FALL_BACK, INJECT_CONCERNS(.kernel = m->kernel,
							  .mangled = m->launch.mangled,
							  INJECT_ON_DEVICE(m->device),
						   .context = m->launch.context_id), false,
		      "%s: %s; its launches are measured with the full "
			   "checkpoint, whose cost grows with the application's device memory",
			   m->kernel, why);
	measure_with_checkpoint(m);
}

struct measurement *inject_save_enter(const struct inject_launch *l, const char *kernel)
{
	INJECT_REPLAY_HELD();
	struct measurement *m = inject_measurement_new(&inject_kernel_workload);
	if (!m)
		return NULL;
	m->launch = *l;
	m->kernel = kernel;
	if (!inject_measure_get_ready(m))
		goto done;
	m->fn = inject_session_function_state(m->c, l->function, l->mangled);
	if (!m->fn)
		goto done;
	if (inject_config()->memory_save == RP_MEMORY_SAVE_CHECKPOINT) {
		snprintf(m->save.why, sizeof(m->save.why), "--memory-save checkpoint");
		measure_with_checkpoint(m);
		goto done;
	}
	if (m->fn->policy == SAVE_CHECKPOINT) {
		snprintf(m->save.why, sizeof(m->save.why), "an earlier launch wrote outside the "
			 "memory its parameters reach");
		measure_with_checkpoint(m);
		goto done;
	}
	int rc = mem_reach_collect(&m->save.reach, l->function, l->kernel_params, l->extra);
	collector_cost_lap(&m->cost, COST_REACH, &m->lap);
	if (rc) {
		fall_back(m, m->save.reach.unknown);
		goto done;
	}
	char err[512];
	if (mem_save(&m->c->inputs, &m->save.reach, l->stream, err, sizeof(err))) {
		fall_back(m, err);
		goto done;
	}
	m->save.strategy = "reach";
	collector_cost_lap(&m->cost, COST_SAVE, &m->lap);
	if (m->fn->policy == SAVE_REACH) {
		snprintf(m->save.why, sizeof(m->save.why), "an earlier launch of this kernel "
			 "wrote only inside the memory its parameters reach");
		inject_measure(m);
		/* The application's own launch must see its inputs. */
		put_back(m, &m->c->inputs);
		collector_cost_lap(&m->cost, COST_RESTORE, &m->lap);
		goto done;
	}
	/* First launch of this kernel: show that the reach is enough. The application's own
	 * launch runs between two hashes of everything else; inject_save_exit() compares
	 * them. If it wrote elsewhere, that was its one real execution: nothing is replayed.
	 * The turn stays held until then. */
	if (mem_hash_outside(&m->c->verifier, &m->save.reach, l->stream, &m->before, err,
			     sizeof(err))) {
		fall_back(m, err);
		goto done;
	}
	collector_cost_lap(&m->cost, COST_VERIFY, &m->lap);
	return m;
done:
	inject_measurement_finish(m);
	return NULL;
}

void inject_save_exit(struct measurement *m, bool launched)
{
	INJECT_REPLAY_HELD();
	const struct inject_launch *l = &m->launch; /* as seen at ENTER: function, index, stream */
	struct inject_concerns about;
	if (!launched)
		goto done; /* the driver refused the launch: the application sees its error */
	CUresult cr = rp_api.cuCtxSynchronize();
	if (cr != CUDA_SUCCESS) {
		inject_output_report(INJECT_REPORT_SYNC,
				     inject_measure_concerns(m, &about, cr), true,
			      "cuCtxSynchronize after launch %llu of %s: %s; not measured",
			      (unsigned long long)l->index, m->kernel, collector_cu_error(cr));
		goto done;
	}
	/* The application's kernel ran: the time from here on is ours. */
	m->lap = collector_cost_now();
	struct mem_hashes after;
	char err[512];
	int rc = mem_hash_again(&m->c->verifier, &m->before, l->stream, &after, err, sizeof(err));
	if (rc) {
		inject_output_report(INJECT_REPORT_VERIFY,
				     inject_measure_concerns(m, &about, rc), true,
			      "%s: %s; launch %llu not measured", m->kernel, err,
			      (unsigned long long)l->index);
		goto done;
	}
	long changed = mem_hashes_differ(&m->before, &after);
	collector_cost_lap(&m->cost, COST_VERIFY, &m->lap);
	mem_hashes_finish(&after);
	if (changed >= 0) {
		m->fn->policy = SAVE_CHECKPOINT;
		const struct mem_range *seg = &m->before.segments[changed];
		inject_output_report(INJECT_REPORT_OUTSIDE,
				     inject_measure_concerns(m, &about, 0), false,
			      "%s wrote outside the memory its parameters reach (%zu bytes at "
			      "%#llx changed); launch %llu ran once and is not measured, later "
			      "launches use the full checkpoint", m->kernel, seg->size,
			      (unsigned long long)seg->base, (unsigned long long)l->index);
		goto done;
	}
	m->fn->policy = SAVE_REACH;
	m->save.verified = true;
	m->save.verified_bytes = m->before.bytes;
	snprintf(m->save.why, sizeof(m->save.why), "verified now: the application's own launch "
		 "changed nothing outside the %zu saved bytes (%zu bytes hashed)",
		 m->save.reach.bytes, m->before.bytes);
	/* The application's result, to be put back after the runs. */
	if ((rc = mem_save(&m->c->result, &m->save.reach, l->stream, err, sizeof(err)))) {
		inject_output_report(INJECT_REPORT_SAVE_RESULT,
				     inject_measure_concerns(m, &about, rc),
				     true,
			      "%s: %s; launch %llu not measured", m->kernel, err,
			      (unsigned long long)l->index);
		goto done;
	}
	collector_cost_lap(&m->cost, COST_SAVE, &m->lap);
	inject_measure(m);
	put_back(m, &m->c->result);
	collector_cost_lap(&m->cost, COST_RESTORE, &m->lap);
done:
	inject_measurement_finish(m);
}
