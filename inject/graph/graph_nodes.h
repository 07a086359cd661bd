/* inject/graph/graph_nodes.h - a graph's nodes in an order they may run in (graph_nodes.c). */
#ifndef INJECT_GRAPH_NODES_H
#define INJECT_GRAPH_NODES_H

#include <cuda.h>
#include <stddef.h>

struct inject_graph_nodes {
	CUgraphNode *nodes;
	CUgraphNodeType *types;
	size_t count, capacity;
	size_t kernels;
};

/* Appends graph's nodes in a topological order (graph_order.c: O(nodes + edges), two
 * driver calls for the structure), child graphs in place of their nodes, depth the
 * nesting so far (0). 0, or a code of common/error.h with why it cannot (a node that
 * cannot run alone, nesting too deep, a driver failure) in why. */
int inject_graph_nodes_flatten(CUgraph graph, struct inject_graph_nodes *out, int depth,
			       char *why, size_t why_size);
void inject_graph_nodes_free(struct inject_graph_nodes *l);
/* What graph mode cannot relaunch without repeating the application's side effects: host
 * functions, recorded events, copies to or from host memory (which the checkpoint does not
 * restore). NULL when there is none. */
const char *inject_graph_nodes_side_effects(const struct inject_graph_nodes *l);

#endif
