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
 * doc/measurements.md, "The flush"). Every SM runs every segment (flush_ptx_head says how
 * each kind of launch guarantees it): 256 KB of code, in 64 warps of 4 KB each where per_sm
 * is 2 (FLUSH_BLOCKS_PER_SM), 32 of 8 KB where it is 1. They are most of the flush's cost:
 * 57.8 us per flush with them, 21.1 without (bench/flush_cost_s2u2seg0; session 21,
 * doc/measurements.md, "The flush"). 128 KB cost 23.1 us, so little that the code must stay
 * cached between flushes, and it then no longer evicts a kernel's code: with 128 KB the
 * sgemm measured +5.65 % against ncu, a batch norm +2.12 %, the DRAM writes of a max pool
 * and an elementwise kernel +4.69 and +3.06 % (4 checks failed), and with no code the
 * sgemm -7.50 % and the convolution -8.53 % (session 21 call 5, tests/gpu/library_kernels.sh;
 * the same section). 256 KB stays.
 * Reading leaves every line clean: evicting the application's dirty lines happens here,
 * not inside the measured kernel (tests/gpu/l2_residual.cu: a kernel after the flush
 * writes a median 0 bytes to DRAM where dirty lines would be written back, same section).
 * Reading also leaves the L2 full of the sweep's clean lines, where ncu's cache control
 * leaves none valid; a half-L2 overwrite then wrote 2.3-2.5 % less back to DRAM than with
 * none valid. So the sweep ends, where the device can, with discard.global.L2 over the
 * lines it read, after a grid barrier (flush_ptx_empty_tail): +5.5 us per run since
 * session 21 (63.3 against 57.8 us per flush: doc/measurements.md, "The flush"), and the
 * overwrite's DRAM writes equal to ncu's over the program's own sweep and discard
 * (doc/measurements.md, "DRAM writes of L2-resident kernels"). */
#define FLUSH_WARPS 32
/* Blocks of FLUSH_WARPS warps per SM: 2, so that 64 warps share the 256 KB of code, each
 * fetching 4 KB in sequence where 32 warps fetched 8 KB: 60.4 us per flush against 65.1
 * with one block (bench/flush_cost_s2b1, session 21). 1 where the kernel cannot have 2
 * blocks of 1024 threads resident on an SM, or where the flush never launches
 * cooperatively (inject_flush_init). */
#ifndef FLUSH_BLOCKS_PER_SM
#define FLUSH_BLOCKS_PER_SM 2
#endif
_Static_assert(FLUSH_BLOCKS_PER_SM == 1 || FLUSH_BLOCKS_PER_SM == 2, "1 or 2 blocks per SM");
#define FLUSH_CODE_BYTES_PER_SM (256 << 10)
/* Instructions of 16 bytes in each warp's segment: the code spread over the SM's warps (a
 * bench build may set another length; 0: no code segments, for comparisons). */
#ifndef FLUSH_SEGMENT_INSTRUCTIONS
#define FLUSH_SEGMENT_INSTRUCTIONS_OF(per_sm) (FLUSH_CODE_BYTES_PER_SM / (16 * FLUSH_WARPS * (per_sm)))
#else
#define FLUSH_SEGMENT_INSTRUCTIONS_OF(per_sm) ((void)(per_sm), FLUSH_SEGMENT_INSTRUCTIONS)
#endif
/* The sink: at +0 the fold's store (flush_ptx_check), at FLUSH_SINK_BARRIER the grid
 * barrier's u64 count (flush_ptx_empty_tail), at FLUSH_SINK_ROUNDS the u32 rounds of code
 * segments each warp runs (flush_ptx), from FLUSH_SINK_TICKETS each SM's u32 counter of
 * segments taken, FLUSH_TICKETS of them: room for %smid up to 1023. */
#define FLUSH_TICKETS 1024
#define FLUSH_SINK_BARRIER 8
#define FLUSH_SINK_ROUNDS 16
#define FLUSH_SINK_TICKETS 32
#define FLUSH_SINK_BYTES (FLUSH_SINK_TICKETS + 4 * FLUSH_TICKETS)
_Static_assert(FLUSH_SINK_BARRIER >= 4 && FLUSH_SINK_BARRIER % 8 == 0 &&
		       FLUSH_SINK_ROUNDS >= FLUSH_SINK_BARRIER + 8 &&
		       FLUSH_SINK_TICKETS >= FLUSH_SINK_ROUNDS + 4,
	       "nothing in the sink overlaps");
_Static_assert(FLUSH_SINK_BARRIER == 8, "flush_ptx_empty_tail's barrier is at sink + 8");
/* The discard covers the last FLUSH_DISCARD_HALVES halves of the L2's size of the swept
 * buffer: 2, one L2's worth, which with FLUSH_SWEEP_HALVES 2 is the whole buffer. When the
 * sweep read twice the L2 (sessions 12 to 21), 2 was the last L2's worth, the lines it
 * read last, and discarding all of it (4) moved the DRAM writes of
 * tests/gpu/l2_resident.cu's kernels by at most 0.3 % and cost 2-4 us more per run
 * (bench/NOTES.md, session 12). A build may set another (0: the sweep alone, the flush
 * before session 12, for comparisons: bench/l2_placement.sh). */
#ifndef FLUSH_DISCARD_HALVES
#define FLUSH_DISCARD_HALVES 2
#endif
/* The sweep reads FLUSH_SWEEP_HALVES halves of the L2's size: 2, one L2's worth. Twice
 * the L2 (4, before session 21) cost 15 us more per flush (75.5 against 60.2) and moved
 * no figure: the DRAM writes of L2-resident kernels at the same 8 places were within 0.8 %
 * of each other's, their times within 1.0 % (bench/l2_placement.sh; doc/measurements.md,
 * "The flush", session 21). A build may set another (bench/flush_cost_s3). */
#ifndef FLUSH_SWEEP_HALVES
#define FLUSH_SWEEP_HALVES 2
#endif
_Static_assert(FLUSH_DISCARD_HALVES <= FLUSH_SWEEP_HALVES && FLUSH_SWEEP_HALVES >= 1,
	       "the discard covers lines the sweep read");
/* Loads in flight per thread in the sweep's main loop (a tail loop of one takes the rest):
 * 2, 57.8 us per flush against 60.4 with 1 and 56.8 with 4 (session 21, "The flush"). */
#ifndef FLUSH_SWEEP_UNROLL
#define FLUSH_SWEEP_UNROLL 2
#endif
_Static_assert(FLUSH_SWEEP_UNROLL >= 1 && FLUSH_SWEEP_UNROLL <= 8, "1 to 8 loads per thread");

/* The kernel's head, with %s for the PTX version, the target, the discard's parameter and
 * the blocks per SM, and %d for the mask of %smid, the counters' offset in the sink and the
 * segments per SM. The sweep alone keeps version 7.0 and sm_70; discard.global.L2 needs
 * 7.4 and sm_80.
 * Each warp's segment (%r12) is a ticket from its SM's counter in the sink, taken by its
 * first lane, modulo the segments per SM (32 per block per SM the text is made for): the
 * warps that an SM runs in one launch take consecutive tickets. The counters start from
 * what the allocation held and are never reset: consecutive tickets cover every residue
 * wherever they start, and 2^32 is a multiple of the segments. What that guarantees:
 * - a cooperative launch has per_sm blocks resident on every SM, per_sm * 32 warps each
 *   taking one segment: every segment runs on every SM, once (rounds 1);
 * - a text for one block per SM (a flush never launched cooperatively, inject_flush_init),
 *   plainly launched: 32 segments, and any SM that runs a block runs its 32 warps, so every
 *   segment, whatever the placement of the others;
 * - a text for two blocks per SM plainly launched (after a refused cooperative launch): the
 *   host sets the rounds in the sink to per_sm (inject_flush_launch), and after its segment
 *   each warp takes the segment 32 further, modulo the segments, until it has run that
 *   many: any SM that runs a block (32 consecutive tickets) runs every segment. */
static const char flush_ptx_head[] =
	".version %s\n"
	".target %s\n"
	".address_size 64\n"
	".visible .entry rangeprof_l2_flush(.param .u64 buf, .param .u64 words, .param .u64 sink%s)\n"
	".maxntid 1024, 1, 1\n"
	"%s"
	"{\n"
	"  .reg .pred %%p<4>;\n"
	"  .reg .b32 %%r<64>;\n"
	"  .reg .b64 %%rd<32>;\n"
	"  ld.param.u64 %%rd1, [buf];\n"
	"  ld.param.u64 %%rd2, [words];\n"
	"  ld.param.u64 %%rd3, [sink];\n"
	"  mov.u32 %%r3, %%tid.x;\n"
	"  cvt.u32.u64 %%r10, %%rd2;\n"
	"  or.b32 %%r11, %%r10, 1;\n"
	"  xor.b32 %%r10, %%r10, %%r3;\n"
	"  mov.u32 %%r13, %%smid;\n"
	"  and.b32 %%r13, %%r13, %d;\n"
	"  mul.wide.u32 %%rd25, %%r13, 4;\n"
	"  add.u64 %%rd25, %%rd25, %%rd3;\n"
	"  add.u64 %%rd25, %%rd25, %d;\n"
	"  and.b32 %%r14, %%r3, 31;\n"
	"  setp.eq.u32 %%p3, %%r14, 0;\n"
	"  mov.u32 %%r15, 0;\n"
	"  @%%p3 atom.global.add.u32 %%r15, [%%rd25], 1;\n"
	"  shfl.sync.idx.b32 %%r15, %%r15, 0, 31, -1;\n"
	"  rem.u32 %%r12, %%r15, %d;\n";

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
	"  mov.u32 %r5, %r10;\n";

/* The sweep's loop of one load per thread (all of it, or the rest after the unrolled loop). */
static const char flush_ptx_sweep_loop[] =
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
	"DONE:\n";

/* The fold's store, which no value reaches, so that nothing is optimised away. */
static const char flush_ptx_check[] =
	"  setp.eq.u32 %p2, %r5, 0x7e57ab1e;\n"
	"  @%p2 st.global.u32 [%rd3], %r5;\n";

/* Where the device cannot discard, the flush ends with the sweep. */
static const char flush_ptx_plain_tail[] =
	"  ret;\n"
	"}\n";

/* Elsewhere it then waits for every block's sweep (a grid barrier on a 64-bit count at
 * sink + 8 that only grows: the launch is cooperative, so every block is resident and the
 * wait ends), then discards the lines of the buffer from line [discard_from] on (0: every
 * line the sweep read, FLUSH_DISCARD_HALVES), so that the L2 holds no valid line of it
 * when the kernel starts. Its loads have all returned (their values were folded) before bar.sync,
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
 * that nothing folds), for more than one block per SM the next round's segment, the sweep,
 * and its end with or without the discard. malloc'ed; NULL when out of memory. */
static char *flush_ptx(bool empty, int per_sm)
{
	const int segments = FLUSH_WARPS * per_sm, length = FLUSH_SEGMENT_INSTRUCTIONS_OF(per_sm);
	size_t cap = sizeof(flush_ptx_head) + 128 + 512 + sizeof(flush_ptx_sweep) +
		     sizeof(flush_ptx_sweep_loop) + sizeof(flush_ptx_check) + 512 +
		     FLUSH_SWEEP_UNROLL * 320 + sizeof(flush_ptx_empty_tail) +
		     (size_t)segments * ((size_t)length * 48 + 96);
	char *ptx = malloc(cap);
	if (!ptx)
		return NULL;
	size_t n = (size_t)snprintf(ptx, cap, flush_ptx_head, empty ? "7.4" : "7.0",
				    empty ? "sm_80" : "sm_70",
				    empty ? ", .param .u64 discard_from" : "",
				    per_sm > 1 ? ".minnctapersm 2\n" : "", FLUSH_TICKETS - 1,
				    FLUSH_SINK_TICKETS, segments);
	/* The rounds (%r49), at most per_sm whatever the sink holds. */
	if (per_sm > 1)
		n += (size_t)snprintf(ptx + n, cap - n, "  ld.global.cg.u32 %%r49, [%%rd3+%d];\n"
				      "  min.u32 %%r49, %%r49, %d;\n"
				      "SEGS:\n", FLUSH_SINK_ROUNDS, per_sm);
	for (int w = 0; w < segments; w++)
		n += (size_t)snprintf(ptx + n, cap - n, "  setp.eq.u32 %%p3, %%r12, %d;\n"
				      "  @%%p3 bra SEG%d;\n", w, w);
	n += (size_t)snprintf(ptx + n, cap - n, "  bra SWEEP;\n");
	unsigned constant = 0x9e3779b9u;
	for (int w = 0; w < segments; w++) {
		n += (size_t)snprintf(ptx + n, cap - n, "SEG%d:\n", w);
		for (int i = 0; i < length; i++) {
			constant = constant * 1664525u + 1013904223u;
			n += (size_t)snprintf(ptx + n, cap - n,
					      "  mad.lo.u32 %%r10, %%r10, %%r11, %u;\n", constant);
		}
		n += (size_t)snprintf(ptx + n, cap - n, "  bra %s;\n",
				      per_sm > 1 ? "NEXT" : "SWEEP");
	}
	if (per_sm > 1)
		n += (size_t)snprintf(ptx + n, cap - n, "NEXT:\n"
				      "  setp.le.u32 %%p3, %%r49, 1;\n"
				      "  @%%p3 bra SWEEP;\n"
				      "  sub.u32 %%r49, %%r49, 1;\n"
				      "  add.u32 %%r12, %%r12, %d;\n"
				      "  rem.u32 %%r12, %%r12, %d;\n"
				      "  bra SEGS;\n", FLUSH_WARPS, segments);
	n += (size_t)snprintf(ptx + n, cap - n, "%s", flush_ptx_sweep);
	if (FLUSH_SWEEP_UNROLL > 1) {
		/* %rd21: the words of one round, %rd22: the offset of its last load, %rd23: the
		 * stride in bytes; the loads are issued before any is folded. */
		n += (size_t)snprintf(ptx + n, cap - n,
				      "  mul.lo.u64 %%rd21, %%rd9, %d;\n"
				      "  mul.lo.u64 %%rd22, %%rd9, %d;\n"
				      "  shl.b64 %%rd23, %%rd9, 4;\n"
				      "LOOPN:\n"
				      "  add.u64 %%rd24, %%rd7, %%rd22;\n"
				      "  setp.ge.u64 %%p1, %%rd24, %%rd2;\n"
				      "  @%%p1 bra LOOP;\n"
				      "  shl.b64 %%rd10, %%rd7, 4;\n"
				      "  add.u64 %%rd11, %%rd1, %%rd10;\n",
				      FLUSH_SWEEP_UNROLL, FLUSH_SWEEP_UNROLL - 1);
		for (int u = 0; u < FLUSH_SWEEP_UNROLL; u++)
			n += (size_t)snprintf(ptx + n, cap - n,
					      "%s  ld.global.cg.v4.u32 {%%r%d, %%r%d, %%r%d, %%r%d}, "
					      "[%%rd11];\n", u ? "  add.u64 %rd11, %rd11, %rd23;\n" : "",
					      16 + 4 * u, 17 + 4 * u, 18 + 4 * u, 19 + 4 * u);
		for (int u = 0; u < 4 * FLUSH_SWEEP_UNROLL; u++)
			n += (size_t)snprintf(ptx + n, cap - n, "  xor.b32 %%r5, %%r5, %%r%d;\n",
					      16 + u);
		n += (size_t)snprintf(ptx + n, cap - n, "  add.u64 %%rd7, %%rd7, %%rd21;\n"
				      "  bra LOOPN;\n");
	}
	snprintf(ptx + n, cap - n, "%s%s%s", flush_ptx_sweep_loop, flush_ptx_check,
		 empty ? flush_ptx_empty_tail : flush_ptx_plain_tail);
	return ptx;
}

/* Every failure returns with the flush zeroed and nothing of it held (inject_flush_finish):
 * the caller finishes only a flush whose set-up succeeded. */
int inject_flush_init(struct inject_flush *f, int device, bool empty, char *err,
		      size_t err_size)
{
	CUdevice dev;
	int l2 = 0, sms = 0, major = 0, cooperative = 0, threads = 0;
	CUresult r;
	*f = (struct inject_flush){ 0 };
	if ((r = rp_api.cuDeviceGet(&dev, device)) != CUDA_SUCCESS ||
	    (r = rp_api.cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev)) !=
		    CUDA_SUCCESS ||
	    (r = rp_api.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev)) !=
		    CUDA_SUCCESS ||
	    (r = rp_api.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
					     dev)) != CUDA_SUCCESS ||
	    (r = rp_api.cuDeviceGetAttribute(&cooperative, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH,
					     dev)) != CUDA_SUCCESS ||
	    (r = rp_api.cuDeviceGetAttribute(
		     &threads, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, dev)) !=
		    CUDA_SUCCESS) {
		snprintf(err, err_size, "L2 flush: device attributes: %s", collector_cu_error(r));
		return RP_ERR_FAILED;
	}
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
	/* FLUSH_BLOCKS_PER_SM blocks per SM where that many fit (cooperative launches need
	 * them all resident), else one: the text is made again for one. A flush that never
	 * launches cooperatively gets one at once: a plain launch does not place per_sm blocks
	 * on every SM, and one block's 32 warps run every segment of a one-block text wherever
	 * it lands. So does a GPU whose SMs cannot hold per_sm blocks of 1024 threads, without
	 * the JIT of a text the occupancy query would refuse (0.6-1.7 s for 700 KB of PTX on
	 * a machine that has not compiled it yet: doc/measurements.md, "The flush"). */
	int per_sm = FLUSH_BLOCKS_PER_SM;
	if (!empty || threads < per_sm * 32 * FLUSH_WARPS)
		per_sm = 1;
	for (;;) {
		char *ptx = flush_ptx(empty, per_sm);
		if (!ptx) {
			snprintf(err, err_size, "L2 flush: out of host memory");
			inject_flush_finish(f);
			return RP_ERR_NO_MEMORY;
		}
		r = rp_api.cuModuleLoadData(&f->module, ptx);
		free(ptx);
		/* What a failed call left in f is not the driver's: finish must not use it. */
		if (r != CUDA_SUCCESS)
			f->module = NULL;
		if (r != CUDA_SUCCESS ||
		    (r = rp_api.cuModuleGetFunction(&f->kernel, f->module, "rangeprof_l2_flush")) !=
			    CUDA_SUCCESS) {
			snprintf(err, err_size, "L2 flush: loading the sweep kernel: %s",
				 collector_cu_error(r));
			inject_flush_finish(f);
			return RP_ERR_FAILED;
		}
		if (per_sm == 1)
			break;
		int fit = 0;
		if ((r = rp_api.cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
			     &fit, f->kernel, 32 * FLUSH_WARPS, 0, 0)) != CUDA_SUCCESS) {
			snprintf(err, err_size, "L2 flush: "
				 "cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags: %s",
				 collector_cu_error(r));
			inject_flush_finish(f);
			return RP_ERR_FAILED;
		}
		if (fit >= per_sm)
			break;
		rp_api.cuModuleUnload(f->module);
		f->module = NULL;
		f->kernel = NULL;
		per_sm = 1;
	}
	struct {
		CUdeviceptr *at;
		size_t bytes;
	} allocations[] = { { &f->buffer, bytes }, { &f->sink, FLUSH_SINK_BYTES } };
	for (size_t i = 0; i < sizeof(allocations) / sizeof(allocations[0]); i++)
		if ((r = rp_api.cuMemAlloc(allocations[i].at, allocations[i].bytes)) !=
		    CUDA_SUCCESS) {
			*allocations[i].at = 0;
			snprintf(err, err_size, "L2 flush: cuMemAlloc(%zu bytes): %s",
				 allocations[i].bytes, collector_cu_error(r));
			inject_flush_finish(f);
			return RP_ERR_FAILED;
		}
	f->words = bytes / 16;
	f->empty = empty;
	f->discard_from = (bytes - FLUSH_DISCARD_HALVES * l2_bytes / 2) / 128;
	/* per_sm blocks for every SM: all resident at once in a cooperative launch, placed as
	 * the scheduler does in a plain one (flush_ptx_head: every segment still runs on
	 * every SM that runs a block). */
	f->per_sm = (unsigned)per_sm;
	f->blocks = (unsigned)(sms > 0 ? sms : 132) * f->per_sm;
	return 0;
}

int inject_flush_launch(struct inject_flush *f, CUstream stream)
{
	if (f->empty) {
		void *args[] = { &f->buffer, &f->words, &f->sink, &f->discard_from };
		/* The grid barrier counts from 0 (flush_ptx_empty_tail), and a cooperative launch
		 * runs one round of segments (flush_ptx_head): both set on the stream of the
		 * first launch, so that set-up waits for nothing. */
		if (!f->barrier_cleared) {
			if (rp_api.cuMemsetD8Async(f->sink, 0, FLUSH_SINK_BARRIER + 8, stream) !=
				    CUDA_SUCCESS ||
			    rp_api.cuMemsetD32Async(f->sink + FLUSH_SINK_ROUNDS, 1, 1, stream) !=
				    CUDA_SUCCESS)
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
		/* Plain launches do not place per_sm blocks on every SM: each warp runs per_sm
		 * rounds of segments from now on, so that an SM running any block runs every
		 * segment (flush_ptx_head). */
		if (rp_api.cuMemsetD32Async(f->sink + FLUSH_SINK_ROUNDS, f->per_sm, 1, stream) !=
		    CUDA_SUCCESS)
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
