/* tests/unit/memory/layout_test.c - memory/layout.c: a kernel's parameter layout is asked of
 * the driver once and kept (range recording copies every launch's parameters), asked again
 * after a module's unload, and a failure is said and not kept. */
#include <criterion/criterion.h>
#include <stdint.h>

#include "collector/api.h"
#include "memory/memory.h"

static unsigned asked;          /* cuFuncGetParamInfo calls */
static unsigned kernel_asked;   /* cuKernelGetParamInfo calls */
static size_t parameters = 3;

/* Parameter i of 8 bytes at 8 * i, for `parameters` parameters; a CUkernel handle (odd
 * address here) is invalid to cuFuncGetParamInfo, as the driver's are. */
static CUresult func_param_info(CUfunction f, size_t i, size_t *offset, size_t *size)
{
	asked++;
	if ((uintptr_t)f & 1)
		return CUDA_ERROR_INVALID_HANDLE;
	if ((uintptr_t)f == 0xbad0)
		return CUDA_ERROR_NOT_SUPPORTED;
	if (i >= parameters)
		return CUDA_ERROR_INVALID_VALUE;
	*offset = 8 * i;
	*size = i == 2 ? 4 : 8;
	return CUDA_SUCCESS;
}

static CUresult kernel_param_info(CUkernel k, size_t i, size_t *offset, size_t *size)
{
	(void)k;
	kernel_asked++;
	if (i >= 2)
		return CUDA_ERROR_INVALID_VALUE;
	*offset = 16 * i;
	*size = 16;
	return CUDA_SUCCESS;
}

static void stand_ins(void)
{
	rp_api.cuFuncGetParamInfo = func_param_info;
	rp_api.cuKernelGetParamInfo = kernel_param_info;
	rp_api.cuGetErrorName = NULL;
	asked = kernel_asked = 0;
	parameters = 3;
}

Test(layout, is_asked_of_the_driver_once_per_function, .init = stand_ins)
{
	const struct mem_param_layout *a, *b;
	CUresult error;
	cr_assert_eq(mem_param_layout_of((CUfunction)(uintptr_t)0x1000, &a, &error), 0);
	cr_assert_eq(a->count, 3);
	cr_assert_eq(a->total, 20, "the end of the furthest parameter: %zu", a->total);
	cr_assert_eq(a->offsets[2], 16);
	cr_assert_eq(a->sizes[2], 4);
	cr_assert_eq(asked, 4, "three parameters and the call past the last: %u", asked);
	cr_assert_eq(mem_param_layout_of((CUfunction)(uintptr_t)0x1000, &b, &error), 0);
	cr_assert_eq(b, a);
	cr_assert_eq(asked, 4, "asked again: %u", asked);
	/* Another function is its own. */
	cr_assert_eq(mem_param_layout_of((CUfunction)(uintptr_t)0x2000, &b, &error), 0);
	cr_assert_neq(b, a);
	cr_assert_eq(asked, 8);
}

Test(layout, a_kernel_handle_is_asked_through_cuKernelGetParamInfo, .init = stand_ins)
{
	const struct mem_param_layout *l;
	CUresult error;
	cr_assert_eq(mem_param_layout_of((CUfunction)(uintptr_t)0x3001, &l, &error), 0);
	cr_assert_eq(l->count, 2);
	cr_assert_eq(l->total, 32);
	cr_assert_eq(kernel_asked, 3);
	cr_assert_eq(mem_param_layout_of((CUfunction)(uintptr_t)0x3001, &l, &error), 0);
	cr_assert_eq(kernel_asked, 3);
}

Test(layout, an_unload_makes_every_layout_asked_again, .init = stand_ins)
{
	const struct mem_param_layout *before, *after;
	CUresult error;
	cr_assert_eq(mem_param_layout_of((CUfunction)(uintptr_t)0x1000, &before, &error), 0);
	mem_param_layouts_forget();
	/* The handle now names a function of another module, of two parameters. */
	parameters = 2;
	cr_assert_eq(mem_param_layout_of((CUfunction)(uintptr_t)0x1000, &after, &error), 0);
	cr_assert_eq(after->count, 2);
	cr_assert_eq(asked, 4 + 3);
	/* The layout handed out before stays readable (another thread may hold it). */
	cr_assert_eq(before->count, 3);
}

Test(layout, a_failure_is_said_and_not_kept, .init = stand_ins)
{
	const struct mem_param_layout *l = NULL;
	CUresult error;
	cr_assert_eq(mem_param_layout_of((CUfunction)(uintptr_t)0xbad0, &l, &error), RP_ERR_FAILED);
	cr_assert_eq(error, CUDA_ERROR_NOT_SUPPORTED);
	cr_assert_null(l);
	cr_assert_eq(mem_param_layout_of((CUfunction)(uintptr_t)0xbad0, &l, &error), RP_ERR_FAILED);
	cr_assert_eq(asked, 2, "a failure is asked again: %u", asked);
}
