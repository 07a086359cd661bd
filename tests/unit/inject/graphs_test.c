/* tests/unit/inject/graphs_test.c - the executable graphs that inject/graph/graphs.c keeps and the
 * copies of their graphs: found by their exec, updates followed on the copy or the graph
 * marked stale with the call named, nodes disabled and enabled, forgotten at destruction,
 * and the plan of later launches forgotten at every update. The driver's graph calls in
 * rp_api are fakes: a copy's handle and its nodes' are the originals' plus COPY, and
 * inject_output_measuring (output.c) is replaced below. No GPU. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "collector/api.h"
#include "inject/graph/graphs.h"

#define COPY 0x100000u

static bool measuring = true;
static CUresult clone_result = CUDA_SUCCESS;
static CUresult set_result = CUDA_SUCCESS;     /* every cuGraph*SetParams */
static uintptr_t not_in_clone;                 /* a node cuGraphNodeFindInClone misses */
static CUgraph destroyed[16];
static size_t destroyed_count;
static CUgraphNode set_node;                   /* the node the last setter was given */
static CUDA_KERNEL_NODE_PARAMS set_kernel;     /* what cuGraphKernelNodeSetParams was given */

bool inject_output_measuring(void)
{
	return measuring;
}

static CUresult fake_clone(CUgraph *copy, CUgraph graph)
{
	if (clone_result != CUDA_SUCCESS)
		return clone_result;
	*copy = (CUgraph)((uintptr_t)graph + COPY);
	return CUDA_SUCCESS;
}

static CUresult fake_destroy(CUgraph graph)
{
	cr_assert_lt(destroyed_count, 16);
	destroyed[destroyed_count++] = graph;
	return CUDA_SUCCESS;
}

static CUresult fake_find_in_clone(CUgraphNode *found, CUgraphNode node, CUgraph clone)
{
	(void)clone;
	if ((uintptr_t)node == not_in_clone)
		return CUDA_ERROR_INVALID_VALUE;
	*found = (CUgraphNode)((uintptr_t)node + COPY);
	return CUDA_SUCCESS;
}

static CUresult fake_kernel_set(CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS *p)
{
	set_node = node;
	set_kernel = *p;
	return set_result;
}

static CUresult fake_memset_set(CUgraphNode node, const CUDA_MEMSET_NODE_PARAMS *p)
{
	(void)p;
	set_node = node;
	return set_result;
}

static CUresult fake_memcpy_set(CUgraphNode node, const CUDA_MEMCPY3D *p)
{
	(void)p;
	set_node = node;
	return set_result;
}

static CUresult fake_host_set(CUgraphNode node, const CUDA_HOST_NODE_PARAMS *p)
{
	(void)p;
	set_node = node;
	return set_result;
}

static CUresult fake_node_set(CUgraphNode node, CUgraphNodeParams *p)
{
	(void)p;
	set_node = node;
	return set_result;
}

static CUresult fake_error_name(CUresult r, const char **name)
{
	switch (r) {
	case CUDA_ERROR_INVALID_VALUE: *name = "CUDA_ERROR_INVALID_VALUE"; return CUDA_SUCCESS;
	case CUDA_ERROR_OUT_OF_MEMORY: *name = "CUDA_ERROR_OUT_OF_MEMORY"; return CUDA_SUCCESS;
	case CUDA_ERROR_NOT_FOUND: *name = "CUDA_ERROR_NOT_FOUND"; return CUDA_SUCCESS;
	case CUDA_ERROR_NOT_SUPPORTED: *name = "CUDA_ERROR_NOT_SUPPORTED"; return CUDA_SUCCESS;
	default: return CUDA_ERROR_INVALID_VALUE;
	}
}

static void setup(void)
{
	rp_api.cuGraphClone = fake_clone;
	rp_api.cuGraphDestroy = fake_destroy;
	rp_api.cuGraphNodeFindInClone = fake_find_in_clone;
	rp_api.cuGraphKernelNodeSetParams = fake_kernel_set;
	rp_api.cuGraphMemsetNodeSetParams = fake_memset_set;
	rp_api.cuGraphMemcpyNodeSetParams = fake_memcpy_set;
	rp_api.cuGraphHostNodeSetParams = fake_host_set;
	rp_api.cuGraphNodeSetParams = fake_node_set;
	rp_api.cuGetErrorName = fake_error_name;
}

TestSuite(graphs, .init = setup);

static CUgraphExec exec_handle(uintptr_t n)
{
	return (CUgraphExec)(0x1000 + n * 0x10);
}

static CUgraphNode node_handle(uintptr_t n)
{
	return (CUgraphNode)(0x5000 + n * 0x10);
}

static CUgraphNode copy_of(CUgraphNode node)
{
	return (CUgraphNode)((uintptr_t)node + COPY);
}

static void instantiate_with(int cbid, CUgraphExec exec, CUgraph graph, bool succeeded)
{
	cuGraphInstantiateWithFlags_params p = { .phGraphExec = &exec, .hGraph = graph };
	cr_assert(inject_graphs_on_call(cbid, &p, succeeded));
}

static void instantiate(CUgraphExec exec, CUgraph graph)
{
	instantiate_with(CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags, exec, graph, true);
}

static void destroy(CUgraphExec exec)
{
	cuGraphExecDestroy_params p = { .hGraphExec = exec };
	cr_assert(inject_graphs_on_call(CUPTI_DRIVER_TRACE_CBID_cuGraphExecDestroy, &p, true));
}

static void set_enabled(CUgraphExec exec, CUgraphNode node, bool enabled)
{
	cuGraphNodeSetEnabled_params p = { .hGraphExec = exec, .hNode = node, .isEnabled = enabled };
	cr_assert(inject_graphs_on_call(CUPTI_DRIVER_TRACE_CBID_cuGraphNodeSetEnabled, &p, true));
}

/* One of the exec-update calls: its callback id, its parameters and the name a stale graph
 * gives. Every parameter struct starts (exec, node) but cuGraphExecUpdate's (exec, graph). */
struct update {
	int cbid;
	const char *call;
	union {
		cuGraphExecKernelNodeSetParams_v2_params kernel;
		cuGraphExecKernelNodeSetParams_params kernel_v1;
		cuGraphExecMemsetNodeSetParams_params memset;
		cuGraphExecMemcpyNodeSetParams_params memcpy;
		cuGraphExecHostNodeSetParams_params host;
		cuGraphExecNodeSetParams_params node;
		cuGraphExecChildGraphNodeSetParams_params child;
		cuGraphNodeSetEnabled_params enabled;
		cuGraphExecUpdate_v2_params whole;
	} p;
};

static const CUDA_KERNEL_NODE_PARAMS kernel_params = { .gridDimX = 7, .blockDimX = 32 };
static const CUDA_KERNEL_NODE_PARAMS_v1 kernel_params_v1 = { .gridDimX = 9, .blockDimX = 64,
							      .sharedMemBytes = 128 };
static CUDA_MEMSET_NODE_PARAMS memset_params;
static CUDA_MEMCPY3D memcpy_params;
static CUDA_HOST_NODE_PARAMS host_params;
static CUgraphNodeParams node_params;

/* Every exec-update call rangeprof follows, on exec and node (a node of the application's
 * graph; for cuGraphExecUpdate a new graph instead). */
static size_t updates(CUgraphExec exec, CUgraphNode node, struct update out[10])
{
	size_t n = 0;
	out[n++] = (struct update){ CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams_v2,
				    "cuGraphExecKernelNodeSetParams",
				    .p.kernel = { exec, node, &kernel_params } };
	out[n++] = (struct update){ CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams,
				    "cuGraphExecKernelNodeSetParams",
				    .p.kernel_v1 = { exec, node, &kernel_params_v1 } };
	out[n++] = (struct update){ CUPTI_DRIVER_TRACE_CBID_cuGraphExecMemsetNodeSetParams,
				    "cuGraphExecMemsetNodeSetParams",
				    .p.memset = { exec, node, &memset_params, NULL } };
	out[n++] = (struct update){ CUPTI_DRIVER_TRACE_CBID_cuGraphExecMemcpyNodeSetParams,
				    "cuGraphExecMemcpyNodeSetParams",
				    .p.memcpy = { exec, node, &memcpy_params, NULL } };
	out[n++] = (struct update){ CUPTI_DRIVER_TRACE_CBID_cuGraphExecHostNodeSetParams,
				    "cuGraphExecHostNodeSetParams",
				    .p.host = { exec, node, &host_params } };
	out[n++] = (struct update){ CUPTI_DRIVER_TRACE_CBID_cuGraphExecNodeSetParams,
				    "cuGraphExecNodeSetParams",
				    .p.node = { exec, node, &node_params } };
	out[n++] = (struct update){ CUPTI_DRIVER_TRACE_CBID_cuGraphExecChildGraphNodeSetParams,
				    "cuGraphExecChildGraphNodeSetParams",
				    .p.child = { exec, node, (CUgraph)0x9000 } };
	out[n++] = (struct update){ CUPTI_DRIVER_TRACE_CBID_cuGraphNodeSetEnabled,
				    "cuGraphNodeSetEnabled", .p.enabled = { exec, node, 0 } };
	out[n++] = (struct update){ CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate_v2,
				    "cuGraphExecUpdate", .p.whole = { exec, (CUgraph)0x8000, NULL } };
	out[n++] = (struct update){ CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate,
				    "cuGraphExecUpdate", .p.whole = { exec, (CUgraph)0x8000, NULL } };
	return n;
}

static void apply(const struct update *u)
{
	cr_assert(inject_graphs_on_call(u->cbid, &u->p, true), "%s is an update", u->call);
}

static struct inject_graph_launch_start begin(CUgraphExec exec)
{
	struct inject_graph_launch_start s;
	cr_assert(inject_graphs_launch_begin(exec, &s));
	return s;
}

/* A launch that found nothing to measure: its graph's later launches are turned away. */
static void launch_finding_nothing(CUgraphExec exec)
{
	struct inject_graph_launch_start s = begin(exec);
	inject_graphs_launch_end(s.entry, s.generation, INJECT_GRAPH_PLAN_NOTHING);
	cr_assert_not(inject_graphs_may_measure(exec));
}

Test(graphs, an_instantiated_graph_is_found_by_its_exec_with_a_copy_of_its_graph)
{
	const int calls[] = { CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate,
			      CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate_v2,
			      CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags,
			      CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams,
			      CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz };
	for (uintptr_t i = 0; i < 5; i++)
		instantiate_with(calls[i], exec_handle(i), (CUgraph)(0x2000 + i), true);
	cr_assert_eq(inject_graphs_known(), 5);
	for (uintptr_t i = 0; i < 5; i++) {
		struct inject_graph_launch_start s = begin(exec_handle(i));
		cr_assert_not_null(s.entry);
		cr_assert_eq(s.id, i, "graphs are numbered in instantiation order");
		cr_assert_eq((uintptr_t)s.copy, 0x2000 + i + COPY, "launch %zu: the copy", (size_t)i);
		cr_assert_not(s.stale);
		cr_assert(inject_graphs_may_measure(exec_handle(i)));
	}
	struct inject_graph_launch_start s;
	cr_assert_not(inject_graphs_launch_begin(exec_handle(9), &s), "never instantiated");
	cr_assert_null(s.entry);
}

Test(graphs, each_launch_of_a_graph_is_numbered_even_those_turned_away)
{
	instantiate(exec_handle(0), (CUgraph)0x2000);
	cr_assert_eq(begin(exec_handle(0)).launch, 0);
	launch_finding_nothing(exec_handle(0));                /* launch 1, then 2 turned away */
	cr_assert_eq(begin(exec_handle(0)).launch, 3);
}

Test(graphs, no_copy_is_kept_when_nothing_can_be_measured)
{
	instantiate_with(CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags, exec_handle(0),
			 (CUgraph)0x2000, false);
	measuring = false;
	instantiate(exec_handle(1), (CUgraph)0x2000);
	measuring = true;
	inject_graphs_set_mode(RP_GRAPH_NONE);
	instantiate(exec_handle(2), (CUgraph)0x2000);
	cr_assert_eq(inject_graphs_known(), 0, "a failed call, a process not measuring, "
		     "--graph-profiling none");
	cr_assert_not(inject_graphs_may_measure(exec_handle(2)), "none measures no launch");
}

Test(graphs, a_graph_that_cannot_be_copied_is_stale_from_its_instantiation)
{
	clone_result = CUDA_ERROR_OUT_OF_MEMORY;
	instantiate(exec_handle(0), (CUgraph)0x2000);
	struct inject_graph_launch_start s = begin(exec_handle(0));
	cr_assert_null(s.copy);
	cr_assert(s.stale);
	cr_assert_str_eq(s.why_stale,
			 "cuGraphClone at instantiation: CUDA_ERROR_OUT_OF_MEMORY");
}

Test(graphs, an_update_the_copy_cannot_follow_marks_it_stale_with_the_call_named)
{
	struct update u[10];
	size_t n = updates(NULL, NULL, u);
	set_result = CUDA_ERROR_INVALID_VALUE;
	clone_result = CUDA_ERROR_INVALID_VALUE;      /* cuGraphExecUpdate's new copy */
	for (size_t i = 0; i < n; i++) {
		if (u[i].cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphNodeSetEnabled)
			continue;                     /* followed without a driver call */
		clone_result = CUDA_SUCCESS;
		instantiate(exec_handle(i), (CUgraph)0x2000);
		clone_result = CUDA_ERROR_INVALID_VALUE;
		updates(exec_handle(i), node_handle(1), u);
		apply(&u[i]);
		char want[160];
		snprintf(want, sizeof(want), "%s could not be followed (%s)", u[i].call,
			 u[i].cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphExecChildGraphNodeSetParams ?
			 "CUDA_ERROR_NOT_SUPPORTED" : "CUDA_ERROR_INVALID_VALUE");
		struct inject_graph_launch_start s = begin(exec_handle(i));
		cr_assert(s.stale, "update %zu", i);
		cr_assert_str_eq(s.why_stale, want, "update %zu", i);
	}
}

Test(graphs, a_node_missing_from_the_copy_marks_it_stale_and_the_first_reason_stays)
{
	instantiate(exec_handle(0), (CUgraph)0x2000);
	not_in_clone = (uintptr_t)node_handle(3);
	struct update u[10];
	updates(exec_handle(0), node_handle(3), u);
	apply(&u[2]);                                 /* memset */
	const char *want = "cuGraphExecMemsetNodeSetParams could not be followed "
			   "(CUDA_ERROR_NOT_FOUND)";
	cr_assert(begin(exec_handle(0)).stale);
	cr_assert_str_eq(begin(exec_handle(0)).why_stale, want);
	set_result = CUDA_ERROR_INVALID_VALUE;
	updates(exec_handle(0), node_handle(1), u);
	apply(&u[0]);
	cr_assert_str_eq(begin(exec_handle(0)).why_stale, want,
			 "a stale graph follows nothing more");
}

Test(graphs, a_failed_update_call_changes_nothing)
{
	instantiate(exec_handle(0), (CUgraph)0x2000);
	launch_finding_nothing(exec_handle(0));
	struct update u[10];
	size_t n = updates(exec_handle(0), node_handle(1), u);
	for (size_t i = 0; i < n; i++)
		cr_assert(inject_graphs_on_call(u[i].cbid, &u[i].p, false));
	struct inject_graph_launch_start s = begin(exec_handle(0));
	cr_assert_not(s.stale);
	cr_assert_not(inject_graphs_node_disabled(s.entry, copy_of(node_handle(1))));
	cr_assert_not(inject_graphs_may_measure(exec_handle(0)), "the plan stands");
}

Test(graphs, a_followed_update_is_applied_to_the_copys_node)
{
	instantiate(exec_handle(0), (CUgraph)0x2000);
	struct update u[10];
	updates(exec_handle(0), node_handle(4), u);
	apply(&u[0]);
	cr_assert_eq(set_node, copy_of(node_handle(4)));
	cr_assert_eq(set_kernel.gridDimX, 7);
	apply(&u[1]);                                 /* the first version's struct, widened */
	cr_assert_eq(set_kernel.gridDimX, 9);
	cr_assert_eq(set_kernel.blockDimX, 64);
	cr_assert_eq(set_kernel.sharedMemBytes, 128);
	cr_assert_null(set_kernel.kern);
	cr_assert_null(set_kernel.ctx);
	for (size_t i = 2; i <= 5; i++) {
		set_node = NULL;
		apply(&u[i]);
		cr_assert_eq(set_node, copy_of(node_handle(4)), "%s", u[i].call);
	}
	cr_assert_not(begin(exec_handle(0)).stale);
}

Test(graphs, disabling_and_enabling_nodes_is_mirrored_on_the_copy)
{
	instantiate(exec_handle(0), (CUgraph)0x2000);
	struct inject_graph_exec *g = begin(exec_handle(0)).entry;
	CUgraphNode a = node_handle(1), b = node_handle(2);
	set_enabled(exec_handle(0), a, false);
	set_enabled(exec_handle(0), a, false);        /* twice: one enable undoes it */
	set_enabled(exec_handle(0), b, false);
	cr_assert(inject_graphs_node_disabled(g, copy_of(a)));
	cr_assert(inject_graphs_node_disabled(g, copy_of(b)));
	cr_assert_not(inject_graphs_node_disabled(g, a), "the copy's nodes, not the app's");
	cr_assert_not(inject_graphs_node_disabled(g, copy_of(node_handle(3))));
	set_enabled(exec_handle(0), a, true);
	cr_assert_not(inject_graphs_node_disabled(g, copy_of(a)));
	cr_assert(inject_graphs_node_disabled(g, copy_of(b)));
	set_enabled(exec_handle(0), b, true);
	set_enabled(exec_handle(0), b, true);
	cr_assert_not(inject_graphs_node_disabled(g, copy_of(b)));
	cr_assert_not(begin(exec_handle(0)).stale);
}

Test(graphs, a_whole_graph_update_replaces_the_copy_and_enables_every_node)
{
	instantiate(exec_handle(0), (CUgraph)0x2000);
	set_enabled(exec_handle(0), node_handle(1), false);
	struct update u[10];
	updates(exec_handle(0), NULL, u);
	apply(&u[8]);                                 /* cuGraphExecUpdate_v2 to 0x8000 */
	struct inject_graph_launch_start s = begin(exec_handle(0));
	cr_assert_eq((uintptr_t)s.copy, 0x8000 + COPY);
	cr_assert_eq(destroyed_count, 1);
	cr_assert_eq((uintptr_t)destroyed[0], 0x2000 + COPY, "the old copy is destroyed");
	cr_assert_not(inject_graphs_node_disabled(s.entry, copy_of(node_handle(1))));
}

Test(graphs, a_destroyed_exec_is_forgotten_with_its_copy)
{
	instantiate(exec_handle(0), (CUgraph)0x2000);
	instantiate(exec_handle(1), (CUgraph)0x3000);
	launch_finding_nothing(exec_handle(0));
	destroy(exec_handle(0));
	cr_assert_eq(inject_graphs_known(), 1);
	cr_assert_eq(destroyed_count, 1);
	cr_assert_eq((uintptr_t)destroyed[0], 0x2000 + COPY);
	struct inject_graph_launch_start s;
	cr_assert_not(inject_graphs_launch_begin(exec_handle(0), &s));
	cr_assert(inject_graphs_may_measure(exec_handle(0)), "its plan went with it");
	cr_assert_eq((uintptr_t)begin(exec_handle(1)).copy, 0x3000 + COPY, "the other stays");
}

Test(graphs, an_exec_handle_given_again_starts_afresh)
{
	instantiate(exec_handle(0), (CUgraph)0x2000);
	set_enabled(exec_handle(0), node_handle(1), false);
	launch_finding_nothing(exec_handle(0));
	instantiate(exec_handle(0), (CUgraph)0x3000);  /* destroyed without rangeprof seeing it */
	cr_assert_eq(inject_graphs_known(), 1);
	cr_assert_eq((uintptr_t)destroyed[0], 0x2000 + COPY);
	struct inject_graph_launch_start s = begin(exec_handle(0));
	cr_assert_eq((uintptr_t)s.copy, 0x3000 + COPY);
	cr_assert_eq(s.launch, 0);
	cr_assert_not(inject_graphs_node_disabled(s.entry, copy_of(node_handle(1))));
}

Test(graphs, the_plan_is_forgotten_at_every_update_followed_or_not)
{
	struct update u[10];
	size_t n = updates(NULL, NULL, u);
	for (size_t fail = 0; fail < 2; fail++) {
		for (size_t i = 0; i < n; i++) {
			CUgraphExec exec = exec_handle(fail * 100 + i);
			clone_result = CUDA_SUCCESS;
			set_result = CUDA_SUCCESS;
			instantiate(exec, (CUgraph)0x2000);
			launch_finding_nothing(exec);
			if (fail) {
				set_result = CUDA_ERROR_INVALID_VALUE;
				clone_result = CUDA_ERROR_INVALID_VALUE;
			}
			updates(exec, node_handle(1), u);
			apply(&u[i]);
			cr_assert(inject_graphs_may_measure(exec), "%s%s forgets the plan", u[i].call,
				  fail ? " (not followed)" : "");
		}
	}
}

Test(graphs, a_plan_found_while_an_update_came_in_is_not_kept)
{
	instantiate(exec_handle(0), (CUgraph)0x2000);
	struct inject_graph_launch_start s = begin(exec_handle(0));
	struct update u[10];
	updates(exec_handle(0), node_handle(1), u);
	apply(&u[0]);
	inject_graphs_launch_end(s.entry, s.generation, INJECT_GRAPH_PLAN_NOTHING);
	cr_assert(inject_graphs_may_measure(exec_handle(0)));
	s = begin(exec_handle(0));
	inject_graphs_launch_end(s.entry, s.generation, INJECT_GRAPH_PLAN_MEASURE);
	cr_assert(inject_graphs_may_measure(exec_handle(0)));
	launch_finding_nothing(exec_handle(0));
}
