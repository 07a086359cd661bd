/* inject/session/flush.c - loads and launches the cache flush (the SMs' instruction caches,
 * then an L2 read sweep, then the discard of the swept lines), loaded for each context at
 * its set-up (early or at its first measured launch) and launched before every replay.
 * Calls: collector/ (the driver).
 * Called by: session.c (loads it), kernel_workload.c, whole_workload.c, measure.c (run 0 of
 * a measurement whose first run is the application's launch).
 * Lock: none (constant PTX; the loaded flush is the context's state, session.c's). */
#include "inject/session/flush.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "collector/api.h"
#include "common/error.h"

/* The sweep kernel: first each warp runs its own segment of straight-line code, then
 * every thread reads 16-byte words with ld.global.cg (cached in L2 only) in a grid-stride
 * loop and folds them into a value stored only if it equals an impossible constant, so
 * that neither the code nor the loads can be optimised away.
 * The code segments evict the SMs' instruction caches: the L2 sweep alone left a kernel's
 * code cached in the SM across back-to-back runs, and its runs after the first measured
 * up to 8.9 % faster than ncu, which flushes every cache before a pass (a cuBLAS sgemm
 * -8.85 %, a cuDNN implicit GEMM convolution -7.49 %; same SM clock, fewer cycles; with
 * one run per launch, whose previous kernel was another, they agreed better). With the
 * code segments: the sgemm -1.24 % and +2.12 % (0.16 us), the convolution -0.80 % and
 * -0.49 %, the other kernels within 1.4 % (tests/gpu/library_kernels.sh:
 * doc/measurements.md, "The flush"). One block of FLUSH_WARPS warps per SM runs every
 * segment there: FLUSH_WARPS x FLUSH_SEGMENT_INSTRUCTIONS instructions of 16 bytes, 256 KB
 * of code, each warp its own 8 KB; it costs +0.04 ms per run (same section). 256 KB is
 * the size that was tried and measured above: no document here gives the size of the
 * SMs' instruction caches, so whether less would do is not known.
 * Reading leaves every line clean: evicting the application's dirty lines happens here,
 * not inside the measured kernel (tests/gpu/l2_residual.cu: a kernel after the flush
 * writes a median 0 bytes to DRAM where dirty lines would be written back, same section).
 * Reading also leaves the L2 full of the sweep's clean lines, where ncu's cache control
 * leaves none valid; a half-L2 overwrite then wrote 2.3-2.5 % less back to DRAM than with
 * none valid. So the sweep ends, where the device can, with discard.global.L2 over the
 * lines it read last, after a grid barrier (flush_ptx_empty_tail): +5.2 us per run, and
 * the overwrite's DRAM writes equal to ncu's over the program's own sweep and discard
 * (doc/measurements.md, "DRAM writes of L2-resident kernels"). */
#define FLUSH_WARPS 32
#define FLUSH_SEGMENT_INSTRUCTIONS 512
/* The discard covers the last FLUSH_DISCARD_HALVES halves of the L2's size of the swept
 * buffer: 2, the last L2's worth, the lines the sweep read last. 4 (all of it) moved the
 * DRAM writes of tests/gpu/l2_resident.cu's kernels by at most 0.3 % and cost 2-4 us more
 * per run (bench/NOTES.md, session 12); a build may set another (0: the sweep alone, the
 * flush before session 12, for comparisons: bench/l2_placement.sh). */
#ifndef FLUSH_DISCARD_HALVES
#define FLUSH_DISCARD_HALVES 2
#endif
/* The sweep reads FLUSH_SWEEP_HALVES halves of the L2's size: 4, twice the L2, so that
 * every line held before is evicted whatever the replacement order. A build may set 2, one
 * L2's worth, the flush that issue 35's floor counts (bench/flush_cost_s2, and
 * bench/l2_placement.sh's RECORDINGS with such a build against ncu: doc/measurements.md,
 * "The flush"). */
#ifndef FLUSH_SWEEP_HALVES
#define FLUSH_SWEEP_HALVES 4
#endif
_Static_assert(FLUSH_DISCARD_HALVES <= FLUSH_SWEEP_HALVES && FLUSH_SWEEP_HALVES >= 1,
	       "the discard covers lines the sweep read");

/* The kernel's head, with %s for the PTX version, the target and the discard's parameter.
 * The sweep alone keeps version 7.0 and sm_70; discard.global.L2 needs 7.4 and sm_80. */
static const char flush_ptx_head[] =
	".version %s\n"
	".target %s\n"
	".address_size 64\n"
	".visible .entry rangeprof_l2_flush(.param .u64 buf, .param .u64 words, .param .u64 sink%s)\n"
	".maxntid 1024, 1, 1\n"
	"{\n"
	"  .reg .pred %%p<4>;\n"
	"  .reg .b32 %%r<16>;\n"
	"  .reg .b64 %%rd<24>;\n"
	"  ld.param.u64 %%rd1, [buf];\n"
	"  ld.param.u64 %%rd2, [words];\n"
	"  ld.param.u64 %%rd3, [sink];\n"
	"  mov.u32 %%r3, %%tid.x;\n"
	"  cvt.u32.u64 %%r10, %%rd2;\n"
	"  or.b32 %%r11, %%r10, 1;\n"
	"  xor.b32 %%r10, %%r10, %%r3;\n"
	"  shr.u32 %%r12, %%r3, 5;\n";

static const char flush_ptx_sweep[] =
	"SWEEP:\n"
	"  mov.u32 %r1, %ctaid.x;\n"
	"  mov.u32 %r2, %ntid.x;\n"
	"  mov.u32 %r3, %tid.x;\n"
	"  mov.u32 %r4, %nctaid.x;\n"
	"  cvt.u64.u32 %rd4, %r1;\n"
	"  cvt.u64.u32 %rd5, %r2;\n"
	"  cvt.u64.u32 %rd6, %r3;\n"
	"  mad.lo.u64 %rd7, %rd4, %rd5, %rd6;\n"
	"  cvt.u64.u32 %rd8, %r4;\n"
	"  mul.lo.u64 %rd9, %rd8, %rd5;\n"
	"  mov.u32 %r5, %r10;\n"
	"LOOP:\n"
	"  setp.ge.u64 %p1, %rd7, %rd2;\n"
	"  @%p1 bra DONE;\n"
	"  shl.b64 %rd10, %rd7, 4;\n"
	"  add.u64 %rd11, %rd1, %rd10;\n"
	"  ld.global.cg.v4.u32 {%r6, %r7, %r8, %r9}, [%rd11];\n"
	"  xor.b32 %r5, %r5, %r6;\n"
	"  xor.b32 %r5, %r5, %r7;\n"
	"  xor.b32 %r5, %r5, %r8;\n"
	"  xor.b32 %r5, %r5, %r9;\n"
	"  add.u64 %rd7, %rd7, %rd9;\n"
	"  bra LOOP;\n"
	"DONE:\n"
	"  setp.eq.u32 %p2, %r5, 0x7e57ab1e;\n"
	"  @%p2 st.global.u32 [%rd3], %r5;\n";

/* Where the device cannot discard, the flush ends with the sweep. */
static const char flush_ptx_plain_tail[] =
	"  ret;\n"
	"}\n";

/* Elsewhere it then waits for every block's sweep (a grid barrier on a 64-bit count at
 * sink + 8 that only grows: the launch is cooperative, so every block is resident and the
 * wait ends), then discards the lines of the buffer from line [discard_from] on, the last
 * L2's worth that the sweep read, so that the L2 holds no valid line of it when the
 * kernel starts. Its loads have all returned (their values were folded) before bar.sync,
 * so no discarded line is read again; the count's increment is a release and its reads
 * acquires, as cooperative groups' grid sync does, so that the PTX memory model orders
 * every block's loads before any block's discards too. discard_from at or past the
 * buffer's end (a plain launch, once a cooperative one was refused) skips both. */
static const char flush_ptx_empty_tail[] =
	"  ld.param.u64 %rd16, [discard_from];\n"
	"  shr.u64 %rd17, %rd2, 3;\n"
	"  setp.ge.u64 %p1, %rd16, %rd17;\n"
	"  @%p1 bra DISCARDED;\n"
	"  bar.sync 0;\n"
	"  setp.ne.u32 %p1, %r3, 0;\n"
	"  @%p1 bra WAITED;\n"
	"  add.u64 %rd12, %rd3, 8;\n"
	"  atom.release.gpu.global.add.u64 %rd13, [%rd12], 1;\n"
	"  div.u64 %rd14, %rd13, %rd8;\n"
	"  add.u64 %rd14, %rd14, 1;\n"
	"  mul.lo.u64 %rd14, %rd14, %rd8;\n"
	"SPIN:\n"
	"  ld.acquire.gpu.global.u64 %rd15, [%rd12];\n"
	"  setp.lt.u64 %p1, %rd15, %rd14;\n"
	"  @%p1 bra SPIN;\n"
	"WAITED:\n"
	"  bar.sync 0;\n"
	"  mad.lo.u64 %rd18, %rd4, %rd5, %rd6;\n"
	"  add.u64 %rd18, %rd18, %rd16;\n"
	"DISCARD:\n"
	"  setp.ge.u64 %p1, %rd18, %rd17;\n"
	"  @%p1 bra DISCARDED;\n"
	"  shl.b64 %rd19, %rd18, 7;\n"
	"  add.u64 %rd20, %rd1, %rd19;\n"
	"  discard.global.L2 [%rd20], 128;\n"
	"  add.u64 %rd18, %rd18, %rd9;\n"
	"  bra DISCARD;\n"
	"DISCARDED:\n"
	"  ret;\n"
	"}\n";

/* The PTX text: head, the dispatch of each warp to its segment, the segments (a chain of
 * multiply-adds with distinct constants, through a multiplier known only at run time, so
 * that nothing folds), the sweep, and its end with or without the discard. malloc'ed; NULL
 * when out of memory. */
static char *flush_ptx(bool empty)
{
	size_t cap = sizeof(flush_ptx_head) + 64 + sizeof(flush_ptx_sweep) +
		     sizeof(flush_ptx_empty_tail) +
		     (size_t)FLUSH_WARPS * (FLUSH_SEGMENT_INSTRUCTIONS * 48 + 96);
	char *ptx = malloc(cap);
	if (!ptx)
		return NULL;
	size_t n = (size_t)snprintf(ptx, cap, flush_ptx_head, empty ? "7.4" : "7.0",
				    empty ? "sm_80" : "sm_70",
				    empty ? ", .param .u64 discard_from" : "");
	for (int w = 0; w < FLUSH_WARPS; w++)
		n += (size_t)snprintf(ptx + n, cap - n, "  setp.eq.u32 %%p3, %%r12, %d;\n"
				      "  @%%p3 bra SEG%d;\n", w, w);
	n += (size_t)snprintf(ptx + n, cap - n, "  bra SWEEP;\n");
	unsigned constant = 0x9e3779b9u;
	for (int w = 0; w < FLUSH_WARPS; w++) {
		n += (size_t)snprintf(ptx + n, cap - n, "SEG%d:\n", w);
		for (int i = 0; i < FLUSH_SEGMENT_INSTRUCTIONS; i++) {
			constant = constant * 1664525u + 1013904223u;
			n += (size_t)snprintf(ptx + n, cap - n,
					      "  mad.lo.u32 %%r10, %%r10, %%r11, %u;\n", constant);
		}
		n += (size_t)snprintf(ptx + n, cap - n, "  bra SWEEP;\n");
	}
	snprintf(ptx + n, cap - n, "%s%s", flush_ptx_sweep,
		 empty ? flush_ptx_empty_tail : flush_ptx_plain_tail);
	return ptx;
}

int inject_flush_init(struct inject_flush *f, int device, bool empty, char *err,
		      size_t err_size)
{
	CUdevice dev;
	int l2 = 0, sms = 0, major = 0, cooperative = 0;
	CUresult r;
	if ((r = rp_api.cuDeviceGet(&dev, device)) != CUDA_SUCCESS ||
	    (r = rp_api.cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev)) !=
		    CUDA_SUCCESS ||
	    (r = rp_api.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev)) !=
		    CUDA_SUCCESS ||
	    (r = rp_api.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
					     dev)) != CUDA_SUCCESS ||
	    (r = rp_api.cuDeviceGetAttribute(&cooperative, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH,
					     dev)) != CUDA_SUCCESS) {
		snprintf(err, err_size, "L2 flush: device attributes: %s", collector_cu_error(r));
		return RP_ERR_FAILED;
	}
	f->notice[0] = '\0';
	f->limit = INJECT_FLUSH_EMPTIES;
	if (empty && (major < 8 || !cooperative)) {
		f->limit = major < 8 ? INJECT_FLUSH_OLD_DEVICE : INJECT_FLUSH_NO_COOPERATIVE;
		snprintf(f->notice, sizeof(f->notice), "the L2 flush cannot discard the lines it "
			 "leaves on device %d (%s): each run starts from an L2 holding clean "
			 "lines instead of an empty one, which lowered a half-L2 overwrite's DRAM "
			 "writes by 2-3 %% against ncu's on an H200", device,
			 major < 8 ? "compute capability before 8.0" : "no cooperative launches");
		empty = false;
	}
	size_t l2_bytes = (size_t)(l2 > 0 ? l2 : (64 << 20));
	size_t bytes = FLUSH_SWEEP_HALVES * l2_bytes / 2;
	char *ptx = flush_ptx(empty);
	if (!ptx) {
		snprintf(err, err_size, "L2 flush: out of host memory");
		return RP_ERR_NO_MEMORY;
	}
	r = rp_api.cuModuleLoadData(&f->module, ptx);
	free(ptx);
	if (r != CUDA_SUCCESS ||
	    (r = rp_api.cuModuleGetFunction(&f->kernel, f->module, "rangeprof_l2_flush")) !=
		    CUDA_SUCCESS) {
		snprintf(err, err_size, "L2 flush: loading the sweep kernel: %s",
			 collector_cu_error(r));
		return RP_ERR_FAILED;
	}
	if ((r = rp_api.cuMemAlloc(&f->buffer, bytes)) != CUDA_SUCCESS ||
	    (r = rp_api.cuMemAlloc(&f->sink, 16)) != CUDA_SUCCESS) {
		snprintf(err, err_size, "L2 flush: cuMemAlloc(%zu bytes): %s", bytes,
			 collector_cu_error(r));
		return RP_ERR_FAILED;
	}
	f->words = bytes / 16;
	f->empty = empty;
	f->discard_from = (bytes - FLUSH_DISCARD_HALVES * l2_bytes / 2) / 128;
	/* One block per SM, so that every SM runs every code segment. */
	f->blocks = (unsigned)(sms > 0 ? sms : 132);
	return 0;
}

int inject_flush_launch(struct inject_flush *f, CUstream stream)
{
	if (f->empty) {
		void *args[] = { &f->buffer, &f->words, &f->sink, &f->discard_from };
		/* The grid barrier counts from 0 (flush_ptx_empty_tail): cleared on the stream of
		 * the first launch, so that set-up waits for nothing. */
		if (!f->barrier_cleared) {
			if (rp_api.cuMemsetD8Async(f->sink, 0, 16, stream) != CUDA_SUCCESS)
				return RP_ERR_FLUSH;
			f->barrier_cleared = true;
		}
		CUresult r = rp_api.cuLaunchCooperativeKernel(f->kernel, f->blocks, 1, 1,
							      32 * FLUSH_WARPS, 1, 1, 0, stream, args);
		if (r == CUDA_SUCCESS)
			return 0;
		/* Fewer SMs than the device has (a green context, MPS) or no cooperative launch
		 * here: the sweep alone from now on. Any other error is the context's. */
		if (r != CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE && r != CUDA_ERROR_NOT_SUPPORTED &&
		    r != CUDA_ERROR_NOT_PERMITTED)
			return RP_ERR_FLUSH;
		f->empty = false;
		f->limit = INJECT_FLUSH_REFUSED;
		f->refused = r;
		snprintf(f->notice, sizeof(f->notice), "the L2 flush cannot discard the lines it "
			 "leaves (its cooperative launch was refused: %s): each run starts from an "
			 "L2 holding clean lines instead of an empty one, which lowered a half-L2 "
			 "overwrite's DRAM writes by 2-3 %% against ncu's on an H200",
			 collector_cu_error(r));
	}
	/* Past the last line: no barrier, no discard (the sweep-only text ignores it). */
	unsigned long long nothing = f->words / 8;
	void *args[] = { &f->buffer, &f->words, &f->sink, &nothing };
	return rp_api.cuLaunchKernel(f->kernel, f->blocks, 1, 1, 32 * FLUSH_WARPS, 1, 1, 0, stream,
				     args, NULL) == CUDA_SUCCESS ? 0 : RP_ERR_FLUSH;
}

void inject_flush_finish(struct inject_flush *f)
{
	if (f->buffer)
		rp_api.cuMemFree(f->buffer);
	if (f->sink)
		rp_api.cuMemFree(f->sink);
	if (f->module)
		rp_api.cuModuleUnload(f->module);
	*f = (struct inject_flush){ 0 };
}
