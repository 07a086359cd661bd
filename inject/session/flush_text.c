/* inject/session/flush_text.c - the cache flush's kernel as PTX text, made from the figures
 * below for a flush that discards or not and for 1 or 2 blocks per SM: loaded by flush.c,
 * and compiled ahead by the build for the GPUs it knows (scripts/flush_image.py, through
 * scripts/flush_text_tool.c; flush_image.c holds what that made).
 * Calls: none (libc only).
 * Called by: flush.c (the text it loads where the build holds no image or the driver
 * refuses it; the build's rp_flush_text writes the same texts to compile them ahead).
 * Lock: none (constant text; each text malloc'ed for its caller). */
#include "inject/session/flush_text.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

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
#define FLUSH_CODE_BYTES_PER_SM (256 << 10)
/* Instructions of 16 bytes in each warp's segment: the code spread over the SM's warps (a
 * bench build may set another length; 0: no code segments, for comparisons). */
#ifndef FLUSH_SEGMENT_INSTRUCTIONS
#define FLUSH_SEGMENT_INSTRUCTIONS_OF(per_sm) (FLUSH_CODE_BYTES_PER_SM / (16 * FLUSH_WARPS * (per_sm)))
#else
#define FLUSH_SEGMENT_INSTRUCTIONS_OF(per_sm) ((void)(per_sm), FLUSH_SEGMENT_INSTRUCTIONS)
#endif
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
 * - a text for two blocks per SM plainly launched (after a refused cooperative launch, whose
 *   plain launches pass discard_from FLUSH_PLAIN_LAUNCH: inject_flush_launch): each
 *   warp runs per_sm rounds, after its segment taking the segment 32 further, modulo the
 *   segments: any SM that runs a block (32 consecutive tickets) runs every segment. */
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
 * buffer's end skips both: FLUSH_PLAIN_LAUNCH (a plain launch, once a cooperative one was
 * refused, which the head's rounds read too), or the buffer's end in a cooperative launch
 * of a build that discards nothing (FLUSH_DISCARD_HALVES 0). */
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
char *inject_flush_text(bool empty, int per_sm)
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
	/* The rounds (%r49): 1 for a cooperative launch, per_sm for a plain one, told apart by
	 * discard_from, FLUSH_PLAIN_LAUNCH in a plain launch, where the text discards; a text
	 * that does not is only launched plainly. From the parameters, not from memory:
	 * session 22 read them from the sink, before any segment, from a line the previous
	 * flush had swept, and its fixes that brought the read cost 1.5 us a flush, not split
	 * between the read and the loop back (bench/NOTES.md, sessions 22 and 23). */
	if (per_sm > 1 && empty)
		n += (size_t)snprintf(ptx + n, cap - n, "  ld.param.u64 %%rd26, [discard_from];\n"
				      "  setp.eq.u64 %%p2, %%rd26, %#llx;\n"
				      "  selp.u32 %%r49, %d, 1, %%p2;\n"
				      "SEGS:\n", FLUSH_PLAIN_LAUNCH, per_sm);
	else if (per_sm > 1)
		n += (size_t)snprintf(ptx + n, cap - n, "  mov.u32 %%r49, %d;\nSEGS:\n", per_sm);
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
