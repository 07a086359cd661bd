/* tests/fuzz/fuzz_nvtx_expr.c - libFuzzer target: NVTX expressions (nvtx_bridge/expr.c)
 * parsed, and matched against a stack of pushed ranges (nvtx_bridge/state.c), the
 * polynomial matcher checked against the plain recursive search it replaced on stacks
 * small enough for that; regex: names check common/regex.c against glibc on patterns
 * that glibc handles quickly.
 * Input: the expression, then '\n'-separated range names; a name starting with 0x01 is
 * pushed in domain "D", one starting with 0x02 is a start/end range. */
#include <regex.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The expression's internals (elements, flags) are needed for the reference matcher. */
#include "nvtx_bridge/expr.c"
#include "nvtx_bridge/slots.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The recursive search expr.c used before: exponential in '*', exact on small inputs. */
static bool reference_from(const struct nvtx_expr *e, size_t ei, const char *const *names,
			   size_t n, size_t si)
{
	if (ei == e->count)
		return !e->top || si == n;
	const struct elem *el = &e->elems[ei];
	switch (el->kind) {
	case ELEM_ANY:
		for (size_t k = si; k <= n; k++)
			if (reference_from(e, ei + 1, names, n, k))
				return true;
		return false;
	case ELEM_ONE:
		return si < n && reference_from(e, ei + 1, names, n, si + 1);
	case ELEM_NAME:
	default:
		return si < n && pattern_matches(&el->name, names[si]) &&
		       reference_from(e, ei + 1, names, n, si + 1);
	}
}

static bool reference(const struct nvtx_expr *e, const struct nvtx_bridge_snapshot *s)
{
	if (!e->push_pop)
		return match_start_end(e, s);
	const char *names[64];
	size_t n = 0;
	for (size_t i = 0; i < s->push_count && n < 64; i++)
		if (domain_matches(e, s->ranges[i].domain))
			names[n++] = s->ranges[i].text;
	for (size_t start = 0; start <= (e->bottom ? 0 : n); start++)
		if (reference_from(e, 0, names, n, start))
			return true;
	return false;
}

/* glibc as the reference for common/regex: only where both accept, on short patterns
 * without the GNU word operators (glibc gets \b wrong inside repeated groups), without a
 * '^' after the first character or a '$' before the last (glibc's regexec matches
 * "(^ab|c)+$" in "abab", where '^' cannot hold at the second "ab", and "a(b|$c)+$" in
 * "abcb", where '$' cannot hold before "c"; grep -E and common/regex find none) and with
 * few repetitions (stacked ones are what makes glibc's regcomp take seconds to hours). */
static bool anchor_end_inside(const char *text)
{
	const char *dollar = strchr(text, '$');
	return dollar && dollar[1] != '\0';
}

static void check_regex_against_glibc(const struct name_pattern *p, const char *const *names,
				      size_t n)
{
	if (!p->re || strlen(p->text) > 16 || strchr(p->text, '\\') || strchr(p->text, '{') ||
	    strchr(p->text + 1, '^') || anchor_end_inside(p->text))
		return;
	size_t repeats = 0;
	for (const char *c = p->text; *c; c++)
		repeats += *c == '*' || *c == '+' || *c == '?';
	if (repeats > 3)
		return;
	regex_t g;
	if (regcomp(&g, p->text, REG_EXTENDED | REG_NOSUB))
		return;
	for (size_t i = 0; i < n; i++) {
		if (strlen(names[i]) > 32)
			continue;
		bool want = regexec(&g, names[i], 0, NULL, 0) == 0;
		if (want != rp_regex_search(p->re, names[i]))
			abort();
	}
	regfree(&g);
}

/* The filter's verdict (stepped per level, kept per thread) must be the whole match's
 * after every push and pop. */
static void check_filter(struct nvtx_filter *f, const struct nvtx_expr *e)
{
	const struct nvtx_bridge_snapshot *s = nvtx_bridge_snapshot();
	bool whole = nvtx_expr_matches(e, s);
	if (f && nvtx_filter_selects(f, s) != whole)
		abort();
	if (e->count <= 10 && s->push_count <= 10 && whole != reference(e, s))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static nvtxDomainHandle_t domain;
	if (!domain)
		domain = bridge_domain_create_a("D");
	char *text = malloc(size + 1);
	memcpy(text, data, size);
	text[size] = '\0';
	char *names_text = strchr(text, '\n');
	if (names_text)
		*names_text++ = '\0';

	char err[1024];
	struct nvtx_expr *e = nvtx_expr_parse(text, err, sizeof(err));
	struct nvtx_filter *f = NULL;
	if (!e) {
		if (!err[0] || strchr(err, '\n'))
			abort(); /* a refusal always says why, on one line */
	} else {
		char *list[] = { text };
		f = nvtx_filter_create(list, 1, "--nvtx-include", NULL, 0, "--nvtx-exclude", err,
				       sizeof(err));
		if (!f)
			abort();
	}

	nvtxRangeId_t ids[64];
	size_t id_count = 0;
	const char *names[64];
	bool in_domain[64];
	size_t name_count = 0;
	for (char *p = names_text; p && name_count < 64;) {
		char *end = strchr(p, '\n');
		if (end)
			*end = '\0';
		in_domain[name_count] = false;
		names[name_count] = p;
		if (p[0] == '\x01') {
			nvtxEventAttributes_t a = { NVTX_VERSION, NVTX_EVENT_ATTRIB_STRUCT_SIZE };
			a.messageType = NVTX_MESSAGE_TYPE_ASCII;
			a.message.ascii = p + 1;
			bridge_domain_range_push_ex(domain, &a);
			in_domain[name_count] = true;
		} else if (p[0] == '\x02') {
			ids[id_count++] = bridge_range_start_a(p + 1);
		} else if (p[0] == '\x03' && name_count) {
			/* Pops the default stack's top in the middle: a non-LIFO change
			 * across domains. */
			bridge_range_pop();
		} else {
			bridge_range_push_a(p);
		}
		name_count++;
		if (e)
			check_filter(f, e);
		p = end ? end + 1 : NULL;
	}
	if (e) {
		for (size_t i = 0; i < e->count; i++)
			if (e->elems[i].kind == ELEM_NAME)
				check_regex_against_glibc(&e->elems[i].name, names, name_count);
	}
	/* Unwind in an order that mixes domains, checking at every step. */
	for (size_t i = name_count; i-- > 0;) {
		if (in_domain[i])
			bridge_domain_range_pop(domain);
		else
			bridge_range_pop();
		if (e)
			check_filter(f, e);
	}
	while (bridge_range_pop() >= 0)
		;
	while (bridge_domain_range_pop(domain) >= 0)
		;
	while (id_count--)
		bridge_range_end(ids[id_count]);
	if (nvtx_bridge_snapshot()->count)
		abort();
	nvtx_filter_destroy(f);
	nvtx_expr_destroy(e);
	free(text);
	return 0;
}
