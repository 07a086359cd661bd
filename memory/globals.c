/* memory/globals.c - module-scope __device__ variables. A kernel can write them without
 * any pointer in its parameters, so the saved set must include its module's globals. The
 * driver has no call that lists a module's globals, but it hands every loaded cubin to
 * the CUPTI module callback: its ELF symbol table names the objects of the .nv.global
 * sections, and cuModuleGetGlobal then finds them in the module a launch belongs to.
 * Calls: collector/ (the driver).
 * Called by: reach.c, inject/ (the module callbacks).
 * Lock: lock (the modules and their globals). */
#include <elf.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "collector/api.h"
#include "memory/memory.h"

/* Every global name seen in any cubin (a name in several cubins is kept once). */
#define NAME_BUCKETS 1024
struct name {
	struct name *next;
	char text[];
};
static struct name *names[NAME_BUCKETS];
static size_t name_count;
static atomic_size_t unreadable_cubins;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* The globals of each module or library already looked at. */
struct module_globals {
	struct module_globals *next;
	void *module;                /* a CUmodule or a CUlibrary */
	size_t names_seen;           /* name_count when resolved: newer cubins mean redo */
	struct mem_range *ranges;
	size_t count;
};
static struct module_globals *modules;
static unsigned long forgotten;      /* mem_globals_forget_modules() calls, under lock */

static unsigned hash(const char *s)
{
	unsigned h = 2166136261u;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h % NAME_BUCKETS;
}

/* Names of any length: a global whose name were left out would never be saved, and
 * verification does not hash globals, so nothing would notice its replays' writes. */
static bool remember(const char *text, size_t len)
{
	if (!len)
		return true;
	struct name *n = malloc(sizeof(*n) + len + 1);
	if (!n)
		return false;
	memcpy(n->text, text, len);
	n->text[len] = '\0';
	unsigned b = hash(n->text);
	for (struct name *m = names[b]; m; m = m->next) {
		if (!strcmp(m->text, n->text)) {
			free(n);
			return true;
		}
	}
	n->next = names[b];
	names[b] = n;
	name_count++;
	return true;
}

int mem_globals_learn(const void *cubin, size_t size)
{
	const unsigned char *image = cubin;
	const Elf64_Ehdr *eh = cubin;
	bool ok = image && size >= sizeof(*eh) && !memcmp(eh->e_ident, ELFMAG, SELFMAG) &&
		  eh->e_ident[EI_CLASS] == ELFCLASS64 && eh->e_shentsize == sizeof(Elf64_Shdr) &&
		  eh->e_shoff < size && eh->e_shnum <= (size - eh->e_shoff) / sizeof(Elf64_Shdr) &&
		  eh->e_shstrndx < eh->e_shnum;
	if (!ok) {
		atomic_fetch_add(&unreadable_cubins, 1);
		return RP_ERR_FAILED;
	}
	const Elf64_Shdr *sh = (const Elf64_Shdr *)(image + eh->e_shoff);
	const Elf64_Shdr *shstr = &sh[eh->e_shstrndx];
	if (shstr->sh_offset > size || shstr->sh_size > size - shstr->sh_offset) {
		atomic_fetch_add(&unreadable_cubins, 1);
		return RP_ERR_FAILED;
	}
	const char *section_names = (const char *)image + shstr->sh_offset;
	pthread_mutex_lock(&lock);
	for (unsigned s = 0; s < eh->e_shnum; s++) {
		if (sh[s].sh_type != SHT_SYMTAB || sh[s].sh_link >= eh->e_shnum ||
		    sh[s].sh_entsize != sizeof(Elf64_Sym))
			continue;
		const Elf64_Shdr *strtab = &sh[sh[s].sh_link];
		if (sh[s].sh_offset > size || sh[s].sh_size > size - sh[s].sh_offset ||
		    strtab->sh_offset > size || strtab->sh_size > size - strtab->sh_offset)
			continue;
		const Elf64_Sym *sym = (const Elf64_Sym *)(image + sh[s].sh_offset);
		const char *strings = (const char *)image + strtab->sh_offset;
		size_t symbols = sh[s].sh_size / sizeof(Elf64_Sym);
		for (size_t i = 0; i < symbols; i++) {
			if (ELF64_ST_TYPE(sym[i].st_info) != STT_OBJECT ||
			    sym[i].st_shndx == SHN_UNDEF || sym[i].st_shndx >= eh->e_shnum ||
			    sym[i].st_name >= strtab->sh_size)
				continue;
			size_t section_name = sh[sym[i].st_shndx].sh_name;
			if (section_name >= shstr->sh_size ||
			    strncmp(section_names + section_name, ".nv.global",
				    shstr->sh_size - section_name < 10 ?
				    shstr->sh_size - section_name : 10))
				continue;
			const char *text = strings + sym[i].st_name;
			if (!remember(text, strnlen(text, strtab->sh_size - sym[i].st_name)))
				ok = false;
		}
	}
	pthread_mutex_unlock(&lock);
	if (!ok)
		atomic_fetch_add(&unreadable_cubins, 1); /* a name is missing: globals unknown */
	return ok ? 0 : RP_ERR_NO_MEMORY;
}

static bool append(struct mem_range **ranges, size_t *count, size_t *capacity,
		   struct mem_range r)
{
	if (*count == *capacity) {
		size_t grown_capacity = *capacity ? 2 * *capacity : 16;
		struct mem_range *grown = realloc(*ranges, grown_capacity * sizeof(*grown));
		if (!grown)
			return false;
		*ranges = grown;
		*capacity = grown_capacity;
	}
	(*ranges)[(*count)++] = r;
	return true;
}

static CUresult module_global(CUdeviceptr *p, size_t *bytes, void *module, const char *name)
{
	return rp_api.cuModuleGetGlobal(p, bytes, (CUmodule)module, name);
}

static CUresult library_global(CUdeviceptr *p, size_t *bytes, void *library, const char *name)
{
	return rp_api.cuLibraryGetGlobal(p, bytes, (CUlibrary)library, name);
}

/* The module's globals, resolved by asking the driver for every name seen; 0, or a code
 * as mem_globals_of_module says. The driver is asked without the lock held:
 * cuModuleGetGlobal may load a module (lazy loading), whose CUPTI callback comes back into
 * mem_globals_learn() on this very thread, and another thread loading a module may hold
 * the driver's own lock while its callback waits for ours. Names are never freed, so
 * their texts can be read after the lock is let go. */
static int globals_of(void *module, CUresult (*lookup)(CUdeviceptr *, size_t *, void *,
						       const char *),
		      struct mem_range **ranges, size_t *count, size_t *capacity)
{
	if (atomic_load(&unreadable_cubins))
		return RP_ERR_FAILED;
	pthread_mutex_lock(&lock);
	struct module_globals *m = modules;
	while (m && m->module != module)
		m = m->next;
	if (m && m->names_seen == name_count) {
		bool ok = true;
		for (size_t i = 0; ok && i < m->count; i++)
			ok = append(ranges, count, capacity, m->ranges[i]);
		pthread_mutex_unlock(&lock);
		return ok ? 0 : RP_ERR_NO_MEMORY;
	}
	size_t seen = name_count;
	unsigned long generation = forgotten;
	const char **list = malloc((seen + 1) * sizeof(*list));
	size_t listed = 0;
	for (unsigned b = 0; list && b < NAME_BUCKETS; b++)
		for (struct name *n = names[b]; n && listed < seen; n = n->next)
			list[listed++] = n->text;
	pthread_mutex_unlock(&lock);
	if (!list)
		return RP_ERR_NO_MEMORY;
	struct mem_range *found = NULL;
	size_t found_count = 0, found_capacity = 0;
	bool ok = true;
	for (size_t i = 0; ok && i < listed; i++) {
		CUdeviceptr p = 0;
		size_t bytes = 0;
		if (lookup(&p, &bytes, module, list[i]) == CUDA_SUCCESS && p && bytes)
			ok = append(&found, &found_count, &found_capacity,
				    (struct mem_range){ p, bytes });
	}
	free(list);
	for (size_t i = 0; ok && i < found_count; i++)
		ok = append(ranges, count, capacity, found[i]);
	if (!ok) {
		free(found);
		return RP_ERR_NO_MEMORY;
	}
	/* Kept for the next launch unless a module was unloaded meanwhile (its handle may
	 * now name another module). */
	pthread_mutex_lock(&lock);
	if (generation == forgotten) {
		for (m = modules; m && m->module != module; m = m->next)
			;
		if (!m && (m = calloc(1, sizeof(*m)))) {
			m->module = module;
			m->next = modules;
			modules = m;
		}
		if (m) {
			free(m->ranges);
			m->ranges = found;
			m->count = found_count;
			m->names_seen = seen;
			found = NULL;
		}
	}
	pthread_mutex_unlock(&lock);
	free(found);
	return 0;
}

int mem_globals_of_module(CUmodule module, struct mem_range **ranges, size_t *count,
			  size_t *capacity)
{
	return globals_of(module, module_global, ranges, count, capacity);
}

int mem_globals_of_library(CUlibrary library, struct mem_range **ranges, size_t *count,
			   size_t *capacity)
{
	return globals_of(library, library_global, ranges, count, capacity);
}

void mem_globals_forget_modules(void)
{
	pthread_mutex_lock(&lock);
	forgotten++;
	while (modules) {
		struct module_globals *m = modules;
		modules = m->next;
		free(m->ranges);
		free(m);
	}
	pthread_mutex_unlock(&lock);
}

bool mem_globals_known(const char *name)
{
	pthread_mutex_lock(&lock);
	bool known = false;
	for (struct name *n = names[hash(name)]; n && !known; n = n->next)
		known = !strcmp(n->text, name);
	pthread_mutex_unlock(&lock);
	return known;
}
