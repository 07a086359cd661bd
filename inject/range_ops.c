/* inject/range_ops.c - the driver calls of a range being recorded (range.h), and issuing
 * them again. Owns struct range_ops (the recorded calls and their deep copies: parameter
 * bytes, launch attributes, host bytes of copies to the device) and struct range_replay
 * (the shadow events). Each call is classified at its ENTER, in one switch over the
 * driver's callback ids, as recorded, ignored or refused; what is recorded keeps nothing
 * of the application's memory, so that the application may reuse its buffers at once.
 * Called by range_workload.c, under the replay lock, on the application's threads while
 * the range records and on the measuring thread for each run. Calls launches.c (decode,
 * relaunch), names.c and the driver and CUPTI through collector/api. */
#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/api.h"
#include "common/error.h"
#include "inject/collectives.h"
#include "inject/inject.h"
#include "inject/range.h"

/* Why a range cannot be replayed; the refusal names the call before these words. */
static const char WHY_ALLOCATES[] = "allocates or frees memory";
static const char WHY_OTHER_PROCESS[] = "synchronises with another process or the host "
	"through memory";
static const char WHY_HOST_FUNCTION[] = "runs a host function";
static const char WHY_TO_HOST[] = "reads device results on the host";
static const char WHY_CONTEXT[] = "works in another context than the range began in";
static const char WHY_DESTROYS[] = "destroys a stream or event the range used";
static const char WHY_OUTSIDE[] = "is outside the calls range replay supports";
static const char WHY_MEMORY[] = "rangeprof ran out of host memory recording it";
static const char WHY_PARAMETERS[] = "passes kernel parameters rangeprof could not copy";
static const char WHY_UNDESCRIBED[] = "copies memory the driver could not describe";
static const char WHY_COLLECTIVE[] = "launches a kernel that waits for other GPUs or "
	"processes (a collective), which would wait for ever replayed alone";

/* Id 271 is cuMemHostAlloc_v2 in the CUDA 13 toolkit's CUPTI headers and an unnamed
 * "cuda271" in the newer CUPTI of the pip wheels the package is also built against; the
 * ids never move, so the number names it in both. */
#define CBID_cuMemHostAlloc_v2 ((CUpti_CallbackId)271)

/* The driver accepts at most 32764 bytes of kernel parameters, hence at most this many. */
#define MAX_PARAMETERS 32764
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
static CUstream per_thread(CUstream stream)
{
	return stream ? stream : CU_STREAM_PER_THREAD;
}

/* ---- kernel launches ----------------------------------------------------------------- */

/* Offset and size of parameter i of f: 0, 1 past the last parameter, -1 when the driver
 * gives no layout. The runtime launches CUkernel handles (CUDA 12 library loading)
 * through cuLaunchKernel, and cuFuncGetParamInfo calls those invalid: *kernel_handle
 * then switches to cuKernelGetParamInfo (as memory/reach.c does). */
static int parameter(CUfunction f, size_t i, size_t *offset, size_t *size, bool *kernel_handle)
{
	CUresult cr = *kernel_handle ? rp_api.cuKernelGetParamInfo((CUkernel)f, i, offset, size) :
		rp_api.cuFuncGetParamInfo(f, i, offset, size);
	if (cr == CUDA_ERROR_INVALID_HANDLE && i == 0 && !*kernel_handle) {
		*kernel_handle = true;
		return parameter(f, i, offset, size, kernel_handle);
	}
	if (cr == CUDA_ERROR_INVALID_VALUE)
		return 1;
	return cr == CUDA_SUCCESS ? 0 : -1;
}

/* The parameter bytes of a kernelParams launch copied into k->args, and k->params rebuilt
 * over them: NULL, or why not. The layout is asked twice (count and size, then each
 * parameter's place) rather than kept, so that nothing but the copy is allocated. */
static const char *copy_kernel_params(struct range_op *op, const struct inject_launch *l)
{
	size_t count = 0, total = 0, offset, size;
	bool kernel_handle = false;
	for (;; count++) {
		int rc = parameter(l->function, count, &offset, &size, &kernel_handle);
		if (rc > 0)
			break;
		if (rc < 0 || count == MAX_PARAMETERS)
			return WHY_PARAMETERS;
		if (offset + size > total)
			total = offset + size;
	}
	if (!l->kernel_params && count)
		return WHY_PARAMETERS;
	if (!l->kernel_params)
		return NULL;
	/* Never a NULL array where the application passed one, even with no parameters. */
	op->kernel.args = calloc(1, total ? total : 1);
	op->kernel.params = calloc(count ? count : 1, sizeof(void *));
	if (!op->kernel.args || !op->kernel.params)
		return WHY_MEMORY;
	op->kernel.args_size = total;
	for (size_t i = 0; i < count; i++) {
		if (parameter(l->function, i, &offset, &size, &kernel_handle))
			return WHY_PARAMETERS;
		unsigned char *at = (unsigned char *)op->kernel.args + offset;
		if (l->kernel_params[i])
			memcpy(at, l->kernel_params[i], size);
		op->kernel.params[i] = at;
	}
	return NULL;
}

/* The packed buffer of an extra launch copied into k->args, and extra rebuilt over it:
 * NULL, or why not. The buffer says its own size, so no layout is needed. */
static const char *copy_kernel_extra(struct range_op *op, void **extra)
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
			return WHY_PARAMETERS;
	}
	if (i >= MAX_EXTRA || !packed || !packed_size)
		return WHY_PARAMETERS;
	op->kernel.args_size = *packed_size;
	op->kernel.args = malloc(*packed_size ? *packed_size : 1);
	if (!op->kernel.args)
		return WHY_MEMORY;
	memcpy(op->kernel.args, packed, *packed_size);
	op->kernel.extra[0] = CU_LAUNCH_PARAM_BUFFER_POINTER;
	op->kernel.extra[1] = op->kernel.args;
	op->kernel.extra[2] = CU_LAUNCH_PARAM_BUFFER_SIZE;
	op->kernel.extra[3] = &op->kernel.args_size;
	op->kernel.extra[4] = CU_LAUNCH_PARAM_END;
	return NULL;
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

/* cuLaunchKernelEx's config and its attributes copied: NULL, or why not. Its stream is the
 * decoded one, so that a _ptsz call's NULL stays the per-thread stream when relaunched. */
static const char *copy_kernel_config(struct range_op *op, const struct inject_launch *l,
				      size_t *events)
{
	const CUlaunchConfig *c = l->config;
	op->kernel.config = *c;
	op->kernel.config.hStream = l->stream;
	op->kernel.config.attrs = NULL;
	*events = 0;
	if (!c->attrs || !c->numAttrs) {
		op->kernel.config.numAttrs = 0;
		return NULL;
	}
	op->kernel.attrs = malloc(c->numAttrs * sizeof(*c->attrs));
	if (!op->kernel.attrs)
		return WHY_MEMORY;
	memcpy(op->kernel.attrs, c->attrs, c->numAttrs * sizeof(*c->attrs));
	for (unsigned i = 0; i < c->numAttrs; i++)
		if (attribute_event(&c->attrs[i]))
			(*events)++;
	return NULL;
}

static const char *record_kernel(struct range_ops *ops, CUpti_CallbackId cbid,
				 const CUpti_CallbackData *cb, uint64_t call)
{
	struct range_op op = { .kind = RANGE_OP_KERNEL, .call = call };
	struct inject_launch *l = &op.kernel.launch;
	*l = (struct inject_launch){ .ctx = cb->context, .context_id = cb->contextUid,
				     .mangled = cb->symbolName ? cb->symbolName : "" };
	if (!inject_launch_decode((int)cbid, cb->functionParams, l))
		return WHY_OUTSIDE;
	op.stream = l->stream;
	const char *interned = NULL;
	op.kernel.name = inject_name_intern(l->mangled, &interned);
	/* The driver's name lives only as long as its call. */
	l->mangled = interned;
	if (inject_is_collective(l->mangled ? l->mangled : "", NULL) ||
	    (op.kernel.name && inject_is_collective(op.kernel.name, NULL)))
		return WHY_COLLECTIVE;
	size_t events = 0;
	const char *why = WHY_MEMORY;
	if (interned && (l->kernel_params || !l->extra)) {
		/* The driver refuses a launch that passes both; the copy keeps kernelParams. */
		l->extra = NULL;
		why = copy_kernel_params(&op, l);
	} else if (interned) {
		why = copy_kernel_extra(&op, l->extra);
		l->extra = op.kernel.extra;
	}
	if (!why && l->kind == INJECT_LAUNCH_EX)
		why = copy_kernel_config(&op, l, &events);
	if (!why && !reserve(ops, 1 + events))
		why = WHY_MEMORY;
	if (why) {
		free_op(&op);
		return why;
	}
	struct range_op *kept = push(ops, RANGE_OP_KERNEL, op.stream, call);
	*kept = op;
	repoint(kept);
	ops->kernels++;
	/* inject_relaunch leaves event attributes out (a replay must not record the
	 * application's events): each is stood in for by a record of the event after the
	 * kernel, which a replay maps to its shadow like any other. After the whole kernel is
	 * later than the attribute fires (all blocks triggered, or launched), so a stream
	 * waiting on it is ordered the same way or later, never earlier. */
	for (unsigned i = 0; events && i < kept->kernel.config.numAttrs; i++) {
		CUevent event = attribute_event(&kept->kernel.attrs[i]);
		if (event)
			push(ops, RANGE_OP_EVENT_RECORD, op.stream, call)->event.event = event;
	}
	return NULL;
}

/* ---- memsets and copies -------------------------------------------------------------- */

static const char *record_memset(struct range_ops *ops, uint64_t call, CUstream stream,
				 CUdeviceptr dst, size_t pitch, unsigned value,
				 unsigned element_size, size_t width, size_t height)
{
	struct range_op *op = add(ops, RANGE_OP_MEMSET, stream, call);
	if (!op)
		return WHY_MEMORY;
	op->memset.dst = dst;
	op->memset.pitch = pitch;
	op->memset.value = value;
	op->memset.element_size = element_size;
	op->memset.width = width;
	op->memset.height = height;
	return NULL;
}

/* A copy to the device, from device memory (src) or from host memory (host, whose bytes
 * are copied now: the application may change them once the call returns). synchronous:
 * the host waited for the copy before going on (the plain cuMemcpy forms from host
 * memory), so a stream wait follows it, and what the application issued next on other
 * streams stays ordered after it. */
static const char *record_copy(struct range_ops *ops, uint64_t call, CUstream stream,
			       CUdeviceptr dst, CUdeviceptr src, const void *host, size_t bytes,
			       bool synchronous)
{
	void *copy = NULL;
	if (host) {
		copy = malloc(bytes ? bytes : 1);
		if (!copy)
			return WHY_MEMORY;
		memcpy(copy, host, bytes);
	}
	if (!reserve(ops, synchronous && host ? 2 : 1)) {
		free(copy);
		return WHY_MEMORY;
	}
	struct range_op *op = push(ops, RANGE_OP_COPY, stream, call);
	op->copy.dst = dst;
	op->copy.src = host ? 0 : src;
	op->copy.host = copy;
	op->copy.bytes = bytes;
	if (synchronous && host)
		push(ops, RANGE_OP_SYNC, stream, call)->event.sync = RANGE_SYNC_STREAM;
	return NULL;
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
static const char *record_unified_copy(struct range_ops *ops, uint64_t call, CUstream stream,
				       CUdeviceptr dst, CUdeviceptr src, size_t bytes,
				       bool synchronous)
{
	int dst_device = on_device(dst), src_device = on_device(src);
	if (dst_device < 0 || src_device < 0)
		return WHY_UNDESCRIBED;
	if (!dst_device)
		return src_device ? WHY_TO_HOST : WHY_OUTSIDE;
	return record_copy(ops, call, stream, dst, src,
			   src_device ? NULL : (const void *)(uintptr_t)src, bytes, synchronous);
}

/* ---- events, streams, graphs, waits -------------------------------------------------- */

static const char *record_event(struct range_ops *ops, uint64_t call, enum range_op_kind kind,
				CUstream stream, CUevent event, unsigned flags)
{
	struct range_op *op = add(ops, kind, stream, call);
	if (!op)
		return WHY_MEMORY;
	op->event.event = event;
	op->event.flags = flags;
	return NULL;
}

static const char *record_sync(struct range_ops *ops, uint64_t call, CUstream stream,
			       CUevent event, int sync)
{
	struct range_op *op = add(ops, RANGE_OP_SYNC, stream, call);
	if (!op)
		return WHY_MEMORY;
	op->event.event = event;
	op->event.sync = sync;
	return NULL;
}

static const char *record_graph(struct range_ops *ops, uint64_t call, CUstream stream,
				CUgraphExec exec)
{
	struct range_op *op = add(ops, RANGE_OP_GRAPH_LAUNCH, stream, call);
	if (!op)
		return WHY_MEMORY;
	op->graph.exec = exec;
	ops->graph_launches++;
	return NULL;
}

/* Whether an op recorded so far names event (records it, waits on it, waits for it). */
static bool event_used(const struct range_ops *ops, CUevent event)
{
	for (size_t i = 0; i < ops->count; i++) {
		enum range_op_kind kind = ops->ops[i].kind;
		if ((kind == RANGE_OP_EVENT_RECORD || kind == RANGE_OP_STREAM_WAIT ||
		     kind == RANGE_OP_SYNC) && ops->ops[i].event.event == event)
			return true;
	}
	return false;
}

/* Whether an op's stream is what it runs on (a SYNC of an event or the context has
 * none). */
static bool has_stream(const struct range_op *op)
{
	return op->kind != RANGE_OP_SYNC || op->event.sync == RANGE_SYNC_STREAM;
}

static bool stream_used(const struct range_ops *ops, CUstream stream)
{
	for (size_t i = 0; i < ops->count; i++)
		if (has_stream(&ops->ops[i]) && ops->ops[i].stream == stream)
			return true;
	return false;
}

/* ---- classifying a call -------------------------------------------------------------- */

/* The calls decided by what they are, before their context is looked at: those a replay
 * need not repeat (IGNORED), those it cannot (REFUSED, *why said), and RECORDED for every
 * other call, which record() then takes. */
static enum range_call first_look(const struct range_ops *ops, CUpti_CallbackId cbid,
				  const void *params, const char **why)
{
	switch (cbid) {
	/* Questions: they change nothing on the device. */
	case CUPTI_DRIVER_TRACE_CBID_cuInit:
	case CUPTI_DRIVER_TRACE_CBID_cuDriverGetVersion:
	case CUPTI_DRIVER_TRACE_CBID_cuDeviceGet:
	case CUPTI_DRIVER_TRACE_CBID_cuDeviceGetCount:
	case CUPTI_DRIVER_TRACE_CBID_cuDeviceGetName:
	case CUPTI_DRIVER_TRACE_CBID_cuDeviceComputeCapability:
	case CUPTI_DRIVER_TRACE_CBID_cuDeviceTotalMem:
	case CUPTI_DRIVER_TRACE_CBID_cuDeviceTotalMem_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuDeviceGetProperties:
	case CUPTI_DRIVER_TRACE_CBID_cuDeviceGetAttribute:
	case CUPTI_DRIVER_TRACE_CBID_cuDeviceGetUuid:
	case CUPTI_DRIVER_TRACE_CBID_cuDeviceGetUuid_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuDeviceGetLuid:
	case CUPTI_DRIVER_TRACE_CBID_cuDeviceGetByPCIBusId:
	case CUPTI_DRIVER_TRACE_CBID_cuDeviceGetPCIBusId:
	case CUPTI_DRIVER_TRACE_CBID_cuDeviceCanAccessPeer:
	case CUPTI_DRIVER_TRACE_CBID_cuDeviceGetP2PAttribute:
	case CUPTI_DRIVER_TRACE_CBID_cuDeviceGetTexture1DLinearMaxWidth:
	case CUPTI_DRIVER_TRACE_CBID_cuDeviceGetDefaultMemPool:
	case CUPTI_DRIVER_TRACE_CBID_cuDeviceGetMemPool:
	case CUPTI_DRIVER_TRACE_CBID_cuDeviceGetExecAffinitySupport:
	case CUPTI_DRIVER_TRACE_CBID_cuDeviceGetGraphMemAttribute:
	case CUPTI_DRIVER_TRACE_CBID_cuDeviceGetP2PAtomicCapabilities:
	case CUPTI_DRIVER_TRACE_CBID_cuDeviceGetHostAtomicCapabilities:
	case CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxGetState:
	case CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent:
	case CUPTI_DRIVER_TRACE_CBID_cuCtxGetDevice:
	case CUPTI_DRIVER_TRACE_CBID_cuCtxGetDevice_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuCtxGetApiVersion:
	case CUPTI_DRIVER_TRACE_CBID_cuCtxGetCacheConfig:
	case CUPTI_DRIVER_TRACE_CBID_cuCtxGetSharedMemConfig:
	case CUPTI_DRIVER_TRACE_CBID_cuCtxGetLimit:
	case CUPTI_DRIVER_TRACE_CBID_cuCtxGetFlags:
	case CUPTI_DRIVER_TRACE_CBID_cuCtxGetId:
	case CUPTI_DRIVER_TRACE_CBID_cuCtxGetStreamPriorityRange:
	case CUPTI_DRIVER_TRACE_CBID_cuCtxGetExecAffinity:
	case CUPTI_DRIVER_TRACE_CBID_cuFuncGetAttribute:
	case CUPTI_DRIVER_TRACE_CBID_cuFuncGetName:
	case CUPTI_DRIVER_TRACE_CBID_cuFuncGetModule:
	case CUPTI_DRIVER_TRACE_CBID_cuFuncGetParamInfo:
	case CUPTI_DRIVER_TRACE_CBID_cuFuncIsLoaded:
	case CUPTI_DRIVER_TRACE_CBID_cuKernelGetAttribute:
	case CUPTI_DRIVER_TRACE_CBID_cuKernelGetFunction:
	case CUPTI_DRIVER_TRACE_CBID_cuKernelGetName:
	case CUPTI_DRIVER_TRACE_CBID_cuKernelGetParamInfo:
	case CUPTI_DRIVER_TRACE_CBID_cuKernelGetLibrary:
	case CUPTI_DRIVER_TRACE_CBID_cuModuleGetFunction:
	case CUPTI_DRIVER_TRACE_CBID_cuModuleGetGlobal_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuModuleGetLoadingMode:
	case CUPTI_DRIVER_TRACE_CBID_cuModuleGetFunctionCount:
	case CUPTI_DRIVER_TRACE_CBID_cuModuleEnumerateFunctions:
	case CUPTI_DRIVER_TRACE_CBID_cuLibraryGetKernel:
	case CUPTI_DRIVER_TRACE_CBID_cuLibraryGetModule:
	case CUPTI_DRIVER_TRACE_CBID_cuLibraryGetGlobal:
	case CUPTI_DRIVER_TRACE_CBID_cuLibraryGetManaged:
	case CUPTI_DRIVER_TRACE_CBID_cuLibraryGetUnifiedFunction:
	case CUPTI_DRIVER_TRACE_CBID_cuLibraryGetKernelCount:
	case CUPTI_DRIVER_TRACE_CBID_cuLibraryEnumerateKernels:
	case CUPTI_DRIVER_TRACE_CBID_cuMemGetInfo_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuMemGetAddressRange_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuMemHostGetDevicePointer_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuMemHostGetFlags:
	case CUPTI_DRIVER_TRACE_CBID_cuMemGetAllocationGranularity:
	case CUPTI_DRIVER_TRACE_CBID_cuMemGetAllocationPropertiesFromHandle:
	case CUPTI_DRIVER_TRACE_CBID_cuMemGetAccess:
	case CUPTI_DRIVER_TRACE_CBID_cuMemRangeGetAttribute:
	case CUPTI_DRIVER_TRACE_CBID_cuMemRangeGetAttributes:
	case CUPTI_DRIVER_TRACE_CBID_cuMemPoolGetAttribute:
	case CUPTI_DRIVER_TRACE_CBID_cuMemPoolGetAccess:
	case CUPTI_DRIVER_TRACE_CBID_cuMemGetDefaultMemPool:
	case CUPTI_DRIVER_TRACE_CBID_cuMemGetMemPool:
	case CUPTI_DRIVER_TRACE_CBID_cuPointerGetAttribute:
	case CUPTI_DRIVER_TRACE_CBID_cuPointerGetAttributes:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamGetPriority:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamGetPriority_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamGetFlags:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamGetFlags_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamGetCtx:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamGetCtx_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamGetCtx_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamGetCtx_v2_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamGetId:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamGetId_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamGetDevice:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamGetDevice_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamGetAttribute:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamGetAttribute_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamQuery:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamQuery_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamIsCapturing:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamIsCapturing_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamGetCaptureInfo:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamGetCaptureInfo_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamGetCaptureInfo_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamGetCaptureInfo_v2_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamGetCaptureInfo_v3:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamGetCaptureInfo_v3_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuThreadExchangeStreamCaptureMode:
	case CUPTI_DRIVER_TRACE_CBID_cuEventQuery:
	case CUPTI_DRIVER_TRACE_CBID_cuEventElapsedTime:
	case CUPTI_DRIVER_TRACE_CBID_cuEventElapsedTime_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuGetErrorName:
	case CUPTI_DRIVER_TRACE_CBID_cuGetErrorString:
	case CUPTI_DRIVER_TRACE_CBID_cuGetProcAddress:
	case CUPTI_DRIVER_TRACE_CBID_cuGetProcAddress_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuGetExportTable:
	/* TMA descriptors are encoded on the host (CUTLASS 3 sm90 GEMMs at every call,
	 * Triton, FlashAttention-3): the kernel that uses one gets it as a parameter. */
	case CUPTI_DRIVER_TRACE_CBID_cuTensorMapEncodeTiled:
	case CUPTI_DRIVER_TRACE_CBID_cuTensorMapEncodeIm2col:
	case CUPTI_DRIVER_TRACE_CBID_cuTensorMapEncodeIm2colWide:
	case CUPTI_DRIVER_TRACE_CBID_cuTensorMapReplaceAddress:
	case CUPTI_DRIVER_TRACE_CBID_cuOccupancyMaxActiveBlocksPerMultiprocessor:
	case CUPTI_DRIVER_TRACE_CBID_cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags:
	case CUPTI_DRIVER_TRACE_CBID_cuOccupancyMaxPotentialBlockSize:
	case CUPTI_DRIVER_TRACE_CBID_cuOccupancyMaxPotentialBlockSizeWithFlags:
	case CUPTI_DRIVER_TRACE_CBID_cuOccupancyAvailableDynamicSMemPerBlock:
	case CUPTI_DRIVER_TRACE_CBID_cuOccupancyMaxPotentialClusterSize:
	case CUPTI_DRIVER_TRACE_CBID_cuOccupancyMaxActiveClusters:
	/* Which context is current: each recorded call is checked against the range's
	 * context on its own (cb->context), so switching alone changes nothing replayed. */
	case CUPTI_DRIVER_TRACE_CBID_cuCtxPushCurrent:
	case CUPTI_DRIVER_TRACE_CBID_cuCtxPushCurrent_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuCtxPopCurrent:
	case CUPTI_DRIVER_TRACE_CBID_cuCtxPopCurrent_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxRetain:
	/* Settings that persist: a replay runs after the range, under their last values,
	 * as the application's next launches of the same kernels would. */
	case CUPTI_DRIVER_TRACE_CBID_cuFuncSetAttribute:
	case CUPTI_DRIVER_TRACE_CBID_cuFuncSetCacheConfig:
	case CUPTI_DRIVER_TRACE_CBID_cuFuncSetSharedMemConfig:
	case CUPTI_DRIVER_TRACE_CBID_cuKernelSetAttribute:
	case CUPTI_DRIVER_TRACE_CBID_cuKernelSetCacheConfig:
	/* Code loaded (lazily, at a first launch, too) stays loaded for the replay; JIT
	 * linking is host work. */
	case CUPTI_DRIVER_TRACE_CBID_cuModuleLoad:
	case CUPTI_DRIVER_TRACE_CBID_cuModuleLoadData:
	case CUPTI_DRIVER_TRACE_CBID_cuModuleLoadDataEx:
	case CUPTI_DRIVER_TRACE_CBID_cuModuleLoadFatBinary:
	case CUPTI_DRIVER_TRACE_CBID_cuLibraryLoadData:
	case CUPTI_DRIVER_TRACE_CBID_cuLibraryLoadFromFile:
	case CUPTI_DRIVER_TRACE_CBID_cuFuncLoad:
	case CUPTI_DRIVER_TRACE_CBID_cuLinkCreate_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuLinkAddData_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuLinkAddFile_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuLinkComplete:
	case CUPTI_DRIVER_TRACE_CBID_cuLinkDestroy:
	/* New handles: a replay uses those the range used, which exist at its end. */
	case CUPTI_DRIVER_TRACE_CBID_cuEventCreate:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamCreate:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamCreateWithPriority:
	/* Another profiler's collection (cudaProfilerStart): nothing of the device's work. */
	case CUPTI_DRIVER_TRACE_CBID_cuProfilerStart:
	case CUPTI_DRIVER_TRACE_CBID_cuProfilerStop:
		return RANGE_CALL_IGNORED;

	/* Later calls of the thread would run in another context (ignored when it sets the
	 * range's own, or none). */
	case CUPTI_DRIVER_TRACE_CBID_cuCtxSetCurrent: {
		CUcontext ctx = ((const cuCtxSetCurrent_params *)params)->ctx;
		*why = ctx && ctx != ops->ctx ? WHY_CONTEXT : NULL;
		return *why ? RANGE_CALL_REFUSED : RANGE_CALL_IGNORED;
	}
	/* A handle the replay would issue its calls on, gone (and perhaps reused) by the
	 * range's end. */
	case CUPTI_DRIVER_TRACE_CBID_cuEventDestroy:
	case CUPTI_DRIVER_TRACE_CBID_cuEventDestroy_v2:
		*why = event_used(ops, ((const cuEventDestroy_v2_params *)params)->hEvent) ?
			WHY_DESTROYS : NULL;
		return *why ? RANGE_CALL_REFUSED : RANGE_CALL_IGNORED;
	case CUPTI_DRIVER_TRACE_CBID_cuStreamDestroy:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamDestroy_v2:
		*why = stream_used(ops, ((const cuStreamDestroy_v2_params *)params)->hStream) ?
			WHY_DESTROYS : NULL;
		return *why ? RANGE_CALL_REFUSED : RANGE_CALL_IGNORED;

	/* The memory the range's begin saved would no longer be the memory its calls use,
	 * and a replay would allocate or free again each run. */
	case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc:
	case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch:
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuMemFree:
	case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost:
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost:
	case CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc:
	case CBID_cuMemHostAlloc_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister:
	case CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuMemHostUnregister:
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged:
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync:
	case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync:
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuMemCreate:
	case CUPTI_DRIVER_TRACE_CBID_cuMemRelease:
	case CUPTI_DRIVER_TRACE_CBID_cuMemMap:
	case CUPTI_DRIVER_TRACE_CBID_cuMemUnmap:
	case CUPTI_DRIVER_TRACE_CBID_cuMemMapArrayAsync:
	case CUPTI_DRIVER_TRACE_CBID_cuMemMapArrayAsync_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuMemAddressReserve:
	case CUPTI_DRIVER_TRACE_CBID_cuMemAddressFree:
	case CUPTI_DRIVER_TRACE_CBID_cuMemSetAccess:
	case CUPTI_DRIVER_TRACE_CBID_cuMemPoolTrimTo:
	case CUPTI_DRIVER_TRACE_CBID_cuMemPoolCreate:
	case CUPTI_DRIVER_TRACE_CBID_cuMemPoolDestroy:
	case CUPTI_DRIVER_TRACE_CBID_cuArrayCreate:
	case CUPTI_DRIVER_TRACE_CBID_cuArrayCreate_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuArray3DCreate:
	case CUPTI_DRIVER_TRACE_CBID_cuArray3DCreate_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuArrayDestroy:
	case CUPTI_DRIVER_TRACE_CBID_cuMipmappedArrayCreate:
	case CUPTI_DRIVER_TRACE_CBID_cuMipmappedArrayDestroy:
		*why = WHY_ALLOCATES;
		return RANGE_CALL_REFUSED;

	/* Another party (a process, the host, a graphics API) reads or writes what the range
	 * waits for or signals: a replay alone cannot repeat its side. */
	case CUPTI_DRIVER_TRACE_CBID_cuIpcGetMemHandle:
	case CUPTI_DRIVER_TRACE_CBID_cuIpcOpenMemHandle:
	case CUPTI_DRIVER_TRACE_CBID_cuIpcOpenMemHandle_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuIpcCloseMemHandle:
	case CUPTI_DRIVER_TRACE_CBID_cuIpcGetEventHandle:
	case CUPTI_DRIVER_TRACE_CBID_cuIpcOpenEventHandle:
	case CUPTI_DRIVER_TRACE_CBID_cuMemExportToShareableHandle:
	case CUPTI_DRIVER_TRACE_CBID_cuMemImportFromShareableHandle:
	case CUPTI_DRIVER_TRACE_CBID_cuMemPoolExportToShareableHandle:
	case CUPTI_DRIVER_TRACE_CBID_cuMemPoolImportFromShareableHandle:
	case CUPTI_DRIVER_TRACE_CBID_cuMemPoolExportPointer:
	case CUPTI_DRIVER_TRACE_CBID_cuMemPoolImportPointer:
	case CUPTI_DRIVER_TRACE_CBID_cuImportExternalMemory:
	case CUPTI_DRIVER_TRACE_CBID_cuImportExternalSemaphore:
	case CUPTI_DRIVER_TRACE_CBID_cuSignalExternalSemaphoresAsync:
	case CUPTI_DRIVER_TRACE_CBID_cuSignalExternalSemaphoresAsync_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuWaitExternalSemaphoresAsync:
	case CUPTI_DRIVER_TRACE_CBID_cuWaitExternalSemaphoresAsync_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue32:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue32_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue32_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue32_v2_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue64:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue64_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue64_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue64_v2_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamWriteValue32:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamWriteValue32_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamWriteValue32_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamWriteValue32_v2_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamWriteValue64:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamWriteValue64_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamWriteValue64_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamWriteValue64_v2_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamBatchMemOp:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamBatchMemOp_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamBatchMemOp_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamBatchMemOp_v2_ptsz:
		*why = WHY_OTHER_PROCESS;
		return RANGE_CALL_REFUSED;

	/* The host function would run again each run, or the replay would not be the
	 * range without it. */
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchHostFunc:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchHostFunc_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamAddCallback:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamAddCallback_ptsz:
		*why = WHY_HOST_FUNCTION;
		return RANGE_CALL_REFUSED;

	/* The host reads what the range computed and may decide on it: a replay would
	 * write host memory the range's begin did not save. */
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH:
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2_ptds:
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync:
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAtoH:
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAtoH_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAtoH_v2_ptds:
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAtoHAsync:
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAtoHAsync_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAtoHAsync_v2_ptsz:
		*why = WHY_TO_HOST;
		return RANGE_CALL_REFUSED;

	default:
		return RANGE_CALL_RECORDED;
	}
}

/* A memset call's params as its op: dst, pitch (0: 1D), value, element size, width and
 * height in elements, on stream (an expression over the params m). */
#define MEMSET_1D(type, value, size, stream_expr)                                           \
	do {                                                                                \
		const type *m = params;                                                     \
		return record_memset(ops, call, (stream_expr), m->dstDevice, 0, m->value,    \
				     size, m->N, 1);                                        \
	} while (0)
#define MEMSET_2D(type, value, size, stream_expr)                                           \
	do {                                                                                \
		const type *m = params;                                                     \
		return record_memset(ops, call, (stream_expr), m->dstDevice, m->dstPitch,    \
				     m->value, size, m->Width, m->Height);                  \
	} while (0)
/* A copy call's params: device or host source, on stream; synchronous as record_copy
 * says. */
#define COPY_DTOD(type, stream_expr)                                                        \
	do {                                                                                \
		const type *c = params;                                                     \
		return record_copy(ops, call, (stream_expr), c->dstDevice, c->srcDevice,     \
				   NULL, c->ByteCount, false);                              \
	} while (0)
#define COPY_HTOD(type, stream_expr, synchronous)                                           \
	do {                                                                                \
		const type *c = params;                                                     \
		return record_copy(ops, call, (stream_expr), c->dstDevice, 0, c->srcHost,    \
				   c->ByteCount, synchronous);                              \
	} while (0)
#define COPY_UNIFIED(type, stream_expr, synchronous)                                        \
	do {                                                                                \
		const type *c = params;                                                     \
		return record_unified_copy(ops, call, (stream_expr), c->dst, c->src,         \
					   c->ByteCount, synchronous);                      \
	} while (0)

/* The calls a replay repeats, recorded (NULL), or why not. The plain synchronous forms
 * run on the legacy stream (NULL), their _ptds forms on the thread's per-thread stream.
 * The first driver forms, of 32-bit device pointers, are outside: no 64-bit program
 * calls them. */
static const char *record(struct range_ops *ops, CUpti_CallbackId cbid,
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
		return record_kernel(ops, cbid, cb, call);

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
		MEMSET_1D(cuMemsetD8Async_ptsz_params, uc, 1, per_thread(m->hStream));
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async_ptsz:
		MEMSET_1D(cuMemsetD16Async_ptsz_params, us, 2, per_thread(m->hStream));
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async_ptsz:
		MEMSET_1D(cuMemsetD32Async_ptsz_params, ui, 4, per_thread(m->hStream));
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
		MEMSET_2D(cuMemsetD2D8Async_ptsz_params, uc, 1, per_thread(m->hStream));
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D16Async_ptsz:
		MEMSET_2D(cuMemsetD2D16Async_ptsz_params, us, 2, per_thread(m->hStream));
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D32Async_ptsz:
		MEMSET_2D(cuMemsetD2D32Async_ptsz_params, ui, 4, per_thread(m->hStream));

	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2:
		COPY_DTOD(cuMemcpyDtoD_v2_params, NULL);
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2_ptds:
		COPY_DTOD(cuMemcpyDtoD_v2_ptds_params, CU_STREAM_PER_THREAD);
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2:
		COPY_DTOD(cuMemcpyDtoDAsync_v2_params, c->hStream);
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2_ptsz:
		COPY_DTOD(cuMemcpyDtoDAsync_v2_ptsz_params, per_thread(c->hStream));
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2:
		COPY_HTOD(cuMemcpyHtoD_v2_params, NULL, true);
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2_ptds:
		COPY_HTOD(cuMemcpyHtoD_v2_ptds_params, CU_STREAM_PER_THREAD, true);
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2:
		COPY_HTOD(cuMemcpyHtoDAsync_v2_params, c->hStream, false);
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz:
		COPY_HTOD(cuMemcpyHtoDAsync_v2_ptsz_params, per_thread(c->hStream), false);
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpy:
		COPY_UNIFIED(cuMemcpy_params, NULL, true);
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpy_ptds:
		COPY_UNIFIED(cuMemcpy_ptds_params, CU_STREAM_PER_THREAD, true);
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync:
		COPY_UNIFIED(cuMemcpyAsync_params, c->hStream, false);
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz:
		COPY_UNIFIED(cuMemcpyAsync_ptsz_params, per_thread(c->hStream), false);

	/* Record flags (CU_EVENT_RECORD_EXTERNAL) and wait flags (CU_EVENT_WAIT_EXTERNAL)
	 * matter only under a stream capture; they are kept, not replayed. */
	case CUPTI_DRIVER_TRACE_CBID_cuEventRecord: {
		const cuEventRecord_params *e = params;
		return record_event(ops, call, RANGE_OP_EVENT_RECORD, e->hStream, e->hEvent, 0);
	}
	case CUPTI_DRIVER_TRACE_CBID_cuEventRecord_ptsz: {
		const cuEventRecord_ptsz_params *e = params;
		return record_event(ops, call, RANGE_OP_EVENT_RECORD, per_thread(e->hStream),
				    e->hEvent, 0);
	}
	case CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags: {
		const cuEventRecordWithFlags_params *e = params;
		return record_event(ops, call, RANGE_OP_EVENT_RECORD, e->hStream, e->hEvent,
				    e->flags);
	}
	case CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags_ptsz: {
		const cuEventRecordWithFlags_ptsz_params *e = params;
		return record_event(ops, call, RANGE_OP_EVENT_RECORD, per_thread(e->hStream),
				    e->hEvent, e->flags);
	}
	case CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent: {
		const cuStreamWaitEvent_params *w = params;
		return record_event(ops, call, RANGE_OP_STREAM_WAIT, w->hStream, w->hEvent,
				    w->Flags);
	}
	case CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent_ptsz: {
		const cuStreamWaitEvent_ptsz_params *w = params;
		return record_event(ops, call, RANGE_OP_STREAM_WAIT, per_thread(w->hStream),
				    w->hEvent, w->Flags);
	}

	case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch: {
		const cuGraphLaunch_params *g = params;
		return record_graph(ops, call, g->hStream, g->hGraph);
	}
	case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz: {
		const cuGraphLaunch_ptsz_params *g = params;
		return record_graph(ops, call, per_thread(g->hStream), g->hGraphExec);
	}

	case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize: {
		const cuStreamSynchronize_params *y = params;
		return record_sync(ops, call, y->hStream, NULL, RANGE_SYNC_STREAM);
	}
	case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz: {
		const cuStreamSynchronize_ptsz_params *y = params;
		return record_sync(ops, call, per_thread(y->hStream), NULL, RANGE_SYNC_STREAM);
	}
	case CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize:
		return record_sync(ops, call, NULL,
				   ((const cuEventSynchronize_params *)params)->hEvent,
				   RANGE_SYNC_EVENT);
	case CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize:
		return record_sync(ops, call, NULL, NULL, RANGE_SYNC_CONTEXT);
	case CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2: {
		/* Its context is an argument (NULL: the current one). */
		CUcontext ctx = ((const cuCtxSynchronize_v2_params *)params)->ctx;
		if (ctx && ctx != ops->ctx)
			return WHY_CONTEXT;
		return record_sync(ops, call, NULL, NULL, RANGE_SYNC_CONTEXT);
	}

	default:
		return WHY_OUTSIDE;
	}
}

/* A capture's begin: torch.compile's reduce-overhead mode captures at its first calls. */
static bool is_capture_begin(CUpti_CallbackId cbid)
{
	switch (cbid) {
	case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph_ptsz:
		return true;
	default:
		return false;
	}
}

/* The refusal: the call's name as CUPTI spells it ("cuMemAlloc_v2"), or the callback's
 * own where CUPTI gives none. */
static void refuse(struct range_ops *ops, CUpti_CallbackId cbid, const CUpti_CallbackData *cb,
		   uint64_t call, const char *why)
{
	const char *name = NULL;
	if (rp_api.cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, cbid, &name) != CUPTI_SUCCESS ||
	    !name)
		name = cb->functionName ? cb->functionName : "a driver call";
	ops->refused = true;
	snprintf(ops->refusal.call, sizeof(ops->refusal.call), "%s", name);
	ops->refusal.why = why;
	ops->refusal.transient = why == WHY_ALLOCATES || is_capture_begin(cbid);
	ops->refusal.call_index = call;
	ops->refusal.kernels_before = ops->kernels;
}

void range_ops_refuse(struct range_ops *ops, CUpti_CallbackId cbid,
		      const CUpti_CallbackData *cb, const char *why)
{
	uint64_t call = ops->calls++;
	if (!ops->refused)
		refuse(ops, cbid, cb, call, why);
}

enum range_call range_ops_on_call(struct range_ops *ops, CUpti_CallbackId cbid,
				  const CUpti_CallbackData *cb)
{
	uint64_t call = ops->calls++;
	if (ops->refused)
		return RANGE_CALL_REFUSED;
	const char *why = NULL;
	enum range_call verdict = first_look(ops, cbid, cb->functionParams, &why);
	if (verdict == RANGE_CALL_RECORDED) {
		/* The driver gives the context the call runs in: a call into another one
		 * would be replayed in the range's. */
		why = cb->context != ops->ctx ? WHY_CONTEXT : record(ops, cbid, cb, call);
		verdict = why ? RANGE_CALL_REFUSED : RANGE_CALL_RECORDED;
	}
	if (verdict == RANGE_CALL_REFUSED)
		refuse(ops, cbid, cb, call, why);
	return verdict;
}

/* ---- replay -------------------------------------------------------------------------- */

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
int range_replay_issue(const struct range_ops *ops, struct range_replay *rp, char *err,
		       size_t err_size)
{
	for (size_t i = 0; i < ops->count; i++) {
		const struct range_op *op = &ops->ops[i];
		const char *call = NULL;
		CUresult cr = CUDA_SUCCESS;
		CUevent shadow = NULL;
		switch (op->kind) {
		case RANGE_OP_KERNEL: {
			char why[64];
			if (inject_relaunch(&op->kernel.launch, why, sizeof(why))) {
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
		if (!has_stream(op))
			continue;
		bool seen = false;
		for (size_t j = 0; j < n && j < max && !seen; j++)
			seen = streams[j] == op->stream;
		/* Past max, the streams not written are found again among the earlier ops. */
		for (size_t j = 0; n > max && j < i && !seen; j++)
			seen = has_stream(&ops->ops[j]) && ops->ops[j].stream == op->stream;
		if (seen)
			continue;
		if (n < max)
			streams[n] = op->stream;
		n++;
	}
	return n;
}
