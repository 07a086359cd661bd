// tests/gpu/atomics.cu - kernels that update memory in place and with atomics: a histogram
// by atomicAdd and a running counter. Replays must leave the application's results exactly
// as without rangeprof.
#include <cstdio>
#include <vector>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

__global__ void histogram(const unsigned *in, size_t n, unsigned *bins)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		atomicAdd(&bins[in[i] % 256], 1u);
}

__global__ void bump(unsigned long long *counter) { atomicAdd(counter, 1ull); }

int main()
{
	const size_t n = 8u << 20;
	std::vector<unsigned> h(n);
	for (size_t i = 0; i < n; i++) h[i] = (unsigned)(i * 2654435761u);
	unsigned *in, *bins;
	unsigned long long *counter;
	cudaMalloc(&in, n * 4); cudaMalloc(&bins, 256 * 4); cudaMalloc(&counter, 8);
	cudaMemcpy(in, h.data(), n * 4, cudaMemcpyHostToDevice);
	cudaMemset(bins, 0, 256 * 4); cudaMemset(counter, 0, 8);
	nvtxRangePushA("atomics");
	for (int i = 0; i < 3; i++) {
		histogram<<<528, 256>>>(in, n, bins);
		bump<<<64, 128>>>(counter);
	}
	nvtxRangePop();
	unsigned hb[256]; unsigned long long hc;
	cudaMemcpy(hb, bins, sizeof(hb), cudaMemcpyDeviceToHost);
	cudaMemcpy(&hc, counter, 8, cudaMemcpyDeviceToHost);
	unsigned long long total = 0;
	for (int b = 0; b < 256; b++) total += hb[b];
	printf("histogram total=%llu bin0=%u counter=%llu\n", total, hb[0], hc);
	return total == 3ull * n && hc == 3ull * 64 * 128 ? 0 : 3;
}
