/* inject/session/contexts.c - the contexts alive and rangeprof's state for each
 * (contexts.h), fed from CUPTI's resource callbacks (creation, destruction). A short list:
 * processes have a handful of contexts.
 * Calls: none (libc only).
 * Called by: launch.c (the resource callbacks), session.c (each context's state), early.c.
 * Lock: contexts_lock (the list). */
#include "inject/session/contexts.h"

#include <pthread.h>
#include <stdlib.h>

#include "common/error.h"

struct context_entry {
	struct context_entry *next;
	const void *ctx;
	inject_context_gen gen;
	void *state;
};

static struct context_entry *entries;
static inject_context_gen last_gen;
static pthread_mutex_t contexts_lock = PTHREAD_MUTEX_INITIALIZER;

static struct context_entry *find(const void *ctx)
{
	for (struct context_entry *e = entries; e; e = e->next)
		if (e->ctx == ctx)
			return e;
	return NULL;
}

inject_context_gen inject_contexts_created(const void *ctx)
{
	pthread_mutex_lock(&contexts_lock);
	struct context_entry *e = find(ctx);
	inject_context_gen gen = e ? e->gen : 0;
	if (!e && (e = calloc(1, sizeof(*e)))) {
		*e = (struct context_entry){ entries, ctx, ++last_gen, NULL };
		entries = e;
		gen = e->gen;
	}
	pthread_mutex_unlock(&contexts_lock);
	return gen;
}

inject_context_gen inject_contexts_generation(const void *ctx)
{
	pthread_mutex_lock(&contexts_lock);
	struct context_entry *e = find(ctx);
	inject_context_gen gen = e ? e->gen : 0;
	pthread_mutex_unlock(&contexts_lock);
	return gen;
}

void *inject_contexts_state(const void *ctx, inject_context_gen gen)
{
	pthread_mutex_lock(&contexts_lock);
	struct context_entry *e = find(ctx);
	void *state = e && e->gen == gen ? e->state : NULL;
	pthread_mutex_unlock(&contexts_lock);
	return state;
}

int inject_contexts_set_state(const void *ctx, inject_context_gen gen, void *state)
{
	pthread_mutex_lock(&contexts_lock);
	struct context_entry *e = find(ctx);
	int rc = e && e->gen == gen ? 0 : RP_ERR_FAILED;
	if (!rc)
		e->state = state;
	pthread_mutex_unlock(&contexts_lock);
	return rc;
}

void *inject_contexts_destroyed(const void *ctx)
{
	pthread_mutex_lock(&contexts_lock);
	void *state = NULL;
	for (struct context_entry **p = &entries; *p; p = &(*p)->next) {
		if ((*p)->ctx == ctx) {
			struct context_entry *e = *p;
			*p = e->next;
			state = e->state;
			free(e);
			break;
		}
	}
	pthread_mutex_unlock(&contexts_lock);
	return state;
}

unsigned inject_contexts_count(void)
{
	pthread_mutex_lock(&contexts_lock);
	unsigned n = 0;
	for (struct context_entry *e = entries; e; e = e->next)
		n++;
	pthread_mutex_unlock(&contexts_lock);
	return n;
}
