/* tests/unit/inject/select_test.c - which launches are measured (inject/callback/select.c) without
 * a GPU: the kernel-name filter, --launch-skip/--launch-count, the control API's gate,
 * kernels that wait for peers and the counts for the exit line. select.c, names.c and
 * collectives.c are linked here, with a stand-in for output.c's inject_output_report (the one
 * call out of select.c that would need the output and the collector). Each Criterion test
 * runs in its own process, so each starts from select.c's initial state. */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/options.h"
#include "inject/inject.h"
#include "inject/output.h"
#include "inject/callback/select.h"
#include "nvtx_bridge/slots.h"

/* ---- stand-in for output.c -------------------------------------------------------- */

static int reports;
static enum inject_report last_report;
static char last_message[512];

void inject_output_report(enum inject_report report, const struct inject_concerns *c,
			  bool error, const char *fmt, ...)
{
	(void)c;
	(void)error;
	reports++;
	last_report = report;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(last_message, sizeof(last_message), fmt, ap);
	va_end(ap);
}

/* ---- helpers ---------------------------------------------------------------------- */

static struct rp_options opts;

static void setup(void) { rp_options_init(&opts); }
static void teardown(void) { rp_options_finish(&opts); }

static void set(enum rp_option id, const char *value)
{
	char err[512];
	cr_assert_eq(rp_option_set(&opts, id, value, "test", err, sizeof(err)), 0, "%s", err);
}

static void configure(void)
{
	char err[512] = "";
	cr_assert_eq(inject_select_configure(&opts, err, sizeof(err)), 0, "%s", err);
}

/* Distinct handles for distinct kernels: the filter keys its per-thread verdicts on them. */
#define FUNCTION(n) ((CUfunction)(uintptr_t)(0x1000 * (n)))

static bool kernel(int n, const char *mangled)
{
	const char *demangled = NULL;
	return inject_select_kernel(FUNCTION(n), mangled, &demangled);
}

/* A kernel launch as launch.c hands it over, past the NVTX filter. */
static bool launch(int n, const char *mangled)
{
	struct inject_launch l = { .function = FUNCTION(n), .mangled = mangled };
	const char *demangled = NULL;
	return inject_select_launch_kernel(&l, &demangled);
}

static struct collector_launch_counts counts(void)
{
	struct collector_launch_counts c;
	inject_select_counts(&c);
	return c;
}

TestSuite(select, .init = setup, .fini = teardown);

/* ---- the kernel-name filter (-k) -------------------------------------------------- */

Test(select, without_kernel_name_every_kernel_is_selected_without_demangling)
{
	configure();
	const char *demangled = NULL;
	cr_assert(inject_select_kernel(FUNCTION(1), "_Z4vaddPfS_S_", &demangled));
	cr_assert_null(demangled, "no name filter: nothing to demangle");
	cr_assert(kernel(2, "anything"));
}

Test(select, exact_name_selects_the_mangled_name_or_the_demangled_one)
{
	set(RP_OPT_KERNEL_NAME, "_Z4vaddPfS_S_");
	configure();
	cr_assert(kernel(1, "_Z4vaddPfS_S_"));
	cr_assert_not(kernel(2, "_Z4vsubPfS_S_"));
}

Test(select, exact_name_selects_the_demangled_name_in_full)
{
	set(RP_OPT_KERNEL_NAME, "vadd(float*, float*, float*)");
	configure();
	cr_assert(kernel(1, "_Z4vaddPfS_S_"));
	cr_assert_not(kernel(2, "_Z4vaddPdS_S_"), "vadd(double*, ...)");
}

Test(select, exact_name_selects_the_function_name_before_its_parameters)
{
	set(RP_OPT_KERNEL_NAME, "vadd");
	configure();
	const char *demangled = NULL;
	cr_assert(inject_select_kernel(FUNCTION(1), "_Z4vaddPfS_S_", &demangled),
		  "ncu selects vadd(float*, ...) for 'vadd'");
	cr_assert_str_eq(demangled, "vadd(float*, float*, float*)");
	cr_assert(kernel(2, "vadd"), "a C kernel's name is its mangled name");
	cr_assert_not(kernel(3, "_Z5vadd2PfS_S_"), "vadd2(...) is another kernel");
	cr_assert_not(kernel(4, "vadd2"));
	cr_assert_not(kernel(5, "my_vadd"));
}

Test(select, regex_searches_the_demangled_name)
{
	set(RP_OPT_KERNEL_NAME, "regex:^v(add|sub)\\(");
	configure();
	cr_assert(kernel(1, "_Z4vaddPfS_S_"));
	cr_assert(kernel(2, "_Z4vsubPfS_S_"));
	cr_assert_not(kernel(3, "_Z4vmulPfS_S_"));
}

Test(select, regex_searches_the_mangled_name)
{
	set(RP_OPT_KERNEL_NAME, "regex:^_Z4vmul");
	configure();
	cr_assert(kernel(1, "_Z4vmulPfS_S_"));
	cr_assert_not(kernel(2, "_Z4vaddPfS_S_"));
}

Test(select, a_function_handle_reused_for_another_kernel_gets_a_new_verdict)
{
	set(RP_OPT_KERNEL_NAME, "vadd");
	configure();
	cr_assert(kernel(1, "vadd"));
	cr_assert(kernel(1, "vadd"), "the verdict kept for the handle");
	cr_assert_not(kernel(1, "vsub"), "a module unloaded, the handle given to vsub");
	cr_assert(kernel(1, "vadd"));
}

/* ---- --launch-skip and --launch-count --------------------------------------------- */

Test(select, skip_two_count_three_takes_launches_three_to_five_then_is_done)
{
	set(RP_OPT_LAUNCH_SKIP, "2");
	set(RP_OPT_LAUNCH_COUNT, "3");
	configure();
	bool expected[] = { false, false, true, true, true };
	for (size_t i = 0; i < sizeof(expected) / sizeof(expected[0]); i++) {
		cr_assert_not(inject_select_done(), "not done before launch %zu", i + 1);
		cr_assert_eq(inject_select_take_launch(), expected[i], "launch %zu", i + 1);
	}
	cr_assert(inject_select_done(), "done once the third is taken");
	cr_assert_not(inject_select_take_launch(), "none taken after -c");
	cr_assert_eq(counts().taken, 6, "every launch past the filters is counted");
}

Test(select, without_count_every_launch_after_the_skipped_ones_is_taken)
{
	set(RP_OPT_LAUNCH_SKIP, "1");
	configure();
	cr_assert_not(inject_select_take_launch());
	for (int i = 0; i < 1000; i++)
		cr_assert(inject_select_take_launch());
	cr_assert_not(inject_select_done());
}

/* ---- the control API's gate ------------------------------------------------------- */

Test(select, the_gate_is_open_until_the_control_api_takes_control)
{
	configure();
	cr_assert_not(inject_select_closed());
	inject_select_control();
	cr_assert(inject_select_closed(), "controlled, no annotation open");
	cr_assert(counts().controlled);
	cr_assert_not(counts().annotated);
}

Test(select, an_open_annotation_opens_the_gate_until_the_last_one_closes)
{
	configure();
	inject_select_control();
	inject_select_annotations_open(1);
	cr_assert_not(inject_select_closed(), "one annotation open");
	inject_select_annotations_open(1);
	inject_select_annotations_open(-1);
	cr_assert_not(inject_select_closed(), "one of two still open");
	inject_select_annotations_open(-1);
	cr_assert(inject_select_closed(), "the last one closed");
	cr_assert(counts().annotated, "an annotation was opened once");
}

Test(select, an_annotation_opened_before_control_keeps_the_gate_open)
{
	configure();
	inject_select_annotations_open(1);
	cr_assert_not(inject_select_closed(), "not controlled yet");
	inject_select_control();
	cr_assert_not(inject_select_closed(), "controlled with an annotation open");
	inject_select_annotations_open(-1);
	cr_assert(inject_select_closed());
}

Test(select, annotations_never_close_the_gate_of_a_process_not_controlled)
{
	configure();
	inject_select_annotations_open(1);
	inject_select_annotations_open(-1);
	cr_assert_not(inject_select_closed(), "the options select, not annotations");
}

Test(select, the_gate_owns_controlled_and_the_open_count_that_info_reads)
{
	/* rangeprof_info reads these through launch.h: no other file keeps a copy that could
	 * disagree (issue 34: control.c kept its own flag and count beside these). */
	configure();
	cr_assert_not(inject_select_controlled());
	inject_select_annotations_open(1);
	inject_select_annotations_open(1);
	cr_assert_eq(inject_select_open_annotations(), 2);
	inject_select_control();
	cr_assert(inject_select_controlled());
	inject_select_annotations_open(-1);
	cr_assert_eq(inject_select_open_annotations(), 1);
	inject_select_annotations_open(-1);
	cr_assert_eq(inject_select_open_annotations(), 0);
	cr_assert(inject_select_closed());
}

Test(select, taking_control_again_leaves_the_gate_as_the_annotations_set_it)
{
	/* Only the first call sets the gate from the count (control.c used to keep this
	 * once-only rule in its own flag). */
	configure();
	inject_select_control();
	inject_select_annotations_open(1);
	inject_select_control();
	cr_assert_not(inject_select_closed(), "an annotation is open");
	cr_assert_eq(inject_select_open_annotations(), 1);
	inject_select_annotations_open(-1);
}

/* ---- kernels that wait for peers -------------------------------------------------- */

Test(select, a_kernel_that_waits_for_peers_is_selected_by_name_but_not_measured)
{
	configure();
	cr_assert_not(launch(1, "ncclDevKernel_AllReduce_RING_LL"));
	cr_assert_eq(reports, 1);
	cr_assert_eq(last_report, INJECT_REPORT_COLLECTIVE);
	cr_assert(strstr(last_message, "ncclDevKernel_AllReduce_RING_LL is a NCCL kernel"),
		  "%s", last_message);
	cr_assert(launch(2, "vadd"));
	struct collector_launch_counts c = counts();
	cr_assert_eq(c.name_selected, 2, "both passed -k");
	cr_assert_eq(c.not_replayed, 1);
}

Test(select, a_launch_that_kernel_name_rejects_is_not_counted_as_selected_by_name)
{
	set(RP_OPT_KERNEL_NAME, "vadd");
	configure();
	cr_assert_not(launch(1, "vsub"));
	cr_assert(launch(2, "vadd"));
	cr_assert_eq(counts().name_selected, 1);
	cr_assert_eq(reports, 0);
}

/* ---- the counts for the exit line ------------------------------------------------- */

Test(select, counts_follow_each_filter_a_launch_went_through)
{
	set(RP_OPT_KERNEL_NAME, "vadd");
	set(RP_OPT_LAUNCH_SKIP, "1");
	configure();
	/* Four launches, as launch.c's on_launch counts them: three vadd, one vsub. */
	const char *names[] = { "vadd", "vsub", "vadd", "vadd" };
	for (size_t i = 0; i < 4; i++) {
		cr_assert_eq(inject_select_next_index(), i, "the process-wide index");
		cr_assert(inject_select_nvtx(), "no NVTX expression selects everything");
		if (launch((int)i + 1, names[i]))
			inject_select_take_launch();
	}
	struct collector_launch_counts c = counts();
	cr_assert_eq(c.launches, 4);
	cr_assert_not(c.nvtx_filtered);
	cr_assert_eq(c.nvtx_selected, 4);
	cr_assert_str_eq(c.kernel_name, "vadd");
	cr_assert_eq(c.name_selected, 3);
	cr_assert_eq(c.launch_skip, 1);
	cr_assert_eq(c.taken, 3);
	cr_assert_eq(c.not_replayed, 0);
	cr_assert_not(c.controlled);
	cr_assert_null(c.hint_expr);
}

Test(select, only_launches_inside_the_included_ranges_count_as_nvtx_selected)
{
	set(RP_OPT_NVTX_INCLUDE, "train/");
	configure();
	cr_assert_not(inject_select_nvtx(), "outside every range");
	bridge_range_push_a("train");
	cr_assert(inject_select_nvtx());
	bridge_range_pop();
	cr_assert_not(inject_select_nvtx());
	struct collector_launch_counts c = counts();
	cr_assert(c.nvtx_filtered);
	cr_assert_eq(c.nvtx_selected, 1);
}

Test(select, graph_launches_are_not_counted_as_not_replayed_when_their_nodes_are)
{
	configure();
	inject_select_count_graph_launch();
	inject_select_count_captured();
	cr_assert_eq(counts().not_replayed, 1, "the captured launch only (node mode)");
}

Test(select, graph_launches_count_as_not_replayed_with_graph_profiling_none)
{
	set(RP_OPT_GRAPH_PROFILING, "none");
	configure();
	inject_select_count_graph_launch();
	inject_select_count_captured();
	cr_assert_eq(counts().not_replayed, 2);
}

Test(select, the_totals_are_said_only_when_a_launch_was_not_replayed)
{
	set(RP_OPT_GRAPH_PROFILING, "none");
	configure();
	inject_select_report_totals();
	cr_assert_eq(reports, 0);
	inject_select_count_graph_launch();
	inject_select_count_captured();
	inject_select_count_captured();
	inject_select_report_totals();
	cr_assert_eq(reports, 1);
	cr_assert_eq(last_report, INJECT_REPORT_NOT_REPLAYED_TOTALS);
	cr_assert(strstr(last_message, "1 graph launch(es) (--graph-profiling none), 2 kernel "
			 "launch(es) under stream capture, 0 launch(es)"), "%s", last_message);
}
