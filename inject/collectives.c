/* inject/collectives.c - kernels that wait for peers, by name (collectives.h), asked for
 * launches that passed the filters, before anything is replayed. libc only.
 * Names seen in the libraries' sources: NCCL's ncclKernel_AllReduce_RING_LL_Sum_float and
 * ncclDevKernel_AllGather_RING_LL; NVSHMEM's nvshmemi_* and nvshmemx_* kernels; PyTorch's
 * c10d::symmetric_memory::one_shot_all_reduce_kernel, multimem_all_reduce_kernel,
 * two_shot_all_reduce_kernel, barrier_kernel; vLLM's cross_device_reduce_1stage; TensorRT-
 * LLM's oneShotAllReduceKernel; MSCCL++ and DeepEP kernels.
 * Calls: none (libc only).
 * Called by: names.c (once per name), select.c, graph_measure.c.
 * Lock: none (a constant table). */
#include "inject/collectives.h"

#include <ctype.h>

/* Each pattern is matched where a word starts (at the name's start, after a character
 * that is not a letter, or at a capital: "oneShotAllReduce"), ignoring case, with '_' in
 * the pattern matching an optional '_': "all_reduce" finds all_reduce, AllReduce and
 * allreduce but not small_reduce. */
static const struct {
	const char *pattern;
	const char *why;
} patterns[] = {
	{ "nccl", "NCCL" },
	{ "nvshmem", "NVSHMEM" },
	{ "mscclpp", "MSCCL++" },
	{ "symmetric_memory", "symmetric memory" },
	{ "symm_mem", "symmetric memory" },
	{ "deep_ep", "DeepEP" },
	{ "cross_device_reduce", "cross-device reduce" },
	{ "all_reduce", "all-reduce" },
	{ "all_gather", "all-gather" },
	{ "reduce_scatter", "reduce-scatter" },
	{ "all_to_all", "all-to-all" },
};

static bool matches_at(const char *name, const char *pattern)
{
	const char *n = name;
	for (const char *p = pattern; *p; p++) {
		if (*p == '_') {
			if (*n == '_')
				n++;
			continue;
		}
		if (tolower((unsigned char)*n) != *p)
			return false;
		n++;
	}
	return true;
}

static bool word_starts(const char *name, size_t i)
{
	return i == 0 || !isalpha((unsigned char)name[i - 1]) || isupper((unsigned char)name[i]);
}

bool inject_collective_kernel(const char *name, const char **why)
{
	for (size_t i = 0; name[i]; i++) {
		if (!word_starts(name, i))
			continue;
		for (size_t k = 0; k < sizeof(patterns) / sizeof(patterns[0]); k++) {
			if (matches_at(name + i, patterns[k].pattern)) {
				if (why)
					*why = patterns[k].why;
				return true;
			}
		}
	}
	return false;
}
