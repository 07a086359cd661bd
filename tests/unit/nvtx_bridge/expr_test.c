/* tests/unit/nvtx_bridge/expr_test.c - ncu's NVTX expressions: what parses, what does not
 * (and where), and a table of stacks x expressions with the results ncu gives. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nvtx_bridge/slots.h"

static bool matches(const char *expr_text)
{
	char err[256];
	struct nvtx_expr *e = nvtx_expr_parse(expr_text, err, sizeof(err));
	cr_assert_not_null(e, "'%s' should parse: %s", expr_text, err);
	bool m = nvtx_expr_matches(e, nvtx_bridge_snapshot());
	nvtx_expr_destroy(e);
	return m;
}

static void push_all(const char *const *names)
{
	for (; *names; names++)
		bridge_range_push_a(*names);
}

static void pop_all(void)
{
	while (bridge_range_pop() >= 0)
		;
}

struct match_case {
	const char *stack[5];
	const char *expr;
	bool expected;
};

static const struct match_case cases[] = {
	{ { "A", NULL }, "A/", true },
	{ { "A", "B", NULL }, "A/", true },
	{ { "A", "B", NULL }, "B/", true },            /* anywhere in the stack */
	{ { "B", NULL }, "A/", false },
	{ { "A", "B", NULL }, "A/B", true },
	{ { "A", "B", NULL }, "A/B/", true },
	{ { "A", "X", "B", NULL }, "A/B", false },     /* B directly inside A */
	{ { "A", "X", "B", NULL }, "A/*/B", true },
	{ { "A", "B", NULL }, "A/*/B", true },         /* zero ranges between */
	{ { "A", "X", "Y", "B", NULL }, "A/*/B", true },
	{ { "A", "X", "B", NULL }, "A/+/B", true },    /* exactly one between */
	{ { "A", "B", NULL }, "A/+/B", false },
	{ { "A", "X", "Y", "B", NULL }, "A/+/B", false },
	{ { "A", "B", NULL }, "[A", true },            /* A at the bottom */
	{ { "X", "A", NULL }, "[A", false },
	{ { "A", "B", NULL }, "B]", true },            /* B at the top */
	{ { "B", "A", NULL }, "B]", false },
	{ { "A", "B", NULL }, "[A/B]", true },
	{ { "A", "B", "C", NULL }, "[A/B]", false },
	{ { "A", NULL }, "A", false },                 /* no '/': a start/end range */
	{ { "train step", NULL }, "regex:^train", false }, /* no "/": start/end */
	{ { "train step", NULL }, "regex:^train/", true },
	{ { "matmul n=4096", NULL }, "regex:n=[0-9]+$/", true },
	{ { "eval", NULL }, "regex:^train/", false },
	{ { "a/b", NULL }, "a\\/b/", true },           /* an escaped '/' is part of the name */
	{ { "x,y", NULL }, "x\\,y/", true },
	{ { NULL }, "A/", false },
};

/* A loop rather than a parameterized test: Criterion runs those in a new process where
 * the table's pointers would not hold. */
Test(nvtx_expr, push_pop_table_gives_ncu_results)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct match_case *c = &cases[i];
		push_all(c->stack);
		bool got = matches(c->expr);
		pop_all();
		cr_expect_eq(got, c->expected, "case %zu: stack %s.. with '%s': got %d", i,
			     c->stack[0] ? c->stack[0] : "(empty)", c->expr, got);
	}
}

Test(nvtx_expr, domains_select_their_own_stack)
{
	nvtxDomainHandle_t d = bridge_domain_create_a("Dom");
	nvtxEventAttributes_t a = { NVTX_VERSION, NVTX_EVENT_ATTRIB_STRUCT_SIZE };
	a.messageType = NVTX_MESSAGE_TYPE_ASCII;
	a.message.ascii = "A";
	bridge_domain_range_push_ex(d, &a);
	cr_assert(matches("Dom@A/"));
	cr_assert_not(matches("A/"), "without a domain only the default domain matches");
	cr_assert_not(matches("Other@A/"));
	cr_assert(matches("regex:^D.m$@A/"));
	bridge_domain_range_pop(d);
}

Test(nvtx_expr, start_end_ranges_all_must_be_open)
{
	nvtxRangeId_t a = bridge_range_start_a("A");
	cr_assert(matches("A"));
	cr_assert_not(matches("A,B"));
	nvtxRangeId_t b = bridge_range_start_a("B");
	cr_assert(matches("A,B"));
	cr_assert_not(matches("A/"), "a start/end range is not a push/pop range");
	bridge_range_end(a);
	cr_assert_not(matches("A,B"));
	bridge_range_end(b);
}

struct error_case {
	const char *expr;
	const char *message;
};

static const struct error_case errors[] = {
	{ "", "empty expression" },
	{ "regex:", "empty expression" },
	{ "A//B", "empty range name at character 3" },
	{ "/A", "empty range name at character 1" },
	{ "A,,B", "empty range name at character 3" },
	{ "@A/", "empty domain name before '@' at character 1" },
	{ "D@", "no range name after the domain at character 3" },
	{ "A[B/", "'[' at character 2" },
	{ "A/B]C", "']' at character 4" },
	{ "A,B/", "',' at character 2" },
	{ "D@A@B/", "second '@' at character 4" },
	{ "A/\\", "'\\' at character 3 escapes nothing" },
	{ "*/+/", "no range is named" },
	{ "regex:a(/", "invalid regular expression 'a(' starting at character 7: unmatched '(' "
		       "at character 2" },
	{ "regex:(a)\\1/", "back-references (\\1 ... \\9) are not supported" },
	{ "regex:a++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++/",
	  "repetitions stacked deeper than 64 levels" },
};

Test(nvtx_expr, errors_point_at_the_character)
{
	for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++) {
		const struct error_case *c = &errors[i];
		char err[256] = "";
		struct nvtx_expr *e = nvtx_expr_parse(c->expr, err, sizeof(err));
		cr_expect_null(e, "'%s' should not parse", c->expr);
		cr_expect(strstr(err, c->message), "'%s': got '%s', expected '%s'", c->expr, err,
			  c->message);
		nvtx_expr_destroy(e);
	}
}

Test(nvtx_expr, filter_includes_any_and_excludes_win)
{
	char *inc[] = { "A/", "B/" }, *exc[] = { "A/skip/" };
	char err[256];
	struct nvtx_filter *f = nvtx_filter_create(inc, 2, "--nvtx-include", exc, 1,
						   "--nvtx-exclude", err, sizeof(err));
	cr_assert_not_null(f, "%s", err);
	cr_assert_not(nvtx_filter_is_empty(f));
	bridge_range_push_a("B");
	cr_assert(nvtx_filter_selects(f, nvtx_bridge_snapshot()));
	pop_all();
	bridge_range_push_a("A");
	bridge_range_push_a("skip");
	cr_assert_not(nvtx_filter_selects(f, nvtx_bridge_snapshot()));
	pop_all();
	cr_assert_not(nvtx_filter_selects(f, nvtx_bridge_snapshot()));
	nvtx_filter_destroy(f);
	char *bad[] = { "A//" };
	cr_assert_null(nvtx_filter_create(bad, 1, "--nvtx-include", NULL, 0, "--nvtx-exclude", err,
					  sizeof(err)));
	cr_assert_str_eq(err, "--nvtx-include 'A//': empty range name at character 3; expected a "
			      "name between separators");
	struct nvtx_filter *empty = nvtx_filter_create(NULL, 0, "i", NULL, 0, "e", err, sizeof(err));
	cr_assert(nvtx_filter_is_empty(empty));
	cr_assert(nvtx_filter_selects(empty, nvtx_bridge_snapshot()));
	nvtx_filter_destroy(empty);
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Issue 9, item 2: nine '*' against a stack 30 deep took 29 s per match. */
Test(nvtx_expr, many_stars_match_in_polynomial_time)
{
	for (int i = 0; i < 30; i++)
		bridge_range_push_a("r");
	double t0 = now();
	cr_assert_not(matches("*/*/*/*/*/*/*/*/*/*/X/"));
	cr_assert(matches("*/*/*/*/*/*/*/*/*/*/r]"));
	cr_assert(matches("[r/*/*/*/*/*/*/*/*/*/r/+/r]"));
	cr_assert_lt(now() - t0, 0.1, "took %.3f s", now() - t0);
	pop_all();
	/* 200 elements against 10 000 levels. */
	char expr[512] = "";
	for (int i = 0; i < 100; i++)
		strcat(expr, "*/");
	strcat(expr, "X/");
	for (int i = 0; i < 10000; i++)
		bridge_range_push_a(i == 5000 ? "X" : "r");
	t0 = now();
	cr_assert(matches(expr));
	cr_assert_lt(now() - t0, 1.0, "took %.3f s", now() - t0);
	pop_all();
}

Test(nvtx_expr, sizes_are_bounded_with_a_message)
{
	char err[256];
	char *big = malloc(NVTX_EXPR_MAX_LENGTH + 2);
	memset(big, 'a', NVTX_EXPR_MAX_LENGTH + 1);
	big[NVTX_EXPR_MAX_LENGTH + 1] = '\0';
	big[0] = '[';
	cr_assert_null(nvtx_expr_parse(big, err, sizeof(err)));
	cr_assert(strstr(err, "expression of 4097 bytes; at most 4096 are accepted"), "%s", err);
	/* 257 names */
	size_t n = 0;
	for (int i = 0; i < NVTX_EXPR_MAX_ELEMENTS + 1; i++) {
		big[n++] = 'a';
		big[n++] = '/';
	}
	big[n] = '\0';
	cr_assert_null(nvtx_expr_parse(big, err, sizeof(err)));
	cr_assert(strstr(err, "more than 256 range names at character 513"), "%s", err);
	free(big);
}

Test(nvtx_expr, filter_verdict_is_reused_while_the_stack_is_unchanged)
{
	char *inc[] = { "regex:^A$/" };
	char err[256];
	struct nvtx_filter *f = nvtx_filter_create(inc, 1, "--nvtx-include", NULL, 0,
						   "--nvtx-exclude", err, sizeof(err));
	cr_assert_not_null(f, "%s", err);
	bridge_range_push_a("A");
	const struct nvtx_bridge_snapshot *s = nvtx_bridge_snapshot();
	uint64_t id = s->id;
	cr_assert(nvtx_filter_selects(f, s));
	cr_assert_eq(nvtx_bridge_snapshot()->id, id, "no NVTX call: the same snapshot");
	cr_assert(nvtx_filter_selects(f, nvtx_bridge_snapshot()));
	bridge_range_push_a("B");
	cr_assert_neq(nvtx_bridge_snapshot()->id, id);
	cr_assert(nvtx_filter_selects(f, nvtx_bridge_snapshot()));
	pop_all();
	cr_assert_not(nvtx_filter_selects(f, nvtx_bridge_snapshot()));
	nvtx_filter_destroy(f);
}

Test(nvtx_expr, bad_expressions_are_quoted_with_control_characters_escaped_and_cut)
{
	char err[1024];
	char *bad[] = { "A\n\x1b[31m//" };
	cr_assert_null(nvtx_filter_create(bad, 1, "RANGEPROF_NVTX_INCLUDE", NULL, 0, "e", err,
					  sizeof(err)));
	cr_assert_str_eq(err, "RANGEPROF_NVTX_INCLUDE 'A\\n\\x1b[31m//': '[' at character 4: "
			      "'[' may only start and ']' only end a push/pop expression; write "
			      "'\\[' for the character");
	char *long_expr = malloc(120001);
	memset(long_expr, 'x', 120000);
	long_expr[120000] = '\0';
	long_expr[1] = '/';
	long_expr[2] = '/';
	char *list[] = { long_expr };
	cr_assert_null(nvtx_filter_create(list, 1, "--nvtx-include", NULL, 0, "e", err,
					  sizeof(err)));
	cr_assert(strstr(err, "...(120000 bytes)': expression of 120000 bytes; at most 4096"),
		  "%s", err);
	cr_assert_lt(strlen(err), 400);
	free(long_expr);
}

/* A launch after a push or a pop at depth 10 000 re-steps only the changed levels: the
 * cost of the filter check must not grow with the depth (issue 9, hostile NVTX). */
Test(nvtx_expr, filter_check_after_a_push_costs_the_same_at_any_depth)
{
	char *inc[] = { "[base/*/step]", "regex:^s.e+p$/" }, *exc[] = { "base/+/skip/" };
	char err[256];
	struct nvtx_filter *f = nvtx_filter_create(inc, 2, "i", exc, 1, "e", err, sizeof(err));
	cr_assert_not_null(f, "%s", err);
	double per_depth[2];
	int depths[2] = { 10, 10000 };
	for (int d = 0; d < 2; d++) {
		bridge_range_push_a("base");
		for (int i = 1; i < depths[d]; i++)
			bridge_range_push_a(i % 2 ? "x" : "y");
		cr_assert_not(nvtx_filter_selects(f, nvtx_bridge_snapshot()));
		double t0 = now();
		for (int i = 0; i < 20000; i++) {
			bridge_range_push_a("step");
			cr_assert(nvtx_filter_selects(f, nvtx_bridge_snapshot()));
			bridge_range_pop();
			cr_assert_not(nvtx_filter_selects(f, nvtx_bridge_snapshot()));
		}
		per_depth[d] = (now() - t0) / 40000;
		pop_all();
	}
	cr_log_info("%.0f ns per check at depth 10, %.0f ns at depth 10 000", per_depth[0] * 1e9,
		    per_depth[1] * 1e9);
	cr_assert_lt(per_depth[1], 5 * per_depth[0] + 200e-9,
		     "%.0f ns per check at depth 10, %.0f ns at depth 10 000",
		     per_depth[0] * 1e9, per_depth[1] * 1e9);
	nvtx_filter_destroy(f);
}

static struct nvtx_filter *includes(char **texts, size_t n)
{
	char err[256];
	struct nvtx_filter *f = nvtx_filter_create(texts, n, "--nvtx-include", NULL, 0,
						   "--nvtx-exclude", err, sizeof(err));
	cr_assert_not_null(f, "%s", err);
	return f;
}

/* Issue 21: --nvtx-include 'regex:^matmul' on torch.cuda.nvtx.range_push ranges measured
 * nothing and nothing said why; the filter now notes the push/pop range its start/end
 * expression named, for the exit line. */
Test(nvtx_expr, a_start_end_include_naming_a_push_pop_range_is_noted)
{
	char *inc[] = { "B/", "regex:^matmul" };
	struct nvtx_filter *f = includes(inc, 2);
	const char *range = NULL;
	bridge_range_push_a("step 1");
	cr_assert_not(nvtx_filter_selects(f, nvtx_bridge_snapshot()));
	cr_assert_null(nvtx_filter_push_pop_hint(f, &range), "no range named matmul yet");
	bridge_range_push_a("matmul n=1024");
	cr_assert_not(nvtx_filter_selects(f, nvtx_bridge_snapshot()), "push/pop: not selected");
	cr_assert_str_eq(nvtx_filter_push_pop_hint(f, &range), "regex:^matmul");
	cr_assert_str_eq(range, "matmul n=1024");
	pop_all();
	nvtx_filter_destroy(f);
	/* The '/' form: selected, and nothing to hint. */
	char *slash[] = { "regex:^matmul/" };
	f = includes(slash, 1);
	bridge_range_push_a("matmul n=1024");
	cr_assert(nvtx_filter_selects(f, nvtx_bridge_snapshot()));
	cr_assert_null(nvtx_filter_push_pop_hint(f, &range));
	pop_all();
	nvtx_filter_destroy(f);
}

Test(nvtx_expr, the_push_pop_watch_stops_once_a_launch_is_selected)
{
	/* Start/end ranges used as meant: after the first selected launch the push/pop
	 * ranges are not looked at any more (and a same-named push/pop range later is no
	 * mistake worth a word: launches were measured). */
	char *inc[] = { "train" };
	struct nvtx_filter *f = includes(inc, 1);
	const char *range = NULL;
	nvtxRangeId_t r = bridge_range_start_a("train");
	cr_assert(nvtx_filter_selects(f, nvtx_bridge_snapshot()));
	bridge_range_end(r);
	bridge_range_push_a("train");
	cr_assert_not(nvtx_filter_selects(f, nvtx_bridge_snapshot()));
	cr_assert_null(nvtx_filter_push_pop_hint(f, &range));
	pop_all();
	nvtx_filter_destroy(f);
	/* Another domain's push/pop range of that name is not the one the expression
	 * names (it names the default domain's). */
	f = includes(inc, 1);
	nvtxDomainHandle_t d = bridge_domain_create_a("other");
	nvtxEventAttributes_t attr = { .version = NVTX_VERSION, .size = NVTX_EVENT_ATTRIB_STRUCT_SIZE,
				       .messageType = NVTX_MESSAGE_TYPE_ASCII,
				       .message.ascii = "train" };
	bridge_domain_range_push_ex(d, &attr);
	cr_assert_not(nvtx_filter_selects(f, nvtx_bridge_snapshot()));
	cr_assert_null(nvtx_filter_push_pop_hint(f, &range));
	bridge_domain_range_pop(d);
	nvtx_filter_destroy(f);
}
