/* inject/names.c - what rangeprof knows of a kernel name, worked out once per name and kept
 * until exit: its demangled form and whether it waits for peers (collectives.c), asked on
 * the launching thread for launches that pass the NVTX filter (kernel-name filter,
 * records) and for every launch a range records, where asking collectives.c's patterns of
 * a long template name at each launch cost time inside the application's range. The C++
 * runtime's demangler is found at run time: a C application may not have libstdc++
 * loaded.
 * Calls: collectives.c (libc and libdl besides).
 * Called by: launch.c, select.c, graph_measure.c, range_ops.c, session.c, whole_workload.c.
 * Lock: names_lock (the table of names). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "inject/collectives.h"
#include "inject/inject.h"

typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);

struct name_entry {
	struct name_entry *next;
	char *mangled, *demangled;
	struct inject_name name;   /* the two above, and the collective verdict */
};

#define BUCKETS 1024
static struct name_entry *buckets[BUCKETS];
static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;
static demangle_fn demangle;
static bool demangle_looked_up;

static unsigned hash(const char *s)
{
	unsigned h = 2166136261u;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h % BUCKETS;
}

const char *inject_name_demangle(const char *mangled)
{
	return inject_name_intern(mangled, NULL);
}

const char *inject_name_intern(const char *mangled, const char **interned)
{
	const struct inject_name *n = inject_name_of(mangled);
	if (interned)
		*interned = n ? n->mangled : NULL;
	return n ? n->demangled : mangled;
}

const struct inject_name *inject_name_of(const char *mangled)
{
	unsigned b = hash(mangled);
	pthread_mutex_lock(&names_lock);
	for (struct name_entry *e = buckets[b]; e; e = e->next) {
		if (!strcmp(e->mangled, mangled)) {
			pthread_mutex_unlock(&names_lock);
			return &e->name;
		}
	}
	if (!demangle_looked_up) {
		demangle_looked_up = true;
		demangle = (demangle_fn)dlsym(RTLD_DEFAULT, "__cxa_demangle");
		if (!demangle) {
			void *h = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
			if (h)
				demangle = (demangle_fn)dlsym(h, "__cxa_demangle");
		}
	}
	struct name_entry *e = malloc(sizeof(*e));
	char *demangled = NULL;
	int status = -1;
	if (demangle && !strncmp(mangled, "_Z", 2))
		demangled = demangle(mangled, NULL, NULL, &status);
	if (!e || !(e->mangled = strdup(mangled))) {
		free(e);
		free(demangled);
		pthread_mutex_unlock(&names_lock);
		return NULL;
	}
	e->demangled = status == 0 && demangled ? demangled : e->mangled;
	if (e->demangled != demangled)
		free(demangled);
	const char *why = NULL;
	bool peers = inject_collective_kernel(e->mangled, &why) ||
		     inject_collective_kernel(e->demangled, &why);
	e->name = (struct inject_name){ e->mangled, e->demangled, peers, why };
	e->next = buckets[b];
	buckets[b] = e;
	pthread_mutex_unlock(&names_lock);
	return &e->name;
}
