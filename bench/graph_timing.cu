// bench/graph_timing.cu - the GPU duration of a CUDA graph launch with no profiler attached,
// as an independent reference for --graph-profiling graph: the chain of tests/gpu/graphs.cu
// capture (add_one, scale_add, accumulate on 16M floats), each launch after an L2 read sweep
// as rangeprof and ncu do, timed by CUDA events around the launch; then the three kernels
// launched plainly, timed the same way. 21 launches of each, the first not counted; prints
// the median, min and max.
// Results (H200): median 159.1-159.4 us for the graph, 161.5-162.0 us for the 3 kernels
// plainly (session 3, two runs); 160.5 us (session 5) (doc/measurements.md, "Graph mode:
// time and counters").
// Cited by tests/gpu/run.sh, which judges rangeprof's graph-mode time against it (within
// 2 %), and behind README.md's "the time agrees with the application's own event timing
// within 0.6 %".
// Build (no GPU needed): meson setup build-bench -Dbench=true && meson compile -C build-bench
// bench, giving build-bench/bench/graph_timing; or
//   nvcc -O2 -arch=sm_90 -std=c++17 bench/graph_timing.cu -o graph_timing
// Run, on the GPU machine: ./graph_timing, and under rangeprof
//   rangeprof -o gt.jsonl --graph-profiling graph --runs 5 ./graph_timing
#include <algorithm>
#include <cstdio>
#include <vector>

#define FOR_EACH(i, n) for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (n); i += (size_t)gridDim.x * blockDim.x)
__global__ void add_one(float *x, size_t n) { FOR_EACH(i, n) x[i] += 1.0f; }
__global__ void scale_add(float *y, const float *x, size_t n, float s) { FOR_EACH(i, n) y[i] = y[i] * s + x[i]; }
__global__ void accumulate(float *z, const float *y, size_t n) { FOR_EACH(i, n) z[i] += y[i]; }
__global__ void sweep(const int4 *p, size_t n, int *sink)
{
	int acc = 0;
	FOR_EACH(i, n) { int4 v = __ldcg(p + i); acc ^= v.x ^ v.y ^ v.z ^ v.w; }
	if (acc == 0x7e57ab1e) *sink = acc;
}

int main()
{
	const size_t n = 16u << 20, sweep_words = (size_t)(120u << 20) / 16;
	float *x, *y, *z; int4 *buf; int *sink;
	cudaMalloc(&x, n * 4); cudaMalloc(&y, n * 4); cudaMalloc(&z, n * 4);
	cudaMalloc(&buf, sweep_words * 16); cudaMalloc(&sink, 4);
	cudaMemset(x, 0, n * 4); cudaMemset(y, 0, n * 4); cudaMemset(z, 0, n * 4);
	cudaStream_t s; cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
	auto chain = [&] {
		add_one<<<1056, 256, 0, s>>>(x, n);
		scale_add<<<1056, 256, 0, s>>>(y, x, n, 0.5f);
		accumulate<<<1056, 256, 0, s>>>(z, y, n);
	};
	cudaGraph_t g; cudaGraphExec_t e;
	cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal); chain(); cudaStreamEndCapture(s, &g);
	cudaGraphInstantiate(&e, g, 0);
	cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
	for (int what = 0; what < 2; what++) {
		std::vector<float> us;
		for (int i = 0; i < 21; i++) {
			sweep<<<528, 256, 0, s>>>(buf, sweep_words, sink);
			cudaEventRecord(a, s);
			if (what == 0) cudaGraphLaunch(e, s); else chain();
			cudaEventRecord(b, s);
			cudaStreamSynchronize(s);
			float ms; cudaEventElapsedTime(&ms, a, b);
			if (i) us.push_back(ms * 1e3f);
		}
		std::sort(us.begin(), us.end());
		printf("%s: median %.1f us (min %.1f, max %.1f, %zu launches, first not counted)\n",
		       what == 0 ? "graph launch, events around cudaGraphLaunch" : "the 3 kernels launched plainly",
		       us[us.size() / 2], us.front(), us.back(), us.size());
	}
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
