/* nvtx_bridge/registry.c - NVTX domains, registered strings and category names.
 * Written from any application thread through the NVTX slots, read by state.c and, when
 * records are written, by collector/ through inject/. Objects live until the process
 * ends: a handle given to the application must stay valid, and snapshots point at
 * domain names. So that memory grows with what is distinct and not with the number of
 * calls, everything is interned: registering a string again, re-creating a domain of a
 * name seen before (destroyed or not) or naming a category with a name it had before
 * returns what exists, found through hash tables. Never state.c's, so that the calls
 * inside nvtx_bridge/ run one way (scripts/call_graph.py checks it).
 * Calls: none (libc only).
 * Called by: state.c (domains, registered texts, bridge_kept_length,
 * bridge_utf8_from_wide), attach.c, expr.c, inject/.
 * Lock: registry_lock (domains, strings and categories). */
#include "nvtx_bridge/slots.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct category_name {
	uint32_t id;
	char *name;
};

/* The application sees this as nvtxDomainHandle_t. */
struct nvtxDomainRegistration_st {
	uint32_t id;                 /* 0 is the default domain */
	char *name;
	bool destroyed;
	struct category_name *categories;
	size_t category_count;
	char **names;                /* every category name given, current or replaced */
	size_t name_count;
	struct nvtxDomainRegistration_st *next_by_name;
};

struct nvtxStringRegistration_st {
	const struct nvtx_bridge_domain *domain;
	char *text;
	struct nvtxStringRegistration_st *next;
};

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nvtxDomainRegistration_st default_domain = { .name = "" };
static size_t domain_count = 1;          /* ids handed out, the default's included */

/* Chained hash tables, doubled when their load passes 1. */
struct table {
	void **buckets;
	size_t bucket_count, count;
};
static struct table domains_by_name, strings;

static size_t hash_prefix(const char *s, size_t len, const void *salt);

static size_t hash(const char *s, const void *salt)
{
	return hash_prefix(s, strlen(s), salt);
}

/* Makes room for one more entry; next_of gives an entry's chain link, key_of its hash.
 * On allocation failure the table stays as it is, only longer chains. */
static void table_grow(struct table *t, void **(*next_of)(void *), size_t (*key_of)(void *))
{
	if (t->count < t->bucket_count)
		return;
	size_t count = t->bucket_count ? 2 * t->bucket_count : 64;
	void **grown = calloc(count, sizeof(*grown));
	if (!grown)
		return;
	for (size_t b = 0; b < t->bucket_count; b++) {
		for (void *e = t->buckets[b], *next; e; e = next) {
			next = *next_of(e);
			size_t nb = key_of(e) % count;
			*next_of(e) = grown[nb];
			grown[nb] = e;
		}
	}
	free(t->buckets);
	t->buckets = grown;
	t->bucket_count = count;
}

static void **domain_next(void *e)
{
	return (void **)&((struct nvtxDomainRegistration_st *)e)->next_by_name;
}

static size_t domain_key(void *e)
{
	return hash(((struct nvtxDomainRegistration_st *)e)->name, NULL);
}

static void **string_next(void *e)
{
	return (void **)&((struct nvtxStringRegistration_st *)e)->next;
}

static size_t string_key(void *e)
{
	struct nvtxStringRegistration_st *s = e;
	return hash(s->text, s->domain);
}

/* Bytes of text kept for a range, a domain or a registered string: the name up to
 * NVTX_BRIDGE_MAX_TEXT bytes, cut at a UTF-8 character boundary so that a cut name stays
 * valid where the whole one was. Here, with the other text helpers, so that state.c's
 * ranges and the registry's names are cut alike while calls run state.c -> registry.c
 * only. */
size_t bridge_kept_length(const char *text)
{
	size_t len = strnlen(text, NVTX_BRIDGE_MAX_TEXT + 1);
	if (len <= NVTX_BRIDGE_MAX_TEXT)
		return len;
	len = NVTX_BRIDGE_MAX_TEXT;
	while (len > 0 && ((unsigned char)text[len] & 0xC0) == 0x80)
		len--;
	return len;
}

/* A copy of at most NVTX_BRIDGE_MAX_TEXT bytes of s, cut as ranges' texts are. */
static char *kept_copy(const char *s)
{
	size_t len = bridge_kept_length(s);
	char *copy = malloc(len + 1);
	if (copy) {
		memcpy(copy, s, len);
		copy[len] = '\0';
	}
	return copy;
}

struct nvtx_bridge_domain *bridge_domain_from_handle(nvtxDomainHandle_t handle)
{
	return (struct nvtx_bridge_domain *)(handle ? handle : &default_domain);
}

uint32_t bridge_domain_id(const struct nvtx_bridge_domain *domain)
{
	return ((const struct nvtxDomainRegistration_st *)domain)->id;
}

const char *nvtx_bridge_domain_name(const struct nvtx_bridge_domain *domain)
{
	return domain ? ((const struct nvtxDomainRegistration_st *)domain)->name : "";
}

char *bridge_utf8_from_wide(const wchar_t *s)
{
	size_t n = 0;
	for (const wchar_t *p = s; *p; p++)
		n++;
	char *out = malloc(4 * n + 1), *w = out;
	if (!out)
		return NULL;
	for (const wchar_t *p = s; *p; p++) {
		unsigned long c = (unsigned long)*p;
		if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
			c = 0xFFFD;
		if (c < 0x80) {
			*w++ = (char)c;
		} else if (c < 0x800) {
			*w++ = (char)(0xC0 | (c >> 6));
			*w++ = (char)(0x80 | (c & 0x3F));
		} else if (c < 0x10000) {
			*w++ = (char)(0xE0 | (c >> 12));
			*w++ = (char)(0x80 | ((c >> 6) & 0x3F));
			*w++ = (char)(0x80 | (c & 0x3F));
		} else {
			*w++ = (char)(0xF0 | (c >> 18));
			*w++ = (char)(0x80 | ((c >> 12) & 0x3F));
			*w++ = (char)(0x80 | ((c >> 6) & 0x3F));
			*w++ = (char)(0x80 | (c & 0x3F));
		}
	}
	*w = '\0';
	return out;
}

/* The domain named by the first NVTX_BRIDGE_MAX_TEXT bytes of name, made on first use.
 * The same name gives the same domain, so that libraries that each create "NVTX" share
 * one stack, as Nsight tools show them; a destroyed one comes back with its id, so that
 * creating and destroying in a loop costs no memory (nor an allocation once known). */
static nvtxDomainHandle_t domain_create(const char *name)
{
	size_t len = bridge_kept_length(name);
	size_t h = hash_prefix(name, len, NULL);
	pthread_mutex_lock(&registry_lock);
	struct nvtxDomainRegistration_st *d = NULL;
	if (domains_by_name.bucket_count) {
		d = domains_by_name.buckets[h % domains_by_name.bucket_count];
		while (d && (strncmp(d->name, name, len) || d->name[len]))
			d = d->next_by_name;
	}
	if (d) {
		d->destroyed = false;
		pthread_mutex_unlock(&registry_lock);
		return d;
	}
	table_grow(&domains_by_name, domain_next, domain_key);
	char *copy = kept_copy(name);
	if (!copy || domain_count > UINT32_MAX - 1 || !domains_by_name.bucket_count ||
	    !(d = calloc(1, sizeof(*d)))) {
		pthread_mutex_unlock(&registry_lock);
		free(copy);
		return NULL; /* NULL is the default domain: degrade, do not fail the app */
	}
	d->id = (uint32_t)domain_count++;
	d->name = copy;
	size_t b = h % domains_by_name.bucket_count;
	d->next_by_name = domains_by_name.buckets[b];
	domains_by_name.buckets[b] = d;
	domains_by_name.count++;
	pthread_mutex_unlock(&registry_lock);
	return d;
}

nvtxDomainHandle_t bridge_domain_create_a(const char *name)
{
	return domain_create(name ? name : "");
}

nvtxDomainHandle_t bridge_domain_create_w(const wchar_t *name)
{
	char *utf8 = name ? bridge_utf8_from_wide(name) : NULL;
	nvtxDomainHandle_t d = domain_create(utf8 ? utf8 : "");
	free(utf8);
	return d;
}

void bridge_domain_destroy(nvtxDomainHandle_t domain)
{
	if (!domain || domain == &default_domain)
		return;
	pthread_mutex_lock(&registry_lock);
	/* Kept in memory: ranges still open on other threads and snapshots refer to it. A
	 * later domain of the same name is this one again. */
	domain->destroyed = true;
	pthread_mutex_unlock(&registry_lock);
}

/* Takes ownership of name. Every name a domain's categories were given is kept, once:
 * a record being written on another thread may still read a replaced one, and renaming
 * in a loop must not grow memory. Categories are few; names are found by a scan. */
static void name_category(nvtxDomainHandle_t handle, uint32_t category, char *name)
{
	if (!name)
		return;
	struct nvtxDomainRegistration_st *d = handle ? handle : &default_domain;
	pthread_mutex_lock(&registry_lock);
	char *kept = NULL;
	for (size_t i = 0; i < d->name_count && !kept; i++)
		if (!strcmp(d->names[i], name))
			kept = d->names[i];
	if (!kept) {
		char **grown = realloc(d->names, (d->name_count + 1) * sizeof(*grown));
		if (!grown)
			goto out;
		d->names = grown;
		kept = d->names[d->name_count++] = name;
		name = NULL;
	}
	for (size_t i = 0; i < d->category_count; i++) {
		if (d->categories[i].id == category) {
			d->categories[i].name = kept;
			goto out;
		}
	}
	struct category_name *grown =
		realloc(d->categories, (d->category_count + 1) * sizeof(*grown));
	if (grown) {
		d->categories = grown;
		grown[d->category_count].id = category;
		grown[d->category_count++].name = kept;
	}
out:
	pthread_mutex_unlock(&registry_lock);
	free(name);
}

void bridge_domain_name_category_a(nvtxDomainHandle_t domain, uint32_t category,
				   const char *name)
{
	name_category(domain, category, kept_copy(name ? name : ""));
}

void bridge_domain_name_category_w(nvtxDomainHandle_t domain, uint32_t category,
				   const wchar_t *name)
{
	char *utf8 = name ? bridge_utf8_from_wide(name) : NULL;
	name_category(domain, category, kept_copy(utf8 ? utf8 : ""));
	free(utf8);
}

void bridge_name_category_a(uint32_t category, const char *name)
{
	bridge_domain_name_category_a(NULL, category, name);
}

void bridge_name_category_w(uint32_t category, const wchar_t *name)
{
	bridge_domain_name_category_w(NULL, category, name);
}

const char *nvtx_bridge_category_name(const struct nvtx_bridge_domain *domain,
				      uint32_t category)
{
	const struct nvtxDomainRegistration_st *d =
		domain ? (const struct nvtxDomainRegistration_st *)domain : &default_domain;
	const char *name = NULL;
	pthread_mutex_lock(&registry_lock);
	for (size_t i = 0; i < d->category_count; i++)
		if (d->categories[i].id == category)
			name = d->categories[i].name;
	pthread_mutex_unlock(&registry_lock);
	return name;
}

/* hash() of the first len bytes of s. */
static size_t hash_prefix(const char *s, size_t len, const void *salt)
{
	size_t h = 14695981039346656037u ^ (size_t)(uintptr_t)salt;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211u;
	return h;
}

/* NVTX means a string to be registered once and used by its handle; programs that
 * register it again at every range get the same handle back, without an allocation. */
static nvtxStringHandle_t register_string(nvtxDomainHandle_t domain, const char *text)
{
	const struct nvtx_bridge_domain *d = bridge_domain_from_handle(domain);
	size_t len = bridge_kept_length(text);
	size_t h = hash_prefix(text, len, d);
	pthread_mutex_lock(&registry_lock);
	struct nvtxStringRegistration_st *s = NULL;
	if (strings.bucket_count) {
		s = strings.buckets[h % strings.bucket_count];
		while (s && (s->domain != d || strncmp(s->text, text, len) || s->text[len]))
			s = s->next;
	}
	if (!s) {
		table_grow(&strings, string_next, string_key);
		char *copy = kept_copy(text);
		if (copy && strings.bucket_count && (s = malloc(sizeof(*s)))) {
			s->domain = d;
			s->text = copy;
			copy = NULL;
			size_t b = h % strings.bucket_count;
			s->next = strings.buckets[b];
			strings.buckets[b] = s;
			strings.count++;
		}
		free(copy);
	}
	pthread_mutex_unlock(&registry_lock);
	return s;
}

nvtxStringHandle_t bridge_domain_register_string_a(nvtxDomainHandle_t domain, const char *s)
{
	return register_string(domain, s ? s : "");
}

nvtxStringHandle_t bridge_domain_register_string_w(nvtxDomainHandle_t domain,
						   const wchar_t *s)
{
	char *utf8 = s ? bridge_utf8_from_wide(s) : NULL;
	nvtxStringHandle_t h = register_string(domain, utf8 ? utf8 : "");
	free(utf8);
	return h;
}

const char *bridge_registered_text(nvtxStringHandle_t handle)
{
	return handle ? handle->text : "";
}
