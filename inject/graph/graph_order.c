/* inject/graph/graph_order.c - topological order of a graph's nodes (graph_order.h).
 * Calls: none (libc only).
 * Called by: graph_nodes.c.
 * Lock: none (no state). */
#include "inject/graph/graph_order.h"

#include <stdlib.h>

#include "common/error.h"

int inject_graph_order(size_t n, const size_t *from, const size_t *to, size_t e, size_t *order)
{
	/* Successors in one array (counting sort by source), in-degrees, and a min-heap of
	 * ready nodes so that ties are broken the same way every time. */
	size_t *start = calloc(n + 1, sizeof(*start));
	size_t *succ = calloc(e + 1, sizeof(*succ));
	size_t *pending = calloc(n + 1, sizeof(*pending));
	size_t *heap = calloc(n + 1, sizeof(*heap));
	int rc = RP_ERR_NO_MEMORY;
	if (!start || !succ || !pending || !heap)
		goto out;
	rc = RP_ERR_FAILED;
	for (size_t i = 0; i < e; i++) {
		if (from[i] >= n || to[i] >= n)
			goto out;
		start[from[i] + 1]++;
		pending[to[i]]++;
	}
	for (size_t v = 0; v < n; v++)
		start[v + 1] += start[v];
	size_t *fill = calloc(n + 1, sizeof(*fill));
	if (!fill) {
		rc = RP_ERR_NO_MEMORY;
		goto out;
	}
	for (size_t i = 0; i < e; i++)
		succ[start[from[i]] + fill[from[i]]++] = to[i];
	free(fill);
	size_t heap_n = 0, placed = 0;
	for (size_t v = 0; v < n; v++) {
		if (pending[v])
			continue;
		/* Pushed in increasing order: already a heap. */
		heap[heap_n++] = v;
	}
	while (heap_n) {
		size_t v = heap[0];
		heap[0] = heap[--heap_n];
		for (size_t i = 0;;) { /* sift down */
			size_t l = 2 * i + 1, r = l + 1, m = i;
			if (l < heap_n && heap[l] < heap[m])
				m = l;
			if (r < heap_n && heap[r] < heap[m])
				m = r;
			if (m == i)
				break;
			size_t t = heap[i];
			heap[i] = heap[m];
			heap[m] = t;
			i = m;
		}
		order[placed++] = v;
		for (size_t k = start[v]; k < start[v + 1]; k++) {
			size_t w = succ[k];
			if (--pending[w])
				continue;
			size_t i = heap_n++; /* sift up */
			heap[i] = w;
			while (i && heap[(i - 1) / 2] > heap[i]) {
				size_t p = (i - 1) / 2, t = heap[p];
				heap[p] = heap[i];
				heap[i] = t;
				i = p;
			}
		}
	}
	rc = placed == n ? 0 : RP_ERR_FAILED;
out:
	free(start);
	free(succ);
	free(pending);
	free(heap);
	return rc;
}

long inject_graph_index(const uintptr_t *sorted, size_t n, uintptr_t key)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (sorted[mid] < key)
			lo = mid + 1;
		else if (sorted[mid] > key)
			hi = mid;
		else
			return (long)mid;
	}
	return -1;
}
