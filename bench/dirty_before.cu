// bench/dirty_before.cu - issue 22: does a line left dirty in the L2 before a kernel add
// its bytes to the kernel's DRAM writes? ncu charges a kernel that only reads twice the L2
// with 18-200 KB of writes (median ~37 KB: lines left dirty before it), rangeprof with 3 KB,
// and on L2-resident kernels that write rangeprof's DRAM writes are 3-6 % below ncu's over
// the same places (bench/NOTES.md, session 11). Here the program flushes the L2 itself (a
// read sweep of twice the L2, as rangeprof's flush), then writes DIRTY KB of whole lines
// of a scratch buffer, then runs the measured kernel: l2_resident's gather (two 16 MB
// arrays) or readonly (reads twice the L2, writes nothing), in NVTX range
// "<kernel>/d<DIRTY>". Measured with ncu --cache-control none, profiling those two kernels
// only: the slope of their DRAM writes against DIRTY is what a dirty line costs them.
// Build: nvcc -O2 -arch=sm_90 -std=c++17 bench/dirty_before.cu -o dirty_before
// Run:   ./dirty_before [ITER]   (bench/dirty_before.sh runs it under ncu)
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include "../tests/gpu/l2_kernels.cuh"

__global__ void dirty(unsigned *p, unsigned words, unsigned seed)
{
	for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < words; i += gridDim.x * blockDim.x)
		p[i] = i ^ seed;
}

int main(int argc, char **argv)
{
	int iterations = argc > 1 ? atoi(argv[1]) : 5;
	int l2 = 0;
	CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
	const size_t sweep_bytes = 2 * (size_t)l2;
	unsigned char *sweep_buf, *arrays, *scratch;
	unsigned *sink;
	CK(cudaMalloc(&sweep_buf, sweep_bytes));
	CK(cudaMalloc(&arrays, sweep_bytes));   // gather's two arrays, and readonly's input
	CK(cudaMalloc(&scratch, 1 << 20));
	CK(cudaMalloc(&sink, 4));
	CK(cudaMemset(sweep_buf, 1, sweep_bytes));
	CK(cudaMemset(arrays, 0, sweep_bytes));
	const unsigned dirty_kb[] = { 0, 32, 64, 128, 256, 512 };
	char name[64];
	for (int it = 0; it < iterations; it++)
		for (int k = 0; k < 2; k++)
			for (unsigned d : dirty_kb) {
				sweep<<<132, 1024>>>((const uint4 *)sweep_buf, sweep_bytes / 16, sink);
				if (d)
					dirty<<<132, 256>>>((unsigned *)scratch, d * 256, (unsigned)it);
				snprintf(name, sizeof(name), "%s/d%u", k ? "readonly" : "gather", d);
				nvtxRangePushA(name);
				if (k)
					readonly<<<1056, 256>>>((const uint4 *)arrays, sweep_bytes / 16, sink);
				else
					gather<<<1056, 256>>>((const float *)arrays, (float *)arrays + GATHER_N);
				nvtxRangePop();
			}
	CK(cudaGetLastError());
	CK(cudaDeviceSynchronize());
	printf("dirty_before done\n");
	return 0;
}
