// tests/gpu/threads.cu - four host threads launch the same kernel, each inside its own NVTX
// ranges ("thread<i>/work"), on its own stream; rangeprof must attribute every measured
// launch to its own thread's ranges.
#include <cstdio>
#include <thread>
#include <vector>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

__global__ void scale(float *x, size_t n, float f)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		x[i] = x[i] * f + 1.0f;
}

int main()
{
	const size_t n = 4u << 20;
	std::vector<std::thread> threads;
	std::vector<double> sums(4);
	for (int t = 0; t < 4; t++) {
		threads.emplace_back([t, n, &sums] {
			float *x;
			cudaStream_t s;
			cudaStreamCreate(&s);
			cudaMalloc(&x, n * 4);
			cudaMemsetAsync(x, 0, n * 4, s);
			char name[32];
			snprintf(name, sizeof(name), "thread%d", t);
			nvtxRangePushA(name);
			for (int i = 0; i < 3; i++) {
				nvtxRangePushA("work");
				scale<<<264, 256, 0, s>>>(x, n, 1.0f + t);
				nvtxRangePop();
			}
			nvtxRangePop();
			std::vector<float> h(n);
			cudaMemcpyAsync(h.data(), x, n * 4, cudaMemcpyDeviceToHost, s);
			cudaStreamSynchronize(s);
			double sum = 0;
			for (float v : h) sum += v;
			sums[t] = sum;
		});
	}
	for (auto &th : threads) th.join();
	for (int t = 0; t < 4; t++) printf("thread%d sum=%.6e\n", t, sums[t]);
	return 0;
}
