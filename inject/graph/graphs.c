/* inject/graph/graphs.c - the executable graphs and the copies of their graphs (graphs.h).
 * Owns the list of executable graphs: for each, the copy of the graph it was instantiated
 * from with every later update applied (cuGraphExec*SetParams, cuGraphExecUpdate), the
 * nodes cuGraphNodeSetEnabled disabled, why the copy can no longer be trusted (stale), its
 * launch count and the plan its launches come to. All of it is guarded by this file's own
 * lock, held only for a lookup or an update of the list, never across a call out of this
 * file but the driver's graph calls on the copy: graphs are instantiated rarely and
 * launched often, and one measurement runs at a time (the replay lock). It uses only the
 * driver and inject_output_measuring, so that its unit test
 * (tests/unit/inject/graphs_test.c) fakes no more than those.
 * Calls: output.c (inject_output_measuring), collector/ (the driver).
 * Called by: launch.c (the driver callbacks, inject_graphs_may_measure), graph_measure.c
 * (what a launch starts from, which nodes are disabled, the plan it found).
 * Lock: lock (the list of executable graphs). */
#include "inject/graph/graphs.h"

#include <cupti.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "collector/api.h"
#include "common/error.h"
#include "common/lock.h"
#include "inject/output.h"

/* Set once by graph_measure.c's inject_graph_measure_configure, before any callback. */
static enum rp_graph_profiling mode = RP_GRAPH_NODE;

void inject_graphs_set_mode(enum rp_graph_profiling m)
{
	mode = m;
}

enum rp_graph_profiling inject_graphs_mode(void)
{
	return mode;
}

/* ------------------------------------------------------------------------------------ */
/* Executable graphs and the copies of their graphs                                      */
/* ------------------------------------------------------------------------------------ */

struct inject_graph_exec {
	struct inject_graph_exec *next;
	CUgraphExec exec;
	CUgraph copy;                /* the graph as instantiated, later updates applied */
	uint64_t id;
	uint64_t launches;
	bool stale;                  /* an update the copy cannot follow ... */
	char why_stale[INJECT_GRAPH_STALE_SIZE];   /* ... this one */
	int stale_call, stale_code;                /* ... as codes (graphs.h) */
	CUgraphNode *disabled;       /* copy's nodes disabled by cuGraphNodeSetEnabled */
	size_t disabled_count;
	/* What its launches can come to, known after the first launch walked the graph and
	 * forgotten at every update: a graph none of whose kernel nodes -k selects, or one
	 * that is refused, costs its later launches one lookup (inject_graphs_may_measure),
	 * not a walk of its nodes under the replay lock. */
	enum inject_graph_plan plan;
	unsigned plan_generation;    /* counts the updates that forget it */
};

static struct rp_lock lock = RP_LOCK_INITIALIZER("graphs.c's lock");

/* An update may change what the launches can come to. Called with the lock held. */
static void forget_plan(struct inject_graph_exec *g)
{
	rp_lock_held(&lock);
	g->plan = INJECT_GRAPH_PLAN_UNKNOWN;
	g->plan_generation++;
}

static struct inject_graph_exec *execs;
static uint64_t next_id;
static atomic_ulong known;

static struct inject_graph_exec *find(CUgraphExec exec)
{
	for (struct inject_graph_exec *g = execs; g; g = g->next)
		if (g->exec == exec)
			return g;
	return NULL;
}

static void forget(CUgraphExec exec)
{
	for (struct inject_graph_exec **p = &execs; *p; p = &(*p)->next) {
		if ((*p)->exec == exec) {
			struct inject_graph_exec *g = *p;
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
	rp_lock(&lock);
	forget(exec); /* a handle the driver gives again */
	struct inject_graph_exec *g = calloc(1, sizeof(*g));
	if (g) {
		g->exec = exec;
		g->copy = cr == CUDA_SUCCESS ? copy : NULL;
		g->id = next_id++;
		g->stale = cr != CUDA_SUCCESS;
		if (g->stale) {
			snprintf(g->why_stale, sizeof(g->why_stale),
				 "cuGraphClone at instantiation: %s", collector_cu_error(cr));
			g->stale_code = (int)cr;
		}
		g->next = execs;
		execs = g;
		atomic_fetch_add(&known, 1);
	} else if (cr == CUDA_SUCCESS) {
		rp_api.cuGraphDestroy(copy);
	}
	rp_unlock(&lock);
}

/* The copy's node for a node of the application's graph, NULL when there is none. */
static CUgraphNode copy_node(const struct inject_graph_exec *g, CUgraphNode node)
{
	CUgraphNode found = NULL;
	if (!g->copy || rp_api.cuGraphNodeFindInClone(&found, node, g->copy) != CUDA_SUCCESS)
		return NULL;
	return found;
}

/* site: the CUPTI callback id of the call, one for each of its names' versions. */
static void mark_stale(struct inject_graph_exec *g, const char *call, int site, CUresult cr)
{
	forget_plan(g);
	if (!g->stale) {
		snprintf(g->why_stale, sizeof(g->why_stale), "%s could not be followed (%s)", call,
			 collector_cu_error(cr));
		g->stale_call = site;
		g->stale_code = (int)cr;
	}
	g->stale = true;
}

static void set_enabled(struct inject_graph_exec *g, CUgraphNode node, bool enabled)
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
		g->stale = true;
		snprintf(g->why_stale, sizeof(g->why_stale), "out of host memory");
		g->stale_call = CUPTI_DRIVER_TRACE_CBID_cuGraphNodeSetEnabled;
		g->stale_code = RP_ERR_NO_MEMORY;
		return;
	}
	g->disabled = grown;
	g->disabled[g->disabled_count++] = node;
}

static bool disabled(const struct inject_graph_exec *g, CUgraphNode node)
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
	rp_lock(&lock);
	struct inject_graph_exec *g = find(head->exec);
	if (!g || g->stale) {
		rp_unlock(&lock);
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
			mark_stale(g, "cuGraphExecUpdate",
				   CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate_v2, cr);
		}
		rp_unlock(&lock);
		return;
	}
	CUgraphNode node = copy_node(g, head->node);
	CUresult cr = node ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
	const char *call = "a graph update";
	/* Both versions of cuGraphExecKernelNodeSetParams are one call to the user. */
	int site = cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams ?
		CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams_v2 : cbid;
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
		mark_stale(g, call, site, cr);
	rp_unlock(&lock);
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
		if (succeeded && mode != RP_GRAPH_NONE && inject_output_measuring() && p->exec && *p->exec)
			instantiated(*p->exec, p->graph);
		return true;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuGraphExecDestroy:
		rp_lock(&lock);
		forget(((const cuGraphExecDestroy_params *)params)->hGraphExec);
		rp_unlock(&lock);
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
/* What a launch reads and finds (graph_measure.c)                                       */
/* ------------------------------------------------------------------------------------ */

bool inject_graphs_launch_begin(CUgraphExec exec, struct inject_graph_launch_start *start)
{
	rp_lock(&lock);
	struct inject_graph_exec *g = find(exec);
	*start = (struct inject_graph_launch_start){ .entry = g };
	if (g) {
		start->id = g->id;
		start->launch = g->launches++;
		start->generation = g->plan_generation;
		start->copy = g->copy;
		start->stale = g->stale;
		snprintf(start->why_stale, sizeof(start->why_stale), "%s", g->why_stale);
		start->stale_call = g->stale_call;
		start->stale_code = g->stale_code;
	}
	rp_unlock(&lock);
	return g != NULL;
}

bool inject_graphs_node_disabled(struct inject_graph_exec *g, CUgraphNode node)
{
	rp_lock(&lock);
	bool off = disabled(g, node);
	rp_unlock(&lock);
	return off;
}

void inject_graphs_launch_end(struct inject_graph_exec *g, unsigned generation,
			      enum inject_graph_plan plan)
{
	rp_lock(&lock);
	if (g->plan_generation == generation) /* no update came in between */
		g->plan = plan;
	rp_unlock(&lock);
}

bool inject_graphs_may_measure(CUgraphExec exec)
{
	if (mode == RP_GRAPH_NONE)
		return false;
	rp_lock(&lock);
	struct inject_graph_exec *g = find(exec);
	bool may = !g || g->plan != INJECT_GRAPH_PLAN_NOTHING;
	if (!may)
		g->launches++; /* the records' launch numbers count every launch */
	rp_unlock(&lock);
	return may;
}
