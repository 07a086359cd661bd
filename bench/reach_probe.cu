// bench/reach_probe.cu - what the driver tells about pointers of every kind of device
// memory (cudaMalloc, managed, cudaMallocAsync pools, cuMemCreate/cuMemMap, mapped host,
// module globals), the parameter layout of a runtime kernel (cuFuncGetParamInfo), and what
// those queries cost: cuPointerGetAttributes per call on a device pointer and on a word
// that is none (10 000 calls each), a 64 MB and 100 x 4 KB device-to-device copies.
// Facts behind memory/reach.c (only words inside known allocations are asked about) and
// memory/save.c (a saved copy stays on the device). Its output was not kept in
// bench/NOTES.md: only its 64 MB copy, "~45 us on the probe", is quoted there (session 2's
// prediction); doc/measurements.md, "Held memory, save and reach", says what is known.
// Build (no GPU needed): meson setup build-bench -Dbench=true && meson compile -C build-bench
// bench, giving build-bench/bench/reach_probe; or (it calls the driver directly)
//   nvcc -O2 -arch=sm_90 -std=c++17 bench/reach_probe.cu -o reach_probe -lcuda
// Run, on the GPU machine: ./reach_probe > reach.txt
#include <cuda.h>
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>

struct ptr_list { float *p[4]; int n; };
__device__ int g_counter;
__device__ float g_table[1000];
__global__ void probe_kernel(float *a, int n, ptr_list list, double x) { if (n < 0) a[0] = list.n + x + g_counter; }

static void show(const char *what, CUdeviceptr p)
{
	CUpointer_attribute attrs[] = { CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
		CU_POINTER_ATTRIBUTE_RANGE_SIZE, CU_POINTER_ATTRIBUTE_IS_MANAGED, CU_POINTER_ATTRIBUTE_MAPPED,
		CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL };
	unsigned type = 0; CUdeviceptr start = 0; size_t size = 0; int managed = 0, mapped = 0, ordinal = -9;
	void *data[] = { &type, &start, &size, &managed, &mapped, &ordinal };
	CUresult r = cuPointerGetAttributes(6, attrs, data, p);
	CUdeviceptr base = 0; size_t bytes = 0;
	CUresult r2 = cuMemGetAddressRange(&base, &bytes, p);
	printf("%-28s ptr=%#llx attrs=%d type=%u start=%#llx size=%zu managed=%d mapped=%d dev=%d | "
	       "GetAddressRange=%d base=%#llx size=%zu\n", what, (unsigned long long)p, r, type,
	       (unsigned long long)start, size, managed, mapped, ordinal, r2, (unsigned long long)base, bytes);
}

int main()
{
	cudaFree(0);
	float *d; cudaMalloc(&d, 3 << 20);
	show("cudaMalloc 3MB", (CUdeviceptr)d);
	show("cudaMalloc +1MB", (CUdeviceptr)d + (1 << 20));
	float *m; cudaMallocManaged(&m, 1 << 20);
	show("managed", (CUdeviceptr)m);
	cudaStream_t s; cudaStreamCreate(&s);
	float *a1, *a2; cudaMallocAsync(&a1, 1 << 20, s); cudaMallocAsync(&a2, 1 << 20, s); cudaStreamSynchronize(s);
	show("mallocAsync a1", (CUdeviceptr)a1);
	show("mallocAsync a2", (CUdeviceptr)a2);
	// VMM: reserve 8 MB, map two 2 MB chunks contiguously and one apart.
	CUmemAllocationProp prop = {}; prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE; prop.location.id = 0;
	size_t gran = 0; cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
	CUdeviceptr va; cuMemAddressReserve(&va, 8 * gran, 0, 0, 0);
	for (int i : {0, 1, 3}) {
		CUmemGenericAllocationHandle h; cuMemCreate(&h, gran, &prop, 0);
		cuMemMap(va + i * gran, gran, 0, h, 0);
		CUmemAccessDesc acc = {}; acc.location = prop.location; acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
		cuMemSetAccess(va + i * gran, gran, &acc, 1);
	}
	printf("granularity %zu\n", gran);
	show("vmm chunk0", va); show("vmm chunk0+1k", va + 1024); show("vmm chunk1", va + gran);
	show("vmm hole chunk2", va + 2 * gran); show("vmm chunk3", va + 3 * gran);
	float *h; cudaHostAlloc(&h, 1 << 20, cudaHostAllocMapped);
	show("hostAlloc mapped", (CUdeviceptr)h);
	float *hm = (float *)malloc(1 << 20);
	show("malloc host", (CUdeviceptr)hm);
	void *gc, *gt; cudaGetSymbolAddress(&gc, g_counter); cudaGetSymbolAddress(&gt, g_table);
	show("__device__ g_counter", (CUdeviceptr)gc); show("__device__ g_table", (CUdeviceptr)gt);
	show("random 0x3f80000040000000", 0x3f80000040000000ull);
	show("null", 0);

	cudaFunction_t rf; cudaGetFuncBySymbol(&rf, (const void *)probe_kernel);
	CUfunction f = (CUfunction)rf;
	for (size_t i = 0; i < 8; i++) {
		size_t off = 0, sz = 0; CUresult r = cuFuncGetParamInfo(f, i, &off, &sz);
		printf("param %zu: rc=%d offset=%zu size=%zu\n", i, r, off, sz);
		if (r) break;
	}
	CUmodule mod = 0; CUresult rm = cuFuncGetModule(&mod, f);
	CUdeviceptr gp = 0; size_t gb = 0; CUresult rg = rm ? rm : cuModuleGetGlobal(&gp, &gb, mod, "g_counter");
	printf("cuFuncGetModule rc=%d module=%p cuModuleGetGlobal(g_counter) rc=%d ptr=%#llx size=%zu (symbol at %p)\n",
	       rm, (void *)mod, rg, (unsigned long long)gp, gb, gc);
	rg = rm ? rm : cuModuleGetGlobal(&gp, &gb, mod, "no_such_global");
	printf("cuModuleGetGlobal(no_such_global) rc=%d\n", rg);

	auto t0 = std::chrono::steady_clock::now();
	CUpointer_attribute attrs[] = { CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
		CU_POINTER_ATTRIBUTE_RANGE_SIZE, CU_POINTER_ATTRIBUTE_MAPPED };
	unsigned type; CUdeviceptr st; size_t sz; int mp; void *data[] = { &type, &st, &sz, &mp };
	for (int i = 0; i < 10000; i++) cuPointerGetAttributes(4, attrs, data, (CUdeviceptr)d + i);
	auto t1 = std::chrono::steady_clock::now();
	for (int i = 0; i < 10000; i++) cuPointerGetAttributes(4, attrs, data, 0x3f80000040000000ull + i * 8);
	auto t2 = std::chrono::steady_clock::now();
	printf("cuPointerGetAttributes: %.3f us (device ptr), %.3f us (not a pointer)\n",
	       std::chrono::duration<double, std::micro>(t1 - t0).count() / 1e4,
	       std::chrono::duration<double, std::micro>(t2 - t1).count() / 1e4);
	float *big, *bak; cudaMalloc(&big, 64 << 20); cudaMalloc(&bak, 64 << 20);
	for (int rep = 0; rep < 3; rep++) {
		cudaDeviceSynchronize(); auto a = std::chrono::steady_clock::now();
		cudaMemcpyAsync(bak, big, 64 << 20, cudaMemcpyDeviceToDevice, 0); cudaDeviceSynchronize();
		auto b = std::chrono::steady_clock::now();
		printf("D2D 64 MB: %.1f us\n", std::chrono::duration<double, std::micro>(b - a).count());
	}
	for (int rep = 0; rep < 3; rep++) {
		cudaDeviceSynchronize(); auto a = std::chrono::steady_clock::now();
		for (int k = 0; k < 100; k++) cudaMemcpyAsync(bak, big, 4096, cudaMemcpyDeviceToDevice, 0);
		cudaDeviceSynchronize();
		auto b = std::chrono::steady_clock::now();
		printf("100 x D2D 4 KB: %.1f us\n", std::chrono::duration<double, std::micro>(b - a).count());
	}
	probe_kernel<<<1, 1>>>(d, 1, ptr_list{}, 1.0);
	printf("done %d\n", (int)cudaDeviceSynchronize());
	return 0;
}
