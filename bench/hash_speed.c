/* bench/hash_speed.c - how fast memory/verify.c's hash kernel reads a large segment, and
 * that its sums do not depend on how many words a thread loads together
 * (MEM_HASH_UNROLL): issue 35 items 4 and 8, whose verification hashes every tracked byte
 * outside a launch's reach twice. It includes verify.c itself (the library's kernel and
 * its host twin host_hash, not copies); bench/meson.build builds it as the library does
 * (hash_speed), with one load at a time (hash_speed_u1, the kernel before session 19), 2
 * and 8 (_u2, _u8), and with 8 blocks per SM (_b8).
 * On device 0: GIB GiB + 13 bytes, filled from a fixed pseudo-random sequence, then
 *   - the sums of that allocation hashed over several lengths (whole, 8-byte aligned,
 *     odd tails, a few bytes): lines "sum LENGTH 0x...", the same from both builds, and
 *     a 1 MiB + 5 byte length checked against host_hash on a copy ("host agrees");
 *   - REPS timed hashes of the whole allocation (mem_hash_again: the attribute query,
 *     the launch, its wait and the sums' copy back), wall clock; each one's GB/s and the
 *     median;
 *   - REPS timed hashes of 6 tracked segments of 16 MiB: the cost beyond the bytes (the
 *     atomic adds of the sums, the launches, the wait).
 * Build: meson setup build-bench -Dbench=true && meson compile -C build-bench bench.
 * Run: hash_speed [GIB [REPS]] (defaults 8 and 7), on the GPU machine; both builds:
 *   for b in hash_speed_u1 hash_speed_u2 hash_speed hash_speed_u8 hash_speed_b8; do
 *           build-bench/bench/$b 8 7; done */
#include "memory/verify.c"

#include <time.h>

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static uint64_t next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* The sum of [base, base + len) as the verification computes it: one tracked segment. */
static int sum_of(struct mem_verifier *v, CUdeviceptr base, size_t len, uint64_t *sum,
		  char *err, size_t err_size)
{
	mem_track_add(base, len);
	struct mem_reach reach = { 0 };
	struct mem_hashes h;
	int rc = mem_hash_outside(v, &reach, NULL, &h, err, err_size);
	mem_track_remove(base);
	if (rc)
		return rc;
	if (h.count != 1) {
		snprintf(err, err_size, "%zu segments for one allocation", h.count);
		mem_hashes_finish(&h);
		return -1;
	}
	*sum = h.sums[0];
	mem_hashes_finish(&h);
	return 0;
}

int main(int argc, char **argv)
{
	long gib = argc > 1 ? atol(argv[1]) : 8;
	int reps = argc > 2 ? atoi(argv[2]) : 7;
	if (gib < 1 || gib > 120 || reps < 1 || reps > 100) {
		fprintf(stderr, "usage: hash_speed [GIB 1-120 [REPS 1-100]]\n");
		return 2;
	}
	char err[2048] = "";
	CUdevice dev;
	CUcontext ctx;
	if (collector_api_load("/usr/local/cuda/lib64", err, sizeof(err)) || rp_api.cuInit(0) ||
	    rp_api.cuDeviceGet(&dev, 0) || rp_api.cuDevicePrimaryCtxRetain(&ctx, dev) ||
	    rp_api.cuCtxSetCurrent(ctx)) {
		fprintf(stderr, "hash_speed: no context: %s\n", err);
		return 1;
	}
	size_t total = ((size_t)gib << 30) + 13, chunk = (size_t)64 << 20;
	CUdeviceptr base;
	uint64_t *host = malloc(chunk);
	if (!host || rp_api.cuMemAlloc(&base, total)) {
		fprintf(stderr, "hash_speed: cannot allocate %zu bytes\n", total);
		return 1;
	}
	uint64_t seed = 0x9E3779B97F4A7C15u;
	for (size_t i = 0; i < chunk / 8; i++)
		host[i] = next(&seed);
	for (size_t off = 0; off < total; off += chunk) {
		size_t n = total - off < chunk ? total - off : chunk;
		/* Each chunk differs from the last: its first word is its offset. */
		host[0] = off;
		/* Unified addressing: cuMemcpy takes the host buffer's address as it is. */
		if (rp_api.cuMemcpy(base + off, (CUdeviceptr)(uintptr_t)host, n)) {
			fprintf(stderr, "hash_speed: filling failed at %zu\n", off);
			return 1;
		}
	}
	struct mem_verifier v = { 0 };
	if (mem_verifier_init(&v, 0, err, sizeof(err))) {
		fprintf(stderr, "hash_speed: %s\n", err);
		return 1;
	}
	printf("hash_speed MEM_HASH_UNROLL=%d MEM_HASH_BLOCKS_PER_SM=%d: %ld GiB + 13 bytes, %u "
	       "blocks of 256\n", MEM_HASH_UNROLL, MEM_HASH_BLOCKS_PER_SM, gib, v.blocks);
	const size_t lengths[] = { total, total - 13, total - 5, ((size_t)1 << 20) + 5,
				   4096 * 3 + 7, 8, 7 };
	for (size_t i = 0; i < sizeof(lengths) / sizeof(lengths[0]); i++) {
		uint64_t sum;
		if (sum_of(&v, base, lengths[i], &sum, err, sizeof(err))) {
			fprintf(stderr, "hash_speed: %s\n", err);
			return 1;
		}
		printf("sum %zu 0x%016llx\n", lengths[i], (unsigned long long)sum);
		if (lengths[i] == ((size_t)1 << 20) + 5) {
			unsigned char *copy = malloc(lengths[i]);
			CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
			if (!copy || (r = rp_api.cuMemcpyDtoHAsync(copy, base, lengths[i], NULL)) ||
			    (r = rp_api.cuStreamSynchronize(NULL))) {
				fprintf(stderr, "hash_speed: copying 1 MiB + 5 bytes back failed: "
					"%s\n", collector_cu_error(r));
				return 1;
			}
			printf("host agrees (1 MiB + 5): %s\n",
			       host_hash(copy, lengths[i]) == sum ? "yes" : "NO");
			free(copy);
		}
	}
	mem_track_add(base, total);
	struct mem_reach reach = { 0 };
	struct mem_hashes before, after;
	if (mem_hash_outside(&v, &reach, NULL, &before, err, sizeof(err))) {
		fprintf(stderr, "hash_speed: %s\n", err);
		return 1;
	}
	double *gbs = calloc((size_t)reps, sizeof(double));
	if (!gbs) {
		fprintf(stderr, "hash_speed: out of memory\n");
		return 1;
	}
	int status = 0;
	for (int r = 0; r < reps; r++) {
		double t = now_s();
		if (mem_hash_again(&v, &before, NULL, &after, err, sizeof(err))) {
			fprintf(stderr, "hash_speed: %s\n", err);
			return 1;
		}
		t = now_s() - t;
		if (mem_hashes_differ(&before, &after) >= 0) {
			fprintf(stderr, "hash_speed: the sum moved between two hashes of the same "
				"bytes\n");
			status = 1;
		}
		mem_hashes_finish(&after);
		gbs[r] = (double)total / t / 1e9;
		printf("rep %d: %.2f ms, %.0f GB/s\n", r, t * 1e3, gbs[r]);
	}
	qsort(gbs, (size_t)reps, sizeof(double), cmp_double);
	printf("hash_speed MEM_HASH_UNROLL=%d MEM_HASH_BLOCKS_PER_SM=%d: median %.0f GB/s over %d "
	       "hashes of %ld GiB\n", MEM_HASH_UNROLL, MEM_HASH_BLOCKS_PER_SM, gbs[reps / 2], reps,
	       gib);
	mem_hashes_finish(&before);
	/* What a hash costs beyond its bytes: 6 segments of 16 MiB, as a later launch's
	 * comparison of a matmul's three ranges with their copies (0.1 GB, ~25 us of reads
	 * at the rate above). */
	mem_track_remove(base);
	const size_t pieces = 6, piece = (size_t)16 << 20;
	for (size_t i = 0; i < pieces && 2 * i * piece + piece <= total; i++)
		mem_track_add(base + 2 * i * piece, piece);
	if (mem_hash_outside(&v, &reach, NULL, &before, err, sizeof(err))) {
		fprintf(stderr, "hash_speed: %s\n", err);
		return 1;
	}
	double *ms = gbs;   /* the rates are printed: the array now holds milliseconds */
	for (int r = 0; r < reps; r++) {
		double t = now_s();
		if (mem_hash_again(&v, &before, NULL, &after, err, sizeof(err))) {
			fprintf(stderr, "hash_speed: %s\n", err);
			return 1;
		}
		ms[r] = (now_s() - t) * 1e3;
		if (mem_hashes_differ(&before, &after) >= 0) {
			fprintf(stderr, "hash_speed: the sum of a segment moved between two hashes of "
				"the same bytes\n");
			status = 1;
		}
		mem_hashes_finish(&after);
	}
	qsort(ms, (size_t)reps, sizeof(double), cmp_double);
	printf("hash_speed: %zu segments of 16 MiB: median %.3f ms a hash (%.1f us a segment) "
	       "over %d\n", before.count, ms[reps / 2], ms[reps / 2] * 1e3 / (double)before.count,
	       reps);
	mem_hashes_finish(&before);
	mem_verifier_finish(&v);
	return status;
}
