// bench/mem_scaling.cu - a program that holds N GiB of touched device memory, then
// launches a 64 MB in-place kernel 3 times inside the NVTX range "k" (issue 6's
// benchmark). Prints a checksum so that results can be compared with and without
// rangeprof. Usage: mem_scaling GIB
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

__global__ void inplace_scale(float *x, size_t n)
{
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	if (i < n)
		x[i] = x[i] * 1.0001f + 1.0f;
}

int main(int argc, char **argv)
{
	double gib = argc > 1 ? atof(argv[1]) : 0;
	std::vector<void *> held;
	size_t chunk = 1ull << 30, want = (size_t)(gib * (1ull << 30));
	for (size_t got = 0; got < want; got += chunk) {
		void *p;
		size_t n = want - got < chunk ? want - got : chunk;
		if (cudaMalloc(&p, n) != cudaSuccess) { fprintf(stderr, "cudaMalloc failed at %zu GiB\n", got >> 30); return 1; }
		cudaMemset(p, 1, n);
		held.push_back(p);
	}
	size_t n = 16 << 20;
	float *x;
	cudaMalloc(&x, n * sizeof(float));
	std::vector<float> h(n, 1.0f);
	cudaMemcpy(x, h.data(), n * sizeof(float), cudaMemcpyHostToDevice);
	cudaDeviceSynchronize();
	for (int i = 0; i < 3; i++) {
		nvtxRangePushA("k");
		inplace_scale<<<(unsigned)((n + 255) / 256), 256>>>(x, n);
		nvtxRangePop();
	}
	cudaMemcpy(h.data(), x, n * sizeof(float), cudaMemcpyDeviceToHost);
	double sum = 0;
	for (size_t i = 0; i < n; i += 4099) sum += h[i];
	printf("held %.0f GiB checksum %.6f\n", gib, sum);
	return 0;
}
