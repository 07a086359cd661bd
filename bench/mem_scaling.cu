// bench/mem_scaling.cu - a program that holds N GiB of touched device memory, then
// launches a 64 MB in-place kernel 3 times inside the NVTX range "k" (issue 6's
// benchmark). Prints a checksum so that results can be compared with and without
// rangeprof. Measures nothing itself: bench/mem_scaling.sh runs it under rangeprof and ncu
// and prints what a measured launch costs against the memory held.
// Results (H200, session 2, with the set-up at context creation since withdrawn): the first
// launch 20.6 ms at 0 GiB to 143.8 ms at 120 GiB (the verification hash, ~1 ms per GiB, once
// per kernel), later ones 11.8-12.4 ms at every size (doc/measurements.md, "Held memory, save
// and reach").
// Run by tests/gpu/run.sh (check mem-scaling-same, unless QUICK=1); behind README.md's
// "about 1 ms per GiB held" and "131 s per launch at 120 GiB" (the checkpoint, before).
// Build (no GPU needed): meson setup build-bench -Dbench=true && meson compile -C build-bench
// bench, giving build-bench/bench/mem_scaling; or
//   nvcc -O2 -arch=sm_90 -std=c++17 bench/mem_scaling.cu -o mem_scaling
// Run, on the GPU machine: bench/mem_scaling.sh 0 16 48 70 120 (which builds it), or
// ./mem_scaling GIB alone.
#include <chrono>
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

// Milliseconds since main began (the phases' times, on stderr: where a tool's growth with
// the memory held goes, issue 35 item 8).
static double ms_since(std::chrono::steady_clock::time_point t0)
{
	return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

int main(int argc, char **argv)
{
	auto t0 = std::chrono::steady_clock::now();
	double gib = argc > 1 ? atof(argv[1]) : 0;
	cudaFree(0);
	double t_init = ms_since(t0);
	std::vector<void *> held;
	size_t chunk = 1ull << 30, want = (size_t)(gib * (1ull << 30));
	for (size_t got = 0; got < want; got += chunk) {
		void *p;
		size_t n = want - got < chunk ? want - got : chunk;
		if (cudaMalloc(&p, n) != cudaSuccess) { fprintf(stderr, "cudaMalloc failed at %zu GiB\n", got >> 30); return 1; }
		cudaMemset(p, 1, n);
		held.push_back(p);
	}
	cudaDeviceSynchronize();
	double t_held = ms_since(t0);
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
	cudaDeviceSynchronize();
	double t_launched = ms_since(t0);
	cudaMemcpy(h.data(), x, n * sizeof(float), cudaMemcpyDeviceToHost);
	double sum = 0;
	for (size_t i = 0; i < n; i += 4099) sum += h[i];
	printf("held %.0f GiB checksum %.6f\n", gib, sum);
	fprintf(stderr, "mem_scaling phases (ms from main): context %.1f, memory held %.1f, "
		"launches done %.1f, end of main %.1f\n", t_init, t_held, t_launched, ms_since(t0));
	return 0;
}
