/* inject/kernel/save.c - what memory a kernel launch's runs start from, and what the
 * application finds after them: the save policy of each kernel (session.h) as a state
 * machine.
 *   unverified  the first measured launch: its reach (memory/) is saved, the application's
 *               own launch runs between two hashes of all other memory (ENTER to EXIT);
 *               nothing else changed: reach from now on, and the runs follow at EXIT from
 *               the saved inputs, the application's result put back after them;
 *               something else changed: that launch ran once, unmeasured, and the kernel
 *               uses the full checkpoint from now on;
 *   reach       its reach saved; with a fixed --runs of 2 or more on a one-pass set the
 *               application's own launch is the first run (its own pass, opened at ENTER
 *               and closed at EXIT) and the others follow at EXIT, the last leaving
 *               the application's result: runs - 1 executions of the kernel beyond the
 *               application's, the floor (doc/measurements.md, "Cost at the physical
 *               floor"). Each replay restores the whole reach, or, from 3 runs on and
 *               for a kernel not yet seen to change all it reaches, only the ranges run
 *               0 changed (learn_changed); otherwise the runs at ENTER and the inputs
 *               put back for the application's launch;
 *   checkpoint  the full CUPTI checkpoint (also --memory-save checkpoint, and a reach that
 *               cannot be known or saved: a fall-back said once per kernel).
 * The turn is held from ENTER to EXIT.
 * Calls: measure.c, kernel_workload.c (the workload it measures), checkpoint.c, session.c,
 * kernel_launch.c, watchdog.c, config.c, output.c, collector/, memory/.
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
#include "inject/session/watchdog.h"

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
		/* The application's own launch, about to be made, is the first run: runs - 1
		 * replays at EXIT rather than runs here and the launch after them
		 * (inject_save_exit). */
		if (inject_measure_open_first_run(m))
			return m;
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

/* Which ranges of the reach the application's launch (run 0) changed: the replays restore
 * only those. A matmul's inputs, two thirds of what it reaches, are then copied once (the
 * save) instead of at every run. Not for fewer than 3 runs (the comparison reads the
 * reach and its copy once each, as much as a restore copies), nor for a kernel whose
 * launches changed all they reach. Returns false when it cannot tell (all restored). */
static void learn_changed(struct measurement *m)
{
	if (inject_config()->runs < 3 || m->fn->writes_all_reach || !m->c->verifier_ready ||
	    !m->save.reach.count)
		return;
	bool *changed = calloc(m->save.reach.count, sizeof(*changed)), all;
	char err[256];
	if (!changed || mem_reach_changed(&m->c->verifier, &m->c->inputs, &m->save.reach, NULL,
					  m->launch.stream, changed, &all, err, sizeof(err))) {
		free(changed);
		return;
	}
	if (all) {
		m->fn->writes_all_reach = true;
		free(changed);
		return;
	}
	m->save.changed = changed;
}

/* After the runs: the ranges run 0 left as they were must still be so. A replay that
 * changed one (a kernel whose writes vary between runs) started the next run from other
 * memory and leaves the application other memory: false, said once per kernel, and the
 * kernel restores its whole reach from now on. */
static bool unchanged_still(struct measurement *m)
{
	size_t n = m->save.reach.count;
	bool *now = calloc(n, sizeof(*now)), all, ok = true;
	char err[256];
	/* Only the ranges run 0 left: the others are the runs' to change. */
	if (!now || mem_reach_changed(&m->c->verifier, &m->c->inputs, &m->save.reach,
				      m->save.changed, m->launch.stream, now, &all, err,
				      sizeof(err))) {
		free(now);
		return false; /* cannot tell: the caller runs the kernel again, as after a failure */
	}
	size_t which = 0;
	for (size_t i = 0; i < n && ok; i++)
		if (!m->save.changed[i] && now[i]) {
			ok = false;
			which = i;
		}
	free(now);
	if (!ok) {
		m->fn->writes_all_reach = true;
		struct inject_concerns about;
		inject_output_report(INJECT_REPORT_REPLAY_WROTE_MORE,
				     inject_measure_concerns(m, &about, 0), false,
			      "%s: a replay of launch %llu changed %zu bytes at %#llx that the "
			      "application's own launch had left as they were; that launch's runs "
			      "may have started from different memory. The kernel runs once more "
			      "for the application, and its later launches restore all the memory "
			      "they reach", m->kernel, (unsigned long long)m->launch.index,
			      m->save.reach.ranges[which].size,
			      (unsigned long long)m->save.reach.ranges[which].base);
	}
	return ok;
}

/* The application's launch was run 0 of an opened pass (inject_measure_open_first_run):
 * the other runs, each from the saved inputs, leave what the application's own launch
 * left, so nothing is put back. A measurement that failed part-way may have left the
 * inputs: the kernel then runs once more from them, unmeasured. */
static void finish_first_run_is_app(struct measurement *m, bool launched)
{
	if (!launched) {
		/* The driver refused the launch: the application sees its error. */
		inject_watchdog_disarm();
		collector_profiler_drop_open_pass(m->c->profiler);
		return;
	}
	m->lap = collector_cost_now(); /* the launch call itself is the application's */
	char why[2048];
	int rc = inject_measure_close_first_run(m, why, sizeof(why));
	if (rc) {
		/* Its memory is as the application's launch left it: nothing to put back. */
		struct inject_concerns about;
		inject_output_report(INJECT_REPORT_MEASURE, inject_measure_concerns(m, &about, rc),
				     true, "%s: %s; not measured", m->kernel, why);
		return;
	}
	learn_changed(m);
	collector_cost_lap(&m->cost, COST_VERIFY, &m->lap);
	bool measured = inject_measure(m);
	if (measured && (!m->save.changed || unchanged_still(m)))
		return;
	if (m->save.changed) { /* the whole reach again, for the kernel to run from */
		free(m->save.changed);
		m->save.changed = NULL;
	}
	char err[128]; /* the driver's error name */
	rc = mem_restore(&m->c->inputs, &m->save.reach, m->launch.stream, err, sizeof(err));
	if (!rc)
		rc = inject_kernel_launch_again(&m->launch, err, sizeof(err));
	CUresult sync = rp_api.cuCtxSynchronize();
	if (rc || sync != CUDA_SUCCESS)
		inject_output_report(INJECT_REPORT_RESTORE,
				     INJECT_CONCERNS(.kernel = m->kernel,
						     .mangled = m->launch.mangled,
						     INJECT_ON_DEVICE(m->device),
						     .call = "cuLaunchKernel",
						     .detail = INJECT_DETAIL_PAIR(rc, sync)), true,
			      "running %s again for the application after its measurement "
			      "failed: %s; the application's memory may differ", m->kernel,
			      rc ? err : collector_cu_error(sync));
	collector_cost_lap(&m->cost, COST_RESTORE, &m->lap);
}

void inject_save_exit(struct measurement *m, bool launched)
{
	INJECT_REPLAY_HELD();
	const struct inject_launch *l = &m->launch; /* as seen at ENTER: function, index, stream */
	struct inject_concerns about;
	if (m->first_run_is_app) {
		finish_first_run_is_app(m, launched);
		goto done;
	}
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
