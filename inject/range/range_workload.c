/* inject/range/range_workload.c - range replay (--replay-mode range; range.h,
 * doc/range-replay.md): a selected NVTX range measured as one workload.
 *   - At the range's begin (launch.c's NVTX hook, on the thread that opened it) the
 *     application's queued work is waited for, this process's turn and the profiler are
 *     made ready, and the memory it starts from is saved (range_memory.c: the whole
 *     context until the range's name has shown what its calls reach, then only that).
 *   - While it runs, its driver calls are recorded (range_ops.c): every call of the
 *     thread that pushed it (push/pop), of any thread (start/end). The application's own
 *     calls run as they would.
 *   - At its end (before the pop or end takes effect, so the records see the range open)
 *     the context's end state is saved too, the recorded calls are replayed --runs times
 *     from the begin state through the whole-workload batch (whole_workload.c: CUDA
 *     events for the time, user-range passes for the other metrics; one flush before
 *     each run, none between its calls), and the end state is put back: the application
 *     goes on from its own results, as in kernel replay.
 *   - A call that cannot be replayed ends the recording: one warning names the call and
 *     where, the saved state is dropped, and the range's later kernels, and the later
 *     ranges of that name (after three refusals only, for an allocation or a capture's
 *     begin), are measured kernel by kernel (launch.c asks inject_range_kernel_fallback).
 * One range workload at a time in the process. Its state, the recorded calls included,
 * is under the replay lock: the recording threads (a push/pop range has one, a start/end
 * range any) add their calls in inject_range_on_call, which takes it.
 * Calls: measure.c, whole_workload.c (its batch), session.c, range_memory.c (what is saved),
 * range_calls.c (each call at its ENTER), range_ops.c, range_replay.c, output.c, nvtx_bridge/,
 * collector/, config.c.
 * Called by: launch.c (the NVTX hooks, every driver call while a range is recorded).
 * Lock: the replay lock; not asserted by: inject_range_set_mode (sets an atomic; abandoning
 * a recording asserts it), inject_range_set_graph_check (once, from
 * inject_launch_set_range_mode: before the callbacks or with the lock held). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/api.h"
#include "collector/records.h"
#include "common/error.h"
#include "common/log.h"
#include "inject/config.h"
#include "inject/measure/measurement.h"
#include "inject/output.h"
#include "inject/range/range.h"
#include "inject/range/range_memory.h"
#include "inject/session/session.h"
#include "nvtx_bridge/nvtx_bridge.h"

/* A range is relaunched whole, like a graph launch, from the memory range_memory.c saved
 * at its begin (the full checkpoint, or the learned reach). */
const struct inject_workload inject_range_workload = { inject_whole_workload_need,
						       inject_whole_workload_batch };

/* range.h's flags, read inline by launch.c at every launch. */
atomic_bool inject_range_mode_flag;        /* --replay-mode range (may change at run time) */
atomic_bool inject_range_recording_flag;   /* a hint for launch.c; rw.active decides */
atomic_bool inject_range_fallback_flag;    /* a range measured kernel by kernel is open */

/* Which threads' calls the recorded range takes, for launch.c's threads to tell before
 * the replay lock: a push/pop range's owner only, or any thread (start/end). */
static atomic_ulong owner_thread;
static atomic_bool owner_any;

/* The range being recorded (replay lock). */
static struct {
	bool active;
	struct nvtx_bridge_range_key key;
	pthread_t thread;            /* push/pop: the thread whose stack holds it */
	char name[NVTX_BRIDGE_MAX_TEXT + 1];   /* whole, as the bridge keeps it: names key policies */
	struct measurement *m;       /* the begin state saved in m->save */
	struct range_policy *policy; /* of its name (range_memory.c) */
	struct mem_hashes before;    /* learning: every tracked allocation at the begin */
	double begin_ms;             /* what the begin cost, for the summary's total */
} rw;
/* The calls recorded so far (replay lock: inject_range_on_call takes it to add one). */
static struct range_ops recorded;

/* The range measured kernel by kernel now (replay lock): its recording was refused, now
 * or at an earlier occurrence of its name (range_memory.c keeps the names). */
static struct nvtx_bridge_range_key fallback_key;
static pthread_t fallback_thread;

static bool same_range(const struct nvtx_bridge_range_key *a, pthread_t a_thread,
		       const struct nvtx_bridge_range_key *b)
{
	if (a->start_end != b->start_end)
		return false;
	if (a->start_end)
		return a->id == b->id;
	return a->domain == b->domain && a->depth == b->depth &&
	       pthread_equal(a_thread, pthread_self());
}

/* The range's text as the snapshot holds it: the newest push/pop range after a push, the
 * newest start/end range after a start. */
static void range_name(const struct nvtx_bridge_range_key *key, char *name, size_t size)
{
	const struct nvtx_bridge_snapshot *snap = nvtx_bridge_snapshot();
	const struct nvtx_bridge_range *r = NULL;
	if (!key->start_end && snap->push_count)
		r = &snap->ranges[snap->push_count - 1];
	else if (key->start_end && snap->count > snap->push_count)
		r = &snap->ranges[snap->count - 1];
	snprintf(name, size, "%s", r ? r->text : "");
}

void inject_range_opened(const struct nvtx_bridge_range_key *key, bool selected,
			 uint64_t first_launch)
{
	INJECT_REPLAY_HELD();
	if (rw.active || atomic_load(&inject_range_fallback_flag) || !selected)
		return;
	/* Free while no range records: it names this one from here on. */
	range_name(key, rw.name, sizeof(rw.name));
	const char *name = rw.name;
	struct range_policy *policy = range_policy_of(name);
	if (range_policy_refused(policy)) {
		fallback_key = *key;
		fallback_thread = pthread_self();
		atomic_store(&inject_range_fallback_flag, true);
		return;
	}
	CUcontext ctx = NULL;
	if (rp_api.cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || !ctx) {
		/* Once per range name, which the record leaves out. */
		inject_output_report(INJECT_REPORT_RANGE_NO_CONTEXT,
				     INJECT_CONCERNS(.option = "--replay-mode", .mangled = name),
				     false,
			      "range '%s' began on a thread with no CUDA context current; it is not "
			      "measured (range replay saves the context's memory at the range's "
			      "begin)", name);
		return;
	}
	uint32_t context_id = 0;
	rp_api.cuptiGetContextId(ctx, &context_id);
	struct measurement *m = inject_measurement_new(&inject_range_workload);
	if (!m)
		return;
	/* The range's own name, kept in rw until the next range begins (after this one's
	 * measurement): interning every range name would keep each for good, and a program
	 * may number its ranges. */
	m->kernel = rw.name;
	m->launch = (struct inject_launch){ .ctx = ctx, .context_id = context_id,
					    .mangled = rw.name, .index = first_launch };
	if (!inject_measure_get_ready(m) || !range_memory_begin(policy, m, &rw.before)) {
		range_memory_drop(m, &rw.before);
		inject_measurement_finish(m);
		return;
	}
	rw.active = true;
	rw.key = *key;
	rw.thread = pthread_self();
	rw.m = m;
	rw.policy = policy;
	rw.begin_ms = collector_cost_now() - m->started;
	range_ops_init(&recorded, ctx);
	atomic_store(&owner_thread, (unsigned long)rw.thread);
	atomic_store(&owner_any, key->start_end);
	atomic_store(&inject_range_recording_flag, true);
}

/* The recording stops at a refused call: said once per range name, the begin state
 * dropped, and from here on the range's kernels measured one by one. Replay lock held. */
static void refuse_range(const struct range_refusal *r)
{
	INJECT_REPLAY_HELD();
	struct measurement *m = rw.m;
	atomic_store(&inject_range_recording_flag, false);
	bool for_good = range_policy_refuse(rw.policy, r->transient);
	inject_output_report(INJECT_REPORT_RANGE_REFUSED,
			     INJECT_CONCERNS(.kernel = rw.name, .call = r->call,
					     .option = "--replay-mode", .detail = for_good),
		      false, "range '%s' cannot be replayed whole: its driver call #%llu, %s, %s "
		      "(after %zu of its kernel launches, from launch %llu on); its later kernels "
		      "fall back to kernel replay (each measured on its own) %s; the application "
		      "runs on as it would", rw.name,
		      (unsigned long long)r->call_index + 1, r->call, r->why, r->kernels_before,
		      (unsigned long long)m->launch.index, for_good ?
		      "as do its later occurrences" : "and its next occurrence is tried whole "
		      "again (a call made at the first iterations only)");
	range_memory_drop(m, &rw.before);
	inject_measurement_finish(m);
	rw.m = NULL;
	rw.active = false;
	fallback_key = rw.key;
	fallback_thread = rw.thread;
	atomic_store(&inject_range_fallback_flag, true);
	range_ops_finish(&recorded);
}

static inject_range_graph_check graph_check;
/* Why a graph launch was refused: the refusal points to it until it is said. */
static char graph_why[320];

void inject_range_set_graph_check(inject_range_graph_check check)
{
	graph_check = check;
}

static bool is_graph_launch(CUpti_CallbackId cbid)
{
	return cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch ||
	       cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz;
}

bool inject_range_on_call(CUpti_CallbackId cbid, const CUpti_CallbackData *cb)
{
	/* Another thread's call in a push/pop range is not the range's: it goes on without
	 * waiting for the replay lock, which a measurement may hold for long. */
	if (!atomic_load(&owner_any) &&
	    atomic_load(&owner_thread) != (unsigned long)pthread_self())
		return false;
	inject_session_lock();
	bool ours = rw.active && (rw.key.start_end || pthread_equal(rw.thread, pthread_self()));
	if (ours) {
		/* A graph whose relaunch would wait for peers or repeat a side effect is refused
		 * as graph mode refuses it (graph_measure.c). */
		bool graph_refused = is_graph_launch(cbid) && graph_check &&
			!graph_check(((const cuGraphLaunch_params *)cb->functionParams)->hGraph,
				     cb->context, graph_why, sizeof(graph_why));
		enum range_call verdict = RANGE_CALL_REFUSED;
		size_t recorded_before = recorded.count;
		if (graph_refused)
			range_ops_refuse(&recorded, cbid, cb, RANGE_WHY_GRAPH, graph_why);
		else
			verdict = range_ops_on_call(&recorded, cbid, cb);
		/* A first occurrence saves what the call reaches before the call runs. */
		if (verdict == RANGE_CALL_RECORDED)
			range_memory_on_calls(rw.m, &recorded, recorded_before);
		struct range_refusal refusal = recorded.refusal;
		if (verdict == RANGE_CALL_REFUSED)
			refuse_range(&refusal);
	}
	inject_session_unlock();
	return ours;
}

/* "3 kernels: a, b, c" - the records' kernel, which the report shows where a kernel's
 * name would be. Long lists are cut; the range object lists every name. */
static void kernel_text(const struct range_ops *ops, char *text, size_t size)
{
	size_t n = (size_t)snprintf(text, size, "%zu kernel%s%s", ops->kernels,
				    ops->kernels == 1 ? "" : "s", ops->kernels ? ": " : "");
	size_t listed = 0;
	for (size_t i = 0; i < ops->count && n < size; i++) {
		if (ops->ops[i].kind != RANGE_OP_KERNEL)
			continue;
		const char *name = ops->ops[i].kernel.name ? ops->ops[i].kernel.name : "?";
		if (n + strlen(name) + 32 >= size) {
			snprintf(text + n, size - n, "... (%zu more)", ops->kernels - listed);
			return;
		}
		n += (size_t)snprintf(text + n, size - n, "%s%s", listed ? ", " : "", name);
		listed++;
	}
}

/* What one run issues: the recorded calls forked from the batch's stream and joined back
 * to it, so that the batch's events and sync cover every stream the range used. */
struct range_run_state {
	const struct range_ops *ops;
	struct range_replay replay;
	CUstream *streams;           /* streams[0] is the batch's stream */
	size_t stream_count;
	CUevent fork;
	CUevent *joins;              /* one per stream after the first */
	enum range_part measured;    /* what the measured window issues (--range-scope) */
	char err[256];
};

static CUresult issue_part(const struct measurement *m, CUstream stream, enum range_part part)
{
	struct range_run_state *st = m->issue_arg;
	CUresult cr = CUDA_SUCCESS;
	if (st->stream_count > 1)
		cr = rp_api.cuEventRecord(st->fork, stream);
	for (size_t i = 1; i < st->stream_count && cr == CUDA_SUCCESS; i++)
		cr = rp_api.cuStreamWaitEvent(st->streams[i], st->fork, 0);
	bool forked = cr == CUDA_SUCCESS;
	if (forked && range_replay_issue(st->ops, &st->replay, part, st->err, sizeof(st->err)))
		cr = CUDA_ERROR_LAUNCH_FAILED;
	/* Joined even when the replay failed part way: the batch then waits on stream alone,
	 * and what the other streams still run must end before the memory is put back. */
	for (size_t i = 1; forked && i < st->stream_count; i++) {
		CUresult joined = rp_api.cuEventRecord(st->joins[i - 1], st->streams[i]);
		if (joined == CUDA_SUCCESS)
			joined = rp_api.cuStreamWaitEvent(stream, st->joins[i - 1], 0);
		if (joined != CUDA_SUCCESS) {
			rp_api.cuCtxSynchronize();
			if (cr == CUDA_SUCCESS)
				cr = joined;
		}
	}
	return cr;
}

static CUresult range_issue(const struct measurement *m, CUstream stream)
{
	return issue_part(m, stream, ((const struct range_run_state *)m->issue_arg)->measured);
}

/* --range-scope kernels: the memsets and copies, before the run's flush. */
static CUresult range_issue_memory(const struct measurement *m, CUstream stream)
{
	return issue_part(m, stream, RANGE_PART_MEMORY);
}

static void measure_recorded(struct measurement *m, struct range_ops *ops)
{
	bool kernels_only = inject_config()->range_scope == RP_RANGE_SCOPE_KERNELS;
	struct range_run_state st = { .ops = ops,
				      .measured = kernels_only ? RANGE_PART_REST : RANGE_PART_ALL };
	size_t count = range_ops_streams(ops, NULL, 0);
	st.streams = calloc(count ? count : 1, sizeof(*st.streams));
	st.joins = calloc(count ? count : 1, sizeof(*st.joins));
	uint64_t *stream_ids = calloc(count ? count : 1, sizeof(*stream_ids));
	const char **names = calloc(ops->kernels ? ops->kernels : 1, sizeof(*names));
	char *text = malloc(4096);
	char err[256] = "";
	bool allocated = st.streams && st.joins && stream_ids && names && text, ok = allocated;
	/* What failed, for the report: the shadow events' preparation, then cuEventCreate. */
	long long failure = allocated ? 0 : RP_ERR_NO_MEMORY;
	if (ok) {
		st.stream_count = range_ops_streams(ops, st.streams, count);
		int rc = range_replay_prepare(ops, &st.replay, err, sizeof(err));
		ok = rc == 0;
		failure = INJECT_DETAIL_PAIR(1, rc);
	}
	CUresult cr = CUDA_SUCCESS;
	if (ok && st.stream_count > 1)
		cr = rp_api.cuEventCreate(&st.fork, CU_EVENT_DISABLE_TIMING);
	for (size_t i = 1; ok && i < st.stream_count && cr == CUDA_SUCCESS; i++)
		cr = rp_api.cuEventCreate(&st.joins[i - 1], CU_EVENT_DISABLE_TIMING);
	if (ok && cr != CUDA_SUCCESS) {
		snprintf(err, sizeof(err), "cuEventCreate: %s", collector_cu_error(cr));
		failure = INJECT_DETAIL_PAIR(2, cr);
		ok = false;
	}
	if (!ok) {
		inject_output_report(INJECT_REPORT_RANGE_MEASURE,
				     INJECT_CONCERNS(.kernel = m->kernel, .detail = failure), true,
			      "range '%s': %s; not measured", m->kernel,
			      allocated ? err : "out of host memory");
		goto out;
	}
	size_t k = 0;
	size_t memsets = 0, copies = 0, events = 0, syncs = 0;
	for (size_t i = 0; i < ops->count; i++) {
		const struct range_op *op = &ops->ops[i];
		switch (op->kind) {
		case RANGE_OP_KERNEL: names[k++] = op->kernel.name ? op->kernel.name : "?"; break;
		case RANGE_OP_MEMSET: memsets++; break;
		case RANGE_OP_COPY: copies++; break;
		case RANGE_OP_EVENT_RECORD:
		case RANGE_OP_STREAM_WAIT: events++; break;
		case RANGE_OP_SYNC: syncs++; break;
		case RANGE_OP_GRAPH_LAUNCH: break;
		}
	}
	for (size_t i = 0; i < st.stream_count; i++) {
		uint32_t id = 0;
		rp_api.cuptiGetStreamIdEx(m->launch.ctx, st.streams[i], 0, &id);
		stream_ids[i] = id;
	}
	kernel_text(ops, text, 4096);
	struct collector_range range = {
		.name = m->kernel, .kernels = ops->kernels, .kernel_names = names,
		.memsets = memsets, .copies = copies, .graph_launches = ops->graph_launches,
		.event_ops = events, .syncs = syncs, .streams = stream_ids,
		.stream_count = st.stream_count, .scope = kernels_only ? "kernels" : "whole" };
	const char *name = m->kernel;
	m->kernel = text;
	m->range = &range;
	m->launch.stream = st.streams[0];
	m->issue = range_issue;
	m->issue_first = kernels_only && (memsets || copies) ? range_issue_memory : NULL;
	m->issue_arg = &st;
	inject_measure(m);
	m->kernel = name;
	m->range = NULL;
	m->issue_first = NULL;
out:
	if (st.fork)
		rp_api.cuEventDestroy(st.fork);
	for (size_t i = 0; st.joins && i + 1 < st.stream_count; i++)
		if (st.joins[i])
			rp_api.cuEventDestroy(st.joins[i]);
	range_replay_finish(&st.replay);
	free(st.streams);
	free(st.joins);
	free(stream_ids);
	free(names);
	free(text);
}

/* The recording ends unmeasured: the begin state dropped (the memory is the
 * application's), the turn given back. Replay lock held. */
enum range_abandoned {
	RANGE_ABANDONED_MODE,       /* --replay-mode set to kernel meanwhile */
	RANGE_ABANDONED_CONTEXT,    /* its context destroyed */
	RANGE_ABANDONED_CAPTURE,    /* a stream capture under way at its end */
};

static void abandon(enum range_abandoned why)
{
	static const char *const words[] = {
		[RANGE_ABANDONED_MODE] = "--replay-mode was set to kernel while it was recorded",
		[RANGE_ABANDONED_CONTEXT] = "its context was destroyed while it ran",
		/* One literal: clang's -Wstring-concatenation (the wheel's compiler) takes two
		 * adjacent ones in an array for a missing comma. */
		[RANGE_ABANDONED_CAPTURE] =
			"a stream capture was under way at its end; the capture stays valid",
	};
	atomic_store(&inject_range_recording_flag, false);
	if (rw.active) {
		INJECT_REPLAY_HELD();
		inject_output_report(INJECT_REPORT_RANGE_ABANDONED,
				     INJECT_CONCERNS(.kernel = rw.name, .detail = why), false,
			      "range '%s' is not measured: %s", rw.name, words[why]);
		range_memory_drop(rw.m, &rw.before);
		inject_measurement_finish(rw.m);
		rw.m = NULL;
		rw.active = false;
		range_ops_finish(&recorded);
	}
}

void inject_range_set_mode(bool on)
{
	atomic_store(&inject_range_mode_flag, on);
	if (!on) {
		abandon(RANGE_ABANDONED_MODE);
		atomic_store(&inject_range_fallback_flag, false);
	}
}

void inject_range_context_destroyed(CUcontext ctx)
{
	INJECT_REPLAY_HELD();
	if (rw.active && rw.m->launch.ctx == ctx)
		abandon(RANGE_ABANDONED_CONTEXT);
	range_memory_context_destroyed(ctx);
}

void inject_range_closing(const struct nvtx_bridge_range_key *key, bool capture_under_way)
{
	INJECT_REPLAY_HELD();
	if (atomic_load(&inject_range_fallback_flag) && same_range(&fallback_key, fallback_thread, key)) {
		atomic_store(&inject_range_fallback_flag, false);
		return;
	}
	if (!rw.active || !same_range(&rw.key, rw.thread, key))
		return;
	/* Its end synchronises and replays: a capture under way on another thread would be
	 * invalidated, as by a measured launch. */
	if (capture_under_way) {
		abandon(RANGE_ABANDONED_CAPTURE);
		return;
	}
	atomic_store(&inject_range_recording_flag, false);
	rw.active = false;
	struct measurement *m = rw.m;
	rw.m = NULL;
	struct range_ops ops = recorded;
	recorded = (struct range_ops){ 0 };
	/* A start/end range may end on another thread than the one that began it. */
	CUcontext was = NULL;
	rp_api.cuCtxGetCurrent(&was);
	if (was != m->launch.ctx)
		rp_api.cuCtxSetCurrent(m->launch.ctx);
	RP_CUpti_Checkpoint end_state = { 0 };
	CUresult cr;
	if (!ops.count) {
		inject_output_report(INJECT_REPORT_RANGE_EMPTY, INJECT_CONCERNS(.kernel = rw.name,
							     .option = "--replay-mode"), false,
			      "range '%s' made no call that runs on the GPU; nothing to measure",
			      rw.name);
	} else if (inject_config()->range_scope == RP_RANGE_SCOPE_KERNELS && !ops.kernels &&
		   !ops.graph_launches) {
		inject_output_report(INJECT_REPORT_RANGE_NO_KERNEL,
				     INJECT_CONCERNS(.kernel = rw.name, .option = "--range-scope"),
				     false, "range '%s' launched no kernel and --range-scope kernels "
				     "measures only kernels; not measured", rw.name);
	} else if ((cr = rp_api.cuCtxSynchronize()) != CUDA_SUCCESS) {
		inject_output_report(INJECT_REPORT_SYNC,
				     INJECT_CONCERNS(.kernel = rw.name, .detail = cr), true,
			      "cuCtxSynchronize at the end of range '%s': %s; not measured",
			      rw.name, collector_cu_error(cr));
	} else if (range_memory_end(rw.policy, m, &ops, &rw.before, &end_state)) {
		/* The measurement's cost: its begin, then from here (the range's own run is
		 * the application's, not rangeprof's). */
		m->started = collector_cost_now() - rw.begin_ms;
		m->lap = collector_cost_now();
		measure_recorded(m, &ops);
		/* The application goes on from its own end state, not from the last run's. */
		range_memory_put_back(m, &end_state);
	}
	CUcontext ctx = m->launch.ctx;
	range_memory_drop(m, &rw.before);
	inject_measurement_finish(m);
	range_ops_finish(&ops);
	if (was != ctx)
		rp_api.cuCtxSetCurrent(was);
}
