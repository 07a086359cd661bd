/* tests/unit/inject/flush_test.c - the cache flush's set-up and launch
 * (inject/session/flush.c) with
 * the driver replaced by stand-ins (no GPU): what its callers decide on, the code of each
 * failure, and the driver's error in the set-up's message. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/api.h"
#include "common/error.h"
#include "inject/session/flush.h"
#include "tests/unit/ptxas_check.h"

static CUresult launched = CUDA_SUCCESS, allocated = CUDA_SUCCESS;
static unsigned launches, cooperative_launches, memsets;
static unsigned memset_before_first_cooperative;   /* memsets seen by the first one */
static int compute_major = 9, cooperative = 1;
static int resident_blocks = 2;                    /* of the flush's kernel, per SM */
static unsigned module_loads, module_unloads;
static size_t sink_bytes;                          /* the last allocation's, the sink's */
static char loaded[1 << 20];
static CUstream memset_stream;
static CUdeviceptr memset_at;
static size_t memset_bytes;
static unsigned long long discard_from_launched, discard_from_launched_plain;

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
	     a == CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH ? cooperative : 132;
	return CUDA_SUCCESS;
}

static CUresult fake_load(CUmodule *m, const void *image)
{
	cr_assert(strstr(image, ".entry rangeprof_l2_flush"));
	cr_assert_lt(strlen(image), sizeof(loaded));
	strcpy(loaded, image);
	module_loads++;
	*m = (CUmodule)(uintptr_t)0x10;
	return CUDA_SUCCESS;
}

static CUresult fake_function(CUfunction *f, CUmodule m, const char *name)
{
	(void)m, (void)name;
	*f = (CUfunction)(uintptr_t)0x20;
	return CUDA_SUCCESS;
}

static CUresult fake_alloc(CUdeviceptr *p, size_t bytes)
{
	sink_bytes = bytes;
	*p = 0x1000;
	return allocated;
}

static CUresult fake_free(CUdeviceptr p)
{
	(void)p;
	return CUDA_SUCCESS;
}

static CUresult fake_unload(CUmodule m)
{
	(void)m;
	module_unloads++;
	return CUDA_SUCCESS;
}

static CUresult fake_occupancy(int *blocks, CUfunction f, int threads, size_t smem,
			       unsigned flags)
{
	(void)f, (void)smem, (void)flags;
	cr_assert_eq(threads, 1024, "the flush's blocks are 32 warps");
	*blocks = resident_blocks;
	return CUDA_SUCCESS;
}

static CUresult fake_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
			    unsigned by, unsigned bz, unsigned smem, CUstream s, void **params,
			    void **extra)
{
	(void)f, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)smem, (void)s;
	(void)extra;
	discard_from_launched_plain = *(unsigned long long *)params[3];
	launches++;
	return launched;
}

static CUresult fake_cooperative(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
				 unsigned bx, unsigned by, unsigned bz, unsigned smem, CUstream s,
				 void **params)
{
	(void)f, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)smem, (void)s;
	discard_from_launched = *(unsigned long long *)params[3];
	if (!cooperative_launches++)
		memset_before_first_cooperative = memsets;
	return launched;
}

static CUresult fake_memset(CUdeviceptr p, unsigned char v, size_t n, CUstream s)
{
	cr_assert_eq(v, 0);
	memset_at = p, memset_bytes = n, memset_stream = s;
	memsets++;
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
	rp_api.cuGetErrorName = fake_error_name;
}

Test(flush, a_flush_set_up_launches_one_kernel, .init = stand_ins)
{
	struct inject_flush f = { 0 };
	char err[256] = "";
	cr_assert_eq(inject_flush_init(&f, 0, false, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(f.words, (size_t)(50 << 20) / 16, "one L2 in 16-byte words");
	cr_assert_eq(f.blocks, 2 * 132, "two blocks per SM");
	cr_assert_eq(module_loads, 1);
	cr_assert_eq(inject_flush_launch(&f, NULL), 0);
	cr_assert_eq(launches, 1);
	cr_assert_eq(cooperative_launches + memsets, 0, "the plain flush needs no grid barrier");
	cr_assert(strstr(loaded, ".target sm_70") && !strstr(loaded, "discard"),
		  "the plain flush runs on any GPU and discards nothing");
	inject_flush_finish(&f);
}

/* The flush that leaves the L2 empty: one cooperative kernel (its grid barrier needs every
 * block resident) that discards the swept buffer's last L2 of lines, the barrier's count
 * cleared once, on the first flush's own stream. */
Test(flush, the_empty_flush_discards_the_last_l2_of_the_sweep_after_a_grid_barrier,
     .init = stand_ins)
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
	cr_assert_eq(memset_bytes, 16);
	/* Buffer of one L2, 50 MB: all of it discarded, from line 0. */
	cr_assert_eq(discard_from_launched, 0);
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
	(void)f, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)smem, (void)s;
	(void)params;
	cooperative_launches++;
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
		cr_assert_eq(discard_from_launched_plain, f.words / 8, "nothing to discard");
		cr_assert(!f.empty);
		cr_assert_eq(f.limit, INJECT_FLUSH_REFUSED);
		cr_assert_eq(f.refused, refusals[i], "each refusal told apart by its error");
		cr_assert(strstr(f.notice, "its cooperative launch was refused: CUDA_ERROR_OTHER"),
			  "%s", f.notice);
		cr_assert_eq(inject_flush_launch(&f, NULL), 0);
		cr_assert_eq(cooperative_launches, 2, "no cooperative launch once refused");
		cr_assert_eq(launches, 2);
		inject_flush_finish(&f);
	}
}

/* The code segments: 64 warps per SM (two blocks of 32) share the 256 KB, 256 instructions
 * each, every warp's segment a ticket from its SM's counter (modulo 64) in the sink past
 * its first 16 bytes; where two blocks do not fit on an SM, the text is made again for
 * one: 32 segments of 512, one block per SM. */
static unsigned count(const char *text, const char *word)
{
	unsigned n = 0;
	for (const char *p = text; (p = strstr(p, word)); p += strlen(word))
		n++;
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
		cr_assert_eq(count(loaded, "\nSEG"), segments, "%u segments", segments);
		cr_assert_eq(count(loaded, "mad.lo.u32 %r10"), 256u * 1024 / 16,
			     "256 KB of code in all, %u instructions each", 256 * 1024 / 16 / segments);
		char rem[64];
		snprintf(rem, sizeof(rem), "rem.u32 %%r12, %%r15, %u;", segments);
		cr_assert(strstr(loaded, rem) && strstr(loaded, "mov.u32 %r13, %smid;") &&
			  strstr(loaded, "@%p3 atom.global.add.u32 %r15, [%rd25], 1;") &&
			  strstr(loaded, "shfl.sync.idx.b32 %r15, %r15, 0, 31, -1;"),
			  "a ticket per warp from its SM's counter");
		cr_assert_geq(sink_bytes, 16 + 4 * 1024, "the counters, %%smid up to 1023");
		inject_flush_finish(&f);
	}
	resident_blocks = 2;
}

/* Every text the flush can load assembles without spilling registers to local memory
 * (whose traffic would pass through the L2 it empties; ptxas of the toolkit, for an
 * H100/H200): the
 * unit tests otherwise only look for words in them, and a text the driver cannot compile
 * would leave every context unmeasured. Skipped where the toolkit has no ptxas. */
Test(flush, both_kernel_texts_assemble, .init = stand_ins)
{
	if (!ptxas_check_available())
		cr_skip_test("no %s", PTXAS_CHECK_TOOL);
	for (int empty = 0; empty < 2; empty++)
		for (resident_blocks = 2; resident_blocks >= 1; resident_blocks--) {
			struct inject_flush f = { 0 };
			char err[256] = "", cmd[512];
			cr_assert_eq(inject_flush_init(&f, 0, empty, err, sizeof(err)), 0, "%s", err);
			int rc = ptxas_check(loaded, cmd, sizeof(cmd));
			cr_assert_eq(rc, 0, "%s: the %s flush's PTX for %d blocks per SM does not "
				     "assemble without spills", cmd, empty ? "discarding" : "plain",
				     resident_blocks);
			inject_flush_finish(&f);
		}
	resident_blocks = 2;
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
