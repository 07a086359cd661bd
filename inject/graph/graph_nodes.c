/* inject/graph/graph_nodes.c - a graph's nodes in an order they may run in (graph_nodes.h):
 * child graphs flattened in place, a topological order from graph_order.c, the nodes that
 * cannot run alone refused, and the side effects graph mode would repeat.
 * Calls: graph_order.c, collector/ (the driver).
 * Called by: graph_measure.c.
 * Lock: none (no state of its own: the list belongs to the caller, graph_measure.c, which
 * holds the replay lock). */
#include "inject/graph/graph_nodes.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/api.h"
#include "common/error.h"
#include "inject/graph/graph_order.h"

static int append(struct inject_graph_nodes *l, CUgraphNode node, CUgraphNodeType type)
{
	if (l->count == l->capacity) {
		size_t capacity = l->capacity ? 2 * l->capacity : 64;
		CUgraphNode *n = realloc(l->nodes, capacity * sizeof(*n));
		if (n)
			l->nodes = n;
		CUgraphNodeType *t = n ? realloc(l->types, capacity * sizeof(*t)) : NULL;
		if (t)
			l->types = t;
		if (!n || !t)
			return -1;
		l->capacity = capacity;
	}
	l->nodes[l->count] = node;
	l->types[l->count++] = type;
	l->kernels += type == CU_GRAPH_NODE_TYPE_KERNEL;
	return 0;
}

static const char *type_name(CUgraphNodeType t)
{
	switch (t) {
	case CU_GRAPH_NODE_TYPE_MEM_ALLOC: return "memory allocation";
	case CU_GRAPH_NODE_TYPE_MEM_FREE: return "memory free";
	case CU_GRAPH_NODE_TYPE_CONDITIONAL: return "conditional";
	case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP: return "batch memory operation";
	case CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL: return "external semaphore signal";
	case CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT: return "external semaphore wait";
	default: return "unknown";
	}
}

static int by_address(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
	return x < y ? -1 : x > y;
}

/* Appends graph's nodes in a topological order (graph_order.c: O(nodes + edges), two
 * driver calls for the structure), child graphs in place of their nodes. why gets the
 * reason when a node cannot be run alone. */
int inject_graph_nodes_flatten(CUgraph graph, struct inject_graph_nodes *out, int depth, char *why,
			       size_t why_size)
{
	size_t n = 0, e = 0;
	CUresult cr = CUDA_SUCCESS;
	if (depth > 16) {
		out->why_step = INJECT_GRAPH_NODES_DEEP;
		snprintf(why, why_size, "child graphs nested too deep");
		return -1;
	}
	if ((cr = rp_api.cuGraphGetNodes(graph, NULL, &n)) != CUDA_SUCCESS ||
	    (cr = rp_api.cuGraphGetEdges(graph, NULL, NULL, NULL, &e)) != CUDA_SUCCESS) {
		out->why_step = INJECT_GRAPH_NODES_UNREADABLE;
		out->why_code = (int)cr;
		snprintf(why, why_size, "its nodes or edges cannot be read (%s)",
			 collector_cu_error(cr));
		return -1;
	}
	CUgraphNode *nodes = calloc(n + 1, sizeof(*nodes));
	CUgraphNode *from = calloc(e + 1, sizeof(*from)), *to = calloc(e + 1, sizeof(*to));
	/* Asked for, though unused: without it the driver refuses graphs whose edges carry
	 * data (programmatic dependent launch) with CUDA_ERROR_LOSSY_QUERY. */
	CUgraphEdgeData *edge_data = calloc(e + 1, sizeof(*edge_data));
	uintptr_t *sorted = calloc(n + 1, sizeof(*sorted));
	size_t *from_index = calloc(e + 1, sizeof(*from_index));
	size_t *to_index = calloc(e + 1, sizeof(*to_index));
	size_t *order = calloc(n + 1, sizeof(*order));
	int rc = -1;
	if (!nodes || !from || !to || !edge_data || !sorted || !from_index || !to_index || !order) {
		out->why_step = INJECT_GRAPH_NODES_NO_MEMORY;
		snprintf(why, why_size, "out of host memory");
		goto out;
	}
	/* No second edge query for a graph without edges: a single-node graph (graphs.cu
	 * update) was refused here once edge data was asked for, and there is nothing to read. */
	if ((cr = rp_api.cuGraphGetNodes(graph, nodes, &n)) != CUDA_SUCCESS ||
	    (e && (cr = rp_api.cuGraphGetEdges(graph, from, to, edge_data, &e)) != CUDA_SUCCESS)) {
		out->why_step = INJECT_GRAPH_NODES_UNREADABLE;
		out->why_code = (int)cr;
		snprintf(why, why_size, "its nodes or edges cannot be read (%s)",
			 collector_cu_error(cr));
		goto out;
	}
	/* Nodes are numbered by address order; the order is then mapped back. */
	for (size_t i = 0; i < n; i++)
		sorted[i] = (uintptr_t)nodes[i];
	qsort(sorted, n, sizeof(*sorted), by_address);
	for (size_t i = 0; i < e; i++) {
		long f = inject_graph_index(sorted, n, (uintptr_t)from[i]);
		long t = inject_graph_index(sorted, n, (uintptr_t)to[i]);
		if (f < 0 || t < 0) {
			out->why_step = INJECT_GRAPH_NODES_EDGE;
			snprintf(why, why_size, "an edge names a node the graph does not list");
			goto out;
		}
		from_index[i] = (size_t)f;
		to_index[i] = (size_t)t;
	}
	int ordered = inject_graph_order(n, from_index, to_index, e, order);
	if (ordered) {
		out->why_step = ordered == RP_ERR_NO_MEMORY ? INJECT_GRAPH_NODES_NO_MEMORY :
			INJECT_GRAPH_NODES_CYCLE;
		snprintf(why, why_size, ordered == RP_ERR_NO_MEMORY ? "out of host memory" :
			 "the graph's dependencies have a cycle");
		goto out;
	}
	for (size_t k = 0; k < n; k++) {
		CUgraphNode node = (CUgraphNode)sorted[order[k]];
		CUgraphNodeType type;
		if (rp_api.cuGraphNodeGetType(node, &type) != CUDA_SUCCESS) {
			out->why_step = INJECT_GRAPH_NODES_TYPE;
			snprintf(why, why_size, "cuGraphNodeGetType failed");
			goto out;
		}
		switch (type) {
		case CU_GRAPH_NODE_TYPE_GRAPH: {
			CUgraph child;
			if (rp_api.cuGraphChildGraphNodeGetGraph(node, &child) != CUDA_SUCCESS) {
				out->why_step = INJECT_GRAPH_NODES_CHILD;
				goto out;
			}
			if (inject_graph_nodes_flatten(child, out, depth + 1, why, why_size))
				goto out;
			break;
		}
		case CU_GRAPH_NODE_TYPE_KERNEL:
		case CU_GRAPH_NODE_TYPE_MEMCPY:
		case CU_GRAPH_NODE_TYPE_MEMSET:
		case CU_GRAPH_NODE_TYPE_HOST:
		case CU_GRAPH_NODE_TYPE_EMPTY:
		case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
		case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
			if (append(out, node, type)) {
				out->why_step = INJECT_GRAPH_NODES_NO_MEMORY;
				snprintf(why, why_size, "out of host memory");
				goto out;
			}
			break;
		default:
			out->why_step = INJECT_GRAPH_NODES_UNSUPPORTED;
			out->why_code = (int)type;
			snprintf(why, why_size, "it has a %s node, which rangeprof cannot run outside "
				 "the graph", type_name(type));
			goto out;
		}
	}
	rc = 0;
out:
	free(nodes);
	free(from);
	free(to);
	free(edge_data);
	free(sorted);
	free(from_index);
	free(to_index);
	free(order);
	return rc;
}


void inject_graph_nodes_free(struct inject_graph_nodes *l)
{
	free(l->nodes);
	free(l->types);
	*l = (struct inject_graph_nodes){ 0 };
}

/* The words go with the answer, which is what callers decide on. */
bool inject_graph_nodes_side_effects(const struct inject_graph_nodes *l, const char **what)
{
	for (size_t i = 0; i < l->count; i++) {
		switch (l->types[i]) {
		case CU_GRAPH_NODE_TYPE_HOST:
			*what = "a host node (its function would run again at every run)";
			return true;
		case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
			*what = "an event-record node (the application's event would be recorded "
				"again)";
			return true;
		case CU_GRAPH_NODE_TYPE_MEMCPY: {
			CUDA_MEMCPY3D p;
			if (rp_api.cuGraphMemcpyNodeGetParams(l->nodes[i], &p) != CUDA_SUCCESS ||
			    p.srcMemoryType == CU_MEMORYTYPE_HOST || p.dstMemoryType == CU_MEMORYTYPE_HOST ||
			    p.srcMemoryType == CU_MEMORYTYPE_UNIFIED ||
			    p.dstMemoryType == CU_MEMORYTYPE_UNIFIED) {
				*what = "a copy that may touch host memory (not restored between "
					"runs)";
				return true;
			}
			break;
		}
		default:
			break;
		}
	}
	*what = NULL;
	return false;
}
