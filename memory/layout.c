/* memory/layout.c - each kernel's parameter layout (offset and size of every parameter),
 * asked of the driver once per function and kept. A range being recorded copies the
 * parameters of every launch it makes (inject/range/range_ops.c), and reach.c reads them
 * for pointers; asking the driver each time took one cuFuncGetParamInfo call per
 * parameter, twice, each passing through CUPTI's callbacks while the whole driver domain
 * is enabled (range mode): several microseconds per launch inside the application's range
 * (bench/NOTES.md, "Session 10"). Entries are never changed once made, and a module's
 * unload drops them all (its handles may come back for other functions) onto a list that
 * keeps them until the process ends, so that a layout another thread is reading stays
 * valid. Any thread.
 * Calls: collector/ (the driver).
 * Called by: reach.c, inject/.
 * Lock: lock (the table of layouts). */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "collector/api.h"
#include "memory/memory.h"

/* The driver accepts at most 32764 bytes of parameters, hence at most this many. */
#define PARAMETERS_MAX 32764
#define BUCKETS 1024

struct layout_entry {
	struct layout_entry *next;
	CUfunction function;
	struct mem_param_layout layout;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct layout_entry *buckets[BUCKETS];
static struct layout_entry *dropped;   /* forgotten entries, kept (see above) */

static size_t bucket_of(CUfunction f)
{
	uintptr_t p = (uintptr_t)f;
	return (size_t)((p >> 4) ^ (p >> 14)) % BUCKETS;
}

/* Offset and size of parameter i of f: 0, 1 past the last parameter, RP_ERR_FAILED with
 * the driver's result in *error. The runtime launches CUkernel handles (CUDA 12 library
 * loading) through cuLaunchKernel, and cuFuncGetParamInfo calls those invalid:
 * *kernel_handle then switches to cuKernelGetParamInfo. */
static int parameter_info(CUfunction f, size_t i, size_t *offset, size_t *size,
			  bool *kernel_handle, CUresult *error)
{
	CUresult cr = *kernel_handle ?
		rp_api.cuKernelGetParamInfo((CUkernel)f, i, offset, size) :
		rp_api.cuFuncGetParamInfo(f, i, offset, size);
	if (cr == CUDA_ERROR_INVALID_HANDLE && i == 0 && !*kernel_handle) {
		*kernel_handle = true;
		return parameter_info(f, i, offset, size, kernel_handle, error);
	}
	if (cr == CUDA_ERROR_INVALID_VALUE)
		return 1;
	*error = cr;
	return cr == CUDA_SUCCESS ? 0 : RP_ERR_FAILED;
}

/* The layout asked of the driver, in a new entry: 0, or a code with *error (the driver's
 * result, CUDA_SUCCESS when it was memory or the count). */
static int ask_driver(CUfunction f, struct layout_entry **out, CUresult *error)
{
	size_t capacity = 16, count = 0;
	struct layout_entry *e = calloc(1, sizeof(*e));
	size_t *offsets = malloc(capacity * sizeof(*offsets));
	size_t *sizes = malloc(capacity * sizeof(*sizes));
	int rc = RP_ERR_NO_MEMORY;
	bool kernel_handle = false;
	*error = CUDA_SUCCESS;
	if (!e || !offsets || !sizes)
		goto fail;
	for (;; count++) {
		if (count == capacity) {
			rc = RP_ERR_FAILED;
			if (count > PARAMETERS_MAX)
				goto fail;
			rc = RP_ERR_NO_MEMORY;
			capacity *= 2;
			size_t *o = realloc(offsets, capacity * sizeof(*o));
			if (!o)
				goto fail;
			offsets = o;
			size_t *z = realloc(sizes, capacity * sizeof(*z));
			if (!z)
				goto fail;
			sizes = z;
		}
		int info = parameter_info(f, count, &offsets[count], &sizes[count],
					  &kernel_handle, error);
		if (info > 0)
			break;
		if (info < 0) {
			rc = RP_ERR_FAILED;
			goto fail;
		}
		if (offsets[count] + sizes[count] > e->layout.total)
			e->layout.total = offsets[count] + sizes[count];
	}
	*error = CUDA_SUCCESS;
	e->function = f;
	e->layout.count = count;
	e->layout.offsets = offsets;
	e->layout.sizes = sizes;
	*out = e;
	return 0;
fail:
	free(offsets);
	free(sizes);
	free(e);
	return rc;
}

int mem_param_layout_of(CUfunction f, const struct mem_param_layout **layout, CUresult *error)
{
	size_t b = bucket_of(f);
	*error = CUDA_SUCCESS;
	pthread_mutex_lock(&lock);
	for (struct layout_entry *e = buckets[b]; e; e = e->next) {
		if (e->function == f) {
			*layout = &e->layout;
			pthread_mutex_unlock(&lock);
			return 0;
		}
	}
	pthread_mutex_unlock(&lock);
	/* Asked outside the lock: the driver's calls pass through rangeprof's callbacks. Two
	 * threads asking at once both insert the same layout; later lookups find either. */
	struct layout_entry *e;
	int rc = ask_driver(f, &e, error);
	if (rc)
		return rc;
	pthread_mutex_lock(&lock);
	e->next = buckets[b];
	buckets[b] = e;
	pthread_mutex_unlock(&lock);
	*layout = &e->layout;
	return 0;
}

void mem_param_layouts_forget(void)
{
	pthread_mutex_lock(&lock);
	for (size_t b = 0; b < BUCKETS; b++) {
		while (buckets[b]) {
			struct layout_entry *e = buckets[b];
			buckets[b] = e->next;
			e->next = dropped;
			dropped = e;
		}
	}
	pthread_mutex_unlock(&lock);
}
