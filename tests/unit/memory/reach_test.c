/* tests/unit/memory/reach_test.c - which memory a launch reaches, with the driver replaced
 * by stand-ins (no GPU): "device" memory is host memory here, described by a table of fake
 * allocations, and cuMemcpy reads it directly. The cases are the ones the H200 showed:
 * a word in an unused field of a parameter struct (stack garbage) pointing into memory
 * the application never allocated must not be saved (its copy faulted in cuMemcpyAsync). */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "collector/api.h"
#include "common/error.h"
#include "memory/memory.h"

struct fake_allocation {
	CUdeviceptr base;
	size_t size;
	unsigned type;
};
static struct fake_allocation fakes[8];
static size_t fake_count;
/* The kernel's parameters: four pointer-sized words. */
static uint64_t params[4];

static const struct fake_allocation *fake_at(CUdeviceptr p)
{
	for (size_t i = 0; i < fake_count; i++)
		if (p >= fakes[i].base && p < fakes[i].base + fakes[i].size)
			return &fakes[i];
	return NULL;
}

static CUresult fake_attributes(unsigned n, CUpointer_attribute *attrs, void **data, CUdeviceptr p)
{
	const struct fake_allocation *a = fake_at(p);
	for (unsigned k = 0; k < n; k++) {
		switch (attrs[k]) {
		case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: *(unsigned *)data[k] = a ? a->type : 0; break;
		case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *(CUdeviceptr *)data[k] = a ? a->base : 0; break;
		case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *(size_t *)data[k] = a ? a->size : 0; break;
		default: break;
		}
	}
	return CUDA_SUCCESS;
}

static CUresult fake_address_range(CUdeviceptr *base, size_t *size, CUdeviceptr p)
{
	const struct fake_allocation *a = fake_at(p);
	if (!a)
		return CUDA_ERROR_INVALID_VALUE;
	*base = a->base;
	*size = a->size;
	return CUDA_SUCCESS;
}

static CUresult fake_param_info(CUfunction f, size_t i, size_t *offset, size_t *size)
{
	(void)f;
	if (i >= 4)
		return CUDA_ERROR_INVALID_VALUE;
	*offset = 8 * i;
	*size = 8;
	return CUDA_SUCCESS;
}

static CUresult fake_module(CUmodule *m, CUfunction f)
{
	(void)f;
	*m = (CUmodule)(uintptr_t)0x1234;
	return CUDA_SUCCESS;
}

static CUresult fake_copy(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
	memcpy((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
	return CUDA_SUCCESS;
}

static void stand_ins(void)
{
	rp_api.cuPointerGetAttributes = fake_attributes;
	rp_api.cuMemGetAddressRange = fake_address_range;
	rp_api.cuFuncGetParamInfo = fake_param_info;
	rp_api.cuFuncGetModule = fake_module;
	rp_api.cuMemcpy = fake_copy;
	fake_count = 0;
	memset(params, 0, sizeof(params));
}

/* An allocation the driver describes; tracked when the application made it. */
static CUdeviceptr allocation(void *memory, size_t size, unsigned type, bool tracked)
{
	CUdeviceptr base = (CUdeviceptr)(uintptr_t)memory;
	fakes[fake_count++] = (struct fake_allocation){ base, size, type };
	if (tracked)
		mem_track_add(base, size);
	return base;
}

static void collect(struct mem_reach *reach)
{
	void *kernel_params[4] = { &params[0], &params[1], &params[2], &params[3] };
	cr_assert_eq(mem_reach_collect(reach, (CUfunction)(uintptr_t)0x5678, kernel_params, NULL),
		     0, "reach unknown: %s", reach->unknown);
	cr_assert_eq(reach->unknown[0], '\0', "reach unknown: %s", reach->unknown);
}

static bool saved(const struct mem_reach *reach, CUdeviceptr base, size_t size)
{
	for (size_t i = 0; i < reach->count; i++)
		if (reach->ranges[i].base == base && reach->ranges[i].size == size)
			return true;
	return false;
}

Test(reach, takes_whole_allocations_the_parameters_point_into, .init = stand_ins)
{
	static char data[8192];
	CUdeviceptr base = allocation(data, sizeof(data), CU_MEMORYTYPE_DEVICE, true);
	params[1] = base + 100; /* into the middle */
	struct mem_reach reach;
	collect(&reach);
	cr_assert_eq(reach.count, 1);
	cr_assert(saved(&reach, base, sizeof(data)));
	cr_assert_eq(reach.bytes, sizeof(data));
	mem_reach_finish(&reach);
	mem_track_remove(base);
}

Test(reach, ignores_words_into_memory_the_application_never_allocated, .init = stand_ins)
{
	static char mine[4096], drivers[65536], pageable[1 << 20];
	CUdeviceptr m = allocation(mine, sizeof(mine), CU_MEMORYTYPE_DEVICE, true);
	/* CUPTI's or the driver's own device memory: described, never tracked. */
	CUdeviceptr d = allocation(drivers, sizeof(drivers), CU_MEMORYTYPE_DEVICE, false);
	/* With HMM, pageable host memory is described as host memory of some range. */
	CUdeviceptr h = allocation(pageable, sizeof(pageable), CU_MEMORYTYPE_HOST, false);
	params[0] = m;
	params[1] = d + 0x18a;  /* stack garbage, as in PyTorch's TensorInfo */
	params[2] = h + 64;
	struct mem_reach reach;
	collect(&reach);
	cr_assert_eq(reach.count, 1, "saved %zu ranges", reach.count);
	cr_assert(saved(&reach, m, sizeof(mine)));
	mem_reach_finish(&reach);
	mem_track_remove(m);
}

Test(reach, takes_host_memory_only_as_the_application_registered_it, .init = stand_ins)
{
	static char pinned[4096], region[16384];
	CUdeviceptr p = allocation(pinned, sizeof(pinned), CU_MEMORYTYPE_HOST, true);
	/* Registered: the first 4 KiB of a region the driver describes whole. */
	CUdeviceptr r = allocation(region, sizeof(region), CU_MEMORYTYPE_HOST, false);
	mem_track_add(r, 4096);
	params[0] = p + 8;
	params[1] = r + 8;
	struct mem_reach reach;
	collect(&reach);
	cr_assert_eq(reach.count, 1, "saved %zu ranges", reach.count);
	cr_assert(saved(&reach, p, sizeof(pinned)));
	mem_reach_finish(&reach);
	mem_track_remove(p);
	mem_track_remove(r);
}

Test(reach, follows_pointers_stored_in_small_allocations, .init = stand_ins)
{
	static uint64_t list[4];
	static char a[2048], b[4096], untracked[512];
	CUdeviceptr l = allocation(list, sizeof(list), CU_MEMORYTYPE_DEVICE, true);
	CUdeviceptr pa = allocation(a, sizeof(a), CU_MEMORYTYPE_DEVICE, true);
	CUdeviceptr pb = allocation(b, sizeof(b), CU_MEMORYTYPE_DEVICE, true);
	CUdeviceptr pu = allocation(untracked, sizeof(untracked), CU_MEMORYTYPE_DEVICE, false);
	list[0] = pa;
	list[1] = 42;           /* data */
	list[2] = pb + 16;
	list[3] = pu;           /* not the application's */
	params[3] = l;
	struct mem_reach reach;
	collect(&reach);
	cr_assert_eq(reach.count, 3, "saved %zu ranges", reach.count);
	cr_assert(saved(&reach, l, sizeof(list)));
	cr_assert(saved(&reach, pa, sizeof(a)));
	cr_assert(saved(&reach, pb, sizeof(b)));
	mem_reach_finish(&reach);
	mem_track_remove(l);
	mem_track_remove(pa);
	mem_track_remove(pb);
}

static unsigned copies;

static CUresult counted_copy(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
	copies++;
	return fake_copy(dst, src, n);
}

/* At a launch's ENTER its stream's earlier work may still run: the direct reach reads no
 * device memory, so the pointer list's targets are not in it (range replay checks them
 * at the range's end, inject/range/range_memory.c). */
Test(reach, the_direct_reach_reads_no_device_memory, .init = stand_ins)
{
	static uint64_t list[1];
	static char a[2048];
	CUdeviceptr l = allocation(list, sizeof(list), CU_MEMORYTYPE_DEVICE, true);
	CUdeviceptr pa = allocation(a, sizeof(a), CU_MEMORYTYPE_DEVICE, true);
	list[0] = pa;
	params[3] = l;
	rp_api.cuMemcpy = counted_copy;
	copies = 0;
	void *kernel_params[4] = { &params[0], &params[1], &params[2], &params[3] };
	struct mem_reach reach;
	cr_assert_eq(mem_reach_collect_direct(&reach, (CUfunction)(uintptr_t)0x5678,
					      kernel_params, NULL), 0, "%s", reach.unknown);
	cr_assert_eq(copies, 0, "device memory read");
	cr_assert(saved(&reach, l, sizeof(list)));
	cr_assert_not(saved(&reach, pa, sizeof(a)), "a pointer stored in device memory");
	mem_reach_finish(&reach);
	collect(&reach);
	cr_assert_eq(copies, 1, "the whole reach reads the small list");
	cr_assert(saved(&reach, pa, sizeof(a)));
	mem_reach_finish(&reach);
	mem_track_remove(l);
	mem_track_remove(pa);
}

static CUresult no_module(CUmodule *m, CUfunction f)
{
	(void)m, (void)f;
	return CUDA_ERROR_INVALID_HANDLE;
}

static CUresult no_library(CUlibrary *l, CUkernel k)
{
	(void)l, (void)k;
	return CUDA_ERROR_INVALID_HANDLE;
}

/* A reach that cannot be known fails with a code and the reason in unknown: the caller
 * decides on the code (it falls back to the full checkpoint) and says the reason. */
Test(reach, a_reach_that_cannot_be_known_fails_with_the_reason_in_unknown, .init = stand_ins)
{
	struct mem_reach reach;
	cr_assert_eq(mem_reach_collect(&reach, (CUfunction)(uintptr_t)0x5678, NULL, NULL),
		     RP_ERR_FAILED);
	cr_assert_str_eq(reach.unknown, "launch without its parameters");
	mem_reach_finish(&reach);
	rp_api.cuFuncGetModule = no_module;
	rp_api.cuKernelGetLibrary = no_library;
	void *kernel_params[4] = { &params[0], &params[1], &params[2], &params[3] };
	cr_assert_eq(mem_reach_collect(&reach, (CUfunction)(uintptr_t)0x5678, kernel_params, NULL),
		     RP_ERR_FAILED);
	cr_assert(strstr(reach.unknown, "neither cuFuncGetModule nor cuKernelGetLibrary"), "%s",
		  reach.unknown);
	mem_reach_finish(&reach);
}
