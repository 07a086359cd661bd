/* inject/range/range_replay.c - a range's recorded calls issued again, once per run
 * (range.h): owns struct range_replay, the shadow events that stand for the application's
 * (whose own timings stay its own) and the pinned copies of host bytes. Runs on the
 * measuring thread, with the range's context current.
 * Calls: kernel_launch.c (relaunch), collector/ (the driver).
 * Called by: range_workload.c.
 * Lock: the replay lock; not asserted by: range_ops_streams (reads the store it is
 * handed). */
#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/api.h"
#include "common/error.h"
#include "inject/inject.h"
#include "inject/range/range.h"

static int compare_events(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)*(const CUevent *)a, y = (uintptr_t)*(const CUevent *)b;
	return x < y ? -1 : x > y;
}

/* The shadow of the application's event, or NULL when the range never records it. */
static CUevent shadow_of(const struct range_replay *rp, CUevent event)
{
	if (!rp->count)
		return NULL;
	const CUevent *found = bsearch(&event, rp->app, rp->count, sizeof(*rp->app),
				       compare_events);
	return found ? rp->shadow[found - rp->app] : NULL;
}

/* Shadows are made only for the events the range records: an event it waits on or waits
 * for without recording it was recorded before the range began, and is complete when the
 * range ends and is replayed, so those waits are skipped (range_replay_issue). */
/* The host bytes of each copy to the device, pinned: copied from pageable memory the
 * driver stages them, synchronously, and the range's time would hold that staging. */
static void pin_host_copies(const struct range_ops *ops, struct range_replay *rp)
{
	size_t copies = 0;
	for (size_t i = 0; i < ops->count; i++)
		copies += ops->ops[i].kind == RANGE_OP_COPY && ops->ops[i].copy.host;
	if (!copies || !(rp->pinned = calloc(ops->count, sizeof(*rp->pinned))))
		return;
	rp->pinned_count = ops->count;
	for (size_t i = 0; i < ops->count; i++) {
		const struct range_op *op = &ops->ops[i];
		if (op->kind != RANGE_OP_COPY || !op->copy.host)
			continue;
		if (rp_api.cuMemHostAlloc(&rp->pinned[i], op->copy.bytes ? op->copy.bytes : 1, 0) !=
		    CUDA_SUCCESS) {
			rp->pinned[i] = NULL;
			continue;
		}
		memcpy(rp->pinned[i], op->copy.host, op->copy.bytes);
	}
}

int range_replay_prepare(const struct range_ops *ops, struct range_replay *rp, char *err,
			 size_t err_size)
{
	INJECT_REPLAY_HELD();
	memset(rp, 0, sizeof(*rp));
	pin_host_copies(ops, rp);
	size_t n = 0;
	for (size_t i = 0; i < ops->count; i++)
		n += ops->ops[i].kind == RANGE_OP_EVENT_RECORD;
	if (!n)
		return 0;
	rp->app = malloc(n * sizeof(*rp->app));
	rp->shadow = calloc(n, sizeof(*rp->shadow));
	if (!rp->app || !rp->shadow) {
		range_replay_finish(rp);
		snprintf(err, err_size, "out of host memory for the range's shadow events");
		return RP_ERR_NO_MEMORY;
	}
	n = 0;
	for (size_t i = 0; i < ops->count; i++)
		if (ops->ops[i].kind == RANGE_OP_EVENT_RECORD)
			rp->app[n++] = ops->ops[i].event.event;
	qsort(rp->app, n, sizeof(*rp->app), compare_events);
	for (size_t i = 0; i < n; i++)
		if (!rp->count || rp->app[rp->count - 1] != rp->app[i])
			rp->app[rp->count++] = rp->app[i];
	/* No timing: the shadows only order streams, and timing would cost each record. */
	for (size_t i = 0; i < rp->count; i++) {
		CUresult cr = rp_api.cuEventCreate(&rp->shadow[i], CU_EVENT_DISABLE_TIMING);
		if (cr != CUDA_SUCCESS) {
			rp->shadow[i] = NULL;
			range_replay_finish(rp);
			snprintf(err, err_size, "cuEventCreate for a shadow event: %s",
				 collector_cu_error(cr));
			return RP_ERR_FAILED;
		}
	}
	return 0;
}

void range_replay_finish(struct range_replay *rp)
{
	INJECT_REPLAY_HELD();
	for (size_t i = 0; rp->shadow && i < rp->count; i++)
		if (rp->shadow[i])
			rp_api.cuEventDestroy(rp->shadow[i]);
	free(rp->app);
	free(rp->shadow);
	for (size_t i = 0; rp->pinned && i < rp->pinned_count; i++)
		if (rp->pinned[i])
			rp_api.cuMemFreeHost(rp->pinned[i]);
	free(rp->pinned);
	memset(rp, 0, sizeof(*rp));
}

static const char *launch_call(enum inject_launch_kind kind)
{
	switch (kind) {
	case INJECT_LAUNCH_KERNEL: return "cuLaunchKernel";
	case INJECT_LAUNCH_COOPERATIVE: return "cuLaunchCooperativeKernel";
	case INJECT_LAUNCH_EX: return "cuLaunchKernelEx";
	}
	return "a kernel launch";
}

static CUresult issue_memset(const struct range_op *op, const char **call)
{
	const __typeof__(op->memset) *m = &op->memset;
	if (!m->pitch) {
		switch (m->element_size) {
		case 1:
			*call = "cuMemsetD8Async";
			return rp_api.cuMemsetD8Async(m->dst, (unsigned char)m->value, m->width,
						      op->stream);
		case 2:
			*call = "cuMemsetD16Async";
			return rp_api.cuMemsetD16Async(m->dst, (unsigned short)m->value, m->width,
						       op->stream);
		default:
			*call = "cuMemsetD32Async";
			return rp_api.cuMemsetD32Async(m->dst, m->value, m->width, op->stream);
		}
	}
	switch (m->element_size) {
	case 1:
		*call = "cuMemsetD2D8Async";
		return rp_api.cuMemsetD2D8Async(m->dst, m->pitch, (unsigned char)m->value,
						m->width, m->height, op->stream);
	case 2:
		*call = "cuMemsetD2D16Async";
		return rp_api.cuMemsetD2D16Async(m->dst, m->pitch, (unsigned short)m->value,
						 m->width, m->height, op->stream);
	default:
		*call = "cuMemsetD2D32Async";
		return rp_api.cuMemsetD2D32Async(m->dst, m->pitch, m->value, m->width, m->height,
						 op->stream);
	}
}

/* Issued with ops->ctx current, on the streams the application used. A wait on a shadow
 * recorded later in the range (the application waited on the record before the range)
 * waits on the previous run's record, or on none in the first run: the previous run's
 * calls all came before this run's anyway, so the order is the same. */
int range_replay_issue(const struct range_ops *ops, struct range_replay *rp,
		       enum range_part part, char *err, size_t err_size)
{
	INJECT_REPLAY_HELD();
	for (size_t i = 0; i < ops->count; i++) {
		const struct range_op *op = &ops->ops[i];
		bool memory = op->kind == RANGE_OP_MEMSET || op->kind == RANGE_OP_COPY;
		if ((part == RANGE_PART_MEMORY && !memory) || (part == RANGE_PART_REST && memory))
			continue;
		const char *call = NULL;
		CUresult cr = CUDA_SUCCESS;
		CUevent shadow = NULL;
		switch (op->kind) {
		case RANGE_OP_KERNEL: {
			char why[64];
			if (inject_kernel_launch_again(&op->kernel.launch, why, sizeof(why))) {
				snprintf(err, err_size, "%s of %s: %s",
					 launch_call(op->kernel.launch.kind), op->kernel.name, why);
				return RP_ERR_RELAUNCH;
			}
			break;
		}
		case RANGE_OP_MEMSET:
			cr = issue_memset(op, &call);
			break;
		case RANGE_OP_COPY:
			call = "cuMemcpyAsync";
			const void *host = rp->pinned && rp->pinned[i] ? rp->pinned[i] :
				op->copy.host;
			cr = rp_api.cuMemcpyAsync(op->copy.dst, host ? (CUdeviceptr)(uintptr_t)host :
						  op->copy.src, op->copy.bytes, op->stream);
			break;
		case RANGE_OP_EVENT_RECORD:
			call = "cuEventRecord";
			shadow = shadow_of(rp, op->event.event);
			/* Never the application's own event: its timings stay its own. Every
			 * recorded event has a shadow once prepared; none means rp was not. */
			cr = shadow ? rp_api.cuEventRecord(shadow, op->stream) :
				CUDA_ERROR_INVALID_HANDLE;
			break;
		case RANGE_OP_STREAM_WAIT:
			call = "cuStreamWaitEvent";
			shadow = shadow_of(rp, op->event.event);
			if (shadow)
				cr = rp_api.cuStreamWaitEvent(op->stream, shadow, 0);
			break;
		case RANGE_OP_GRAPH_LAUNCH:
			call = "cuGraphLaunch";
			cr = rp_api.cuGraphLaunch(op->graph.exec, op->stream);
			break;
		case RANGE_OP_SYNC:
			if (op->event.sync == RANGE_SYNC_STREAM) {
				call = "cuStreamSynchronize";
				cr = rp_api.cuStreamSynchronize(op->stream);
			} else if (op->event.sync == RANGE_SYNC_EVENT) {
				call = "cuEventSynchronize";
				shadow = shadow_of(rp, op->event.event);
				if (shadow)
					cr = rp_api.cuEventSynchronize(shadow);
			} else {
				call = "cuCtxSynchronize";
				cr = rp_api.cuCtxSynchronize();
			}
			break;
		}
		if (cr != CUDA_SUCCESS) {
			snprintf(err, err_size, "%s: %s", call, collector_cu_error(cr));
			return RP_ERR_RELAUNCH;
		}
	}
	return 0;
}

size_t range_ops_streams(const struct range_ops *ops, CUstream *streams, size_t max)
{
	size_t n = 0;
	for (size_t i = 0; i < ops->count; i++) {
		const struct range_op *op = &ops->ops[i];
		if (!range_op_runs_on_stream(op))
			continue;
		bool seen = false;
		for (size_t j = 0; j < n && j < max && !seen; j++)
			seen = streams[j] == op->stream;
		/* Past max, the streams not written are found again among the earlier ops. */
		for (size_t j = 0; n > max && j < i && !seen; j++)
			seen = range_op_runs_on_stream(&ops->ops[j]) && ops->ops[j].stream == op->stream;
		if (seen)
			continue;
		if (n < max)
			streams[n] = op->stream;
		n++;
	}
	return n;
}
