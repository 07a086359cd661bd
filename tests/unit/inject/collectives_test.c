/* tests/unit/inject/collectives_test.c - kernels that wait for peers are known by name. */
#include <criterion/criterion.h>

#include "inject/collectives.h"

Test(collectives, nccl_kernels_are_collectives)
{
	const char *why = NULL;
	cr_assert(inject_collective_kernel("ncclKernel_AllReduce_RING_LL_Sum_float", &why));
	cr_assert_str_eq(why, "NCCL");
	cr_assert(inject_collective_kernel("ncclDevKernel_AllGather_RING_LL", NULL));
	cr_assert(inject_collective_kernel("_Z29ncclDevKernel_SendRecv_ncclFunc", NULL));
}

Test(collectives, pytorch_vllm_and_nvshmem_collectives_are_found)
{
	cr_assert(inject_collective_kernel("void c10d::symmetric_memory::one_shot_all_reduce_kernel"
				       "<float, 16>(float**, float*, unsigned long)", NULL));
	cr_assert(inject_collective_kernel("void c10d::symmetric_memory::barrier_kernel(unsigned**)",
				       NULL));
	cr_assert(inject_collective_kernel("void vllm::cross_device_reduce_1stage<half, 8>(...)", NULL));
	cr_assert(inject_collective_kernel("tensorrt_llm::kernels::oneShotAllReduceKernel", NULL));
	cr_assert(inject_collective_kernel("nvshmemi_barrier_all_kernel", NULL));
	cr_assert(inject_collective_kernel("multimem_all_gather_kernel", NULL));
}

Test(collectives, ordinary_kernels_are_not)
{
	cr_assert_not(inject_collective_kernel("vadd(float const*, float const*, float*, int)", NULL));
	cr_assert_not(inject_collective_kernel("small_reduce_kernel", NULL));
	cr_assert_not(inject_collective_kernel("fused_lncclamp", NULL));
	cr_assert_not(inject_collective_kernel("void at::native::reduce_kernel<512, 1>(...)", NULL));
	cr_assert_not(inject_collective_kernel("ampere_sgemm_128x64_nn", NULL));
	cr_assert_not(inject_collective_kernel("", NULL));
}
