/* memory/reach.c - the memory a launch can reach. Every 8-byte word of the parameter
 * buffer (layout from cuFuncGetParamInfo, kept by layout.c) that the driver knows as a
 * pointer brings in its whole allocation. Allocations of up to REACH_SCAN_MAX bytes are
 * read once more for pointers, so pointer arrays (batched GEMM) and device-side lists are
 * covered (not by mem_reach_collect_direct, which reads no device memory); the module's
 * __device__ variables come from globals.c and are read for pointers the same way. Memory
 * mapped with cuMemMap is taken as the contiguously mapped run of its reservation around
 * the pointer, since a tensor in an expandable segment can span several mappings. What
 * cannot be bounded this way makes the set unknown: mem_reach_collect returns a code with
 * the reason in unknown, and the caller falls back to the full checkpoint.
 * Calls: track.c, layout.c, globals.c, collector/ (the driver).
 * Called by: inject/.
 * Lock: none (the reach is its caller's). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/api.h"
#include "memory/memory.h"

/* Allocations this small are read for pointers (a pointer array of 512 Ki entries). */
#define REACH_SCAN_MAX ((size_t)4 << 20)
/* At most this much is read per launch. */
#define REACH_SCAN_BUDGET ((size_t)32 << 20)
/* A run of cuMemMap mappings larger than this is not taken whole. */
#define REACH_MAPPED_RUN_MAX ((size_t)8 << 30)

/* 1 when added, 0 when already there, RP_ERR_NO_MEMORY (unknown says so). */
static int add_range(struct mem_reach *r, CUdeviceptr base, size_t size)
{
	for (size_t i = 0; i < r->count; i++)
		if (r->ranges[i].base == base && r->ranges[i].size >= size)
			return 0;
	if (r->count == r->capacity) {
		size_t capacity = r->capacity ? 2 * r->capacity : 16;
		struct mem_range *grown = realloc(r->ranges, capacity * sizeof(*grown));
		if (!grown) {
			snprintf(r->unknown, sizeof(r->unknown), "out of host memory");
			return RP_ERR_NO_MEMORY;
		}
		r->ranges = grown;
		r->capacity = capacity;
	}
	r->ranges[r->count++] = (struct mem_range){ base, size };
	return 1;
}

/* The contiguously mapped run around p inside the reservation [start, start + size): 0, or
 * RP_ERR_FAILED with unknown saying why. */
static int mapped_run(struct mem_reach *r, CUdeviceptr p, CUdeviceptr start, size_t size,
		      CUdeviceptr *run_base, size_t *run_size)
{
	CUdeviceptr base, next;
	size_t bytes;
	if (rp_api.cuMemGetAddressRange(&base, &bytes, p) != CUDA_SUCCESS) {
		snprintf(r->unknown, sizeof(r->unknown), "pointer %#llx into cuMemMap memory "
			 "without a mapping", (unsigned long long)p);
		return RP_ERR_FAILED;
	}
	CUdeviceptr lo = base, hi = base + bytes;
	while (lo > start && rp_api.cuMemGetAddressRange(&next, &bytes, lo - 1) == CUDA_SUCCESS &&
	       hi - next <= REACH_MAPPED_RUN_MAX)
		lo = next;
	while (hi < start + size && rp_api.cuMemGetAddressRange(&next, &bytes, hi) == CUDA_SUCCESS &&
	       next + bytes - lo <= REACH_MAPPED_RUN_MAX)
		hi = next + bytes;
	if ((lo > start && rp_api.cuMemGetAddressRange(&next, &bytes, lo - 1) == CUDA_SUCCESS) ||
	    (hi < start + size && rp_api.cuMemGetAddressRange(&next, &bytes, hi) == CUDA_SUCCESS)) {
		snprintf(r->unknown, sizeof(r->unknown), "pointer %#llx into a run of cuMemMap "
			 "mappings larger than %zu GiB (an expandable segment)",
			 (unsigned long long)p, REACH_MAPPED_RUN_MAX >> 30);
		return RP_ERR_FAILED;
	}
	*run_base = lo;
	*run_size = hi - lo;
	return 0;
}

/* Whether [base, base + size) lies inside one of the sorted allocations known. */
static bool inside_known(CUdeviceptr base, size_t size, const struct mem_range *known,
			 size_t known_count)
{
	long i = mem_ranges_find(known, known_count, base);
	return i >= 0 && base + size <= known[i].base + known[i].size;
}

/* Adds the allocation word points into, if it is a pointer: 1 when added, 0 when not a
 * pointer or already there, a code when the set became unknown. A word counts only when it
 * points into memory the application allocated, mapped or registered through the driver
 * (known: every such call is tracked, track.c). Other words are data: stack garbage in an
 * unused field of a parameter struct (PyTorch's TensorInfo) can point into memory of
 * CUPTI's or the driver's own, or, with HMM, into any pageable host page, which the
 * driver then describes with a range whose copy faults (a SIGSEGV in cuMemcpyAsync on
 * the H200: a garbage word in PyTorch index_add_'s TensorInfo pointed into memory the
 * driver described but no application call had allocated; doc/measurements.md, "Held
 * memory, save and reach"). */
static int add_pointer(struct mem_reach *r, uint64_t word, const struct mem_range *known,
		       size_t known_count)
{
	if (word < 4096 || mem_ranges_find(known, known_count, (CUdeviceptr)word) < 0)
		return 0;
	CUpointer_attribute attrs[] = { CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
					CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
					CU_POINTER_ATTRIBUTE_RANGE_SIZE };
	unsigned type = 0;
	CUdeviceptr start = 0;
	size_t size = 0;
	void *data[] = { &type, &start, &size };
	/* Unlike cuPointerGetAttribute, this call succeeds for words that are no pointer and
	 * leaves the type 0. */
	if (rp_api.cuPointerGetAttributes(3, attrs, data, (CUdeviceptr)word) != CUDA_SUCCESS ||
	    !type || !size)
		return 0;
	/* Host memory is taken as the application registered it, never wider. */
	if (type == CU_MEMORYTYPE_HOST && !inside_known(start, size, known, known_count))
		return 0;
	r->pointers++;
	CUdeviceptr base;
	size_t bytes;
	/* cuMemGetAddressRange gives one mapping where the range attribute gives the whole
	 * cuMemMap reservation; for ordinary allocations they agree. */
	if (rp_api.cuMemGetAddressRange(&base, &bytes, (CUdeviceptr)word) == CUDA_SUCCESS &&
	    (base != start || bytes != size)) {
		int rc = mapped_run(r, (CUdeviceptr)word, start, size, &start, &size);
		if (rc)
			return rc;
	}
	return add_range(r, start, size);
}

/* Adds what the 8-byte words of bytes point to: 0, or the code that made the set
 * unknown. Only words inside one of the known (sorted tracked) allocations are asked
 * about: data words far outnumber pointers, and each would otherwise cost a driver query.
 * What one cuPointerGetAttributes call costs is not recorded: bench/reach_probe.cu times
 * it, but its output was not kept (doc/measurements.md, "Held memory, save and reach"). */
static int scan_words(struct mem_reach *r, const unsigned char *bytes, size_t size,
		      const struct mem_range *known, size_t known_count)
{
	CUdeviceptr lowest = known_count ? known[0].base : 0;
	CUdeviceptr highest = known_count ? known[known_count - 1].base +
					    known[known_count - 1].size : 0;
	for (size_t off = 0; off + 8 <= size; off += 8) {
		uint64_t word;
		memcpy(&word, bytes + off, 8);
		if (word < lowest || word >= highest)
			continue;
		int rc = add_pointer(r, word, known, known_count);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* The parameter buffer as the kernel sees it, from kernelParams or extra, in *out (caller
 * frees) and its size: 0, or a code with unknown saying why. Runs on the application's
 * thread inside its launch call: nothing large on the stack. */
static int parameter_buffer(struct mem_reach *r, CUfunction f, void **kernel_params,
			    void **extra, unsigned char **out, size_t *size_out)
{
	const struct mem_param_layout *layout;
	CUresult error;
	int rc = mem_param_layout_of(f, &layout, &error);
	if (rc) {
		if (rc == RP_ERR_NO_MEMORY || error == CUDA_SUCCESS)
			snprintf(r->unknown, sizeof(r->unknown), "%s", rc == RP_ERR_NO_MEMORY ?
				 "out of host memory" : "more parameters than CUDA allows");
		else
			snprintf(r->unknown, sizeof(r->unknown), "the kernel's parameter layout: %s",
				 collector_cu_error(error));
		return rc;
	}
	size_t total = layout->total;
	unsigned char *buffer = calloc(1, total + 8);
	if (!buffer) {
		snprintf(r->unknown, sizeof(r->unknown), "out of host memory");
		return RP_ERR_NO_MEMORY;
	}
	if (kernel_params) {
		for (size_t i = 0; i < layout->count; i++)
			if (kernel_params[i])
				memcpy(buffer + layout->offsets[i], kernel_params[i], layout->sizes[i]);
	} else if (extra) {
		void *packed = NULL;
		size_t packed_size = 0;
		for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END && i < 64; i += 2) {
			if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
				packed = extra[i + 1];
			else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE && extra[i + 1])
				packed_size = *(size_t *)extra[i + 1];
			else
				break;
		}
		if (!packed && total) {
			snprintf(r->unknown, sizeof(r->unknown), "launch 'extra' without a "
				 "parameter buffer");
			free(buffer);
			return RP_ERR_FAILED;
		}
		if (packed)
			memcpy(buffer, packed, packed_size < total ? packed_size : total);
	} else if (total) {
		snprintf(r->unknown, sizeof(r->unknown), "launch without its parameters");
		free(buffer);
		return RP_ERR_FAILED;
	}
	*out = buffer;
	*size_out = total;
	return 0;
}

/* The reach, one level through small allocations when scan (reading device memory). */
static int collect(struct mem_reach *r, CUfunction f, void **kernel_params, void **extra,
		   bool scan)
{
	memset(r, 0, sizeof(*r));
	size_t size = 0;
	unsigned char *params = NULL;
	int rc = parameter_buffer(r, f, kernel_params, extra, &params, &size);
	if (rc)
		return rc;
	struct mem_range *known = NULL;
	size_t known_count = 0;
	if ((rc = mem_track_snapshot(&known, &known_count)) != 0) {
		free(params);
		snprintf(r->unknown, sizeof(r->unknown), "out of host memory");
		return rc;
	}
	known_count = mem_ranges_normalize(known, known_count);
	rc = scan_words(r, params, size, known, known_count);
	free(params);
	if (rc)
		goto out;
	CUmodule module;
	CUlibrary library;
	CUresult cr = rp_api.cuFuncGetModule(&module, f);
	if (cr == CUDA_SUCCESS) {
		rc = mem_globals_of_module(module, &r->ranges, &r->count, &r->capacity);
	} else if ((cr = rp_api.cuKernelGetLibrary(&library, (CUkernel)f)) == CUDA_SUCCESS) {
		rc = mem_globals_of_library(library, &r->ranges, &r->count, &r->capacity);
	} else {
		snprintf(r->unknown, sizeof(r->unknown), "neither cuFuncGetModule nor "
			 "cuKernelGetLibrary knows the kernel: %s", collector_cu_error(cr));
		rc = RP_ERR_FAILED;
		goto out;
	}
	if (rc) {
		snprintf(r->unknown, sizeof(r->unknown), "the module's __device__ variables "
			 "are unknown (a loaded cubin could not be read)");
		goto out;
	}
	/* One level further: pointers stored in the allocations the parameters point into,
	 * and in the module's globals (a __device__ pointer set with cudaMemcpyToSymbol). */
	size_t direct = scan ? r->count : 0;
	unsigned char *copy = NULL;
	for (size_t i = 0; i < direct; i++) {
		size_t bytes = r->ranges[i].size;
		/* Nothing tracked: no word in memory can point into an allocation. */
		if (bytes > REACH_SCAN_MAX || !known_count)
			continue;
		if (r->scanned_bytes + bytes > REACH_SCAN_BUDGET) {
			snprintf(r->unknown, sizeof(r->unknown), "more than %zu MiB of small "
				 "allocations to read for pointers", REACH_SCAN_BUDGET >> 20);
			rc = RP_ERR_FAILED;
			break;
		}
		unsigned char *grown = realloc(copy, bytes);
		if (!grown) {
			snprintf(r->unknown, sizeof(r->unknown), "out of host memory");
			rc = RP_ERR_NO_MEMORY;
			break;
		}
		copy = grown;
		cr = rp_api.cuMemcpy((CUdeviceptr)copy, r->ranges[i].base, bytes);
		if (cr != CUDA_SUCCESS) {
			snprintf(r->unknown, sizeof(r->unknown), "reading %zu bytes at %#llx: %s",
				 bytes, (unsigned long long)r->ranges[i].base, collector_cu_error(cr));
			rc = RP_ERR_FAILED;
			break;
		}
		r->scanned_bytes += bytes;
		if ((rc = scan_words(r, copy, bytes, known, known_count)) != 0)
			break;
	}
	free(copy);
out:
	free(known);
	if (rc)
		return rc;
	r->count = mem_ranges_normalize(r->ranges, r->count);
	for (size_t i = 0; i < r->count; i++)
		r->bytes += r->ranges[i].size;
	return 0;
}

int mem_reach_collect(struct mem_reach *r, CUfunction f, void **kernel_params, void **extra)
{
	return collect(r, f, kernel_params, extra, true);
}

int mem_reach_collect_direct(struct mem_reach *r, CUfunction f, void **kernel_params,
			     void **extra)
{
	return collect(r, f, kernel_params, extra, false);
}

void mem_reach_finish(struct mem_reach *r)
{
	free(r->ranges);
	memset(r, 0, sizeof(*r));
}
