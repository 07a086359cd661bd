// bench/restore_tlb_probe.cu - why range replay's runs of bench/range_cost.cu's range were
// ~10 % longer (388 against 352 us) with 40 GiB of idle device memory held, when the range
// was saved from its learned reach (a cuMemcpyAsync of each reached buffer back from a
// device copy before every run), and not when it was saved whole (cuptiCheckpointRestore),
// nor at 0 GiB, nor in kernel replay (session 9, bench/NOTES.md). Without rangeprof: the
// same 10 kernels (3 buffers of 48 MiB) timed by CUDA events after each preparation below,
// with IDLE_GIB of memory allocated and written first (0 and 40).
//   none          an L2 flush only (a 256 MiB memset), then the range
//   restore       copy the 3 buffers back from a device copy (as range_memory.c's reach
//                 save), then the flush, then the range
//   restore_warm  as restore, then a one-thread-per-2-MiB-page kernel that reads one
//                 word of each page of the 3 buffers, then the flush
// Prints "PREP IDLE_GIB: median X us (min A, max B) over N ranges".
// Build: nvcc -O2 -arch=sm_90 -std=c++17 bench/restore_tlb_probe.cu -o restore_tlb_probe
// Run:   ./restore_tlb_probe 0; ./restore_tlb_probe 40
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>

#define CK(call)                                                                         \
	do {                                                                             \
		cudaError_t err_ = (call);                                               \
		if (err_ != cudaSuccess) {                                               \
			fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,  \
			        cudaGetErrorName(err_));                                 \
			exit(1);                                                         \
		}                                                                        \
	} while (0)

static const size_t N = (size_t)12 << 20;   // floats per buffer: 48 MiB
static const int BUFFERS = 3, KERNELS = 10, RANGES = 20;
static const unsigned GRID = 132 * 8, BLOCK = 256;

__global__ void fill(float *p, size_t n, float base)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		p[i] = base + (float)(i % 97);
}

__global__ void step_kernel(float *out, const float *in, size_t n, float a, float b)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		out[i] = out[i] * a + in[i] * b;
}

__global__ void touch_pages(const float *p, size_t n, float *sink)
{
	size_t page = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	size_t i = page * ((2u << 20) / sizeof(float));
	if (i < n && p[i] == -12345.0f)
		*sink = p[i];
}

int main(int argc, char **argv)
{
	double idle_gib = argc > 1 ? atof(argv[1]) : 0;
	if (idle_gib > 0) {
		size_t bytes = (size_t)(idle_gib * (double)(1ull << 30));
		void *idle;
		CK(cudaMalloc(&idle, bytes));
		CK(cudaMemset(idle, 1, bytes));
	}
	float *buf[BUFFERS], *copy[BUFFERS], *sink;
	for (int b = 0; b < BUFFERS; b++) {
		CK(cudaMalloc(&buf[b], N * sizeof(float)));
		fill<<<GRID, BLOCK>>>(buf[b], N, (float)b);
	}
	void *flush;
	CK(cudaMalloc(&flush, (size_t)256 << 20));
	CK(cudaMalloc(&sink, sizeof(float)));
	// The saved copies are allocated last, as rangeprof's are (after the application's).
	for (int b = 0; b < BUFFERS; b++) {
		CK(cudaMalloc(&copy[b], N * sizeof(float)));
		CK(cudaMemcpy(copy[b], buf[b], N * sizeof(float), cudaMemcpyDeviceToDevice));
	}
	cudaEvent_t start, stop;
	CK(cudaEventCreate(&start));
	CK(cudaEventCreate(&stop));
	const char *preps[] = { "none", "restore", "restore_warm", "none", "restore", "restore_warm" };
	for (const char *prep : preps) {
		std::vector<double> us;
		for (int r = 0; r < RANGES; r++) {
			if (strcmp(prep, "none")) {
				for (int b = 0; b < BUFFERS; b++)
					CK(cudaMemcpyAsync(buf[b], copy[b], N * sizeof(float), cudaMemcpyDeviceToDevice, 0));
			}
			if (!strcmp(prep, "restore_warm")) {
				size_t pages = N * sizeof(float) / (2u << 20);
				for (int b = 0; b < BUFFERS; b++)
					touch_pages<<<1, (unsigned)pages>>>(buf[b], N, sink);
			}
			CK(cudaMemsetAsync(flush, r & 0xff, (size_t)256 << 20, 0));
			CK(cudaEventRecord(start, 0));
			for (int k = 0; k < KERNELS; k++)
				step_kernel<<<GRID, BLOCK>>>(buf[(k + 1) % BUFFERS], buf[k % BUFFERS], N, 0.999f,
				                             0.001f * (float)(k + 1));
			CK(cudaEventRecord(stop, 0));
			CK(cudaEventSynchronize(stop));
			float ms;
			CK(cudaEventElapsedTime(&ms, start, stop));
			us.push_back(ms * 1e3);
		}
		std::sort(us.begin(), us.end());
		printf("%s %.0f: median %.1f us (min %.1f, max %.1f) over %d ranges\n", prep, idle_gib,
		       (us[RANGES / 2 - 1] + us[RANGES / 2]) / 2, us.front(), us.back(), RANGES);
	}
	return 0;
}
