/* inject/range/range.h - range replay (--replay-mode range, issue 20; doc/range-replay.md): a
 * selected NVTX range measured as one workload.
 *   range_workload.c  a range's life: its begin, its calls recorded, its end (measured
 *                     as one workload through measure.c), refusals and the fallback to
 *                     kernel replay;
 *   range_memory.c    what a range saves (range_memory.h);
 *   range_calls.c     each driver call a range makes, classified at its ENTER as recorded,
 *                     ignored (changes nothing on the device) or refused (what a replay
 *                     cannot repeat), through range_args.c (a call's arguments) into
 *                     range_ops.c (the store of recorded calls and their deep copies);
 *   range_replay.c    the recorded calls issued again, once per run.
 * Recording runs on the application's threads inside the driver calls, under the replay
 * lock; replay runs under the replay lock too. */
#ifndef INJECT_RANGE_H
#define INJECT_RANGE_H

#include <cuda.h>
#include <cupti.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "inject/inject.h"
#include "inject/range/range_why.h"
#include "nvtx_bridge/nvtx_bridge.h"

/* ---- the recorded calls: range_ops.c, range_calls.c, range_replay.c ----------------- */

enum range_op_kind {
	RANGE_OP_KERNEL,       /* cuLaunchKernel(Ex), cuLaunchCooperativeKernel, _ptsz forms */
	RANGE_OP_MEMSET,       /* cuMemsetD8/D16/D32 and their 2D forms, sync or async */
	RANGE_OP_COPY,         /* device to device, or host to device from a copy of the host
				* bytes taken at the call */
	RANGE_OP_EVENT_RECORD, /* cuEventRecord(WithFlags): replayed on a shadow event */
	RANGE_OP_STREAM_WAIT,  /* cuStreamWaitEvent: replayed on the shadow event */
	RANGE_OP_GRAPH_LAUNCH, /* cuGraphLaunch of an executable graph */
	RANGE_OP_SYNC,         /* cuStreamSynchronize, cuEventSynchronize, cuCtxSynchronize:
				* the host waited there, so what it issued next is ordered after */
};

struct range_op {
	enum range_op_kind kind;
	CUstream stream;             /* a _ptsz/_ptds call's NULL is CU_STREAM_PER_THREAD */
	uint64_t call;               /* the call's place among the range's driver calls */
	union {
		struct {
			/* Its kernel_params, extra and config point into args/attrs below,
			 * so inject_kernel_launch_again() issues it again as the application did. */
			struct inject_launch launch;
			const char *name;    /* demangled, interned (names.c): stable */
			void *args;          /* the parameter bytes, copied */
			void **params;       /* kernelParams rebuilt over args, or NULL */
			void *extra[5];      /* extra rebuilt over args, when the call used it */
			size_t args_size;
			CUlaunchConfig config;       /* INJECT_LAUNCH_EX */
			CUlaunchAttribute *attrs;    /* copied */
		} kernel;
		struct {
			CUdeviceptr dst;
			size_t pitch;        /* 0: a 1D memset */
			unsigned value;
			unsigned element_size;  /* 1, 2 or 4 */
			size_t width, height;   /* elements; height 1 for 1D */
		} memset;
		struct {
			CUdeviceptr dst;
			CUdeviceptr src;     /* device source, or 0 */
			void *host;          /* host source, copied at the call, or NULL */
			size_t bytes;
		} copy;
		struct {
			CUevent event;       /* the application's; NULL for cuCtxSynchronize */
			unsigned flags;
			enum { RANGE_SYNC_STREAM, RANGE_SYNC_EVENT, RANGE_SYNC_CONTEXT } sync;
		} event;                 /* EVENT_RECORD, STREAM_WAIT, SYNC */
		struct {
			CUgraphExec exec;
		} graph;
	};
};

/* Whether op's stream is what it runs on (a SYNC of an event or the context has none). */
static inline bool range_op_runs_on_stream(const struct range_op *op)
{
	return op->kind != RANGE_OP_SYNC || op->event.sync == RANGE_SYNC_STREAM;
}

/* Why a range cannot be replayed: the first call that made it so. */
struct range_refusal {
	char call[64];               /* the driver call's name, e.g. "cuMemAlloc_v2" */
	enum range_why code;         /* what is decided on (range_why.h) */
	const char *why;             /* what is said: code's text, or the graph check's words */
	uint64_t call_index;         /* its place among the range's driver calls */
	size_t kernels_before;       /* kernel launches of the range before it */
	/* A call a later occurrence may not make: an allocation or free (a caching
	 * allocator growing at the first iteration), the begin of a stream capture. */
	bool transient;
};

/* The calls of one range, in the order the application made them. */
struct range_ops {
	CUcontext ctx;               /* the context current at the range's begin */
	struct range_op *ops;
	size_t count, capacity;
	size_t kernels;              /* RANGE_OP_KERNEL among ops */
	size_t graph_launches;
	uint64_t calls;              /* driver calls seen, classified */
	bool refused;
	struct range_refusal refusal;
};

enum range_call {
	RANGE_CALL_IGNORED,   /* changes nothing a replay must repeat (queries, loads, ...) */
	RANGE_CALL_RECORDED,
	RANGE_CALL_REFUSED,   /* ops->refusal says which and why (the first one only) */
};

void range_ops_init(struct range_ops *ops, CUcontext ctx);
/* Frees every copy; ops may be initialised again. */
void range_ops_finish(struct range_ops *ops);
/* One driver call made while the range records, at its ENTER (callbackSite API_ENTER),
 * from any thread that belongs to the range. A call into another context than ops->ctx,
 * a device-to-host copy, an allocation or free, an inter-process handle or event, a host
 * function, a stream memory operation (wait/write value) or a call outside the supported
 * set is refused. Out of host memory for a copy: refused too ("rangeprof ran out of
 * memory recording it"). Once refused, later calls are not recorded. */
enum range_call range_ops_on_call(struct range_ops *ops, CUpti_CallbackId cbid,
				  const CUpti_CallbackData *cb);

/* Refuses the range at this call for a reason found outside range_calls.c (a graph that
 * cannot be relaunched with it: RANGE_WHY_GRAPH): text, said instead of why's own words
 * when not NULL, must live as long as ops. */
void range_ops_refuse(struct range_ops *ops, CUpti_CallbackId cbid,
		      const CUpti_CallbackData *cb, enum range_why why, const char *text);

/* What a replay of the recorded calls uses besides them: a shadow event for each event
 * of the application that the range records or waits on (the application's own events
 * are never recorded by a replay, so its own timings stay its own). */
struct range_replay {
	CUevent *app, *shadow;
	size_t count;
	/* Per op, the host bytes of a copy to the device in pinned memory, so that the
	 * replay's copy is as asynchronous as an application's from pinned memory; NULL where
	 * none, or where pinned memory was refused (then the pageable copy is used). */
	void **pinned;
	size_t pinned_count;
};
/* Creates the shadow events and the pinned copies. 0, or a code of common/error.h with
 * err. */
int range_replay_prepare(const struct range_ops *ops, struct range_replay *rp, char *err,
			 size_t err_size);
/* Which of a range's recorded calls a replay issues: all of them (--range-scope whole),
 * or under --range-scope kernels its memsets and copies before the run's flush and the
 * rest (kernels, graph launches, event operations, syncs) in the measured window. */
enum range_part { RANGE_PART_ALL, RANGE_PART_MEMORY, RANGE_PART_REST };
/* Queues every recorded call of part once, on its own stream, in the recorded order (a
 * SYNC op waits as the application did). Does not wait at the end. 0, or RP_ERR_RELAUNCH
 * with the failed call and the driver's error name in err. */
int range_replay_issue(const struct range_ops *ops, struct range_replay *rp,
		       enum range_part part, char *err, size_t err_size);
void range_replay_finish(struct range_replay *rp);
/* The distinct streams of the recorded calls in the order of first use (at most max;
 * returns how many there are in all). */
size_t range_ops_streams(const struct range_ops *ops, CUstream *streams, size_t max);

/* ---- range_workload.c ------------------------------------------------------------------- */

/* --replay-mode range is in force (init.c at start-up, and when the control API sets it;
 * replay lock held). Set off, a range being recorded is abandoned. */
void inject_range_set_mode(bool on);

/* ---- the checks launch.c makes at every launch -------------------------------------
 * Inline, reading range_workload.c's atomics directly (as select.h's): an out-of-line call
 * for each on every launch would slow the launches rangeprof does not measure. Relaxed:
 * each is a hint that range_workload.c confirms under the replay lock. */
#define INJECT_RANGE_STATE extern __attribute__((visibility("hidden")))
INJECT_RANGE_STATE atomic_bool inject_range_mode_flag;      /* --replay-mode range */
INJECT_RANGE_STATE atomic_bool inject_range_recording_flag; /* a range is recorded now */
INJECT_RANGE_STATE atomic_bool inject_range_fallback_flag;  /* a refused range is open */

static inline bool inject_range_mode(void)
{
	return atomic_load_explicit(&inject_range_mode_flag, memory_order_relaxed);
}
/* Whether a range workload is recording now. */
static inline bool inject_range_recording(void)
{
	return atomic_load_explicit(&inject_range_recording_flag, memory_order_relaxed);
}
/* Whether a range that is measured kernel by kernel is open (its recording was refused,
 * now or at an earlier occurrence): launch.c then measures its kernel launches as in
 * kernel replay. */
static inline bool inject_range_kernel_fallback(void)
{
	return atomic_load_explicit(&inject_range_fallback_flag, memory_order_relaxed);
}

/* How a graph launched inside a range is judged (launch.c hands graph_measure.c's
 * inject_graph_measure_replayable_whole): false with why when it cannot be relaunched with the
 * range. NULL: every graph launch is recorded. */
typedef bool (*inject_range_graph_check)(CUgraphExec exec, CUcontext ctx, char *why,
					 size_t why_size);
void inject_range_set_graph_check(inject_range_graph_check check);

/* launch.c's NVTX hooks, with the replay lock held and rangeprof's own driver calls
 * marked as such. opened: a range took effect on the calling thread; selected says
 * whether the filters make it a workload (-s/-c already counted); first_launch is the
 * process-wide index the range's first kernel or graph launch will get (the records'
 * "launch"; launch.c counts the launches a recording takes, so later ones follow on).
 * closing: a range is about to end; the one being recorded is measured here. */
void inject_range_opened(const struct nvtx_bridge_range_key *key, bool selected,
			 uint64_t first_launch);
void inject_range_closing(const struct nvtx_bridge_range_key *key, bool capture_under_way);
/* The context is being destroyed (replay lock held): a range recorded in it is abandoned
 * before its state goes. */
void inject_range_context_destroyed(CUcontext ctx);
/* A driver call at its ENTER while a range records (launch.c, before anything else on
 * that call; takes the replay lock itself). true when the call belongs to the range and
 * was recorded, ignored or refused: a kernel or graph launch is then not measured on its
 * own. */
bool inject_range_on_call(CUpti_CallbackId cbid, const CUpti_CallbackData *cb);

#endif
