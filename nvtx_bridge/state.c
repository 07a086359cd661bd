/* nvtx_bridge/state.c - per-thread push/pop stacks, process-wide start/end ranges, and the
 * snapshot inject/ takes at every kernel launch.
 * Stacks are written only by their own thread (through the NVTX slots) and read only by
 * it (snapshots are taken in the launch callback, on the launching thread), so push and
 * pop take no lock and, once the buffers have grown, allocate nothing. Start/end ranges
 * may end on another thread: they sit in one list under a mutex, skipped entirely while
 * none is open.
 * Calls: registry.c (domains from handles, registered texts, the kept length and UTF-8
 * form of a text; it never calls back).
 * Called by: attach.c, expr.c, inject/ (the snapshot).
 * Lock: open_lock (the start/end ranges; the stacks are thread-local). */
#include "nvtx_bridge/slots.h"

#include <pthread.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct stack_entry {
	size_t text_offset;          /* into domain_stack.text; offsets survive realloc */
	uint64_t sequence;           /* push order across this thread's domains */
	size_t merged_index;         /* its place in the merged snapshot when pushed */
	enum nvtx_bridge_payload payload_type;
	uint64_t payload_bits;
	uint32_t category;
};

struct domain_stack {
	const struct nvtx_bridge_domain *domain;
	struct stack_entry *entries;
	size_t depth, capacity;
	size_t overflow;             /* pushes past NVTX_BRIDGE_MAX_DEPTH, counted only */
	char *text;                  /* texts of the open entries, LIFO like the entries */
	size_t text_used, text_capacity;
	size_t active_slot;          /* index in thread_state.active while depth > 0 */
};

struct thread_state {
	/* Open addressing by domain: sized by the domains this thread used, not by the
	 * largest domain id of the process (100 000 domains created elsewhere cost a thread
	 * nothing). domain NULL marks a free slot; slots are never removed. */
	struct domain_stack *stacks;
	size_t stack_capacity;       /* a power of two, or 0 */
	size_t stack_count;          /* slots in use */
	const struct nvtx_bridge_domain **active; /* domains whose stack has depth > 0 */
	size_t active_count, active_capacity;
	uint64_t next_sequence;
	size_t push_total;           /* sum of the stacks' depths */
	/* The merged push/pop ranges of the last snapshot: ranges[0 .. merged_valid) are
	 * still right, so a snapshot after a push or a pop re-merges only the tail and a
	 * launch costs the same at depth 10 000 as at depth 1. */
	size_t merged_valid;
	uint64_t *merged_seq;        /* sequence of each merged range */
	uint64_t *stamps;            /* id of the snapshot that last wrote each one */
	size_t merged_seq_capacity;
	uint64_t changes;            /* push/pop count: the snapshot is stale when it moves */
	uint64_t snapshot_changes;
	uint64_t snapshot_open_generation;
	bool snapshot_taken;
	struct nvtx_bridge_snapshot snapshot;
	struct nvtx_bridge_range *ranges;
	size_t range_capacity;
	char *copied_text;           /* start/end texts copied for the snapshot */
	size_t copied_capacity;
	void *cache;                 /* expr.c's, freed with the thread's state */
	void (*cache_cleanup)(void *);
};

static pthread_key_t thread_key;
static pthread_once_t thread_key_once = PTHREAD_ONCE_INIT;
static __thread struct thread_state *current;
/* Set once this thread's state is freed. NVTX calls made later on the same thread (by
 * another key's destructor, or a C++ thread_local's) then do nothing instead of
 * recreating the state, which nobody would free, or using the freed one. */
static __thread bool torn_down;
static atomic_uint_fast64_t snapshot_ids = 1;

static void thread_state_destroy(void *arg)
{
	struct thread_state *t = arg;
	/* First, so that nothing below or after can reach the memory being freed. */
	current = NULL;
	torn_down = true;
	for (size_t i = 0; i < t->stack_capacity; i++) {
		free(t->stacks[i].entries);
		free(t->stacks[i].text);
	}
	free(t->stacks);
	free(t->active);
	free(t->merged_seq);
	free(t->stamps);
	free(t->ranges);
	free(t->copied_text);
	if (t->cache_cleanup)
		t->cache_cleanup(t->cache);
	free(t->cache);
	free(t);
}

static void make_key(void)
{
	pthread_key_create(&thread_key, thread_state_destroy);
}

static struct thread_state *thread_state(void)
{
	if (current)
		return current;
	if (torn_down)
		return NULL;
	pthread_once(&thread_key_once, make_key);
	struct thread_state *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	if (pthread_setspecific(thread_key, t)) {
		free(t);
		return NULL;
	}
	current = t;
	return t;
}

void *bridge_thread_cache(size_t size, void (*cleanup)(void *))
{
	struct thread_state *t = thread_state();
	if (!t)
		return NULL;
	if (!t->cache && (t->cache = calloc(1, size)))
		t->cache_cleanup = cleanup;
	return t->cache;
}

static size_t slot_of(uint32_t id, size_t capacity)
{
	return (size_t)(id * 2654435761u) & (capacity - 1);
}

/* The stack of domain on this thread, or NULL when it has none. */
static struct domain_stack *find_stack(struct thread_state *t,
				       const struct nvtx_bridge_domain *domain)
{
	if (!t->stack_capacity)
		return NULL;
	for (size_t i = slot_of(bridge_domain_id(domain), t->stack_capacity);;
	     i = (i + 1) & (t->stack_capacity - 1)) {
		if (t->stacks[i].domain == domain)
			return &t->stacks[i];
		if (!t->stacks[i].domain)
			return NULL;
	}
}

/* The stack of domain on this thread, made on first use. */
static struct domain_stack *stack_for(struct thread_state *t,
				      const struct nvtx_bridge_domain *domain)
{
	struct domain_stack *s = find_stack(t, domain);
	if (s)
		return s;
	if (2 * (t->stack_count + 1) > t->stack_capacity) {
		size_t cap = t->stack_capacity ? 2 * t->stack_capacity : 8;
		struct domain_stack *grown = calloc(cap, sizeof(*grown));
		if (!grown)
			return NULL;
		for (size_t i = 0; i < t->stack_capacity; i++) {
			const struct domain_stack *old = &t->stacks[i];
			if (!old->domain)
				continue;
			size_t j = slot_of(bridge_domain_id(old->domain), cap);
			while (grown[j].domain)
				j = (j + 1) & (cap - 1);
			grown[j] = *old;
		}
		free(t->stacks);
		t->stacks = grown;
		t->stack_capacity = cap;
	}
	size_t i = slot_of(bridge_domain_id(domain), t->stack_capacity);
	while (t->stacks[i].domain)
		i = (i + 1) & (t->stack_capacity - 1);
	t->stacks[i].domain = domain;
	t->stack_count++;
	return &t->stacks[i];
}

/* ------------------------------------------------------------------------------------ */
/* Event attributes                                                                     */
/* ------------------------------------------------------------------------------------ */

struct event {
	const char *text;
	char *owned;                 /* converted from wide characters; freed by the caller */
	enum nvtx_bridge_payload payload_type;
	uint64_t payload_bits;
	uint32_t category;
};

static void event_from_attributes(const nvtxEventAttributes_t *attr, struct event *ev)
{
	memset(ev, 0, sizeof(*ev));
	ev->text = "";
	/* Attributes smaller than the fields we read come from a client we do not know;
	 * treat them as an unnamed range rather than read past them. */
	if (!attr || attr->version < 1 ||
	    attr->size < offsetof(nvtxEventAttributes_t, message) + sizeof(attr->message))
		return;
	ev->category = attr->category;
	switch (attr->messageType) {
	case NVTX_MESSAGE_TYPE_ASCII:
		ev->text = attr->message.ascii ? attr->message.ascii : "";
		break;
	case NVTX_MESSAGE_TYPE_UNICODE:
		if (attr->message.unicode && (ev->owned = bridge_utf8_from_wide(attr->message.unicode)))
			ev->text = ev->owned;
		break;
	case NVTX_MESSAGE_TYPE_REGISTERED:
		ev->text = bridge_registered_text(attr->message.registered);
		break;
	default:
		break;
	}
	union { uint64_t u; int64_t i; double d; } p;
	switch (attr->payloadType) {
	case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64:
		ev->payload_type = NVTX_BRIDGE_PAYLOAD_UINT;
		p.u = attr->payload.ullValue;
		break;
	case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32:
		ev->payload_type = NVTX_BRIDGE_PAYLOAD_UINT;
		p.u = attr->payload.uiValue;
		break;
	case NVTX_PAYLOAD_TYPE_INT64:
		ev->payload_type = NVTX_BRIDGE_PAYLOAD_INT;
		p.i = attr->payload.llValue;
		break;
	case NVTX_PAYLOAD_TYPE_INT32:
		ev->payload_type = NVTX_BRIDGE_PAYLOAD_INT;
		p.i = attr->payload.iValue;
		break;
	case NVTX_PAYLOAD_TYPE_DOUBLE:
		ev->payload_type = NVTX_BRIDGE_PAYLOAD_DOUBLE;
		p.d = attr->payload.dValue;
		break;
	case NVTX_PAYLOAD_TYPE_FLOAT:
		ev->payload_type = NVTX_BRIDGE_PAYLOAD_DOUBLE;
		p.d = attr->payload.fValue;
		break;
	default:
		return;
	}
	memcpy(&ev->payload_bits, &p, sizeof(p));
}

/* ------------------------------------------------------------------------------------ */
/* Push/pop                                                                             */
/* ------------------------------------------------------------------------------------ */

static bool activate(struct thread_state *t, struct domain_stack *s)
{
	if (t->active_count == t->active_capacity) {
		size_t cap = t->active_capacity ? 2 * t->active_capacity : 8;
		const struct nvtx_bridge_domain **grown = realloc(t->active, cap * sizeof(*grown));
		if (!grown)
			return false;
		t->active = grown;
		t->active_capacity = cap;
	}
	s->active_slot = t->active_count;
	t->active[t->active_count++] = s->domain;
	return true;
}

/* A thread that used more domains than this keeps buffers only for the open ones. */
#define KEPT_IDLE_STACKS 64

static void deactivate(struct thread_state *t, struct domain_stack *s)
{
	const struct nvtx_bridge_domain *last = t->active[--t->active_count];
	t->active[s->active_slot] = last;
	find_stack(t, last)->active_slot = s->active_slot;
	if (t->stack_count > KEPT_IDLE_STACKS) {
		free(s->entries);
		free(s->text);
		s->entries = NULL;
		s->text = NULL;
		s->capacity = s->text_capacity = s->text_used = 0;
	}
}

/* Range replay's hooks (nvtx_bridge.h): read at every range call, set once. */
static _Atomic(const struct nvtx_bridge_range_hooks *) range_hooks;

void nvtx_bridge_set_range_hooks(const struct nvtx_bridge_range_hooks *hooks)
{
	atomic_store(&range_hooks, hooks);
}

static const struct nvtx_bridge_range_hooks *hooks_now(void)
{
	return atomic_load_explicit(&range_hooks, memory_order_acquire);
}

static int push_unhooked(const struct nvtx_bridge_domain *domain, const struct event *ev);

/* A push, and range replay told of it once it took effect (not past the depth limit:
 * such a range is not kept, so no snapshot could name it). */
static int push(const struct nvtx_bridge_domain *domain, const struct event *ev)
{
	int level = push_unhooked(domain, ev);
	const struct nvtx_bridge_range_hooks *h = hooks_now();
	if (h && h->opened && level >= 0 && level < NVTX_BRIDGE_MAX_DEPTH) {
		struct thread_state *t = thread_state();
		struct domain_stack *s = t ? find_stack(t, domain) : NULL;
		if (s && !s->overflow && s->depth == (size_t)level + 1)
			h->opened(&(struct nvtx_bridge_range_key){ .domain = domain,
								  .depth = (size_t)level });
	}
	return level;
}

static int pop_unhooked(const struct nvtx_bridge_domain *domain);

/* A pop, range replay told first, while the range is still open. */
static int pop(const struct nvtx_bridge_domain *domain)
{
	const struct nvtx_bridge_range_hooks *h = hooks_now();
	if (h && h->closing) {
		struct thread_state *t = thread_state();
		struct domain_stack *s = t ? find_stack(t, domain) : NULL;
		if (s && s->depth > 0 && !s->overflow)
			h->closing(&(struct nvtx_bridge_range_key){ .domain = domain,
								   .depth = s->depth - 1 });
	}
	return pop_unhooked(domain);
}

static int push_unhooked(const struct nvtx_bridge_domain *domain, const struct event *ev)
{
	struct thread_state *t = thread_state();
	struct domain_stack *s = t ? stack_for(t, domain) : NULL;
	if (!s)
		return -1;
	/* Past the depth limit a push is only counted, so that memory stays bounded whatever
	 * the application does; the matching pop uncounts it. */
	if (s->depth == NVTX_BRIDGE_MAX_DEPTH || s->overflow) {
		s->overflow++;
		return (int)(s->depth + s->overflow - 1);
	}
	size_t len = bridge_kept_length(ev->text);
	if (s->depth == s->capacity) {
		size_t cap = s->capacity ? 2 * s->capacity : 16;
		struct stack_entry *grown = realloc(s->entries, cap * sizeof(*grown));
		if (!grown)
			return -1;
		s->entries = grown;
		s->capacity = cap;
	}
	if (s->text_used + len + 1 > s->text_capacity) {
		size_t cap = s->text_capacity ? 2 * s->text_capacity : 1024;
		while (cap < s->text_used + len + 1)
			cap *= 2;
		char *grown = realloc(s->text, cap);
		if (!grown)
			return -1;
		/* The merged snapshot points into the old buffer. */
		if (grown != s->text)
			t->merged_valid = 0;
		s->text = grown;
		s->text_capacity = cap;
	}
	if (s->depth == 0 && !activate(t, s))
		return -1;
	struct stack_entry *e = &s->entries[s->depth];
	e->text_offset = s->text_used;
	e->sequence = t->next_sequence++;
	e->merged_index = t->push_total;
	e->payload_type = ev->payload_type;
	e->payload_bits = ev->payload_bits;
	e->category = ev->category;
	memcpy(s->text + s->text_used, ev->text, len);
	s->text[s->text_used + len] = '\0';
	s->text_used += len + 1;
	t->push_total++;
	t->changes++;
	return (int)s->depth++;
}

static int pop_unhooked(const struct nvtx_bridge_domain *domain)
{
	struct thread_state *t = thread_state();
	struct domain_stack *s = t ? find_stack(t, domain) : NULL;
	/* The app may pop ranges pushed before we attached, or pop once too often; ignore
	 * the extra pop instead of underflowing, and say so as NVTX does: a negative level. */
	if (!s || (s->depth == 0 && s->overflow == 0))
		return -1;
	if (s->overflow) {
		s->overflow--;
		return (int)(s->depth + s->overflow);
	}
	s->depth--;
	struct stack_entry *e = &s->entries[s->depth];
	s->text_used = e->text_offset;
	/* Ranges merged before this one keep their places; it and those after it do not. */
	if (e->merged_index < t->merged_valid)
		t->merged_valid = e->merged_index;
	t->push_total--;
	t->changes++;
	if (s->depth == 0)
		deactivate(t, s);
	return (int)s->depth;
}

int bridge_range_push_a(const char *message)
{
	struct event ev = { .text = message ? message : "" };
	return push(bridge_domain_from_handle(NULL), &ev);
}

int bridge_range_push_w(const wchar_t *message)
{
	struct event ev = { .text = "" };
	if (message && (ev.owned = bridge_utf8_from_wide(message)))
		ev.text = ev.owned;
	int level = push(bridge_domain_from_handle(NULL), &ev);
	free(ev.owned);
	return level;
}

int bridge_domain_range_push_ex(nvtxDomainHandle_t domain, const nvtxEventAttributes_t *attr)
{
	struct event ev;
	event_from_attributes(attr, &ev);
	int level = push(bridge_domain_from_handle(domain), &ev);
	free(ev.owned);
	return level;
}

int bridge_range_push_ex(const nvtxEventAttributes_t *attr)
{
	return bridge_domain_range_push_ex(NULL, attr);
}

int bridge_domain_range_pop(nvtxDomainHandle_t domain)
{
	return pop(bridge_domain_from_handle(domain));
}

int bridge_range_pop(void)
{
	return pop(bridge_domain_from_handle(NULL));
}

/* ------------------------------------------------------------------------------------ */
/* Start/end                                                                            */
/* ------------------------------------------------------------------------------------ */

struct open_range {
	nvtxRangeId_t id;
	const struct nvtx_bridge_domain *domain;
	char *text;                  /* NULL: ended, waiting for compaction */
	size_t text_len;
	enum nvtx_bridge_payload payload_type;
	uint64_t payload_bits;
	uint32_t category;
};

/* Open start/end ranges in start order, which is also id order (ids are drawn under the
 * lock), so that an end finds its range by binary search. An ended range is marked and
 * compacted away once ended ones are half the list: ending is O(log n) amortised,
 * however many ranges are open. */
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static struct open_range *open_ranges;
static size_t open_used, open_capacity;  /* entries, including ended ones */
static size_t open_count;                 /* entries still open */
static size_t open_text_bytes;            /* their texts, with NULs */
static atomic_size_t open_count_hint;     /* read without the lock by snapshots */
static atomic_uint_fast64_t open_generation = 1; /* moves at every start and end */
static nvtxRangeId_t next_range_id = 1;

static nvtxRangeId_t start_unhooked(const struct nvtx_bridge_domain *domain,
				    const struct event *ev);

/* A start, range replay told once it took effect. */
static nvtxRangeId_t start(const struct nvtx_bridge_domain *domain, const struct event *ev)
{
	nvtxRangeId_t id = start_unhooked(domain, ev);
	const struct nvtx_bridge_range_hooks *h = hooks_now();
	if (h && h->opened && id)
		h->opened(&(struct nvtx_bridge_range_key){ .start_end = true, .domain = domain,
							  .id = id });
	return id;
}

static nvtxRangeId_t start_unhooked(const struct nvtx_bridge_domain *domain,
				    const struct event *ev)
{
	size_t len = bridge_kept_length(ev->text);
	char *text = malloc(len + 1);
	if (!text)
		return 0;
	memcpy(text, ev->text, len);
	text[len] = '\0';
	pthread_mutex_lock(&open_lock);
	if (open_used == open_capacity) {
		size_t cap = open_capacity ? 2 * open_capacity : 16;
		struct open_range *grown = realloc(open_ranges, cap * sizeof(*grown));
		if (!grown) {
			pthread_mutex_unlock(&open_lock);
			free(text);
			return 0;
		}
		open_ranges = grown;
		open_capacity = cap;
	}
	nvtxRangeId_t id = next_range_id++;
	open_ranges[open_used++] = (struct open_range){ id, domain, text, len, ev->payload_type,
							ev->payload_bits, ev->category };
	open_count++;
	open_text_bytes += len + 1;
	atomic_store(&open_count_hint, open_count);
	atomic_fetch_add(&open_generation, 1);
	pthread_mutex_unlock(&open_lock);
	return id;
}

nvtxRangeId_t bridge_range_start_a(const char *message)
{
	struct event ev = { .text = message ? message : "" };
	return start(bridge_domain_from_handle(NULL), &ev);
}

nvtxRangeId_t bridge_range_start_w(const wchar_t *message)
{
	struct event ev = { .text = "" };
	if (message && (ev.owned = bridge_utf8_from_wide(message)))
		ev.text = ev.owned;
	nvtxRangeId_t id = start(bridge_domain_from_handle(NULL), &ev);
	free(ev.owned);
	return id;
}

nvtxRangeId_t bridge_domain_range_start_ex(nvtxDomainHandle_t domain,
					   const nvtxEventAttributes_t *attr)
{
	struct event ev;
	event_from_attributes(attr, &ev);
	nvtxRangeId_t id = start(bridge_domain_from_handle(domain), &ev);
	free(ev.owned);
	return id;
}

nvtxRangeId_t bridge_range_start_ex(const nvtxEventAttributes_t *attr)
{
	return bridge_domain_range_start_ex(NULL, attr);
}

static void end_unhooked(nvtxRangeId_t id);

/* An end, range replay told first, while the range is still open. */
void bridge_range_end(nvtxRangeId_t id)
{
	const struct nvtx_bridge_range_hooks *h = hooks_now();
	if (h && h->closing && id)
		h->closing(&(struct nvtx_bridge_range_key){ .start_end = true, .id = id });
	end_unhooked(id);
}

static void end_unhooked(nvtxRangeId_t id)
{
	char *text = NULL;
	pthread_mutex_lock(&open_lock);
	size_t lo = 0, hi = open_used;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		/* Ended entries keep their ids, so the list stays sorted for the search. */
		if (open_ranges[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < open_used && open_ranges[lo].id == id && open_ranges[lo].text) {
		text = open_ranges[lo].text;
		open_ranges[lo].text = NULL;
		open_text_bytes -= open_ranges[lo].text_len + 1;
		open_count--;
		atomic_fetch_add(&open_generation, 1);
	}
	if (open_used > 16 && open_count < open_used / 2) {
		size_t w = 0;
		for (size_t r = 0; r < open_used; r++)
			if (open_ranges[r].text)
				open_ranges[w++] = open_ranges[r];
		open_used = w;
	}
	atomic_store(&open_count_hint, open_count);
	pthread_mutex_unlock(&open_lock);
	free(text);
}

void bridge_domain_range_end(nvtxDomainHandle_t domain, nvtxRangeId_t id)
{
	(void)domain; /* ids are unique across domains */
	bridge_range_end(id);
}

/* ------------------------------------------------------------------------------------ */
/* Snapshot                                                                             */
/* ------------------------------------------------------------------------------------ */

static bool reserve_ranges(struct thread_state *t, size_t count)
{
	if (count <= t->range_capacity)
		return true;
	size_t cap = t->range_capacity ? t->range_capacity : 16;
	while (cap < count)
		cap *= 2;
	struct nvtx_bridge_range *grown = realloc(t->ranges, cap * sizeof(*grown));
	if (!grown)
		return false;
	t->ranges = grown;
	t->range_capacity = cap;
	return true;
}

static bool reserve_sequences(struct thread_state *t, size_t count)
{
	if (count <= t->merged_seq_capacity)
		return true;
	size_t cap = t->merged_seq_capacity ? t->merged_seq_capacity : 16;
	while (cap < count)
		cap *= 2;
	uint64_t *grown = realloc(t->merged_seq, cap * sizeof(*grown));
	if (!grown)
		return false;
	t->merged_seq = grown;
	if (!(grown = realloc(t->stamps, cap * sizeof(*grown))))
		return false;
	t->stamps = grown;
	t->merged_seq_capacity = cap;
	return true;
}

static void set_payload(struct nvtx_bridge_range *r, enum nvtx_bridge_payload type,
			uint64_t bits)
{
	r->payload_type = type;
	memcpy(&r->payload, &bits, sizeof(bits));
}

/* Entries of s pushed at or before sequence seq: the stack is in sequence order. */
static size_t entries_up_to(const struct domain_stack *s, uint64_t seq)
{
	size_t lo = 0, hi = s->depth;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->entries[mid].sequence <= seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Brings t->ranges[0 .. push_total) up to date, re-merging only what changed since the
 * last snapshot: after a push or a pop, one range, stamped with the new snapshot's id.
 * Returns how many are valid. */
static size_t snapshot_push_ranges(struct thread_state *t, uint64_t id)
{
	size_t total = t->push_total;
	if (t->merged_valid > total)
		t->merged_valid = total;
	if (t->merged_valid == total)
		return total;
	if (!reserve_ranges(t, total) || !reserve_sequences(t, total)) {
		t->merged_valid = 0;
		return 0;
	}
	/* Merge the active stacks by push order from the first stale place on: the result
	 * lists ranges outermost first whichever domain they belong to. The cursor of each
	 * stack is found by sequence; few domains are active at once. */
	size_t n = t->merged_valid;
	uint64_t after = n ? t->merged_seq[n - 1] : 0;
	/* Per active stack: where it is and its merge cursor. */
	struct merge { struct domain_stack *s; size_t cursor; } local[16], *m = local;
	if (t->active_count > 16 && !(m = malloc(t->active_count * sizeof(*m)))) {
		t->merged_valid = 0;
		return 0;
	}
	for (size_t a = 0; a < t->active_count; a++) {
		m[a].s = find_stack(t, t->active[a]);
		m[a].cursor = n ? entries_up_to(m[a].s, after) : 0;
	}
	for (; n < total; n++) {
		size_t best = 0;
		uint64_t best_seq = UINT64_MAX;
		for (size_t a = 0; a < t->active_count; a++) {
			if (m[a].cursor < m[a].s->depth &&
			    m[a].s->entries[m[a].cursor].sequence < best_seq) {
				best = a;
				best_seq = m[a].s->entries[m[a].cursor].sequence;
			}
		}
		struct domain_stack *s = m[best].s;
		struct stack_entry *e = &s->entries[m[best].cursor++];
		struct nvtx_bridge_range *r = &t->ranges[n];
		e->merged_index = n;
		t->merged_seq[n] = e->sequence;
		t->stamps[n] = id;
		r->domain = s->domain;
		r->text = s->text + e->text_offset;
		r->start_end = false;
		r->category = e->category;
		set_payload(r, e->payload_type, e->payload_bits);
	}
	if (m != local)
		free(m);
	t->merged_valid = total;
	return total;
}

static size_t snapshot_start_end(struct thread_state *t, size_t first)
{
	pthread_mutex_lock(&open_lock);
	size_t added = 0;
	size_t text_bytes = open_text_bytes;
	if (reserve_ranges(t, first + open_count)) {
		if (text_bytes > t->copied_capacity) {
			char *grown = realloc(t->copied_text, 2 * text_bytes);
			if (grown) {
				t->copied_text = grown;
				t->copied_capacity = 2 * text_bytes;
			}
		}
		if (text_bytes <= t->copied_capacity) {
			/* Copied under the lock: another thread may end the range and free its
			 * text as soon as we let go. */
			char *w = t->copied_text;
			for (size_t i = 0; i < open_used; i++) {
				const struct open_range *o = &open_ranges[i];
				if (!o->text)
					continue;
				struct nvtx_bridge_range *r = &t->ranges[first + added++];
				memcpy(w, o->text, o->text_len + 1);
				r->domain = o->domain;
				r->text = w;
				r->start_end = true;
				r->category = o->category;
				set_payload(r, o->payload_type, o->payload_bits);
				w += o->text_len + 1;
			}
		}
	}
	pthread_mutex_unlock(&open_lock);
	return added;
}

const struct nvtx_bridge_snapshot *nvtx_bridge_snapshot(void)
{
	static const struct nvtx_bridge_snapshot empty = { NULL, NULL, 0, 0, 0 };
	struct thread_state *t = thread_state();
	if (!t)
		return &empty;
	uint64_t generation = atomic_load_explicit(&open_generation, memory_order_acquire);
	bool any_open = atomic_load_explicit(&open_count_hint, memory_order_relaxed) != 0;
	bool had_open = t->snapshot.count > t->snapshot.push_count;
	/* Nothing changed since the last launch on this thread: the same snapshot, same id,
	 * so that filters can reuse their verdict. Costs the same at any depth. */
	if (t->snapshot_taken && t->snapshot_changes == t->changes &&
	    ((!any_open && !had_open) || generation == t->snapshot_open_generation))
		return &t->snapshot;
	uint64_t id = atomic_fetch_add_explicit(&snapshot_ids, 1, memory_order_relaxed);
	size_t push_count = snapshot_push_ranges(t, id);
	size_t start_end = any_open ? snapshot_start_end(t, push_count) : 0;
	t->snapshot.ranges = t->ranges;
	t->snapshot.stamps = t->stamps;
	t->snapshot.push_count = push_count;
	t->snapshot.count = push_count + start_end;
	t->snapshot.id = id;
	t->snapshot_taken = push_count == t->push_total; /* not after an allocation failure */
	t->snapshot_changes = t->changes;
	t->snapshot_open_generation = generation;
	return &t->snapshot;
}

void nvtx_bridge_path(const struct nvtx_bridge_snapshot *snap, char *buf, size_t size)
{
	size_t n = 0;
	if (size)
		buf[0] = '\0';
	for (size_t i = 0; i < snap->push_count && n + 1 < size; i++) {
		int w = snprintf(buf + n, size - n, "%s%s", i ? "/" : "", snap->ranges[i].text);
		if (w < 0)
			break;
		n += (size_t)w;
	}
}
