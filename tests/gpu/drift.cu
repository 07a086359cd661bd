// tests/gpu/drift.cu - issue 11 item 4's third case: a kernel whose time drifts during its
// runs. A heavy fp16 matmul measured while the H200 heats does not drift dependably: the
// power cap throttles it from its first run (sw_power_cap in every run), and it stopped
// after 10 runs without a drift in one session, drifted -6.0 % over 40 runs in another
// (tests/gpu/auto_runs.py: doc/measurements.md, "--runs auto and drift"). This kernel's
// time moves with the GPU's own clock instead: every block spins for
//     base_us + slope * (start - t0)
// where start is the block's %globaltimer and t0 was stamped on the GPU by a kernel launched
// just before (the drifting kernel only reads it). Replays restore memory but cannot restore
// time, so each run of one launch lasts longer than the one before: with slope 0.01 every
// run adds 1 % of the time since the previous run began, so the runs' times rise by more
// than 1 % per run however long rangeprof took to start them. The same kernel with slope 0
// is the steady control. After spinning, x[i] += 1 on a 1 Mi-float
// buffer, so the printed checksum must not change under rangeprof.
//   NVTX "drift/": ITER launches with the slope; "steady/": ITER launches without.
// Usage: ./drift [iterations=2] [base_us=50] [slope=0.01]
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

static __device__ unsigned long long global_ns()
{
	unsigned long long t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

__global__ void stamp(unsigned long long *t0)
{
	*t0 = global_ns();
}

__global__ void spin_then_add(float *x, unsigned n, const unsigned long long *t0_at,
			      double base_ns, double slope)
{
	unsigned long long start = global_ns(), t0 = *t0_at;
	double since = start > t0 ? (double)(start - t0) : 0.0;
	unsigned long long until = start + (unsigned long long)(base_ns + slope * since);
	while (global_ns() < until)
		;
	for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		x[i] += 1.0f;
}

static int check(cudaError_t e, const char *what)
{
	if (e != cudaSuccess) {
		fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
		exit(1);
	}
	return 0;
}

int main(int argc, char **argv)
{
	int iterations = argc > 1 ? atoi(argv[1]) : 2;
	double base_us = argc > 2 ? atof(argv[2]) : 50.0;
	double slope = argc > 3 ? atof(argv[3]) : 0.01;
	const unsigned n = 1u << 20;
	float *x;
	unsigned long long *t0_dev;
	check(cudaMalloc(&x, n * sizeof(float)), "cudaMalloc");
	check(cudaMalloc(&t0_dev, sizeof(*t0_dev)), "cudaMalloc");
	check(cudaMemset(x, 0, n * sizeof(float)), "cudaMemset");
	int sms = 0;
	check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "attribute");
	for (int it = 0; it < iterations; it++) {
		stamp<<<1, 1>>>(t0_dev);
		nvtxRangePushA("drift");
		spin_then_add<<<sms, 256>>>(x, n, t0_dev, base_us * 1e3, slope);
		nvtxRangePop();
		stamp<<<1, 1>>>(t0_dev);
		nvtxRangePushA("steady");
		spin_then_add<<<sms, 256>>>(x, n, t0_dev, base_us * 1e3, 0.0);
		nvtxRangePop();
	}
	check(cudaGetLastError(), "launch");
	check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
	float *h = (float *)malloc(n * sizeof(float));
	check(cudaMemcpy(h, x, n * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy");
	double sum = 0;
	for (unsigned i = 0; i < n; i++)
		sum += h[i];
	printf("drift checksum %.0f (expected %.0f)\n", sum, 2.0 * iterations * n);
	free(h);
	return 0;
}
