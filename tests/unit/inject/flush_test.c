/* tests/unit/inject/flush_test.c - the cache flush's set-up and launch (inject/flush.c) with
 * the driver replaced by stand-ins (no GPU): what its callers decide on, the code of each
 * failure, and the driver's error in the set-up's message. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "collector/api.h"
#include "common/error.h"
#include "inject/flush.h"

static CUresult launched = CUDA_SUCCESS, allocated = CUDA_SUCCESS;
static unsigned launches;

static CUresult fake_device(CUdevice *d, int ordinal)
{
	*d = ordinal;
	return CUDA_SUCCESS;
}

static CUresult no_device(CUdevice *d, int ordinal)
{
	(void)d, (void)ordinal;
	return CUDA_ERROR_NO_DEVICE;
}

static CUresult fake_attribute(int *v, CUdevice_attribute a, CUdevice d)
{
	(void)d;
	*v = a == CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE ? 50 << 20 : 132;
	return CUDA_SUCCESS;
}

static CUresult fake_load(CUmodule *m, const void *image)
{
	cr_assert(strstr(image, ".entry rangeprof_l2_flush"));
	*m = (CUmodule)(uintptr_t)0x10;
	return CUDA_SUCCESS;
}

static CUresult fake_function(CUfunction *f, CUmodule m, const char *name)
{
	(void)m, (void)name;
	*f = (CUfunction)(uintptr_t)0x20;
	return CUDA_SUCCESS;
}

static CUresult fake_alloc(CUdeviceptr *p, size_t bytes)
{
	(void)bytes;
	*p = 0x1000;
	return allocated;
}

static CUresult fake_free(CUdeviceptr p)
{
	(void)p;
	return CUDA_SUCCESS;
}

static CUresult fake_unload(CUmodule m)
{
	(void)m;
	return CUDA_SUCCESS;
}

static CUresult fake_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
			    unsigned by, unsigned bz, unsigned smem, CUstream s, void **params,
			    void **extra)
{
	(void)f, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)smem, (void)s;
	(void)params, (void)extra;
	launches++;
	return launched;
}

static CUresult fake_error_name(CUresult r, const char **name)
{
	*name = r == CUDA_ERROR_NO_DEVICE ? "CUDA_ERROR_NO_DEVICE" :
		r == CUDA_ERROR_OUT_OF_MEMORY ? "CUDA_ERROR_OUT_OF_MEMORY" : "CUDA_ERROR_OTHER";
	return CUDA_SUCCESS;
}

static void stand_ins(void)
{
	rp_api.cuDeviceGet = fake_device;
	rp_api.cuDeviceGetAttribute = fake_attribute;
	rp_api.cuModuleLoadData = fake_load;
	rp_api.cuModuleGetFunction = fake_function;
	rp_api.cuMemAlloc = fake_alloc;
	rp_api.cuMemFree = fake_free;
	rp_api.cuModuleUnload = fake_unload;
	rp_api.cuLaunchKernel = fake_launch;
	rp_api.cuGetErrorName = fake_error_name;
}

Test(flush, a_flush_set_up_launches_one_kernel, .init = stand_ins)
{
	struct inject_flush f = { 0 };
	char err[256] = "";
	cr_assert_eq(inject_flush_init(&f, 0, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(f.words, 2 * (size_t)(50 << 20) / 16, "twice the L2 in 16-byte words");
	cr_assert_eq(f.blocks, 132, "one block per SM");
	cr_assert_eq(inject_flush_launch(&f, NULL), 0);
	cr_assert_eq(launches, 1);
	inject_flush_finish(&f);
}

/* The launch fails with the code the measuring loop reports ("flushing the L2 failed"). */
Test(flush, a_refused_launch_is_rp_err_flush, .init = stand_ins)
{
	struct inject_flush f = { 0 };
	char err[256] = "";
	cr_assert_eq(inject_flush_init(&f, 0, err, sizeof(err)), 0, "%s", err);
	launched = CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
	cr_assert_eq(inject_flush_launch(&f, NULL), RP_ERR_FLUSH);
	inject_flush_finish(&f);
}

/* A set-up that fails is a context measured in no longer: the message names the driver's
 * error, the code is a plain failure. */
Test(flush, a_failed_set_up_names_the_drivers_error, .init = stand_ins)
{
	struct inject_flush f = { 0 };
	char err[256] = "";
	rp_api.cuDeviceGet = no_device;
	cr_assert_eq(inject_flush_init(&f, 0, err, sizeof(err)), RP_ERR_FAILED);
	cr_assert_str_eq(err, "L2 flush: device attributes: CUDA_ERROR_NO_DEVICE");
	rp_api.cuDeviceGet = fake_device;
	allocated = CUDA_ERROR_OUT_OF_MEMORY;
	cr_assert_eq(inject_flush_init(&f, 0, err, sizeof(err)), RP_ERR_FAILED);
	cr_assert(strstr(err, "L2 flush: cuMemAlloc(") && strstr(err, "CUDA_ERROR_OUT_OF_MEMORY"),
		  "%s", err);
	allocated = CUDA_SUCCESS;
	inject_flush_finish(&f);
}
