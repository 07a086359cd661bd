// tests/gpu/oom.cu - fills device memory (all but 512 MB, written so that it is really
// backed) and then launches one kernel inside the range "oom". The checkpoint of that
// launch needs more memory than the device has: the program must run on to its normal end
// with its own result. Not in run.sh (it takes ~3 minutes); run by hand:
//   nvcc -O2 -arch=sm_90 tests/gpu/oom.cu -o /tmp/oom &&
//   build/scripts/rangeprof -o /tmp/oom.jsonl --runs 2 --nvtx-include oom/ /tmp/oom
#include <cstdio>
#include <vector>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

__global__ void touch(char *p) { p[threadIdx.x] += 1; }

int main()
{
	size_t free_b, total_b;
	cudaMemGetInfo(&free_b, &total_b);
	std::vector<char *> blocks;
	const size_t chunk = 1ull << 30;
	while (free_b > chunk + (512ull << 20)) {
		char *p;
		if (cudaMalloc(&p, chunk) != cudaSuccess)
			break;
		cudaMemset(p, 1, chunk);
		blocks.push_back(p);
		cudaMemGetInfo(&free_b, &total_b);
	}
	cudaDeviceSynchronize();
	printf("allocated %zu GiB, %zu MiB free\n", blocks.size(), free_b >> 20);
	nvtxRangePushA("oom");
	touch<<<1, 32>>>(blocks[0]);
	nvtxRangePop();
	char h = 0;
	cudaMemcpy(&h, blocks[0], 1, cudaMemcpyDeviceToHost);
	printf("survived, value %d (expected 2)\n", h);
	return h == 2 ? 0 : 3;
}
