// tests/gpu/l2_residual.cu - issue 11 item 5 probe: how many dirty lines does rangeprof's L2
// flush leave behind? Before each run rangeprof restores every allocation the launch can
// reach with a device-to-device copy (which leaves the copied lines dirty in the L2), then
// reads 2x the L2 size (inject/session/flush.c). A line the sweep does not evict is written back
// when the measured kernel evicts it, and counted as the kernel's DRAM writes.
// read_only takes an `out` it never writes (the launch can reach it, so it is restored,
// dirty, every run) and sums `in` (IN_MB, default 16) into one 32-bit word per block added
// atomically into `result`: its own DRAM writes are ~0, so its dram__bytes_write.sum is
// the flush's residue as far as reading `in` evicts it (all of it once `in` is larger
// than the L2). ncu, whose cache control writes the L2 back and invalidates it, reads ~0.
// Usage: l2_residual [ITER=8] [IN_MB=16] [OUT_MB=16]; ITER launches inside NVTX range
// "res". Prints a checksum that must not change under rangeprof (integer sums: no
// rounding, whatever order the blocks add in).
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

__global__ void read_only(const uint4 *in, size_t words, float *out, unsigned *result)
{
	(void)out; // reachable, never written: restored dirty by rangeprof before every run
	unsigned s = 0;
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < words;
	     i += (size_t)gridDim.x * blockDim.x) {
		uint4 v = in[i];
		s += v.x + v.y + v.z + v.w;
	}
	for (int o = 16; o > 0; o >>= 1)
		s += __shfl_down_sync(0xffffffffu, s, o);
	__shared__ unsigned warp_sums[32];
	if ((threadIdx.x & 31) == 0)
		warp_sums[threadIdx.x >> 5] = s;
	__syncthreads();
	if (threadIdx.x == 0) {
		unsigned t = 0;
		for (unsigned w = 0; w < blockDim.x / 32; w++)
			t += warp_sums[w];
		atomicAdd(result, t);
	}
}

int main(int argc, char **argv)
{
	int iterations = argc > 1 ? atoi(argv[1]) : 8;
	size_t in_bytes = (size_t)(argc > 2 ? atoi(argv[2]) : 16) << 20;
	size_t out_bytes = (size_t)(argc > 3 ? atoi(argv[3]) : 16) << 20;
	int sms = 0;
	cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
	uint4 *in;
	float *out;
	unsigned *result;
	if (cudaMalloc(&in, in_bytes) || cudaMalloc(&out, out_bytes) ||
	    cudaMalloc(&result, sizeof(unsigned))) {
		fprintf(stderr, "cudaMalloc failed\n");
		return 1;
	}
	unsigned *h = (unsigned *)malloc(in_bytes);
	for (size_t i = 0; i < in_bytes / 4; i++)
		h[i] = (unsigned)(i % 13);
	cudaMemcpy(in, h, in_bytes, cudaMemcpyHostToDevice);
	free(h);
	cudaMemset(out, 0, out_bytes);
	cudaMemset(result, 0, sizeof(unsigned));
	cudaDeviceSynchronize();
	for (int it = 0; it < iterations; it++) {
		nvtxRangePushA("res");
		read_only<<<8 * (sms > 0 ? sms : 132), 256>>>(in, in_bytes / 16, out, result);
		nvtxRangePop();
	}
	unsigned r = 0;
	cudaMemcpy(&r, result, sizeof(r), cudaMemcpyDeviceToHost);
	printf("residual checksum %u (in %zu MB, out %zu MB, %d launches)\n", r, in_bytes >> 20,
	       out_bytes >> 20, iterations);
	return cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;
}
