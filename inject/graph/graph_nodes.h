/* inject/graph/graph_nodes.h - a graph's nodes in an order they may run in (graph_nodes.c). */
#ifndef INJECT_GRAPH_NODES_H
#define INJECT_GRAPH_NODES_H

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>

struct inject_graph_nodes {
	CUgraphNode *nodes;
	CUgraphNodeType *types;
	size_t count, capacity;
	size_t kernels;
	/* Why flattening stopped, as a code for reports said once (graph_measure.c): the
	 * step and its failure's code (a CUresult, the node's type, an rp_error code). */
	enum inject_graph_nodes_why {
		INJECT_GRAPH_NODES_OK = 0,
		INJECT_GRAPH_NODES_DEEP,          /* child graphs nested too deep */
		INJECT_GRAPH_NODES_UNREADABLE,    /* nodes or edges: code is the CUresult */
		INJECT_GRAPH_NODES_NO_MEMORY,
		INJECT_GRAPH_NODES_EDGE,          /* an edge names a node not listed */
		INJECT_GRAPH_NODES_CYCLE,
		INJECT_GRAPH_NODES_TYPE,          /* cuGraphNodeGetType failed */
		INJECT_GRAPH_NODES_CHILD,         /* a child graph cannot be read */
		INJECT_GRAPH_NODES_UNSUPPORTED,   /* code is the node's type */
	} why_step;
	int why_code;
};

/* Appends graph's nodes in a topological order (graph_order.c: O(nodes + edges), two
 * driver calls for the structure), child graphs in place of their nodes, depth the
 * nesting so far (0). 0, or a code of common/error.h with why it cannot (a node that
 * cannot run alone, nesting too deep, a driver failure) in why. */
int inject_graph_nodes_flatten(CUgraph graph, struct inject_graph_nodes *out, int depth,
			       char *why, size_t why_size);
void inject_graph_nodes_free(struct inject_graph_nodes *l);
/* Whether l has what graph mode cannot relaunch without repeating the application's side
 * effects: host functions, recorded events, copies to or from host memory (which the
 * checkpoint does not restore); what gets the first one's words. */
bool inject_graph_nodes_side_effects(const struct inject_graph_nodes *l, const char **what);

#endif
