/* inject/graph/graph_measure.c - measuring a selected cuGraphLaunch (graphs.h): the graph's
 * copy flattened into its nodes in an order they may run in, the graphs refused (a node that
 * cannot run alone, a kernel that waits for peers, side effects graph mode would repeat),
 * then each selected kernel node measured by save.c as its turn comes, the other nodes
 * run as the graph would, inside a checkpoint of the memory the graph starts from (node
 * mode), or the whole launch handed to whole_workload.c (graph mode). Its only state is the
 * -k and -s/-c filters launch.c hands it (select.c's functions), written once before any
 * callback; a measurement runs with the replay lock held and keeps the rest on its stack.
 * The graphs themselves are graphs.c's, under graphs.c's lock, read through
 * inject_graphs_launch_begin/_node_disabled/_launch_end.
 * Calls: graphs.c (what a launch starts from), graph_nodes.c (the nodes in an order they
 * may run in), save.c (each kernel node), whole_workload.c (graph mode), checkpoint.c (node
 * mode's), kernel_launch.c, session.c, collectives.c, names.c, output.c, collector/ (the
 * driver), common/.
 * Called by: launch.c.
 * Lock: the replay lock; not asserted by: inject_graph_measure_configure (before any
 * callback). */
#include "inject/measure/checkpoint.h"
#include "inject/graph/graphs.h"

#include <stdint.h>

#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/api.h"
#include "collector/cost.h"
#include "collector/records.h"
#include "common/error.h"
#include "common/log.h"
#include "inject/collectives.h"
#include "inject/graph/graph_nodes.h"
#include "inject/inject.h"
#include "inject/output.h"

static struct inject_graph_filters filters;

void inject_graph_measure_configure(enum rp_graph_profiling m, const struct inject_graph_filters *f)
{
	inject_graphs_set_mode(m);
	filters = *f;
}

/* A kernel node that waits for other GPUs or processes (an NCCL collective captured into
 * the graph, a cooperative kernel): run alone, outside the graph or relaunched with the
 * graph, it would wait for ever or meet the wrong peer. why gets what it is. */
static bool waits_for_peers(CUgraphNode node, const char *mangled, char *why, size_t why_size)
{
	const char *what = NULL;
	if (inject_collective_kernel(mangled, &what) ||
	    inject_collective_kernel(inject_name_demangle(mangled), &what)) {
		snprintf(why, why_size, "its kernel node %s is a %s kernel, which waits for other "
			 "GPUs or processes", inject_name_demangle(mangled), what);
		return true;
	}
	CUkernelNodeAttrValue value;
	memset(&value, 0, sizeof(value));
	if (rp_api.cuGraphKernelNodeGetAttribute(node, CU_LAUNCH_ATTRIBUTE_COOPERATIVE, &value) ==
		    CUDA_SUCCESS && value.cooperative) {
		snprintf(why, why_size, "its kernel node %s is cooperative (grid-wide "
			 "synchronisation)", inject_name_demangle(mangled));
		return true;
	}
	return false;
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

/* The driver call that runs a memset or copy node as the graph would; nothing for the
 * nodes that only order the graph. */
static CUresult run_other_node(CUgraphNode node, CUgraphNodeType type, CUstream stream)
{
	switch (type) {
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

/* Runs a node that is not measured, as the graph would: 0, or RP_ERR_RELAUNCH with the
 * driver's error name in err. */
static int run_node(CUgraphNode node, CUgraphNodeType type, const struct inject_launch *kernel,
		    CUstream stream, char *err, size_t err_size)
{
	if (type == CU_GRAPH_NODE_TYPE_KERNEL)
		return inject_kernel_launch_again(kernel, err, err_size);
	CUresult cr = run_other_node(node, type, stream);
	if (cr == CUDA_SUCCESS)
		return 0;
	snprintf(err, err_size, "%s", collector_cu_error(cr));
	return RP_ERR_RELAUNCH;
}

/* A checkpoint of the memory as the graph finds it, put back for the application's own
 * launch, and when each part began (for the launch's progress line). */
struct graph_checkpoint {
	RP_CUpti_Checkpoint saved;
	double started, saved_at, restoring;
};

/* The checkpoint must hold the application's memory only: rangeprof's saved copies and
 * hash sums (inject_session_drop_backups) are freed before it is taken, and those made for
 * the nodes again before it is put back. One freed or grown while the checkpoint holds it
 * is restored into memory that is gone (af08fc5: PyTorch's torch_script.py, a SIGSEGV after
 * its graph's nodes were measured). begin waits for the application's work (*synced gets
 * cuCtxSynchronize's result; no save after a failure) and saves; when it fails there is
 * nothing to put back. end waits for the nodes' work, puts the memory back, frees it. */
static CUptiResult graph_checkpoint_begin(CUcontext ctx, struct graph_checkpoint *c,
					  CUresult *synced)
{
	inject_session_drop_backups(ctx);
	c->started = collector_cost_now();
	*synced = rp_api.cuCtxSynchronize();
	CUptiResult r = *synced == CUDA_SUCCESS ? inject_checkpoint_cupti_save(ctx, &c->saved) :
		CUPTI_ERROR_UNKNOWN;
	if (r == CUPTI_SUCCESS)
		c->saved_at = collector_cost_now();
	return r;
}

static CUptiResult graph_checkpoint_end(CUcontext ctx, struct graph_checkpoint *c)
{
	rp_api.cuCtxSynchronize();
	inject_session_drop_backups(ctx);
	c->restoring = collector_cost_now();
	return inject_checkpoint_cupti_put_back(&c->saved);
}

/* Measures the selected kernel nodes of one graph launch; returns what later launches of
 * the graph can come to: INJECT_GRAPH_PLAN_NOTHING when no kernel node passes -k or the
 * graph is refused (a node unreadable, a collective), whatever -s and -c said this time. */
static enum inject_graph_plan measure_nodes(const struct inject_graph_launch_start *g,
					   const struct inject_graph_nodes *list, CUstream stream,
					   CUcontext ctx, uint32_t context_id, uint64_t index)
{
	/* Which kernel nodes are measured, before anything is done: a graph launch with none
	 * needs no checkpoint. */
	enum inject_graph_plan plan = INJECT_GRAPH_PLAN_NOTHING;
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
			inject_output_report(INJECT_REPORT_GRAPH_NODE,
				     INJECT_CONCERNS(.call = "cuGraphKernelNodeGetParams"), true,
				      "graph %llu: a kernel node's parameters cannot be read; "
				      "the graph launch is not measured", (unsigned long long)g->id);
			goto out;
		}
		char why[320];
		if (waits_for_peers(list->nodes[i], launches[i].mangled, why, sizeof(why))) {
			inject_output_report(INJECT_REPORT_GRAPH_COLLECTIVE,
					     INJECT_CONCERNS(.call = "cuGraphLaunch",
							     .option = "--nvtx-exclude",
							     .mangled = launches[i].mangled), false,
				      "graph %llu: %s; its launches run unmeasured", (unsigned long long)g->id,
				      why);
			chosen = 0;
			goto out;
		}
	}
	for (size_t i = 0; i < list->count; i++) {
		if (list->types[i] != CU_GRAPH_NODE_TYPE_KERNEL ||
		    inject_graphs_node_disabled(g->entry, list->nodes[i]))
			continue;
		const char *demangled = NULL;
		if (!filters.kernel_selected(launches[i].function, launches[i].mangled, &demangled))
			continue;
		plan = INJECT_GRAPH_PLAN_MEASURE;
		if (filters.take_launch()) {
			selected[i] = true;
			names[i] = demangled ? demangled : inject_name_demangle(launches[i].mangled);
			chosen++;
		}
	}
	if (!chosen)
		goto out;
	if (host_nodes)
		inject_output_report(INJECT_REPORT_GRAPH_HOST_NODE,
				     INJECT_CONCERNS(.call = "cuGraphAddHostNode"), false,
			      "graph %llu has host nodes: they run in the application's own graph "
			      "launch only, so a kernel node after one is measured on memory as it "
			      "was before the host function", (unsigned long long)g->id);
	/* The memory as the graph finds it, put back for the application's own launch. */
	struct graph_checkpoint before;
	CUresult cr;
	CUptiResult r = graph_checkpoint_begin(ctx, &before, &cr);
	if (r != CUPTI_SUCCESS) {
		inject_output_report(INJECT_REPORT_GRAPH_CHECKPOINT,
				     INJECT_CONCERNS(.call = "cuptiCheckpointSave", .detail = r),
			      true, "graph %llu launch %llu: saving the memory the graph starts "
			      "from: %s%s; not measured", (unsigned long long)g->id,
			      (unsigned long long)g->launch, collector_cupti_error(r),
			      cr != CUDA_SUCCESS ? " (the application's work before it failed)" : "");
		goto out;
	}
	struct collector_graph where = { g->id, g->launch, 0, list->count };
	for (size_t i = 0; i < list->count; i++) {
		if (inject_graphs_node_disabled(g->entry, list->nodes[i]))
			continue;
		char err[128]; /* the driver's error name */
		int run;
		if (selected[i]) {
			where.node = (long)i;
			launches[i].graph = &where;
			launches[i].index = index;
			struct measurement *m = inject_save_enter(&launches[i], names[i]);
			run = inject_kernel_launch_again(&launches[i], err, sizeof(err));
			if (m)
				inject_save_exit(m, run == 0);
		} else {
			run = run_node(list->nodes[i], list->types[i], &launches[i], stream, err,
				       sizeof(err));
		}
		if (run) {
			inject_output_report(INJECT_REPORT_GRAPH_NODE_RUN,
					     INJECT_CONCERNS(.detail = run),
					     true,
				      "graph %llu: running node %zu outside the graph: %s; the "
				      "nodes after it are not measured", (unsigned long long)g->id,
				      i, err);
			break;
		}
	}
	r = graph_checkpoint_end(ctx, &before);
	double now = collector_cost_now();
	rp_log_progress("graph %llu launch %llu: %zu of %zu kernel nodes measured (%.1f ms, of "
			"which %.1f ms saving and putting back the memory the graph starts from)",
			(unsigned long long)g->id, (unsigned long long)g->launch, chosen, list->kernels,
			now - before.started,
			(before.saved_at - before.started) + (now - before.restoring));
	if (r != CUPTI_SUCCESS)
		inject_output_report(INJECT_REPORT_GRAPH_RESTORE,
				     INJECT_CONCERNS(.call = "cuptiCheckpointRestore", .detail = r),
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

void inject_graph_measure_launch(CUgraphExec exec, CUstream stream, CUcontext ctx,
				 uint32_t context_id, uint64_t index)
{
	INJECT_REPLAY_HELD();
	enum rp_graph_profiling mode = inject_graphs_mode();
	if (mode == RP_GRAPH_NONE)
		return;
	struct inject_graph_launch_start g;
	enum inject_graph_plan plan = INJECT_GRAPH_PLAN_NOTHING;
	/* Before the first goto: out frees it, also for a stale graph. */
	struct inject_graph_nodes list = { 0 };
	if (!inject_graphs_launch_begin(exec, &g)) {
		inject_output_report(INJECT_REPORT_GRAPH_UNKNOWN,
				     INJECT_CONCERNS(.call = "cuGraphLaunch"),
				     false,
			      "cuGraphLaunch of a graph whose instantiation rangeprof did not see; "
			      "its launches are not measured");
		return;
	}
	if (g.stale) {
		inject_output_report(INJECT_REPORT_GRAPH_STALE,
				     INJECT_CONCERNS(.call = "cuGraphLaunch",
						     .detail = INJECT_DETAIL_PAIR(g.stale_call,
										  g.stale_code)),
			      false, "graph %llu: %s; its launches are not measured",
			      (unsigned long long)g.id, g.why_stale);
		goto out;
	}
	char why[256] = "";
	if (inject_graph_nodes_flatten(g.copy, &list, 0, why, sizeof(why))) {
		inject_output_report(INJECT_REPORT_GRAPH_NODES,
				     INJECT_CONCERNS(.call = "cuGraphLaunch",
						     .detail = INJECT_DETAIL_PAIR(list.why_step,
										  list.why_code)),
			      false, "graph %llu: %s; its launches are not measured",
			      (unsigned long long)g.id, why);
		goto out;
	}
	if (mode == RP_GRAPH_NODE) {
		plan = measure_nodes(&g, &list, stream, ctx, context_id, index);
		goto out;
	}
	/* Graph mode: one workload, selected when -k takes one of its kernels; never one
	 * whose relaunch would wait for peers or repeat the application's side effects. */
	const char *effects;
	if (inject_graph_nodes_side_effects(&list, &effects)) {
		inject_output_report(INJECT_REPORT_GRAPH_EFFECTS,
				     INJECT_CONCERNS(.call = "cuGraphLaunch",
						     .option = "--graph-profiling"), false,
			      "graph %llu has %s: --graph-profiling graph does not measure it "
			      "(node mode does)", (unsigned long long)g.id, effects);
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
			inject_output_report(INJECT_REPORT_GRAPH_COLLECTIVE,
					     INJECT_CONCERNS(.call = "cuGraphLaunch",
							     .option = "--nvtx-exclude",
							     .mangled = l.mangled), false,
				      "graph %llu: %s; its launches run unmeasured",
				      (unsigned long long)g.id, peers);
			goto out;
		}
		any |= filters.kernel_selected(l.function, l.mangled, &demangled);
	}
	plan = any ? INJECT_GRAPH_PLAN_MEASURE : INJECT_GRAPH_PLAN_NOTHING;
	if (any && filters.take_launch()) {
		struct collector_graph where = { g.id, g.launch, -1, list.count };
		inject_whole_workload_graph(exec, stream, ctx, context_id, index, &where);
	}
out:
	inject_graph_nodes_free(&list);
	inject_graphs_launch_end(g.entry, g.generation, plan);
}

bool inject_graph_measure_replayable_whole(CUgraphExec exec, CUcontext ctx, char *why,
				    size_t why_size)
{
	INJECT_REPLAY_HELD();
	struct inject_graph_launch_start g;
	if (!inject_graphs_launch_begin(exec, &g)) {
		snprintf(why, why_size, "launches a graph whose instantiation rangeprof did not see");
		return false;
	}
	struct inject_graph_nodes list = { 0 };
	bool ok = false;
	char detail[256] = "";
	if (g.stale) {
		snprintf(why, why_size, "launches graph %llu: %s", (unsigned long long)g.id,
			 g.why_stale);
	} else if (inject_graph_nodes_flatten(g.copy, &list, 0, detail, sizeof(detail))) {
		snprintf(why, why_size, "launches graph %llu: %s", (unsigned long long)g.id, detail);
	} else {
		const char *effects;
		ok = !inject_graph_nodes_side_effects(&list, &effects);
		if (!ok)
			snprintf(why, why_size, "launches graph %llu, which has %s",
				 (unsigned long long)g.id, effects);
		for (size_t i = 0; ok && i < list.count; i++) {
			CUDA_KERNEL_NODE_PARAMS p;
			struct inject_launch l;
			char peers[320];
			if (list.types[i] == CU_GRAPH_NODE_TYPE_KERNEL &&
			    kernel_launch(list.nodes[i], ctx, 0, NULL, &p, &l) &&
			    waits_for_peers(list.nodes[i], l.mangled, peers, sizeof(peers))) {
				snprintf(why, why_size, "launches graph %llu: %s",
					 (unsigned long long)g.id, peers);
				ok = false;
			}
		}
	}
	/* The launch is the application's, counted as such; the plan is left as it was
	 * (no inject_graphs_launch_end). */
	inject_graph_nodes_free(&list);
	return ok;
}
