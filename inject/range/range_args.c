/* inject/range/range_args.c - a recorded driver call's arguments read into its op: one switch
 * over the callback ids range_calls.c lets through, each call's parameter struct handed to
 * range_ops.c's recorder of its kind. The plain synchronous forms run on the legacy stream
 * (NULL), their _ptds forms on the thread's per-thread stream.
 * Calls: range_ops.c (the recorder of each kind).
 * Called by: range_calls.c (a recorded call, on the application's thread).
 * Lock: the replay lock; not asserted by: range_record_call (reached only through
 * range_ops_on_call, which asserts it). */
#include <cupti.h>
#include <stddef.h>

#include "inject/range/range.h"
#include "inject/range/range_calls.h"

/* A memset call's params as its op: dst, pitch (0: 1D), value, element size, width and
 * height in elements, on stream (an expression over the params m). */
#define MEMSET_1D(type, value, size, stream_expr)                                           \
	do {                                                                                \
		const type *m = params;                                                     \
		return range_record_memset(ops, call, (stream_expr), m->dstDevice, 0, m->value,    \
				     size, m->N, 1);                                        \
	} while (0)
#define MEMSET_2D(type, value, size, stream_expr)                                           \
	do {                                                                                \
		const type *m = params;                                                     \
		return range_record_memset(ops, call, (stream_expr), m->dstDevice, m->dstPitch,    \
				     m->value, size, m->Width, m->Height);                  \
	} while (0)
/* A copy call's params: device or host source, on stream; synchronous as range_record_copy
 * says. */
#define COPY_DTOD(type, stream_expr)                                                        \
	do {                                                                                \
		const type *c = params;                                                     \
		return range_record_copy(ops, call, (stream_expr), c->dstDevice, c->srcDevice,     \
				   NULL, c->ByteCount, false);                              \
	} while (0)
#define COPY_HTOD(type, stream_expr, synchronous)                                           \
	do {                                                                                \
		const type *c = params;                                                     \
		return range_record_copy(ops, call, (stream_expr), c->dstDevice, 0, c->srcHost,    \
				   c->ByteCount, synchronous);                              \
	} while (0)
#define COPY_UNIFIED(type, stream_expr, synchronous)                                        \
	do {                                                                                \
		const type *c = params;                                                     \
		return range_record_unified_copy(ops, call, (stream_expr), c->dst, c->src,         \
					   c->ByteCount, synchronous);                      \
	} while (0)

/* The calls a replay repeats, recorded (RANGE_WHY_NONE), or why not. The plain
 * synchronous forms run on the legacy stream (NULL), their _ptds forms on the thread's
 * per-thread stream. The first driver forms, of 32-bit device pointers, are outside: no
 * 64-bit program calls them. */
enum range_why range_record_call(struct range_ops *ops, CUpti_CallbackId cbid,
			  const CUpti_CallbackData *cb, uint64_t call)
{
	const void *params = cb->functionParams;
	switch (cbid) {
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
		return range_record_kernel(ops, cbid, cb, call);

	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2:
		MEMSET_1D(cuMemsetD8_v2_params, uc, 1, NULL);
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2:
		MEMSET_1D(cuMemsetD16_v2_params, us, 2, NULL);
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2:
		MEMSET_1D(cuMemsetD32_v2_params, ui, 4, NULL);
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2_ptds:
		MEMSET_1D(cuMemsetD8_v2_ptds_params, uc, 1, CU_STREAM_PER_THREAD);
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2_ptds:
		MEMSET_1D(cuMemsetD16_v2_ptds_params, us, 2, CU_STREAM_PER_THREAD);
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2_ptds:
		MEMSET_1D(cuMemsetD32_v2_ptds_params, ui, 4, CU_STREAM_PER_THREAD);
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async:
		MEMSET_1D(cuMemsetD8Async_params, uc, 1, m->hStream);
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async:
		MEMSET_1D(cuMemsetD16Async_params, us, 2, m->hStream);
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async:
		MEMSET_1D(cuMemsetD32Async_params, ui, 4, m->hStream);
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async_ptsz:
		MEMSET_1D(cuMemsetD8Async_ptsz_params, uc, 1, range_per_thread(m->hStream));
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async_ptsz:
		MEMSET_1D(cuMemsetD16Async_ptsz_params, us, 2, range_per_thread(m->hStream));
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async_ptsz:
		MEMSET_1D(cuMemsetD32Async_ptsz_params, ui, 4, range_per_thread(m->hStream));
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D8_v2:
		MEMSET_2D(cuMemsetD2D8_v2_params, uc, 1, NULL);
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D16_v2:
		MEMSET_2D(cuMemsetD2D16_v2_params, us, 2, NULL);
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D32_v2:
		MEMSET_2D(cuMemsetD2D32_v2_params, ui, 4, NULL);
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D8_v2_ptds:
		MEMSET_2D(cuMemsetD2D8_v2_ptds_params, uc, 1, CU_STREAM_PER_THREAD);
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D16_v2_ptds:
		MEMSET_2D(cuMemsetD2D16_v2_ptds_params, us, 2, CU_STREAM_PER_THREAD);
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D32_v2_ptds:
		MEMSET_2D(cuMemsetD2D32_v2_ptds_params, ui, 4, CU_STREAM_PER_THREAD);
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D8Async:
		MEMSET_2D(cuMemsetD2D8Async_params, uc, 1, m->hStream);
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D16Async:
		MEMSET_2D(cuMemsetD2D16Async_params, us, 2, m->hStream);
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D32Async:
		MEMSET_2D(cuMemsetD2D32Async_params, ui, 4, m->hStream);
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D8Async_ptsz:
		MEMSET_2D(cuMemsetD2D8Async_ptsz_params, uc, 1, range_per_thread(m->hStream));
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D16Async_ptsz:
		MEMSET_2D(cuMemsetD2D16Async_ptsz_params, us, 2, range_per_thread(m->hStream));
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D32Async_ptsz:
		MEMSET_2D(cuMemsetD2D32Async_ptsz_params, ui, 4, range_per_thread(m->hStream));

	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2:
		COPY_DTOD(cuMemcpyDtoD_v2_params, NULL);
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2_ptds:
		COPY_DTOD(cuMemcpyDtoD_v2_ptds_params, CU_STREAM_PER_THREAD);
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2:
		COPY_DTOD(cuMemcpyDtoDAsync_v2_params, c->hStream);
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2_ptsz:
		COPY_DTOD(cuMemcpyDtoDAsync_v2_ptsz_params, range_per_thread(c->hStream));
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2:
		COPY_HTOD(cuMemcpyHtoD_v2_params, NULL, true);
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2_ptds:
		COPY_HTOD(cuMemcpyHtoD_v2_ptds_params, CU_STREAM_PER_THREAD, true);
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2:
		COPY_HTOD(cuMemcpyHtoDAsync_v2_params, c->hStream, false);
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz:
		COPY_HTOD(cuMemcpyHtoDAsync_v2_ptsz_params, range_per_thread(c->hStream), false);
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpy:
		COPY_UNIFIED(cuMemcpy_params, NULL, true);
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpy_ptds:
		COPY_UNIFIED(cuMemcpy_ptds_params, CU_STREAM_PER_THREAD, true);
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync:
		COPY_UNIFIED(cuMemcpyAsync_params, c->hStream, false);
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz:
		COPY_UNIFIED(cuMemcpyAsync_ptsz_params, range_per_thread(c->hStream), false);

	/* Record flags (CU_EVENT_RECORD_EXTERNAL) and wait flags (CU_EVENT_WAIT_EXTERNAL)
	 * matter only under a stream capture; they are kept, not replayed. */
	case CUPTI_DRIVER_TRACE_CBID_cuEventRecord: {
		const cuEventRecord_params *e = params;
		return range_record_event(ops, call, RANGE_OP_EVENT_RECORD, e->hStream, e->hEvent, 0);
	}
	case CUPTI_DRIVER_TRACE_CBID_cuEventRecord_ptsz: {
		const cuEventRecord_ptsz_params *e = params;
		return range_record_event(ops, call, RANGE_OP_EVENT_RECORD, range_per_thread(e->hStream),
				    e->hEvent, 0);
	}
	case CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags: {
		const cuEventRecordWithFlags_params *e = params;
		return range_record_event(ops, call, RANGE_OP_EVENT_RECORD, e->hStream, e->hEvent,
				    e->flags);
	}
	case CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags_ptsz: {
		const cuEventRecordWithFlags_ptsz_params *e = params;
		return range_record_event(ops, call, RANGE_OP_EVENT_RECORD, range_per_thread(e->hStream),
				    e->hEvent, e->flags);
	}
	case CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent: {
		const cuStreamWaitEvent_params *w = params;
		return range_record_event(ops, call, RANGE_OP_STREAM_WAIT, w->hStream, w->hEvent,
				    w->Flags);
	}
	case CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent_ptsz: {
		const cuStreamWaitEvent_ptsz_params *w = params;
		return range_record_event(ops, call, RANGE_OP_STREAM_WAIT, range_per_thread(w->hStream),
				    w->hEvent, w->Flags);
	}

	case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch: {
		const cuGraphLaunch_params *g = params;
		return range_record_graph(ops, call, g->hStream, g->hGraph);
	}
	case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz: {
		const cuGraphLaunch_ptsz_params *g = params;
		return range_record_graph(ops, call, range_per_thread(g->hStream), g->hGraphExec);
	}

	case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize: {
		const cuStreamSynchronize_params *y = params;
		return range_record_sync(ops, call, y->hStream, NULL, RANGE_SYNC_STREAM);
	}
	case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz: {
		const cuStreamSynchronize_ptsz_params *y = params;
		return range_record_sync(ops, call, range_per_thread(y->hStream), NULL, RANGE_SYNC_STREAM);
	}
	case CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize:
		return range_record_sync(ops, call, NULL,
				   ((const cuEventSynchronize_params *)params)->hEvent,
				   RANGE_SYNC_EVENT);
	case CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize:
		return range_record_sync(ops, call, NULL, NULL, RANGE_SYNC_CONTEXT);
	case CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2: {
		/* Its context is an argument (NULL: the current one). */
		CUcontext ctx = ((const cuCtxSynchronize_v2_params *)params)->ctx;
		if (ctx && ctx != ops->ctx)
			return RANGE_WHY_CONTEXT;
		return range_record_sync(ops, call, NULL, NULL, RANGE_SYNC_CONTEXT);
	}

	default:
		return RANGE_WHY_OUTSIDE;
	}
}
