/* inject/flush.h - the clean L2 flush: a read sweep over twice the L2 by a small kernel
 * loaded from embedded PTX, then (sm_80 and later) a second kernel that discards the
 * swept lines (discard.global.L2), so that the measured kernel starts from an L2 whose
 * lines are invalid, as after ncu's cache control, instead of full of clean lines of the
 * sweep (issue 11: DRAM writes of a read-modify-write kernel that fits in the L2). A
 * memset flush would leave dirty lines that are written back during the measured kernel
 * (GPU-FACTS.md: +28 MB of DRAM writes and +35 us). */
#ifndef INJECT_FLUSH_H
#define INJECT_FLUSH_H

#include <cuda.h>
#include <stddef.h>

struct inject_flush {
	CUmodule module;
	CUfunction kernel;
	CUmodule discard_module;     /* NULL where discard.global.L2 is not available */
	CUfunction discard;
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
/* Queues the sweep on stream: inject_flush_kernels() kernel launches. */
CUresult inject_flush_launch(struct inject_flush *flush, CUstream stream);
/* How many kernels inject_flush_launch() queues (each is a range of the profiler). */
unsigned inject_flush_kernels(const struct inject_flush *flush);

#endif
