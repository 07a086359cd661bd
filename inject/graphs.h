/* inject/graphs.h - kernels inside CUDA graphs (issue 8). An executable graph's nodes are
 * not visible from its CUgraphExec, and the CUgraph it came from may be destroyed right
 * after instantiation (PyTorch does so), so a copy of the graph is kept per executable
 * graph from cuGraphInstantiate on, and the exec-update calls are applied to the copy.
 * A selected cuGraphLaunch is measured at its ENTER:
 *   node mode: the graph's nodes run one by one in a topological order on the launch's
 *     stream, each selected kernel node measured like a plain launch (replay.c) from the
 *     memory its node saw, and the memory as it was before the graph is put back
 *     afterwards (CUPTI checkpoint), so that the application's own graph launch runs on
 *     what it would have found;
 *   graph mode: the whole graph launch is one workload (replay.c).
 * Called by launch.c (the callbacks); calls replay.c, output.c, names.c, the driver. */
#ifndef INJECT_GRAPHS_H
#define INJECT_GRAPHS_H

#include <cuda.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/options.h"

/* What launch.c's filters say of a kernel node: whether -k selects it (demangled name
 * out), and whether the skip/count budget takes one more measured launch. */
struct inject_graph_filters {
	bool (*kernel_selected)(CUfunction function, const char *mangled, const char **demangled);
	bool (*take_launch)(void);
};

void inject_graphs_configure(enum rp_graph_profiling mode,
			     const struct inject_graph_filters *filters);

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

/* A cuGraphLaunch at ENTER whose NVTX state is selected, with the replay lock held and the
 * launch's context current. index is the process-wide launch index. */
void inject_graphs_launch(CUgraphExec exec, CUstream stream, CUcontext ctx, uint32_t context_id,
			  uint64_t index);

/* How many executable graphs are known (tests, exit report). */
unsigned long inject_graphs_known(void);

#endif
