// bench/placement_sweep.cu - issue 36: which workloads' DRAM figures depend on where their
// arrays lie in physical memory? Three kernels over arrays of S MB each, for S from 1 to 64
// (the H200's L2 is 60 MiB): a read-modify-write (out[i] += in[i]), a write of a new array
// (out[i] = 2 in[i]) and a gather-accumulate (out[i] += in[7i mod n]), each in its own NVTX
// range "KIND S" so that a tool's records name the kind and size. PAD_MB of device memory
// allocated before the arrays moves them by that much: bench/placement_sweep.sh runs the
// program at many pads under rangeprof and ncu and prints, per kind and size, each tool's
// DRAM read and write over the places (min, max, spread), from which the rule for "near the
// L2's capacity" (doc/measurements.md, "Placement") is taken.
// Build: nvcc -O2 -arch=sm_90 -std=c++17 bench/placement_sweep.cu -o placement_sweep
// Run:   ./placement_sweep [ITER [PAD_MB]]  (prints a checksum, which a tool must not change)
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include "../tests/gpu/l2_kernels.cuh"   // CK

#define FOR_EACH(i, n) \
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (n); i += (size_t)gridDim.x * blockDim.x)

__global__ void rmw(const float *in, float *out, size_t n)
{
	FOR_EACH(i, n)
	out[i] += in[i];
}

__global__ void write_new(const float *in, float *out, size_t n)
{
	FOR_EACH(i, n)
	out[i] = 2.0f * in[i];
}

// l2_kernels.cuh's gather over n floats rather than its fixed 16 MB.
__global__ void gather_sized(const float *in, float *out, size_t n)
{
	FOR_EACH(i, n)
	out[i] += in[(size_t)(((unsigned long long)i * 7) % n)];
}

static const int SIZES_MB[] = { 1, 2, 4, 8, 12, 16, 20, 24, 28, 32, 40, 48, 64 };

int main(int argc, char **argv)
{
	int iterations = argc > 1 ? atoi(argv[1]) : 1;
	size_t pad_mb = argc > 2 ? (size_t)atol(argv[2]) : 0;
	if (iterations < 1 || iterations > 100) {
		fprintf(stderr, "usage: placement_sweep [ITER 1-100 [PAD_MB]]\n");
		return 2;
	}
	void *pad = nullptr;
	if (pad_mb)
		CK(cudaMalloc(&pad, pad_mb << 20));
	const size_t most = (size_t)64 << 20;
	float *in, *out;
	CK(cudaMalloc(&in, most));
	CK(cudaMalloc(&out, most));
	CK(cudaMemset(in, 0, most));
	CK(cudaMemset(out, 0, most));
	float one = 1.0f;
	for (size_t i = 0; i < most / 4; i += 4096)   // a few nonzero inputs, for the checksum
		CK(cudaMemcpy(in + i, &one, 4, cudaMemcpyHostToDevice));
	char name[32];
	for (int it = 0; it < iterations; it++)
		for (int mb : SIZES_MB) {
			size_t n = (size_t)mb << 18;
			snprintf(name, sizeof name, "rmw %d", mb);
			nvtxRangePushA(name);
			rmw<<<1056, 256>>>(in, out, n);
			nvtxRangePop();
			snprintf(name, sizeof name, "write %d", mb);
			nvtxRangePushA(name);
			write_new<<<1056, 256>>>(in, out, n);
			nvtxRangePop();
			snprintf(name, sizeof name, "gather %d", mb);
			nvtxRangePushA(name);
			gather_sized<<<1056, 256>>>(in, out, n);
			nvtxRangePop();
		}
	CK(cudaDeviceSynchronize());
	float *h = (float *)malloc(most);
	CK(cudaMemcpy(h, out, most, cudaMemcpyDeviceToHost));
	double sum = 0;
	for (size_t i = 0; i < most / 4; i++)
		sum += h[i];
	printf("placement_sweep checksum %.0f\n", sum);
	free(h);
	if (pad)
		CK(cudaFree(pad));
	return 0;
}
