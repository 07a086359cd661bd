/* common/regex.c - POSIX ERE in linear time: a bounded parser, a Thompson NFA and its
 * simulation (common/regex.h says why glibc's regex is not used for user patterns).
 * Parsing recurses at most RP_REGEX_MAX_DEPTH levels; compiling expands {n,m} only up
 * to RP_REGEX_MAX_PROGRAM states, counted before anything is emitted; matching keeps a
 * set of states per subject byte and never backtracks.
 * Calls: none (libc only).
 * Called by: options.c, inject/, nvtx_bridge/.
 * Lock: none (no state). */
#include "common/regex.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STR(x) #x
#define XSTR(x) STR(x)
#define RP_REGEX_LENGTH_TEXT XSTR(RP_REGEX_MAX_LENGTH)
#define RP_REGEX_DEPTH_TEXT XSTR(RP_REGEX_MAX_DEPTH)
#define RP_REGEX_REPEAT_TEXT XSTR(RP_REGEX_MAX_REPEAT)
#define RP_REGEX_PROGRAM_TEXT XSTR(RP_REGEX_MAX_PROGRAM)
#define RP_REGEX_NESTING_TEXT XSTR(RP_REGEX_MAX_REPEAT_NESTING)

/* ------------------------------------------------------------------------------------ */
/* Syntax tree                                                                          */
/* ------------------------------------------------------------------------------------ */

enum node_kind { N_EMPTY, N_SET, N_ASSERT, N_CAT, N_ALT, N_REPEAT };
enum assert_kind { A_BOL, A_EOL, A_WORD_BOUNDARY, A_NOT_WORD_BOUNDARY, A_WORD_START,
		   A_WORD_END };

struct node {
	enum node_kind kind;
	int arg;                     /* N_SET: set index; N_ASSERT: assert_kind */
	int min, max;                /* N_REPEAT; max -1: unbounded */
	int child, last_child;       /* N_CAT, N_ALT: first and last; N_REPEAT: child */
	int sibling;
};

struct set {
	uint8_t bits[32];
};

struct parser {
	const char *pattern;
	size_t pos, len;
	struct node *nodes;
	int node_count, node_capacity;
	struct set *sets;
	int set_count, set_capacity;
	char *err;
	size_t err_size;
	bool failed;
};

static int fail(struct parser *p, size_t at, const char *why)
{
	/* "what; what is accepted" becomes "what at character N; what is accepted". */
	if (!p->failed) {
		int what = (int)strcspn(why, ";");
		snprintf(p->err, p->err_size, "%.*s at character %zu%s", what, why, at + 1,
			 why + what);
		p->failed = true;
	}
	return -1;
}

static int new_node(struct parser *p, enum node_kind kind)
{
	if (p->node_count == p->node_capacity) {
		int cap = p->node_capacity ? 2 * p->node_capacity : 32;
		struct node *grown = realloc(p->nodes, (size_t)cap * sizeof(*grown));
		if (!grown)
			return fail(p, p->pos, "out of memory");
		p->nodes = grown;
		p->node_capacity = cap;
	}
	p->nodes[p->node_count] = (struct node){ kind, 0, 0, 0, -1, -1, -1 };
	return p->node_count++;
}

static int new_set(struct parser *p)
{
	if (p->set_count == p->set_capacity) {
		int cap = p->set_capacity ? 2 * p->set_capacity : 16;
		struct set *grown = realloc(p->sets, (size_t)cap * sizeof(*grown));
		if (!grown)
			return fail(p, p->pos, "out of memory");
		p->sets = grown;
		p->set_capacity = cap;
	}
	memset(&p->sets[p->set_count], 0, sizeof(struct set));
	return p->set_count++;
}

static void set_add(struct set *s, unsigned c)
{
	s->bits[c >> 3] |= (uint8_t)(1u << (c & 7));
}

static bool set_has(const struct set *s, unsigned c)
{
	return s->bits[c >> 3] & (1u << (c & 7));
}

static void set_add_class(struct set *s, int (*is)(int), bool negate)
{
	for (unsigned c = 1; c < 256; c++)
		if (!is((int)c) != !negate)
			set_add(s, c);
}

static int is_word(int c)
{
	return isalnum(c) || c == '_';
}

static void add_child(struct parser *p, int parent, int child)
{
	struct node *n = &p->nodes[parent];
	if (n->child < 0)
		n->child = child;
	else
		p->nodes[n->last_child].sibling = child;
	p->nodes[parent].last_child = child;
}

static int set_node(struct parser *p, int *set_index)
{
	int s = new_set(p);
	int n = s < 0 ? -1 : new_node(p, N_SET);
	if (n < 0)
		return -1;
	p->nodes[n].arg = s;
	*set_index = s;
	return n;
}

static int assert_node(struct parser *p, enum assert_kind kind)
{
	int n = new_node(p, N_ASSERT);
	if (n >= 0)
		p->nodes[n].arg = kind;
	return n;
}

static const struct {
	const char *name;
	int (*is)(int);
} classes[] = {
	{ "alnum", isalnum }, { "alpha", isalpha }, { "blank", isblank }, { "cntrl", iscntrl },
	{ "digit", isdigit }, { "graph", isgraph }, { "lower", islower }, { "print", isprint },
	{ "punct", ispunct }, { "space", isspace }, { "upper", isupper }, { "xdigit", isxdigit },
};

/* After '[': a bracket expression up to its ']'. */
static int parse_bracket(struct parser *p)
{
	size_t open = p->pos - 1;
	int si, n = set_node(p, &si);
	if (n < 0)
		return -1;
	struct set cls = { { 0 } };
	bool negate = p->pos < p->len && p->pattern[p->pos] == '^';
	if (negate)
		p->pos++;
	bool first = true;
	for (;;) {
		if (p->pos >= p->len)
			return fail(p, open, "unmatched '['; write '\\[' for the character");
		unsigned char c = (unsigned char)p->pattern[p->pos];
		if (c == ']' && !first) {
			p->pos++;
			break;
		}
		first = false;
		if (c == '[' && p->pos + 1 < p->len &&
		    (p->pattern[p->pos + 1] == '.' || p->pattern[p->pos + 1] == '=')) {
			return fail(p, p->pos, "collating elements '[.' and '[=' are not "
				    "supported; write the character itself");
		}
		if (c == '[' && p->pos + 1 < p->len && p->pattern[p->pos + 1] == ':') {
			const char *name = p->pattern + p->pos + 2;
			const char *end = strstr(name, ":]");
			size_t at = p->pos;
			bool found = false;
			for (size_t k = 0; end && k < sizeof(classes) / sizeof(classes[0]); k++) {
				if (strlen(classes[k].name) == (size_t)(end - name) &&
				    !memcmp(classes[k].name, name, (size_t)(end - name))) {
					set_add_class(&cls, classes[k].is, false);
					found = true;
				}
			}
			if (!found)
				return fail(p, at, "unknown character class; accepted are "
					    "[:alnum:], [:alpha:], [:blank:], [:cntrl:], [:digit:], "
					    "[:graph:], [:lower:], [:print:], [:punct:], [:space:], "
					    "[:upper:], [:xdigit:]");
			p->pos = (size_t)(end - p->pattern) + 2;
			continue;
		}
		unsigned lo = c, hi = c;
		p->pos++;
		if (p->pos + 1 < p->len && p->pattern[p->pos] == '-' &&
		    p->pattern[p->pos + 1] != ']') {
			hi = (unsigned char)p->pattern[p->pos + 1];
			if (hi < lo)
				return fail(p, p->pos - 1, "range out of order in '[...]'; "
					    "write the lower end first, as in [a-z]");
			p->pos += 2;
		}
		for (unsigned k = lo; k <= hi; k++)
			set_add(&cls, k);
	}
	struct set *s = &p->sets[si];
	for (unsigned c = 1; c < 256; c++)
		if (set_has(&cls, c) != negate)
			set_add(s, c);
	return n;
}

/* After '\': an escape outside brackets. */
static int parse_escape(struct parser *p)
{
	size_t at = p->pos - 1;
	if (p->pos >= p->len)
		return fail(p, at, "trailing '\\' escapes nothing; write '\\\\' for a "
			    "backslash");
	unsigned char c = (unsigned char)p->pattern[p->pos++];
	int si, n;
	switch (c) {
	case 'w': case 'W': case 's': case 'S':
		if ((n = set_node(p, &si)) >= 0)
			set_add_class(&p->sets[si], c == 'w' || c == 'W' ? is_word : isspace,
				      c == 'W' || c == 'S');
		return n;
	case 'b': return assert_node(p, A_WORD_BOUNDARY);
	case 'B': return assert_node(p, A_NOT_WORD_BOUNDARY);
	case '<': return assert_node(p, A_WORD_START);
	case '>': return assert_node(p, A_WORD_END);
	case '`': return assert_node(p, A_BOL);
	case '\'': return assert_node(p, A_EOL);
	default:
		break;
	}
	if (c >= '1' && c <= '9')
		return fail(p, at, "back-references (\\1 ... \\9) are not supported; no "
			    "linear-time matcher can have them");
	if (isalnum(c))
		return fail(p, at, "unknown escape; accepted are \\w \\W \\s \\S \\b \\B "
			    "\\< \\> and '\\' before a non-alphanumeric character");
	if ((n = set_node(p, &si)) >= 0)
		set_add(&p->sets[si], c);
	return n;
}

static int parse_alt(struct parser *p, int depth);

static int parse_atom(struct parser *p, int depth)
{
	unsigned char c = (unsigned char)p->pattern[p->pos++];
	int si, n;
	switch (c) {
	case '(': {
		size_t open = p->pos - 1;
		if (depth + 1 > RP_REGEX_MAX_DEPTH)
			return fail(p, open, "groups nested deeper than "
				    RP_REGEX_DEPTH_TEXT " levels");
		n = parse_alt(p, depth + 1);
		if (n < 0)
			return -1;
		if (p->pos >= p->len || p->pattern[p->pos] != ')')
			return fail(p, open, "unmatched '('; write '\\(' for the character");
		p->pos++;
		return n;
	}
	case '.':
		if ((n = set_node(p, &si)) >= 0)
			for (unsigned k = 1; k < 256; k++)
				set_add(&p->sets[si], k);
		return n;
	case '^': return assert_node(p, A_BOL);
	case '$': return assert_node(p, A_EOL);
	case '[': return parse_bracket(p);
	case '\\': return parse_escape(p);
	case '*': case '+': case '?': case '{': {
		char why[80];
		snprintf(why, sizeof(why), "'%c' repeats nothing; write '\\%c' for the character",
			 c, c);
		return fail(p, p->pos - 1, why);
	}
	default:
		if ((n = set_node(p, &si)) >= 0)
			set_add(&p->sets[si], c);
		return n;
	}
}

/* Reads "{n}", "{n,}" or "{n,m}" at p->pos (on the '{'). */
static int parse_interval(struct parser *p, int *min, int *max)
{
	size_t at = p->pos;
	const char *s = p->pattern + p->pos + 1;
	const char *accepted = "invalid repetition; expected {n}, {n,} or {n,m} with n <= m "
			       "<= " RP_REGEX_REPEAT_TEXT;
	long lo = 0, hi;
	if (!isdigit((unsigned char)*s))
		return fail(p, at, accepted);
	while (isdigit((unsigned char)*s) && lo <= RP_REGEX_MAX_REPEAT)
		lo = lo * 10 + (*s++ - '0');
	hi = lo;
	if (*s == ',') {
		s++;
		hi = -1;
		if (isdigit((unsigned char)*s)) {
			hi = 0;
			while (isdigit((unsigned char)*s) && hi <= RP_REGEX_MAX_REPEAT)
				hi = hi * 10 + (*s++ - '0');
		}
	}
	if (*s != '}' || lo > RP_REGEX_MAX_REPEAT || hi > RP_REGEX_MAX_REPEAT ||
	    (hi >= 0 && hi < lo))
		return fail(p, at, accepted);
	*min = (int)lo;
	*max = (int)hi;
	p->pos = (size_t)(s - p->pattern) + 1;
	return 0;
}

static int parse_piece(struct parser *p, int depth)
{
	int n = parse_atom(p, depth);
	int stacked = 0;
	while (n >= 0 && p->pos < p->len) {
		char c = p->pattern[p->pos];
		int min, max;
		if (c == '*')
			min = 0, max = -1;
		else if (c == '+')
			min = 1, max = -1;
		else if (c == '?')
			min = 0, max = 1;
		else if (c != '{')
			break;
		size_t at = p->pos;
		if (c == '{') {
			if (parse_interval(p, &min, &max))
				return -1;
		} else {
			p->pos++;
		}
		/* 'a++++' nests repetitions as deeply as '((((a)+)+)+)+' does. */
		if (depth + ++stacked > RP_REGEX_MAX_DEPTH)
			return fail(p, at, "repetitions stacked deeper than "
				    RP_REGEX_DEPTH_TEXT " levels");
		int r = new_node(p, N_REPEAT);
		if (r < 0)
			return -1;
		p->nodes[r].min = min;
		p->nodes[r].max = max;
		p->nodes[r].child = n;
		n = r;
	}
	return n;
}

static int parse_branch(struct parser *p, int depth)
{
	int cat = new_node(p, N_CAT);
	/* A ')' with no '(' open is an ordinary character, as glibc takes it. */
	while (cat >= 0 && p->pos < p->len && p->pattern[p->pos] != '|' &&
	       (p->pattern[p->pos] != ')' || depth == 0)) {
		int n = parse_piece(p, depth);
		if (n < 0)
			return -1;
		add_child(p, cat, n);
	}
	return cat;
}

static int parse_alt(struct parser *p, int depth)
{
	int alt = new_node(p, N_ALT);
	for (;;) {
		int b = alt < 0 ? -1 : parse_branch(p, depth);
		if (b < 0)
			return -1;
		add_child(p, alt, b);
		if (p->pos >= p->len || p->pattern[p->pos] != '|')
			return alt;
		p->pos++;
	}
}

/* ------------------------------------------------------------------------------------ */
/* Program                                                                              */
/* ------------------------------------------------------------------------------------ */

enum op { OP_SET, OP_ASSERT, OP_SPLIT, OP_JMP, OP_MATCH };

struct inst {
	enum op op;
	int x, y;                    /* OP_SET: set; OP_ASSERT: kind; OP_SPLIT/JMP: targets */
};

struct rp_regex {
	struct inst *prog;
	int count;
	struct set *sets;
};

/* How deeply repetitions nest below node n (a+ is 1, (a+)+ is 2). Bounded recursion, as
 * program_size. */
static int repeat_depth(const struct parser *p, int n)
{
	const struct node *nd = &p->nodes[n];
	if (nd->kind == N_REPEAT)
		return 1 + repeat_depth(p, nd->child);
	int depth = 0;
	if (nd->kind == N_CAT || nd->kind == N_ALT) {
		for (int c = nd->child; c >= 0; c = p->nodes[c].sibling) {
			int d = repeat_depth(p, c);
			depth = d > depth ? d : depth;
		}
	}
	return depth;
}

/* States a node compiles to, saturating past the limit; bounded recursion: the tree is
 * at most about 2 x RP_REGEX_MAX_DEPTH deep. */
static long program_size(const struct parser *p, int n)
{
	const struct node *nd = &p->nodes[n];
	long total = 0, limit = RP_REGEX_MAX_PROGRAM + 1;
	switch (nd->kind) {
	case N_EMPTY:
		return 0;
	case N_SET:
	case N_ASSERT:
		return 1;
	case N_CAT:
	case N_ALT:
		for (int c = nd->child; c >= 0 && total < limit; c = p->nodes[c].sibling)
			total += program_size(p, c) + (nd->kind == N_ALT ? 2 : 0);
		return total < limit ? total : limit;
	case N_REPEAT: {
		long body = program_size(p, nd->child);
		total = (long)nd->min * body;
		if (nd->max < 0)
			total += nd->min ? 1 : body + 2;
		else
			total += (long)(nd->max - nd->min) * (body + 1);
		return total < limit ? total : limit;
	}
	}
	return limit;
}

struct emitter {
	const struct parser *p;
	struct inst *prog;
	int count;
};

static int emit(struct emitter *e, enum op op, int x, int y)
{
	e->prog[e->count] = (struct inst){ op, x, y };
	return e->count++;
}

static void compile(struct emitter *e, int n)
{
	const struct node *nd = &e->p->nodes[n];
	switch (nd->kind) {
	case N_EMPTY:
		return;
	case N_SET:
		emit(e, OP_SET, nd->arg, 0);
		return;
	case N_ASSERT:
		emit(e, OP_ASSERT, nd->arg, 0);
		return;
	case N_CAT:
		for (int c = nd->child; c >= 0; c = e->p->nodes[c].sibling)
			compile(e, c);
		return;
	case N_ALT: {
		/* split L1, L2; L1: branch; jmp end; L2: split ... ; last: branch. The jumps
		 * to the end are chained through their targets until the end is known. */
		int chain = -1;
		for (int c = nd->child; c >= 0; c = e->p->nodes[c].sibling) {
			if (e->p->nodes[c].sibling < 0) {
				compile(e, c);
				break;
			}
			int split = emit(e, OP_SPLIT, 0, 0);
			e->prog[split].x = e->count;
			compile(e, c);
			chain = emit(e, OP_JMP, chain, 0);
			e->prog[split].y = e->count;
		}
		while (chain >= 0) {
			int previous = e->prog[chain].x;
			e->prog[chain].x = e->count;
			chain = previous;
		}
		return;
	}
	case N_REPEAT:
		/* x{n,} is n-1 copies of x, then x looping back on itself: one copy for 'x+',
		 * so that 'a++++' grows linearly, not by doubling. */
		for (int i = 0; i < nd->min - (nd->max < 0); i++)
			compile(e, nd->child);
		if (nd->max < 0 && nd->min) {
			int loop = e->count;
			compile(e, nd->child);
			emit(e, OP_SPLIT, loop, e->count + 1);
		} else if (nd->max < 0) {
			/* L: split body, out; body; jmp L */
			int split = emit(e, OP_SPLIT, 0, 0);
			e->prog[split].x = e->count;
			compile(e, nd->child);
			emit(e, OP_JMP, split, 0);
			e->prog[split].y = e->count;
		} else {
			for (int i = nd->min; i < nd->max; i++) {
				int split = emit(e, OP_SPLIT, 0, 0);
				e->prog[split].x = e->count;
				compile(e, nd->child);
				e->prog[split].y = e->count;
			}
		}
		return;
	}
}

struct rp_regex *rp_regex_compile(const char *pattern, char *err, size_t err_size)
{
	struct parser p = { .pattern = pattern, .len = strlen(pattern), .err = err,
			    .err_size = err_size };
	if (err_size)
		err[0] = '\0';
	if (p.len > RP_REGEX_MAX_LENGTH) {
		snprintf(err, err_size, "regular expression of %zu bytes; at most "
			 RP_REGEX_LENGTH_TEXT " are accepted", p.len);
		return NULL;
	}
	struct rp_regex *re = NULL;
	int root = parse_alt(&p, 0);
	if (!p.failed && repeat_depth(&p, root) > RP_REGEX_MAX_REPEAT_NESTING) {
		snprintf(err, err_size, "repetitions nested more than " RP_REGEX_NESTING_TEXT
			 " deep, as in ((a+)+)+; at most " RP_REGEX_NESTING_TEXT " are accepted");
		goto out;
	}
	if (p.failed)
		goto out;
	long size = program_size(&p, root) + 1;
	if (size > RP_REGEX_MAX_PROGRAM) {
		snprintf(err, err_size, "regular expression too large once its repetitions are "
			 "expanded (more than " RP_REGEX_PROGRAM_TEXT " states); use smaller "
			 "{n,m} counts");
		goto out;
	}
	re = calloc(1, sizeof(*re));
	struct inst *prog = malloc((size_t)size * sizeof(*prog));
	struct set *sets = malloc((size_t)(p.set_count ? p.set_count : 1) * sizeof(*sets));
	if (!re || !prog || !sets) {
		snprintf(err, err_size, "out of memory");
		free(re);
		free(prog);
		free(sets);
		re = NULL;
		goto out;
	}
	if (p.set_count) /* p.sets is NULL for a pattern of anchors only */
		memcpy(sets, p.sets, (size_t)p.set_count * sizeof(*sets));
	struct emitter e = { &p, prog, 0 };
	compile(&e, root);
	emit(&e, OP_MATCH, 0, 0);
	re->prog = prog;
	re->count = e.count;
	re->sets = sets;
out:
	free(p.nodes);
	free(p.sets);
	return re;
}

void rp_regex_destroy(struct rp_regex *re)
{
	if (!re)
		return;
	free(re->prog);
	free(re->sets);
	free(re);
}

/* ------------------------------------------------------------------------------------ */
/* Matching                                                                             */
/* ------------------------------------------------------------------------------------ */

/* A set of program counters with O(1) insert, test and clear (Briggs and Torczon). */
struct state_set {
	int *dense, *sparse;
	int count;
};

static bool state_in(const struct state_set *s, int pc)
{
	int i = s->sparse[pc];
	return i < s->count && s->dense[i] == pc;
}

static void state_put(struct state_set *s, int pc)
{
	s->sparse[pc] = s->count;
	s->dense[s->count++] = pc;
}

static bool assertion_holds(int kind, const unsigned char *subject, size_t i)
{
	bool before = i > 0 && is_word(subject[i - 1]);
	bool after = subject[i] && is_word(subject[i]);
	switch (kind) {
	case A_BOL: return i == 0;
	case A_EOL: return subject[i] == '\0';
	case A_WORD_BOUNDARY: return before != after;
	case A_NOT_WORD_BOUNDARY: return before == after;
	case A_WORD_START: return !before && after;
	case A_WORD_END: return before && !after;
	}
	return false;
}

/* Adds pc and every state reachable from it without consuming a byte; true when the
 * match state is among them. stack holds at most one entry per state: each is pushed
 * only when first put in the set. */
static bool add_state(const struct rp_regex *re, struct state_set *set, int *stack, int pc,
		      const unsigned char *subject, size_t i)
{
	if (state_in(set, pc))
		return false;
	int top = 0;
	state_put(set, pc);
	stack[top++] = pc;
	while (top) {
		const struct inst *in = &re->prog[stack[--top]];
		int next[2], count = 0;
		switch (in->op) {
		case OP_MATCH:
			return true;
		case OP_SET:
			continue;
		case OP_ASSERT:
			if (assertion_holds(in->x, subject, i))
				next[count++] = (int)(in - re->prog) + 1;
			break;
		case OP_JMP:
			next[count++] = in->x;
			break;
		case OP_SPLIT:
			next[count++] = in->y;
			next[count++] = in->x;
			break;
		}
		for (int k = 0; k < count; k++) {
			if (!state_in(set, next[k])) {
				state_put(set, next[k]);
				stack[top++] = next[k];
			}
		}
	}
	return false;
}

bool rp_regex_search(const struct rp_regex *re, const char *subject_text)
{
	const unsigned char *subject = (const unsigned char *)subject_text;
	int local[5 * 256], *mem = local;
	size_t n = (size_t)re->count;
	/* sparse arrays are read before written (state_in checks dense): initialise them
	 * anyway so that memory checkers see defined reads. */
	if (n > 256 && !(mem = calloc(5 * n, sizeof(*mem))))
		return false;
	if (mem == local)
		memset(local, 0, sizeof(local));
	struct state_set cur = { mem, mem + n, 0 }, next = { mem + 2 * n, mem + 3 * n, 0 };
	int *stack = mem + 4 * n;
	bool matched = false;
	for (size_t i = 0;; i++) {
		/* Unanchored: a match may start at every position. */
		if (add_state(re, &cur, stack, 0, subject, i)) {
			matched = true;
			break;
		}
		if (!subject[i])
			break;
		next.count = 0;
		for (int k = 0; k < cur.count && !matched; k++) {
			const struct inst *in = &re->prog[cur.dense[k]];
			if (in->op == OP_SET && set_has(&re->sets[in->x], subject[i]))
				matched = add_state(re, &next, stack, cur.dense[k] + 1, subject,
						    i + 1);
		}
		if (matched)
			break;
		struct state_set swap = cur;
		cur = next;
		next = swap;
	}
	if (mem != local)
		free(mem);
	return matched;
}
