/* collector/api.c - dlopen of the CUDA driver, CUPTI and the checkpoint library.
 * Called once by inject/ when CUDA initialises rangeprof, and by the list-metrics helper.
 * Calls libc and libdl. */
#include "collector/api.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

struct rp_api rp_api;
static bool loaded;

#define RP_STR(x) #x
#define RP_XSTR(x) RP_STR(x)

/* Opens the first of names that loads, from dir first when given, then the library
 * path. On failure writes the loader's reason for the first name on the library path
 * into why (dlerror() is read at once: any later dlopen, even a successful one, clears
 * it). */
static void *open_first(const char *dir, const char *const *names, char *why, size_t size)
{
	char path[1024];
	bool have_reason = false;
	snprintf(why, size, "not found");
	for (size_t i = 0; names[i]; i++) {
		void *h;
		const char *e;
		if (dir) {
			snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
			if ((h = dlopen(path, RTLD_NOW | RTLD_LOCAL)))
				return h;
			dlerror();
		}
		if ((h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL)))
			return h;
		if ((e = dlerror()) && !have_reason) {
			snprintf(why, size, "%s", e);
			have_reason = true;
		}
	}
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
	if (!cuda && !(cuda = open_first(NULL, cuda_names, why, sizeof(why)))) {
		snprintf(err, err_size, "cannot load libcuda.so.1 (the NVIDIA driver; looked on "
			 "the library path): %s", why);
		return -ENOENT;
	}
	void *cupti = open_first(lib_dir, cupti_names, why, sizeof(why));
	void *checkpoint = cupti ? open_first(lib_dir, checkpoint_names, why, sizeof(why)) : NULL;
	if (!cupti || !checkpoint) {
		snprintf(err, err_size, "cannot load %s (looked in %s, then on the library path): "
			 "%s", !cupti ? "libcupti.so.13" : "libcheckpoint.so",
			 lib_dir ? lib_dir : "no directory", why);
		return -ENOENT;
	}
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
		snprintf(err, err_size, "the loaded CUDA libraries lack %s; rangeprof needs the "
			 "CUDA 13 driver and CUPTI", missing);
		return -ENOENT;
	}
	rp_api = api;
	loaded = true;
	return 0;
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
