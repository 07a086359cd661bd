/* inject/callback/select.c - which launches are measured (select.h). Runs on the
 * application's launching threads inside the driver call, through launch.c's callback, and
 * at exit. Owns, and no other file writes:
 * - the filters: the NVTX filter, the -k name (exact or regex:), -s, -c and
 *   --graph-profiling, written once by inject_select_configure() before any callback is
 *   enabled and read-only afterwards, so read without a lock;
 * - the per-thread verdicts of -k (thread-local: no lock);
 * - the -s/-c budget: passed_filters (atomic fetch-add) and done, which the launch that
 *   reaches -c sets; no lock, so that a launch that -s skips never waits for a measurement;
 * - the control API's gate: controlled, annotations_open, annotated and closed (atomics;
 *   control.c serialises the opening and closing under its annotations_lock);
 * - the counts for the exit line (atomics).
 * The atomics that every launch reads or counts are declared in select.h and touched there
 * by inline functions, with the same memory orders as when they were launch.c's statics.
 * graph_measure.c reaches the -k filter and the budget through function pointers launch.c
 * hands it, with the replay lock held, which they do not need.
 * Calls: names.c, collectives.c, output.c, nvtx_bridge/, common/ (regex).
 * Called by: launch.c (never the other way).
 * Lock: none (written once before any callback, thread-local, or atomic). */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/regex.h"
#include "inject/collectives.h"
#include "inject/inject.h"
#include "inject/output.h"
#include "inject/callback/select.h"
#include "nvtx_bridge/nvtx_bridge.h"

/* ---- the state select.h's inline checks read -------------------------------------- */

atomic_uint_fast64_t inject_select_launches;  /* every kernel launch of the process */
atomic_bool inject_select_done_flag;          /* launch-count reached */
/* Under the control API (control.c) launches are selected only inside its annotations:
 * closed is true while controlled and none is open, read first on every launch. */
atomic_bool inject_select_closed_flag;
struct nvtx_filter *inject_select_nvtx_filter;
/* For the exit line of a run that measured nothing (inject_select_counts): launches that
 * passed the NVTX filter, and those that -k passed too; counted only for launches the
 * NVTX filter selected, so that the others cost nothing more. */
atomic_ulong inject_select_nvtx_selected, inject_select_name_selected;
atomic_ulong inject_select_graph_launches, inject_select_captured_launches;

/* ---- this file's own state ---------------------------------------------------------- */

static const char *kernel_exact;          /* NULL: no exact-name filter */
static struct rp_regex *kernel_regex;     /* NULL: no regex: filter */
static const char *kernel_name_given;     /* -k as given (exact or regex:), for messages */
static long launch_skip, launch_count;
static enum rp_graph_profiling graph_profiling;

static atomic_long passed_filters;         /* launches that passed filters (skip/count) */
/* The control API's state, owned here alone (control.c and rangeprof_info read it through
 * launch.h): controlled, once annotations alone select launches (the application attached
 * itself, or opened an annotation); and the annotations open now. */
static atomic_bool controlled;
static atomic_int annotations_open;
static atomic_bool annotated;                /* an annotation was ever opened */
static atomic_ulong collective_launches;

int inject_select_configure(const struct rp_options *opts, char *err, size_t err_size)
{
	graph_profiling = opts->graph_profiling;
	inject_select_nvtx_filter = nvtx_filter_create(opts->nvtx_include, opts->nvtx_include_count,
						      "RANGEPROF_NVTX_INCLUDE", opts->nvtx_exclude,
						      opts->nvtx_exclude_count,
						      "RANGEPROF_NVTX_EXCLUDE", err, err_size);
	if (!inject_select_nvtx_filter)
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

/* ---- the control API's gate --------------------------------------------------------- */

void inject_select_control(void)
{
	/* Once: the gate is set from the count only when control is taken. */
	if (atomic_exchange(&controlled, true))
		return;
	atomic_store(&inject_select_closed_flag, atomic_load(&annotations_open) == 0);
}

bool inject_select_controlled(void)
{
	return atomic_load(&controlled);
}

int inject_select_open_annotations(void)
{
	return atomic_load(&annotations_open);
}

void inject_select_annotations_open(int delta)
{
	/* The caller serialises opening and closing: the count and the flag agree. */
	int open = atomic_fetch_add(&annotations_open, delta) + delta;
	if (delta > 0)
		atomic_store(&annotated, true);
	atomic_store(&inject_select_closed_flag, atomic_load(&controlled) && open == 0);
}

/* ---- the kernel-name filter --------------------------------------------------------- */

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

/* Always inlined into its two callers below: a launch that -k rejects then costs
 * launch.c's callback one call (inject_select_launch_kernel), not two. */
static inline __attribute__((always_inline)) bool
kernel_selected(CUfunction function, const char *mangled, const char **demangled)
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

bool inject_select_kernel(CUfunction function, const char *mangled, const char **demangled)
{
	return kernel_selected(function, mangled, demangled);
}

/* ---- kernels that wait for peers ---------------------------------------------------- */

/* A selected kernel that waits for peers (collectives.c) runs as the application launched
 * it, unmeasured: replayed alone it would wait for ever. */
static bool waits_for_peers(const struct inject_launch *l, const char *demangled)
{
	/* The verdict names.c keeps per name; asked here only when it could keep none. */
	const struct inject_name *name = inject_name_of(l->mangled);
	const char *why = NULL;
	bool peers;
	if (name) {
		peers = name->waits_for_peers;
		why = name->collective;
	} else {
		peers = inject_collective_kernel(l->mangled, &why) ||
			(demangled && inject_collective_kernel(demangled, &why));
	}
	if (!peers)
		return false;
	atomic_fetch_add(&collective_launches, 1);
	const char *kernel = demangled ? demangled : inject_name_demangle(l->mangled);
	inject_output_report(INJECT_REPORT_COLLECTIVE,
			     INJECT_CONCERNS(.kernel = kernel, .mangled = l->mangled,
						    .option = "--nvtx-exclude"), false,
		      "%s is a%s %s kernel, which waits for other GPUs or processes: it is "
		      "never replayed alone, its launches run unmeasured (counted at exit)",
		      kernel, l->cooperative ? " cooperative" : "", why);
	return true;
}

bool inject_select_launch_kernel(const struct inject_launch *l, const char **demangled)
{
	if (!kernel_selected(l->function, l->mangled, demangled))
		return false;
	atomic_fetch_add_explicit(&inject_select_name_selected, 1, memory_order_relaxed);
	return !waits_for_peers(l, *demangled);
}

/* ---- --launch-skip and --launch-count ----------------------------------------------- */

bool inject_select_take_launch(void)
{
	long n = atomic_fetch_add(&passed_filters, 1);
	bool measure = n >= launch_skip && (launch_count < 0 || n - launch_skip < launch_count);
	if (launch_count >= 0 && n + 1 >= launch_skip + launch_count)
		atomic_store(&inject_select_done_flag, true);
	return measure;
}

/* ---- at exit ------------------------------------------------------------------------ */

void inject_select_counts(struct collector_launch_counts *c)
{
	*c = (struct collector_launch_counts){
		.launches = (unsigned long)atomic_load(&inject_select_launches),
		.nvtx_filtered = !nvtx_filter_is_empty(inject_select_nvtx_filter),
		.nvtx_selected = atomic_load(&inject_select_nvtx_selected),
		.nvtx_modules = nvtx_bridge_attached_modules(),
		.kernel_name = kernel_name_given,
		.name_selected = atomic_load(&inject_select_name_selected),
		.launch_skip = launch_skip,
		.taken = (unsigned long)atomic_load(&passed_filters),
		.not_replayed = atomic_load(&inject_select_captured_launches) +
				atomic_load(&collective_launches) +
				(graph_profiling == RP_GRAPH_NONE ?
				 atomic_load(&inject_select_graph_launches) : 0),
		.controlled = atomic_load(&controlled),
		.annotated = atomic_load(&annotated),
	};
	c->hint_expr = nvtx_filter_push_pop_hint(inject_select_nvtx_filter, &c->hint_range);
}

void inject_select_report_totals(void)
{
	unsigned long graphs = graph_profiling == RP_GRAPH_NONE ?
		atomic_load(&inject_select_graph_launches) : 0;
	unsigned long captured = atomic_load(&inject_select_captured_launches);
	unsigned long collectives = atomic_load(&collective_launches);
	if (graphs || captured || collectives)
		inject_output_report(INJECT_REPORT_NOT_REPLAYED_TOTALS, NULL, false,
			      "not replayed: %lu graph launch(es) (--graph-profiling none), %lu kernel "
			      "launch(es) under stream capture, %lu launch(es) of kernels that wait "
			      "for other GPUs or processes", graphs, captured, collectives);
}
