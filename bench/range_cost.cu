// bench/range_cost.cu - what range replay (--replay-mode range, issue 20) costs per measured
// range, against the range's own GPU time: the target is "range GPU time x runs + at most
// 5 ms" per range execution (cost_ms.total of its summary record, doc/records.md), and a
// cost that does not grow with the memory the application holds.
// The range "step" holds 10 memory-bound kernels (each ~25-35 us on an H200: 12M floats read
// from one of three 48 MiB buffers, written to the next), launched ITERATIONS times. Before
// each range, outside it, an L2 sweep (a read of 128 MiB) as rangeprof's flush before each run,
// and CUDA events just outside the range time it; the program prints the median, min and
// max of those times over the ranges after the first:
//   range gpu time: median X us (min A, max B) over N ranges
// With IDLE_GIB > 0 it first allocates and touches that much device memory that the range
// never reaches (40 on the H200): the cost must not grow with it.
// It also times, on the host (CLOCK_MONOTONIC), what issuing the range's 10 launches takes
// (from just after the push to just before the pop: under rangeprof, the recording of each
// call), and afterwards 3 batches of 2000 empty-kernel launches outside any range (an
// unselected launch's cost in range mode); plain and under rangeprof, the difference is
// rangeprof's:
//   range host issue time: median X us over N ranges
//   range host total time: median X us over N ranges   (push to just after the pop:
//     under rangeprof the whole measurement, to set beside its summaries' cost_ms.total)
//   unselected range host issue time after a synchronisation: median X us over N ranges
//     (the same 10 launches in a range "other" that step/ does not select, each after a
//     cudaDeviceSynchronize as rangeprof's begin of a selected range does: under rangeprof,
//     step's issue time less this is what recording the 10 calls costs)
//   unselected launch host time: median X us per launch (3 x 2000)
// Prints a checksum too. Under rangeprof the printed times hold the replays and mean nothing;
// take them from a plain run.
// Build (no GPU needed):
//   nvcc -O2 -arch=sm_90 -std=c++17 bench/range_cost.cu -o range_cost
// Run, on the GPU machine (tests/gpu/run.sh section 6 does this and judges it with
// tests/gpu/check_range.py cost):
//   ./range_cost 10 0 >plain.txt
//   rangeprof -q -o rc.jsonl --replay-mode range --runs 20 --nvtx-include step/ ./range_cost 10 0
//   python3 tests/gpu/check_range.py cost plain.txt rc.jsonl --extra-ms 5
//   the same with IDLE_GIB 40 (bench/NOTES.md, "Range replay cost").
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <time.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#define CK(call)                                                                         \
	do {                                                                             \
		cudaError_t err_ = (call);                                               \
		if (err_ != cudaSuccess) {                                               \
			fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", __FILE__, __LINE__, \
			        #call, cudaGetErrorName(err_), cudaGetErrorString(err_)); \
			exit(1);                                                         \
		}                                                                        \
	} while (0)

static const size_t N = (size_t)12 << 20;  // floats per buffer: 48 MiB
static const size_t SWEEP = (size_t)32 << 20;  // floats swept: 128 MiB, over twice the H200's L2
static const unsigned GRID = 132 * 8, BLOCK = 256;
static const int KERNELS = 10, BUFFERS = 3;

#define FOR_EACH(i, n) \
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (n); i += (size_t)gridDim.x * blockDim.x)

__global__ void fill(float *p, size_t n, float base)
{
	FOR_EACH(i, n)
	p[i] = base + (float)(i % 29) * 0.125f;
}

// out = in * a + b: one read and one write of 48 MiB.
__global__ void step_kernel(float *out, const float *in, size_t n, float a, float b)
{
	FOR_EACH(i, n)
	out[i] = in[i] * a + b;
}

// Reads the whole sweep buffer; writes one word only where the sum is impossible, so that
// the reads are not optimised away and the L2 is left clean.
__global__ void sweep(const float *p, size_t n, float *sink)
{
	float s = 0;
	FOR_EACH(i, n)
	s += p[i];
	if (s == -1.0f)
		*sink = s;
}

__global__ void empty() {}

// The range's 10 launches, each buffer written from the one before it.
static void issue_step(float *const *buf)
{
	for (int k = 0; k < KERNELS; k++)
		step_kernel<<<GRID, BLOCK>>>(buf[(k + 1) % BUFFERS], buf[k % BUFFERS], N, 0.999f,
		                             0.001f * (float)(k + 1));
}

static double now_us()
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static double median(std::vector<double> v)
{
	std::sort(v.begin(), v.end());
	size_t n = v.size();
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	int iterations = argc > 1 ? atoi(argv[1]) : 10;
	double idle_gib = argc > 2 ? atof(argv[2]) : 0;
	if (iterations < 2 || idle_gib < 0) {
		fprintf(stderr, "usage: range_cost [ITERATIONS >= 2] [IDLE_GIB]\n");
		return 2;
	}
	void *idle = nullptr;
	if (idle_gib > 0) {
		size_t bytes = (size_t)(idle_gib * (double)(1ull << 30));
		CK(cudaMalloc(&idle, bytes));
		CK(cudaMemset(idle, 1, bytes));
	}
	float *buf[BUFFERS], *sweep_buf, *sink;
	for (int b = 0; b < BUFFERS; b++) {
		CK(cudaMalloc(&buf[b], N * sizeof(float)));
		fill<<<GRID, BLOCK>>>(buf[b], N, (float)b);
	}
	CK(cudaMalloc(&sweep_buf, SWEEP * sizeof(float)));
	CK(cudaMalloc(&sink, sizeof(float)));
	fill<<<GRID, BLOCK>>>(sweep_buf, SWEEP, 0.0f);
	CK(cudaGetLastError());
	cudaEvent_t start, stop;
	CK(cudaEventCreate(&start));
	CK(cudaEventCreate(&stop));
	// The kernels once, outside the range: module loading is not in any range.
	step_kernel<<<GRID, BLOCK>>>(buf[1], buf[0], N, 1.0f, 0.0f);
	sweep<<<GRID, BLOCK>>>(sweep_buf, SWEEP, sink);
	CK(cudaDeviceSynchronize());

	std::vector<double> us, issue_us, total_us;
	for (int it = 0; it < iterations; it++) {
		sweep<<<GRID, BLOCK>>>(sweep_buf, SWEEP, sink);
		CK(cudaEventRecord(start, 0));
		nvtxRangePushA("step");
		double t0 = now_us();
		issue_step(buf);
		double t1 = now_us();
		nvtxRangePop();
		double t2 = now_us();
		if (it > 0) {
			issue_us.push_back(t1 - t0);
			total_us.push_back(t2 - t0);
		}
		CK(cudaEventRecord(stop, 0));
		CK(cudaEventSynchronize(stop));
		CK(cudaGetLastError());
		float ms = 0;
		CK(cudaEventElapsedTime(&ms, start, stop));
		if (it > 0)
			us.push_back(ms * 1e3);
	}
	std::sort(us.begin(), us.end());
	size_t n = us.size();
	double med = n % 2 ? us[n / 2] : (us[n / 2 - 1] + us[n / 2]) / 2;
	printf("range gpu time: median %.1f us (min %.1f, max %.1f) over %zu ranges; %d kernels, "
	       "idle %.0f GiB\n", med, us.front(), us.back(), n, KERNELS, idle_gib);

	printf("range host issue time: median %.1f us over %zu ranges\n", median(issue_us),
	       issue_us.size());
	printf("range host total time: median %.1f us over %zu ranges\n", median(total_us),
	       total_us.size());
	// The same 10 launches inside a range --nvtx-include step/ does not select ("other"),
	// each after a synchronisation: rangeprof begins a selected range with one, so this is
	// the issue time of step under rangeprof less what recording its calls costs.
	std::vector<double> other_us;
	for (int it = 0; it < iterations; it++) {
		CK(cudaDeviceSynchronize());
		nvtxRangePushA("other");
		double t0 = now_us();
		issue_step(buf);
		double t1 = now_us();
		nvtxRangePop();
		if (it > 0)
			other_us.push_back(t1 - t0);
	}
	CK(cudaDeviceSynchronize());
	printf("unselected range host issue time after a synchronisation: median %.1f us over "
	       "%zu ranges\n", median(other_us), other_us.size());
	std::vector<double> per_launch;
	for (int batch = 0; batch < 3; batch++) {
		double t0 = now_us();
		for (int i = 0; i < 2000; i++)
			empty<<<1, 32>>>();
		double t1 = now_us();
		CK(cudaDeviceSynchronize());
		per_launch.push_back((t1 - t0) / 2000);
	}
	printf("unselected launch host time: median %.3f us per launch (3 x 2000)\n",
	       median(per_launch));

	std::vector<float> h(N);
	double sum = 0;
	for (int b = 0; b < BUFFERS; b++) {
		CK(cudaMemcpy(h.data(), buf[b], N * sizeof(float), cudaMemcpyDeviceToHost));
		for (float v : h)
			sum += v;
	}
	printf("checksum %.10g\n", sum);
	for (int b = 0; b < BUFFERS; b++)
		CK(cudaFree(buf[b]));
	CK(cudaFree(sweep_buf));
	CK(cudaFree(sink));
	if (idle)
		CK(cudaFree(idle));
	return 0;
}
