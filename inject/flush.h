/* inject/flush.h - the clean cache flush before every replay: one kernel, generated PTX,
 * whose warps first run 256 KB of straight-line code (evicting the SMs' instruction caches,
 * without which kernels measured up to 8.9 % faster than ncu with its cache control) and
 * then sweep twice the L2 with reads (flush.c says more). A memset flush would leave dirty
 * lines that are written back during the measured kernel (66 MB of DRAM writes instead of
 * ncu's 38 MB for a 64 MB in-place kernel, and +35 us: doc/measurements.md, "Figures from
 * GPU-FACTS.md"). Discarding the swept lines afterwards (discard.global.L2, so that the
 * kernel starts from invalid lines as after ncu's cache control) changed nothing
 * measurable (tests/gpu/l2_rmw.cu's DRAM writes 1.729 MB with and without) and cost a
 * kernel per run (20 runs 3.4-3.6 ms instead of 3.2-3.4): tried and withdrawn (issue 11;
 * doc/measurements.md, "The flush"). Tried again over 64 places of L2-resident arrays
 * (issue 22): it raised a half-L2 overwrite's DRAM writes by 2.7 % toward ncu's, left a
 * gather's, and cost 30-50 us per run (doc/measurements.md, "DRAM writes of L2-resident
 * kernels"). */
#ifndef INJECT_FLUSH_H
#define INJECT_FLUSH_H

#include <cuda.h>
#include <stddef.h>

struct inject_flush {
	CUmodule module;
	CUfunction kernel;
	CUdeviceptr buffer;          /* twice the L2, 16-byte words */
	CUdeviceptr sink;            /* keeps the loads from being optimised away */
	unsigned long long words;
	unsigned blocks;
};

/* Loads the sweep into the current context and allocates its buffer. 0, or with err
 * RP_ERR_NO_MEMORY (host memory for the kernel's text) or RP_ERR_FAILED (the driver). */
int inject_flush_init(struct inject_flush *flush, int device, char *err, size_t err_size);
/* Frees the buffer and unloads the sweep, in the current context (still valid: called
 * when the context is being destroyed). */
void inject_flush_finish(struct inject_flush *flush);
/* Queues the sweep on stream: one kernel launch. 0 or RP_ERR_FLUSH (common/error.h). */
int inject_flush_launch(struct inject_flush *flush, CUstream stream);

#endif
