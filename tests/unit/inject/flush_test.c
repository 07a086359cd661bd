/* tests/unit/inject/flush_test.c - the cache flush's set-up and launch
 * (inject/session/flush.c) with
 * the driver replaced by stand-ins (no GPU): what its callers decide on, the code of each
 * failure, and the driver's error in the set-up's message. It includes flush.c and
 * flush_text.c themselves, so that the kernel's text is checked against the figures it is
 * made from (FLUSH_SWEEP_UNROLL, the sink's layout) as a build sets them, and links the
 * build's compiled images (flush_image.c) to check them against those texts. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/api.h"
#include "common/error.h"

/* flush.c's host allocations (the kernel's text), of which the malloc_fails_at'th (from 1)
 * fails: the out-of-memory return of each pass. */
static unsigned mallocs, malloc_fails_at;

static void *test_malloc(size_t bytes)
{
	return ++mallocs == malloc_fails_at ? NULL : malloc(bytes);
}

#define malloc(bytes) test_malloc(bytes)
#include "inject/session/flush_text.c"
/* The image flush.c looks for first: test_flush_image's, below. */
#define inject_flush_image(empty, per_sm) test_flush_image(empty, per_sm)
#include "inject/session/flush.c"
#undef inject_flush_image
#undef malloc
#include "inject/session/flush.h"
#include "inject/session/flush_image.h"
#include "tests/unit/ptxas_check.h"

/* The build's images (flush_image.c, linked as the library links it) where a test turns
 * them on; none otherwise, so that inject_flush_init loads the text the tests read. */
const struct inject_flush_image *inject_flush_image(bool empty, int per_sm);
static bool images_on;

const struct inject_flush_image *test_flush_image(bool empty, int per_sm)
{
	return images_on ? inject_flush_image(empty, per_sm) : NULL;
}

static CUresult launched = CUDA_SUCCESS, allocated = CUDA_SUCCESS;
/* The driver's answers to the set-up's calls, and what the flush holds of it: modules
 * loaded and not unloaded, allocations not freed (0 after finish, or after a failed
 * set-up). A failed call leaves junk where it would have written (the driver does not
 * promise otherwise). */
static CUresult load_result = CUDA_SUCCESS, function_result = CUDA_SUCCESS,
		occupancy_result = CUDA_SUCCESS;
static unsigned load_fails_at;                     /* the nth load fails, from 1 */
static unsigned allocs, alloc_fails_at;            /* the nth allocation fails, from 1 */
static int modules_held, allocations_held;
static unsigned occupancy_queries;
static unsigned launches, cooperative_launches, memsets, memsets32;
static unsigned memset_before_first_cooperative;   /* memsets seen by the first one */
static int compute_major = 9, cooperative = 1;
static int resident_blocks = 2;                    /* of the flush's kernel, per SM */
static int threads_per_sm = 2048;                  /* an H100/H200's */
static unsigned module_loads, module_unloads;
static size_t sink_bytes;                          /* the last allocation's, the sink's */
static char loaded[1 << 20];
static CUstream memset_stream;
static CUdeviceptr memset_at;
static size_t memset_bytes;
static unsigned long long discard_from_launched, discard_from_launched_plain;
/* The calls queued on a stream, in order: 'b' the barrier's clear (cuMemsetD8Async), 'r'
 * any cuMemsetD32Async (none since session 23), 'c' a cooperative launch (refused or not), 'p' a
 * plain launch. */
static struct queued {
	char what;
	CUdeviceptr at;
	unsigned value;
	size_t n;
	CUstream stream;
} queued[16];
static unsigned queued_n;

static void queue(char what, CUdeviceptr at, unsigned value, size_t n, CUstream stream)
{
	cr_assert_lt(queued_n, sizeof(queued) / sizeof(queued[0]));
	queued[queued_n++] = (struct queued){ what, at, value, n, stream };
}

static CUresult fake_device(CUdevice *d, int ordinal)
{
	*d = ordinal;
	return CUDA_SUCCESS;
}

static CUresult no_device(CUdevice *d, int ordinal)
{
	(void)d, (void)ordinal;
	return CUDA_ERROR_NO_DEVICE;
}

static CUresult fake_attribute(int *v, CUdevice_attribute a, CUdevice d)
{
	(void)d;
	*v = a == CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE ? 50 << 20 :
	     a == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR ? compute_major :
	     a == CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH ? cooperative :
	     a == CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR ? threads_per_sm : 132;
	return CUDA_SUCCESS;
}

/* A fatbin's first bytes (little-endian 0xba55ed50), as fatbinary writes them. */
static const unsigned char fatbin_magic[4] = { 0x50, 0xed, 0x55, 0xba };
static const void *loaded_image;                   /* the last fatbin loaded, or NULL */
static CUresult image_result = CUDA_SUCCESS;       /* the driver's answer to a fatbin */

static CUresult fake_load(CUmodule *m, const void *image)
{
	module_loads++;
	loaded_image = NULL;
	if (!memcmp(image, fatbin_magic, sizeof(fatbin_magic))) {
		loaded_image = image;
		loaded[0] = '\0';
		if (image_result != CUDA_SUCCESS) {
			*m = (CUmodule)(uintptr_t)0xbad;
			return image_result;
		}
	} else {
		cr_assert(strstr(image, ".entry rangeprof_l2_flush"));
		cr_assert_lt(strlen(image), sizeof(loaded));
		strcpy(loaded, image);
	}
	if (load_result != CUDA_SUCCESS || module_loads == load_fails_at) {
		*m = (CUmodule)(uintptr_t)0xbad;
		return load_result != CUDA_SUCCESS ? load_result : CUDA_ERROR_INVALID_PTX;
	}
	*m = (CUmodule)(uintptr_t)0x10;
	modules_held++;
	return CUDA_SUCCESS;
}

static CUresult fake_function(CUfunction *f, CUmodule m, const char *name)
{
	(void)name;
	cr_assert_eq(m, (CUmodule)(uintptr_t)0x10, "a loaded module");
	*f = (CUfunction)(uintptr_t)(function_result == CUDA_SUCCESS ? 0x20 : 0xbad);
	return function_result;
}

/* Each allocation at its own address, 0x1000 apart. */
static CUresult fake_alloc(CUdeviceptr *p, size_t bytes)
{
	allocs++;
	if (allocated != CUDA_SUCCESS || allocs == alloc_fails_at) {
		*p = 0xbad;
		return allocated != CUDA_SUCCESS ? allocated : CUDA_ERROR_OUT_OF_MEMORY;
	}
	sink_bytes = bytes;
	*p = 0x1000 * (CUdeviceptr)allocs;
	allocations_held++;
	return CUDA_SUCCESS;
}

static CUresult fake_free(CUdeviceptr p)
{
	cr_assert(p && p % 0x1000 == 0 && p <= 0x1000 * (CUdeviceptr)allocs,
		  "freed %#llx, which was not allocated", (unsigned long long)p);
	allocations_held--;
	return CUDA_SUCCESS;
}

static CUresult fake_unload(CUmodule m)
{
	cr_assert_eq(m, (CUmodule)(uintptr_t)0x10, "unloaded a module that was not loaded");
	module_unloads++;
	modules_held--;
	return CUDA_SUCCESS;
}

static CUresult fake_occupancy(int *blocks, CUfunction f, int threads, size_t smem,
			       unsigned flags)
{
	(void)smem, (void)flags;
	cr_assert_eq(f, (CUfunction)(uintptr_t)0x20, "the flush's kernel");
	cr_assert_eq(threads, 1024, "the flush's blocks are 32 warps");
	occupancy_queries++;
	int fit = threads_per_sm / threads < resident_blocks ? threads_per_sm / threads :
		  resident_blocks;
	*blocks = occupancy_result == CUDA_SUCCESS ? fit : -1;
	return occupancy_result;
}

static CUresult fake_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
			    unsigned by, unsigned bz, unsigned smem, CUstream s, void **params,
			    void **extra)
{
	(void)f, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)smem;
	(void)extra;
	discard_from_launched_plain = *(unsigned long long *)params[3];
	launches++;
	queue('p', 0, 0, 0, s);
	return launched;
}

static CUresult fake_cooperative(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
				 unsigned bx, unsigned by, unsigned bz, unsigned smem, CUstream s,
				 void **params)
{
	(void)f, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)smem;
	discard_from_launched = *(unsigned long long *)params[3];
	queue('c', 0, 0, 0, s);
	if (!cooperative_launches++)
		memset_before_first_cooperative = memsets;
	return launched;
}

static CUresult fake_memset(CUdeviceptr p, unsigned char v, size_t n, CUstream s)
{
	cr_assert_eq(v, 0);
	memset_at = p, memset_bytes = n, memset_stream = s;
	memsets++;
	queue('b', p, v, n, s);
	return CUDA_SUCCESS;
}

static CUresult fake_memset32(CUdeviceptr p, unsigned v, size_t n, CUstream s)
{
	memsets32++;
	queue('r', p, v, n, s);
	return CUDA_SUCCESS;
}

static CUresult fake_error_name(CUresult r, const char **name)
{
	*name = r == CUDA_ERROR_NO_DEVICE ? "CUDA_ERROR_NO_DEVICE" :
		r == CUDA_ERROR_OUT_OF_MEMORY ? "CUDA_ERROR_OUT_OF_MEMORY" : "CUDA_ERROR_OTHER";
	return CUDA_SUCCESS;
}

static void stand_ins(void)
{
	rp_api.cuDeviceGet = fake_device;
	rp_api.cuDeviceGetAttribute = fake_attribute;
	rp_api.cuModuleLoadData = fake_load;
	rp_api.cuModuleGetFunction = fake_function;
	rp_api.cuMemAlloc = fake_alloc;
	rp_api.cuMemFree = fake_free;
	rp_api.cuModuleUnload = fake_unload;
	rp_api.cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags = fake_occupancy;
	rp_api.cuLaunchKernel = fake_launch;
	rp_api.cuLaunchCooperativeKernel = fake_cooperative;
	rp_api.cuMemsetD8Async = fake_memset;
	rp_api.cuMemsetD32Async = fake_memset32;
	rp_api.cuGetErrorName = fake_error_name;
}

Test(flush, a_flush_set_up_launches_one_kernel, .init = stand_ins)
{
	struct inject_flush f = { 0 };
	char err[256] = "";
	cr_assert_eq(inject_flush_init(&f, 0, false, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(f.words, (size_t)(50 << 20) / 16, "one L2 in 16-byte words");
	cr_assert_eq(f.blocks, 132, "one block per SM: the flush is never cooperative");
	cr_assert_eq(module_loads, 1);
	cr_assert_eq(inject_flush_launch(&f, NULL), 0);
	cr_assert_eq(launches, 1);
	cr_assert_eq(cooperative_launches + memsets + memsets32, 0,
		     "the plain flush needs no grid barrier, and its one round is the text's");
	cr_assert(!strstr(loaded, "%r49"), "no rounds read");
	cr_assert(strstr(loaded, ".target sm_70") && !strstr(loaded, "discard"),
		  "the plain flush runs on any GPU and discards nothing");
	inject_flush_finish(&f);
}

/* The flush that leaves the L2 empty: one cooperative kernel (its grid barrier needs every
 * block resident) that discards every line the sweep read (one L2, from line 0), the
 * barrier's count cleared once, on the first flush's own stream. */
Test(flush, the_empty_flush_discards_the_whole_sweep_after_a_grid_barrier, .init = stand_ins)
{
	struct inject_flush f = { 0 };
	char err[256] = "";
	cr_assert_eq(inject_flush_init(&f, 0, true, err, sizeof(err)), 0, "%s", err);
	cr_assert(strstr(loaded, ".target sm_80") && strstr(loaded, "discard.global.L2") &&
		  strstr(loaded, "atom.release.gpu.global.add.u64") &&
		  strstr(loaded, "ld.acquire.gpu.global.u64") &&
		  strstr(loaded, ".param .u64 discard_from"),
		  "the empty flush's kernel has its barrier and discard");
	cr_assert_str_eq(f.notice, "");
	cr_assert_eq(f.limit, INJECT_FLUSH_EMPTIES);
	cr_assert_eq(memsets, 0, "set-up waits for nothing");
	CUstream stream = (CUstream)(uintptr_t)0x5;
	cr_assert_eq(inject_flush_launch(&f, stream), 0);
	cr_assert_eq(inject_flush_launch(&f, stream), 0);
	cr_assert_eq(cooperative_launches, 2);
	cr_assert_eq(launches, 0);
	cr_assert_eq(memsets, 1, "the barrier is cleared once");
	cr_assert_eq(memset_before_first_cooperative, 1, "and before the first barrier");
	cr_assert_eq(memset_stream, stream);
	cr_assert_eq(memset_at, f.sink);
	cr_assert_eq(memset_bytes, 16, "the fold's word and the barrier's");
	/* The barrier's clear, then the launches: nothing else in the sink is set. */
	cr_assert_eq(queued_n, 3);
	cr_assert(queued[0].what == 'b' && queued[1].what == 'c' && queued[2].what == 'c');
	/* Buffer of FLUSH_SWEEP_HALVES halves of the L2 (50 MB), its last FLUSH_DISCARD_HALVES
	 * discarded: with the library's 2 and 2, all of it, from line 0. */
	size_t l2 = 50 << 20, bytes = FLUSH_SWEEP_HALVES * l2 / 2;
	cr_assert_eq(discard_from_launched, (bytes - FLUSH_DISCARD_HALVES * l2 / 2) / 128);
	inject_flush_finish(&f);
}

/* A GPU without discard.global.L2 (before compute capability 8.0) or without cooperative
 * launches: the sweep alone, plainly launched, and a notice that says what that changes. */
Test(flush, a_gpu_that_cannot_discard_gets_the_sweep_and_a_notice, .init = stand_ins)
{
	struct inject_flush f = { 0 };
	char err[256] = "";
	compute_major = 7;
	cr_assert_eq(inject_flush_init(&f, 0, true, err, sizeof(err)), 0, "%s", err);
	cr_assert(strstr(loaded, ".target sm_70") && !strstr(loaded, "discard"));
	cr_assert(strstr(f.notice, "cannot discard the lines it leaves on device 0 (compute "
			  "capability before 8.0): each run starts from an L2 holding clean lines"),
		  "%s", f.notice);
	cr_assert_eq(f.limit, INJECT_FLUSH_OLD_DEVICE, "the code measure.c decides on");
	cr_assert_eq(inject_flush_launch(&f, NULL), 0);
	cr_assert_eq(launches, 1);
	cr_assert_eq(cooperative_launches + memsets, 0);
	inject_flush_finish(&f);
	compute_major = 9, cooperative = 0;
	cr_assert_eq(inject_flush_init(&f, 0, true, err, sizeof(err)), 0, "%s", err);
	cr_assert(strstr(f.notice, "(no cooperative launches)"), "%s", f.notice);
	cr_assert_eq(f.limit, INJECT_FLUSH_NO_COOPERATIVE);
	inject_flush_finish(&f);
	cooperative = 1;
	cr_assert_eq(inject_flush_init(&f, 0, false, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(f.notice, "", "the sweep asked for is no fallback");
	cr_assert_eq(f.limit, INJECT_FLUSH_EMPTIES);
	inject_flush_finish(&f);
}

/* A cooperative launch refused (too large: fewer SMs for this context than the device has;
 * not supported; not permitted) turns the discard off from then on: the same kernel
 * launched plainly with nothing to discard (its barrier skipped), and the notice names the
 * driver's error. Any other error is the context's: the flush failed, and the discard
 * stays. */
static CUresult refusal;

static CUresult refusing_cooperative(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
				    unsigned bx, unsigned by, unsigned bz, unsigned smem,
				    CUstream s, void **params)
{
	(void)f, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)smem;
	discard_from_launched = *(unsigned long long *)params[3];
	cooperative_launches++;
	queue('c', 0, 0, 0, s);
	return refusal;
}

Test(flush, a_refused_cooperative_launch_falls_back_to_the_sweep, .init = stand_ins)
{
	const CUresult refusals[] = { CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE,
				      CUDA_ERROR_NOT_SUPPORTED, CUDA_ERROR_NOT_PERMITTED };
	rp_api.cuLaunchCooperativeKernel = refusing_cooperative;
	for (size_t i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++) {
		struct inject_flush f = { 0 };
		char err[256] = "";
		cr_assert_eq(inject_flush_init(&f, 0, true, err, sizeof(err)), 0, "%s", err);
		refusal = CUDA_ERROR_ILLEGAL_ADDRESS;
		launches = cooperative_launches = 0;
		cr_assert_eq(inject_flush_launch(&f, NULL), RP_ERR_FLUSH);
		cr_assert(f.empty && !f.notice[0] && launches == 0,
			  "the context's error: no fallback");
		refusal = refusals[i];
		cr_assert_eq(inject_flush_launch(&f, NULL), 0, "refusal %d", refusals[i]);
		cr_assert_eq(launches, 1, "the sweep launched plainly instead");
		cr_assert_eq(discard_from_launched_plain, FLUSH_PLAIN_LAUNCH, "nothing to discard");
		cr_assert(!f.empty);
		cr_assert_eq(f.limit, INJECT_FLUSH_REFUSED);
		cr_assert_eq(f.refused, refusals[i], "each refusal told apart by its error");
		cr_assert(strstr(f.notice, "its cooperative launch was refused: CUDA_ERROR_OTHER"),
			  "%s", f.notice);
		cr_assert_eq(inject_flush_launch(&f, NULL), 0);
		cr_assert_eq(cooperative_launches, 2, "no cooperative launch once refused");
		cr_assert_eq(launches, 2);
		queued_n = 0;
		inject_flush_finish(&f);
	}
}

/* The plain launches that follow a refusal place blocks as the scheduler does: each warp
 * of the two-block text then runs two rounds of segments (so that any SM that runs one
 * block runs all 64), which their discard_from (FLUSH_PLAIN_LAUNCH) tells the text
 * (a_plain_launch_runs_every_segment_on_every_sm_it_reaches); nothing is set in the sink
 * but the barrier's clear, once, on the launch's stream. */
Test(flush, a_refused_cooperative_launch_is_followed_by_plain_launches_past_the_buffer,
     .init = stand_ins)
{
	rp_api.cuLaunchCooperativeKernel = refusing_cooperative;
	refusal = CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
	for (resident_blocks = 2; resident_blocks >= 1; resident_blocks--) {
		struct inject_flush f = { 0 };
		char err[256] = "";
		CUstream stream = (CUstream)(uintptr_t)0x7;
		cr_assert_eq(inject_flush_init(&f, 0, true, err, sizeof(err)), 0, "%s", err);
		cr_assert_eq(f.per_sm, (unsigned)resident_blocks);
		queued_n = 0;
		cr_assert_eq(inject_flush_launch(&f, stream), 0);
		cr_assert_eq(inject_flush_launch(&f, stream), 0);
		const char order[] = "bcpp";
		cr_assert_eq(queued_n, strlen(order));
		for (unsigned i = 0; i < queued_n; i++) {
			cr_assert_eq(queued[i].what, order[i], "call %u: %c, not %c", i, order[i],
				     queued[i].what);
			cr_assert_eq(queued[i].stream, stream, "call %u on the launch's stream", i);
		}
		cr_assert_eq(discard_from_launched_plain, FLUSH_PLAIN_LAUNCH,
			     "the plain launch's discard_from, past any buffer's last line");
		inject_flush_finish(&f);
	}
	resident_blocks = 2;
}

static unsigned count(const char *text, const char *word);

/* The sink's layout (flush_text.h): the fold's store at +0, the barrier's u64 at +8, each
 * SM's u32 counter from +16; the texts use those offsets, and the allocation holds the
 * counters of %smid up to the mask, apart from the rest. */
Test(flush, the_sink_holds_the_store_the_barrier_and_the_counters_apart, .init = stand_ins)
{
	cr_assert(FLUSH_SINK_BARRIER >= 4 && FLUSH_SINK_TICKETS >= FLUSH_SINK_BARRIER + 8,
		  "store, barrier, counters");
	cr_assert_eq(FLUSH_SINK_TICKETS, 16);
	struct inject_flush f = { 0 };
	char err[256] = "", want[128];
	cr_assert_eq(inject_flush_init(&f, 0, true, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(f.per_sm, 2);
	cr_assert_geq(sink_bytes, FLUSH_SINK_TICKETS + 4 * FLUSH_TICKETS, "every counter held");
	snprintf(want, sizeof(want), "and.b32 %%r13, %%r13, %d;\n", FLUSH_TICKETS - 1);
	cr_assert(strstr(loaded, want), "%%smid masked to the counters: %s", want);
	cr_assert_eq(FLUSH_TICKETS & (FLUSH_TICKETS - 1), 0, "a mask");
	snprintf(want, sizeof(want), "mul.wide.u32 %%rd25, %%r13, 4;\n"
		 "  add.u64 %%rd25, %%rd25, %%rd3;\n  add.u64 %%rd25, %%rd25, %d;\n",
		 FLUSH_SINK_TICKETS);
	cr_assert(strstr(loaded, want), "the counters' offset: %s", want);
	snprintf(want, sizeof(want), "add.u64 %%rd12, %%rd3, %d;\n", FLUSH_SINK_BARRIER);
	cr_assert(strstr(loaded, want), "the barrier's offset: %s", want);
	cr_assert_eq(count(loaded, "[%rd3"), 1, "the store is the text's only other use of the sink");
	cr_assert(strstr(loaded, "st.global.u32 [%rd3], %r5;"), "the store at +0");
	inject_flush_finish(&f);
}

/* The code segments: 64 warps per SM (two blocks of 32) share the 256 KB, 256 instructions
 * each, every warp's segment a ticket from its SM's counter (modulo 64) in the sink from
 * +16, then, in a plain launch's second round, the segment 32 further; where
 * two blocks do not fit on an SM, the text is made again for one: 32 segments of 512, one
 * block per SM, one round. */
static unsigned count(const char *text, const char *word)
{
	unsigned n = 0;
	for (const char *p = text; (p = strstr(p, word)); p += strlen(word))
		n++;
	return n;
}

/* The segments' labels, SEG0: to SEG63: (not SEGS:, the dispatch's). */
static unsigned count_segments(const char *text)
{
	unsigned n = 0;
	for (const char *p = text; (p = strstr(p, "\nSEG")); p += 4)
		n += p[4] >= '0' && p[4] <= '9';
	return n;
}

Test(flush, sixty_four_warps_per_sm_share_the_code_where_two_blocks_fit, .init = stand_ins)
{
	for (int fit = 2; fit >= 1; fit--) {
		struct inject_flush f = { 0 };
		char err[256] = "";
		resident_blocks = fit;
		module_loads = module_unloads = 0;
		cr_assert_eq(inject_flush_init(&f, 0, true, err, sizeof(err)), 0, "%s", err);
		unsigned segments = fit == 2 ? 64 : 32;
		cr_assert_eq(f.blocks, 132u * (unsigned)fit, "%d blocks per SM", fit);
		cr_assert_eq(module_loads, fit == 2 ? 1u : 2u, "made again for one block");
		cr_assert_eq(module_unloads, fit == 2 ? 0u : 1u);
		cr_assert_eq(count(loaded, ".minnctapersm 2"), fit == 2 ? 1u : 0u);
		cr_assert_eq(count_segments(loaded), segments, "%u segments", segments);
		cr_assert_eq(count(loaded, "mad.lo.u32 %r10"), 256u * 1024 / 16,
			     "256 KB of code in all, %u instructions each", 256 * 1024 / 16 / segments);
		char rem[64];
		snprintf(rem, sizeof(rem), "rem.u32 %%r12, %%r15, %u;", segments);
		cr_assert(strstr(loaded, rem) && strstr(loaded, "mov.u32 %r13, %smid;") &&
			  strstr(loaded, "@%p3 atom.global.add.u32 %r15, [%rd25], 1;") &&
			  strstr(loaded, "shfl.sync.idx.b32 %r15, %r15, 0, 31, -1;"),
			  "a ticket per warp from its SM's counter");
		cr_assert_geq(sink_bytes, 16 + 4 * 1024, "the counters, %%smid up to 1023");
		if (fit == 2) {
			cr_assert(strstr(loaded, "  ld.param.u64 %rd26, [discard_from];\n"
					 "  setp.eq.u64 %p2, %rd26, 0xffffffffffffffff;\n"
					 "  selp.u32 %r49, 2, 1, %p2;\nSEGS:\n"),
				  "2 rounds where discard_from is a plain launch's, else 1, before "
				  "the dispatch");
			cr_assert_eq(count(loaded, "  bra NEXT;\n"), 64, "every segment then NEXT");
			cr_assert(strstr(loaded, "NEXT:\n  setp.le.u32 %p3, %r49, 1;\n"
					 "  @%p3 bra SWEEP;\n  sub.u32 %r49, %r49, 1;\n"
					 "  add.u32 %r12, %r12, 32;\n  rem.u32 %r12, %r12, 64;\n"
					 "  bra SEGS;\n"), "the segment 32 further, another round");
		} else {
			cr_assert(!strstr(loaded, "NEXT") && !strstr(loaded, "%r49"), "one round");
		}
		inject_flush_finish(&f);
	}
	resident_blocks = 2;
}

/* What the SM's warps run, as the two-block text's head, dispatch and NEXT compute it
 * (figures read from the text): the segments of warps tickets from start, in the rounds
 * the text gives a launch with discard_from (its selp's first value where discard_from
 * equals its setp's constant, else 1). */
static void run_tickets(const char *text, unsigned start, unsigned warps,
			unsigned long long discard_from, unsigned *runs, unsigned segments)
{
	unsigned plain_rounds = 0, step = 0, modulo = 0, first = 0;
	unsigned long long plain_value = 0;
	const char *next = strstr(text, "NEXT:\n");
	cr_assert(next && sscanf(next, "NEXT:\n  setp.le.u32 %%p3, %%r49, 1;\n"
				  "  @%%p3 bra SWEEP;\n  sub.u32 %%r49, %%r49, 1;\n"
				  "  add.u32 %%r12, %%r12, %u;\n  rem.u32 %%r12, %%r12, %u;",
				  &step, &modulo) == 2);
	cr_assert(sscanf(strstr(text, "setp.eq.u64 %p2, %rd26,"), "setp.eq.u64 %%p2, %%rd26, %llx;",
			 &plain_value) == 1);
	cr_assert(sscanf(strstr(text, "selp.u32 %r49"), "selp.u32 %%r49, %u, 1, %%p2;",
			 &plain_rounds) == 1);
	cr_assert(sscanf(strstr(text, "rem.u32 %r12, %r15"), "rem.u32 %%r12, %%r15, %u;",
			 &first) == 1);
	cr_assert(first == segments && modulo == segments);
	for (unsigned w = 0; w < warps; w++) {
		unsigned segment = (start + w) % first,
			 rounds = discard_from == plain_value ? plain_rounds : 1;
		for (;;) {
			runs[segment]++;
			if (rounds <= 1)
				break;
			rounds--;
			segment = (segment + step) % modulo;
		}
	}
}

/* Every segment runs on an SM that runs one block or more of a plain launch, which follows
 * a refused cooperative launch with its discard_from FLUSH_PLAIN_LAUNCH; a cooperative
 * launch's two blocks per SM run each once with one round. One block with one round would
 * leave half unrun. */
Test(flush, a_plain_launch_runs_every_segment_on_every_sm_it_reaches, .init = stand_ins)
{
	struct inject_flush f = { 0 };
	char err[256] = "";
	cr_assert_eq(inject_flush_init(&f, 0, true, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(f.per_sm, 2);
	rp_api.cuLaunchCooperativeKernel = refusing_cooperative;
	refusal = CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
	cr_assert_eq(inject_flush_launch(&f, NULL), 0);
	cr_assert(queued_n >= 1 && queued[queued_n - 1].what == 'p');
	/* The rounds each launch gets follow from what it passed (the text decides). */
	unsigned long long plain = discard_from_launched_plain, together = discard_from_launched;
	const unsigned starts[] = { 0, 17, 63, 4294967290u }, warps[] = { 32, 33, 64, 96, 128 };
	for (size_t i = 0; i < sizeof(starts) / sizeof(starts[0]); i++) {
		for (size_t j = 0; j < sizeof(warps) / sizeof(warps[0]); j++) {
			unsigned runs[64] = { 0 };
			run_tickets(loaded, starts[i], warps[j], plain, runs, 64);
			for (unsigned g = 0; g < 64; g++)
				cr_assert_geq(runs[g], 1, "segment %u unrun: %u warps from %u", g,
					      warps[j], starts[i]);
		}
		unsigned runs[64] = { 0 };
		run_tickets(loaded, starts[i], 64, together, runs, 64);
		for (unsigned g = 0; g < 64; g++)
			cr_assert_eq(runs[g], 1, "cooperative: segment %u once", g);
		memset(runs, 0, sizeof(runs));
		run_tickets(loaded, starts[i], 32, together, runs, 64);
		unsigned unrun = 0;
		for (unsigned g = 0; g < 64; g++)
			unrun += !runs[g];
		cr_assert_eq(unrun, 32, "one block, one round: half unrun");
	}
	inject_flush_finish(&f);
}

/* The sweep's unrolled loop (FLUSH_SWEEP_UNROLL loads in flight) stops while a whole
 * round of loads is inside the buffer: its bound is the offset of the round's last load,
 * U - 1 strides past the first, and each round advances U strides; the loop of one load
 * takes the rest. */
Test(flush, the_unrolled_sweep_stops_before_its_last_load_leaves_the_buffer,
     .init = stand_ins)
{
	struct inject_flush f = { 0 };
	char err[256] = "", last[64], round[64];
	cr_assert_eq(inject_flush_init(&f, 0, true, err, sizeof(err)), 0, "%s", err);
	unsigned loads = count(loaded, "ld.global.cg.v4.u32");
	if (FLUSH_SWEEP_UNROLL == 1) {
		cr_assert(!strstr(loaded, "LOOPN"), "one load a thread: no unrolled loop");
		cr_assert_eq(loads, 1u);
	} else {
		snprintf(last, sizeof(last), "mul.lo.u64 %%rd22, %%rd9, %d;\n",
			 FLUSH_SWEEP_UNROLL - 1);
		snprintf(round, sizeof(round), "mul.lo.u64 %%rd21, %%rd9, %d;\n",
			 FLUSH_SWEEP_UNROLL);
		cr_assert(strstr(loaded, last), "the bound: %s", last);
		cr_assert(strstr(loaded, round), "the round: %s", round);
		cr_assert(strstr(loaded, "add.u64 %rd24, %rd7, %rd22;\n"
				 "  setp.ge.u64 %p1, %rd24, %rd2;\n"),
			  "the last load's word against the buffer's");
		cr_assert(strstr(loaded, "add.u64 %rd7, %rd7, %rd21;\n  bra LOOPN;"));
		cr_assert_eq(loads, FLUSH_SWEEP_UNROLL + 1u, "%d in the round, 1 in the rest",
			     FLUSH_SWEEP_UNROLL);
	}
	inject_flush_finish(&f);
}

/* Where the flush never launches cooperatively (the sweep alone asked for, or a GPU that
 * cannot discard) or the SM cannot hold two blocks of 1024 threads, the text is made for
 * one block per SM at once: 32 segments of 512 instructions, one load of the text (its JIT
 * is ~0.6 s) and no occupancy query. */
static void assert_one_block_per_sm(const struct inject_flush *f, const char *why)
{
	cr_assert_eq(module_loads, 1, "%s: the text made once", why);
	cr_assert_eq(occupancy_queries, 0, "%s: nothing to ask", why);
	cr_assert_eq(f->blocks, 132, "%s: one block per SM", why);
	cr_assert_eq(count(loaded, ".minnctapersm"), 0, "%s", why);
	cr_assert_eq(count_segments(loaded), 32, "%s: 32 segments", why);
	cr_assert_eq(count(loaded, "mad.lo.u32 %r10"), 256u * 1024 / 16, "%s: 256 KB", why);
	cr_assert(strstr(loaded, "rem.u32 %r12, %r15, 32;"), "%s", why);
}

Test(flush, one_block_per_sm_where_the_flush_is_never_cooperative, .init = stand_ins)
{
	const struct {
		const char *why;
		bool empty;
		int major, cooperative;
	} cases[] = {
		{ "the sweep asked for", false, 9, 1 },
		{ "compute capability 7", true, 7, 1 },
		{ "no cooperative launches", true, 9, 0 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct inject_flush f = { 0 };
		char err[256] = "";
		compute_major = cases[i].major, cooperative = cases[i].cooperative;
		module_loads = occupancy_queries = 0;
		cr_assert_eq(inject_flush_init(&f, 0, cases[i].empty, err, sizeof(err)), 0, "%s",
			     err);
		cr_assert(!f.empty);
		assert_one_block_per_sm(&f, cases[i].why);
		inject_flush_finish(&f);
	}
}

Test(flush, one_block_per_sm_where_an_sm_holds_fewer_than_2048_threads, .init = stand_ins)
{
	struct inject_flush f = { 0 };
	char err[256] = "";
	threads_per_sm = 1536;
	cr_assert_eq(inject_flush_init(&f, 0, true, err, sizeof(err)), 0, "%s", err);
	cr_assert(f.empty, "still cooperative, with its discard");
	assert_one_block_per_sm(&f, "1536 threads per SM");
	inject_flush_finish(&f);
}

/* Every text the flush can make (with and without the discard, for one and two blocks per
 * SM: inject_flush_text itself, whichever inject_flush_init now loads) assembles without spilling
 * registers to local memory (whose traffic would pass through the L2 it empties; ptxas of
 * the toolkit, for an H100/H200): the unit tests otherwise only look for words in them,
 * and a text the driver cannot compile would leave every context unmeasured. Skipped where
 * the toolkit has no ptxas. */
Test(flush, both_kernel_texts_assemble, .init = stand_ins)
{
	if (!ptxas_check_available())
		cr_skip_test("no %s", PTXAS_CHECK_TOOL);
	for (int empty = 0; empty < 2; empty++)
		for (int per_sm = 2; per_sm >= 1; per_sm--) {
			char cmd[512], *ptx = inject_flush_text(empty, per_sm);
			cr_assert(ptx);
			int rc = ptxas_check(ptx, cmd, sizeof(cmd));
			free(ptx);
			cr_assert_eq(rc, 0, "%s: the %s flush's PTX for %d blocks per SM does not "
				     "assemble without spills", cmd, empty ? "discarding" : "plain",
				     per_sm);
		}
}

/* The launch fails with the code the measuring loop reports ("flushing the L2 failed"). */
Test(flush, a_refused_launch_is_rp_err_flush, .init = stand_ins)
{
	struct inject_flush f = { 0 };
	char err[256] = "";
	cr_assert_eq(inject_flush_init(&f, 0, false, err, sizeof(err)), 0, "%s", err);
	launched = CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
	cr_assert_eq(inject_flush_launch(&f, NULL), RP_ERR_FLUSH);
	inject_flush_finish(&f);
}

/* A set-up that fails is a context measured in no longer: the message names the driver's
 * error, the code is a plain failure. */
Test(flush, a_failed_set_up_names_the_drivers_error, .init = stand_ins)
{
	struct inject_flush f = { 0 };
	char err[256] = "";
	rp_api.cuDeviceGet = no_device;
	cr_assert_eq(inject_flush_init(&f, 0, false, err, sizeof(err)), RP_ERR_FAILED);
	cr_assert_str_eq(err, "L2 flush: device attributes: CUDA_ERROR_NO_DEVICE");
	rp_api.cuDeviceGet = fake_device;
	allocated = CUDA_ERROR_OUT_OF_MEMORY;
	cr_assert_eq(inject_flush_init(&f, 0, false, err, sizeof(err)), RP_ERR_FAILED);
	cr_assert(strstr(err, "L2 flush: cuMemAlloc(") && strstr(err, "CUDA_ERROR_OUT_OF_MEMORY"),
		  "%s", err);
	allocated = CUDA_SUCCESS;
	inject_flush_finish(&f);
}

/* Every failed set-up leaves the flush as the caller gave it, zeroed, with nothing held:
 * the caller (session.c) calls inject_flush_finish only after a set-up that succeeded. */
static void assert_nothing_held(const struct inject_flush *f, const char *why)
{
	cr_assert(!f->module && !f->kernel && !f->buffer && !f->sink && !f->words &&
			  !f->discard_from && !f->blocks && !f->empty && !f->barrier_cleared &&
			  f->limit == INJECT_FLUSH_EMPTIES && !f->refused && !f->image_refused &&
			  !f->notice[0],
		  "%s: the flush zeroed", why);
	cr_assert_eq(modules_held, 0, "%s: every loaded module unloaded", why);
	cr_assert_eq(allocations_held, 0, "%s: every allocation freed", why);
}

/* A flush that held something before its set-up failed (what a caller must not see). */
static void junk(struct inject_flush *f)
{
	memset(f, 0x5a, sizeof(*f));
	f->notice[0] = '\0';
	f->module = NULL, f->buffer = f->sink = 0;
}

Test(flush, a_failed_set_up_holds_nothing, .init = stand_ins)
{
	struct {
		const char *why;
		unsigned load_fails_at, malloc_fails_at, alloc_fails_at;
		CUresult function, occupancy;
		int resident;
		int rc;
		const char *says;
	} cases[] = {
		{ "no device", 0, 0, 0, CUDA_SUCCESS, CUDA_SUCCESS, 2, RP_ERR_FAILED,
		  "L2 flush: device attributes: CUDA_ERROR_NO_DEVICE" },
		{ "the load", 1, 0, 0, CUDA_SUCCESS, CUDA_SUCCESS, 2, RP_ERR_FAILED,
		  "L2 flush: loading the sweep kernel: CUDA_ERROR_OTHER" },
		{ "the second pass's load", 2, 0, 0, CUDA_SUCCESS, CUDA_SUCCESS, 1, RP_ERR_FAILED,
		  "L2 flush: loading the sweep kernel: CUDA_ERROR_OTHER" },
		{ "the kernel's function", 0, 0, 0, CUDA_ERROR_NOT_FOUND, CUDA_SUCCESS, 2,
		  RP_ERR_FAILED, "L2 flush: loading the sweep kernel: CUDA_ERROR_OTHER" },
		{ "the occupancy query", 0, 0, 0, CUDA_SUCCESS, CUDA_ERROR_INVALID_VALUE, 2,
		  RP_ERR_FAILED, "L2 flush: cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags: "
		  "CUDA_ERROR_OTHER" },
		{ "the text", 0, 1, 0, CUDA_SUCCESS, CUDA_SUCCESS, 2, RP_ERR_NO_MEMORY,
		  "L2 flush: out of host memory" },
		{ "the second pass's text", 0, 2, 0, CUDA_SUCCESS, CUDA_SUCCESS, 1, RP_ERR_NO_MEMORY,
		  "L2 flush: out of host memory" },
		{ "the buffer", 0, 0, 1, CUDA_SUCCESS, CUDA_SUCCESS, 2, RP_ERR_FAILED,
		  "L2 flush: cuMemAlloc(52428800 bytes): CUDA_ERROR_OUT_OF_MEMORY" },
		{ "the sink", 0, 0, 2, CUDA_SUCCESS, CUDA_SUCCESS, 2, RP_ERR_FAILED,
		  "L2 flush: cuMemAlloc(" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct inject_flush f;
		char err[256] = "";
		junk(&f);
		rp_api.cuDeviceGet = i == 0 ? no_device : fake_device;
		load_fails_at = cases[i].load_fails_at;
		malloc_fails_at = cases[i].malloc_fails_at;
		alloc_fails_at = cases[i].alloc_fails_at;
		function_result = cases[i].function;
		occupancy_result = cases[i].occupancy;
		resident_blocks = cases[i].resident;
		mallocs = allocs = module_loads = 0;
		cr_assert_eq(inject_flush_init(&f, 0, true, err, sizeof(err)), cases[i].rc,
			     "%s: %s", cases[i].why, err);
		cr_assert(strstr(err, cases[i].says), "%s: %s", cases[i].why, err);
		assert_nothing_held(&f, cases[i].why);
	}
	cr_assert_eq(module_loads, 1, "the sink's case loaded once");
	cr_assert_eq(allocs, 2, "and failed at the sink");
}

/* The compiled images (flush_image.h): inject_flush_init loads the build's image of the text
 * it would make, before any text is made; the driver's refusal of the image (a GPU without
 * a fitting cubin whose driver cannot take the fatbin's text either, a driver older than
 * the toolkit that made it) falls back to the text; and each image the build holds is of
 * the text this library makes, with a cubin for each architecture it names. Skipped in a
 * build that made no images (meson says "cache flush compiled ahead: no", or
 * scripts/flush_image.py said why at build time); .ci/run's sanitizer build asks for them
 * (-Dflush_image=enabled), so that CI runs these. */
static const struct inject_flush_image *images(size_t *n)
{
	const struct inject_flush_image *all = inject_flush_images(n);
	if (!*n)
		cr_skip_test("this build holds no compiled images of the flush");
	return all;
}

static unsigned long long fnv1a64(const char *s)
{
	unsigned long long h = 0xcbf29ce484222325ULL;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

static unsigned long long read_le(const unsigned char *at, size_t bytes)
{
	unsigned long long v = 0;
	for (size_t i = 0; i < bytes; i++)
		v |= (unsigned long long)at[i] << (8 * i);
	return v;
}

Test(flush, the_image_is_loaded_first_and_no_text_is_made, .init = stand_ins)
{
	size_t n;
	images(&n);
	images_on = true;
	struct {
		bool empty;
		int threads, per_sm;
	} cases[] = { { true, 2048, 2 }, { true, 1536, 1 }, { false, 2048, 1 } };
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct inject_flush f = { 0 };
		char err[256] = "";
		threads_per_sm = cases[i].threads;
		mallocs = module_loads = 0;
		cr_assert_eq(inject_flush_init(&f, 0, cases[i].empty, err, sizeof(err)), 0, "%s", err);
		const struct inject_flush_image *want = inject_flush_image(cases[i].empty,
									    cases[i].per_sm);
		cr_assert(want, "the build holds the image of (%d, %d)", cases[i].empty,
			  cases[i].per_sm);
		cr_assert_eq(loaded_image, want->bytes, "case %zu: its image loaded", i);
		cr_assert_eq(module_loads, 1, "case %zu: once", i);
		cr_assert_eq(mallocs, 0, "case %zu: no text made", i);
		cr_assert_eq(f.per_sm, (unsigned)cases[i].per_sm);
		cr_assert_eq(modules_held, 1);
		inject_flush_finish(&f);
		cr_assert_eq(modules_held, 0);
	}
}

/* Two blocks of 1024 threads fit by the SM's thread count, but not by the occupancy query
 * (registers): the two-block image is unloaded and the one-block image loaded. */
Test(flush, the_one_block_image_follows_a_two_block_image_that_does_not_fit,
     .init = stand_ins)
{
	size_t n;
	images(&n);
	images_on = true;
	resident_blocks = 1;
	struct inject_flush f = { 0 };
	char err[256] = "";
	cr_assert_eq(inject_flush_init(&f, 0, true, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(module_loads, 2);
	cr_assert_eq(module_unloads, 1);
	cr_assert_eq(loaded_image, inject_flush_image(true, 1)->bytes);
	cr_assert_eq(f.per_sm, 1);
	inject_flush_finish(&f);
	cr_assert_eq(modules_held, 0);
}

/* The refused image's failure paths: what the refusal left in the flush is never unloaded
 * (the text's memory then fails), and a text the driver refuses too is named with the
 * image's error. */
Test(flush, a_refused_image_then_a_failed_text_holds_nothing, .init = stand_ins)
{
	size_t n;
	images(&n);
	images_on = true;
	image_result = CUDA_ERROR_NO_BINARY_FOR_GPU;
	struct inject_flush f;
	char err[256] = "";
	junk(&f);
	malloc_fails_at = 1;
	cr_assert_eq(inject_flush_init(&f, 0, true, err, sizeof(err)), RP_ERR_NO_MEMORY, "%s", err);
	assert_nothing_held(&f, "image refused, no memory for the text");
	junk(&f);
	malloc_fails_at = 0;
	mallocs = module_loads = 0;
	load_fails_at = 2;
	cr_assert_eq(inject_flush_init(&f, 0, true, err, sizeof(err)), RP_ERR_FAILED, "%s", err);
	cr_assert(strstr(err, "L2 flush: loading the sweep kernel: CUDA_ERROR_OTHER (its compiled "
			      "image: CUDA_ERROR_OTHER)"), "both errors named: %s", err);
	assert_nothing_held(&f, "image and text refused");
}

Test(flush, an_image_the_driver_refuses_falls_back_to_the_text, .init = stand_ins)
{
	size_t n;
	images(&n);
	images_on = true;
	image_result = CUDA_ERROR_NO_BINARY_FOR_GPU;
	struct inject_flush f = { 0 };
	char err[256] = "";
	cr_assert_eq(inject_flush_init(&f, 0, true, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(module_loads, 2, "the image, then the text");
	cr_assert(strstr(loaded, ".target sm_80") && strstr(loaded, ".minnctapersm 2"),
		  "the text of the same flush");
	cr_assert_eq(modules_held, 1, "the refused image holds nothing");
	cr_assert_eq(f.per_sm, 2);
	cr_assert_eq(f.image_refused, CUDA_ERROR_NO_BINARY_FOR_GPU, "the refusal kept for its report");
	inject_flush_finish(&f);
	cr_assert_eq(modules_held, 0);
}

/* Each image is of the text inject_flush_text makes in this build (FNV-1a of the text it was
 * compiled from), and a fatbin (layout as CUDA 13's fatbinary writes it: a 16-byte header,
 * magic, version, header size, then the bytes that follow; each entry a header of its own
 * size with its kind at +0, 1 text and 2 cubin, its size at +8 after its header, and its
 * architecture at +28) holding one cubin for each architecture it names and the text. The
 * images cover every text inject_flush_init can ask for. */
Test(flush, the_builds_images_are_of_this_librarys_texts, .init = stand_ins)
{
	size_t n;
	const struct inject_flush_image *all = images(&n);
	cr_assert_eq(n, 3, "the discarding flush for 2 and 1 blocks per SM, the plain one for 1");
	cr_assert(inject_flush_image(true, 2) && inject_flush_image(true, 1) &&
		  inject_flush_image(false, 1));
	for (size_t i = 0; i < n; i++) {
		const struct inject_flush_image *im = &all[i];
		char *text = inject_flush_text(im->empty, im->per_sm);
		cr_assert(text);
		cr_assert_eq(fnv1a64(text), im->text_fnv1a, "image (%d, %d): of another text",
			     im->empty, im->per_sm);
		free(text);
		const unsigned char *b = im->bytes;
		cr_assert_eq(memcmp(b, fatbin_magic, 4), 0, "image (%d, %d): a fatbin", im->empty,
			     im->per_sm);
		size_t header = read_le(b + 6, 2), end = header + read_le(b + 8, 8);
		cr_assert_leq(end, im->size, "image (%d, %d): its fatbin fits", im->empty,
			      im->per_sm);
		char archs[128] = "";
		unsigned texts = 0;
		for (size_t at = header; at < end;) {
			unsigned kind = (unsigned)read_le(b + at, 2);
			size_t entry = read_le(b + at + 4, 4), size = read_le(b + at + 8, 8);
			unsigned arch = (unsigned)read_le(b + at + 28, 4);
			cr_assert(kind == 1 || kind == 2, "image (%d, %d): entry of kind %u",
				  im->empty, im->per_sm, kind);
			if (kind == 1) {
				texts++;
				cr_assert_eq(arch, im->empty ? 80u : 70u, "the text's target");
			} else {
				snprintf(archs + strlen(archs), sizeof(archs) - strlen(archs),
					 "%ssm_%u", archs[0] ? " " : "", arch);
			}
			cr_assert_gt(entry, 0);
			at += entry + size;
			cr_assert_leq(at, end, "image (%d, %d): entries end with the fatbin",
				      im->empty, im->per_sm);
		}
		cr_assert_eq(texts, 1, "image (%d, %d): one text", im->empty, im->per_sm);
		cr_assert_str_eq(archs, im->archs, "image (%d, %d): the cubins it names",
				 im->empty, im->per_sm);
		cr_assert(strstr(im->archs, "sm_90"), "an H100/H200 gets a cubin");
	}
}
