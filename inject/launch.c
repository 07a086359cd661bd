/* inject/launch.c - the CUPTI callback: classify, select, dispatch to the replay.
 * Runs on the application's launching thread inside the driver call, for every kernel
 * launch of the process. An unselected launch costs the filter checks only: no driver
 * call, no lock, no allocation (but for the first launches of a thread in a context,
 * which ask early.c whether its device is being set up, so does an allocation; and for a
 * -k name first met by a thread, which demangles it once). An unselected graph launch
 * costs one lookup under the graphs' lock once its first launch found nothing to measure
 * in it (graphs.c). Our own
 * launches (flush, replays) come back through here and are let through by a thread-local
 * guard. Also: allocations (memory/track.c),
 * loaded modules (memory/globals.c), contexts created (registered; set up at their first
 * measured launch, or from their device's first launch or allocation on a thread of
 * ours: early.c) and destroyed (their state released), graphs instantiated, updated and
 * launched (graphs.c), stream captures begun and ended (captures.c).
 * Calls nvtx_bridge/ (snapshot, filter), collector/api, memory/ and inject/ replay,
 * graphs, captures, launches, collectives, contexts, output and names. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collector/api.h"
#include "common/log.h"
#include "common/regex.h"
#include "inject/captures.h"
#include "inject/collectives.h"
#include "inject/contexts.h"
#include "inject/early.h"
#include "inject/inject.h"
#include "inject/graphs.h"
#include "inject/launch.h"
#include "inject/output.h"
#include "memory/memory.h"
#include "nvtx_bridge/nvtx_bridge.h"

static struct nvtx_filter *filter;
static const char *kernel_exact;          /* NULL: no exact-name filter */
static struct rp_regex *kernel_regex;     /* NULL: no regex: filter */
static const char *kernel_name_given;     /* -k as given (exact or regex:), for messages */
static long launch_skip, launch_count;

static atomic_uint_fast64_t launch_index;  /* every kernel launch of the process */
static atomic_long passed_filters;         /* launches that passed filters (skip/count) */
static atomic_bool done;                   /* launch-count reached */
/* Under the control API (control.c) launches are selected only inside its annotations:
 * closed is true while controlled and none is open, read first on every launch. */
static atomic_bool controlled;
static atomic_int annotations_open;
static atomic_bool closed;
static atomic_ulong graph_launches, captured_launches, collective_launches;
/* For the exit line of a run that measured nothing (inject_launch_counts): launches that
 * passed the NVTX filter, and those that -k passed too; counted only for launches the
 * NVTX filter selected, so that the others cost nothing more. */
static atomic_ulong nvtx_selected, name_selected;
static atomic_bool annotated;                /* an annotation was ever opened */
static pthread_mutex_t replay_lock = PTHREAD_MUTEX_INITIALIZER;
static __thread bool inside_replay;
/* A measured launch waiting for its driver call to return (verification): the replay lock
 * stays held from its ENTER to its EXIT. */
static __thread struct measurement *pending;
static __thread CUpti_CallbackId pending_cbid;

static bool kernel_selected(CUfunction function, const char *mangled, const char **demangled);

void inject_launch_lock_replay(void)
{
	pthread_mutex_lock(&replay_lock);
}

void inject_launch_unlock_replay(void)
{
	pthread_mutex_unlock(&replay_lock);
}

void inject_launch_control(void)
{
	atomic_store(&controlled, true);
	atomic_store(&closed, atomic_load(&annotations_open) == 0);
}

void inject_launch_annotations_open(int delta)
{
	/* The caller serialises opening and closing: the count and the flag agree. */
	int open = atomic_fetch_add(&annotations_open, delta) + delta;
	if (delta > 0)
		atomic_store(&annotated, true);
	atomic_store(&closed, atomic_load(&controlled) && open == 0);
}
static bool take_launch(void);
static enum rp_graph_profiling graph_profiling;

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
	pthread_mutex_lock(&replay_lock);
	if (inject_measuring() && !inject_early_exiting() &&
	    inject_contexts_generation(ctx) == gen && rp_api.cuCtxSetCurrent(ctx) == CUDA_SUCCESS) {
		inject_replay_set_up_early(ctx, context_id);
		rp_api.cuCtxSetCurrent(NULL);
	}
	pthread_mutex_unlock(&replay_lock);
	inside_replay = false;
}

/* Another process rang for the profiling hardware (devlock.h): on the device lock's
 * watcher thread, as a measurement would, so that none of ours is under way meanwhile.
 * Not once the exit handler below has run: CUDA's own teardown may follow it. */
static atomic_bool exiting;
static void let_go_of_idle_profiler(void *device)
{
	inside_replay = true;
	pthread_mutex_lock(&replay_lock);
	if (!atomic_load(&exiting) && inject_measuring())
		inject_replay_let_go((int)(intptr_t)device);
	pthread_mutex_unlock(&replay_lock);
	inside_replay = false;
}

/* Waits (bounded, as early.c's handler: a replay that never ends must not hang exit) for
 * a let-go under way, and stops later ones. */
static void stop_letting_go(void)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 5;
	bool locked = pthread_mutex_timedlock(&replay_lock, &until) == 0;
	atomic_store(&exiting, true);
	if (locked)
		pthread_mutex_unlock(&replay_lock);
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
	inject_replay_set_hooks(&(struct inject_replay_hooks){ let_go_of_idle_profiler, watching });
	graph_profiling = opts->graph_profiling;
	/* Not with --clock-control base: the lock would be taken at the first allocation of a
	 * process that may never measure, and a set-up still locking at exit would outlast the
	 * restore (which runs before the wait for it). */
	inject_early_configure(opts->setup == RP_SETUP_EARLY && opts->clock_control != RP_CLOCK_BASE,
			       set_up_early);
	inject_graphs_configure(opts->graph_profiling, &(struct inject_graph_filters){
		kernel_selected, take_launch });
	filter = nvtx_filter_create(opts->nvtx_include, opts->nvtx_include_count,
				    "RANGEPROF_NVTX_INCLUDE", opts->nvtx_exclude,
				    opts->nvtx_exclude_count, "RANGEPROF_NVTX_EXCLUDE", err, err_size);
	if (!filter)
		return -1;
	if (opts->kernel_name && !strncmp(opts->kernel_name, "regex:", 6)) {
		/* Validated by the options already. common/regex compiles in bounded time and
		 * matches in linear time; glibc's regcomp does neither on hostile patterns. */
		char why[256];
		if (!(kernel_regex = rp_regex_compile(opts->kernel_name + 6, why, sizeof(why)))) {
			snprintf(err, err_size, "RANGEPROF_KERNEL_NAME: invalid regular expression: "
				 "%s", why);
			return -1;
		}
	} else {
		kernel_exact = opts->kernel_name;
	}
	kernel_name_given = opts->kernel_name;
	launch_skip = opts->launch_skip;
	launch_count = opts->launch_count;
	return 0;
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

/* The calls that create and free memory a kernel can write: memory/track.c keeps the
 * list that verification hashes. */
static const CUpti_CallbackId memory_cbids[] = {
	CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged,
	CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync,
	CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync,
	CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc,
	CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemMap,
	CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync,
	CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost,
	CUPTI_DRIVER_TRACE_CBID_cuMemHostUnregister,
	CUPTI_DRIVER_TRACE_CBID_cuMemUnmap,
	/* Memory of other processes and APIs: a kernel can write it as well, and reach.c
	 * takes only tracked memory for the application's. */
	CUPTI_DRIVER_TRACE_CBID_cuIpcOpenMemHandle_v2,
	CUPTI_DRIVER_TRACE_CBID_cuIpcCloseMemHandle,
	CUPTI_DRIVER_TRACE_CBID_cuMemPoolImportPointer,
	CUPTI_DRIVER_TRACE_CBID_cuExternalMemoryGetMappedBuffer,
	CUPTI_DRIVER_TRACE_CBID_cuGraphicsResourceGetMappedPointer_v2,
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

int inject_launch_enable(CUpti_SubscriberHandle sub, char *err, size_t err_size)
{
	CUptiResult r = CUPTI_SUCCESS;
	for (size_t i = 0; r == CUPTI_SUCCESS && i < sizeof(launch_cbids) / sizeof(launch_cbids[0]); i++)
		r = rp_api.cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, launch_cbids[i]);
	for (size_t i = 0; r == CUPTI_SUCCESS && i < sizeof(memory_cbids) / sizeof(memory_cbids[0]); i++)
		r = rp_api.cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, memory_cbids[i]);
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

/* A new context: known from now on under a new generation (a destroyed context's handle
 * may come back). Its set-up starts at its device's first kernel launch or allocation
 * (early.c), not here: a set-up started at creation could still run when CUDA's exit
 * handlers, registered after it, tore CUPTI down (a crash, bench/NOTES.md). */
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
	pthread_mutex_lock(&replay_lock);
	inject_replay_context_destroyed(ctx);
	pthread_mutex_unlock(&replay_lock);
	inside_replay = false;
}

/* Memory whose size the call does not say (another process's allocation, opened by
 * handle): the driver knows its range. */
static void track_whole_allocation(CUdeviceptr p)
{
	CUdeviceptr base;
	size_t size;
	if (rp_api.cuMemGetAddressRange(&base, &size, p) == CUDA_SUCCESS)
		mem_track_add(base, size);
}

/* Feeds memory/track.c from an allocation call that returned; false when cbid is not one. */
static bool on_memory_call(CUpti_CallbackId cbid, const CUpti_CallbackData *cb)
{
	const void *p = cb->functionParams;
	bool ok = cb->functionReturnValue &&
		  *(const CUresult *)cb->functionReturnValue == CUDA_SUCCESS;
	switch (cbid) {
	case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2: {
		const cuMemAlloc_v2_params *a = p;
		if (ok)
			mem_track_add(*a->dptr, a->bytesize);
		return true;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2: {
		const cuMemAllocPitch_v2_params *a = p;
		if (ok)
			mem_track_add(*a->dptr, *a->pPitch * a->Height);
		return true;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged: {
		const cuMemAllocManaged_params *a = p;
		if (ok)
			mem_track_add(*a->dptr, a->bytesize);
		return true;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz: {
		const cuMemAllocAsync_params *a = p;
		if (ok)
			mem_track_add(*a->dptr, a->bytesize);
		return true;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync:
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz: {
		const cuMemAllocFromPoolAsync_params *a = p;
		if (ok)
			mem_track_add(*a->dptr, a->bytesize);
		return true;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc: {
		const cuMemHostAlloc_params *a = p;
		if (ok)
			mem_track_add((CUdeviceptr)*a->pp, a->bytesize);
		return true;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2: {
		const cuMemAllocHost_v2_params *a = p;
		if (ok)
			mem_track_add((CUdeviceptr)*a->pp, a->bytesize);
		return true;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister_v2: {
		const cuMemHostRegister_v2_params *a = p;
		if (ok)
			mem_track_add((CUdeviceptr)a->p, a->bytesize);
		return true;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuMemMap: {
		const cuMemMap_params *a = p;
		if (ok)
			mem_track_add(a->ptr, a->size);
		return true;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2:
		if (ok)
			mem_track_remove(((const cuMemFree_v2_params *)p)->dptr);
		return true;
	case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync:
	case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz:
		if (ok)
			mem_track_remove(((const cuMemFreeAsync_params *)p)->dptr);
		return true;
	case CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost:
		if (ok)
			mem_track_remove((CUdeviceptr)((const cuMemFreeHost_params *)p)->p);
		return true;
	case CUPTI_DRIVER_TRACE_CBID_cuMemHostUnregister:
		if (ok)
			mem_track_remove((CUdeviceptr)((const cuMemHostUnregister_params *)p)->p);
		return true;
	case CUPTI_DRIVER_TRACE_CBID_cuMemUnmap: {
		const cuMemUnmap_params *a = p;
		if (ok)
			mem_track_remove_range(a->ptr, a->size);
		return true;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuIpcOpenMemHandle_v2:
		if (ok)
			track_whole_allocation(*((const cuIpcOpenMemHandle_v2_params *)p)->pdptr);
		return true;
	case CUPTI_DRIVER_TRACE_CBID_cuIpcCloseMemHandle:
		if (ok)
			mem_track_remove(((const cuIpcCloseMemHandle_params *)p)->dptr);
		return true;
	case CUPTI_DRIVER_TRACE_CBID_cuMemPoolImportPointer:
		if (ok)
			track_whole_allocation(*((const cuMemPoolImportPointer_params *)p)->ptr_out);
		return true;
	case CUPTI_DRIVER_TRACE_CBID_cuExternalMemoryGetMappedBuffer: {
		const cuExternalMemoryGetMappedBuffer_params *a = p;
		if (ok)
			mem_track_add(*a->devPtr, a->bufferDesc->size);
		return true;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuGraphicsResourceGetMappedPointer_v2: {
		const cuGraphicsResourceGetMappedPointer_v2_params *a = p;
		if (ok && a->pDevPtr && a->pSize)
			mem_track_add(*a->pDevPtr, *a->pSize);
		return true;
	}
	default:
		return false;
	}
}

static bool name_matches(const char *mangled, const char *demangled)
{
	if (kernel_regex)
		return rp_regex_search(kernel_regex, demangled) ||
		       rp_regex_search(kernel_regex, mangled);
	/* ncu matches the function name too: "vadd" for "vadd(float*, ...)". */
	size_t len = strlen(kernel_exact);
	return !strcmp(kernel_exact, mangled) || !strcmp(kernel_exact, demangled) ||
	       (!strncmp(kernel_exact, demangled, len) && demangled[len] == '(');
}

/* The name filter's verdict per function, per thread: a program launches the same few
 * kernels over and over, and demangling or a regex on every launch would cost more than
 * the rest of the callback. The interned mangled name guards against a handle reused
 * for another function after a module unload. */
struct verdict {
	CUfunction function;
	const char *mangled;         /* interned by names.c */
	const char *demangled;
	bool selected;
};
#define VERDICTS 64
static __thread struct verdict verdicts[VERDICTS];

static bool kernel_selected(CUfunction function, const char *mangled, const char **demangled)
{
	if (!kernel_exact && !kernel_regex)
		return true;
	struct verdict *v = &verdicts[((uintptr_t)function >> 4) % VERDICTS];
	if (v->function == function && v->mangled && !strcmp(v->mangled, mangled)) {
		*demangled = v->demangled;
		return v->selected;
	}
	const char *interned = NULL;
	*demangled = inject_name_intern(mangled, &interned);
	bool selected = name_matches(mangled, *demangled);
	*v = (struct verdict){ function, interned, *demangled, selected };
	return selected;
}

/* A selected kernel that waits for peers (collectives.c) runs as the application launched
 * it, unmeasured: replayed alone it would wait for ever. */
static bool waits_for_peers(const struct inject_launch *l, const char *demangled)
{
	const char *why = NULL;
	if (!inject_is_collective(l->mangled, &why) &&
	    !(demangled && inject_is_collective(demangled, &why)))
		return false;
	atomic_fetch_add(&collective_launches, 1);
	const char *kernel = demangled ? demangled : inject_demangle(l->mangled);
	inject_report("collective", INJECT_CONCERNS(.kernel = kernel, .mangled = l->mangled,
						    .option = "--nvtx-exclude"), false,
		      "%s is a%s %s kernel, which waits for other GPUs or processes: it is "
		      "never replayed alone, its launches run unmeasured (counted at exit)",
		      kernel, l->cooperative ? " cooperative" : "", why);
	return true;
}

/* One more launch passed every filter: whether -s and -c leave it to be measured.
 * Counted without the lock: a launch that -s skips must not wait for another thread's
 * measurement (its replays, or its wait for the device's turn). */
static bool take_launch(void)
{
	long n = atomic_fetch_add(&passed_filters, 1);
	bool measure = n >= launch_skip && (launch_count < 0 || n - launch_skip < launch_count);
	if (launch_count >= 0 && n + 1 >= launch_skip + launch_count)
		atomic_store(&done, true);
	return measure;
}

/* A selected cuGraphLaunch (graphs.c measures its kernel nodes, or the whole launch). */
static void on_graph_launch(CUpti_CallbackId cbid, const CUpti_CallbackData *cb)
{
	uint64_t index = atomic_fetch_add_explicit(&launch_index, 1, memory_order_relaxed);
	atomic_fetch_add(&graph_launches, 1);
	if (atomic_load_explicit(&done, memory_order_relaxed) || !inject_measuring() ||
	    atomic_load_explicit(&closed, memory_order_relaxed))
		return;
	if (!nvtx_filter_is_empty(filter) && !nvtx_filter_selects(filter, nvtx_bridge_snapshot()))
		return;
	atomic_fetch_add_explicit(&nvtx_selected, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&name_selected, 1, memory_order_relaxed);
	const cuGraphLaunch_params *p = cb->functionParams;
	/* A graph with nothing to measure (or none at all) stops here, before the replay
	 * lock: another thread may hold it for a whole measurement. */
	if (!inject_graphs_may_measure(p->hGraph))
		return;
	/* As for kernels (launches.c): a _ptsz call's NULL is the per-thread stream. */
	CUstream stream = !p->hStream && cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz ?
		CU_STREAM_PER_THREAD : p->hStream;
	/* Every capture is counted from its begin (captures.c), so with none counted no
	 * stream captures and the driver need not be asked. */
	if (inject_captures_under_way()) {
		inject_report("graph-capture", INJECT_CONCERNS(.call = "cuGraphLaunch"), false,
			      "a graph launched while a stream capture was under way is not "
			      "measured, so that the capture stays valid");
		return;
	}
	pthread_mutex_lock(&replay_lock);
	inside_replay = true;
	inject_graphs_launch(p->hGraph, stream, cb->context, cb->contextUid, index);
	inside_replay = false;
	pthread_mutex_unlock(&replay_lock);
}

static void on_launch(CUpti_CallbackId cbid, const CUpti_CallbackData *cb)
{
	uint64_t index = atomic_fetch_add_explicit(&launch_index, 1, memory_order_relaxed);
	if (atomic_load_explicit(&done, memory_order_relaxed) || !inject_measuring())
		return;
	inject_early_context_used(cb->context, cb->contextUid);
	if (atomic_load_explicit(&closed, memory_order_relaxed))
		return;
	if (!nvtx_filter_is_empty(filter) && !nvtx_filter_selects(filter, nvtx_bridge_snapshot()))
		return;
	atomic_fetch_add_explicit(&nvtx_selected, 1, memory_order_relaxed);
	const char *mangled = cb->symbolName ? cb->symbolName : "";
	struct inject_launch l = { .ctx = cb->context, .context_id = cb->contextUid,
				   .mangled = mangled, .index = index };
	if (!inject_launch_decode((int)cbid, cb->functionParams, &l))
		return;
	const char *demangled = NULL;
	if (!kernel_selected(l.function, mangled, &demangled))
		return;
	atomic_fetch_add_explicit(&name_selected, 1, memory_order_relaxed);
	if (waits_for_peers(&l, demangled))
		return;
	/* Every capture is counted from its begin (captures.c): with none under way, no
	 * stream captures and the driver need not be asked. A launch into a capturing stream
	 * only records a graph node: nothing runs now, and replaying would add nodes to the
	 * user's graph. */
	CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
	if (inject_captures_under_way() &&
	    rp_api.cuStreamIsCapturing(l.stream, &capture) == CUDA_SUCCESS &&
	    capture != CU_STREAM_CAPTURE_STATUS_NONE) {
		atomic_fetch_add(&captured_launches, 1);
		inject_report("stream-capture", INJECT_CONCERNS(.call = "cuStreamBeginCapture"), false,
			      "kernel %s launched under stream capture only becomes a graph node: "
			      "it is measured when its graph is launched (--graph-profiling)",
			      inject_demangle(mangled));
		return;
	}
	/* A capture under way anywhere in the process, in any mode, would be invalidated by
	 * what a measurement calls (synchronisation, allocation): the launch runs unmeasured. */
	if (inject_captures_under_way()) {
		atomic_fetch_add(&captured_launches, 1);
		inject_report("capture-under-way", INJECT_CONCERNS(.call = "cuStreamBeginCapture"),
			      false, "a launch of %s came while a stream capture was under way; it is "
			      "not measured, so that the capture stays valid",
			      inject_demangle(mangled));
		return;
	}
	if (!take_launch())
		return;
	pthread_mutex_lock(&replay_lock);
	inside_replay = true;
	pending = inject_replay_enter(&l, demangled ? demangled : inject_demangle(mangled));
	pending_cbid = cbid;
	inside_replay = false;
	if (!pending)
		pthread_mutex_unlock(&replay_lock);
}

/* The driver call of a launch that inject_replay_enter() left pending has returned. */
static void on_launch_exit(const CUpti_CallbackData *cb)
{
	struct measurement *m = pending;
	pending = NULL;
	bool launched = cb->functionReturnValue &&
			*(const CUresult *)cb->functionReturnValue == CUDA_SUCCESS;
	inside_replay = true;
	inject_replay_exit(m, launched);
	inside_replay = false;
	pthread_mutex_unlock(&replay_lock);
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
		} else if (on_memory_call(cbid, cb)) {
			/* An allocation comes before the first launch, often long before (a
			 * model's weights): the device's early set-up can start here. */
			if (succeeded && inject_measuring() &&
			    !atomic_load_explicit(&done, memory_order_relaxed))
				inject_early_context_used(cb->context, cb->contextUid);
		} else if (!inject_captures_on_call((int)cbid, cb->functionParams, true, succeeded) &&
			   cbid != CUPTI_DRIVER_TRACE_CBID_cuGraphExecDestroy) {
			inject_graphs_on_call((int)cbid, cb->functionParams, succeeded);
		}
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
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
		on_launch(cbid, cb);
		return;
	default:
		/* A capture's begin counts from its ENTER; other calls are handled at EXIT. */
		inject_captures_on_call((int)cbid, cb->functionParams, false, true);
		return;
	}
}

void inject_launch_counts(struct collector_launch_counts *c)
{
	*c = (struct collector_launch_counts){
		.launches = (unsigned long)atomic_load(&launch_index),
		.nvtx_filtered = !nvtx_filter_is_empty(filter),
		.nvtx_selected = atomic_load(&nvtx_selected),
		.nvtx_modules = nvtx_bridge_attached_modules(),
		.kernel_name = kernel_name_given,
		.name_selected = atomic_load(&name_selected),
		.launch_skip = launch_skip,
		.taken = (unsigned long)atomic_load(&passed_filters),
		.not_replayed = atomic_load(&captured_launches) + atomic_load(&collective_launches) +
				(graph_profiling == RP_GRAPH_NONE ? atomic_load(&graph_launches) : 0),
		.controlled = atomic_load(&controlled),
		.annotated = atomic_load(&annotated),
	};
	c->hint_expr = nvtx_filter_push_pop_hint(filter, &c->hint_range);
}

void inject_launch_report_totals(void)
{
	unsigned long graphs = graph_profiling == RP_GRAPH_NONE ? atomic_load(&graph_launches) : 0;
	unsigned long captured = atomic_load(&captured_launches);
	unsigned long collectives = atomic_load(&collective_launches);
	if (graphs || captured || collectives)
		inject_report("not-replayed-totals", NULL, false,
			      "not replayed: %lu graph launch(es) (--graph-profiling none), %lu kernel "
			      "launch(es) under stream capture, %lu launch(es) of kernels that wait "
			      "for other GPUs or processes", graphs, captured, collectives);
}
