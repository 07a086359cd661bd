/* memory/track.c - the allocations of the process, as the driver reports them (inject/
 * forwards the allocation callbacks), and the range helpers the module shares. A sorted
 * array under a lock: allocations are rare next to launches (caching allocators keep
 * their memory), and a measured launch takes one snapshot.
 * Calls: none (libc, and the codes of common/error.h).
 * Called by: hashes.c, reach.c, verify.c, inject/.
 * Lock: lock (the allocations). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "memory/memory.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct mem_range *allocations;
static size_t allocation_count, allocation_capacity, allocation_bytes;

static int by_base(const void *a, const void *b)
{
	const struct mem_range *x = a, *y = b;
	return x->base < y->base ? -1 : x->base > y->base;
}

size_t mem_ranges_normalize(struct mem_range *r, size_t count)
{
	if (!count)
		return 0;
	qsort(r, count, sizeof(*r), by_base);
	size_t out = 0;
	for (size_t i = 1; i < count; i++) {
		CUdeviceptr end = r[out].base + r[out].size;
		/* Only overlapping ranges merge: two allocations that merely touch stay apart,
		 * since one copy may not span two allocations (CUDA_ERROR_INVALID_VALUE). */
		if (r[i].base < end) {
			CUdeviceptr i_end = r[i].base + r[i].size;
			if (i_end > end)
				r[out].size = i_end - r[out].base;
		} else {
			r[++out] = r[i];
		}
	}
	return out + 1;
}

long mem_ranges_find(const struct mem_range *r, size_t count, CUdeviceptr p)
{
	size_t lo = 0, hi = count;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (p < r[mid].base)
			hi = mid;
		else if (p >= r[mid].base + r[mid].size)
			lo = mid + 1;
		else
			return (long)mid;
	}
	return -1;
}

size_t mem_ranges_subtract(const struct mem_range *all, size_t n, const struct mem_range *cut,
			   size_t cut_count, struct mem_range *out)
{
	size_t count = 0, j = 0;
	for (size_t i = 0; i < n; i++) {
		CUdeviceptr at = all[i].base, end = all[i].base + all[i].size;
		while (j < cut_count && cut[j].base + cut[j].size <= at)
			j++;
		for (size_t k = j; k < cut_count && cut[k].base < end; k++) {
			if (cut[k].base > at)
				out[count++] = (struct mem_range){ at, cut[k].base - at };
			CUdeviceptr skip = cut[k].base + cut[k].size;
			if (skip > at)
				at = skip;
		}
		if (at < end)
			out[count++] = (struct mem_range){ at, end - at };
	}
	return count;
}

bool mem_ranges_cover(const struct mem_range *outer, size_t outer_count,
		      const struct mem_range *inner, size_t count)
{
	for (size_t i = 0; i < count; i++) {
		long k = mem_ranges_find(outer, outer_count, inner[i].base);
		if (k < 0 || inner[i].base + inner[i].size > outer[k].base + outer[k].size)
			return false;
	}
	return true;
}

int mem_reach_add(struct mem_reach *reach, const struct mem_range *add, size_t count)
{
	if (reach->count + count > reach->capacity) {
		size_t capacity = reach->capacity ? reach->capacity : 16;
		while (capacity < reach->count + count)
			capacity *= 2;
		struct mem_range *grown = realloc(reach->ranges, capacity * sizeof(*grown));
		if (!grown)
			return RP_ERR_NO_MEMORY;
		reach->ranges = grown;
		reach->capacity = capacity;
	}
	memcpy(reach->ranges + reach->count, add, count * sizeof(*add));
	reach->count = mem_ranges_normalize(reach->ranges, reach->count + count);
	reach->bytes = 0;
	for (size_t i = 0; i < reach->count; i++)
		reach->bytes += reach->ranges[i].size;
	return 0;
}

/* Position of the first allocation whose base is >= base. */
static size_t lower_bound(CUdeviceptr base)
{
	size_t lo = 0, hi = allocation_count;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (allocations[mid].base < base)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

void mem_track_add(CUdeviceptr base, size_t size)
{
	if (!base || !size)
		return;
	pthread_mutex_lock(&lock);
	size_t at = lower_bound(base);
	if (at < allocation_count && allocations[at].base == base) {
		/* The driver reused an address whose free we did not see: take the new size. */
		allocation_bytes += size - allocations[at].size;
		allocations[at].size = size;
		goto out;
	}
	if (allocation_count == allocation_capacity) {
		size_t capacity = allocation_capacity ? 2 * allocation_capacity : 256;
		struct mem_range *grown = realloc(allocations, capacity * sizeof(*grown));
		if (!grown)
			goto out; /* untracked: verification then cannot see this allocation */
		allocations = grown;
		allocation_capacity = capacity;
	}
	memmove(&allocations[at + 1], &allocations[at],
		(allocation_count - at) * sizeof(*allocations));
	allocations[at] = (struct mem_range){ base, size };
	allocation_count++;
	allocation_bytes += size;
out:
	pthread_mutex_unlock(&lock);
}

static void remove_at(size_t at)
{
	allocation_bytes -= allocations[at].size;
	memmove(&allocations[at], &allocations[at + 1],
		(allocation_count - at - 1) * sizeof(*allocations));
	allocation_count--;
}

void mem_track_remove(CUdeviceptr base)
{
	pthread_mutex_lock(&lock);
	size_t at = lower_bound(base);
	if (at < allocation_count && allocations[at].base == base)
		remove_at(at);
	pthread_mutex_unlock(&lock);
}

void mem_track_remove_range(CUdeviceptr base, size_t size)
{
	pthread_mutex_lock(&lock);
	size_t at = lower_bound(base);
	if (at > 0 && allocations[at - 1].base + allocations[at - 1].size > base)
		at--;
	while (at < allocation_count && allocations[at].base < base + size)
		remove_at(at);
	pthread_mutex_unlock(&lock);
}

int mem_track_snapshot(struct mem_range **out, size_t *count)
{
	pthread_mutex_lock(&lock);
	size_t n = allocation_count;
	*out = n ? malloc(n * sizeof(**out)) : NULL;
	int rc = n && !*out ? RP_ERR_NO_MEMORY : 0;
	if (*out)
		memcpy(*out, allocations, n * sizeof(**out));
	*count = rc ? 0 : n;
	pthread_mutex_unlock(&lock);
	return rc;
}

size_t mem_track_bytes(void)
{
	pthread_mutex_lock(&lock);
	size_t bytes = allocation_bytes;
	pthread_mutex_unlock(&lock);
	return bytes;
}
