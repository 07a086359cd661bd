/* tests/unit/common/regex_test.c - the linear-time ERE engine: it agrees with POSIX ERE on
 * a table of patterns, refuses what it cannot match in linear time with a message naming
 * the character, and stays fast and shallow on the inputs that stalled or crashed glibc's
 * regcomp/regexec (issue 9, item 2). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/regex.h"

static bool search(const char *pattern, const char *subject)
{
	char err[256];
	struct rp_regex *re = rp_regex_compile(pattern, err, sizeof(err));
	cr_assert_not_null(re, "'%s' should compile: %s", pattern, err);
	bool m = rp_regex_search(re, subject);
	rp_regex_destroy(re);
	return m;
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static const struct {
	const char *pattern, *subject;
	bool expected;
} cases[] = {
	{ "gemm", "ampere_sgemm_128x64", true },
	{ "^gemm", "ampere_sgemm", false },
	{ "^ampere_.*gemm$", "ampere_sgemm", true },
	{ "a|b", "xxb", true },
	{ "(ab)+c", "ababc", true },
	{ "(ab)+c", "ac", false },
	{ "colou?r", "color", true },
	{ "x{2,3}y", "xxy", true },
	{ "^x{2,3}y", "xxxxy", false },
	{ "^x{2,}$", "xxxxxx", true },
	{ "[[:digit:]]+", "n=4096", true },
	{ "^[^0-9]*$", "abc1", false },
	{ "[]a]", "]", true },
	{ "[a-]", "-", true },
	{ "\\bstep\\b", "train step 3", true },
	{ "\\bstep\\b", "steps", false },
	{ "\\<in", "outer inner", true },
	{ "\\w+\\s\\S", "a b", true },
	{ "a\\.b", "axb", false },
	{ "a\\.b", "a.b", true },
	{ "", "anything", true },
	{ "()", "", true },
	{ "a)", "a)", true },        /* a ')' with no '(' is a character, as in glibc */
	{ "(a*)*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaac", false },
	{ "a++", "aaa", true },
	/* '^' inside a repeated group anchors every repetition at the start: "abab" has no
	 * match (POSIX; grep -E agrees), though glibc's regexec finds one (the fuzzer's
	 * reference, tests/fuzz/NOTES.md). */
	{ "(^ab|c)+$", "abab", false },
	{ "(^ab|c)+$", "abcc", true },
	/* '$' likewise holds only at the end: "$c" never matches, so "abcb" has none (grep -E
	 * agrees); glibc's regexec finds one (tests/fuzz/NOTES.md, session 19). */
	{ "a(b|$c)+$", "abcb", false },
	{ "a(b|$c)+$", "xabb", true },
};

Test(regex, agrees_with_posix_ere_on_a_table)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		cr_expect_eq(search(cases[i].pattern, cases[i].subject), cases[i].expected,
			     "'%s' in '%s'", cases[i].pattern, cases[i].subject);
}

static const struct {
	const char *pattern, *message;
} errors[] = {
	{ "a(b", "unmatched '(' at character 2" },
	{ "[ab", "unmatched '[' at character 1" },
	{ "*a", "'*' repeats nothing" },
	{ "a|+b", "'+' repeats nothing" },
	{ "(a)\\1", "back-references (\\1 ... \\9) are not supported" },
	{ "a{3,2}", "invalid repetition" },
	{ "a{1001}", "invalid repetition" },
	{ "a{", "invalid repetition" },
	{ "[[:word:]]", "unknown character class" },
	{ "[z-a]", "range out of order" },
	{ "\\q", "unknown escape" },
	{ "a\\", "trailing '\\' escapes nothing" },
	{ "(a{1000}){1000}", "too large once its repetitions are expanded" },
};

Test(regex, refusals_name_the_character_and_what_is_accepted)
{
	for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++) {
		char err[256] = "";
		struct rp_regex *re = rp_regex_compile(errors[i].pattern, err, sizeof(err));
		cr_expect_null(re, "'%s' should not compile", errors[i].pattern);
		cr_expect(strstr(err, errors[i].message), "'%s': got '%s'", errors[i].pattern, err);
		rp_regex_destroy(re);
	}
}

Test(regex, twenty_thousand_parentheses_are_refused_without_deep_recursion)
{
	char *p = malloc(40001);
	memset(p, '(', 20000);
	memset(p + 20000, ')', 20000);
	p[40000] = '\0';
	char err[256];
	cr_assert_null(rp_regex_compile(p, err, sizeof(err)));
	cr_assert(strstr(err, "at most 4096"), "%s", err);
	/* Within the length limit, nesting has a limit of its own. */
	p[2000] = '\0';
	memset(p, '(', 1000);
	memset(p + 1000, ')', 1000);
	cr_assert_null(rp_regex_compile(p, err, sizeof(err)));
	cr_assert(strstr(err, "groups nested deeper than 64 levels at character 65"), "%s", err);
	free(p);
}

Test(regex, stacked_repetitions_are_bounded_not_exponential)
{
	double t0 = now();
	char err[256];
	/* 'a' and 24 '+': glibc's regcomp took 35 s and 12.5 GB. Refused at once: glibc may
	 * compile the same pattern (inject/callback/launch.c). */
	cr_assert_null(rp_regex_compile("a++++++++++++++++++++++++", err, sizeof(err)));
	cr_assert_str_eq(err, "repetitions nested more than 8 deep, as in ((a+)+)+; at most 8 "
			      "are accepted");
	cr_assert_null(rp_regex_compile("(((((((((a+)+)+)+)+)+)+)+)+)+", err, sizeof(err)));
	struct rp_regex *re = rp_regex_compile("a++++++++", err, sizeof(err));
	cr_assert_not_null(re, "%s", err);
	cr_assert(rp_regex_search(re, "baaa"));
	rp_regex_destroy(re);
	char many[200];
	memset(many, '+', sizeof(many) - 1);
	many[0] = 'a';
	many[sizeof(many) - 1] = '\0';
	/* The stacking guard counts while parsing, so it stops at the 65th '+' (character
	 * 66); the 8-deep nesting check runs only on a pattern that parsed. */
	cr_assert_null(rp_regex_compile(many, err, sizeof(err)));
	cr_assert_str_eq(err, "repetitions stacked deeper than 64 levels at character 66");
	/* Groups count towards the same 64 levels: inside 60 groups, 4 '+' reach 64 and 5
	 * pass it. */
	char deep[128];
	memset(deep, '(', 60);
	memcpy(deep + 60, "a++++", 5);
	memset(deep + 65, ')', 60);
	deep[125] = '\0';
	re = rp_regex_compile(deep, err, sizeof(err));
	cr_assert_not_null(re, "%s", err);
	rp_regex_destroy(re);
	memcpy(deep + 60, "a+++++", 6);
	memset(deep + 66, ')', 60);
	deep[126] = '\0';
	cr_assert_null(rp_regex_compile(deep, err, sizeof(err)));
	cr_assert_str_eq(err, "repetitions stacked deeper than 64 levels at character 66");
	cr_assert_lt(now() - t0, 0.5);
}

Test(regex, matching_is_linear_in_the_subject)
{
	/* (a*)*b against a run of a's is exponential for a backtracking matcher. */
	size_t n = 1 << 20;
	char *s = malloc(n + 1);
	memset(s, 'a', n);
	s[n] = '\0';
	char err[256];
	struct rp_regex *re = rp_regex_compile("(a*)*(a|aa)*(x+x+)+y", err, sizeof(err));
	cr_assert_not_null(re, "%s", err);
	double t0 = now();
	cr_assert_not(rp_regex_search(re, s));
	cr_assert_lt(now() - t0, 2.0, "1 MB subject took %.2f s", now() - t0);
	rp_regex_destroy(re);
	free(s);
}
