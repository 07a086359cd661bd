/* inject/range/range_ops.c - the store of a range's recorded calls (range.h): owns struct
 * range_ops, each recorded call and its deep copies (parameter bytes, launch attributes,
 * host bytes of copies to the device), so that the application may reuse its buffers at
 * once. range_calls.c classifies each call, and range_args.c hands the recorded ones
 * here; range_replay.c issues them again.
 * Calls: kernel_launch.c (decode), names.c, memory/ (layout.c: a kernel's parameters),
 * collector/ (the driver).
 * Called by: range_args.c (the recorders), range_workload.c (the store's life).
 * Lock: the replay lock (the store is range_workload.c's, and held under it there); not
 * asserted by: range_ops_init, range_ops_finish (range_workload.c's, which hold it),
 * range_per_thread, range_record_copy, range_record_event, range_record_graph,
 * range_record_kernel, range_record_memset, range_record_sync, range_record_unified_copy
 * (reached only through range_ops_on_call, which asserts it). */
#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/api.h"
#include "common/error.h"
#include "inject/inject.h"
#include "inject/range/range.h"
#include "inject/range/range_calls.h"
#include "memory/memory.h"

/* An extra array of more entries than this is not a launch's: there are three keys. */
#define MAX_EXTRA 64

void range_ops_init(struct range_ops *ops, CUcontext ctx)
{
	memset(ops, 0, sizeof(*ops));
	ops->ctx = ctx;
}

static void free_op(struct range_op *op)
{
	if (op->kind == RANGE_OP_KERNEL) {
		free(op->kernel.args);
		free(op->kernel.params);
		free(op->kernel.attrs);
	} else if (op->kind == RANGE_OP_COPY) {
		free(op->copy.host);
	}
}

void range_ops_finish(struct range_ops *ops)
{
	for (size_t i = 0; i < ops->count; i++)
		free_op(&ops->ops[i]);
	free(ops->ops);
	memset(ops, 0, sizeof(*ops));
}

/* A kernel op's launch points into the op itself (its extra array, the size its extra
 * names, its config): set again wherever the op now lies, since the array of ops moves
 * when it grows. */
static void repoint(struct range_op *op)
{
	if (op->kind != RANGE_OP_KERNEL)
		return;
	op->kernel.launch.kernel_params = op->kernel.params;
	if (op->kernel.launch.extra) {
		op->kernel.extra[3] = &op->kernel.args_size;
		op->kernel.launch.extra = op->kernel.extra;
	}
	if (op->kernel.launch.kind == INJECT_LAUNCH_EX) {
		op->kernel.config.attrs = op->kernel.attrs;
		op->kernel.launch.config = &op->kernel.config;
	}
}

/* Room for more ops, so that what follows cannot fail half way: false when out of
 * memory. */
static bool reserve(struct range_ops *ops, size_t more)
{
	if (ops->count + more <= ops->capacity)
		return true;
	size_t capacity = ops->capacity ? ops->capacity : 64;
	while (capacity < ops->count + more)
		capacity *= 2;
	struct range_op *grown = realloc(ops->ops, capacity * sizeof(*grown));
	if (!grown)
		return false;
	ops->ops = grown;
	ops->capacity = capacity;
	for (size_t i = 0; i < ops->count; i++)
		repoint(&ops->ops[i]);
	return true;
}

/* A new op at the end (room reserved), its kind, stream and call set, the rest zero. */
static struct range_op *push(struct range_ops *ops, enum range_op_kind kind, CUstream stream,
			     uint64_t call)
{
	struct range_op *op = &ops->ops[ops->count++];
	*op = (struct range_op){ .kind = kind, .stream = stream, .call = call };
	return op;
}

/* An op of no copies: NULL when out of memory. */
static struct range_op *add(struct range_ops *ops, enum range_op_kind kind, CUstream stream,
			    uint64_t call)
{
	return reserve(ops, 1) ? push(ops, kind, stream, call) : NULL;
}

/* A _ptsz or _ptds call's NULL stream is the calling thread's per-thread stream, where the
 * plain calls that issue it again would take NULL for the legacy stream. */
CUstream range_per_thread(CUstream stream)
{
	return stream ? stream : CU_STREAM_PER_THREAD;
}

/* ---- kernel launches ----------------------------------------------------------------- */

/* The parameter bytes of a kernelParams launch copied into k->args, and k->params rebuilt
 * over them: RANGE_WHY_NONE, or why not. The layout is memory/layout.c's, asked of the
 * driver once per kernel: asking it at each launch cost microseconds inside the range. */
static enum range_why copy_kernel_params(struct range_op *op, const struct inject_launch *l)
{
	const struct mem_param_layout *layout;
	CUresult error;
	int rc = mem_param_layout_of(l->function, &layout, &error);
	if (rc)
		return rc == RP_ERR_NO_MEMORY ? RANGE_WHY_MEMORY : RANGE_WHY_PARAMETERS;
	size_t count = layout->count, total = layout->total;
	if (!l->kernel_params && count)
		return RANGE_WHY_PARAMETERS;
	if (!l->kernel_params)
		return RANGE_WHY_NONE;
	/* Never a NULL array where the application passed one, even with no parameters. */
	op->kernel.args = calloc(1, total ? total : 1);
	op->kernel.params = calloc(count ? count : 1, sizeof(void *));
	if (!op->kernel.args || !op->kernel.params)
		return RANGE_WHY_MEMORY;
	op->kernel.args_size = total;
	for (size_t i = 0; i < count; i++) {
		unsigned char *at = (unsigned char *)op->kernel.args + layout->offsets[i];
		if (l->kernel_params[i])
			memcpy(at, l->kernel_params[i], layout->sizes[i]);
		op->kernel.params[i] = at;
	}
	return RANGE_WHY_NONE;
}

/* The packed buffer of an extra launch copied into k->args, and extra rebuilt over it:
 * RANGE_WHY_NONE, or why not. The buffer says its own size, so no layout is needed. */
static enum range_why copy_kernel_extra(struct range_op *op, void **extra)
{
	void *packed = NULL;
	const size_t *packed_size = NULL;
	size_t i = 0;
	for (; i < MAX_EXTRA && extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
		if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
			packed = extra[i + 1];
		else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
			packed_size = extra[i + 1];
		else
			return RANGE_WHY_PARAMETERS;
	}
	if (i >= MAX_EXTRA || !packed || !packed_size)
		return RANGE_WHY_PARAMETERS;
	op->kernel.args_size = *packed_size;
	op->kernel.args = malloc(*packed_size ? *packed_size : 1);
	if (!op->kernel.args)
		return RANGE_WHY_MEMORY;
	memcpy(op->kernel.args, packed, *packed_size);
	op->kernel.extra[0] = CU_LAUNCH_PARAM_BUFFER_POINTER;
	op->kernel.extra[1] = op->kernel.args;
	op->kernel.extra[2] = CU_LAUNCH_PARAM_BUFFER_SIZE;
	op->kernel.extra[3] = &op->kernel.args_size;
	op->kernel.extra[4] = CU_LAUNCH_PARAM_END;
	return RANGE_WHY_NONE;
}

/* The event a launch attribute records, or NULL. */
static CUevent attribute_event(const CUlaunchAttribute *a)
{
	if (a->id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT)
		return a->value.programmaticEvent.event;
	if (a->id == CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT)
		return a->value.launchCompletionEvent.event;
	return NULL;
}

/* cuLaunchKernelEx's config and its attributes copied: RANGE_WHY_NONE, or why not. Its
 * stream is the decoded one, so that a _ptsz call's NULL stays the per-thread stream when
 * relaunched. */
static enum range_why copy_kernel_config(struct range_op *op, const struct inject_launch *l,
				      size_t *events)
{
	const CUlaunchConfig *c = l->config;
	op->kernel.config = *c;
	op->kernel.config.hStream = l->stream;
	op->kernel.config.attrs = NULL;
	*events = 0;
	if (!c->attrs || !c->numAttrs) {
		op->kernel.config.numAttrs = 0;
		return RANGE_WHY_NONE;
	}
	op->kernel.attrs = malloc(c->numAttrs * sizeof(*c->attrs));
	if (!op->kernel.attrs)
		return RANGE_WHY_MEMORY;
	memcpy(op->kernel.attrs, c->attrs, c->numAttrs * sizeof(*c->attrs));
	for (unsigned i = 0; i < c->numAttrs; i++)
		if (attribute_event(&c->attrs[i]))
			(*events)++;
	return RANGE_WHY_NONE;
}

enum range_why range_record_kernel(struct range_ops *ops, CUpti_CallbackId cbid,
				 const CUpti_CallbackData *cb, uint64_t call)
{
	struct range_op op = { .kind = RANGE_OP_KERNEL, .call = call };
	struct inject_launch *l = &op.kernel.launch;
	*l = (struct inject_launch){ .ctx = cb->context, .context_id = cb->contextUid,
				     .mangled = cb->symbolName ? cb->symbolName : "" };
	if (!inject_kernel_launch_decode((int)cbid, cb->functionParams, l))
		return RANGE_WHY_OUTSIDE;
	op.stream = l->stream;
	const struct inject_name *name = inject_name_of(l->mangled);
	op.kernel.name = name ? name->demangled : NULL;
	/* The driver's name lives only as long as its call. */
	l->mangled = name ? name->mangled : NULL;
	if (name && name->waits_for_peers)
		return RANGE_WHY_COLLECTIVE;
	size_t events = 0;
	enum range_why why = RANGE_WHY_MEMORY;
	if (name && (l->kernel_params || !l->extra)) {
		/* The driver refuses a launch that passes both; the copy keeps kernelParams. */
		l->extra = NULL;
		why = copy_kernel_params(&op, l);
	} else if (name) {
		why = copy_kernel_extra(&op, l->extra);
		l->extra = op.kernel.extra;
	}
	if (!why && l->kind == INJECT_LAUNCH_EX)
		why = copy_kernel_config(&op, l, &events);
	if (!why && !reserve(ops, 1 + events))
		why = RANGE_WHY_MEMORY;
	if (why) {
		free_op(&op);
		return why;
	}
	struct range_op *kept = push(ops, RANGE_OP_KERNEL, op.stream, call);
	*kept = op;
	repoint(kept);
	ops->kernels++;
	/* inject_kernel_launch_again leaves event attributes out (a replay must not record the
	 * application's events): each is stood in for by a record of the event after the
	 * kernel, which a replay maps to its shadow like any other. After the whole kernel is
	 * later than the attribute fires (all blocks triggered, or launched), so a stream
	 * waiting on it is ordered the same way or later, never earlier. */
	for (unsigned i = 0; events && i < kept->kernel.config.numAttrs; i++) {
		CUevent event = attribute_event(&kept->kernel.attrs[i]);
		if (event)
			push(ops, RANGE_OP_EVENT_RECORD, op.stream, call)->event.event = event;
	}
	return RANGE_WHY_NONE;
}

/* ---- memsets and copies -------------------------------------------------------------- */

enum range_why range_record_memset(struct range_ops *ops, uint64_t call, CUstream stream,
				 CUdeviceptr dst, size_t pitch, unsigned value,
				 unsigned element_size, size_t width, size_t height)
{
	struct range_op *op = add(ops, RANGE_OP_MEMSET, stream, call);
	if (!op)
		return RANGE_WHY_MEMORY;
	op->memset.dst = dst;
	op->memset.pitch = pitch;
	op->memset.value = value;
	op->memset.element_size = element_size;
	op->memset.width = width;
	op->memset.height = height;
	return RANGE_WHY_NONE;
}

/* A copy to the device, from device memory (src) or from host memory (host, whose bytes
 * are copied now: the application may change them once the call returns). synchronous:
 * the host waited for the copy before going on (the plain cuMemcpy forms from host
 * memory), so a stream wait follows it, and what the application issued next on other
 * streams stays ordered after it. */
enum range_why range_record_copy(struct range_ops *ops, uint64_t call, CUstream stream,
			       CUdeviceptr dst, CUdeviceptr src, const void *host, size_t bytes,
			       bool synchronous)
{
	void *copy = NULL;
	if (host) {
		copy = malloc(bytes ? bytes : 1);
		if (!copy)
			return RANGE_WHY_MEMORY;
		memcpy(copy, host, bytes);
	}
	if (!reserve(ops, synchronous && host ? 2 : 1)) {
		free(copy);
		return RANGE_WHY_MEMORY;
	}
	struct range_op *op = push(ops, RANGE_OP_COPY, stream, call);
	op->copy.dst = dst;
	op->copy.src = host ? 0 : src;
	op->copy.host = copy;
	op->copy.bytes = bytes;
	if (synchronous && host)
		push(ops, RANGE_OP_SYNC, stream, call)->event.sync = RANGE_SYNC_STREAM;
	return RANGE_WHY_NONE;
}

/* Whether p is device memory (device or managed) for the driver: 1, 0 for host memory
 * (pinned, registered, or pageable and unknown to the driver), -1 when the driver cannot
 * say, since a device pointer taken for a host one would be read on the host. */
static int on_device(CUdeviceptr p)
{
	CUpointer_attribute attrs[] = { CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
					CU_POINTER_ATTRIBUTE_IS_MANAGED };
	unsigned type = 0;
	int managed = 0;
	void *data[] = { &type, &managed };
	/* Unlike cuPointerGetAttribute, this call succeeds for pageable host memory and
	 * leaves the type 0. */
	if (rp_api.cuPointerGetAttributes(2, attrs, data, p) != CUDA_SUCCESS)
		return -1;
	if (managed || type == CU_MEMORYTYPE_DEVICE || type == CU_MEMORYTYPE_UNIFIED)
		return 1;
	return type == 0 || type == CU_MEMORYTYPE_HOST ? 0 : -1;
}

/* cuMemcpy and cuMemcpyAsync, which take any two pointers (unified addressing): what
 * each side is decides. */
enum range_why range_record_unified_copy(struct range_ops *ops, uint64_t call, CUstream stream,
				       CUdeviceptr dst, CUdeviceptr src, size_t bytes,
				       bool synchronous)
{
	int dst_device = on_device(dst), src_device = on_device(src);
	if (dst_device < 0 || src_device < 0)
		return RANGE_WHY_UNDESCRIBED;
	if (!dst_device)
		return src_device ? RANGE_WHY_TO_HOST : RANGE_WHY_OUTSIDE;
	return range_record_copy(ops, call, stream, dst, src,
			   src_device ? NULL : (const void *)(uintptr_t)src, bytes, synchronous);
}

/* ---- events, streams, graphs, waits -------------------------------------------------- */

enum range_why range_record_event(struct range_ops *ops, uint64_t call, enum range_op_kind kind,
				CUstream stream, CUevent event, unsigned flags)
{
	struct range_op *op = add(ops, kind, stream, call);
	if (!op)
		return RANGE_WHY_MEMORY;
	op->event.event = event;
	op->event.flags = flags;
	return RANGE_WHY_NONE;
}

enum range_why range_record_sync(struct range_ops *ops, uint64_t call, CUstream stream,
			       CUevent event, int sync)
{
	struct range_op *op = add(ops, RANGE_OP_SYNC, stream, call);
	if (!op)
		return RANGE_WHY_MEMORY;
	op->event.event = event;
	op->event.sync = sync;
	return RANGE_WHY_NONE;
}

enum range_why range_record_graph(struct range_ops *ops, uint64_t call, CUstream stream,
				CUgraphExec exec)
{
	struct range_op *op = add(ops, RANGE_OP_GRAPH_LAUNCH, stream, call);
	if (!op)
		return RANGE_WHY_MEMORY;
	op->graph.exec = exec;
	ops->graph_launches++;
	return RANGE_WHY_NONE;
}
