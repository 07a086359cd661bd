/* inject/graph/graphs.h - kernels inside CUDA graphs (issue 8). An executable graph's nodes are
 * not visible from its CUgraphExec, and the CUgraph it came from may be destroyed right
 * after instantiation (PyTorch does so), so a copy of the graph is kept per executable
 * graph from cuGraphInstantiate on, and the exec-update calls are applied to the copy.
 * A selected cuGraphLaunch is measured at its ENTER:
 *   node mode: the graph's nodes run one by one in a topological order on the launch's
 *     stream, each selected kernel node measured like a plain launch (save.c) from the
 *     memory its node saw, and the memory as it was before the graph is put back
 *     afterwards (CUPTI checkpoint), so that the application's own graph launch runs on
 *     what it would have found;
 *   graph mode: the whole graph launch is one workload (whole_workload.c).
 * Two files (their opening comments map their calls):
 *   graphs.c: the executable graphs and their copies kept up to date (instantiation,
 *     updates, nodes enabled and disabled, destruction, the plan of later launches), under
 *     its own lock;
 *   graph_measure.c: a selected launch measured (the copy's nodes in order, the graphs it
 *     refuses, the nodes run one by one, the checkpoint around them), with the replay lock
 *     held. */
#ifndef INJECT_GRAPHS_H
#define INJECT_GRAPHS_H

#include <cuda.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/options.h"

/* ---- graph_measure.c: called by launch.c -------------------------------------------- */

/* What launch.c's filters say of a kernel node: whether -k selects it (demangled name
 * out), and whether the skip/count budget takes one more measured launch. */
struct inject_graph_filters {
	bool (*kernel_selected)(CUfunction function, const char *mangled, const char **demangled);
	bool (*take_launch)(void);
};

/* Once, before any callback is enabled. */
void inject_graph_measure_configure(enum rp_graph_profiling mode,
			     const struct inject_graph_filters *filters);

/* A cuGraphLaunch at ENTER whose NVTX state is selected, with the replay lock held and the
 * launch's context current. index is the process-wide launch index. */
void inject_graph_measure_launch(CUgraphExec exec, CUstream stream, CUcontext ctx,
				 uint32_t context_id, uint64_t index);

/* ---- graphs.c: called by launch.c --------------------------------------------------- */

/* Driver callbacks, at EXIT unless said: an executable graph was made from graph, is
 * gone (at ENTER), or one of the exec-update calls (cuGraphExec*SetParams,
 * cuGraphExecUpdate, cuGraphNodeSetEnabled) succeeded. false when cbid is none of
 * those. */
bool inject_graphs_on_call(int cbid, const void *params, bool succeeded);

/* Whether a cuGraphLaunch of exec can lead to a measurement: false for --graph-profiling
 * none, and for a graph whose earlier launch found no kernel node that -k selects, or
 * refused it (counted as launched). One lookup under the graphs' lock, no driver call:
 * launch.c asks before taking the replay lock. */
bool inject_graphs_may_measure(CUgraphExec exec);

/* Range replay (range_workload.c, through the check launch.c hands it): whether a
 * launch of exec inside a recorded range can be replayed with the range - false, with why
 * ("launches a graph that ..."), for a graph rangeprof did not see instantiated, one whose
 * copy is stale, one with nodes whose relaunch would repeat a side effect (host nodes,
 * ...), or one with a kernel node that waits for peers. Graph mode's rules
 * (graph_measure.c). Counts the launch among the graph's, as the application's it is.
 * Replay lock held. */
bool inject_graph_measure_replayable_whole(CUgraphExec exec, CUcontext ctx, char *why,
				    size_t why_size);

/* How many executable graphs are known (tests, exit report). */
unsigned long inject_graphs_known(void);

/* ---- graphs.c: called by graph_measure.c (and the unit test) ------------------------ */

/* The --graph-profiling mode: set by inject_graph_measure_configure before any callback, read by
 * both files (with none, no copies are kept and nothing is measured). */
void inject_graphs_set_mode(enum rp_graph_profiling mode);
enum rp_graph_profiling inject_graphs_mode(void);

/* One executable graph, graphs.c's. A pointer to it stays valid until its
 * cuGraphExecDestroy, which may not run while the same graph is being launched. */
struct inject_graph_exec;

/* What a graph's later launches can come to, known after one launch walked its nodes and
 * forgotten at every update: NOTHING (no kernel node -k selects, or the graph is refused)
 * lets inject_graphs_may_measure turn them away with one lookup. */
enum inject_graph_plan {
	INJECT_GRAPH_PLAN_UNKNOWN,
	INJECT_GRAPH_PLAN_NOTHING,
	INJECT_GRAPH_PLAN_MEASURE,
};

#define INJECT_GRAPH_STALE_SIZE 160

/* What a launch of an executable graph starts from, read under graphs.c's lock. */
struct inject_graph_launch_start {
	struct inject_graph_exec *entry;
	uint64_t id;                 /* the graph's number in the records */
	uint64_t launch;             /* this launch's number among the graph's launches */
	unsigned generation;         /* of the plan, for inject_graphs_launch_end */
	CUgraph copy;                /* the copy of the graph, updates applied */
	bool stale;                  /* the copy cannot be trusted ... */
	char why_stale[INJECT_GRAPH_STALE_SIZE];   /* ... for this reason, said to the user */
	/* ... and as codes, for reports said once: the CUPTI callback id of the call not
	 * followed (0: cuGraphClone at instantiation) and its CUresult or rp_error code. */
	int stale_call, stale_code;
};

/* Counts one launch of exec and fills start; false (start->entry NULL, no launch counted)
 * when rangeprof did not see exec's instantiation. Any thread, as are the two below. */
bool inject_graphs_launch_begin(CUgraphExec exec, struct inject_graph_launch_start *start);
/* Whether cuGraphNodeSetEnabled disabled node (a node of the copy) in g. */
bool inject_graphs_node_disabled(struct inject_graph_exec *g, CUgraphNode node);
/* Keeps the plan that the launch which began at generation found, unless an update came
 * since (it forgot the plan, and the graph may now come to something else). */
void inject_graphs_launch_end(struct inject_graph_exec *g, unsigned generation,
			      enum inject_graph_plan plan);

#endif
