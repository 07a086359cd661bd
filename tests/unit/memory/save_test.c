/* tests/unit/memory/save_test.c - saving a launch's reach and putting it back
 * (memory/save.c), with the driver replaced by stand-ins (no GPU): "device" memory is host
 * memory here, and copies are memcpy. What is checked is what the callers decide on: the
 * code of each failure, and the driver's error name in the message. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "collector/api.h"
#include "common/error.h"
#include "memory/memory.h"

static bool device_full, copies_fail;
static unsigned copies;

static CUresult fake_alloc(CUdeviceptr *p, size_t bytes)
{
	if (device_full)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*p = (CUdeviceptr)(uintptr_t)malloc(bytes);
	return CUDA_SUCCESS;
}

static CUresult fake_free(CUdeviceptr p)
{
	free((void *)(uintptr_t)p);
	return CUDA_SUCCESS;
}

static CUresult fake_copy(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
	(void)s;
	if (copies_fail)
		return CUDA_ERROR_ILLEGAL_ADDRESS;
	copies++;
	memcpy((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
	return CUDA_SUCCESS;
}

static CUresult fake_sync(CUstream s)
{
	(void)s;
	return CUDA_SUCCESS;
}

static CUresult fake_error_name(CUresult r, const char **name)
{
	*name = r == CUDA_ERROR_ILLEGAL_ADDRESS ? "CUDA_ERROR_ILLEGAL_ADDRESS" : "CUDA_ERROR_OTHER";
	return CUDA_SUCCESS;
}

static void stand_ins(void)
{
	rp_api.cuMemAlloc = fake_alloc;
	rp_api.cuMemFree = fake_free;
	rp_api.cuMemcpyAsync = fake_copy;
	rp_api.cuStreamSynchronize = fake_sync;
	rp_api.cuGetErrorName = fake_error_name;
	device_full = copies_fail = false;
	copies = 0;
}

static char data[4096];
static struct mem_range range = { 0, sizeof(data) };

static struct mem_reach one_range(void)
{
	range.base = (CUdeviceptr)(uintptr_t)data;
	return (struct mem_reach){ .ranges = &range, .count = 1, .capacity = 1,
				   .bytes = sizeof(data) };
}

Test(save, what_is_saved_is_put_back, .init = stand_ins)
{
	struct mem_reach reach = one_range();
	struct mem_backup b = { 0 };
	char err[256] = "";
	memset(data, 0x5a, sizeof(data));
	cr_assert_eq(mem_save(&b, &reach, NULL, err, sizeof(err)), 0, "%s", err);
	cr_assert_not(b.on_host);
	memset(data, 0, sizeof(data));
	cr_assert_eq(mem_restore(&b, &reach, NULL, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(data[0], 0x5a);
	cr_assert_eq(data[sizeof(data) - 1], 0x5a);
	mem_backup_trim(&b, 0);
}

/* No room anywhere is a code of its own; the message says how much and where. */
Test(save, no_room_on_the_device_or_within_the_host_bound_is_no_memory, .init = stand_ins)
{
	device_full = true;
	struct mem_reach reach = one_range();
	reach.bytes = mem_backup_host_limit() + 1;
	struct mem_backup b = { 0 };
	char err[256] = "";
	cr_assert_eq(mem_save(&b, &reach, NULL, err, sizeof(err)), RP_ERR_NO_MEMORY);
	cr_assert(strstr(err, "no room on the device and more than the"), "%s", err);
	cr_assert_eq(copies, 0);
}

Test(save, a_failed_copy_fails_and_names_the_drivers_error, .init = stand_ins)
{
	struct mem_reach reach = one_range();
	struct mem_backup b = { 0 };
	char err[256] = "";
	copies_fail = true;
	cr_assert_eq(mem_save(&b, &reach, NULL, err, sizeof(err)), RP_ERR_FAILED);
	cr_assert(strstr(err, "saving 4096 bytes at ") && strstr(err, "CUDA_ERROR_ILLEGAL_ADDRESS"),
		  "%s", err);
	copies_fail = false;
	cr_assert_eq(mem_save(&b, &reach, NULL, err, sizeof(err)), 0, "%s", err);
	copies_fail = true;
	cr_assert_eq(mem_restore(&b, &reach, NULL, err, sizeof(err)), RP_ERR_RESTORE);
	cr_assert_str_eq(err, "CUDA_ERROR_ILLEGAL_ADDRESS", "the name alone: the caller says "
			 "what was being put back");
	mem_backup_trim(&b, 0);
}
