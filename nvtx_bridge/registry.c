/* nvtx_bridge/registry.c - NVTX domains, registered strings and category names.
 * Written from any application thread through the NVTX slots, read by state.c and, when
 * records are written, by collector/ through inject/. Objects live until the process
 * ends: a handle given to the application must stay valid, and snapshots point at
 * domain names. Calls libc only. */
#include "nvtx_bridge/slots.h"

#include <pthread.h>
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
};

struct nvtxStringRegistration_st {
	const struct nvtx_bridge_domain *domain;
	char *text;
};

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nvtxDomainRegistration_st default_domain = { 0, "", false, NULL, 0 };
static struct nvtxDomainRegistration_st **domains; /* by id; [0] is the default */
static size_t domain_count = 1;

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

/* Takes ownership of name. */
static nvtxDomainHandle_t domain_create(char *name)
{
	if (!name)
		return NULL;
	pthread_mutex_lock(&registry_lock);
	/* The same name gives the same domain, so that libraries that each create "NVTX"
	 * share one stack, as Nsight tools show them. */
	for (size_t i = 1; i < domain_count; i++) {
		if (!domains[i]->destroyed && !strcmp(domains[i]->name, name)) {
			pthread_mutex_unlock(&registry_lock);
			free(name);
			return domains[i];
		}
	}
	struct nvtxDomainRegistration_st *d = calloc(1, sizeof(*d));
	struct nvtxDomainRegistration_st **grown =
		realloc(domains, (domain_count + 1) * sizeof(*domains));
	if (!d || !grown) {
		if (grown)
			domains = grown;
		pthread_mutex_unlock(&registry_lock);
		free(d);
		free(name);
		return NULL; /* NULL is the default domain: degrade, do not fail the app */
	}
	domains = grown;
	domains[0] = &default_domain;
	d->id = (uint32_t)domain_count;
	d->name = name;
	domains[domain_count++] = d;
	pthread_mutex_unlock(&registry_lock);
	return d;
}

nvtxDomainHandle_t bridge_domain_create_a(const char *name)
{
	return domain_create(strdup(name ? name : ""));
}

nvtxDomainHandle_t bridge_domain_create_w(const wchar_t *name)
{
	return domain_create(name ? bridge_utf8_from_wide(name) : strdup(""));
}

void bridge_domain_destroy(nvtxDomainHandle_t domain)
{
	if (!domain || domain == &default_domain)
		return;
	pthread_mutex_lock(&registry_lock);
	/* Kept in memory: ranges still open on other threads and snapshots refer to it. A
	 * later domain of the same name is a new domain. */
	domain->destroyed = true;
	pthread_mutex_unlock(&registry_lock);
}

static void name_category(nvtxDomainHandle_t handle, uint32_t category, char *name)
{
	if (!name)
		return;
	struct nvtxDomainRegistration_st *d = handle ? handle : &default_domain;
	pthread_mutex_lock(&registry_lock);
	for (size_t i = 0; i < d->category_count; i++) {
		if (d->categories[i].id == category) {
			/* The old name is left allocated: a record being written on another
			 * thread may still be reading it. Renames are rare. */
			d->categories[i].name = name;
			pthread_mutex_unlock(&registry_lock);
			return;
		}
	}
	struct category_name *grown =
		realloc(d->categories, (d->category_count + 1) * sizeof(*grown));
	if (grown) {
		d->categories = grown;
		grown[d->category_count].id = category;
		grown[d->category_count++].name = name;
		name = NULL;
	}
	pthread_mutex_unlock(&registry_lock);
	free(name);
}

void bridge_domain_name_category_a(nvtxDomainHandle_t domain, uint32_t category,
				   const char *name)
{
	name_category(domain, category, strdup(name ? name : ""));
}

void bridge_domain_name_category_w(nvtxDomainHandle_t domain, uint32_t category,
				   const wchar_t *name)
{
	name_category(domain, category, name ? bridge_utf8_from_wide(name) : strdup(""));
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

static nvtxStringHandle_t register_string(nvtxDomainHandle_t domain, char *text)
{
	struct nvtxStringRegistration_st *s = malloc(sizeof(*s));
	if (!s || !text) {
		free(s);
		free(text);
		return NULL;
	}
	s->domain = bridge_domain_from_handle(domain);
	s->text = text;
	return s;
}

nvtxStringHandle_t bridge_domain_register_string_a(nvtxDomainHandle_t domain, const char *s)
{
	return register_string(domain, strdup(s ? s : ""));
}

nvtxStringHandle_t bridge_domain_register_string_w(nvtxDomainHandle_t domain,
						   const wchar_t *s)
{
	return register_string(domain, s ? bridge_utf8_from_wide(s) : strdup(""));
}

const char *bridge_registered_text(nvtxStringHandle_t handle)
{
	return handle ? handle->text : "";
}
