// tests/gpu/memory_cases.cu - kernels that make saving only what a launch reaches hard
// (issue 6): in-place updates and atomics, pointer arrays in device memory (batched GEMM
// with beta = 1), pointer lists passed by value in a parameter struct (multi-tensor
// apply), module-scope __device__ variables, managed memory, cudaMallocAsync pools,
// cuMemCreate/cuMemMap memory, a pointer kept in a __device__ variable (found by reading
// the module's globals), and a three-level pointer chain, which only verification catches. Each case runs
// 3 times inside NVTX range "case <name>" and prints a checksum that must be the same
// with and without rangeprof.
#include <cstdio>
#include <cstdlib>
#include <cuda.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
	fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); exit(1); } } while (0)

const int N = 1 << 20;

__global__ void inplace_atomic(float *x, unsigned *hits, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) {
		x[i] = x[i] * 0.5f + 1.0f;
		atomicAdd(&hits[i % 64], 1u);
	}
}

// Batched "GEMM" with beta = 1: C[b] += A[b] for every batch, through pointer arrays.
__global__ void batched_accumulate(const float *const *a, float *const *c, int per_batch)
{
	int b = blockIdx.y, i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < per_batch)
		c[b][i] += a[b][i];
}

struct tensor_list { float *t[6]; int sizes[6]; };
__global__ void multi_tensor_scale(tensor_list list, float factor)
{
	int which = blockIdx.y, i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < list.sizes[which])
		list.t[which][i] = list.t[which][i] * factor + 1.0f;
}

__device__ unsigned long long g_launches;
__device__ float g_table[4096];
__global__ void bump_globals(const float *x)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i == 0)
		g_launches += 1;
	if (i < 4096)
		g_table[i] += x[i];
}

struct node { float *data; node *next; };
// Writes two links away from its parameter: p -> first node -> second node -> data.
__global__ void follow_chain(node *head, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	float *target = head->next->next->data;
	if (i < n)
		target[i] += 2.0f;
}

__device__ float *g_hidden;
__global__ void write_hidden(int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		g_hidden[i] = g_hidden[i] * 3.0f + 1.0f;
}

__global__ void fill(float *x, int n, float v)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] = v + (i % 97);
}

static double sum(const float *d, int n)
{
	float *h = (float *)malloc(n * sizeof(float));
	CHECK(cudaMemcpy(h, d, n * sizeof(float), cudaMemcpyDefault));
	double s = 0;
	for (int i = 0; i < n; i++)
		s += h[i] * (1 + i % 7);
	free(h);
	return s;
}

static void range(const char *name, void (*body)(void *), void *arg)
{
	char text[64];
	snprintf(text, sizeof(text), "case %s", name);
	for (int rep = 0; rep < 3; rep++) {
		nvtxRangePushA(text);
		body(arg);
		nvtxRangePop();
	}
	CHECK(cudaDeviceSynchronize());
}

int main()
{
	unsigned blocks = (N + 255) / 256;
	// In place with atomics.
	float *x; unsigned *hits;
	CHECK(cudaMalloc(&x, N * sizeof(float)));
	CHECK(cudaMalloc(&hits, 64 * sizeof(unsigned)));
	CHECK(cudaMemset(hits, 0, 64 * sizeof(unsigned)));
	fill<<<blocks, 256>>>(x, N, 1.0f);
	struct A1 { float *x; unsigned *hits; unsigned blocks; } a1 = { x, hits, blocks };
	range("inplace_atomic", [](void *p) { A1 *a = (A1 *)p;
		inplace_atomic<<<a->blocks, 256>>>(a->x, a->hits, N); }, &a1);
	unsigned h[64];
	CHECK(cudaMemcpy(h, hits, sizeof(h), cudaMemcpyDeviceToHost));
	printf("inplace_atomic %.3f hits0 %u\n", sum(x, N), h[0]);

	// Pointer arrays in device memory.
	const int batches = 8, per = 1 << 16;
	float *ap[batches], *cp[batches];
	for (int b = 0; b < batches; b++) {
		CHECK(cudaMalloc(&ap[b], per * sizeof(float)));
		CHECK(cudaMalloc(&cp[b], per * sizeof(float)));
		fill<<<per / 256, 256>>>(ap[b], per, (float)b);
		fill<<<per / 256, 256>>>(cp[b], per, 1.0f);
	}
	float **a_dev, **c_dev;
	CHECK(cudaMalloc(&a_dev, sizeof(ap)));
	CHECK(cudaMalloc(&c_dev, sizeof(cp)));
	CHECK(cudaMemcpy(a_dev, ap, sizeof(ap), cudaMemcpyHostToDevice));
	CHECK(cudaMemcpy(c_dev, cp, sizeof(cp), cudaMemcpyHostToDevice));
	struct A2 { float **a, **c; } a2 = { a_dev, c_dev };
	range("batched_accumulate", [](void *p) { A2 *a = (A2 *)p;
		batched_accumulate<<<dim3(per / 256, batches), 256>>>(a->a, a->c, per); }, &a2);
	double s2 = 0;
	for (int b = 0; b < batches; b++)
		s2 += sum(cp[b], per);
	printf("batched_accumulate %.3f\n", s2);

	// A list of pointers passed by value.
	tensor_list list;
	for (int t = 0; t < 6; t++) {
		list.sizes[t] = (t + 1) * 10000;
		CHECK(cudaMalloc(&list.t[t], list.sizes[t] * sizeof(float)));
		fill<<<(list.sizes[t] + 255) / 256, 256>>>(list.t[t], list.sizes[t], (float)t);
	}
	range("multi_tensor_scale", [](void *p) {
		multi_tensor_scale<<<dim3(60000 / 256 + 1, 6), 256>>>(*(tensor_list *)p, 0.75f); }, &list);
	double s3 = 0;
	for (int t = 0; t < 6; t++)
		s3 += sum(list.t[t], list.sizes[t]);
	printf("multi_tensor_scale %.3f\n", s3);

	// Module-scope variables.
	range("bump_globals", [](void *p) { bump_globals<<<16, 256>>>((const float *)p); }, x);
	unsigned long long launches = 0;
	float table[4096];
	CHECK(cudaMemcpyFromSymbol(&launches, g_launches, sizeof(launches)));
	CHECK(cudaMemcpyFromSymbol(table, g_table, sizeof(table)));
	double s4 = 0;
	for (int i = 0; i < 4096; i++)
		s4 += table[i];
	printf("bump_globals launches %llu table %.3f\n", launches, s4);

	// Managed memory.
	float *m;
	CHECK(cudaMallocManaged(&m, N * sizeof(float)));
	for (int i = 0; i < N; i++)
		m[i] = (float)(i % 13);
	struct A5 { float *x; unsigned *hits; unsigned blocks; } a5 = { m, hits, blocks };
	range("managed", [](void *p) { A5 *a = (A5 *)p;
		inplace_atomic<<<a->blocks, 256>>>(a->x, a->hits, N); }, &a5);
	double s5 = 0;
	for (int i = 0; i < N; i++)
		s5 += m[i];
	printf("managed %.3f\n", s5);

	// A cudaMallocAsync pool.
	cudaStream_t s;
	CHECK(cudaStreamCreate(&s));
	float *pa, *pb;
	CHECK(cudaMallocAsync(&pa, N * sizeof(float), s));
	CHECK(cudaMallocAsync(&pb, N * sizeof(float), s));
	fill<<<blocks, 256, 0, s>>>(pa, N, 2.0f);
	fill<<<blocks, 256, 0, s>>>(pb, N, 5.0f);
	struct A6 { float *x; unsigned *hits; unsigned blocks; cudaStream_t s; } a6 = { pa, hits, blocks, s };
	range("pool", [](void *p) { A6 *a = (A6 *)p;
		inplace_atomic<<<a->blocks, 256, 0, a->s>>>(a->x, a->hits, N); }, &a6);
	printf("pool %.3f neighbour %.3f\n", sum(pa, N), sum(pb, N));

	// cuMemCreate/cuMemMap: two chunks mapped back to back, a tensor spanning both.
	CUmemAllocationProp prop = {};
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = 0;
	size_t gran = 0;
	cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
	CUdeviceptr va;
	if (cuMemAddressReserve(&va, 4 * gran, 0, 0, 0) != CUDA_SUCCESS) { printf("reserve failed\n"); return 1; }
	for (int c = 0; c < 2; c++) {
		CUmemGenericAllocationHandle mh;
		cuMemCreate(&mh, gran, &prop, 0);
		cuMemMap(va + c * gran, gran, 0, mh, 0);
		CUmemAccessDesc acc = {};
		acc.location = prop.location;
		acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
		cuMemSetAccess(va + c * gran, gran, &acc, 1);
	}
	int vn = (int)(2 * gran / sizeof(float)) - 1024;
	float *v = (float *)(va + 4096); // starts inside the first chunk, ends in the second
	fill<<<(vn + 255) / 256, 256>>>(v, vn, 3.0f);
	struct A7 { float *x; unsigned *hits; int n; } a7 = { v, hits, vn };
	range("vmm", [](void *p) { A7 *a = (A7 *)p;
		inplace_atomic<<<(a->n + 255) / 256, 256>>>(a->x, a->hits, a->n); }, &a7);
	printf("vmm %.3f\n", sum(v, vn));

	// Three links deep: beyond the one level rangeprof reads, so verification must catch it.
	node hn[3];
	node *dn[3];
	float *chain_data;
	CHECK(cudaMalloc(&chain_data, N * sizeof(float)));
	fill<<<blocks, 256>>>(chain_data, N, 4.0f);
	for (int k = 0; k < 3; k++)
		CHECK(cudaMalloc(&dn[k], sizeof(node)));
	hn[0] = { nullptr, dn[1] };
	hn[1] = { nullptr, dn[2] };
	hn[2] = { chain_data, nullptr };
	for (int k = 0; k < 3; k++)
		CHECK(cudaMemcpy(dn[k], &hn[k], sizeof(node), cudaMemcpyHostToDevice));
	range("chain", [](void *p) { follow_chain<<<(N + 255) / 256, 256>>>((node *)p, N); }, dn[0]);
	printf("chain %.3f\n", sum(chain_data, N));

	// A pointer kept in a __device__ variable: no parameter leads there, the global does.
	float *hidden;
	CHECK(cudaMalloc(&hidden, N * sizeof(float)));
	fill<<<blocks, 256>>>(hidden, N, 0.5f);
	CHECK(cudaMemcpyToSymbol(g_hidden, &hidden, sizeof(hidden)));
	range("hidden", [](void *) { write_hidden<<<(N + 255) / 256, 256>>>(N); }, nullptr);
	printf("hidden %.3f\n", sum(hidden, N));
	printf("all %s\n", cudaGetErrorString(cudaDeviceSynchronize()));
	return 0;
}
