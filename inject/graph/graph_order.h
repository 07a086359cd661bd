/* inject/graph/graph_order.h - an order in which a graph's nodes may run, from its edges: no
 * CUDA calls, so that the unit tests run anywhere (graph_nodes.c uses it). */
#ifndef INJECT_GRAPH_ORDER_H
#define INJECT_GRAPH_ORDER_H

#include <stddef.h>
#include <stdint.h>

/* The nodes are 0..n-1; edge i runs from[i] -> to[i] (to depends on from). Writes a
 * topological order (Kahn's algorithm; among ready nodes the lowest index first, so the
 * order is the same on every call) into order. Returns 0, or a code of common/error.h:
 * RP_ERR_FAILED for an edge naming no node or a cycle, RP_ERR_NO_MEMORY. O(n + e). */
int inject_graph_order(size_t n, const size_t *from, const size_t *to, size_t e, size_t *order);

/* Index of key in the n sorted, distinct keys, or -1. */
long inject_graph_index(const uintptr_t *sorted, size_t n, uintptr_t key);

#endif
