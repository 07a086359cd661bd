// tests/gpu/l2_kernels.cuh - what tests/gpu/l2_resident.cu and bench/dirty_before.cu
// share: the CUDA error check, the issue's gather + read-modify-write over two 16 MB
// arrays (tests/gpu/l2_rmw.cu's kernel), a kernel that reads and writes nothing, whose
// DRAM writes are the lines left dirty before it, and a flush of the program's own
// (inject/session/flush.c's sweep without its code segments, and its discard of the swept lines).
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

// inject/session/flush.c's sweep without its code segments: every 16-byte word of twice the L2
// read with ld.global.cg, so that the L2 holds only clean lines of this buffer afterwards.
__global__ void sweep(const uint4 *buf, size_t n, unsigned *sink)
{
	unsigned x = 0;
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
		uint4 v = __ldcg(buf + i);
		x ^= v.x ^ v.y ^ v.z ^ v.w;
	}
	if (x == 0x7e57ab1eu)
		*sink = x;
}

// What inject/session/flush.c does after its sweep (since session 12): the lines from line `from`
// of buf on discarded (invalidated without a write-back), so that the L2 holds no valid
// line of the sweep. Launched after sweep on the same stream, which orders the two as
// flush.c's grid barrier does within its one kernel.
__global__ void discard_l2(unsigned char *buf, size_t from, size_t lines)
{
	for (size_t i = from + blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < lines; i += (size_t)gridDim.x * blockDim.x)
		asm volatile("discard.global.L2 [%0], 128;" : : "l"(buf + i * 128) : "memory");
}
