/* inject/measure/checkpoint.c - the full CUPTI checkpoint of a context: every allocation,
 * saved and put back. Any workload whose reach is not known starts each run from it: a
 * kernel launch whose save policy falls back, a whole graph or a range's first
 * occurrences, a graph's nodes.
 * Calls: output.c, session.c (the copies it keeps, freed first), collector/.
 * Called by: save.c, whole_workload.c, range_memory.c, graph_measure.c.
 * Lock: the replay lock (for the measurement's pair); not asserted by:
 * inject_checkpoint_cupti_save, inject_checkpoint_cupti_put_back (the bare CUPTI pair, for
 * callers that keep their own checkpoint). */
#include "inject/measure/checkpoint.h"

#include "collector/api.h"
#include "collector/device.h"
#include "collector/profiler.h"
#include "inject/inject.h"
#include "inject/measure/measurement.h"
#include "inject/output.h"
#include "inject/session/session.h"

CUptiResult inject_checkpoint_cupti_save(CUcontext ctx, RP_CUpti_Checkpoint *checkpoint)
{
	*checkpoint = (RP_CUpti_Checkpoint){
		.structSize = RP_CUPTI_CHECKPOINT_STRUCT_SIZE, .ctx = ctx, .allowOverwrite = 1,
		.reserveHostMB = collector_checkpoint_host_reserve_mb() };
	return rp_api.cuptiCheckpointSave(checkpoint);
}

CUptiResult inject_checkpoint_cupti_put_back(RP_CUpti_Checkpoint *checkpoint)
{
	CUptiResult restore = rp_api.cuptiCheckpointRestore(checkpoint);
	rp_api.cuCtxSynchronize();
	rp_api.cuptiCheckpointFree(checkpoint);
	return restore;
}

bool inject_checkpoint_save(struct measurement *m)
{
	INJECT_REPLAY_HELD();
	m->save.strategy = "checkpoint";
	/* The checkpoint saves the context's allocations, rangeprof's copies with them: those
	 * over 256 MiB, which the context may keep now (session.c), go first. */
	if (m->c)
		inject_session_trim_backups(m->c);
	CUptiResult r = inject_checkpoint_cupti_save(m->launch.ctx, &m->save.checkpoint);
	if (r != CUPTI_SUCCESS) {
		inject_output_report(INJECT_REPORT_CHECKPOINT, INJECT_CONCERNS(.kernel = m->kernel,
							    .mangled = m->launch.mangled,
							    INJECT_ON_DEVICE(m->device),
							    .call = "cuptiCheckpointSave",
							    .detail = r), true,
			      "cuptiCheckpointSave for %s (launch %llu): "
				   "%s%s; launch not measured, the application runs on", m->kernel,
				   (unsigned long long)m->launch.index, collector_cupti_error(r),
				   r == CUPTI_ERROR_OUT_OF_MEMORY ?
				   " (no room in device or host memory to save the application's "
				   "device memory)" : "");
		return false;
	}
	m->save.checkpoint_saved = true;
	collector_cost_lap(&m->cost, COST_SAVE, &m->lap);
	return true;
}

void inject_checkpoint_put_back(struct measurement *m)
{
	INJECT_REPLAY_HELD();
	CUptiResult restore = inject_checkpoint_cupti_put_back(&m->save.checkpoint);
	if (restore != CUPTI_SUCCESS)
		inject_output_report(INJECT_REPORT_RESTORE, INJECT_CONCERNS(.kernel = m->kernel,
							 .mangled = m->launch.mangled,
							 INJECT_ON_DEVICE(m->device),
							 .call = "cuptiCheckpointRestore",
							 .detail = restore), true,
			      "cuptiCheckpointRestore after %s: %s; the application's memory may "
			      "differ", m->kernel, collector_cupti_error(restore));
}
