// tests/gpu/l2_kernels.cuh - what tests/gpu/l2_resident.cu and bench/dirty_before.cu
// share: the CUDA error check, the issue's gather + read-modify-write over two 16 MB
// arrays (tests/gpu/l2_rmw.cu's kernel) and a kernel that reads and writes nothing, whose
// DRAM writes are the lines left dirty before it.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CK(call)                                                                          \
	do {                                                                              \
		cudaError_t err_ = (call);                                                \
		if (err_ != cudaSuccess) {                                                \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,      \
			        cudaGetErrorName(err_));                                  \
			exit(1);                                                          \
		}                                                                         \
	} while (0)

static const unsigned GATHER_N = 4u << 20;  // floats in 16 MB

__global__ void gather(const float *in, float *out)
{
	for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < GATHER_N; i += gridDim.x * blockDim.x)
		out[i] = in[(unsigned)(((unsigned long long)i * 7) % GATHER_N)] + out[i];
}

// Reads n 16-byte words; stores only if their fold equals an impossible constant.
__global__ void readonly(const uint4 *in, size_t n, unsigned *sink)
{
	unsigned x = 0;
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
		uint4 v = in[i];
		x ^= v.x ^ v.y ^ v.z ^ v.w;
	}
	if (x == 0x7e57ab1eu)
		*sink = x;
}
