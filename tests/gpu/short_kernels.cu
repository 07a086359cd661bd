// tests/gpu/short_kernels.cu - issue 11 item 6: kernels of 2-20 us against ncu, where the
// time of the launch itself is a large part of the kernel's and the SM clock decides the
// compute-bound ones. Four kernels, each launched ITER times (first argument, default 8)
// inside NVTX range "short", interleaved as an application would launch them:
//   scale_small  memory, 64 Ki floats (256 KB each way)              ~2 us on an H200
//   fma_short    compute, 4 independent FMA chains x 96 per thread   ~5 us
//   triad        memory, 3 Mi floats: a = b + s * c (36 MB moved)    ~10 us
//   fma_long     compute, 4 independent FMA chains x 560 per thread  ~20 us
// The FMA kernels run one full wave (8 blocks of 256 threads per SM, 132 SMs): 2048
// threads x 4 FMAs per iteration over 128 FP32 lanes is 64 cycles per iteration per SM.
// Separate kernels, not one template: the suite's comparison keys a kernel by its name
// without template arguments and its block count, so two instances would mix.
// No atomics: the checksum must be the same bits in every run, plain or measured.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

__global__ void scale_small(const float *x, float *y, unsigned n)
{
	unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = 1.5f * x[i];
}

__global__ void triad(float *a, const float *b, const float *c, unsigned n)
{
	for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		a[i] = b[i] + 0.5f * c[i];
}

// Four independent chains so that one warp issues an FMA every cycle without waiting for
// the previous result; the iteration count is a parameter so the compiler cannot fold it.
__device__ float fma_chains(float seed, int iterations)
{
	float a = seed, b = seed + 1.0f, c = seed + 2.0f, d = seed + 3.0f;
#pragma unroll 8
	for (int i = 0; i < iterations; i++) {
		a = fmaf(a, 0.999f, 0.001f);
		b = fmaf(b, 0.999f, 0.002f);
		c = fmaf(c, 0.999f, 0.003f);
		d = fmaf(d, 0.999f, 0.004f);
	}
	return a + b + c + d;
}

__global__ void fma_short(const float *in, float *out, int iterations)
{
	unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
	out[i] = fma_chains(in[i], iterations);
}

__global__ void fma_long(const float *in, float *out, int iterations)
{
	unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
	out[i] = fma_chains(in[i], iterations);
}

static double device_sum(const float *d, unsigned n)
{
	float *h = (float *)malloc((size_t)n * 4);
	cudaMemcpy(h, d, (size_t)n * 4, cudaMemcpyDeviceToHost);
	double s = 0;
	for (unsigned i = 0; i < n; i++)
		s += h[i];
	free(h);
	return s;
}

int main(int argc, char **argv)
{
	int iterations = argc > 1 ? atoi(argv[1]) : 8;
	int sms = 0;
	cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
	const unsigned small = 64u << 10, large = 3u << 20;
	const unsigned fma_blocks = 8u * (unsigned)(sms > 0 ? sms : 132), fma_n = fma_blocks * 256;
	float *x, *y, *a, *b, *c, *fin, *fout_s, *fout_l;
	if (cudaMalloc(&x, small * 4) || cudaMalloc(&y, small * 4) || cudaMalloc(&a, large * 4) ||
	    cudaMalloc(&b, large * 4) || cudaMalloc(&c, large * 4) ||
	    cudaMalloc(&fin, fma_n * 4) || cudaMalloc(&fout_s, fma_n * 4) ||
	    cudaMalloc(&fout_l, fma_n * 4)) {
		fprintf(stderr, "cudaMalloc failed\n");
		return 1;
	}
	float *h = (float *)malloc((size_t)large * 4);
	for (unsigned i = 0; i < large; i++)
		h[i] = (float)(i % 17) * 0.25f;
	cudaMemcpy(x, h, small * 4, cudaMemcpyHostToDevice);
	cudaMemcpy(b, h, large * 4, cudaMemcpyHostToDevice);
	cudaMemcpy(c, h, large * 4, cudaMemcpyHostToDevice);
	cudaMemcpy(fin, h, fma_n * 4, cudaMemcpyHostToDevice);
	free(h);
	cudaDeviceSynchronize();
	nvtxRangePushA("short");
	for (int it = 0; it < iterations; it++) {
		scale_small<<<small / 256, 256>>>(x, y, small);
		fma_short<<<fma_blocks, 256>>>(fin, fout_s, 96);
		triad<<<4 * fma_blocks, 256>>>(a, b, c, large);
		fma_long<<<fma_blocks, 256>>>(fin, fout_l, 560);
	}
	nvtxRangePop();
	cudaError_t e = cudaDeviceSynchronize();
	if (e != cudaSuccess) {
		fprintf(stderr, "short_kernels: %s\n", cudaGetErrorString(e));
		return 1;
	}
	printf("short checksum scale %.6e fma_short %.6e triad %.6e fma_long %.6e\n",
	       device_sum(y, small), device_sum(fout_s, fma_n), device_sum(a, large),
	       device_sum(fout_l, fma_n));
	return 0;
}
