/* inject/entry.c - the library's entry points and nothing else.
 * The constructor runs when the library is preloaded (or dlopened by CUDA or NVTX); it only
 * points NVTX_INJECTION64_PATH, and when preloaded CUDA_INJECTION64_PATH, at this library
 * unless the user set them, so that no CUDA or CUPTI call happens before the driver
 * initialises us. In a process that merely inherited the hooks from a parent under the
 * control API (inject_init_inherited) every entry point does nothing. The control API's
 * entry points are in control.c.
 * Calls: init.c (inject_init_once), nvtx_bridge/ (InitializeInjectionNvtx2's answer).
 * Called by: none (CUDA and NVTX, through the injection variables).
 * Lock: none (no state). */
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>

#include "inject/inject.h"
#include "nvtx_bridge/nvtx_bridge.h"

RP_EXPORT int InitializeInjection(void);
RP_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table);

__attribute__((constructor)) static void preload_constructor(void)
{
	Dl_info self;
	if (!dladdr((void *)preload_constructor, &self) || !self.dli_fname || !*self.dli_fname)
		return;
	/* LD_PRELOAD=build/inject/librangeprof.so gives a relative name; exported as it is,
	 * every child that starts in another directory would fail to load it. */
	char absolute[PATH_MAX];
	if (!realpath(self.dli_fname, absolute) || inject_init_inherited())
		return;
	/* CUDA's hook only when preloaded (the launcher, LD_PRELOAD): a library loaded by
	 * NVTX_INJECTION64_PATH in a child of a process that imported rangeprof must not make
	 * that child measure every kernel; import rangeprof points the hook here itself
	 * (rangeprof_attach). */
	if (inject_init_preloaded(absolute))
		setenv("CUDA_INJECTION64_PATH", absolute, 0);
	setenv("NVTX_INJECTION64_PATH", absolute, 0);
}

/* Called by the CUDA driver during cuInit when CUDA_INJECTION64_PATH names us. */
int InitializeInjection(void)
{
	/* A child of a process under the control API that inherited the hook: nothing is
	 * measured or written here, and its own children do not get the hook either. */
	if (inject_init_inherited()) {
		inject_init_forget_cuda_hook();
		return 1;
	}
	inject_init_once();
	return 1;
}

/* Called by each NVTX client module at its first NVTX call. */
int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table)
{
	/* No: NVTX then unloads the library and keeps its calls no-ops (the child of a
	 * process under the control API, which measures nothing). */
	if (inject_init_inherited())
		return 0;
	return nvtx_bridge_attach(get_export_table);
}
