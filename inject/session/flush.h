/* inject/session/flush.h - the clean cache flush before every replay: one kernel, generated PTX,
 * whose warps first run 256 KB of straight-line code (evicting the SMs' instruction caches,
 * without which kernels measured up to 8.9 % faster than ncu with its cache control), then
 * sweep one L2's worth with reads, then wait for each other and discard the swept lines
 * (discard.global.L2), so that the kernel starts from an L2 without valid lines, as after
 * ncu's cache control (flush_text.c says more). A memset flush would leave
 * dirty lines that are written back during the measured kernel (66 MB of DRAM writes
 * instead of ncu's 38 MB for a 64 MB in-place kernel, and +35 us: doc/measurements.md,
 * "Figures from GPU-FACTS.md"). The discard brought a half-L2 overwrite's DRAM writes from
 * 4.2-4.9 % below ncu's to 1.9-2.5 % below (means over 94 places of its arrays), and equal
 * (-0.06 %) to ncu measuring the program's own sweep and discard; it costs 5.5 us per run
 * (63.3 against 57.8 us per flush since session 21: bench/flush_cost.c; doc/measurements.md,
 * "The flush" and "DRAM writes of L2-resident kernels"). Where it cannot (a GPU before compute
 * capability 8.0, or a refused cooperative launch) the flush sweeps only, and says so
 * once per device and reason (notice, reported by measure.c). */
#ifndef INJECT_FLUSH_H
#define INJECT_FLUSH_H

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>

struct inject_flush {
	CUmodule module;
	CUfunction kernel;
	CUdeviceptr buffer;          /* one L2's worth, 16-byte words */
	CUdeviceptr sink;            /* the fold's store, the grid barrier and each SM's
				      * counter of segments taken, at flush_text.h's
				      * FLUSH_SINK_* offsets */
	unsigned long long words;
	unsigned long long discard_from; /* the first line the discard invalidates */
	unsigned per_sm;                 /* blocks per SM the kernel's text is made for: 2, or
					  * 1 where 2 cannot be resident or the flush never
					  * launches cooperatively */
	unsigned blocks;                 /* per_sm on every SM */
	bool empty;                      /* sweep, then discard: the L2 left without valid lines */
	bool barrier_cleared;            /* empty: its grid barrier's count set to 0 */
	/* Why the flush does not leave the L2 empty, as a code (what measure.c decides on and
	 * says once per device and code) and as words for the user; INJECT_FLUSH_EMPTIES and
	 * "" when it does, or when only the sweep was asked for. */
	enum inject_flush_limit {
		INJECT_FLUSH_EMPTIES = 0,
		INJECT_FLUSH_OLD_DEVICE,         /* compute capability before 8.0 */
		INJECT_FLUSH_NO_COOPERATIVE,     /* the device has no cooperative launches */
		INJECT_FLUSH_REFUSED,            /* the driver refused the cooperative launch */
	} limit;
	CUresult refused;                /* INJECT_FLUSH_REFUSED: the driver's error */
	/* The driver's error for the build's compiled image (flush_image.h), whose text it
	 * then compiled; CUDA_SUCCESS where it took the image or the build holds none. */
	CUresult image_refused;
	char notice[320];
};

/* Loads the flush into the current context and allocates its buffer; empty: the sweep is
 * followed by the discard where the device can (compute capability 8.0 or later,
 * cooperative launches; otherwise notice says why not), false: the sweep alone
 * (bench/flush_cost.c compares the two). 0, or with err RP_ERR_NO_MEMORY (host memory for
 * the kernel's text) or RP_ERR_FAILED (the driver); a failure leaves *flush zeroed, holding
 * nothing (no inject_flush_finish needed). */
int inject_flush_init(struct inject_flush *flush, int device, bool empty, char *err,
		      size_t err_size);
/* Frees the buffer and unloads the sweep, in the current context (still valid: called
 * when the context is being destroyed). */
void inject_flush_finish(struct inject_flush *flush);
/* Queues the flush on stream: one kernel launch, cooperative when it discards; a
 * cooperative launch the driver refuses (too large for the SMs this context may use, not
 * supported) turns the discard off from then on, with notice set, and the sweep is
 * launched alone. 0 or RP_ERR_FLUSH (common/error.h). */
int inject_flush_launch(struct inject_flush *flush, CUstream stream);

#endif
