/* inject/range/range_calls.h - what range_calls.c (which driver call is what, its arguments, the
 * refusal) takes from range_ops.c (the store of recorded calls, and their deep copies).
 * inject/'s range files only. */
#ifndef INJECT_RANGE_CALLS_H
#define INJECT_RANGE_CALLS_H

#include <cuda.h>
#include <cupti.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "inject/range/range.h"

/* Why a call cannot be recorded: a code of range_why.h (RANGE_WHY_NONE: recorded). */
#include "inject/range/range_why.h"

/* ---- range_args.c ------------------------------------------------------------------- */

/* A call range_calls.c let through, recorded into ops from its arguments:
 * RANGE_WHY_NONE, or why not (RANGE_WHY_OUTSIDE for a call it does not read). */
enum range_why range_record_call(struct range_ops *ops, CUpti_CallbackId cbid,
			      const CUpti_CallbackData *cb, uint64_t call);

/* ---- range_ops.c: one op of each kind added to ops (RANGE_WHY_NONE, or why not) ------- */

/* A _ptsz or _ptds call's NULL stream: the thread's per-thread stream. */
CUstream range_per_thread(CUstream stream);
enum range_why range_record_kernel(struct range_ops *ops, CUpti_CallbackId cbid,
				 const CUpti_CallbackData *cb, uint64_t call);
enum range_why range_record_memset(struct range_ops *ops, uint64_t call, CUstream stream,
				 CUdeviceptr dst, size_t pitch, unsigned value,
				 unsigned element_size, size_t width, size_t height);
enum range_why range_record_copy(struct range_ops *ops, uint64_t call, CUstream stream,
			       CUdeviceptr dst, CUdeviceptr src, const void *host, size_t bytes,
			       bool synchronous);
enum range_why range_record_unified_copy(struct range_ops *ops, uint64_t call, CUstream stream,
				       CUdeviceptr dst, CUdeviceptr src, size_t bytes,
				       bool synchronous);
enum range_why range_record_event(struct range_ops *ops, uint64_t call, enum range_op_kind kind,
				CUstream stream, CUevent event, unsigned flags);
enum range_why range_record_sync(struct range_ops *ops, uint64_t call, CUstream stream,
			       CUevent event, int sync);
enum range_why range_record_graph(struct range_ops *ops, uint64_t call, CUstream stream,
				CUgraphExec exec);

#endif
