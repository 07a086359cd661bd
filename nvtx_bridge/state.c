/* nvtx_bridge/state.c - per-thread push/pop stacks, process-wide start/end ranges, and the
 * snapshot inject/ takes at every kernel launch.
 * Stacks are written only by their own thread (through the NVTX slots) and read only by
 * it (snapshots are taken in the launch callback, on the launching thread), so push and
 * pop take no lock and, once the buffers have grown, allocate nothing. Start/end ranges
 * may end on another thread: they sit in one list under a mutex, skipped entirely while
 * none is open. Calls libc only. */
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
	enum nvtx_bridge_payload payload_type;
	uint64_t payload_bits;
	uint32_t category;
};

struct domain_stack {
	const struct nvtx_bridge_domain *domain;
	struct stack_entry *entries;
	size_t depth, capacity;
	char *text;                  /* texts of the open entries, LIFO like the entries */
	size_t text_used, text_capacity;
};

struct thread_state {
	struct domain_stack *stacks; /* by domain id */
	size_t stack_count;
	uint64_t next_sequence;
	struct nvtx_bridge_snapshot snapshot;
	struct nvtx_bridge_range *ranges;
	size_t range_capacity;
	char *copied_text;           /* start/end texts copied for the snapshot */
	size_t copied_capacity;
	size_t *cursor;              /* per-stack merge cursor */
	size_t cursor_capacity;
};

static pthread_key_t thread_key;
static pthread_once_t thread_key_once = PTHREAD_ONCE_INIT;
static __thread struct thread_state *current;

static void thread_state_destroy(void *arg)
{
	struct thread_state *t = arg;
	for (size_t i = 0; i < t->stack_count; i++) {
		free(t->stacks[i].entries);
		free(t->stacks[i].text);
	}
	free(t->stacks);
	free(t->ranges);
	free(t->copied_text);
	free(t->cursor);
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
	pthread_once(&thread_key_once, make_key);
	struct thread_state *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	pthread_setspecific(thread_key, t);
	current = t;
	return t;
}

static struct domain_stack *stack_for(struct thread_state *t,
				      const struct nvtx_bridge_domain *domain)
{
	uint32_t id = bridge_domain_id(domain);
	if (id >= t->stack_count) {
		size_t count = id + 4;
		struct domain_stack *grown = realloc(t->stacks, count * sizeof(*grown));
		if (!grown)
			return NULL;
		memset(grown + t->stack_count, 0, (count - t->stack_count) * sizeof(*grown));
		t->stacks = grown;
		t->stack_count = count;
	}
	struct domain_stack *s = &t->stacks[id];
	s->domain = domain;
	return s;
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

static int push(const struct nvtx_bridge_domain *domain, const struct event *ev)
{
	struct thread_state *t = thread_state();
	struct domain_stack *s = t ? stack_for(t, domain) : NULL;
	if (!s)
		return -1;
	size_t len = strlen(ev->text) + 1;
	if (s->depth == s->capacity) {
		size_t cap = s->capacity ? 2 * s->capacity : 16;
		struct stack_entry *grown = realloc(s->entries, cap * sizeof(*grown));
		if (!grown)
			return -1;
		s->entries = grown;
		s->capacity = cap;
	}
	if (s->text_used + len > s->text_capacity) {
		size_t cap = s->text_capacity ? 2 * s->text_capacity : 1024;
		while (cap < s->text_used + len)
			cap *= 2;
		char *grown = realloc(s->text, cap);
		if (!grown)
			return -1;
		s->text = grown;
		s->text_capacity = cap;
	}
	struct stack_entry *e = &s->entries[s->depth];
	e->text_offset = s->text_used;
	e->sequence = t->next_sequence++;
	e->payload_type = ev->payload_type;
	e->payload_bits = ev->payload_bits;
	e->category = ev->category;
	memcpy(s->text + s->text_used, ev->text, len);
	s->text_used += len;
	return (int)s->depth++;
}

static int pop(const struct nvtx_bridge_domain *domain)
{
	struct thread_state *t = thread_state();
	struct domain_stack *s = t ? stack_for(t, domain) : NULL;
	/* The app may pop ranges pushed before we attached, or pop once too often; ignore
	 * the extra pop instead of underflowing, and say so as NVTX does: a negative level. */
	if (!s || s->depth == 0)
		return -1;
	s->depth--;
	s->text_used = s->entries[s->depth].text_offset;
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
	char *text;
	enum nvtx_bridge_payload payload_type;
	uint64_t payload_bits;
	uint32_t category;
};

static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static struct open_range *open_ranges;   /* in start order */
static size_t open_count, open_capacity;
static atomic_size_t open_count_hint;    /* read without the lock by snapshots */
static atomic_uint_fast64_t next_range_id = 1;

static nvtxRangeId_t start(const struct nvtx_bridge_domain *domain, const struct event *ev)
{
	char *text = strdup(ev->text);
	if (!text)
		return 0;
	nvtxRangeId_t id = atomic_fetch_add(&next_range_id, 1);
	pthread_mutex_lock(&open_lock);
	if (open_count == open_capacity) {
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
	open_ranges[open_count++] = (struct open_range){ id, domain, text, ev->payload_type,
							 ev->payload_bits, ev->category };
	atomic_store(&open_count_hint, open_count);
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

void bridge_range_end(nvtxRangeId_t id)
{
	char *text = NULL;
	pthread_mutex_lock(&open_lock);
	for (size_t i = 0; i < open_count; i++) {
		if (open_ranges[i].id == id) {
			text = open_ranges[i].text;
			memmove(&open_ranges[i], &open_ranges[i + 1],
				(open_count - i - 1) * sizeof(*open_ranges));
			open_count--;
			break;
		}
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

static void set_payload(struct nvtx_bridge_range *r, enum nvtx_bridge_payload type,
			uint64_t bits)
{
	r->payload_type = type;
	memcpy(&r->payload, &bits, sizeof(bits));
}

static size_t snapshot_push_ranges(struct thread_state *t)
{
	size_t total = 0;
	if (t->cursor_capacity < t->stack_count) {
		size_t *grown = realloc(t->cursor, t->stack_count * sizeof(*grown));
		if (!grown)
			return 0;
		t->cursor = grown;
		t->cursor_capacity = t->stack_count;
	}
	for (size_t i = 0; i < t->stack_count; i++) {
		total += t->stacks[i].depth;
		t->cursor[i] = 0;
	}
	if (!reserve_ranges(t, total))
		return 0;
	/* Merge the domains' stacks by push order: the result lists ranges outermost first
	 * whichever domain they belong to. Stacks are few; a linear pick is fine. */
	for (size_t n = 0; n < total; n++) {
		size_t best = 0;
		uint64_t best_seq = UINT64_MAX;
		for (size_t i = 0; i < t->stack_count; i++) {
			struct domain_stack *s = &t->stacks[i];
			if (t->cursor[i] < s->depth && s->entries[t->cursor[i]].sequence < best_seq) {
				best = i;
				best_seq = s->entries[t->cursor[i]].sequence;
			}
		}
		struct domain_stack *s = &t->stacks[best];
		struct stack_entry *e = &s->entries[t->cursor[best]++];
		struct nvtx_bridge_range *r = &t->ranges[n];
		r->domain = s->domain;
		r->text = s->text + e->text_offset;
		r->start_end = false;
		r->category = e->category;
		set_payload(r, e->payload_type, e->payload_bits);
	}
	return total;
}

static size_t snapshot_start_end(struct thread_state *t, size_t first)
{
	pthread_mutex_lock(&open_lock);
	size_t text_bytes = 0;
	for (size_t i = 0; i < open_count; i++)
		text_bytes += strlen(open_ranges[i].text) + 1;
	size_t added = 0;
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
			for (size_t i = 0; i < open_count; i++) {
				struct nvtx_bridge_range *r = &t->ranges[first + i];
				size_t len = strlen(open_ranges[i].text) + 1;
				memcpy(w, open_ranges[i].text, len);
				r->domain = open_ranges[i].domain;
				r->text = w;
				r->start_end = true;
				r->category = open_ranges[i].category;
				set_payload(r, open_ranges[i].payload_type,
					    open_ranges[i].payload_bits);
				w += len;
			}
			added = open_count;
		}
	}
	pthread_mutex_unlock(&open_lock);
	return added;
}

const struct nvtx_bridge_snapshot *nvtx_bridge_snapshot(void)
{
	static const struct nvtx_bridge_snapshot empty = { NULL, 0, 0 };
	struct thread_state *t = thread_state();
	if (!t)
		return &empty;
	size_t push_count = snapshot_push_ranges(t);
	size_t start_end = 0;
	if (atomic_load_explicit(&open_count_hint, memory_order_relaxed))
		start_end = snapshot_start_end(t, push_count);
	t->snapshot.ranges = t->ranges;
	t->snapshot.push_count = push_count;
	t->snapshot.count = push_count + start_end;
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
