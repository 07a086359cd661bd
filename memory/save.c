/* memory/save.c - saved copies of a launch's reach. Device memory first: copying within
 * the device runs at its bandwidth (64 MB in ~45 us on an H200, bench/reach_probe.cu:
 * doc/measurements.md, "Held memory, save and reach"). When the device has no room,
 * pinned host memory, bounded by mem_backup_host_limit() so that saving can never push
 * the host into the OOM killer.
 * Calls: collector/ (the driver).
 * Called by: inject/.
 * Lock: none (the saved copies are their caller's). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/api.h"
#include "memory/memory.h"

size_t mem_backup_host_limit(void)
{
	/* An eighth of physical memory per copy: a verified launch keeps two (its inputs and
	 * the application's result), so together they stay within a quarter, as the
	 * checkpoint's reserve leaves a quarter free. */
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
	if (pages <= 0 || page <= 0)
		return (size_t)1 << 30;
	return (size_t)pages * (size_t)page / 8;
}

static void release(struct mem_backup *b)
{
	if (b->device)
		rp_api.cuMemFree(b->device);
	if (b->host)
		rp_api.cuMemFreeHost(b->host);
	b->device = 0;
	b->device_size = 0;
	b->host = NULL;
	b->host_size = 0;
}

/* Room for bytes: the device buffer grown, else pinned host memory under the bound. 0, or
 * RP_ERR_NO_MEMORY with err. */
static int reserve(struct mem_backup *b, size_t bytes, char *err, size_t err_size)
{
	if (b->device && b->device_size >= bytes) {
		b->on_host = false;
		return 0;
	}
	if (b->host && b->host_size >= bytes) {
		b->on_host = true;
		return 0;
	}
	release(b);
	if (rp_api.cuMemAlloc(&b->device, bytes) == CUDA_SUCCESS) {
		b->device_size = bytes;
		b->on_host = false;
		return 0;
	}
	b->device = 0;
	size_t limit = mem_backup_host_limit();
	if (bytes > limit) {
		snprintf(err, err_size, "%zu MiB to save: no room on the device and more than "
			 "the %zu MiB of host memory rangeprof allows itself", bytes >> 20,
			 limit >> 20);
		return RP_ERR_NO_MEMORY;
	}
	CUresult cr = rp_api.cuMemHostAlloc(&b->host, bytes, 0);
	if (cr != CUDA_SUCCESS) {
		b->host = NULL;
		snprintf(err, err_size, "%zu MiB to save: no room on the device, and pinned host "
			 "memory: %s", bytes >> 20, collector_cu_error(cr));
		return RP_ERR_NO_MEMORY;
	}
	b->host_size = bytes;
	b->on_host = true;
	return 0;
}

static CUdeviceptr slot(const struct mem_backup *b, size_t offset)
{
	return b->on_host ? (CUdeviceptr)((char *)b->host + offset) : b->device + offset;
}

int mem_save_queued(struct mem_backup *b, const struct mem_reach *reach, CUstream stream,
		    char *err, size_t err_size)
{
	int rc = reserve(b, reach->bytes ? reach->bytes : 1, err, err_size);
	if (rc)
		return rc;
	size_t offset = 0;
	for (size_t i = 0; i < reach->count; i++) {
		CUresult cr = rp_api.cuMemcpyAsync(slot(b, offset), reach->ranges[i].base,
						   reach->ranges[i].size, stream);
		if (cr != CUDA_SUCCESS) {
			snprintf(err, err_size, "saving %zu bytes at %#llx: %s", reach->ranges[i].size,
				 (unsigned long long)reach->ranges[i].base, collector_cu_error(cr));
			return RP_ERR_FAILED;
		}
		offset += reach->ranges[i].size;
	}
	return 0;
}

int mem_save(struct mem_backup *b, const struct mem_reach *reach, CUstream stream,
	     char *err, size_t err_size)
{
	int rc = mem_save_queued(b, reach, stream, err, err_size);
	if (rc)
		return rc;
	CUresult cr = rp_api.cuStreamSynchronize(stream);
	if (cr != CUDA_SUCCESS) {
		snprintf(err, err_size, "saving: %s", collector_cu_error(cr));
		return RP_ERR_FAILED;
	}
	return 0;
}

int mem_restore(const struct mem_backup *b, const struct mem_reach *reach, CUstream stream,
		char *err, size_t err_size)
{
	return mem_restore_changed(b, reach, NULL, stream, err, err_size);
}

int mem_restore_changed(const struct mem_backup *b, const struct mem_reach *reach,
			const bool *changed, CUstream stream, char *err, size_t err_size)
{
	size_t offset = 0;
	for (size_t i = 0; i < reach->count; i++) {
		if (changed && !changed[i]) {
			offset += reach->ranges[i].size;
			continue;
		}
		CUresult cr = rp_api.cuMemcpyAsync(reach->ranges[i].base, slot(b, offset),
						   reach->ranges[i].size, stream);
		if (cr != CUDA_SUCCESS) {
			snprintf(err, err_size, "%s", collector_cu_error(cr));
			return RP_ERR_RESTORE;
		}
		offset += reach->ranges[i].size;
	}
	return 0;
}

void mem_backup_trim(struct mem_backup *b, size_t keep)
{
	if (b->device_size > keep || b->host_size > keep)
		release(b);
}
