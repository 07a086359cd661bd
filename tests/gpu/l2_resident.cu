// tests/gpu/l2_resident.cu - issue 22: L2-resident kernels that write, each run with its
// arrays at several places in one device allocation, so that a comparison of DRAM writes
// between two tools is made over the same set of places.
//
// Why places: a kernel whose footprint is near the L2's capacity writes back to DRAM the
// dirty lines the L2 evicts during it, and which lines collide in the L2 follows their
// physical addresses. Each tool's own device memory moves the application's allocations
// (ncu takes 126 MiB more than rangeprof before the application's first one), so one place
// under one tool is another place under the other; bench/l2_placement.sh measures how much
// that moves the figures (doc/measurements.md, "DRAM writes of L2-resident kernels").
//
// Kernels (each launch in NVTX range "<kind>/p<place>"):
//   gather     out[i] = in[(i*7) % n] + out[i] over two 16 MB arrays (tests/gpu/l2_rmw.cu's)
//   overwrite  writes half the L2 (L2 bytes / 2) with values of i, reads nothing
//   histogram  atomicAdd into 8 M bins (32 MB) from 4 M keys (16 MB) read from memory (it
//              writes nothing back to DRAM during its run under either tool, with 16 MB
//              of bins as with 32)
//   readonly   reads twice the L2 and writes nothing: the DRAM writes it is charged with are
//              lines the tool left dirty before it (not a kernel of the check: a probe)
// Build: nvcc -O2 -arch=sm_90 -std=c++17 tests/gpu/l2_resident.cu -o l2_resident
// Run:   ./l2_resident [ITER [PLACES [STEP_KB [KINDS [USED_MB]]]]]
//        (defaults 3 16 2048 gather,overwrite,histogram 0); with L2_RESIDENT_FLUSH=sweep or
//        empty the program flushes the L2 itself before each launch (own_flush, below)
// Prints a checksum of the whole allocation, which rangeprof must not change; the device
// memory in use before the allocation goes to stderr (what a tool took before it). With
// USED_MB, a padding allocation first brings the device memory in use to USED_MB: a padding
// of N MB moves the allocation by N MB of physical memory under either tool, but padding
// rangeprof to ncu's memory in use did not put it where it lies under ncu (bench/NOTES.md,
// session 11, call 2).
#include <cstdio>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include "l2_kernels.cuh"

static const unsigned KEYS = 4u << 20;      // 16 MB of keys
static const unsigned BINS = 8u << 20;      // 32 MB of bins

__global__ void overwrite(unsigned *out, unsigned n, unsigned seed)
{
	for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		out[i] = i ^ seed;
}

__global__ void histogram(const unsigned *keys, unsigned *bins)
{
	for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < KEYS; i += gridDim.x * blockDim.x)
		atomicAdd(&bins[keys[i] & (BINS - 1)], 1u);
}

// Pseudo-random words over the whole allocation: keys spread over every bin, and gather's
// inputs are not all zero.
__global__ void fill(unsigned *p, size_t n)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
		unsigned x = (unsigned)i * 2654435761u + 12345u;
		x ^= x >> 15;
		x *= 2246822519u;
		x ^= x >> 13;
		p[i] = x & 0x00ffffffu;   // small enough that gather's float sums stay exact
	}
}

// Whether kinds is a comma-separated list of known kinds only.
static bool known_kinds(const char *kinds)
{
	static const char *const known[] = { "gather", "overwrite", "histogram", "readonly" };
	if (!*kinds)
		return false;
	for (const char *k = kinds; k;) {
		const char *end = strchr(k, ',');
		size_t n = end ? (size_t)(end - k) : strlen(k);
		bool ok = false;
		for (const char *name : known)
			ok |= n == strlen(name) && !strncmp(k, name, n);
		if (!ok)
			return false;
		k = end ? end + 1 : nullptr;
	}
	return true;
}

// L2_RESIDENT_FLUSH=sweep|empty: the program flushes the L2 itself before each launch,
// outside its NVTX range (a tool then measures with its own cache control off): sweep
// reads twice the L2 (inject/session/flush.c's sweep, tests/gpu/l2_kernels.cuh), empty then
// discards the sweep's last L2 of lines (as inject/session/flush.c's flush now does).
struct own_flush {
	unsigned char *buf = nullptr;
	size_t bytes = 0;
	bool discard = false;
	void operator()() const
	{
		if (!buf)
			return;
		sweep<<<132, 1024>>>((const uint4 *)buf, bytes / 16, (unsigned *)buf);
		if (discard)
			discard_l2<<<132, 1024>>>(buf, bytes / 2 / 128, bytes / 128);
		CK(cudaGetLastError());
	}
};

// launch(place, iteration) ITER times at each place, each in NVTX range "<kind>/pNN",
// where kinds names the kind; flush() before each.
template <typename Launch>
static void at_each_place(const char *kinds, const char *kind, int places, int iterations,
                          const own_flush &flush, Launch launch)
{
	if (!strstr(kinds, kind))   // known_kinds: no kind's name is part of another's
		return;
	char name[64];
	for (int p = 0; p < places; p++)
		for (int it = 0; it < iterations; it++) {
			flush();
			snprintf(name, sizeof(name), "%s/p%02d", kind, p);
			nvtxRangePushA(name);
			launch(p, it);
			nvtxRangePop();
		}
}

int main(int argc, char **argv)
{
	int iterations = argc > 1 ? atoi(argv[1]) : 3;
	int places = argc > 2 ? atoi(argv[2]) : 16;
	long step_kb = argc > 3 ? atol(argv[3]) : 2048;
	const char *kinds = argc > 4 ? argv[4] : "gather,overwrite,histogram";
	long used_mb = argc > 5 ? atol(argv[5]) : 0;
	// Bounds that keep every size below in range (1 TiB of places at most).
	if (iterations < 1 || places < 1 || places > 4096 || step_kb < 1 || step_kb > (1L << 18) ||
	    used_mb < 0 || used_mb > (1L << 20) || !known_kinds(kinds)) {
		fprintf(stderr, "usage: l2_resident [ITER>=1 [PLACES 1-4096 [STEP_KB 1-262144 [KINDS "
		        "[USED_MB 0-1048576]]]]]\n  KINDS: a comma-separated list of gather, overwrite, "
		        "histogram, readonly\n");
		return 2;
	}
	const size_t step = (size_t)step_kb << 10;
	int l2 = 0;
	CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
	const unsigned half_l2_words = (unsigned)(l2 / 2 / 4);
	// What one place holds: every kernel fits (readonly's twice the L2 only if asked for).
	const size_t span = strstr(kinds, "readonly") ? 2 * (size_t)l2 : (size_t)48 << 20;
	size_t free_before, free_after, total;
	CK(cudaFree(0));
	CK(cudaMemGetInfo(&free_before, &total));
	void *pad = nullptr;
	size_t used = total - free_before, wanted = (size_t)used_mb << 20;
	if (wanted > used) {
		CK(cudaMalloc(&pad, wanted - used));
		fprintf(stderr, "l2_resident: %zu MiB used, %zu MiB padding allocated\n", used >> 20,
		        (wanted - used) >> 20);
		CK(cudaMemGetInfo(&free_before, &total));
	} else if (used_mb) {
		fprintf(stderr, "l2_resident: %zu MiB used already, more than USED_MB %ld\n", used >> 20, used_mb);
	}
	size_t bytes = span + (size_t)(places - 1) * step;
	unsigned char *pool;
	CK(cudaMalloc(&pool, bytes));
	CK(cudaMemGetInfo(&free_after, &total));
	fprintf(stderr, "l2_resident: %zu MiB used before the allocation, %zu MiB allocation at %p, "
	        "%zd MiB more used by then, L2 %d bytes\n", (total - free_before) >> 20, bytes >> 20,
	        (void *)pool, ((ptrdiff_t)free_before - (ptrdiff_t)free_after - (ptrdiff_t)bytes) / (1 << 20), l2);
	fill<<<1056, 256>>>((unsigned *)pool, bytes / 4);
	CK(cudaGetLastError());
	own_flush flush;
	const char *how = getenv("L2_RESIDENT_FLUSH");
	if (how && *how) {
		if (strcmp(how, "sweep") && strcmp(how, "empty")) {
			fprintf(stderr, "l2_resident: L2_RESIDENT_FLUSH='%.60s': expected sweep or empty\n", how);
			return 2;
		}
		// After the pool, so that the pool lies where it does without the flush.
		flush.bytes = 2 * (size_t)l2;
		flush.discard = !strcmp(how, "empty");
		CK(cudaMalloc(&flush.buf, flush.bytes));
		CK(cudaMemset(flush.buf, 0, flush.bytes));
	}
	at_each_place(kinds, "gather", places, iterations, flush, [&](int p, int) {
		float *base = (float *)(pool + p * step);
		gather<<<1056, 256>>>(base, base + GATHER_N);
	});
	at_each_place(kinds, "overwrite", places, iterations, flush, [&](int p, int it) {
		overwrite<<<1056, 256>>>((unsigned *)(pool + p * step), half_l2_words, (unsigned)(p * 131 + it));
	});
	at_each_place(kinds, "histogram", places, iterations, flush, [&](int p, int) {
		unsigned *keys = (unsigned *)(pool + p * step);
		histogram<<<1056, 256>>>(keys, keys + KEYS);
	});
	at_each_place(kinds, "readonly", places, iterations, flush, [&](int p, int) {
		readonly<<<1056, 256>>>((const uint4 *)(pool + p * step), 2 * (size_t)l2 / 16, (unsigned *)pool);
	});
	CK(cudaGetLastError());
	CK(cudaDeviceSynchronize());
	unsigned *h = (unsigned *)malloc(bytes);
	if (!h) {
		fprintf(stderr, "out of host memory\n");
		return 1;
	}
	CK(cudaMemcpy(h, pool, bytes, cudaMemcpyDeviceToHost));
	unsigned long long sum = 0;
	for (size_t i = 0; i < bytes / 4; i++)
		sum = sum * 1099511628211ull + h[i];
	printf("l2_resident checksum %016llx\n", sum);
	free(h);
	CK(cudaFree(pool));
	if (flush.buf)
		CK(cudaFree(flush.buf));
	if (pad)
		CK(cudaFree(pad));
	return 0;
}
