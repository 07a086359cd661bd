// bench/tiny_launches.cu - host cost per kernel launch: N tiny launches outside any NVTX
// range, timed on the host. Run plain and under rangeprof with an include that never
// matches: the difference is what an unselected launch costs. REPEATS timed loops, one line
// each: under --setup early the first loop overlaps the device's set-up on rangeprof's
// thread (its cost to the application), the later ones show the steady state.
// Results (H200): +0.1 to +0.8 us per unselected launch on a ~4 us launch (session 1); an
// enabled range profiler adds roughly 0.5-1 us more, and the loop that overlaps the early
// set-up runs at 6.1-8.4 us per launch (session 4) (doc/measurements.md, "Unselected
// launches; an idle profiler").
// Cited by tests/gpu/run.sh (section 5, benchmarks, and the early set-up race) and behind
// README.md's "What measuring costs": unselected launches and --setup lazy.
// Build (no GPU needed): meson setup build-bench -Dbench=true && meson compile -C build-bench
// bench, giving build-bench/bench/tiny_launches; or
//   nvcc -O2 -arch=sm_90 -std=c++17 bench/tiny_launches.cu -o tiny_launches
// Run, on the GPU machine: ./tiny_launches [N=100000] [REPEATS=1], plain and as
//   rangeprof -q -o /dev/null --nvtx-include never/ ./tiny_launches 100000 3
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

__global__ void tiny(int *x) { if (threadIdx.x == 0 && x[0] == 12345) x[1] = 1; }

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 100000;
	int repeats = argc > 2 ? atoi(argv[2]) : 1;
	int *x;
	cudaMalloc(&x, 8);
	cudaMemset(x, 0, 8);
	for (int i = 0; i < 1000; i++) tiny<<<1, 32>>>(x); // warm up
	cudaDeviceSynchronize();
	// The GPU's time for the loop too: with 100 000 launches the launch queue fills, and a
	// per-kernel cost on the GPU side (a profiler's, issue 35 item 6) would read as host
	// cost. gpu_us_per_launch near host_us_per_launch says the loop waits on the GPU.
	cudaEvent_t e0, e1;
	cudaEventCreate(&e0);
	cudaEventCreate(&e1);
	for (int r = 0; r < repeats; r++) {
		cudaEventRecord(e0);
		auto t0 = std::chrono::steady_clock::now();
		for (int i = 0; i < n; i++) tiny<<<1, 32>>>(x);
		auto t1 = std::chrono::steady_clock::now();
		cudaEventRecord(e1);
		cudaDeviceSynchronize();
		auto t2 = std::chrono::steady_clock::now();
		float gpu_ms = 0;
		cudaEventElapsedTime(&gpu_ms, e0, e1);
		double us = std::chrono::duration<double, std::micro>(t1 - t0).count() / n;
		double drain_ms = std::chrono::duration<double, std::milli>(t2 - t1).count();
		printf("launches=%d host_us_per_launch=%.3f gpu_us_per_launch=%.3f drain_ms=%.2f\n",
		       n, us, gpu_ms * 1e3 / n, drain_ms);
	}
	return 0;
}
