// bench/write_tail.cu - issue 22: does the L2 write dirty lines back to DRAM while the
// DRAM is otherwise idle, so that a kernel's DRAM writes depend on how long it (or the
// measured range around it) lasts after its last store? If so, two tools whose ranges end
// at other moments after the kernel's work count other write-backs of the same kernel.
// Each kernel does its work, then the last block to finish waits WAIT us (%globaltimer)
// without touching memory; its DRAM writes against WAIT show the write-back during idle
// time. Kernels (NVTX range "<kind>/w<WAIT>/p<place>", the arrays at PLACES places 2 MB
// apart in one allocation, as tests/gpu/l2_resident.cu does, since the figures follow the
// arrays' physical place):
//   overwrite  writes half the L2 (tests/gpu/l2_resident.cu's), reads nothing
//   gather     tests/gpu/l2_kernels.cuh's gather + read-modify-write over two 16 MB arrays
// Build: nvcc -O2 -arch=sm_90 -std=c++17 bench/write_tail.cu -o write_tail
// Run:   ./write_tail [ITER [PLACES]]   (bench/write_tail.sh runs it under ncu and rangeprof)
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include "../tests/gpu/l2_kernels.cuh"

__device__ unsigned finished_blocks;

static __device__ unsigned long long globaltimer()
{
	unsigned long long t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

// The last block to get here waits wait_ns, then resets the count for the next launch.
// Every launch takes the atomic (one line), whatever its wait, so that WAIT 0 differs from
// the others by the wait alone.
static __device__ void last_block_waits(unsigned long long wait_ns)
{
	__syncthreads();
	if (threadIdx.x)
		return;
	__threadfence();
	if (atomicAdd(&finished_blocks, 1u) != gridDim.x - 1)
		return;
	unsigned long long start = globaltimer();
	while (globaltimer() - start < wait_ns)
		;
	finished_blocks = 0;
}

__global__ void overwrite(unsigned *out, unsigned n, unsigned long long wait_ns)
{
	for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		out[i] = i ^ (unsigned)wait_ns;
	last_block_waits(wait_ns);
}

__global__ void gather_wait(const float *in, float *out, unsigned long long wait_ns)
{
	for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < GATHER_N; i += gridDim.x * blockDim.x)
		out[i] = in[(unsigned)(((unsigned long long)i * 7) % GATHER_N)] + out[i];
	last_block_waits(wait_ns);
}

int main(int argc, char **argv)
{
	int iterations = argc > 1 ? atoi(argv[1]) : 3;
	int places = argc > 2 ? atoi(argv[2]) : 4;
	if (iterations < 1 || iterations > 100 || places < 1 || places > 64) {
		fprintf(stderr, "write_tail: ITER must be 1-100 and PLACES 1-64 (got '%s', '%s')\n",
			argc > 1 ? argv[1] : "3", argc > 2 ? argv[2] : "4");
		return 2;
	}
	int l2 = 0, sms = 0;
	CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
	CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
	const size_t step = 2u << 20;
	const size_t footprint = (size_t)l2 / 2 > 2 * (size_t)GATHER_N * 4 ? (size_t)l2 / 2 :
									     2 * (size_t)GATHER_N * 4;
	unsigned char *base;
	CK(cudaMalloc(&base, footprint + (size_t)places * step));
	CK(cudaMemset(base, 0, footprint + (size_t)places * step));
	const unsigned waits_us[] = { 0, 1, 2, 5, 10, 20, 50, 100 };
	char name[64];
	for (int it = 0; it < iterations; it++)
		for (int p = 0; p < places; p++)
			for (unsigned w : waits_us) {
				unsigned char *at = base + (size_t)p * step;
				snprintf(name, sizeof name, "overwrite/w%u/p%02d", w, p);
				nvtxRangePushA(name);
				overwrite<<<sms * 2, 1024>>>((unsigned *)at, (unsigned)(l2 / 2 / 4),
							     w * 1000ull);
				CK(cudaGetLastError());
				nvtxRangePop();
				snprintf(name, sizeof name, "gather/w%u/p%02d", w, p);
				nvtxRangePushA(name);
				gather_wait<<<sms * 2, 1024>>>((const float *)at,
							       (float *)(at + (size_t)GATHER_N * 4),
							       w * 1000ull);
				CK(cudaGetLastError());
				nvtxRangePop();
				CK(cudaDeviceSynchronize());
			}
	printf("write_tail: %d iterations, %d places, L2 %d bytes\n", iterations, places, l2);
	return 0;
}
