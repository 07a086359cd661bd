/* common/regex.h - the regular expressions of 'regex:' options: POSIX ERE, matched in
 * time linear in the subject, with bounded compile cost.
 * glibc's regcomp recurses once per nesting level (20 000 parentheses overflow the
 * stack), takes 35 s and 12 GB on 'a++++...', and its regexec backtracks exponentially
 * on back-references. This engine compiles to a Thompson NFA of bounded size and
 * simulates it without backtracking or recursion. Used by common/options.c (checking
 * -k regex:), nvtx_bridge/expr.c and inject/ (matching). libc only; any thread. */
#ifndef COMMON_REGEX_H
#define COMMON_REGEX_H

#include <stdbool.h>
#include <stddef.h>

/* What a pattern may ask for; beyond these compilation fails with a message saying so. */
#define RP_REGEX_MAX_LENGTH 4096   /* bytes of pattern */
#define RP_REGEX_MAX_DEPTH 64      /* nested groups and stacked repetitions */
#define RP_REGEX_MAX_REPEAT 1000   /* n and m of {n,m} */
#define RP_REGEX_MAX_PROGRAM 20000 /* NFA states after expanding {n,m} */
/* Repetitions inside repetitions, as in ((a+)+)+. This engine needs no such limit, but
 * a pattern checked here may also be compiled by glibc (inject/callback/launch.c), whose regcomp
 * doubles its time with each level: 16 levels take 0.2 s, 24 take 35 s. */
#define RP_REGEX_MAX_REPEAT_NESTING 8

struct rp_regex;

/* Compiles an ERE: literals, '.', bracket expressions with ranges and [:class:], '^',
 * '$', groups, '|', '*', '+', '?', {n}, {n,}, {n,m}, and GNU's \w \W \s \S \b \B \< \>.
 * Back-references are refused (no linear-time matcher can have them). On error returns
 * NULL and writes "what, at character N; what is accepted" into err (N is 1-based in
 * pattern). */
struct rp_regex *rp_regex_compile(const char *pattern, char *err, size_t err_size);
void rp_regex_destroy(struct rp_regex *re);

/* True when the pattern matches somewhere in subject (as regexec without REG_NOTBOL).
 * Time O(strlen(subject) x program size); allocates only for programs over 256 states,
 * and returns false when that allocation fails. */
bool rp_regex_search(const struct rp_regex *re, const char *subject);

#endif
