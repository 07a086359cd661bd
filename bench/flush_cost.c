/* bench/flush_cost.c - what rangeprof's cache flush costs the GPU per run, plain (code
 * segments, then the read sweep of one L2's worth, or as bench/meson.build's variants set
 * flush.c's FLUSH_* parameters: the flush before session 12) and empty
 * (the flush since: the same kernel, launched cooperatively, ending with a grid barrier and
 * the discard of the swept lines), issue 22 item 3. Plain runs one block per SM where empty
 * runs FLUSH_BLOCKS_PER_SM (flush.c: a flush never launched cooperatively gets one, since
 * the review of session 21), so that with 2 the difference is no longer the discard's cost
 * alone (session 21's 57.8 us plain had 2). It builds
 * inject/session/flush.c itself (the library's flush, not a copy), and on device 0 times with CUDA
 * events N flushes queued back to back, as a pass queues its runs, after 20 untimed ones;
 * ROUNDS times, alternating plain and empty, and prints each round's microseconds per
 * flush and the medians. It prints the host time of each set-up first: the load of the
 * kernel, from the build's image in flush_cost_image (inject/session/flush_image.h) and
 * from the text in the others (the driver's JIT; CUDA_CACHE_DISABLE=1 keeps its cache out).
 * Build: meson setup build-bench -Dbench=true && meson compile -C build-bench bench
 * (bench/meson.build). Run: flush_cost [N [ROUNDS]] (defaults 200 and 7), on the GPU
 * machine. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "collector/api.h"
#include "inject/session/flush.h"
#include "inject/session/flush_image.h"

/* The flush's build parameters (bench/meson.build's variants set them; flush.c has the
 * defaults), printed with the result. */
#ifndef FLUSH_SWEEP_HALVES
#define FLUSH_SWEEP_HALVES 0
#endif
#ifndef FLUSH_SWEEP_UNROLL
#define FLUSH_SWEEP_UNROLL 0
#endif
#ifndef FLUSH_BLOCKS_PER_SM
#define FLUSH_BLOCKS_PER_SM 0
#endif
#ifndef FLUSH_SEGMENT_INSTRUCTIONS
#define FLUSH_SEGMENT_INSTRUCTIONS (-1)
#endif

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Microseconds per flush of n queued back to back on stream, or -1 on a driver error. */
static double per_flush_us(struct inject_flush *f, CUstream stream, CUevent start, CUevent stop,
			   int n)
{
	float ms = 0;
	for (int i = 0; i < 20; i++)
		if (inject_flush_launch(f, stream))
			return -1;
	if (rp_api.cuEventRecord(start, stream))
		return -1;
	for (int i = 0; i < n; i++)
		if (inject_flush_launch(f, stream))
			return -1;
	if (rp_api.cuEventRecord(stop, stream) || rp_api.cuEventSynchronize(stop) ||
	    rp_api.cuEventElapsedTime(&ms, start, stop))
		return -1;
	return ms * 1e3 / n;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 200, rounds = argc > 2 ? atoi(argv[2]) : 7;
	if (n < 1 || n > 100000 || rounds < 1 || rounds > 100) {
		fprintf(stderr, "usage: flush_cost [N 1-100000 [ROUNDS 1-100]]\n");
		return 2;
	}
	char err[2048] = "";
	CUdevice dev;
	CUcontext ctx;
	CUstream stream = NULL;
	CUevent start, stop;
	if (collector_api_load("/usr/local/cuda/lib64", err, sizeof(err)) || rp_api.cuInit(0) ||
	    rp_api.cuDeviceGet(&dev, 0) || rp_api.cuDevicePrimaryCtxRetain(&ctx, dev) ||
	    rp_api.cuCtxSetCurrent(ctx) || rp_api.cuEventCreate(&start, 0) ||
	    rp_api.cuEventCreate(&stop, 0)) {
		fprintf(stderr, "flush_cost: no context: %s\n", err);
		return 1;
	}
	struct inject_flush plain = { 0 }, empty = { 0 };
	struct timespec t[3];
	clock_gettime(CLOCK_MONOTONIC, &t[0]);
	if (inject_flush_init(&plain, 0, false, err, sizeof(err)) ||
	    (clock_gettime(CLOCK_MONOTONIC, &t[1]), inject_flush_init(&empty, 0, true, err,
								       sizeof(err)))) {
		fprintf(stderr, "flush_cost: %s\n", err);
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t[2]);
	for (int k = 0; k < 2; k++) {
		struct inject_flush *f = k ? &empty : &plain;
		printf("set-up %-5s %8.1f ms, kernel from %s%s\n", k ? "empty" : "plain",
		       (double)(t[k + 1].tv_sec - t[k].tv_sec) * 1e3 +
			       (double)(t[k + 1].tv_nsec - t[k].tv_nsec) / 1e6,
		       f->image_refused ? "the text, the image refused: " :
		       inject_flush_image(f->empty, (int)f->per_sm) ? "the image" : "the text",
		       f->image_refused ? collector_cu_error(f->image_refused) : "");
	}
	double *us[2] = { calloc((size_t)rounds, sizeof(double)), calloc((size_t)rounds, sizeof(double)) };
	if (!us[0] || !us[1])
		return 1;
	for (int r = 0; r < rounds; r++)
		for (int k = 0; k < 2; k++) {
			us[k][r] = per_flush_us(k ? &empty : &plain, stream, start, stop, n);
			if (us[k][r] < 0) {
				fprintf(stderr, "flush_cost: a %s flush failed\n", k ? "empty" : "plain");
				return 1;
			}
			printf("round %d %-5s %8.2f us per flush\n", r, k ? "empty" : "plain", us[k][r]);
		}
	/* Set at set-up or by a refused cooperative launch: then "empty" timed the sweep. */
	if (empty.notice[0])
		fprintf(stderr, "flush_cost: %s; 'empty' above is the plain flush\n", empty.notice);
	qsort(us[0], (size_t)rounds, sizeof(double), cmp_double);
	qsort(us[1], (size_t)rounds, sizeof(double), cmp_double);
	/* 0 or -1: flush.c's default. */
	printf("flush_cost halves=%d unroll=%d blocks/SM=%d (plain %u, empty %u blocks) segment=%d: "
	       "%d flushes back to back, median of %d rounds: plain %.2f us, empty %.2f us "
	       "(+%.2f)\n",
	       FLUSH_SWEEP_HALVES, FLUSH_SWEEP_UNROLL, FLUSH_BLOCKS_PER_SM, plain.blocks, empty.blocks,
	       FLUSH_SEGMENT_INSTRUCTIONS, n, rounds,
	       us[0][rounds / 2], us[1][rounds / 2], us[1][rounds / 2] - us[0][rounds / 2]);
	inject_flush_finish(&plain);
	inject_flush_finish(&empty);
	return 0;
}
