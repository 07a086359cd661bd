/* inject/callback/allocations.c - the driver calls that create and free memory a kernel can
 * write, fed to memory/track.c at their EXIT: the list that verification hashes (save.c) and
 * that the reach takes the application's memory from. At ENTER, the bytes an allocation
 * asks for (or that a cuMemGetInfo may lead to), for session.c's kept copies. Runs on any
 * application thread.
 * Calls: memory/ (track.c, which keeps the list), collector/ (the driver's table).
 * Called by: launch.c (the allocation callbacks).
 * Lock: none (no state of its own; the list is under memory/track.c's own lock). */
#include "inject/callback/allocations.h"

#include <cuda.h>
#include <stdint.h>

#include "collector/api.h"
#include "memory/memory.h"

/* The calls that create and free memory a kernel can write: memory/track.c keeps the
 * list that verification hashes. */
static const CUpti_CallbackId memory_cbids[] = {
	CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged,
	CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync,
	CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync,
	CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc,
	CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemMap,
	/* Device memory no kernel reaches as a tracked range: enabled for their ENTER, where
	 * saved copies kept for the next measurement are freed before the allocation
	 * (inject_allocations_take_memory); nothing is tracked at their EXIT. */
	CUPTI_DRIVER_TRACE_CBID_cuMemCreate,
	CUPTI_DRIVER_TRACE_CBID_cuArrayCreate_v2,
	CUPTI_DRIVER_TRACE_CBID_cuArray3DCreate_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMipmappedArrayCreate,
	/* Not an allocation, but an application may size what it allocates next from it (a
	 * KV cache from the free memory): the kept copies go before it looks. */
	CUPTI_DRIVER_TRACE_CBID_cuMemGetInfo_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync,
	CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost,
	CUPTI_DRIVER_TRACE_CBID_cuMemHostUnregister,
	CUPTI_DRIVER_TRACE_CBID_cuMemUnmap,
	/* Memory of other processes and APIs: a kernel can write it as well, and reach.c
	 * takes only tracked memory for the application's. */
	CUPTI_DRIVER_TRACE_CBID_cuIpcOpenMemHandle_v2,
	CUPTI_DRIVER_TRACE_CBID_cuIpcCloseMemHandle,
	CUPTI_DRIVER_TRACE_CBID_cuMemPoolImportPointer,
	CUPTI_DRIVER_TRACE_CBID_cuExternalMemoryGetMappedBuffer,
	CUPTI_DRIVER_TRACE_CBID_cuGraphicsResourceGetMappedPointer_v2,
};

CUptiResult inject_allocations_enable(CUpti_SubscriberHandle sub)
{
	CUptiResult r = CUPTI_SUCCESS;
	for (size_t i = 0; r == CUPTI_SUCCESS && i < sizeof(memory_cbids) / sizeof(memory_cbids[0]); i++)
		r = rp_api.cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, memory_cbids[i]);
	return r;
}

/* Memory whose size the call does not say (another process's allocation, opened by
 * handle): the driver knows its range. */
static void track_whole_allocation(CUdeviceptr p)
{
	CUdeviceptr base;
	size_t size;
	if (rp_api.cuMemGetAddressRange(&base, &size, p) == CUDA_SUCCESS)
		mem_track_add(base, size);
}

bool inject_allocations_take_memory(CUpti_CallbackId cbid, const void *params, size_t *bytes)
{
	switch (cbid) {
	case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2:
		*bytes = ((const cuMemAlloc_v2_params *)params)->bytesize;
		return true;
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2: {
		/* The pitch is the driver's to choose: at least the width. */
		const cuMemAllocPitch_v2_params *a = params;
		*bytes = a->Height && a->WidthInBytes > SIZE_MAX / a->Height ?
				 SIZE_MAX : a->WidthInBytes * a->Height;
		return true;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged:
		*bytes = ((const cuMemAllocManaged_params *)params)->bytesize;
		return true;
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz:
		*bytes = ((const cuMemAllocAsync_params *)params)->bytesize;
		return true;
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync:
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz:
		*bytes = ((const cuMemAllocFromPoolAsync_params *)params)->bytesize;
		return true;
	case CUPTI_DRIVER_TRACE_CBID_cuMemCreate:
		*bytes = ((const cuMemCreate_params *)params)->size;
		return true;
	case CUPTI_DRIVER_TRACE_CBID_cuArrayCreate_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuArray3DCreate_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuMipmappedArrayCreate:
	case CUPTI_DRIVER_TRACE_CBID_cuMemGetInfo_v2:  /* what comes next is not known */
		*bytes = SIZE_MAX;
		return true;
	default:
		return false;
	}
}

bool inject_allocations_on_call(CUpti_CallbackId cbid, const CUpti_CallbackData *cb)
{
	const void *p = cb->functionParams;
	bool ok = cb->functionReturnValue &&
		  *(const CUresult *)cb->functionReturnValue == CUDA_SUCCESS;
	switch (cbid) {
	case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2: {
		const cuMemAlloc_v2_params *a = p;
		if (ok)
			mem_track_add(*a->dptr, a->bytesize);
		return true;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2: {
		const cuMemAllocPitch_v2_params *a = p;
		if (ok)
			mem_track_add(*a->dptr, *a->pPitch * a->Height);
		return true;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged: {
		const cuMemAllocManaged_params *a = p;
		if (ok)
			mem_track_add(*a->dptr, a->bytesize);
		return true;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz: {
		const cuMemAllocAsync_params *a = p;
		if (ok)
			mem_track_add(*a->dptr, a->bytesize);
		return true;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync:
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz: {
		const cuMemAllocFromPoolAsync_params *a = p;
		if (ok)
			mem_track_add(*a->dptr, a->bytesize);
		return true;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc: {
		const cuMemHostAlloc_params *a = p;
		if (ok)
			mem_track_add((CUdeviceptr)*a->pp, a->bytesize);
		return true;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2: {
		const cuMemAllocHost_v2_params *a = p;
		if (ok)
			mem_track_add((CUdeviceptr)*a->pp, a->bytesize);
		return true;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister_v2: {
		const cuMemHostRegister_v2_params *a = p;
		if (ok)
			mem_track_add((CUdeviceptr)a->p, a->bytesize);
		return true;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuMemMap: {
		const cuMemMap_params *a = p;
		if (ok)
			mem_track_add(a->ptr, a->size);
		return true;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuMemCreate:
	case CUPTI_DRIVER_TRACE_CBID_cuArrayCreate_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuArray3DCreate_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuMipmappedArrayCreate:
		return true; /* tracked where mapped (cuMemMap), or not reachable as a range */
	case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2:
		if (ok)
			mem_track_remove(((const cuMemFree_v2_params *)p)->dptr);
		return true;
	case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync:
	case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz:
		if (ok)
			mem_track_remove(((const cuMemFreeAsync_params *)p)->dptr);
		return true;
	case CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost:
		if (ok)
			mem_track_remove((CUdeviceptr)((const cuMemFreeHost_params *)p)->p);
		return true;
	case CUPTI_DRIVER_TRACE_CBID_cuMemHostUnregister:
		if (ok)
			mem_track_remove((CUdeviceptr)((const cuMemHostUnregister_params *)p)->p);
		return true;
	case CUPTI_DRIVER_TRACE_CBID_cuMemUnmap: {
		const cuMemUnmap_params *a = p;
		if (ok)
			mem_track_remove_range(a->ptr, a->size);
		return true;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuIpcOpenMemHandle_v2:
		if (ok)
			track_whole_allocation(*((const cuIpcOpenMemHandle_v2_params *)p)->pdptr);
		return true;
	case CUPTI_DRIVER_TRACE_CBID_cuIpcCloseMemHandle:
		if (ok)
			mem_track_remove(((const cuIpcCloseMemHandle_params *)p)->dptr);
		return true;
	case CUPTI_DRIVER_TRACE_CBID_cuMemPoolImportPointer:
		if (ok)
			track_whole_allocation(*((const cuMemPoolImportPointer_params *)p)->ptr_out);
		return true;
	case CUPTI_DRIVER_TRACE_CBID_cuExternalMemoryGetMappedBuffer: {
		const cuExternalMemoryGetMappedBuffer_params *a = p;
		if (ok)
			mem_track_add(*a->devPtr, a->bufferDesc->size);
		return true;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuGraphicsResourceGetMappedPointer_v2: {
		const cuGraphicsResourceGetMappedPointer_v2_params *a = p;
		if (ok && a->pDevPtr && a->pSize)
			mem_track_add(*a->pDevPtr, *a->pSize);
		return true;
	}
	default:
		return false;
	}
}
