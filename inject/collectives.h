/* inject/collectives.h - kernels that wait for other GPUs or processes: NCCL, NVSHMEM and
 * the collectives of PyTorch, vLLM, TensorRT-LLM and others. Replayed alone, such a kernel
 * waits forever for peers that are not replaying (a two-rank torchrun hung when the range
 * around all_reduce was selected: doc/measurements.md, "Figures from GPU-FACTS.md"), so
 * they are never replayed (tests/gpu/procs.cu: an NCCL-named kernel spinning on the host
 * is not replayed, warned, no hang; "Processes, contexts, collectives"). libc only. */
#ifndef INJECT_COLLECTIVES_H
#define INJECT_COLLECTIVES_H

#include <stdbool.h>
#include <stddef.h>

/* Whether a kernel of this (demangled or mangled) name waits for peers. When it does
 * and why is not NULL, *why names the pattern matched ("NCCL", "all-reduce", ...). */
bool inject_collective_kernel(const char *name, const char **why);

#endif
