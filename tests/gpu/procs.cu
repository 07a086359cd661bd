// tests/gpu/procs.cu - processes, contexts, collectives and signals (issue 7), one program
// with a mode per case, each run plain and under rangeprof by tests/gpu/run.sh:
//   work N        N launches of an in-place kernel inside "work/" (several processes at once)
//   paced N MS    the same, MS milliseconds apart: a program that measures a few launches
//                 over seconds, so that two started a second apart measure at the same time
//                 (tests/gpu/concurrency.sh, early and lazy)
//   fork          CUDA initialised, then fork without exec: the child computes on the host
//                 and exits; the parent launches on (its file must stay whole and its own)
//   reset         kernels, cudaDeviceReset, kernels again; then driver contexts created and
//                 destroyed in a loop (handles may be reused): every launch measured
//   collective    a kernel named like NCCL's that spins until the host sets a flag after
//                 the launch: a replay before the flag would wait for ever
//   hang          the same spin under a plain name, bounded by 15 s: the watchdog speaks
//   devices N     (two GPUs) one thread alternates N launches between devices 0 and 1, a
//                 kernel named for each device, so the records show where each ran
//   long S        launches of a busy kernel for S seconds (SIGTERM during a replay: the
//                 program must still be running when the signal comes, with or without
//                 rangeprof)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

__global__ void inplace(float *x, size_t n)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		x[i] += 1.0f;
}

// Spins until *flag (mapped host memory) is set, or for about limit_ns of GPU time.
__device__ void spin(volatile int *flag, unsigned long long limit_ns, int *out)
{
	unsigned long long start;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
	for (;;) {
		if (*flag)
			break;
		unsigned long long now;
		asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
		if (now - start > limit_ns)
			break;
	}
	if (threadIdx.x == 0)
		atomicAdd(out, 1);
}

extern "C" __global__ void ncclKernel_AllReduce_RING_LL_Sum_float(volatile int *flag, int *out)
{
	spin(flag, 600ull * 1000000000ull, out); // replayed alone: 10 minutes, i.e. a hang
}

extern "C" __global__ void waits_for_host(volatile int *flag, int *out)
{
	spin(flag, 15ull * 1000000000ull, out);
}

__global__ void busy(float *x, size_t n, int rounds)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		for (int r = 0; r < rounds; r++)
			x[i] = x[i] * 0.999f + 1.0f;
}

static double checksum(const float *d, size_t n)
{
	float *h = (float *)malloc(n * 4);
	cudaMemcpy(h, d, n * 4, cudaMemcpyDeviceToHost);
	double s = 0;
	for (size_t i = 0; i < n; i++)
		s += h[i];
	free(h);
	return s;
}

static void work(int launches)
{
	const size_t n = 1 << 22;
	float *x;
	cudaMalloc(&x, n * 4);
	cudaMemset(x, 0, n * 4);
	nvtxRangePushA("work");
	for (int i = 0; i < launches; i++)
		inplace<<<264, 256>>>(x, n);
	nvtxRangePop();
	printf("work checksum %.0f\n", checksum(x, n));
	cudaFree(x);
}

static void paced_work(int launches, int gap_ms)
{
	const size_t n = 1 << 22;
	float *x;
	cudaMalloc(&x, n * 4);
	cudaMemset(x, 0, n * 4);
	cudaDeviceSynchronize();
	for (int i = 0; i < launches; i++) {
		nvtxRangePushA("work");
		inplace<<<264, 256>>>(x, n);
		nvtxRangePop();
		cudaDeviceSynchronize();
		usleep(gap_ms * 1000);
	}
	printf("paced checksum %.0f\n", checksum(x, n));
	cudaFree(x);
}

static int spin_case(bool named_like_nccl)
{
	int *flag, *out;
	cudaHostAlloc(&flag, sizeof(int), cudaHostAllocMapped);
	cudaMalloc(&out, sizeof(int));
	cudaMemset(out, 0, sizeof(int));
	*flag = 0;
	int *dflag;
	cudaHostGetDevicePointer(&dflag, flag, 0);
	nvtxRangePushA("peer");
	if (named_like_nccl)
		ncclKernel_AllReduce_RING_LL_Sum_float<<<1, 32>>>(dflag, out);
	else
		waits_for_host<<<1, 32>>>(dflag, out);
	nvtxRangePop();
	*flag = 1; // the "peer" arrives only after the launch returned
	cudaDeviceSynchronize();
	int h = 0;
	cudaMemcpy(&h, out, sizeof(int), cudaMemcpyDeviceToHost);
	printf("spin done, %d block(s) finished, error %s\n", h,
	       cudaGetErrorName(cudaGetLastError()));
	work(2);
	return 0;
}

extern "C" __global__ void inplace_dev0(float *x, size_t n)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		x[i] += 1.0f;
}

extern "C" __global__ void inplace_dev1(float *x, size_t n)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		x[i] += 2.0f;
}

// One thread, two devices, launches alternating: each kernel must be measured on the
// device it was launched on (issue 7 item 4).
static int devices(int launches)
{
	int count = 0;
	if (cudaGetDeviceCount(&count) != cudaSuccess || count < 2) {
		printf("devices: needs two GPUs\n");
		return 1;
	}
	const size_t n = 1 << 22;
	float *x[2];
	for (int d = 0; d < 2; d++) {
		cudaSetDevice(d);
		cudaMalloc(&x[d], n * 4);
		cudaMemset(x[d], 0, n * 4);
	}
	nvtxRangePushA("work");
	for (int i = 0; i < launches; i++) {
		int d = i % 2;
		cudaSetDevice(d);
		if (d == 0)
			inplace_dev0<<<264, 256>>>(x[0], n);
		else
			inplace_dev1<<<264, 256>>>(x[1], n);
	}
	nvtxRangePop();
	for (int d = 0; d < 2; d++) {
		cudaSetDevice(d);
		printf("device %d checksum %.0f\n", d, checksum(x[d], n));
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "work";
	int n = argc > 2 ? atoi(argv[2]) : 4;
	if (!strcmp(mode, "work")) {
		work(n);
	} else if (!strcmp(mode, "paced")) {
		paced_work(n, argc > 3 ? atoi(argv[3]) : 100);
	} else if (!strcmp(mode, "fork")) {
		work(2);
		fflush(stdout);
		pid_t child = fork();
		if (child == 0) {
			// No CUDA here: a forked child may not use its parent's context.
			double s = 0;
			for (int i = 0; i < 1000000; i++)
				s += i % 7;
			printf("child computed %.0f\n", s);
			fflush(stdout);
			_exit(0);
		}
		int status;
		waitpid(child, &status, 0);
		work(3);
		printf("child status %d\n", WEXITSTATUS(status));
	} else if (!strcmp(mode, "reset")) {
		work(2);
		cudaDeviceReset();
		work(2);
		// Driver contexts created and destroyed: a new one may get the old handle.
		cuInit(0);
		CUdevice dev;
		cuDeviceGet(&dev, 0);
		for (int round = 0; round < 3; round++) {
			CUcontext ctx;
			CUctxCreateParams params = {};
			if (cuCtxCreate(&ctx, &params, 0, dev) != CUDA_SUCCESS) {
				printf("cuCtxCreate failed\n");
				return 1;
			}
			work(1);
			cuCtxDestroy(ctx);
		}
		cudaDeviceReset();
		work(1);
	} else if (!strcmp(mode, "collective")) {
		return spin_case(true);
	} else if (!strcmp(mode, "hang")) {
		return spin_case(false);
	} else if (!strcmp(mode, "devices")) {
		return devices(n);
	} else if (!strcmp(mode, "long")) {
		const size_t m = 1 << 24;
		float *x;
		cudaMalloc(&x, m * 4);
		cudaMemset(x, 0, m * 4);
		nvtxRangePushA("long");
		struct timespec start, now;
		clock_gettime(CLOCK_MONOTONIC, &start);
		do {
			busy<<<528, 256>>>(x, m, 200);
			cudaDeviceSynchronize();
			clock_gettime(CLOCK_MONOTONIC, &now);
		} while (now.tv_sec - start.tv_sec < n);
		nvtxRangePop();
		printf("long checksum %.0f\n", checksum(x, m));
	} else {
		fprintf(stderr, "unknown mode %s\n", mode);
		return 2;
	}
	return 0;
}
