// examples/kernels.cu - the bundled example: three NVTX-annotated kernels that rangeprof's
// README profiles. A vector add over 3 x 64 MB, an in-place x += 1 over 64 MB (its result
// proves that replays restore memory), and a naive SGEMM. Prints checksums that must be the
// same with and without rangeprof.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
	fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); exit(1); } } while (0)

__global__ void vadd(const float *a, const float *b, float *c, size_t n)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		c[i] = a[i] + b[i];
}

__global__ void inplace_add_one(float *x, size_t n)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		x[i] += 1.0f;
}

__global__ void sgemm_naive(const float *a, const float *b, float *c, int n)
{
	int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
	if (row >= n || col >= n)
		return;
	float acc = 0;
	for (int k = 0; k < n; k++)
		acc += a[row * n + k] * b[k * n + col];
	c[row * n + col] = acc;
}

int main(int argc, char **argv)
{
	int iterations = argc > 1 ? atoi(argv[1]) : 3;
	const size_t n = 16u << 20; // 16 Mi floats = 64 MB
	const int m = 1024;
	float *a, *b, *c, *x, *ma, *mb, *mc;
	CHECK(cudaMalloc(&a, n * 4)); CHECK(cudaMalloc(&b, n * 4)); CHECK(cudaMalloc(&c, n * 4));
	CHECK(cudaMalloc(&x, n * 4));
	CHECK(cudaMalloc(&ma, m * m * 4)); CHECK(cudaMalloc(&mb, m * m * 4)); CHECK(cudaMalloc(&mc, m * m * 4));
	std::vector<float> h(n);
	for (size_t i = 0; i < n; i++) h[i] = (float)(i % 1000) * 0.5f;
	CHECK(cudaMemcpy(a, h.data(), n * 4, cudaMemcpyHostToDevice));
	CHECK(cudaMemcpy(b, h.data(), n * 4, cudaMemcpyHostToDevice));
	CHECK(cudaMemset(x, 0, n * 4));
	CHECK(cudaMemcpy(ma, h.data(), m * m * 4, cudaMemcpyHostToDevice));
	CHECK(cudaMemcpy(mb, h.data() + 7, m * m * 4, cudaMemcpyHostToDevice));

	nvtxRangePushA("outer");
	for (int it = 0; it < iterations; it++) {
		nvtxRangePushA("vadd");
		vadd<<<1056, 256>>>(a, b, c, n);
		nvtxRangePop();
		nvtxRangePushA("inplace");
		inplace_add_one<<<1056, 256>>>(x, n);
		nvtxRangePop();
		nvtxRangePushA("sgemm n=1024");
		sgemm_naive<<<dim3(m / 16, m / 16), dim3(16, 16)>>>(ma, mb, mc, m);
		nvtxRangePop();
	}
	nvtxRangePop();
	// Outside every range: never selected by --nvtx-include outer/.
	inplace_add_one<<<1056, 256>>>(x, n);
	CHECK(cudaDeviceSynchronize());

	double sc = 0, sx = 0, sm = 0;
	CHECK(cudaMemcpy(h.data(), c, n * 4, cudaMemcpyDeviceToHost));
	for (size_t i = 0; i < n; i++) sc += h[i];
	CHECK(cudaMemcpy(h.data(), x, n * 4, cudaMemcpyDeviceToHost));
	for (size_t i = 0; i < n; i++) sx += h[i];
	CHECK(cudaMemcpy(h.data(), mc, m * m * 4, cudaMemcpyDeviceToHost));
	for (size_t i = 0; i < (size_t)m * m; i++) sm += h[i];
	printf("checksum vadd=%.6e inplace=%.6e (expected %.6e) sgemm=%.6e\n", sc, sx,
	       (double)n * (iterations + 1), sm);
	return sx == (double)n * (iterations + 1) ? 0 : 3;
}
