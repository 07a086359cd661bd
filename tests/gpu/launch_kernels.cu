// tests/gpu/launch_kernels.cu - launches whose launch__ metrics differ in every way that
// rangeprof computes (tests/gpu/check_launch_metrics.sh compares them with ncu's): register
// counts from 10 to over 100 (__maxnreg__), static and dynamic shared memory, 1- to
// 3-dimensional grids and blocks, a compile-time cluster and a launch attribute's cluster.
// The kernels of python/tests/fixtures/recorded_launch/kernels.cu and more, without its
// out-of-bounds launch.
#include <cuda_runtime.h>
#include <stdio.h>
#define HEAVY(N) __global__ void __maxnreg__(N) h##N(float *c, int n) { float a[96]; \
 _Pragma("unroll") for (int k = 0; k < 96; k++) a[k] = c[threadIdx.x + k]; \
 for (int i = 0; i < n; i++) _Pragma("unroll") for (int k = 0; k < 96; k++) a[k] = a[k] * a[(k + 7) % 96] + 1.0f; \
 float s = 0; _Pragma("unroll") for (int k = 0; k < 96; k++) s += a[k]; c[threadIdx.x] = s; }
HEAVY(24) HEAVY(30) HEAVY(33) HEAVY(47) HEAVY(72) HEAVY(255)
__global__ void tiny(float *c) { c[threadIdx.x] = 1; }
__global__ void dyn(float *c) { extern __shared__ float s[]; s[threadIdx.x % 16] = 1; __syncthreads(); c[threadIdx.x] = s[0]; }
__global__ void stat(float *c)
{ __shared__ float s[3000]; int t = threadIdx.x + threadIdx.y * blockDim.x;
  s[t % 3000] = t; __syncthreads(); c[t] = s[(t * 7) % 3000]; }
__global__ void __cluster_dims__(2, 1, 1) clus(float *c) { c[blockIdx.x] = 1; }
__global__ void clus_rt(float *c) { c[blockIdx.x] = 2; }

int main()
{
	float *c;
	cudaMalloc(&c, 1 << 24);
	cudaMemset(c, 0, 1 << 24);
	h24<<<264, 128>>>(c, 1); h30<<<264, 128>>>(c, 1); h33<<<300, 128>>>(c, 1);
	h47<<<264, 96>>>(c, 1); h72<<<264, 256>>>(c, 1); h255<<<100, 64>>>(c, 1);
	tiny<<<10, 1024>>>(c); tiny<<<37, 96>>>(c); tiny<<<dim3(7, 5, 3), dim3(8, 4, 2)>>>(c);
	cudaFuncSetAttribute(dyn, cudaFuncAttributeMaxDynamicSharedMemorySize, 200000);
	const int dyn_launch[][2] = { { 512, 10000 }, { 1024, 30000 }, { 128, 5000 }, { 64, 3000 },
				      { 256, 4000 }, { 32, 100 }, { 96, 60000 }, { 128, 100000 } };
	for (unsigned i = 0; i < sizeof(dyn_launch) / sizeof(dyn_launch[0]); i++)
		dyn<<<300, dyn_launch[i][0], dyn_launch[i][1]>>>(c);
	stat<<<dim3(7, 5, 3), dim3(16, 16, 1)>>>(c);
	clus<<<8, 64>>>(c);
	cudaLaunchConfig_t cfg = {};
	cudaLaunchAttribute at[1];
	at[0].id = cudaLaunchAttributeClusterDimension;
	at[0].val.clusterDim.x = 4;
	at[0].val.clusterDim.y = 1;
	at[0].val.clusterDim.z = 1;
	cfg.gridDim = dim3(16, 2, 1);
	cfg.blockDim = dim3(32, 1, 1);
	cfg.attrs = at;
	cfg.numAttrs = 1;
	cudaLaunchKernelEx(&cfg, clus_rt, c);
	cudaError_t e = cudaDeviceSynchronize();
	printf("launch_kernels: %s\n", cudaGetErrorString(e));
	return e != cudaSuccess;
}
