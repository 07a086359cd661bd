/* inject/session/flush.c - loads and launches the cache flush (the SMs' instruction caches,
 * then an L2 read sweep, then the discard of the swept lines), loaded for each context at
 * its set-up (early or at its first measured launch) and launched before every replay.
 * Calls: flush_image.c (the image it loads first), flush_text.c (the text otherwise),
 * collector/ (the driver).
 * Called by: session.c (loads it), kernel_workload.c, whole_workload.c, measure.c (run 0 of
 * a measurement whose first run is the application's launch).
 * Lock: none (constant PTX; the loaded flush is the context's state, session.c's). */
#include "inject/session/flush.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "collector/api.h"
#include "common/error.h"
#include "inject/session/flush_image.h"
#include "inject/session/flush_text.h"

/* Blocks of FLUSH_WARPS warps per SM: 2, so that 64 warps share the 256 KB of code, each
 * fetching 4 KB in sequence where 32 warps fetched 8 KB: 60.4 us per flush against 65.1
 * with one block (bench/flush_cost_s2b1, session 21). 1 where the kernel cannot have 2
 * blocks of 1024 threads resident on an SM, or where the flush never launches
 * cooperatively (inject_flush_init). */
#ifndef FLUSH_BLOCKS_PER_SM
#define FLUSH_BLOCKS_PER_SM 2
#endif
_Static_assert(FLUSH_BLOCKS_PER_SM == 1 || FLUSH_BLOCKS_PER_SM == 2, "1 or 2 blocks per SM");
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
	 * the load (or the JIT: flush_image.h) of a text the occupancy query would refuse. */
	int per_sm = FLUSH_BLOCKS_PER_SM;
	if (!empty || threads < per_sm * 32 * FLUSH_WARPS)
		per_sm = 1;
	for (;;) {
		/* The build's image first, whose cubin for this GPU needs no JIT (flush_image.h
		 * says what that spares); the text where the build made none or the driver
		 * refuses the image (image_refused says so). */
		const struct inject_flush_image *image = inject_flush_image(empty, per_sm);
		/* Of the module this pass loads (an earlier pass's was unloaded). */
		f->image_refused = CUDA_SUCCESS;
		r = image ? rp_api.cuModuleLoadData(&f->module, image->bytes) :
			    CUDA_ERROR_NOT_FOUND;
		if (image && r != CUDA_SUCCESS)
			f->image_refused = r;
		if (r != CUDA_SUCCESS) {
			/* What the refusal left in f is not the driver's. */
			f->module = NULL;
			char *ptx = inject_flush_text(empty, per_sm);
			if (!ptx) {
				snprintf(err, err_size, "L2 flush: out of host memory");
				inject_flush_finish(f);
				return RP_ERR_NO_MEMORY;
			}
			r = rp_api.cuModuleLoadData(&f->module, ptx);
			free(ptx);
		}
		/* What a failed call left in f is not the driver's: finish must not use it. */
		if (r != CUDA_SUCCESS)
			f->module = NULL;
		if (r != CUDA_SUCCESS ||
		    (r = rp_api.cuModuleGetFunction(&f->kernel, f->module, "rangeprof_l2_flush")) !=
			    CUDA_SUCCESS) {
			int n = snprintf(err, err_size, "L2 flush: loading the sweep kernel: %s",
					 collector_cu_error(r));
			if (f->image_refused && n >= 0 && (size_t)n < err_size)
				snprintf(err + n, err_size - (size_t)n, " (its compiled image: %s)",
					 collector_cu_error(f->image_refused));
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
	 * the scheduler does in a plain one (flush_text.c, flush_ptx_head: every segment still
	 * runs on every SM that runs a block). */
	f->per_sm = (unsigned)per_sm;
	f->blocks = (unsigned)(sms > 0 ? sms : 132) * f->per_sm;
	return 0;
}

int inject_flush_launch(struct inject_flush *f, CUstream stream)
{
	if (f->empty) {
		void *args[] = { &f->buffer, &f->words, &f->sink, &f->discard_from };
		/* The grid barrier counts from 0 (flush_text.c), set on the stream of the first
		 * launch, so that set-up waits for nothing. */
		if (!f->barrier_cleared) {
			if (rp_api.cuMemsetD8Async(f->sink, 0, FLUSH_SINK_BARRIER + 8, stream) !=
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
		/* Plain launches do not place per_sm blocks on every SM: with the discard_from
		 * below (FLUSH_PLAIN_LAUNCH) each warp runs per_sm rounds of segments, so that an
		 * SM running any block runs every segment (flush_text.c, flush_ptx_head). */
		f->empty = false;
		f->limit = INJECT_FLUSH_REFUSED;
		f->refused = r;
		snprintf(f->notice, sizeof(f->notice), "the L2 flush cannot discard the lines it "
			 "leaves (its cooperative launch was refused: %s): each run starts from an "
			 "L2 holding clean lines instead of an empty one, which lowered a half-L2 "
			 "overwrite's DRAM writes by 2-3 %% against ncu's on an H200",
			 collector_cu_error(r));
	}
	/* Past the last line: no barrier, no discard, per_sm rounds (the sweep-only text
	 * ignores it). */
	unsigned long long nothing = FLUSH_PLAIN_LAUNCH;
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
