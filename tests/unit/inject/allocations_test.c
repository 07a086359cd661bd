/* tests/unit/inject/allocations_test.c - the allocation calls that returned feed
 * memory/track.c (what verification hashes and the reach takes the application's memory
 * from); failed calls and other calls leave it alone. The driver is not needed: the
 * callback data is built here as CUPTI hands it over. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "inject/callback/allocations.h"
#include "memory/memory.h"

static CUpti_CallbackData call(const void *params, CUresult *result)
{
	return (CUpti_CallbackData){ .callbackSite = CUPTI_API_EXIT, .functionParams = params,
				     .functionReturnValue = result };
}

static size_t tracked(CUdeviceptr base, size_t *size)
{
	struct mem_range *r = NULL;
	size_t n = 0, found = 0;
	cr_assert_eq(mem_track_snapshot(&r, &n), 0);
	for (size_t i = 0; i < n; i++)
		if (r[i].base == base) {
			found++;
			*size = r[i].size;
		}
	free(r);
	return found;
}

Test(allocations, a_returned_allocation_is_tracked_and_its_free_untracks_it)
{
	CUresult ok = CUDA_SUCCESS;
	CUdeviceptr p = 0x7f0000100000;
	cuMemAlloc_v2_params alloc = { .dptr = &p, .bytesize = 4096 };
	CUpti_CallbackData cb = call(&alloc, &ok);
	cr_assert(inject_allocations_on_call(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &cb));
	size_t size = 0;
	cr_assert_eq(tracked(p, &size), 1);
	cr_assert_eq(size, 4096);
	cuMemFree_v2_params free_params = { .dptr = p };
	cb = call(&free_params, &ok);
	cr_assert(inject_allocations_on_call(CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, &cb));
	cr_assert_eq(tracked(p, &size), 0);
}

Test(allocations, a_failed_allocation_is_not_tracked)
{
	CUresult failed = CUDA_ERROR_OUT_OF_MEMORY;
	CUdeviceptr p = 0x7f0000200000;
	cuMemAlloc_v2_params alloc = { .dptr = &p, .bytesize = 1 << 20 };
	CUpti_CallbackData cb = call(&alloc, &failed);
	cr_assert(inject_allocations_on_call(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &cb),
		  "still an allocation call");
	size_t size;
	cr_assert_eq(tracked(p, &size), 0);
}

Test(allocations, pitched_memory_counts_pitch_times_height)
{
	CUresult ok = CUDA_SUCCESS;
	CUdeviceptr p = 0x7f0000300000;
	size_t pitch = 512;
	cuMemAllocPitch_v2_params alloc = { .dptr = &p, .pPitch = &pitch, .WidthInBytes = 500,
					    .Height = 10, .ElementSizeBytes = 4 };
	CUpti_CallbackData cb = call(&alloc, &ok);
	cr_assert(inject_allocations_on_call(CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2, &cb));
	size_t size = 0;
	cr_assert_eq(tracked(p, &size), 1);
	cr_assert_eq(size, 5120, "pitch 512 x 10 rows");
}

Test(allocations, other_calls_are_not_allocations)
{
	CUresult ok = CUDA_SUCCESS;
	CUpti_CallbackData cb = call(NULL, &ok);
	cr_assert_not(inject_allocations_on_call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &cb));
}
