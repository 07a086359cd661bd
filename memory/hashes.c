/* memory/hashes.c - comparing and freeing the hashes verify.c takes (memory.h). Pure host
 * code, apart from verify.c's driver calls, so that the tests of inject/'s save policy use
 * the real comparison beside their stand-in hashes.
 * Calls: track.c.
 * Called by: verify.c, inject/.
 * Lock: none (the hashes are their caller's). */
#include <stdlib.h>
#include <string.h>

#include "memory/memory.h"

long mem_hashes_differ(const struct mem_hashes *before, const struct mem_hashes *after)
{
	for (size_t i = 0; i < before->count && i < after->count; i++)
		if (before->sums[i] != after->sums[i])
			return (long)i;
	return -1;
}

long mem_hashes_differ_outside(const struct mem_hashes *before, const struct mem_hashes *after,
			       const struct mem_range *kept, size_t kept_count)
{
	for (size_t i = 0; i < before->count && i < after->count; i++)
		if (before->sums[i] != after->sums[i] &&
		    !mem_ranges_cover(kept, kept_count, &before->segments[i], 1))
			return (long)i;
	return -1;
}

void mem_hashes_finish(struct mem_hashes *h)
{
	free(h->kinds);
	free(h->segments);
	free(h->sums);
	memset(h, 0, sizeof(*h));
}
