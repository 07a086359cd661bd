/* inject/measure/whole_workload.c - a workload relaunched whole (measurement.h): a whole
 * graph launch (--graph-profiling graph), and through the same batch an NVTX range's
 * recorded calls (--replay-mode range: range_workload.c sets measurement.issue). Measured
 * like a kernel launch (runs, --runs auto, thermal guard, records) from the full
 * checkpoint, since what it runs may reach any memory. Each batch is timed by CUDA events
 * around each relaunch, and the set's other metrics come from user-range passes over the
 * same runs (inject_whole_workload_batch says why). graph_measure.c decides that a graph
 * launch is measured whole.
 * Calls: measure.c, checkpoint.c, watchdog.c, flush.c, names.c, collector/, memory/,
 * common/.
 * Called by: graph_measure.c (inject_whole_workload_graph), range_workload.c (its workload
 * is this batch).
 * Lock: the replay lock; not asserted by: inject_whole_workload_need (reads the metric set
 * it is handed). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "collector/profiler.h"
#include "common/error.h"
#include "inject/measure/checkpoint.h"
#include "inject/session/device.h"
#include "inject/session/flush.h"
#include "inject/measure/measurement.h"
#include "inject/session/session.h"
#include "inject/session/watchdog.h"

/* One run of a whole workload: its memory put back (the full checkpoint, or a range's
 * learned reach: range_workload.c), what the workload queues before its flush
 * (measurement.issue_first), the L2 flushed, the workload issued again
 * (measurement.issue) between two events or inside one user range. Each run ends before
 * the next one's restore begins. */
static int graph_run_once(void *arg, unsigned run, unsigned pass)
{
	struct replay_run *rr = arg;
	const struct measurement *m = rr->m;
	CUstream stream = rr->launch->stream;
	/* The timed runs, whose length is not known yet, are bounded one by one (a single
	 * relaunch of over 10 s would be extraordinary); the counter passes as a whole, from
	 * what the timed runs took (inject_whole_workload_batch). */
	if (rr->events || run == 0)
		inject_watchdog_arm(rr->events ? 10 : m->watchdog_seconds, m->kernel,
				    m->launch.mangled, m->device, m->launch.context_id,
				    m->launch.index);
	if (rr->save->checkpoint_saved) {
		if (rp_api.cuptiCheckpointRestore(&rr->save->checkpoint) != CUPTI_SUCCESS)
			return RP_ERR_RESTORE;
	} else {
		/* The driver's error names are not said: the code's text is the run's message. */
		char ignored[64];
		int restored = mem_restore(&rr->context->inputs, &rr->save->reach, stream, ignored,
					   sizeof(ignored));
		if (restored)
			return restored;
	}
	/* Before the flush and outside the measured window, as ncu's range replay runs a
	 * range's memsets and copies in its later occurrences (doc/range-replay.md). */
	if (m->issue_first) {
		CUresult first = m->issue_first(m, stream);
		CUresult sync = rp_api.cuStreamSynchronize(stream);
		if (first != CUDA_SUCCESS || sync != CUDA_SUCCESS)
			return RP_ERR_RELAUNCH;
	}
	int flushed = rr->flush ? inject_flush_launch(&rr->context->flush, stream) : 0;
	if (flushed) {
		rp_api.cuStreamSynchronize(stream);
		return flushed;
	}
	if (pass == 0 && rr->sample) {
		inject_measure_sample_before(rr, run);
	}
	CUresult cr;
	int rc = 0;
	if (rr->events) {
		cr = rp_api.cuEventRecord(rr->events[2 * run], stream);
		if (cr == CUDA_SUCCESS)
			cr = m->issue(m, stream);
		if (cr == CUDA_SUCCESS)
			cr = rp_api.cuEventRecord(rr->events[2 * run + 1], stream);
	} else {
		if (collector_profiler_push_range(rr->context->profiler, run)) {
			rp_api.cuStreamSynchronize(stream);
			return RP_ERR_USER_RANGE;
		}
		cr = m->issue(m, stream);
		if (collector_profiler_pop_range(rr->context->profiler))
			rc = RP_ERR_USER_RANGE;
	}
	/* Whatever failed, what was queued ends before the caller puts the memory back. */
	CUresult sync = rp_api.cuStreamSynchronize(stream);
	if (cr == CUDA_SUCCESS)
		cr = sync;
	return rc ? rc : cr == CUDA_SUCCESS ? 0 : RP_ERR_RELAUNCH;
}

/* What graph_run_once's codes mean for a whole graph, in the words the records used
 * before the codes (common/error.h) were named. */
static const char *graph_run_error(int rc)
{
	switch (rc) {
	case RP_ERR_RESTORE: return "putting its memory back (cuptiCheckpointRestore) failed";
	case RP_ERR_FLUSH: return "flushing the L2 failed";
	case RP_ERR_RELAUNCH: return "relaunching it failed";
	case RP_ERR_USER_RANGE: return "opening or closing its user range failed";
	default: return rp_error_text(rc);
	}
}

/* Whether a whole graph launch needs profiler passes for set: any metric other than
 * gpu__time_duration.sum, counters or timers alike. */
static bool graph_needs_passes(const struct collector_metric_set *set)
{
	bool timed = inject_measure_time_metric(set) != SIZE_MAX;
	return collector_metric_set_user_count(set) > (timed ? 1u : 0u);
}

/* One batch of runs of a whole workload: a graph launch (--graph-profiling graph) or a
 * range (--replay-mode range). Its time comes from
 * CUDA events around each relaunch with no profiler pass running: a user range around
 * the launch adds 10-40 us to the graph's ~160 us (bench/stop_probe.cu G2), and counters
 * more (bench/graph_range_probe.cu B: doc/measurements.md, "Graph launches under the range
 * profiler"). The timed runs always run, even when the
 * time is not asked for: they bound the passes that follow and give each run its NVML
 * sample. The set's other metrics come from user-range passes over the same runs, one
 * range per relaunch: under AutoRange a graph launch gives no usable range (alone, one
 * range without a duration, bench/stop_probe.cu G; beside plain kernels and a memset, the
 * pass's Stop fails, bench/graph_range_probe.cu A). So a run record's time and its
 * counters come from two relaunches of the same graph from the same memory, and rates
 * over the range's duration (.per_second, % of peak elapsed) include the range's own
 * 10-40 us.
 * values and clocks as collector_profiler_measure fills them; passes counts the profiler
 * passes, 1 when only the time was measured. */
int inject_whole_workload_batch(struct measurement *m, struct replay_run *rr, unsigned batch,
		       double *values, double *clocks, unsigned *passes, char *err, size_t err_size)
{
	INJECT_REPLAY_HELD();
	const struct collector_metric_set *set = m->d->set;
	size_t count = collector_metric_set_user_count(set), time_k = inject_measure_time_metric(set);
	bool counters = graph_needs_passes(set);
	CUevent *events = calloc(2 * (size_t)batch, sizeof(*events));
	double *counted = calloc((size_t)batch * count + 1, sizeof(*counted));
	CUresult cr = events && counted ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
	int rc = 0;
	*passes = 0;
	for (unsigned r = 0; r < batch; r++)
		clocks[r] = NAN;
	for (unsigned i = 0; i < 2 * batch && cr == CUDA_SUCCESS; i++)
		cr = rp_api.cuEventCreate(&events[i], CU_EVENT_DEFAULT);
	rr->events = events;
	rr->sample = true;
	for (unsigned r = 0; r < batch && cr == CUDA_SUCCESS && !rc; r++)
		rc = graph_run_once(rr, r, 0);
	inject_watchdog_disarm();
	double total_s = 0;
	for (unsigned r = 0; r < batch && cr == CUDA_SUCCESS && !rc; r++) {
		float ms = 0;
		cr = rp_api.cuEventElapsedTime(&ms, events[2 * r], events[2 * r + 1]);
		if (time_k != SIZE_MAX)
			values[(size_t)r * count + time_k] = ms * 1e6;
		total_s += ms * 1e-3;
	}
	*passes = 1;
	/* The counter passes' bound: far longer than the batch took by events. */
	m->watchdog_seconds = total_s * 1000 > 10 ? total_s * 1000 : 10;
	collector_cost_lap(&m->cost, COST_RUNS, &m->lap);
	rr->events = NULL;
	rr->sample = false;
	if (cr != CUDA_SUCCESS || rc) {
		snprintf(err, err_size, "relaunching the %s: %s", m->range ? "range" : "graph",
			 cr != CUDA_SUCCESS ?
			 collector_cu_error(cr) : graph_run_error(rc));
		rc = rc ? rc : RP_ERR_RELAUNCH;
	} else if (counters) {
		rc = collector_profiler_measure(m->c->profiler, set, batch, 1, graph_run_once, rr,
						counted, clocks, passes, &m->cost, err, err_size);
		for (unsigned r = 0; r < batch && !rc; r++)
			for (size_t k = 0; k < count; k++)
				if (k != time_k)
					values[(size_t)r * count + k] = counted[(size_t)r * count + k];
	}
	for (unsigned i = 0; events && i < 2 * batch; i++)
		if (events[i])
			rp_api.cuEventDestroy(events[i]);
	free(events);
	free(counted);
	return rc;
}

enum inject_profiler_need inject_whole_workload_need(const struct collector_metric_set *set)
{
	/* A graph timed by events alone leaves the profiler as it is. */
	return graph_needs_passes(set) ? INJECT_PROFILER_PER_GRAPH : INJECT_PROFILER_NONE;
}

const struct inject_workload inject_graph_workload = { inject_whole_workload_need,
						       inject_whole_workload_batch };

static CUresult graph_issue(const struct measurement *m, CUstream stream)
{
	return rp_api.cuGraphLaunch(m->graph_exec, stream);
}

/* --graph-profiling graph: the whole graph launch of exec is one workload. */
void inject_whole_workload_graph(CUgraphExec exec, CUstream stream, CUcontext ctx,
				 uint32_t context_id, uint64_t index,
				 const struct collector_graph *where)
{
	INJECT_REPLAY_HELD();
	struct measurement *m = inject_measurement_new(&inject_graph_workload);
	if (!m)
		return;
	char name[64];
	snprintf(name, sizeof(name), "graph %llu", (unsigned long long)where->id);
	const char *interned = NULL;
	m->kernel = inject_name_intern(name, &interned);
	m->launch = (struct inject_launch){ .ctx = ctx, .context_id = context_id, .stream = stream,
					    .mangled = interned ? interned : m->kernel,
					    .index = index, .graph = where };
	m->graph_exec = exec;
	m->issue = graph_issue;
	if (!inject_measure_get_ready(m))
		goto done;
	snprintf(m->save.why, sizeof(m->save.why), "a graph launch: the memory all its nodes "
		 "can reach");
	if (inject_checkpoint_save(m)) {
		inject_measure(m);
		inject_checkpoint_put_back(m);
	}
done:
	inject_measurement_finish(m);
}
