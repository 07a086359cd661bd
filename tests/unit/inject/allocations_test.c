/* tests/unit/inject/allocations_test.c - the allocation calls that returned feed
 * memory/track.c (what verification hashes and the reach takes the application's memory
 * from); failed calls and other calls leave it alone. At ENTER, the bytes an allocation
 * asks for (session.c's kept copies go only where it would leave the device short). The
 * driver is not needed: the callback data is built here as CUPTI hands it over. */
#include <criterion/criterion.h>
#include <stdint.h>
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

/* At ENTER (session.c's kept copies): the bytes each call asks for, from its parameters. */
Test(allocations, an_allocations_enter_says_the_bytes_it_asks_for)
{
	size_t bytes = 0;
	cuMemAlloc_v2_params alloc = { .bytesize = 4096 };
	cr_assert(inject_allocations_take_memory(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &alloc,
						 &bytes));
	cr_assert_eq(bytes, 4096);
	cuMemAllocPitch_v2_params pitched = { .WidthInBytes = 500, .Height = 10 };
	cr_assert(inject_allocations_take_memory(CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2,
						 &pitched, &bytes));
	cr_assert_eq(bytes, 5000, "at least the width times the rows; the pitch is not known yet");
	pitched = (cuMemAllocPitch_v2_params){ .WidthInBytes = SIZE_MAX / 2, .Height = 3 };
	cr_assert(inject_allocations_take_memory(CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2,
						 &pitched, &bytes));
	cr_assert_eq(bytes, SIZE_MAX, "a product past size_t is not taken for a small one");
	cuMemAllocManaged_params managed = { .bytesize = 7 };
	cr_assert(inject_allocations_take_memory(CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged,
						 &managed, &bytes));
	cr_assert_eq(bytes, 7);
	cuMemAllocAsync_params async = { .bytesize = 8 };
	cr_assert(inject_allocations_take_memory(CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz,
						 &async, &bytes));
	cr_assert_eq(bytes, 8);
	cuMemAllocFromPoolAsync_params pool = { .bytesize = 9 };
	cr_assert(inject_allocations_take_memory(CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync,
						 &pool, &bytes));
	cr_assert_eq(bytes, 9);
	cuMemCreate_params created = { .size = (size_t)2 << 20 };
	cr_assert(inject_allocations_take_memory(CUPTI_DRIVER_TRACE_CBID_cuMemCreate, &created,
						 &bytes));
	cr_assert_eq(bytes, (size_t)2 << 20);
	cuArrayCreate_v2_params array = { 0 };
	cr_assert(inject_allocations_take_memory(CUPTI_DRIVER_TRACE_CBID_cuArrayCreate_v2, &array,
						 &bytes));
	cr_assert_eq(bytes, SIZE_MAX, "an array's size is its format's: not said");
	cuMemGetInfo_v2_params info = { 0 };
	cr_assert(inject_allocations_take_memory(CUPTI_DRIVER_TRACE_CBID_cuMemGetInfo_v2, &info,
						 &bytes));
	cr_assert_eq(bytes, SIZE_MAX, "the application may size what it takes from the answer");
	bytes = 1;
	cuMemFree_v2_params freed = { 0 };
	cr_assert_not(inject_allocations_take_memory(CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, &freed,
						     &bytes));
	cr_assert_eq(bytes, 1, "a free takes nothing and says nothing");
}
