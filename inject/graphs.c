/* inject/graphs.c - kernels inside CUDA graphs (graphs.h). The executable graphs are kept
 * in a list under a lock: graphs are instantiated rarely, launched often, and one
 * measurement runs at a time (replay lock). Calls replay.c, output.c, names.c and the
 * driver through collector/api. */
#include "inject/graphs.h"

#include <cupti.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/api.h"
#include "collector/cost.h"
#include "collector/device.h"
#include "collector/records.h"
#include "inject/inject.h"
#include "common/log.h"
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
};

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
	if (!g->stale[0])
		snprintf(g->stale, sizeof(g->stale), "%s could not be followed (%s)", call,
			 collector_cu_error(cr));
}

static void set_enabled(struct graph_exec *g, CUgraphNode node, bool enabled)
{
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
	case CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams:
		call = "cuGraphExecKernelNodeSetParams";
		if (node)
			cr = rp_api.cuGraphKernelNodeSetParams(
				node, ((const cuGraphExecKernelNodeSetParams_v2_params *)params)->nodeParams);
		break;
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
		if (succeeded && mode != RP_GRAPH_NONE && p->exec && *p->exec)
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
/* Stream captures                                                                       */
/* ------------------------------------------------------------------------------------ */

static atomic_int global_captures;
static __thread int thread_captures;
#define CAPTURES 256
static struct { CUstream stream; CUstreamCaptureMode mode; } captures[CAPTURES];
static pthread_mutex_t capture_lock = PTHREAD_MUTEX_INITIALIZER;

bool inject_graphs_on_capture(int cbid, const void *params, bool at_exit, bool succeeded)
{
	CUstream stream;
	CUstreamCaptureMode capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
	bool begin = true;
	switch (cbid) {
	case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_ptsz:
		stream = ((const cuStreamBeginCapture_params *)params)->hStream;
		break;
	case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2_ptsz:
		stream = ((const cuStreamBeginCapture_v2_params *)params)->hStream;
		capture_mode = ((const cuStreamBeginCapture_v2_params *)params)->mode;
		break;
	case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph_ptsz:
		stream = ((const cuStreamBeginCaptureToGraph_params *)params)->hStream;
		capture_mode = ((const cuStreamBeginCaptureToGraph_params *)params)->mode;
		break;
	case CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture_ptsz:
		stream = ((const cuStreamEndCapture_params *)params)->hStream;
		begin = false;
		break;
	default:
		return false;
	}
	/* A capture counts from before its begin returns (the call itself may be watched by
	 * another thread's measurement) to after its end has returned. */
	if (begin && !at_exit) {
		if (capture_mode == CU_STREAM_CAPTURE_MODE_RELAXED)
			return true;
		if (capture_mode == CU_STREAM_CAPTURE_MODE_GLOBAL)
			atomic_fetch_add(&global_captures, 1);
		thread_captures++;
		pthread_mutex_lock(&capture_lock);
		for (int i = 0; i < CAPTURES; i++) {
			if (!captures[i].stream) {
				captures[i].stream = stream;
				captures[i].mode = capture_mode;
				break;
			}
		}
		pthread_mutex_unlock(&capture_lock);
		return true;
	}
	if (begin && succeeded)
		return true;
	if (!begin && !at_exit)
		return true;
	/* A failed begin, or an end that returned (the capture is over either way). */
	pthread_mutex_lock(&capture_lock);
	for (int i = 0; i < CAPTURES; i++) {
		if (captures[i].stream == stream) {
			if (captures[i].mode == CU_STREAM_CAPTURE_MODE_GLOBAL)
				atomic_fetch_sub(&global_captures, 1);
			if (thread_captures > 0)
				thread_captures--;
			captures[i].stream = NULL;
			break;
		}
	}
	pthread_mutex_unlock(&capture_lock);
	return true;
}

bool inject_graphs_capture_under_way(void)
{
	return atomic_load(&global_captures) > 0 || thread_captures > 0;
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

/* Appends graph's nodes in a topological order (Kahn), child graphs in place of their
 * nodes. why gets the reason when a node cannot be run alone. */
static int flatten(CUgraph graph, struct node_list *out, int depth, char *why, size_t why_size)
{
	size_t n = 0;
	if (depth > 16 || rp_api.cuGraphGetNodes(graph, NULL, &n) != CUDA_SUCCESS) {
		snprintf(why, why_size, depth > 16 ? "child graphs nested too deep" :
			 "cuGraphGetNodes failed");
		return -1;
	}
	CUgraphNode *nodes = calloc(n + 1, sizeof(*nodes));
	size_t *pending = calloc(n + 1, sizeof(*pending));
	size_t *order = calloc(n + 1, sizeof(*order));
	int rc = -1;
	if (!nodes || !pending || !order) {
		snprintf(why, why_size, "out of host memory");
		goto out;
	}
	if (rp_api.cuGraphGetNodes(graph, nodes, &n) != CUDA_SUCCESS) {
		snprintf(why, why_size, "cuGraphGetNodes failed");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		size_t deps = 0;
		if (rp_api.cuGraphNodeGetDependencies(nodes[i], NULL, NULL, &deps) != CUDA_SUCCESS) {
			snprintf(why, why_size, "cuGraphNodeGetDependencies failed");
			goto out;
		}
		pending[i] = deps;
	}
	/* Kahn's algorithm: a node is ready once every dependency was placed. Quadratic in
	 * the node count, which is fine for graphs of thousands of nodes, measured rarely. */
	size_t placed = 0;
	for (size_t i = 0; i < n; i++)
		if (!pending[i])
			order[placed++] = i;
	for (size_t head = 0; head < placed; head++) {
		CUgraphNode done_node = nodes[order[head]];
		for (size_t i = 0; i < n; i++) {
			if (!pending[i])
				continue;
			size_t deps = 0;
			rp_api.cuGraphNodeGetDependencies(nodes[i], NULL, NULL, &deps);
			CUgraphNode *d = calloc(deps + 1, sizeof(*d));
			if (!d) {
				snprintf(why, why_size, "out of host memory");
				goto out;
			}
			rp_api.cuGraphNodeGetDependencies(nodes[i], d, NULL, &deps);
			for (size_t k = 0; k < deps; k++)
				if (d[k] == done_node && !--pending[i])
					order[placed++] = i;
			free(d);
		}
	}
	if (placed != n) {
		snprintf(why, why_size, "the graph's dependencies have a cycle");
		goto out;
	}
	for (size_t k = 0; k < n; k++) {
		CUgraphNode node = nodes[order[k]];
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
	free(pending);
	free(order);
	return rc;
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

static void measure_nodes(struct graph_exec *g, const struct node_list *list, CUstream stream,
			  CUcontext ctx, uint32_t context_id, uint64_t index, uint64_t launch)
{
	/* Which kernel nodes are measured, before anything is done: a graph launch with none
	 * costs nothing more. */
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
		if (disabled(g, list->nodes[i]))
			continue;
		const char *demangled = NULL;
		if (filters.kernel_selected(launches[i].function, launches[i].mangled, &demangled) &&
		    filters.take_launch()) {
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
	RP_CUpti_Checkpoint before = { .structSize = RP_CUPTI_CHECKPOINT_STRUCT_SIZE, .ctx = ctx,
				       .allowOverwrite = 1,
				       .reserveHostMB = collector_checkpoint_host_reserve_mb() };
	CUptiResult r = cr == CUDA_SUCCESS ? rp_api.cuptiCheckpointSave(&before) :
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
	r = rp_api.cuptiCheckpointRestore(&before);
	rp_api.cuCtxSynchronize();
	rp_api.cuptiCheckpointFree(&before);
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
}

void inject_graphs_launch(CUgraphExec exec, CUstream stream, CUcontext ctx, uint32_t context_id,
			  uint64_t index)
{
	if (mode == RP_GRAPH_NONE)
		return;
	pthread_mutex_lock(&lock);
	struct graph_exec *g = find(exec);
	uint64_t launch = g ? g->launches++ : 0;
	char stale[sizeof(g->stale)] = "";
	if (g)
		snprintf(stale, sizeof(stale), "%s", g->stale);
	pthread_mutex_unlock(&lock);
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
		return;
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
		measure_nodes(g, &list, stream, ctx, context_id, index, launch);
		goto out;
	}
	/* Graph mode: one workload, selected when -k takes one of its kernels. */
	bool any = false;
	for (size_t i = 0; i < list.count && !any; i++) {
		CUDA_KERNEL_NODE_PARAMS p;
		struct inject_launch l;
		const char *demangled = NULL;
		any = list.types[i] == CU_GRAPH_NODE_TYPE_KERNEL &&
		      kernel_launch(list.nodes[i], ctx, context_id, stream, &p, &l) &&
		      filters.kernel_selected(l.function, l.mangled, &demangled);
	}
	if (any && filters.take_launch()) {
		struct collector_graph where = { g->id, launch, -1, list.count };
		inject_replay_graph(exec, stream, ctx, context_id, index, &where);
	}
out:
	free(list.nodes);
	free(list.types);
}
