/* inject/graphs.c - kernels inside CUDA graphs (graphs.h). The executable graphs are kept
 * in a list under a lock: graphs are instantiated rarely, launched often, and one
 * measurement runs at a time (replay lock). Calls replay.c, output.c, names.c and the
 * driver through collector/api. */
#include "inject/graphs.h"

#include <stdint.h>

#include <cupti.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/api.h"
#include "collector/cost.h"
#include "collector/records.h"
#include "inject/inject.h"
#include "common/log.h"
#include "inject/collectives.h"
#include "inject/graph_order.h"
#include "inject/output.h"

static enum rp_graph_profiling mode = RP_GRAPH_NODE;
static struct inject_graph_filters filters;

void inject_graphs_configure(enum rp_graph_profiling m, const struct inject_graph_filters *f)
{
	mode = m;
	filters = *f;
}

/* ------------------------------------------------------------------------------------ */
/* Executable graphs and the copies of their graphs                                      */
/* ------------------------------------------------------------------------------------ */

struct graph_exec {
	struct graph_exec *next;
	CUgraphExec exec;
	CUgraph copy;                /* the graph as instantiated, later updates applied */
	uint64_t id;
	uint64_t launches;
	char stale[160];             /* non-empty: an update the copy cannot follow */
	CUgraphNode *disabled;       /* copy's nodes disabled by cuGraphNodeSetEnabled */
	size_t disabled_count;
	/* What its launches can come to, known after the first launch walked the graph and
	 * forgotten at every update: a graph none of whose kernel nodes -k selects, or one
	 * that is refused, costs its later launches one lookup (inject_graphs_may_measure),
	 * not a walk of its nodes under the replay lock. */
	enum plan { PLAN_UNKNOWN, PLAN_NOTHING, PLAN_MEASURE } plan;
	unsigned plan_generation;    /* counts the updates that forget it */
};

/* An update may change what the launches can come to. Called with the lock held. */
static void forget_plan(struct graph_exec *g)
{
	g->plan = PLAN_UNKNOWN;
	g->plan_generation++;
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct graph_exec *execs;
static uint64_t next_id;
static atomic_ulong known;

static struct graph_exec *find(CUgraphExec exec)
{
	for (struct graph_exec *g = execs; g; g = g->next)
		if (g->exec == exec)
			return g;
	return NULL;
}

static void forget(CUgraphExec exec)
{
	for (struct graph_exec **p = &execs; *p; p = &(*p)->next) {
		if ((*p)->exec == exec) {
			struct graph_exec *g = *p;
			*p = g->next;
			if (g->copy)
				rp_api.cuGraphDestroy(g->copy);
			free(g->disabled);
			free(g);
			atomic_fetch_sub(&known, 1);
			return;
		}
	}
}

static void instantiated(CUgraphExec exec, CUgraph graph)
{
	CUgraph copy = NULL;
	CUresult cr = rp_api.cuGraphClone(&copy, graph);
	pthread_mutex_lock(&lock);
	forget(exec); /* a handle the driver gives again */
	struct graph_exec *g = calloc(1, sizeof(*g));
	if (g) {
		g->exec = exec;
		g->copy = cr == CUDA_SUCCESS ? copy : NULL;
		g->id = next_id++;
		if (cr != CUDA_SUCCESS)
			snprintf(g->stale, sizeof(g->stale), "cuGraphClone at instantiation: %s",
				 collector_cu_error(cr));
		g->next = execs;
		execs = g;
		atomic_fetch_add(&known, 1);
	} else if (cr == CUDA_SUCCESS) {
		rp_api.cuGraphDestroy(copy);
	}
	pthread_mutex_unlock(&lock);
}

/* The copy's node for a node of the application's graph, NULL when there is none. */
static CUgraphNode copy_node(const struct graph_exec *g, CUgraphNode node)
{
	CUgraphNode found = NULL;
	if (!g->copy || rp_api.cuGraphNodeFindInClone(&found, node, g->copy) != CUDA_SUCCESS)
		return NULL;
	return found;
}

static void mark_stale(struct graph_exec *g, const char *call, CUresult cr)
{
	forget_plan(g);
	if (!g->stale[0])
		snprintf(g->stale, sizeof(g->stale), "%s could not be followed (%s)", call,
			 collector_cu_error(cr));
}

static void set_enabled(struct graph_exec *g, CUgraphNode node, bool enabled)
{
	forget_plan(g);
	for (size_t i = 0; i < g->disabled_count; i++) {
		if (g->disabled[i] == node) {
			if (enabled)
				g->disabled[i] = g->disabled[--g->disabled_count];
			return;
		}
	}
	if (enabled)
		return;
	CUgraphNode *grown = realloc(g->disabled, (g->disabled_count + 1) * sizeof(*grown));
	if (!grown) {
		snprintf(g->stale, sizeof(g->stale), "out of host memory");
		return;
	}
	g->disabled = grown;
	g->disabled[g->disabled_count++] = node;
}

static bool disabled(const struct graph_exec *g, CUgraphNode node)
{
	for (size_t i = 0; i < g->disabled_count; i++)
		if (g->disabled[i] == node)
			return true;
	return false;
}

/* Applies a successful exec-update call to the copy. */
static void updated(int cbid, const void *params)
{
	/* Every one of these calls starts with the executable graph and (but for
	 * cuGraphExecUpdate) the node of the application's graph. */
	const struct { CUgraphExec exec; CUgraphNode node; } *head = params;
	pthread_mutex_lock(&lock);
	struct graph_exec *g = find(head->exec);
	if (!g || g->stale[0]) {
		pthread_mutex_unlock(&lock);
		return;
	}
	forget_plan(g); /* a node's kernel may have changed */
	if (cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate_v2 ||
	    cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate) {
		/* Same topology, new parameters: the new graph is the copy from now on. */
		CUgraph copy = NULL;
		CUresult cr = rp_api.cuGraphClone(&copy, ((const cuGraphExecUpdate_v2_params *)params)->hGraph);
		if (cr == CUDA_SUCCESS) {
			rp_api.cuGraphDestroy(g->copy);
			g->copy = copy;
			g->disabled_count = 0;
		} else {
			mark_stale(g, "cuGraphExecUpdate", cr);
		}
		pthread_mutex_unlock(&lock);
		return;
	}
	CUgraphNode node = copy_node(g, head->node);
	CUresult cr = node ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
	const char *call = "a graph update";
	switch (cbid) {
	case CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams_v2:
		call = "cuGraphExecKernelNodeSetParams";
		if (node)
			cr = rp_api.cuGraphKernelNodeSetParams(
				node, ((const cuGraphExecKernelNodeSetParams_v2_params *)params)->nodeParams);
		break;
	case CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams: {
		/* The first version's struct ends before kern and ctx: copied into the
		 * current one, which the setter reads whole. */
		call = "cuGraphExecKernelNodeSetParams";
		const CUDA_KERNEL_NODE_PARAMS_v1 *v1 =
			((const cuGraphExecKernelNodeSetParams_params *)params)->nodeParams;
		CUDA_KERNEL_NODE_PARAMS v2 = { v1->func, v1->gridDimX, v1->gridDimY, v1->gridDimZ,
					       v1->blockDimX, v1->blockDimY, v1->blockDimZ,
					       v1->sharedMemBytes, v1->kernelParams, v1->extra,
					       NULL, NULL };
		if (node)
			cr = rp_api.cuGraphKernelNodeSetParams(node, &v2);
		break;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuGraphExecMemsetNodeSetParams:
		call = "cuGraphExecMemsetNodeSetParams";
		if (node)
			cr = rp_api.cuGraphMemsetNodeSetParams(
				node, ((const cuGraphExecMemsetNodeSetParams_params *)params)->memsetParams);
		break;
	case CUPTI_DRIVER_TRACE_CBID_cuGraphExecMemcpyNodeSetParams:
		call = "cuGraphExecMemcpyNodeSetParams";
		if (node)
			cr = rp_api.cuGraphMemcpyNodeSetParams(
				node, ((const cuGraphExecMemcpyNodeSetParams_params *)params)->copyParams);
		break;
	case CUPTI_DRIVER_TRACE_CBID_cuGraphExecHostNodeSetParams:
		call = "cuGraphExecHostNodeSetParams";
		if (node)
			cr = rp_api.cuGraphHostNodeSetParams(
				node, ((const cuGraphExecHostNodeSetParams_params *)params)->nodeParams);
		break;
	case CUPTI_DRIVER_TRACE_CBID_cuGraphExecNodeSetParams:
		call = "cuGraphExecNodeSetParams";
		if (node)
			cr = rp_api.cuGraphNodeSetParams(
				node, ((const cuGraphExecNodeSetParams_params *)params)->nodeParams);
		break;
	case CUPTI_DRIVER_TRACE_CBID_cuGraphExecChildGraphNodeSetParams:
		/* A graph node's child graph cannot be replaced in a graph, only in an exec. */
		call = "cuGraphExecChildGraphNodeSetParams";
		cr = CUDA_ERROR_NOT_SUPPORTED;
		break;
	case CUPTI_DRIVER_TRACE_CBID_cuGraphNodeSetEnabled:
		call = "cuGraphNodeSetEnabled";
		if (node)
			set_enabled(g, node, ((const cuGraphNodeSetEnabled_params *)params)->isEnabled);
		break;
	}
	if (cr != CUDA_SUCCESS)
		mark_stale(g, call, cr);
	pthread_mutex_unlock(&lock);
}

bool inject_graphs_on_call(int cbid, const void *params, bool succeeded)
{
	switch (cbid) {
	case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate:
	case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags:
	case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams:
	case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz: {
		/* All of them start (CUgraphExec *phGraphExec, CUgraph hGraph, ...). */
		const struct { CUgraphExec *exec; CUgraph graph; } *p = params;
		if (succeeded && mode != RP_GRAPH_NONE && inject_measuring() && p->exec && *p->exec)
			instantiated(*p->exec, p->graph);
		return true;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuGraphExecDestroy:
		pthread_mutex_lock(&lock);
		forget(((const cuGraphExecDestroy_params *)params)->hGraphExec);
		pthread_mutex_unlock(&lock);
		return true;
	case CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate:
	case CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams:
	case CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuGraphExecMemsetNodeSetParams:
	case CUPTI_DRIVER_TRACE_CBID_cuGraphExecMemcpyNodeSetParams:
	case CUPTI_DRIVER_TRACE_CBID_cuGraphExecHostNodeSetParams:
	case CUPTI_DRIVER_TRACE_CBID_cuGraphExecNodeSetParams:
	case CUPTI_DRIVER_TRACE_CBID_cuGraphExecChildGraphNodeSetParams:
	case CUPTI_DRIVER_TRACE_CBID_cuGraphNodeSetEnabled:
		if (succeeded)
			updated(cbid, params);
		return true;
	default:
		return false;
	}
}

unsigned long inject_graphs_known(void)
{
	return atomic_load(&known);
}

/* ------------------------------------------------------------------------------------ */
/* A graph's nodes in an order they may run in                                           */
/* ------------------------------------------------------------------------------------ */

struct node_list {
	CUgraphNode *nodes;
	CUgraphNodeType *types;
	size_t count, capacity;
	size_t kernels;
};

static int append(struct node_list *l, CUgraphNode node, CUgraphNodeType type)
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
static int flatten(CUgraph graph, struct node_list *out, int depth, char *why, size_t why_size)
{
	size_t n = 0, e = 0;
	CUresult cr = CUDA_SUCCESS;
	if (depth > 16) {
		snprintf(why, why_size, "child graphs nested too deep");
		return -1;
	}
	if ((cr = rp_api.cuGraphGetNodes(graph, NULL, &n)) != CUDA_SUCCESS ||
	    (cr = rp_api.cuGraphGetEdges(graph, NULL, NULL, NULL, &e)) != CUDA_SUCCESS) {
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
		snprintf(why, why_size, "out of host memory");
		goto out;
	}
	/* No second edge query for a graph without edges: a single-node graph (graphs.cu
	 * update) was refused here once edge data was asked for, and there is nothing to read. */
	if ((cr = rp_api.cuGraphGetNodes(graph, nodes, &n)) != CUDA_SUCCESS ||
	    (e && (cr = rp_api.cuGraphGetEdges(graph, from, to, edge_data, &e)) != CUDA_SUCCESS)) {
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
			snprintf(why, why_size, "an edge names a node the graph does not list");
			goto out;
		}
		from_index[i] = (size_t)f;
		to_index[i] = (size_t)t;
	}
	int ordered = inject_graph_order(n, from_index, to_index, e, order);
	if (ordered) {
		snprintf(why, why_size, ordered == -2 ? "out of host memory" :
			 "the graph's dependencies have a cycle");
		goto out;
	}
	for (size_t k = 0; k < n; k++) {
		CUgraphNode node = (CUgraphNode)sorted[order[k]];
		CUgraphNodeType type;
		if (rp_api.cuGraphNodeGetType(node, &type) != CUDA_SUCCESS) {
			snprintf(why, why_size, "cuGraphNodeGetType failed");
			goto out;
		}
		switch (type) {
		case CU_GRAPH_NODE_TYPE_GRAPH: {
			CUgraph child;
			if (rp_api.cuGraphChildGraphNodeGetGraph(node, &child) != CUDA_SUCCESS ||
			    flatten(child, out, depth + 1, why, why_size))
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
				snprintf(why, why_size, "out of host memory");
				goto out;
			}
			break;
		default:
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

/* A kernel node that waits for other GPUs or processes (an NCCL collective captured into
 * the graph, a cooperative kernel): run alone, outside the graph or relaunched with the
 * graph, it would wait for ever or meet the wrong peer. why gets what it is. */
static bool waits_for_peers(CUgraphNode node, const char *mangled, char *why, size_t why_size)
{
	const char *what = NULL;
	if (inject_is_collective(mangled, &what) ||
	    inject_is_collective(inject_demangle(mangled), &what)) {
		snprintf(why, why_size, "its kernel node %s is a %s kernel, which waits for other "
			 "GPUs or processes", inject_demangle(mangled), what);
		return true;
	}
	CUkernelNodeAttrValue value;
	memset(&value, 0, sizeof(value));
	if (rp_api.cuGraphKernelNodeGetAttribute(node, CU_LAUNCH_ATTRIBUTE_COOPERATIVE, &value) ==
		    CUDA_SUCCESS && value.cooperative) {
		snprintf(why, why_size, "its kernel node %s is cooperative (grid-wide "
			 "synchronisation)", inject_demangle(mangled));
		return true;
	}
	return false;
}

/* What graph mode cannot relaunch without repeating the application's side effects: host
 * functions, recorded events, copies to or from host memory (which the checkpoint does not
 * restore). NULL when there is none. */
static const char *repeats_side_effects(const struct node_list *l)
{
	for (size_t i = 0; i < l->count; i++) {
		switch (l->types[i]) {
		case CU_GRAPH_NODE_TYPE_HOST:
			return "a host node (its function would run again at every run)";
		case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
			return "an event-record node (the application's event would be recorded again)";
		case CU_GRAPH_NODE_TYPE_MEMCPY: {
			CUDA_MEMCPY3D p;
			if (rp_api.cuGraphMemcpyNodeGetParams(l->nodes[i], &p) != CUDA_SUCCESS ||
			    p.srcMemoryType == CU_MEMORYTYPE_HOST || p.dstMemoryType == CU_MEMORYTYPE_HOST ||
			    p.srcMemoryType == CU_MEMORYTYPE_UNIFIED ||
			    p.dstMemoryType == CU_MEMORYTYPE_UNIFIED)
				return "a copy that may touch host memory (not restored between runs)";
			break;
		}
		default:
			break;
		}
	}
	return NULL;
}

/* ------------------------------------------------------------------------------------ */
/* Measuring a graph launch                                                              */
/* ------------------------------------------------------------------------------------ */

/* A kernel node as a launch: the node's function, or its CUkernel, which cuLaunchKernel
 * also takes. */
static bool kernel_launch(CUgraphNode node, CUcontext ctx, uint32_t context_id, CUstream stream,
			  CUDA_KERNEL_NODE_PARAMS *p, struct inject_launch *l)
{
	if (rp_api.cuGraphKernelNodeGetParams(node, p) != CUDA_SUCCESS)
		return false;
	*l = (struct inject_launch){ .kind = INJECT_LAUNCH_KERNEL, .ctx = ctx,
				     .context_id = context_id,
				     .function = p->func ? p->func : (CUfunction)p->kern,
				     .stream = stream, .grid = { p->gridDimX, p->gridDimY, p->gridDimZ },
				     .block = { p->blockDimX, p->blockDimY, p->blockDimZ },
				     .shared_mem_bytes = p->sharedMemBytes,
				     .kernel_params = p->kernelParams, .extra = p->extra };
	const char *name = NULL;
	if (p->func)
		rp_api.cuFuncGetName(&name, p->func);
	else
		rp_api.cuKernelGetName(&name, p->kern);
	l->mangled = name ? name : "";
	return true;
}

/* Runs a node that is not measured, as the graph would. */
static CUresult run_node(CUgraphNode node, CUgraphNodeType type, const struct inject_launch *kernel,
			 CUstream stream)
{
	switch (type) {
	case CU_GRAPH_NODE_TYPE_KERNEL:
		return inject_relaunch(kernel);
	case CU_GRAPH_NODE_TYPE_MEMSET: {
		CUDA_MEMSET_NODE_PARAMS p;
		CUresult cr = rp_api.cuGraphMemsetNodeGetParams(node, &p);
		if (cr != CUDA_SUCCESS)
			return cr;
		size_t height = p.height ? p.height : 1, pitch = height > 1 ? p.pitch :
			p.width * p.elementSize;
		switch (p.elementSize) {
		case 1: return rp_api.cuMemsetD2D8Async(p.dst, pitch, (unsigned char)p.value,
							 p.width, height, stream);
		case 2: return rp_api.cuMemsetD2D16Async(p.dst, pitch, (unsigned short)p.value,
							  p.width, height, stream);
		case 4: return rp_api.cuMemsetD2D32Async(p.dst, pitch, p.value, p.width, height,
							  stream);
		default: return CUDA_ERROR_INVALID_VALUE;
		}
	}
	case CU_GRAPH_NODE_TYPE_MEMCPY: {
		CUDA_MEMCPY3D p;
		CUresult cr = rp_api.cuGraphMemcpyNodeGetParams(node, &p);
		return cr == CUDA_SUCCESS ? rp_api.cuMemcpy3DAsync(&p, stream) : cr;
	}
	default:
		/* Empty and event nodes only order the graph; a host node runs in the
		 * application's own launch only (its effects must happen once). */
		return CUDA_SUCCESS;
	}
}

/* Measures the selected kernel nodes of one graph launch; returns what later launches of
 * the graph can come to: PLAN_NOTHING when no kernel node passes -k or the graph is
 * refused (a node unreadable, a collective), whatever -s and -c said this time. */
static enum plan measure_nodes(struct graph_exec *g, const struct node_list *list,
			       CUstream stream, CUcontext ctx, uint32_t context_id, uint64_t index,
			       uint64_t launch)
{
	/* Which kernel nodes are measured, before anything is done: a graph launch with none
	 * needs no checkpoint. */
	enum plan plan = PLAN_NOTHING;
	bool *selected = calloc(list->count + 1, sizeof(*selected));
	const char **names = calloc(list->count + 1, sizeof(*names));
	CUDA_KERNEL_NODE_PARAMS *params = calloc(list->count + 1, sizeof(*params));
	struct inject_launch *launches = calloc(list->count + 1, sizeof(*launches));
	size_t chosen = 0;
	bool host_nodes = false;
	if (!selected || !names || !params || !launches)
		goto out;
	for (size_t i = 0; i < list->count; i++) {
		host_nodes |= list->types[i] == CU_GRAPH_NODE_TYPE_HOST;
		if (list->types[i] != CU_GRAPH_NODE_TYPE_KERNEL)
			continue;
		if (!kernel_launch(list->nodes[i], ctx, context_id, stream, &params[i], &launches[i])) {
			inject_report("graph-node", INJECT_CONCERNS(.call = "cuGraphKernelNodeGetParams"),
				      true, "graph %llu: a kernel node's parameters cannot be read; "
				      "the graph launch is not measured", (unsigned long long)g->id);
			goto out;
		}
		char why[320];
		if (waits_for_peers(list->nodes[i], launches[i].mangled, why, sizeof(why))) {
			inject_report("graph-collective", INJECT_CONCERNS(.call = "cuGraphLaunch",
									  .option = "--nvtx-exclude",
									  .detail = why), false,
				      "graph %llu: %s; its launches run unmeasured", (unsigned long long)g->id,
				      why);
			chosen = 0;
			goto out;
		}
	}
	for (size_t i = 0; i < list->count; i++) {
		if (list->types[i] != CU_GRAPH_NODE_TYPE_KERNEL || disabled(g, list->nodes[i]))
			continue;
		const char *demangled = NULL;
		if (!filters.kernel_selected(launches[i].function, launches[i].mangled, &demangled))
			continue;
		plan = PLAN_MEASURE;
		if (filters.take_launch()) {
			selected[i] = true;
			names[i] = demangled ? demangled : inject_demangle(launches[i].mangled);
			chosen++;
		}
	}
	if (!chosen)
		goto out;
	if (host_nodes)
		inject_report("graph-host-node", INJECT_CONCERNS(.call = "cuGraphAddHostNode"), false,
			      "graph %llu has host nodes: they run in the application's own graph "
			      "launch only, so a kernel node after one is measured on memory as it "
			      "was before the host function", (unsigned long long)g->id);
	/* The memory as the graph finds it, put back for the application's own launch. Only
	 * the application's: rangeprof's saved copies may be freed or grown while the nodes
	 * are measured, and must not be in the checkpoint. */
	inject_replay_drop_backups(ctx);
	double started = collector_cost_now();
	CUresult cr = rp_api.cuCtxSynchronize();
	RP_CUpti_Checkpoint before;
	CUptiResult r = cr == CUDA_SUCCESS ? inject_checkpoint_save(ctx, &before) :
		CUPTI_ERROR_UNKNOWN;
	if (r != CUPTI_SUCCESS) {
		inject_report("graph-checkpoint", INJECT_CONCERNS(.call = "cuptiCheckpointSave",
								  .detail = collector_cupti_error(r)),
			      true, "graph %llu launch %llu: saving the memory the graph starts "
			      "from: %s%s; not measured", (unsigned long long)g->id,
			      (unsigned long long)launch, collector_cupti_error(r),
			      cr != CUDA_SUCCESS ? " (the application's work before it failed)" : "");
		goto out;
	}
	double saved = collector_cost_now();
	struct collector_graph where = { g->id, launch, 0, list->count };
	for (size_t i = 0; i < list->count; i++) {
		if (disabled(g, list->nodes[i]))
			continue;
		CUresult run = CUDA_SUCCESS;
		if (selected[i]) {
			where.node = (long)i;
			launches[i].graph = &where;
			launches[i].index = index;
			struct measurement *m = inject_replay_enter(&launches[i], names[i]);
			if (m) {
				run = inject_relaunch(&launches[i]);
				inject_replay_exit(m, run == CUDA_SUCCESS);
			} else {
				run = inject_relaunch(&launches[i]);
			}
		} else {
			run = run_node(list->nodes[i], list->types[i], &launches[i], stream);
		}
		if (run != CUDA_SUCCESS) {
			inject_report("graph-node-run", INJECT_CONCERNS(.detail = collector_cu_error(run)),
				      true, "graph %llu: running node %zu outside the graph: %s; the "
				      "nodes after it are not measured", (unsigned long long)g->id, i,
				      collector_cu_error(run));
			break;
		}
	}
	rp_api.cuCtxSynchronize();
	inject_replay_drop_backups(ctx);
	double restoring = collector_cost_now();
	r = inject_checkpoint_put_back(&before);
	double now = collector_cost_now();
	rp_log_progress("graph %llu launch %llu: %zu of %zu kernel nodes measured (%.1f ms, of "
			"which %.1f ms saving and putting back the memory the graph starts from)",
			(unsigned long long)g->id, (unsigned long long)launch, chosen,
			list->kernels, now - started, (saved - started) + (now - restoring));
	if (r != CUPTI_SUCCESS)
		inject_report("graph-restore", INJECT_CONCERNS(.call = "cuptiCheckpointRestore",
							       .detail = collector_cupti_error(r)),
			      true, "graph %llu: putting back the memory the graph starts from: "
			      "%s; the application's results may differ", (unsigned long long)g->id,
			      collector_cupti_error(r));
out:
	free(selected);
	free(names);
	free(params);
	free(launches);
	return plan;
}

void inject_graphs_launch(CUgraphExec exec, CUstream stream, CUcontext ctx, uint32_t context_id,
			  uint64_t index)
{
	if (mode == RP_GRAPH_NONE)
		return;
	pthread_mutex_lock(&lock);
	struct graph_exec *g = find(exec);
	uint64_t launch = g ? g->launches++ : 0;
	unsigned generation = g ? g->plan_generation : 0;
	char stale[sizeof(g->stale)] = "";
	if (g)
		snprintf(stale, sizeof(stale), "%s", g->stale);
	pthread_mutex_unlock(&lock);
	enum plan plan = PLAN_NOTHING;
	/* The list entry stays valid: it goes only at cuGraphExecDestroy, which may not run
	 * while the same graph is being launched. */
	if (!g) {
		inject_report("graph-unknown", INJECT_CONCERNS(.call = "cuGraphLaunch"), false,
			      "cuGraphLaunch of a graph whose instantiation rangeprof did not see; "
			      "its launches are not measured");
		return;
	}
	if (stale[0]) {
		inject_report("graph-stale", INJECT_CONCERNS(.call = "cuGraphLaunch", .detail = stale),
			      false, "graph %llu: %s; its launches are not measured",
			      (unsigned long long)g->id, stale);
		goto out;
	}
	struct node_list list = { 0 };
	char why[256] = "";
	if (flatten(g->copy, &list, 0, why, sizeof(why))) {
		inject_report("graph-nodes", INJECT_CONCERNS(.call = "cuGraphLaunch", .detail = why),
			      false, "graph %llu: %s; its launches are not measured",
			      (unsigned long long)g->id, why);
		goto out;
	}
	if (mode == RP_GRAPH_NODE) {
		plan = measure_nodes(g, &list, stream, ctx, context_id, index, launch);
		goto out;
	}
	/* Graph mode: one workload, selected when -k takes one of its kernels; never one
	 * whose relaunch would wait for peers or repeat the application's side effects. */
	const char *effects = repeats_side_effects(&list);
	if (effects) {
		inject_report("graph-effects", INJECT_CONCERNS(.call = "cuGraphLaunch",
							       .option = "--graph-profiling"), false,
			      "graph %llu has %s: --graph-profiling graph does not measure it "
			      "(node mode does)", (unsigned long long)g->id, effects);
		goto out;
	}
	bool any = false;
	for (size_t i = 0; i < list.count; i++) {
		CUDA_KERNEL_NODE_PARAMS p;
		struct inject_launch l;
		const char *demangled = NULL;
		char peers[320];
		if (list.types[i] != CU_GRAPH_NODE_TYPE_KERNEL ||
		    !kernel_launch(list.nodes[i], ctx, context_id, stream, &p, &l))
			continue;
		if (waits_for_peers(list.nodes[i], l.mangled, peers, sizeof(peers))) {
			inject_report("graph-collective", INJECT_CONCERNS(.call = "cuGraphLaunch",
									  .option = "--nvtx-exclude",
									  .detail = peers), false,
				      "graph %llu: %s; its launches run unmeasured",
				      (unsigned long long)g->id, peers);
			goto out;
		}
		any |= filters.kernel_selected(l.function, l.mangled, &demangled);
	}
	plan = any ? PLAN_MEASURE : PLAN_NOTHING;
	if (any && filters.take_launch()) {
		struct collector_graph where = { g->id, launch, -1, list.count };
		inject_replay_graph(exec, stream, ctx, context_id, index, &where);
	}
out:
	free(list.nodes);
	free(list.types);
	pthread_mutex_lock(&lock);
	if (g->plan_generation == generation) /* no update came in between */
		g->plan = plan;
	pthread_mutex_unlock(&lock);
}

bool inject_graphs_may_measure(CUgraphExec exec)
{
	if (mode == RP_GRAPH_NONE)
		return false;
	pthread_mutex_lock(&lock);
	struct graph_exec *g = find(exec);
	bool may = !g || g->plan != PLAN_NOTHING;
	if (!may)
		g->launches++; /* the records' launch numbers count every launch */
	pthread_mutex_unlock(&lock);
	return may;
}
