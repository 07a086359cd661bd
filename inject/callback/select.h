/* inject/callback/select.h - which launches are measured: the NVTX filter, the kernel-name
 * filter (-k, exact or regex:), kernels that wait for peers, --launch-skip/--launch-count,
 * the control API's gate, and the counts for the exit line. select.c owns that state; this
 * header reads and counts some of it inline (below), in launch.c's callbacks, and in the
 * control API's and init.c's requests, which go through launch.h; graph_measure.c gets the
 * filters as function pointers from launch.c. select.c never uses launch.c. */
#ifndef INJECT_SELECT_H
#define INJECT_SELECT_H

#include <cuda.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "collector/table.h"
#include "common/options.h"
#include "inject/inject.h"
#include "nvtx_bridge/nvtx_bridge.h"

/* Compiles the NVTX and kernel-name filters and keeps -s, -c and --graph-profiling (for
 * the exit line). Called once by launch.c before any callback is enabled. 0, or -1 with
 * one line in err. */
int inject_select_configure(const struct rp_options *opts, char *err, size_t err_size);

/* Whether -k selects the function (always true without -k); *demangled is its demangled
 * name when the filter had to demangle it, else left alone. Any thread; a per-thread
 * cache answers a function seen before. graph_measure.c's filter for kernel nodes. */
bool inject_select_kernel(CUfunction function, const char *mangled, const char **demangled);
/* A kernel launch that passed the NVTX filter: whether -k selects it (counted for the exit
 * line) and it is not a kernel that waits for peers (counted, and said once per kernel).
 * *demangled (NULL on entry) as inject_select_kernel's. The name check is inlined here, so
 * that a launch which -k rejects costs launch.c one call, no more. */
bool inject_select_launch_kernel(const struct inject_launch *l, const char **demangled);
/* One more launch passed every filter: whether -s and -c leave it to be measured; the
 * launch that reaches -c sets done. Lock-free: a launch that -s skips must not wait for
 * another thread's measurement. Also graph_measure.c's, for each kernel node measured. */
bool inject_select_take_launch(void);

/* The control API (control.c, through launch.c): from now on a launch is selected only
 * while an annotation is open (the first call sets the gate, later ones do nothing);
 * annotations opened (+1) or closed (-1), the caller serialising the calls. This file
 * owns both facts; the accessors are rangeprof_info's. */
void inject_select_control(void);
void inject_select_annotations_open(int delta);
bool inject_select_controlled(void);
int inject_select_open_annotations(void);

/* At exit: what was counted but not replayed (graphs with --graph-profiling none,
 * captured launches, kernels that wait for peers), said once if anything. */
void inject_select_report_totals(void);
/* At exit: what the launches went through, for collector_nothing_measured_why. */
void inject_select_counts(struct collector_launch_counts *c);

/* ---- the checks every launch makes ------------------------------------------------
 * Inline, reading select.c's atomics directly: in launch.c they were static and read
 * without a call, and a call for each of them on every launch of the process would make
 * the unselected launch slower. Declared hidden so that they are reached PC-relative, as
 * the statics were, not through the GOT. Written only by select.c and by the functions
 * below. Relaxed on the launch path (index, done, closed, the NVTX and name counts: -c
 * is enforced by take_launch's sequentially consistent count, not by done); the graph and
 * capture counts and the stores are sequentially consistent. */
#define INJECT_SELECT_STATE extern __attribute__((visibility("hidden")))
INJECT_SELECT_STATE atomic_uint_fast64_t inject_select_launches;   /* every kernel launch */
INJECT_SELECT_STATE atomic_bool inject_select_done_flag;            /* -c reached */
INJECT_SELECT_STATE atomic_bool inject_select_closed_flag;          /* the control gate */
INJECT_SELECT_STATE struct nvtx_filter *inject_select_nvtx_filter;  /* set before callbacks */
INJECT_SELECT_STATE atomic_ulong inject_select_nvtx_selected, inject_select_name_selected;
INJECT_SELECT_STATE atomic_ulong inject_select_graph_launches, inject_select_captured_launches;

/* Counts a kernel or graph launch; returns its process-wide index. Every launch. */
static inline uint64_t inject_select_next_index(void)
{
	return atomic_fetch_add_explicit(&inject_select_launches, 1, memory_order_relaxed);
}

/* Whether -c is reached: nothing more is selected. Every launch, relaxed. */
static inline bool inject_select_done(void)
{
	return atomic_load_explicit(&inject_select_done_flag, memory_order_relaxed);
}

/* Whether the control API's gate is closed: controlled, and no annotation open. Every
 * launch not done, relaxed. */
static inline bool inject_select_closed(void)
{
	return atomic_load_explicit(&inject_select_closed_flag, memory_order_relaxed);
}

/* Whether the NVTX filter selects the calling thread's ranges now; a launch it selects is
 * counted for the exit line. No NVTX call at all without expressions. */
static inline bool inject_select_nvtx(void)
{
	if (!nvtx_filter_is_empty(inject_select_nvtx_filter) &&
	    !nvtx_filter_selects(inject_select_nvtx_filter, nvtx_bridge_snapshot()))
		return false;
	atomic_fetch_add_explicit(&inject_select_nvtx_selected, 1, memory_order_relaxed);
	return true;
}

/* A graph launch: counted (not replayed with --graph-profiling none). */
static inline void inject_select_count_graph_launch(void)
{
	atomic_fetch_add(&inject_select_graph_launches, 1);
}

/* A graph launch the NVTX filter selected: -k is applied to its kernel nodes later
 * (graph_measure.c), so for the exit line it counts as selected by name as well. */
static inline void inject_select_count_graph_name(void)
{
	atomic_fetch_add_explicit(&inject_select_name_selected, 1, memory_order_relaxed);
}

/* A selected kernel launch that runs unmeasured because a stream capture is under way. */
static inline void inject_select_count_captured(void)
{
	atomic_fetch_add(&inject_select_captured_launches, 1);
}

#endif
