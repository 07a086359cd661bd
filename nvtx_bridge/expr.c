/* nvtx_bridge/expr.c - ncu's NVTX include/exclude expressions: parsing and matching.
 * Parsed once, when options are read (launcher and library); matched in the launch
 * callback against a snapshot, allocating nothing for stacks up to 64 deep. Matching is
 * O(stack depth x elements) (no backtracking however many '*' there are), and a filter's
 * verdict is kept per thread until the thread's NVTX ranges change, so launches inside
 * one range cost the same whatever the expressions or the depth.
 *
 * Grammar (ncu's; README.md):
 *   expr      := ["regex:"] [domain "@"] (push_pop | start_end)
 *   push_pop  := ["["] elem ("/" elem)* ["/"] ["]"]     (has '/', '[' or ']')
 *   elem      := name | "*" (zero or more ranges) | "+" (exactly one range)
 *   start_end := name ("," name)*
 * A backslash makes the next character literal. Under regex: it keeps its meaning for
 * the regular expression except before '/', ',', '@' and ';'. Regular expressions are
 * POSIX ERE, searched in the name (anchor with ^ and $ for a whole-name match).
 * Calls: state.c (the snapshot), registry.c, common/ (regex.c).
 * Called by: inject/.
 * Lock: none (a filter is written once and read after; verdicts are thread-local). */
#include "nvtx_bridge/nvtx_bridge.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/regex.h"
#include "nvtx_bridge/slots.h"

enum elem_kind { ELEM_NAME, ELEM_ANY, ELEM_ONE };

struct name_pattern {
	char *text;
	struct rp_regex *re;         /* NULL: an exact name */
};

struct elem {
	enum elem_kind kind;
	struct name_pattern name;
};

struct nvtx_expr {
	char *text;                  /* as given, for messages */
	bool push_pop;
	bool bottom, top;            /* '[' and ']' */
	bool has_domain;
	struct name_pattern domain;
	struct elem *elems;          /* push/pop elements, or start/end names */
	size_t count;
};

/* One character of the expression after escapes: its value, whether a backslash made it
 * literal, and where it stood (1-based) for messages. */
struct ch {
	char c;
	bool escaped;
	size_t column;
};

static void pattern_free(struct name_pattern *p)
{
	rp_regex_destroy(p->re);
	free(p->text);
}

void nvtx_expr_destroy(struct nvtx_expr *expr)
{
	if (!expr)
		return;
	for (size_t i = 0; i < expr->count; i++)
		if (expr->elems[i].kind == ELEM_NAME)
			pattern_free(&expr->elems[i].name);
	if (expr->has_domain)
		pattern_free(&expr->domain);
	free(expr->elems);
	free(expr->text);
	free(expr);
}

static bool special(char c)
{
	return c == '/' || c == ',' || c == '@' || c == ';';
}

/* Builds a pattern from chs[begin, end). In regex mode escapes other than those of our
 * separators are given back to the regular expression. */
static int make_pattern(const struct ch *chs, size_t begin, size_t end, bool regex,
			struct name_pattern *out, char *err, size_t err_size)
{
	char *text = malloc(2 * (end - begin) + 1), *w = text;
	if (!text) {
		snprintf(err, err_size, "out of memory");
		return -1;
	}
	for (size_t i = begin; i < end; i++) {
		if (regex && chs[i].escaped && !special(chs[i].c))
			*w++ = '\\';
		*w++ = chs[i].c;
	}
	*w = '\0';
	out->text = text;
	out->re = NULL;
	if (regex) {
		char why[256], quoted[RP_QUOTE_SIZE];
		if (!(out->re = rp_regex_compile(text, why, sizeof(why)))) {
			snprintf(err, err_size, "invalid regular expression '%s' starting at "
				 "character %zu: %s", rp_quote(text, quoted, sizeof(quoted)),
				 chs[begin].column, why);
			free(text);
			out->text = NULL;
			return -1;
		}
	}
	return 0;
}

static bool pattern_matches(const struct name_pattern *p, const char *name)
{
	if (p->re)
		return rp_regex_search(p->re, name);
	return strcmp(p->text, name) == 0;
}

static int add_elem(struct nvtx_expr *e, const struct ch *chs, size_t begin, size_t end,
		    bool regex, char *err, size_t err_size)
{
	struct elem el = { ELEM_NAME, { 0 } };
	if (end == begin) {
		snprintf(err, err_size, "empty range name at character %zu; expected a name "
			 "between separators", chs[begin].column);
		return -1;
	}
	if (end - begin == 1 && !chs[begin].escaped && e->push_pop &&
	    (chs[begin].c == '*' || chs[begin].c == '+')) {
		el.kind = chs[begin].c == '*' ? ELEM_ANY : ELEM_ONE;
	} else if (make_pattern(chs, begin, end, regex, &el.name, err, err_size)) {
		return -1;
	}
	if (e->count == NVTX_EXPR_MAX_ELEMENTS) {
		if (el.kind == ELEM_NAME)
			pattern_free(&el.name);
		snprintf(err, err_size, "more than %d range names at character %zu; at most %d "
			 "are accepted", NVTX_EXPR_MAX_ELEMENTS, chs[begin].column,
			 NVTX_EXPR_MAX_ELEMENTS);
		return -1;
	}
	struct elem *grown = realloc(e->elems, (e->count + 1) * sizeof(*grown));
	if (!grown) {
		if (el.kind == ELEM_NAME)
			pattern_free(&el.name);
		snprintf(err, err_size, "out of memory");
		return -1;
	}
	e->elems = grown;
	e->elems[e->count++] = el;
	return 0;
}

static struct nvtx_expr *fail(struct nvtx_expr *e, struct ch *chs)
{
	free(chs);
	nvtx_expr_destroy(e);
	return NULL;
}

struct nvtx_expr *nvtx_expr_parse(const char *text, char *err, size_t err_size)
{
	size_t len = strlen(text), offset = 0;
	bool regex = false;
	if (!strncmp(text, "regex:", 6)) {
		regex = true;
		offset = 6;
	}
	if (len > NVTX_EXPR_MAX_LENGTH) {
		snprintf(err, err_size, "expression of %zu bytes; at most %d are accepted", len,
			 NVTX_EXPR_MAX_LENGTH);
		return NULL;
	}
	if (len == offset) {
		snprintf(err, err_size, "empty expression; expected a range such as 'outer/', "
			 "'outer/inner', 'Domain@outer/' or a start/end range 'A,B'");
		return NULL;
	}
	struct nvtx_expr *e = calloc(1, sizeof(*e));
	struct ch *chs = calloc(len + 1, sizeof(*chs));
	if (e)
		e->text = strdup(text);
	if (!e || !chs || !e->text) {
		snprintf(err, err_size, "out of memory");
		return fail(e, chs);
	}
	size_t n = 0;
	for (size_t i = offset; i < len; i++) {
		if (text[i] == '\\') {
			if (i + 1 == len) {
				snprintf(err, err_size, "'\\' at character %zu escapes nothing; "
					 "write '\\\\' for a backslash", i + 1);
				return fail(e, chs);
			}
			chs[n++] = (struct ch){ text[i + 1], true, i + 1 };
			i++;
		} else {
			chs[n++] = (struct ch){ text[i], false, i + 1 };
		}
	}
	chs[n].column = len + 1;

	/* Domain: everything before the first unescaped '@'. */
	size_t body = 0;
	for (size_t i = 0; i < n; i++) {
		if (chs[i].c == '@' && !chs[i].escaped) {
			if (i == 0) {
				snprintf(err, err_size, "empty domain name before '@' at character "
					 "%zu; expected 'Domain@range'", chs[i].column);
				return fail(e, chs);
			}
			if (make_pattern(chs, 0, i, regex, &e->domain, err, err_size))
				return fail(e, chs);
			e->has_domain = true;
			body = i + 1;
			break;
		}
	}
	if (body == n) {
		snprintf(err, err_size, "no range name after the domain at character %zu",
			 chs[n].column);
		return fail(e, chs);
	}

	size_t end = n;
	bool has_slash = false, has_comma = false;
	size_t comma_at = 0;
	if (chs[body].c == '[' && !chs[body].escaped) {
		e->bottom = true;
		body++;
	}
	if (end > body && chs[end - 1].c == ']' && !chs[end - 1].escaped) {
		e->top = true;
		end--;
	}
	for (size_t i = body; i < end; i++) {
		if (chs[i].escaped)
			continue;
		if (chs[i].c == '/')
			has_slash = true;
		if (chs[i].c == ',' && !has_comma) {
			has_comma = true;
			comma_at = chs[i].column;
		}
		if ((chs[i].c == '[' || chs[i].c == ']') && !regex) {
			snprintf(err, err_size, "'%c' at character %zu: '[' may only start and "
				 "']' only end a push/pop expression; write '\\%c' for the "
				 "character", chs[i].c, chs[i].column, chs[i].c);
			return fail(e, chs);
		}
		if (chs[i].c == '@') {
			snprintf(err, err_size, "second '@' at character %zu; a domain is given "
				 "once, at the start; write '\\@' for the character",
				 chs[i].column);
			return fail(e, chs);
		}
	}
	e->push_pop = has_slash || e->bottom || e->top;
	if (e->push_pop && has_comma) {
		snprintf(err, err_size, "',' at character %zu: push/pop expressions (with '/', "
			 "'[' or ']') take no ','; 'A,B' is for start/end ranges; write '\\,' "
			 "for the character", comma_at);
		return fail(e, chs);
	}
	if (body == end) {
		snprintf(err, err_size, "no range name at character %zu", chs[body].column);
		return fail(e, chs);
	}
	/* A trailing '/' closes the last name ("outer/"); it starts no new element. */
	if (e->push_pop && !chs[end - 1].escaped && chs[end - 1].c == '/')
		end--;
	char sep = e->push_pop ? '/' : ',';
	size_t begin = body;
	for (size_t i = body; i <= end; i++) {
		if (i == end || (chs[i].c == sep && !chs[i].escaped)) {
			if (add_elem(e, chs, begin, i, regex, err, err_size))
				return fail(e, chs);
			begin = i + 1;
		}
	}
	bool named = false;
	for (size_t i = 0; i < e->count; i++)
		named |= e->elems[i].kind == ELEM_NAME;
	if (!named) {
		snprintf(err, err_size, "no range is named; '*' and '+' stand for ranges "
			 "around named ones, as in 'A/*/B'");
		return fail(e, chs);
	}
	free(chs);
	return e;
}

/* ------------------------------------------------------------------------------------ */
/* Matching                                                                             */
/* ------------------------------------------------------------------------------------ */

static bool domain_matches(const struct nvtx_expr *e, const struct nvtx_bridge_domain *d)
{
	const char *name = nvtx_bridge_domain_name(d);
	if (!e->has_domain)
		return name[0] == '\0';
	return pattern_matches(&e->domain, name);
}

/* Whether the push/pop elements match names[0 .. n), outermost first: an NFA over the
 * stack whose states are "elements 0 .. j matched", advanced one range at a time. Each
 * (element, range) pair is looked at once at most: O(n x elements), where the recursive
 * search it replaces took 0.31 s per match for seven '*' over a stack 30 deep and 29 s
 * for ten; this takes 2 us for ten (tests/fuzz/NOTES.md, "Hostile options and
 * expressions"). */
static bool match_names(const struct nvtx_expr *e, const char *const *names, size_t n)
{
	bool cur_local[NVTX_EXPR_MAX_ELEMENTS + 1], next_local[NVTX_EXPR_MAX_ELEMENTS + 1];
	bool *cur = cur_local, *next = next_local;
	size_t m = e->count;
	memset(cur, 0, (m + 1) * sizeof(*cur));
	for (size_t i = 0;; i++) {
		/* '[' anchors the first element at the bottom; otherwise it may start at any
		 * range. */
		if (i == 0 || !e->bottom)
			cur[0] = true;
		/* '*' may stand for no range at all. */
		for (size_t j = 0; j < m; j++)
			if (cur[j] && e->elems[j].kind == ELEM_ANY)
				cur[j + 1] = true;
		/* ']' wants the last element at the top; otherwise it may end anywhere. */
		if (cur[m] && (!e->top || i == n))
			return true;
		if (i == n)
			return false;
		memset(next, 0, (m + 1) * sizeof(*next));
		for (size_t j = 0; j < m; j++) {
			if (!cur[j])
				continue;
			const struct elem *el = &e->elems[j];
			if (el->kind == ELEM_ANY)
				next[j] = true;
			else if (el->kind == ELEM_ONE || pattern_matches(&el->name, names[i]))
				next[j + 1] = true;
		}
		bool *swap = cur;
		cur = next;
		next = swap;
	}
}

static bool match_push_pop(const struct nvtx_expr *e, const struct nvtx_bridge_snapshot *s)
{
	const char *local[64];
	const char **names = local;
	if (s->push_count > 64 && !(names = malloc(s->push_count * sizeof(*names))))
		return false;
	size_t n = 0;
	for (size_t i = 0; i < s->push_count; i++)
		if (domain_matches(e, s->ranges[i].domain))
			names[n++] = s->ranges[i].text;
	bool found = match_names(e, names, n);
	if (names != local)
		free(names);
	return found;
}

static bool match_start_end(const struct nvtx_expr *e, const struct nvtx_bridge_snapshot *s)
{
	for (size_t k = 0; k < e->count; k++) {
		bool open = false;
		for (size_t i = s->push_count; i < s->count && !open; i++)
			open = domain_matches(e, s->ranges[i].domain) &&
			       pattern_matches(&e->elems[k].name, s->ranges[i].text);
		if (!open)
			return false;
	}
	return true;
}

bool nvtx_expr_matches(const struct nvtx_expr *expr, const struct nvtx_bridge_snapshot *snap)
{
	return expr->push_pop ? match_push_pop(expr, snap) : match_start_end(expr, snap);
}

/* ------------------------------------------------------------------------------------ */
/* Filters                                                                              */
/* ------------------------------------------------------------------------------------ */

struct nvtx_filter {
	uint64_t id;                 /* process-wide, for the per-thread verdict */
	struct nvtx_expr **includes;
	size_t include_count;
	struct nvtx_expr **excludes;
	size_t exclude_count;
	/* A start/end include ('regex:^matmul', no '/') whose names matched a push/pop range
	 * open at a launch: what a user who meant 'regex:^matmul/' needs to hear when nothing
	 * was measured. Watched for only while no launch has been selected and none found
	 * (settled), and only when a verdict is computed (the thread's ranges changed): the
	 * launches a kept verdict answers pay nothing. hint: include index + 1; hint_range
	 * (the range's text) is written by the one thread that set it, before hint_ready. */
	atomic_bool settled;
	atomic_size_t hint;
	atomic_bool hint_ready;
	char hint_range[256];
};

void nvtx_filter_destroy(struct nvtx_filter *filter)
{
	if (!filter)
		return;
	for (size_t i = 0; i < filter->include_count; i++)
		nvtx_expr_destroy(filter->includes[i]);
	for (size_t i = 0; i < filter->exclude_count; i++)
		nvtx_expr_destroy(filter->excludes[i]);
	free(filter->includes);
	free(filter->excludes);
	free(filter);
}

static int compile_list(char *const *texts, size_t count, const char *origin,
			struct nvtx_expr ***out, size_t *out_count, char *err, size_t err_size)
{
	if (!count)
		return 0;
	if (!(*out = calloc(count, sizeof(**out)))) {
		snprintf(err, err_size, "%s: out of memory", origin);
		return -1;
	}
	for (size_t i = 0; i < count; i++) {
		char why[1024], quoted[RP_QUOTE_SIZE];
		if (!((*out)[i] = nvtx_expr_parse(texts[i], why, sizeof(why)))) {
			snprintf(err, err_size, "%s '%s': %s", origin,
				 rp_quote(texts[i], quoted, sizeof(quoted)), why);
			return -1;
		}
		(*out_count)++;
	}
	return 0;
}

struct nvtx_filter *nvtx_filter_create(char *const *includes, size_t include_count,
				       const char *include_origin, char *const *excludes,
				       size_t exclude_count, const char *exclude_origin,
				       char *err, size_t err_size)
{
	static atomic_uint_fast64_t filter_ids = 1;
	struct nvtx_filter *f = calloc(1, sizeof(*f));
	if (!f) {
		snprintf(err, err_size, "out of memory");
		return NULL;
	}
	f->id = atomic_fetch_add(&filter_ids, 1);
	if (compile_list(includes, include_count, include_origin, &f->includes,
			 &f->include_count, err, err_size) ||
	    compile_list(excludes, exclude_count, exclude_origin, &f->excludes,
			 &f->exclude_count, err, err_size)) {
		nvtx_filter_destroy(f);
		return NULL;
	}
	return f;
}

bool nvtx_filter_is_empty(const struct nvtx_filter *filter)
{
	return !filter || (!filter->include_count && !filter->exclude_count);
}

/* ------------------------------------------------------------------------------------ */
/* Matching one range at a time                                                         */
/* ------------------------------------------------------------------------------------ */

/* The NFA of match_names, kept per stack level so that after a push or a pop only the
 * changed levels are stepped: a launch then costs the same at depth 10 000 as at depth
 * 1. One word per level holds the states (bits 0 .. count) of an expression of at most
 * LEVEL_MAX_ELEMENTS elements, and two flags; longer expressions are matched whole. */
#define LEVEL_ACCEPTED (UINT64_C(1) << 63)  /* the end was reached at an earlier level */
#define LEVEL_CONSUMED (UINT64_C(1) << 62)  /* a range of the domain was consumed */
#define LEVEL_MAX_ELEMENTS 60

static bool stepped_by_level(const struct nvtx_expr *e)
{
	return e->push_pop && e->count <= LEVEL_MAX_ELEMENTS;
}

/* The states of level word w after its free moves: a new start (always, or at the bottom
 * only with '['), and '*' standing for no range. */
static uint64_t closure(const struct nvtx_expr *e, uint64_t w)
{
	uint64_t set = w & ~(LEVEL_ACCEPTED | LEVEL_CONSUMED);
	if (!(w & LEVEL_CONSUMED) || !e->bottom)
		set |= 1;
	for (size_t j = 0; j < e->count; j++)
		if ((set >> j & 1) && e->elems[j].kind == ELEM_ANY)
			set |= UINT64_C(1) << (j + 1);
	return set;
}

/* The level word after range r. Ranges of other domains leave it as it is. */
static uint64_t step(const struct nvtx_expr *e, uint64_t w, const struct nvtx_bridge_range *r)
{
	if (!domain_matches(e, r->domain))
		return w;
	uint64_t set = closure(e, w), next = LEVEL_CONSUMED | (w & LEVEL_ACCEPTED);
	if (set >> e->count & 1)
		next |= LEVEL_ACCEPTED;
	for (size_t j = 0; j < e->count; j++) {
		if (!(set >> j & 1))
			continue;
		const struct elem *el = &e->elems[j];
		if (el->kind == ELEM_ANY)
			next |= UINT64_C(1) << j;
		else if (el->kind == ELEM_ONE || pattern_matches(&el->name, r->text))
			next |= UINT64_C(1) << (j + 1);
	}
	return next;
}

static bool level_verdict(const struct nvtx_expr *e, uint64_t w)
{
	bool at_top = closure(e, w) >> e->count & 1;
	return e->top ? at_top : at_top || (w & LEVEL_ACCEPTED);
}

/* This thread's level words for the filter it last looked at: words[x * capacity + i] is
 * expression x's word after ranges 0 .. i-1 of the snapshot snapshot_id; levels + 1 of
 * them are valid. Bounded: past LEVEL_CACHE_BYTES the filter matches whole. */
#define LEVEL_CACHE_BYTES (4u << 20)
struct level_cache {
	uint64_t filter_id, snapshot_id;
	size_t levels, capacity;
	uint64_t *words;
};

static void level_cache_cleanup(void *cache)
{
	free(((struct level_cache *)cache)->words);
}

static struct nvtx_expr *filter_expr(const struct nvtx_filter *f, size_t x)
{
	return x < f->include_count ? f->includes[x] : f->excludes[x - f->include_count];
}

/* Steps the level words of every short push/pop expression of f up to snap. False when
 * the words cannot be kept (too deep for the bound, or out of memory). */
static bool update_levels(struct level_cache *c, const struct nvtx_filter *f,
			  const struct nvtx_bridge_snapshot *snap)
{
	size_t k = f->include_count + f->exclude_count, n = snap->push_count;
	size_t reuse = 0;
	if (c->filter_id == f->id && c->words) {
		/* Ranges stamped after the cached snapshot changed since; those before did not.
		 * Stamps grow with the index: the first changed one is found by bisection. */
		size_t lo = 0, hi = c->levels < n ? c->levels : n;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (snap->stamps[mid] <= c->snapshot_id)
				lo = mid + 1;
			else
				hi = mid;
		}
		reuse = lo;
	}
	if (n + 1 > c->capacity || c->filter_id != f->id) {
		size_t cap = c->capacity ? c->capacity : 64;
		while (cap < n + 1)
			cap *= 2;
		if (k * cap * sizeof(uint64_t) > LEVEL_CACHE_BYTES)
			return false;
		uint64_t *words = calloc(k * cap, sizeof(*words));
		if (!words)
			return false;
		for (size_t x = 0; c->filter_id == f->id && x < k; x++)
			memcpy(words + x * cap, c->words + x * c->capacity,
			       (reuse + 1) * sizeof(*words));
		free(c->words);
		c->words = words;
		c->capacity = cap;
		if (c->filter_id != f->id)
			reuse = 0;
	}
	for (size_t x = 0; x < k; x++) {
		const struct nvtx_expr *e = filter_expr(f, x);
		if (!stepped_by_level(e))
			continue;
		uint64_t *w = c->words + x * c->capacity;
		w[0] = 0;
		for (size_t i = reuse; i < n; i++)
			w[i + 1] = step(e, w[i], &snap->ranges[i]);
	}
	c->filter_id = f->id;
	c->snapshot_id = snap->id;
	c->levels = n;
	return true;
}

static bool filter_selects(const struct nvtx_filter *filter,
			   const struct nvtx_bridge_snapshot *snap)
{
	struct level_cache *c = snap->id ? bridge_thread_cache(sizeof(*c), level_cache_cleanup) :
		NULL;
	bool levels = c && update_levels(c, filter, snap);
	if (c && !levels)
		c->filter_id = 0; /* not kept: start over next time */
	size_t k = filter->include_count + filter->exclude_count;
	bool included = filter->include_count == 0;
	for (size_t x = 0; x < k; x++) {
		if (x < filter->include_count && included)
			continue;
		const struct nvtx_expr *e = filter_expr(filter, x);
		bool m = levels && stepped_by_level(e) ?
			level_verdict(e, c->words[x * c->capacity +
							   snap->push_count]) :
			nvtx_expr_matches(e, snap);
		if (x < filter->include_count)
			included = m;
		else if (m)
			return false;
		if (x + 1 == filter->include_count && !included)
			return false;
	}
	return included;
}

/* The last verdict on this thread: a snapshot with the same id has the same ranges. */
static __thread struct {
	uint64_t filter_id, snapshot_id;
	bool selected;
} verdict;

/* Whether a start/end include's names match a push/pop range of snap; see hint in
 * struct nvtx_filter. The filter is the caller's to share between threads: its watch
 * members are atomics, written through a pointer that drops the const the matching
 * functions keep. */
static void watch_push_pop(const struct nvtx_filter *filter,
			   const struct nvtx_bridge_snapshot *snap, bool selected)
{
	struct nvtx_filter *f = (struct nvtx_filter *)filter;
	if (selected) {
		atomic_store_explicit(&f->settled, true, memory_order_relaxed);
		return;
	}
	for (size_t x = 0; x < f->include_count; x++) {
		const struct nvtx_expr *e = f->includes[x];
		if (e->push_pop)
			continue;
		for (size_t i = 0; i < snap->push_count; i++) {
			const struct nvtx_bridge_range *r = &snap->ranges[i];
			bool named = false;
			for (size_t k = 0; k < e->count && !named; k++)
				named = pattern_matches(&e->elems[k].name, r->text);
			if (!named || !domain_matches(e, r->domain))
				continue;
			size_t none = 0;
			if (atomic_compare_exchange_strong(&f->hint, &none, x + 1)) {
				snprintf(f->hint_range, sizeof(f->hint_range), "%s", r->text);
				atomic_store_explicit(&f->hint_ready, true, memory_order_release);
			}
			atomic_store_explicit(&f->settled, true, memory_order_relaxed);
			return;
		}
	}
}

const char *nvtx_filter_push_pop_hint(const struct nvtx_filter *filter,
				      const char **range_text)
{
	if (!filter || !atomic_load_explicit(&filter->hint_ready, memory_order_acquire))
		return NULL;
	*range_text = filter->hint_range;
	return filter->includes[atomic_load(&filter->hint) - 1]->text;
}

bool nvtx_filter_selects(const struct nvtx_filter *filter,
			 const struct nvtx_bridge_snapshot *snap)
{
	if (nvtx_filter_is_empty(filter))
		return true;
	if (snap->id && verdict.snapshot_id == snap->id && verdict.filter_id == filter->id)
		return verdict.selected;
	bool selected = filter_selects(filter, snap);
	if (!atomic_load_explicit(&filter->settled, memory_order_relaxed))
		watch_push_pop(filter, snap, selected);
	verdict.filter_id = filter->id;
	verdict.snapshot_id = snap->id;
	verdict.selected = selected;
	return selected;
}
