/* inject/collectives.h - kernels that wait for other GPUs or processes: NCCL, NVSHMEM and
 * the collectives of PyTorch, vLLM, TensorRT-LLM and others. Replayed alone, such a kernel
 * waits forever for peers that are not replaying (GPU-FACTS.md: a two-rank torchrun hung
 * when the all-reduce range was selected), so they are never replayed. libc only. */
#ifndef INJECT_COLLECTIVES_H
#define INJECT_COLLECTIVES_H

#include <stdbool.h>
#include <stddef.h>

/* Whether a kernel of this (demangled or mangled) name waits for peers. When it does
 * and why is not NULL, *why names the pattern matched ("NCCL", "all-reduce", ...). */
bool inject_is_collective(const char *name, const char **why);

#endif
