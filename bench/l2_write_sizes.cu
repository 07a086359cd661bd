// bench/l2_write_sizes.cu - issue 22: is rangeprof's extra DRAM write traffic on L2-resident
// kernels (+9 to +11 % over ncu's on l2_rmw's 16 MB read-modify-write, every range-profiler
// variant of bench/l2_write_probe.sh, session 9) a fixed amount per measured range - the
// profiler's own traffic, or a write-back of something it does at a range's end - or a
// share of what the kernel dirties? The same read-modify-write (out[i] += in[i]) over
// arrays of 1, 4, 16 and 32 MB each (L2-resident up to 16 MB: two arrays in the H200's 60
// MB L2), a kernel that touches no memory (spin, ~20 us), an empty one, and one that only
// reads 64 MB (more than the L2: it evicts whatever was there, and any write it is charged
// with is a line left dirty before it began), each launched
// ITER times, each kind in its own NVTX range of its name. bench/l2_write_sizes.sh measures
// them with rangeprof and with ncu and prints each one's DRAM writes both ways, with the
// difference in bytes: a constant difference (the empty and spin kernels included) is the
// instrument's own; one that grows with the size is the kernel's.
// Build: nvcc -O2 -arch=sm_90 -std=c++17 bench/l2_write_sizes.cu -o l2_write_sizes
// Run:   ./l2_write_sizes [ITER [PAD_MB]]  (prints a checksum, which rangeprof must not
//        change; PAD_MB of device memory allocated before the arrays moves them)
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include "../tests/gpu/l2_kernels.cuh"   // CK

// One kernel per size, so that each is its own name in both tools' output.
template <int MB>
__global__ void rmw(const float *in, float *out)
{
	const unsigned n = (unsigned)MB << 18;   // floats in MB megabytes
	for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		out[i] += in[i];
}

// Reads both 32 MB arrays (64 MB, more than the L2) and writes nothing: whatever DRAM
// writes it is charged with are lines someone else left dirty in the L2 before it began.
__global__ void read_only(const float *a, const float *b, int *sink)
{
	const unsigned n = 32u << 18;
	float s = 0;
	for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		s += a[i] + b[i];
	if (s == -1.0f)
		*sink = 1;
}

// tests/gpu/l2_rmw.cu's kernel, the issue's: a gather and a read-modify-write over 16 MB.
__global__ void gather_rmw(const float *in, float *out)
{
	const unsigned n = 16u << 18;
	for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		out[i] = in[(unsigned)(((unsigned long long)i * 7) % n)] + out[i];
}

__global__ void spin(long long cycles, int *sink)
{
	long long start = clock64();
	while (clock64() - start < cycles)
		;
	if (cycles < 0)
		*sink = 1;
}

__global__ void empty() {}

template <int MB>
static void run(const char *name, const float *in, float *out, int iterations)
{
	for (int it = 0; it < iterations; it++) {
		nvtxRangePushA(name);
		rmw<MB><<<1056, 256>>>(in, out);
		nvtxRangePop();
	}
}

int main(int argc, char **argv)
{
	int iterations = argc > 1 ? atoi(argv[1]) : 5;
	// PAD_MB allocated first, so that the arrays lie that much further on: does the gap
	// between the tools follow where the arrays are?
	size_t pad_mb = argc > 2 ? (size_t)atol(argv[2]) : 0;
	void *pad = nullptr;
	if (pad_mb)
		CK(cudaMalloc(&pad, pad_mb << 20));
	const size_t most = (size_t)32 << 20;
	float *in, *out;
	int *sink;
	CK(cudaMalloc(&in, most));
	CK(cudaMalloc(&out, most));
	CK(cudaMalloc(&sink, sizeof(int)));
	CK(cudaMemset(in, 0, most));
	CK(cudaMemset(out, 0, most));
	float one = 1.0f;
	for (size_t i = 0; i < most / 4; i += 4096)   // a few nonzero inputs, for the checksum
		CK(cudaMemcpy(in + i, &one, 4, cudaMemcpyHostToDevice));
	for (int it = 0; it < iterations; it++) {
		nvtxRangePushA("empty");
		empty<<<1, 32>>>();
		nvtxRangePop();
		nvtxRangePushA("spin");
		spin<<<132, 32>>>(40000, sink);   // ~20 us at 1.98 GHz
		nvtxRangePop();
		nvtxRangePushA("read_only");
		read_only<<<1056, 256>>>(in, out, sink);
		nvtxRangePop();
	}
	for (int it = 0; it < iterations; it++) {
		nvtxRangePushA("gather");
		gather_rmw<<<1056, 256>>>(in, out);
		nvtxRangePop();
	}
	run<1>("w1", in, out, iterations);
	run<4>("w4", in, out, iterations);
	run<16>("w16", in, out, iterations);
	run<32>("w32", in, out, iterations);
	CK(cudaDeviceSynchronize());
	float *h = (float *)malloc(most);
	CK(cudaMemcpy(h, out, most, cudaMemcpyDeviceToHost));
	double sum = 0;
	for (size_t i = 0; i < most / 4; i++)
		sum += h[i];
	printf("l2_write_sizes checksum %.0f\n", sum);
	free(h);
	if (pad)
		CK(cudaFree(pad));
	return 0;
}
