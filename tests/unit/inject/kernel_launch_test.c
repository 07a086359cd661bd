/* tests/unit/inject/kernel_launch_test.c - launching a decoded kernel launch again
 * (inject/kernel/kernel_launch.c) with the driver replaced by stand-ins (no GPU): the call each kind
 * of launch makes, and what a refused relaunch gives its callers (a code, and the driver's
 * error name for the message). */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "collector/api.h"
#include "common/error.h"
#include "inject/inject.h"

static CUresult answer = CUDA_SUCCESS;
static const char *called;
static CUstream stream_seen;

static CUresult fake_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
			    unsigned by, unsigned bz, unsigned smem, CUstream s, void **params,
			    void **extra)
{
	(void)f, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)smem;
	(void)params, (void)extra;
	called = "cuLaunchKernel";
	stream_seen = s;
	return answer;
}

static CUresult fake_cooperative(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
				 unsigned bx, unsigned by, unsigned bz, unsigned smem, CUstream s,
				 void **params)
{
	(void)f, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)smem;
	(void)params;
	called = "cuLaunchCooperativeKernel";
	stream_seen = s;
	return answer;
}

static CUresult fake_error_name(CUresult r, const char **name)
{
	*name = r == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES ? "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES" :
		"CUDA_ERROR_OTHER";
	return CUDA_SUCCESS;
}

static void stand_ins(void)
{
	rp_api.cuLaunchKernel = fake_launch;
	rp_api.cuLaunchCooperativeKernel = fake_cooperative;
	rp_api.cuGetErrorName = fake_error_name;
	answer = CUDA_SUCCESS;
	called = NULL;
}

static const CUstream stream = (CUstream)(uintptr_t)0x5000;

Test(launches, a_decoded_launch_is_launched_again_by_the_same_call, .init = stand_ins)
{
	void *params[1] = { NULL };
	cuLaunchKernel_params p = { .f = (CUfunction)(uintptr_t)0x10, .gridDimX = 4,
				    .gridDimY = 1, .gridDimZ = 1, .blockDimX = 128,
				    .blockDimY = 1, .blockDimZ = 1, .hStream = stream,
				    .kernelParams = params };
	struct inject_launch l = { 0 };
	cr_assert(inject_kernel_launch_decode(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &p, &l));
	char err[128] = "";
	cr_assert_eq(inject_kernel_launch_again(&l, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(called, "cuLaunchKernel");
	cr_assert_eq(stream_seen, stream);
	cuLaunchCooperativeKernel_params c = { .f = (CUfunction)(uintptr_t)0x10, .gridDimX = 1,
					       .gridDimY = 1, .gridDimZ = 1, .blockDimX = 32,
					       .blockDimY = 1, .blockDimZ = 1, .hStream = stream,
					       .kernelParams = params };
	cr_assert(inject_kernel_launch_decode(CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, &c, &l));
	cr_assert_eq(inject_kernel_launch_again(&l, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(called, "cuLaunchCooperativeKernel");
}

/* The measuring loop reports the code ("launching the workload again failed"); a graph's
 * node run outside the graph names the driver's error to the user. */
Test(launches, a_refused_relaunch_is_rp_err_relaunch_with_the_drivers_name, .init = stand_ins)
{
	void *params[1] = { NULL };
	cuLaunchKernel_params p = { .f = (CUfunction)(uintptr_t)0x10, .gridDimX = 1,
				    .gridDimY = 1, .gridDimZ = 1, .blockDimX = 1024,
				    .blockDimY = 2, .blockDimZ = 1, .kernelParams = params };
	struct inject_launch l = { 0 };
	cr_assert(inject_kernel_launch_decode(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &p, &l));
	answer = CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
	char err[128] = "";
	cr_assert_eq(inject_kernel_launch_again(&l, err, sizeof(err)), RP_ERR_RELAUNCH);
	cr_assert_str_eq(err, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES");
}
