/* inject/range/range_calls.c - each driver call a range makes, at its ENTER (range.h's
 * range_ops_on_call): one switch over the driver's callback ids saying what a replay need
 * not repeat (ignored), cannot repeat (refused, with the call's name and why) or repeats
 * (recorded), and one over the recorded ones reading their arguments (range_args.c) into
 * range_ops.c's store.
 * Calls: range_args.c, collector/ (CUPTI: the call's name).
 * Called by: range_workload.c (on the application's threads).
 * Lock: the replay lock. */
#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/api.h"
#include "common/error.h"
#include "inject/inject.h"
#include "inject/range/range.h"
#include "inject/range/range_calls.h"

/* Id 271 is cuMemHostAlloc_v2 in the CUDA 13 toolkit's CUPTI headers and an unnamed
 * "cuda271" in the newer CUPTI of the pip wheels the package is also built against; the
 * ids never move, so the number names it in both. */
#define CBID_cuMemHostAlloc_v2 ((CUpti_CallbackId)271)

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

static bool stream_used(const struct range_ops *ops, CUstream stream)
{
	for (size_t i = 0; i < ops->count; i++)
		if (range_op_runs_on_stream(&ops->ops[i]) && ops->ops[i].stream == stream)
			return true;
	return false;
}

/* ---- classifying a call -------------------------------------------------------------- */

/* The calls decided by what they are, before their context is looked at: those a replay
 * need not repeat (IGNORED), those it cannot (REFUSED, *why said), and RECORDED for every
 * other call, which record_call() then takes. */
static enum range_call first_look(const struct range_ops *ops, CUpti_CallbackId cbid,
				  const void *params, enum range_why *why)
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
		*why = ctx && ctx != ops->ctx ? RANGE_WHY_CONTEXT : RANGE_WHY_NONE;
		return *why ? RANGE_CALL_REFUSED : RANGE_CALL_IGNORED;
	}
	/* A handle the replay would issue its calls on, gone (and perhaps reused) by the
	 * range's end. */
	case CUPTI_DRIVER_TRACE_CBID_cuEventDestroy:
	case CUPTI_DRIVER_TRACE_CBID_cuEventDestroy_v2:
		*why = event_used(ops, ((const cuEventDestroy_v2_params *)params)->hEvent) ?
			RANGE_WHY_DESTROYS : RANGE_WHY_NONE;
		return *why ? RANGE_CALL_REFUSED : RANGE_CALL_IGNORED;
	case CUPTI_DRIVER_TRACE_CBID_cuStreamDestroy:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamDestroy_v2:
		*why = stream_used(ops, ((const cuStreamDestroy_v2_params *)params)->hStream) ?
			RANGE_WHY_DESTROYS : RANGE_WHY_NONE;
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
		*why = RANGE_WHY_ALLOCATES;
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
		*why = RANGE_WHY_OTHER_PROCESS;
		return RANGE_CALL_REFUSED;

	/* The host function would run again each run, or the replay would not be the
	 * range without it. */
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchHostFunc:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchHostFunc_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamAddCallback:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamAddCallback_ptsz:
		*why = RANGE_WHY_HOST_FUNCTION;
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
		*why = RANGE_WHY_TO_HOST;
		return RANGE_CALL_REFUSED;

	default:
		return RANGE_CALL_RECORDED;
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
		   uint64_t call, enum range_why why, const char *text)
{
	const char *name = NULL;
	if (rp_api.cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, cbid, &name) != CUPTI_SUCCESS ||
	    !name)
		name = cb->functionName ? cb->functionName : "a driver call";
	ops->refused = true;
	snprintf(ops->refusal.call, sizeof(ops->refusal.call), "%s", name);
	ops->refusal.code = why;
	ops->refusal.why = text ? text : range_why_text(why);
	ops->refusal.transient = why == RANGE_WHY_ALLOCATES || is_capture_begin(cbid);
	ops->refusal.call_index = call;
	ops->refusal.kernels_before = ops->kernels;
}

void range_ops_refuse(struct range_ops *ops, CUpti_CallbackId cbid,
		      const CUpti_CallbackData *cb, enum range_why why, const char *text)
{
	INJECT_REPLAY_HELD();
	uint64_t call = ops->calls++;
	if (!ops->refused)
		refuse(ops, cbid, cb, call, why, text);
}

enum range_call range_ops_on_call(struct range_ops *ops, CUpti_CallbackId cbid,
				  const CUpti_CallbackData *cb)
{
	INJECT_REPLAY_HELD();
	uint64_t call = ops->calls++;
	if (ops->refused)
		return RANGE_CALL_REFUSED;
	enum range_why why = RANGE_WHY_NONE;
	enum range_call verdict = first_look(ops, cbid, cb->functionParams, &why);
	if (verdict == RANGE_CALL_RECORDED) {
		/* The driver gives the context the call runs in: a call into another one
		 * would be replayed in the range's. */
		why = cb->context != ops->ctx ? RANGE_WHY_CONTEXT : range_record_call(ops, cbid, cb, call);
		verdict = why ? RANGE_CALL_REFUSED : RANGE_CALL_RECORDED;
	}
	if (verdict == RANGE_CALL_REFUSED)
		refuse(ops, cbid, cb, call, why, NULL);
	return verdict;
}
