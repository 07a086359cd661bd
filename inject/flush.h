/* inject/flush.h - the clean cache flush before every replay: one kernel, generated PTX,
 * whose warps first run 256 KB of straight-line code (evicting the SMs' instruction caches,
 * as ncu's cache control does) and then sweep twice the L2 with reads. A memset flush would leave dirty lines that are written back
 * during the measured kernel (GPU-FACTS.md: +28 MB of DRAM writes and +35 us). Discarding
 * the swept lines afterwards (discard.global.L2, so that the kernel starts from invalid
 * lines as after ncu's cache control) changed nothing measurable and cost a kernel per
 * run: tried and withdrawn (bench/NOTES.md, issue 11). */
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

/* Loads the sweep into the current context and allocates its buffer. 0 or -1 with err. */
int inject_flush_init(struct inject_flush *flush, int device, char *err, size_t err_size);
/* Frees the buffer and unloads the sweep, in the current context (still valid: called
 * when the context is being destroyed). */
void inject_flush_finish(struct inject_flush *flush);
/* Queues the sweep on stream: one kernel launch. */
CUresult inject_flush_launch(struct inject_flush *flush, CUstream stream);

#endif
