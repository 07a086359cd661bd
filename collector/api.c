/* collector/api.c - dlopen of the CUDA driver, CUPTI and the checkpoint library.
 * Loaded once, when CUDA initialises rangeprof (and by the list-metrics helper).
 * Calls: none (libc and libdl).
 * Called by: device.c, profiler.c, inject/, memory/ (the rp_api table).
 * Lock: none (the table is written once, before any callback, and read-only after). */
#include "collector/api.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct rp_api rp_api;
static bool loaded;
static struct collector_cupti_info cupti_info;

#define RP_STR(x) #x
#define RP_XSTR(x) RP_STR(x)

/* Opens the first of names that loads from the library path. On failure writes the
 * loader's reason for the first name into why (dlerror() is read at once: any later
 * dlopen, even a successful one, clears it). */
static void *open_first(const char *const *names, char *why, size_t size)
{
	bool have_reason = false;
	snprintf(why, size, "not found");
	for (size_t i = 0; names[i]; i++) {
		void *h;
		const char *e;
		if ((h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL)))
			return h;
		if ((e = dlerror()) && !have_reason) {
			snprintf(why, size, "%s", e);
			have_reason = true;
		}
	}
	return NULL;
}

/* Appends a place; without dir, one that is looked up by name (already loaded, the
 * loader's search) or, for CUDA_HOME, one that is unset. */
static void add_place(struct collector_place *places, size_t *n, const char *found,
		      const char *dir, const char *sub)
{
	if (*n >= COLLECTOR_PLACES_MAX)
		return;
	struct collector_place *p = &places[*n];
	p->found = found;
	p->dir[0] = '\0';
	if (dir) {
		/* Too long a path would name another directory: left out, never cut. */
		int len = snprintf(p->dir, sizeof(p->dir), "%s%s", dir, sub);
		if (len < 0 || (size_t)len >= sizeof(p->dir))
			return;
	}
	(*n)++;
}

size_t collector_api_places(const char *toolkit_lib_dir, const char *self_path,
			    struct collector_place places[COLLECTOR_PLACES_MAX])
{
	size_t n = 0;
	/* A CUPTI already in the process (PyTorch loads the one of its pip package) is the
	 * one to use: a second copy in the same process would be a second CUPTI. */
	add_place(places, &n, "loaded", NULL, "");
	/* CUDA's own convention for where a toolkit is; not an option of rangeprof's. */
	const char *home = getenv("CUDA_HOME");
	if (home && *home) {
		add_place(places, &n, "CUDA_HOME", home, "/lib64");
		add_place(places, &n, "CUDA_HOME", home, "/extras/CUPTI/lib64");
	} else {
		add_place(places, &n, "CUDA_HOME", NULL, "");
	}
	/* The caller's toolkit directory (<root>/lib64), and CUPTI's own directory beside it
	 * where a toolkit keeps it apart. */
	if (toolkit_lib_dir && *toolkit_lib_dir) {
		add_place(places, &n, "toolkit", toolkit_lib_dir, "");
		const char *slash = strrchr(toolkit_lib_dir, '/');
		char root[COLLECTOR_PLACE_DIR_SIZE];
		if (slash && (size_t)(slash - toolkit_lib_dir) < sizeof(root)) {
			snprintf(root, sizeof(root), "%.*s", (int)(slash - toolkit_lib_dir),
				 toolkit_lib_dir);
			add_place(places, &n, "toolkit", root, "/extras/CUPTI/lib64");
		}
	}
	/* A wheel installs this library as <site-packages>/rangeprof/_lib/librangeprof.so,
	 * and NVIDIA's pip packages (nvidia-cuda-cupti, which PyTorch depends on) put CUPTI
	 * in <site-packages>/nvidia/cu13/lib. Elsewhere there is no such place. */
	static const char suffix[] = "/rangeprof/_lib/";
	const char *base = self_path ? strrchr(self_path, '/') : NULL;
	size_t suffix_len = sizeof(suffix) - 1;
	if (base && (size_t)(base - self_path) + 1 > suffix_len) {
		size_t site_len = (size_t)(base - self_path) + 1 - suffix_len;
		char site[COLLECTOR_PLACE_DIR_SIZE];
		if (!memcmp(self_path + site_len, suffix, suffix_len) && site_len < sizeof(site)) {
			snprintf(site, sizeof(site), "%.*s", (int)site_len, self_path);
			add_place(places, &n, "pip", site, "/nvidia/cu13/lib");
		}
	}
	add_place(places, &n, "library_path", NULL, "");
	return n;
}

/* The file the loader has for handle (absolute where it searched for it), or "". */
static void handle_path(void *handle, char *out, size_t size)
{
	struct link_map *map = NULL;
	out[0] = '\0';
	if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name)
		snprintf(out, size, "%s", map->l_name);
}

/* Appends to a message, which is cut at its size like any other. */
__attribute__((format(printf, 4, 5)))
static void append(char *buf, size_t size, size_t *len, const char *fmt, ...)
{
	if (*len + 1 >= size)
		return;
	va_list ap;
	va_start(ap, fmt);
	int w = vsnprintf(buf + *len, size - *len, fmt, ap);
	va_end(ap);
	if (w > 0)
		*len = *len + (size_t)w < size ? *len + (size_t)w : size - 1;
}

/* One place as the failure message names it. */
static void describe_place(const struct collector_place *p, char *buf, size_t size,
			   size_t *len)
{
	if (!strcmp(p->found, "loaded")) {
		append(buf, size, len, "already loaded in the process");
	} else if (!strcmp(p->found, "library_path")) {
		const char *ld = getenv("LD_LIBRARY_PATH");
		append(buf, size, len, "on the library path (LD_LIBRARY_PATH%s%s, then ld.so.cache)",
		       ld ? "=" : " unset", ld ? ld : "");
	} else if (!p->dir[0]) {
		append(buf, size, len, "in $%s (unset)", p->found);
	} else {
		append(buf, size, len, "in %s", p->dir);
	}
}

void *collector_api_open(const struct collector_place *places, size_t count,
			 const char *const *names, struct collector_cupti_info *found, char *err,
			 size_t err_size)
{
	char path[COLLECTOR_PLACE_DIR_SIZE + 64], why[1024] = "";
	/* Whether why holds the loader's words, and whether they are about a file found. */
	bool why_kept = false, why_from_file = false;
	for (size_t i = 0; i < count; i++) {
		const struct collector_place *p = &places[i];
		bool by_name = !strcmp(p->found, "loaded") || !strcmp(p->found, "library_path");
		if (!by_name && !p->dir[0])
			continue;
		for (size_t k = 0; names[k]; k++) {
			void *h;
			if (by_name) {
				h = dlopen(names[k], RTLD_NOW | RTLD_LOCAL |
					   (!strcmp(p->found, "loaded") ? RTLD_NOLOAD : 0));
			} else {
				snprintf(path, sizeof(path), "%s/%s", p->dir, names[k]);
				/* A missing file is said by the list of places; one that is
				 * there and does not load has a reason worth giving. */
				if (access(path, F_OK))
					continue;
				h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
			}
			if (h) {
				if (found) {
					handle_path(h, found->path, sizeof(found->path));
					found->found = p->found;
				}
				return h;
			}
			/* Read at once: any later dlopen, even a successful one, clears it. */
			const char *e = dlerror();
			if (e && !why_from_file && (!why_kept || !by_name)) {
				snprintf(why, sizeof(why), "%s", e);
				why_kept = true;
				why_from_file = !by_name;
			}
		}
	}
	/* One line naming every place, in order. */
	size_t len = 0;
	err[0] = '\0';
	append(err, err_size, &len, "cannot load %s; looked for it ", names[0]);
	for (size_t i = 0; i < count; i++) {
		if (i)
			append(err, err_size, &len, ", ");
		describe_place(&places[i], err, err_size, &len);
	}
	append(err, err_size, &len, ": %s", why_kept ? why : "not found");
	return NULL;
}

int collector_api_load(const char *lib_dir, char *err, size_t err_size)
{
	if (loaded)
		return 0;
	static const char *const cuda_names[] = { "libcuda.so.1", "libcuda.so", NULL };
	static const char *const cupti_names[] = { "libcupti.so.13", "libcupti.so", NULL };
	static const char *const checkpoint_names[] = { "libcheckpoint.so", NULL };
	/* The driver is already loaded by the application: take that very copy. */
	char why[512];
	void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	/* The driver comes with the NVIDIA driver package, never from the toolkit: only
	 * the library path can have it. */
	if (!cuda && !(cuda = open_first(cuda_names, why, sizeof(why)))) {
		snprintf(err, err_size, "cannot load libcuda.so.1 (the NVIDIA driver; looked on "
			 "the library path): %s", why);
		return -ENOENT;
	}
	/* Where this code is, for the pip packages beside it: librangeprof.so, or the
	 * program it is linked into (the list-metrics helper, whose map has no name). */
	static char self[COLLECTOR_PLACE_DIR_SIZE];
	Dl_info info;
	struct link_map *map = NULL;
	if (dladdr1((void *)(uintptr_t)collector_api_load, &info, (void **)&map,
		    RTLD_DL_LINKMAP) && map && map->l_name && map->l_name[0]) {
		if (!realpath(map->l_name, self))
			snprintf(self, sizeof(self), "%s", map->l_name);
	} else {
		ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		self[n > 0 ? n : 0] = '\0';
	}
	/* Static: large, and used once, under the caller's once. */
	static struct collector_place places[COLLECTOR_PLACES_MAX + 1];
	size_t count = collector_api_places(lib_dir, self, places + 1);
	struct collector_cupti_info found = { .version = -1 };
	void *cupti = collector_api_open(places + 1, count, cupti_names, &found, err, err_size);
	if (!cupti) {
		size_t len = strlen(err);
		append(err, err_size, &len, "; install the CUDA 13 toolkit with CUPTI, set "
		       "CUDA_HOME, or pip install nvidia-cuda-cupti");
		return -ENOENT;
	}
	/* The checkpoint library beside that CUPTI first: it calls into that very libcupti.
	 * Then the same places. */
	places[0].found = "cupti";
	snprintf(places[0].dir, sizeof(places[0].dir), "%s", found.path);
	char *slash = strrchr(places[0].dir, '/');
	if (slash)
		*slash = '\0';
	else
		places[0].dir[0] = '\0';
	void *checkpoint = collector_api_open(places[0].dir[0] ? places : places + 1,
					      places[0].dir[0] ? count + 1 : count,
					      checkpoint_names, NULL, err, err_size);
	if (!checkpoint)
		return -ENOENT;
	struct rp_api api;
	const char *missing = NULL;
#define RP_LOAD(handle, name)                                                  \
	if (!(api.name = (__typeof__(api.name))dlsym(handle, RP_XSTR(name))) && !missing) \
		missing = RP_XSTR(name);
#define RP_LOAD_DRIVER(name) RP_LOAD(cuda, name)
#define RP_LOAD_CUPTI(name) RP_LOAD(cupti, name)
	RP_DRIVER_FUNCTIONS(RP_LOAD_DRIVER)
	RP_CUPTI_FUNCTIONS(RP_LOAD_CUPTI)
	api.cuptiCheckpointSave = (rp_checkpoint_fn)dlsym(checkpoint, "cuptiCheckpointSave");
	api.cuptiCheckpointRestore = (rp_checkpoint_fn)dlsym(checkpoint, "cuptiCheckpointRestore");
	api.cuptiCheckpointFree = (rp_checkpoint_fn)dlsym(checkpoint, "cuptiCheckpointFree");
	if (!api.cuptiCheckpointSave || !api.cuptiCheckpointRestore || !api.cuptiCheckpointFree)
		missing = missing ? missing : "cuptiCheckpointSave";
	if (missing) {
		/* Named, since a machine may have several drivers' and CUPTIs' files. */
		char driver_path[COLLECTOR_PLACE_DIR_SIZE];
		handle_path(cuda, driver_path, sizeof(driver_path));
		snprintf(err, err_size, "the loaded CUDA libraries lack %s; rangeprof needs the "
			 "CUDA 13 driver and CUPTI (loaded: %s, and %s from %s)", missing,
			 driver_path, found.path, found.found);
		return -ENOENT;
	}
	/* Which CUPTI measured, for the session record. */
	uint32_t version;
	__typeof__(&cuptiGetVersion) get_version =
		(__typeof__(&cuptiGetVersion))dlsym(cupti, "cuptiGetVersion");
	found.version = get_version && get_version(&version) == CUPTI_SUCCESS ? (long)version : -1;
	cupti_info = found;
	rp_api = api;
	loaded = true;
	return 0;
}

const struct collector_cupti_info *collector_api_cupti(void)
{
	return loaded ? &cupti_info : NULL;
}

const char *collector_cu_error(CUresult r)
{
	const char *name = NULL;
	if (rp_api.cuGetErrorName && rp_api.cuGetErrorName(r, &name) == CUDA_SUCCESS && name)
		return name;
	return "CUDA_ERROR_UNKNOWN";
}

const char *collector_cupti_error(CUptiResult r)
{
	const char *name = NULL;
	if (rp_api.cuptiGetResultString && rp_api.cuptiGetResultString(r, &name) == CUPTI_SUCCESS &&
	    name)
		return name;
	return "CUPTI_ERROR_UNKNOWN";
}
