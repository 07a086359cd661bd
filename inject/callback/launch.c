/* inject/callback/launch.c - the CUPTI callback: classify, ask select.c, dispatch to the
 * measuring files.
 * Runs on the application's launching thread inside the driver call, for every kernel
 * launch of the process. An unselected launch costs the filter checks only (select.h,
 * inline but for the -k name, -s and -c): no driver call, no lock, no allocation (but for
 * the first launches of a thread in a context, which ask early.c whether its device is
 * being set up, so does an allocation; and for a -k name first met by a thread, which
 * demangles it once). An unselected graph launch costs one lookup under the graphs' lock
 * once its first launch found nothing to measure in it (graph_measure.c, graphs.c). Our
 * own launches (flush, replays) come back through here and are let through by a
 * thread-local guard.
 * Also: allocations (memory/track.c), loaded modules (memory/globals.c), contexts created
 * (registered; set up at their first measured launch, or from their device's first launch
 * or allocation on a thread of ours: early.c) and destroyed (their state released), graphs
 * instantiated, updated and launched (graphs.c), stream captures begun and ended
 * (captures.c), and range replay's NVTX hooks and its view of every driver call while a
 * range is recorded (range_workload.c).
 * Takes the replay lock (session.c's), which one measurement, graph launch, early set-up,
 * prepare's host half, context destruction or let-go holds at a time (and init.c's runtime
 * options, through inject_launch_lock_replay); a selected launch holds it from its ENTER
 * to its EXIT. What is selected is select.c's.
 * Calls: select.c (which launches are measured), save.c (a kernel launch, ENTER and EXIT),
 * graph_measure.c (a graph launch), range_workload.c (range replay's hooks), graphs.c,
 * captures.c, contexts.c, early.c, session.c (the replay lock, context destruction),
 * allocations.c, kernel_launch.c (decode, at ENTER), names.c, output.c, nvtx_bridge/,
 * collector/, memory/ (loaded modules).
 * Called by: init.c (subscribes the callback, hands it the filters), control.c (the gate,
 * and rangeprof_prepare's set-up and host half, through launch.h).
 * Lock: none (its own state is thread-local: the inside_replay guard and the pending
 * measurement of a launch between its ENTER and EXIT; and exiting, an atomic that stops
 * let-gos once exit began). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collector/api.h"
#include "common/log.h"
#include "inject/callback/allocations.h"
#include "inject/session/captures.h"
#include "inject/session/contexts.h"
#include "inject/early.h"
#include "inject/inject.h"
#include "inject/graph/graphs.h"
#include "inject/callback/launch.h"
#include "inject/output.h"
#include "inject/range/range.h"
#include "inject/callback/select.h"
#include "memory/memory.h"

static __thread bool inside_replay;
/* A measured launch waiting for its driver call to return (verification): the replay lock
 * stays held from its ENTER to its EXIT. */
static __thread struct measurement *pending;
static __thread CUpti_CallbackId pending_cbid;

void inject_launch_lock_replay(void)
{
	inject_session_lock();
}

void inject_launch_unlock_replay(void)
{
	inject_session_unlock();
}

/* The gate and the exit line's counts are select.c's; control.c and init.c reach them
 * through launch.h. */
void inject_launch_control(void)
{
	inject_select_control();
}

void inject_launch_annotations_open(int delta)
{
	inject_select_annotations_open(delta);
}

bool inject_launch_controlled(void)
{
	return inject_select_controlled();
}

int inject_launch_open_annotations(void)
{
	return inject_select_open_annotations();
}

void inject_launch_counts(struct collector_launch_counts *c)
{
	inject_select_counts(c);
}

void inject_launch_report_totals(void)
{
	inject_select_report_totals();
}

/* --setup early: runs on early.c's thread. Its own driver and CUPTI calls are rangeprof's
 * (inside_replay), and it holds the replay lock like a measurement, so that a selected
 * launch meanwhile waits for the set-up instead of doing it again, and a context being
 * destroyed waits for it. */
static void set_up_early(CUcontext ctx, uint32_t context_id, inject_context_gen gen)
{
	inside_replay = true;
	/* This thread's allocations and module loads must not invalidate a capture another
	 * thread has under way in global mode: relaxed, they are allowed and leave it alone. */
	CUstreamCaptureMode relaxed = CU_STREAM_CAPTURE_MODE_RELAXED;
	rp_api.cuThreadExchangeStreamCaptureMode(&relaxed);
	inject_session_lock();
	if (inject_output_measuring() && !inject_early_exiting() &&
	    inject_contexts_generation(ctx) == gen && rp_api.cuCtxSetCurrent(ctx) == CUDA_SUCCESS) {
		inject_session_set_up_early(ctx, context_id);
		rp_api.cuCtxSetCurrent(NULL);
	}
	inject_session_unlock();
	inside_replay = false;
}

/* Another process rang for the profiling hardware (devlock.h): on the device lock's
 * watcher thread, as a measurement would, so that none of ours is under way meanwhile.
 * Not once the exit handler below has run: CUDA's own teardown may follow it. */
static atomic_bool exiting;
static void let_go_of_idle_profiler(void *device)
{
	inside_replay = true;
	inject_session_lock();
	if (!atomic_load(&exiting) && inject_output_measuring())
		inject_session_let_go((int)(intptr_t)device);
	inject_session_unlock();
	inside_replay = false;
}

/* Waits (bounded, as early.c's handler: a replay that never ends must not hang exit) for
 * a let-go under way, and stops later ones. */
static void stop_letting_go(void)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 5;
	bool locked = inject_session_lock_until(&until);
	atomic_store(&exiting, true);
	if (locked)
		inject_session_unlock();
}

/* The first watcher started (replay lock held): CUDA is initialised by now, so this
 * handler runs before the CUDA runtime's. */
static void watching(void)
{
	static bool registered;
	if (!registered)
		registered = atexit(stop_letting_go) == 0;
}

int inject_launch_configure(const struct rp_options *opts, char *err, size_t err_size)
{
	inject_session_set_hooks(&(struct inject_replay_hooks){ let_go_of_idle_profiler, watching });
	/* Not with --clock-control base: the lock would be taken at the first allocation of a
	 * process that may never measure, and a set-up still locking at exit would outlast the
	 * restore (which runs before the wait for it). */
	inject_early_configure(opts->setup == RP_SETUP_EARLY && opts->clock_control != RP_CLOCK_BASE,
			       set_up_early);
	inject_graph_measure_configure(opts->graph_profiling, &(struct inject_graph_filters){
		inject_select_kernel, inject_select_take_launch });
	return inject_select_configure(opts, err, err_size);
}

static const CUpti_CallbackId launch_cbids[] = {
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
	CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
};

/* Graphs (graphs.c): instantiation, destruction and updates of executable graphs, and
 * stream captures. */
static const CUpti_CallbackId graph_cbids[] = {
	CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate,
	CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate_v2,
	CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags,
	CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams,
	CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuGraphExecDestroy,
	CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate,
	CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate_v2,
	CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams,
	CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams_v2,
	CUPTI_DRIVER_TRACE_CBID_cuGraphExecMemsetNodeSetParams,
	CUPTI_DRIVER_TRACE_CBID_cuGraphExecMemcpyNodeSetParams,
	CUPTI_DRIVER_TRACE_CBID_cuGraphExecHostNodeSetParams,
	CUPTI_DRIVER_TRACE_CBID_cuGraphExecNodeSetParams,
	CUPTI_DRIVER_TRACE_CBID_cuGraphExecChildGraphNodeSetParams,
	CUPTI_DRIVER_TRACE_CBID_cuGraphNodeSetEnabled,
	CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture,
	CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2,
	CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph,
	CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture,
	CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture_ptsz,
};

/* The subscriber, for turning range mode on later (inject_launch_set_range_mode). */
static CUpti_SubscriberHandle subscriber;

int inject_launch_enable(CUpti_SubscriberHandle sub, char *err, size_t err_size)
{
	subscriber = sub;
	CUptiResult r = CUPTI_SUCCESS;
	for (size_t i = 0; r == CUPTI_SUCCESS && i < sizeof(launch_cbids) / sizeof(launch_cbids[0]); i++)
		r = rp_api.cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, launch_cbids[i]);
	if (r == CUPTI_SUCCESS)
		r = inject_allocations_enable(sub);
	for (size_t i = 0; r == CUPTI_SUCCESS && i < sizeof(graph_cbids) / sizeof(graph_cbids[0]); i++)
		r = rp_api.cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, graph_cbids[i]);
	if (r == CUPTI_SUCCESS)
		r = rp_api.cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RESOURCE,
					       CUPTI_CBID_RESOURCE_MODULE_LOADED);
	if (r == CUPTI_SUCCESS)
		r = rp_api.cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RESOURCE,
					       CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING);
	if (r == CUPTI_SUCCESS)
		r = rp_api.cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RESOURCE,
					       CUPTI_CBID_RESOURCE_CONTEXT_CREATED);
	if (r == CUPTI_SUCCESS)
		r = rp_api.cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RESOURCE,
					       CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
	if (r != CUPTI_SUCCESS) {
		snprintf(err, err_size, "cuptiEnableCallback: %s", collector_cupti_error(r));
		return -1;
	}
	return 0;
}

/* ---- range replay (range_workload.c) ------------------------------------------------ */

/* The control API's annotations are start/end ranges of this domain (control.c). */
static bool is_annotation(const struct nvtx_bridge_range_key *key)
{
	return key->start_end && !strcmp(nvtx_bridge_domain_name(key->domain), "rangeprof");
}

/* A range opened: whether it begins a range workload is asked here, as a kernel launch's
 * selection is, before the replay lock: NVTX filter (or, with none, the control API's
 * annotations), the gate, then -s/-c, each range that passes counting as one launch. */
static void on_range_opened(const struct nvtx_bridge_range_key *key)
{
	if (inside_replay || !inject_range_mode() || inject_range_recording() ||
	    inject_range_kernel_fallback() || inject_select_done() || !inject_output_measuring())
		return;
	bool annotation = is_annotation(key);
	if (nvtx_filter_is_empty(inject_select_nvtx_filter) ? !annotation :
	    (inject_select_closed() && !annotation) || !inject_select_nvtx())
		return;
	/* The begin waits for the context's queued work: a capture under way would be
	 * invalidated (as by a measured launch). */
	if (inject_captures_under_way()) {
		inject_output_report(INJECT_REPORT_RANGE_CAPTURE,
				     INJECT_CONCERNS(.call = "cuStreamBeginCapture",
							       .option = "--replay-mode"), false,
			      "a range began while a stream capture was under way; it is not "
			      "measured, so that the capture stays valid");
		return;
	}
	bool selected = inject_select_take_launch();
	uint64_t first_launch = atomic_load_explicit(&inject_select_launches,
						     memory_order_relaxed);
	inside_replay = true;
	inject_session_lock();
	inject_range_opened(key, selected, first_launch);
	inject_session_unlock();
	inside_replay = false;
}

static void on_range_closing(const struct nvtx_bridge_range_key *key)
{
	/* Not asked whether range mode is on: a range recorded when it was switched off
	 * was abandoned then, and one begun must end. */
	if (inside_replay || (!inject_range_recording() && !inject_range_kernel_fallback()))
		return;
	inside_replay = true;
	inject_session_lock();
	inject_range_closing(key, inject_captures_under_way());
	inject_session_unlock();
	inside_replay = false;
}

static const struct nvtx_bridge_range_hooks range_hooks = { on_range_opened, on_range_closing };

int inject_launch_set_range_mode(bool on, char *err, size_t err_size)
{
	static bool set_up;   /* under the replay lock or before the callbacks (init.c) */
	if (on && !set_up && subscriber) {
		/* Every driver call a range makes must be seen to be recorded or refused: the
		 * whole domain, also the ids of a CUPTI newer than the headers built against
		 * (the loop below covers only those). */
		if (rp_api.cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API) !=
		    CUPTI_SUCCESS)
			for (CUpti_CallbackId id = 1; id < CUPTI_DRIVER_TRACE_CBID_SIZE; id++)
				rp_api.cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id);
		nvtx_bridge_set_range_hooks(&range_hooks);
		inject_range_set_graph_check(inject_graph_measure_replayable_whole);
		set_up = true;
	} else if (on && !subscriber) {
		snprintf(err, err_size, "--replay-mode range: the CUPTI callbacks are not set up");
		return -1;
	}
	/* Switching off abandons a range being recorded, whose end keeps its copies and asks
	 * the driver about free memory (session.c): rangeprof's own calls, not the
	 * application's, though made on the thread that sets the option. */
	bool was_inside = inside_replay;
	inside_replay = true;
	inject_range_set_mode(on);
	inside_replay = was_inside;
	return 0;
}

/* A new context: known from now on under a new generation (a destroyed context's handle
 * may come back). Its set-up starts at its device's first kernel launch or allocation
 * (early.c), not here: a set-up started at creation could still run when CUDA's exit
 * handlers, registered after it, tore CUPTI down (a crash: doc/measurements.md, "First
 * measured launch; early and lazy set-up"). */
static void on_context_created(CUcontext ctx)
{
	inject_contexts_created(ctx);
}

/* A context is being destroyed (cuCtxDestroy, cudaDeviceReset, cuDevicePrimaryCtxReset):
 * rangeprof's state for it goes while the context is still valid. Under the replay lock,
 * so that no measurement or set-up uses it meanwhile. */
static void on_context_destroy(CUcontext ctx)
{
	if (inject_output_is_fork_child())
		return;
	inside_replay = true;
	inject_session_lock();
	inject_range_context_destroyed(ctx);
	inject_session_context_destroyed(ctx);
	inject_session_unlock();
	inside_replay = false;
}

/* A selected cuGraphLaunch (graph_measure.c measures its kernel nodes, or the whole launch). */
static void on_graph_launch(CUpti_CallbackId cbid, const CUpti_CallbackData *cb)
{
	uint64_t index = inject_select_next_index();
	inject_select_count_graph_launch();
	if (inject_select_done() || !inject_output_measuring() || inject_select_closed())
		return;
	/* Range mode measures ranges; a graph launch alone only in a refused range. */
	if (inject_range_mode() && !inject_range_kernel_fallback())
		return;
	if (!inject_select_nvtx())
		return;
	inject_select_count_graph_name();
	const cuGraphLaunch_params *p = cb->functionParams;
	/* A graph with nothing to measure (or none at all) stops here, before the replay
	 * lock: another thread may hold it for a whole measurement. */
	if (!inject_graphs_may_measure(p->hGraph))
		return;
	/* As for kernels (kernel_launch.c): a _ptsz call's NULL is the per-thread stream. */
	CUstream stream = !p->hStream && cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz ?
		CU_STREAM_PER_THREAD : p->hStream;
	/* Every capture is counted from its begin (captures.c), so with none counted no
	 * stream captures and the driver need not be asked. */
	if (inject_captures_under_way()) {
		inject_output_report(INJECT_REPORT_GRAPH_CAPTURE,
				     INJECT_CONCERNS(.call = "cuGraphLaunch"), false,
			      "a graph launched while a stream capture was under way is not "
			      "measured, so that the capture stays valid");
		return;
	}
	inject_session_lock();
	inside_replay = true;
	inject_graph_measure_launch(p->hGraph, stream, cb->context, cb->contextUid, index);
	inside_replay = false;
	inject_session_unlock();
}

void inject_launch_prepare_host(int device, bool (*stopping)(void))
{
	if (!inject_output_measuring() || inject_select_done() || !inject_early_enabled() ||
	    stopping())
		return;
	/* Its driver and CUPTI calls are rangeprof's, as set_up_early's. */
	inside_replay = true;
	inject_session_lock();
	/* Asked again once the lock is held: an exit that began while a measurement held it
	 * must not find CUPTI's set-up starting now. */
	if (inject_output_measuring() && !inject_early_exiting() && !stopping())
		inject_session_prepare_host(device);
	inject_session_unlock();
	inside_replay = false;
}

enum inject_early_start inject_launch_prepare(CUcontext ctx)
{
	uint32_t id = 0;
	if (!inject_output_measuring() || inject_select_done() || /* before init: not measuring */
	    rp_api.cuptiGetContextId(ctx, &id) != CUPTI_SUCCESS)
		return INJECT_EARLY_OFF;
	return inject_early_start(ctx, id);
}

static void on_launch(CUpti_CallbackId cbid, const CUpti_CallbackData *cb)
{
	uint64_t index = inject_select_next_index();
	if (inject_select_done() || !inject_output_measuring())
		return;
	inject_early_context_used(cb->context, cb->contextUid);
	if (inject_select_closed())
		return;
	/* Range mode measures ranges; a kernel alone only in a refused range. */
	if (inject_range_mode() && !inject_range_kernel_fallback())
		return;
	if (!inject_select_nvtx())
		return;
	const char *mangled = cb->symbolName ? cb->symbolName : "";
	struct inject_launch l = { .ctx = cb->context, .context_id = cb->contextUid,
				   .mangled = mangled, .index = index };
	if (!inject_kernel_launch_decode((int)cbid, cb->functionParams, &l))
		return;
	const char *demangled = NULL;
	if (!inject_select_launch_kernel(&l, &demangled))
		return;
	/* Every capture is counted from its begin (captures.c): with none under way, no
	 * stream captures and the driver need not be asked. A launch into a capturing stream
	 * only records a graph node: nothing runs now, and replaying would add nodes to the
	 * user's graph. */
	CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
	if (inject_captures_under_way() &&
	    rp_api.cuStreamIsCapturing(l.stream, &capture) == CUDA_SUCCESS &&
	    capture != CU_STREAM_CAPTURE_STATUS_NONE) {
		inject_select_count_captured();
		inject_output_report(INJECT_REPORT_STREAM_CAPTURE,
				     INJECT_CONCERNS(.call = "cuStreamBeginCapture"), false,
			      "kernel %s launched under stream capture only becomes a graph node: "
			      "it is measured when its graph is launched (--graph-profiling)",
			      inject_name_demangle(mangled));
		return;
	}
	/* A capture under way anywhere in the process, in any mode, would be invalidated by
	 * what a measurement calls (synchronisation, allocation): the launch runs unmeasured. */
	if (inject_captures_under_way()) {
		inject_select_count_captured();
		inject_output_report(INJECT_REPORT_CAPTURE_UNDER_WAY,
				     INJECT_CONCERNS(.call = "cuStreamBeginCapture"),
			      false, "a launch of %s came while a stream capture was under way; it is "
			      "not measured, so that the capture stays valid",
			      inject_name_demangle(mangled));
		return;
	}
	if (!inject_select_take_launch())
		return;
	inject_session_lock();
	inside_replay = true;
	pending = inject_save_enter(&l, demangled ? demangled : inject_name_demangle(mangled));
	pending_cbid = cbid;
	inside_replay = false;
	if (!pending)
		inject_session_unlock();
}

/* The driver call of a launch that inject_save_enter() left pending has returned. */
static void on_launch_exit(const CUpti_CallbackData *cb)
{
	struct measurement *m = pending;
	pending = NULL;
	bool launched = cb->functionReturnValue &&
			*(const CUresult *)cb->functionReturnValue == CUDA_SUCCESS;
	inside_replay = true;
	inject_save_exit(m, launched);
	inside_replay = false;
	inject_session_unlock();
}

static bool is_kernel_launch(CUpti_CallbackId cbid)
{
	switch (cbid) {
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
		return true;
	default:
		return false;
	}
}

void CUPTIAPI inject_launch_callback(void *userdata, CUpti_CallbackDomain domain,
				     CUpti_CallbackId cbid, const void *data)
{
	(void)userdata;
	if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
		const CUpti_ResourceData *rd = data;
		if (cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED && rd->resourceDescriptor) {
			const CUpti_ModuleResourceData *md = rd->resourceDescriptor;
			mem_globals_learn(md->pCubin, md->cubinSize);
		} else if (cbid == CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING) {
			mem_globals_forget_modules();
			mem_param_layouts_forget();
		} else if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED && !inside_replay) {
			on_context_created(rd->context);
		} else if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING && !inside_replay) {
			on_context_destroy(rd->context);
		}
		return;
	}
	const CUpti_CallbackData *cb = data;
	if (domain != CUPTI_CB_DOMAIN_DRIVER_API || inside_replay)
		return;
	if (cb->callbackSite == CUPTI_API_EXIT) {
		bool succeeded = cb->functionReturnValue &&
				 *(const CUresult *)cb->functionReturnValue == CUDA_SUCCESS;
		/* The allocation and graph calls are handled at their EXIT. */
		if (pending && cbid == pending_cbid) {
			on_launch_exit(cb);
		} else if (is_kernel_launch(cbid)) {
			/* The EXIT of every launch not being verified: nothing to do, and no
			 * further call on the unselected launches' path. */
		} else if (inject_allocations_on_call(cbid, cb)) {
			/* An allocation comes before the first launch, often long before (a
			 * model's weights): the device's early set-up can start here. */
			if (succeeded && cb->context && inject_output_measuring() &&
			    !inject_select_done())
				inject_early_context_used(cb->context, cb->contextUid);
			/* Out of device memory where the kept copies' headroom said there was
			 * room (memory another process took meanwhile): they go now, so that
			 * the application's retry (PyTorch's, after emptying its cache) finds
			 * it. Not for pinned host memory, which they do not take. */
			size_t bytes = 0;
			if (cb->functionReturnValue &&
			    *(const CUresult *)cb->functionReturnValue == CUDA_ERROR_OUT_OF_MEMORY &&
			    inject_allocations_take_memory(cbid, cb->functionParams, &bytes)) {
				inside_replay = true;
				inject_session_allocation_coming(SIZE_MAX);
				inside_replay = false;
			}
		} else if (!inject_captures_on_call((int)cbid, cb->functionParams, true, succeeded) &&
			   cbid != CUPTI_DRIVER_TRACE_CBID_cuGraphExecDestroy) {
			inject_graphs_on_call((int)cbid, cb->functionParams, succeeded);
		}
		return;
	}
	/* A range being recorded sees every call first (range_workload.c); its kernel and
	 * graph launches are then the range's, not measured on their own. */
	if (inject_range_recording()) {
		inside_replay = true;
		bool ranges = inject_range_on_call(cbid, cb);
		inside_replay = false;
		if (ranges && (is_kernel_launch(cbid) ||
			       cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch ||
			       cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz)) {
			/* Still a launch of the process: the indexes of every later launch,
			 * and the next occurrence's first, count it. Not counted as a graph
			 * launch left unreplayed (the exit line's): the range replays it. */
			inject_select_next_index();
			return;
		}
	}
	if (is_kernel_launch(cbid)) {
		on_launch(cbid, cb);
		return;
	}
	switch (cbid) {
	case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
	case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz:
		on_graph_launch(cbid, cb);
		return;
	case CUPTI_DRIVER_TRACE_CBID_cuGraphExecDestroy:
		/* Forgotten before the handle can be given to another graph. */
		inject_graphs_on_call((int)cbid, cb->functionParams, true);
		return;
	default: {
		/* The application is about to allocate: saved copies kept for the next
		 * measurement go first where it would leave the device short (session.c).
		 * Their frees are rangeprof's own calls. */
		size_t bytes = 0;
		if (inject_allocations_take_memory(cbid, cb->functionParams, &bytes)) {
			inside_replay = true;
			inject_session_allocation_coming(bytes);
			inside_replay = false;
			return;
		}
		/* A capture's begin counts from its ENTER; other calls are handled at EXIT. */
		inject_captures_on_call((int)cbid, cb->functionParams, false, true);
		return;
	}
	}
}
