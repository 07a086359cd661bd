/* tests/unit/inject/graph_measure_test.c - a selected graph launch as inject/graph/graph_measure.c
 * measures it, on a fake three-node graph (kernel init -> memset -> kernel step) kept by
 * inject/graph/graphs.c: the order of what it does, above all rangeprof's saved copies dropped
 * before the checkpoint is saved and again before it is put back; what it refuses, and the
 * plan later launches come to. The driver's graph calls in rp_api are fakes, and so are
 * save.c, whole_workload.c, kernel_launch.c, output.c and names.c (below): each call it makes
 * is written to a log that the tests compare. No GPU. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/api.h"
#include "collector/records.h"
#include "inject/measure/checkpoint.h"
#include "inject/graph/graphs.h"
#include "inject/inject.h"
#include "inject/output.h"

#define COPY 0x100000u
#define GRAPH ((CUgraph)0x2000)
#define EXEC ((CUgraphExec)0x1000)
#define STREAM ((CUstream)0x3000)
#define CTX ((CUcontext)0x4000)

/* The application's graph: nodes 0x5000, 0x5010, 0x5020; its copy's are those plus COPY. */
static const char *kernel_names[3] = { "_Z4initPf", NULL, "_Z4stepPf" };
static const CUgraphNodeType types[3] = { CU_GRAPH_NODE_TYPE_KERNEL, CU_GRAPH_NODE_TYPE_MEMSET,
					  CU_GRAPH_NODE_TYPE_KERNEL };

static CUgraphNode app_node(size_t i)
{
	return (CUgraphNode)(0x5000 + i * 0x10);
}

static CUgraphNode copy_node(size_t i)
{
	return (CUgraphNode)(0x5000 + i * 0x10 + COPY);
}

static long node_index(CUgraphNode node)
{
	for (size_t i = 0; i < 3; i++)
		if (node == copy_node(i))
			return (long)i;
	cr_assert_fail("a node that is not the copy's: %p", (void *)node);
	return -1;
}

static char calls[2048];          /* what was done, one word each, space separated */
static CUresult clone_result = CUDA_SUCCESS;
static CUptiResult save_result = CUPTI_SUCCESS;
static const char *selected_kernel;   /* -k: NULL selects every kernel */

static __attribute__((format(printf, 1, 2))) void said(const char *fmt, ...)
{
	size_t used = strlen(calls);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(calls + used, sizeof(calls) - used, fmt, ap);
	va_end(ap);
	strncat(calls, " ", sizeof(calls) - strlen(calls) - 1);
}

/* ---- the driver -------------------------------------------------------------------- */

static CUresult fake_clone(CUgraph *copy, CUgraph graph)
{
	if (clone_result == CUDA_SUCCESS)
		*copy = (CUgraph)((uintptr_t)graph + COPY);
	return clone_result;
}

static CUresult fake_destroy(CUgraph graph)
{
	(void)graph;
	return CUDA_SUCCESS;
}

static CUresult fake_find_in_clone(CUgraphNode *found, CUgraphNode node, CUgraph clone)
{
	(void)clone;
	*found = (CUgraphNode)((uintptr_t)node + COPY);
	return CUDA_SUCCESS;
}

static CUresult fake_get_nodes(CUgraph graph, CUgraphNode *nodes, size_t *n)
{
	cr_assert_eq((uintptr_t)graph, (uintptr_t)GRAPH + COPY, "the copy is walked");
	if (nodes)
		for (size_t i = 0; i < 3 && i < *n; i++)
			nodes[i] = copy_node(2 - i);     /* not in the order they run in */
	*n = 3;
	return CUDA_SUCCESS;
}

static CUresult fake_get_edges(CUgraph graph, CUgraphNode *from, CUgraphNode *to,
			       CUgraphEdgeData *data, size_t *n)
{
	(void)graph;
	(void)data;
	if (from) {
		from[0] = copy_node(1), to[0] = copy_node(2);
		from[1] = copy_node(0), to[1] = copy_node(1);
	}
	*n = 2;
	return CUDA_SUCCESS;
}

static CUresult fake_node_type(CUgraphNode node, CUgraphNodeType *type)
{
	*type = types[node_index(node)];
	return CUDA_SUCCESS;
}

static CUresult fake_kernel_params(CUgraphNode node, CUDA_KERNEL_NODE_PARAMS *p)
{
	memset(p, 0, sizeof(*p));
	p->func = (CUfunction)(uintptr_t)(0x7000 + node_index(node));
	p->gridDimX = p->gridDimY = p->gridDimZ = 1;
	p->blockDimX = p->blockDimY = p->blockDimZ = 32;
	return CUDA_SUCCESS;
}

static CUresult fake_func_name(const char **name, CUfunction f)
{
	*name = kernel_names[(uintptr_t)f - 0x7000];
	return CUDA_SUCCESS;
}

static CUresult fake_kernel_attribute(CUgraphNode node, CUkernelNodeAttrID id,
				      CUkernelNodeAttrValue *value)
{
	(void)node;
	(void)id;
	value->cooperative = 0;
	return CUDA_SUCCESS;
}

static CUresult fake_memset_params(CUgraphNode node, CUDA_MEMSET_NODE_PARAMS *p)
{
	(void)node;
	*p = (CUDA_MEMSET_NODE_PARAMS){ .dst = 0x100, .elementSize = 4, .width = 8, .height = 1 };
	return CUDA_SUCCESS;
}

static CUresult fake_memset32(CUdeviceptr dst, size_t pitch, unsigned value, size_t width,
			      size_t height, CUstream stream)
{
	(void)dst, (void)pitch, (void)value, (void)width, (void)height;
	cr_assert_eq(stream, STREAM);
	said("memset");
	return CUDA_SUCCESS;
}

static CUresult fake_synchronize(void)
{
	said("sync");
	return CUDA_SUCCESS;
}

/* ---- save.c, whole_workload.c, kernel_launch.c, output.c, names.c -------------------------*/

static char measurement;

/* session.c's replay lock, as launch.c holds it around inject_graph_measure_launch: launch()
 * holds it; a test that calls without it finds the rule checked. */
static bool replay_held;

void inject_session_held_at(const char *func, const char *file, int line)
{
	if (!replay_held) {
		fprintf(stderr, "replay lock not held in %s (%s:%d)\n", func, file, line);
		abort();
	}
}

void inject_session_drop_backups(CUcontext ctx)
{
	cr_assert_eq(ctx, CTX);
	said("drop");
}

CUptiResult inject_checkpoint_cupti_save(CUcontext ctx, RP_CUpti_Checkpoint *checkpoint)
{
	(void)checkpoint;
	cr_assert_eq(ctx, CTX);
	said("save");
	return save_result;
}

CUptiResult inject_checkpoint_cupti_put_back(RP_CUpti_Checkpoint *checkpoint)
{
	(void)checkpoint;
	said("put_back");
	return CUPTI_SUCCESS;
}

struct measurement *inject_save_enter(const struct inject_launch *launch, const char *kernel)
{
	cr_assert_not_null(launch->graph);
	said("measure:%s@%ld", kernel, launch->graph->node);
	return (struct measurement *)&measurement;
}

void inject_save_exit(struct measurement *m, bool launched)
{
	cr_assert_eq((void *)m, (void *)&measurement);
	cr_assert(launched);
}

void inject_whole_workload_graph(CUgraphExec exec, CUstream stream, CUcontext ctx,
				 uint32_t context_id,
			 uint64_t index, const struct collector_graph *where)
{
	(void)stream, (void)ctx, (void)context_id, (void)index;
	cr_assert_eq(exec, EXEC);
	said("graph:%ld", where->node);
}

int inject_kernel_launch_again(const struct inject_launch *l, char *err, size_t err_size)
{
	(void)err, (void)err_size;
	cr_assert_eq(l->stream, STREAM);
	said("run:%s", l->mangled);
	return 0;
}

void inject_output_report(enum inject_report report, const struct inject_concerns *c,
			  bool error, const char *fmt, ...)
{
	(void)c, (void)error, (void)fmt;
	switch (report) {
#define REPORT_SAID(code, words, todo) case code: said("report:" #code); break;
	INJECT_OUTPUT_REPORTS(REPORT_SAID)
#undef REPORT_SAID
	default: said("report:unknown"); break;
	}
}

const char *inject_name_demangle(const char *mangled)
{
	return mangled;
}

bool inject_output_measuring(void)
{
	return true;
}

/* ---- launch.c's filters -------------------------------------------------------------- */

static bool kernel_selected(CUfunction function, const char *mangled, const char **demangled)
{
	(void)function;
	*demangled = NULL;
	return !selected_kernel || strcmp(mangled, selected_kernel) == 0;
}

static bool take_launch(void)
{
	return true;
}

static void configure(enum rp_graph_profiling mode)
{
	rp_api.cuGraphClone = fake_clone;
	rp_api.cuGraphDestroy = fake_destroy;
	rp_api.cuGraphNodeFindInClone = fake_find_in_clone;
	rp_api.cuGraphGetNodes = fake_get_nodes;
	rp_api.cuGraphGetEdges = fake_get_edges;
	rp_api.cuGraphNodeGetType = fake_node_type;
	rp_api.cuGraphKernelNodeGetParams = fake_kernel_params;
	rp_api.cuFuncGetName = fake_func_name;
	rp_api.cuGraphKernelNodeGetAttribute = fake_kernel_attribute;
	rp_api.cuGraphMemsetNodeGetParams = fake_memset_params;
	rp_api.cuMemsetD2D32Async = fake_memset32;
	rp_api.cuCtxSynchronize = fake_synchronize;
	inject_graph_measure_configure(mode,
				       &(struct inject_graph_filters){ kernel_selected, take_launch });
	CUgraphExec exec = EXEC;
	cuGraphInstantiateWithFlags_params p = { .phGraphExec = &exec, .hGraph = GRAPH };
	inject_graphs_on_call(CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags, &p, true);
}

static void launch(void)
{
	calls[0] = '\0';
	replay_held = true;
	inject_graph_measure_launch(EXEC, STREAM, CTX, 1, 42);
	replay_held = false;
}

/* The calls of the last launch, without its trailing space. */
static const char *done(void)
{
	size_t n = strlen(calls);
	if (n && calls[n - 1] == ' ')
		calls[n - 1] = '\0';
	return calls;
}

Test(graph_measure, node_mode_drops_saved_copies_before_the_checkpoint_and_before_putting_it_back)
{
	configure(RP_GRAPH_NODE);
	launch();
	cr_assert_str_eq(done(), "drop sync save "
			 "measure:_Z4initPf@0 run:_Z4initPf memset measure:_Z4stepPf@2 run:_Z4stepPf "
			 "sync drop put_back");
	cr_assert(inject_graphs_may_measure(EXEC));
}

Test(graph_measure, a_checkpoint_that_cannot_be_saved_measures_and_puts_back_nothing)
{
	configure(RP_GRAPH_NODE);
	save_result = CUPTI_ERROR_OUT_OF_MEMORY;
	launch();
	cr_assert_str_eq(done(), "drop sync save report:INJECT_REPORT_GRAPH_CHECKPOINT");
}

Test(graph_measure, nodes_not_selected_run_as_the_graph_would_and_disabled_ones_not_at_all)
{
	configure(RP_GRAPH_NODE);
	selected_kernel = "_Z4stepPf";
	launch();
	cr_assert_str_eq(done(), "drop sync save run:_Z4initPf memset measure:_Z4stepPf@2 "
			 "run:_Z4stepPf sync drop put_back");
	cuGraphNodeSetEnabled_params off = { EXEC, app_node(1), 0 };
	inject_graphs_on_call(CUPTI_DRIVER_TRACE_CBID_cuGraphNodeSetEnabled, &off, true);
	launch();
	cr_assert_str_eq(done(), "drop sync save run:_Z4initPf measure:_Z4stepPf@2 "
			 "run:_Z4stepPf sync drop put_back");
}

Test(graph_measure, a_graph_none_of_whose_kernels_is_selected_is_turned_away_from_then_on)
{
	configure(RP_GRAPH_NODE);
	selected_kernel = "_Z5otherv";
	launch();
	cr_assert_str_empty(done(), "no checkpoint for a launch that measures nothing");
	cr_assert_not(inject_graphs_may_measure(EXEC));
}

Test(graph_measure, a_kernel_node_that_waits_for_peers_refuses_the_graph)
{
	kernel_names[2] = "ncclDevKernel_AllGather_RING_LL";
	configure(RP_GRAPH_NODE);
	launch();
	cr_assert_str_eq(done(), "report:INJECT_REPORT_GRAPH_COLLECTIVE");
	cr_assert_not(inject_graphs_may_measure(EXEC));
}

Test(graph_measure, a_stale_graph_is_said_once_and_its_launches_turned_away)
{
	clone_result = CUDA_ERROR_OUT_OF_MEMORY;
	configure(RP_GRAPH_NODE);
	launch();
	cr_assert_str_eq(done(), "report:INJECT_REPORT_GRAPH_STALE");
	cr_assert_not(inject_graphs_may_measure(EXEC));
}

Test(graph_measure, graph_mode_hands_the_whole_launch_to_replay_without_a_checkpoint_here)
{
	configure(RP_GRAPH_GRAPH);
	launch();
	cr_assert_str_eq(done(), "graph:-1");
	cr_assert(inject_graphs_may_measure(EXEC));
}

Test(graph_measure, graph_profiling_none_measures_nothing)
{
	configure(RP_GRAPH_NONE);
	launch();
	cr_assert_str_empty(done());
	cr_assert_not(inject_graphs_may_measure(EXEC));
}

#if RP_LOCK_CHECKS
Test(graph_measure, a_graph_launch_measured_without_the_replay_lock_aborts, .signal = SIGABRT)
{
	configure(RP_GRAPH_NODE);
	inject_graph_measure_launch(EXEC, STREAM, CTX, 1, 42);
}
#endif
