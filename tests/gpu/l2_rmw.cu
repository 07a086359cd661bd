// tests/gpu/l2_rmw.cu - issue 11 item 5: a kernel that reads, modifies and writes an output
// that fits in the L2 (out[i] = in[(i * 7) % n] + out[i], 16 MB arrays). Its DRAM writes
// during the kernel are the dirty lines the L2 has to evict, which depends on the state the
// flush leaves the L2 in (issue 11 reported ~18 % above ncu's; on the H200 in this suite
// +10.7 to +11.8 % in session 3, with ncu's own launches spread over 100 %, and -7.2 to
// +0.4 % since the flush change of session 4: doc/measurements.md, "Agreement with ncu").
// Those writes follow where its arrays lie physically, which each tool moves (+14.5 % in
// session 10, -12 to +17 % with padding): the suite judges its time and reads here, and
// L2-resident writes over many places with l2_resident.cu (doc/measurements.md, "DRAM
// writes of L2-resident kernels"). Launched ITER times (first
// argument) inside NVTX range "rmw"; prints a checksum that must not change under
// rangeprof.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

__global__ void rmw(const float *in, float *out, unsigned n)
{
	for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		out[i] = in[(unsigned)(((unsigned long long)i * 7) % n)] + out[i];
}

int main(int argc, char **argv)
{
	int iterations = argc > 1 ? atoi(argv[1]) : 4;
	const unsigned n = 4u << 20; // 16 MB of float each
	float *in, *out;
	if (cudaMalloc(&in, n * 4) || cudaMalloc(&out, n * 4)) {
		fprintf(stderr, "cudaMalloc failed\n");
		return 1;
	}
	float *h = (float *)malloc(n * 4);
	for (unsigned i = 0; i < n; i++)
		h[i] = (float)(i % 13);
	cudaMemcpy(in, h, n * 4, cudaMemcpyHostToDevice);
	cudaMemset(out, 0, n * 4);
	for (int it = 0; it < iterations; it++) {
		nvtxRangePushA("rmw");
		rmw<<<1056, 256>>>(in, out, n);
		nvtxRangePop();
	}
	cudaMemcpy(h, out, n * 4, cudaMemcpyDeviceToHost);
	double sum = 0;
	for (unsigned i = 0; i < n; i++)
		sum += h[i];
	printf("rmw checksum %.0f\n", sum);
	free(h);
	return cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;
}
