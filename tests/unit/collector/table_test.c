/* tests/unit/collector/table_test.c - the exit line of a run that measured nothing: it
 * names the first filter that let no launch through, with the hint for a start/end
 * expression that named push/pop ranges (issue 21), and says nothing under the control
 * API when no annotation was opened. */
#include <criterion/criterion.h>
#include <string.h>

#include "collector/table.h"

static char why[2048];

static bool said(struct collector_launch_counts c)
{
	why[0] = '\0';
	return collector_nothing_measured_why(&c, why, sizeof(why));
}

Test(table, an_empty_table_means_nothing_measured)
{
	cr_assert_eq(collector_table_rows(), 0);
	double v[] = { 1.0, 2.0 };
	collector_table_add("k", "p", v, 2, 1, true);
	cr_assert_eq(collector_table_rows(), 1);
}

Test(table, no_kernel_launched)
{
	cr_assert(said((struct collector_launch_counts){ 0 }));
	cr_assert_str_eq(why, "the application launched no kernel");
}

Test(table, no_launch_inside_the_selected_ranges)
{
	struct collector_launch_counts c = { .launches = 120, .nvtx_filtered = true,
					     .nvtx_modules = 1 };
	cr_assert(said(c));
	cr_assert_str_eq(why, "none of its 120 kernel launches was inside the NVTX ranges "
			 "--nvtx-include/--nvtx-exclude select");
	c.nvtx_modules = 0;
	cr_assert(said(c));
	cr_assert(strstr(why, "(no NVTX range reached rangeprof: no module of the application "
			 "called NVTX)"), "%s", why);
}

Test(table, a_start_end_expression_that_named_push_pop_ranges_gets_the_slash_form)
{
	struct collector_launch_counts c = { .launches = 9, .nvtx_filtered = true,
					     .nvtx_modules = 2, .hint_expr = "regex:^matmul",
					     .hint_range = "matmul n=1024" };
	cr_assert(said(c));
	cr_assert_str_eq(why, "none of its 9 kernel launches was inside the NVTX ranges "
			 "--nvtx-include/--nvtx-exclude select; 'regex:^matmul' has no '/', so it "
			 "names start/end ranges (nvtxRangeStart), but push/pop ranges such as "
			 "'matmul n=1024' were open: 'regex:^matmul/' selects the launches inside "
			 "push/pop ranges");
	c.hint_expr = "A,B";
	cr_assert(said(c));
	cr_assert(strstr(why, "the '/' form ('A/', 'A/*/B')"), "%s", why);
}

Test(table, the_later_filters_are_named_in_turn)
{
	struct collector_launch_counts c = { .launches = 50, .nvtx_filtered = true,
					     .nvtx_selected = 20, .nvtx_modules = 1,
					     .kernel_name = "regex:gemm" };
	cr_assert(said(c));
	cr_assert_str_eq(why, "none of the 20 launches inside the selected ranges was of a "
			 "kernel named -k 'regex:gemm'");
	c.name_selected = 20;
	c.taken = 20;
	c.launch_skip = 100;
	cr_assert(said(c));
	cr_assert_str_eq(why, "all 20 selected launches were skipped by --launch-skip 100");
	c.launch_skip = 0;
	c.taken = 0;
	c.not_replayed = 20;
	cr_assert(said(c));
	cr_assert(strstr(why, "could not be replayed"), "%s", why);
	c.not_replayed = 0;
	c.taken = 20;
	cr_assert(said(c));
	cr_assert(strstr(why, "not measured (the messages above say why)"), "%s", why);
}

Test(table, under_the_control_api_nothing_asked_is_nothing_to_say)
{
	struct collector_launch_counts c = { .launches = 500, .controlled = true };
	cr_assert_not(said(c), "no annotation was opened: %s", why);
	c.annotated = true;
	cr_assert(said(c));
	cr_assert_str_eq(why, "none of its 500 kernel launches came while a rangeprof "
			 "annotation was open");
}
