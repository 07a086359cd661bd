/* collector/api.h - the CUDA driver, CUPTI and CUPTI checkpoint entry points, loaded with
 * dlopen when CUDA initialises rangeprof. librangeprof.so therefore needs none of these
 * libraries to load: preloaded into a program that never touches CUDA it costs nothing,
 * and on a machine without a GPU it loads all the same. Used by collector/ and inject/. */
#ifndef COLLECTOR_API_H
#define COLLECTOR_API_H

#include <cuda.h>
#include <cupti.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>
#include <stdbool.h>
#include <stddef.h>

/* cupti_checkpoint.h is C++ only (a namespace); the library exports these unmangled. */
typedef struct {
	size_t structSize;
	CUcontext ctx;
	size_t reserveDeviceMB;
	size_t reserveHostMB;
	uint8_t allowOverwrite;
	uint8_t optimizations;
	void *pPriv;
} RP_CUpti_Checkpoint;
#define RP_CUPTI_CHECKPOINT_STRUCT_SIZE \
	(offsetof(RP_CUpti_Checkpoint, pPriv) + sizeof(void *))

/* X-lists of what we call. The types come from the headers (__typeof__), the symbol
 * names after macro expansion, so that cuMemAlloc binds cuMemAlloc_v2 as a program
 * compiled against this cuda.h would. */
#define RP_DRIVER_FUNCTIONS(X)                                                       \
	X(cuGetErrorName) X(cuCtxGetCurrent) X(cuCtxSynchronize) X(cuCtxGetDevice)     \
	X(cuLaunchKernel) X(cuLaunchKernelEx) X(cuLaunchCooperativeKernel)             \
	X(cuFuncGetName) X(cuModuleLoadData) X(cuModuleGetFunction) X(cuMemAlloc)      \
	X(cuMemFree) X(cuDeviceGetAttribute) X(cuDeviceGetName) X(cuDeviceGetUuid)     \
	X(cuDriverGetVersion) X(cuStreamIsCapturing) X(cuDeviceGetCount)               \
	X(cuDeviceGet) X(cuInit) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) \
	X(cuCtxSetCurrent) X(cuStreamSynchronize) X(cuFuncGetParamInfo) X(cuFuncGetModule)   \
	X(cuModuleGetGlobal) X(cuPointerGetAttributes) X(cuMemGetAddressRange) X(cuMemcpy)  \
	X(cuMemcpyAsync) X(cuMemcpyDtoHAsync) X(cuMemsetD8Async) X(cuMemHostAlloc)         \
	X(cuMemFreeHost) X(cuKernelGetParamInfo) X(cuKernelGetLibrary) X(cuLibraryGetGlobal) \
	X(cuModuleUnload) X(cuKernelGetName) X(cuGraphClone) X(cuGraphDestroy)            \
	X(cuGraphNodeFindInClone) X(cuGraphGetNodes) X(cuGraphNodeGetType)              \
	X(cuGraphKernelNodeGetParams)                                                   \
	X(cuGraphKernelNodeSetParams) X(cuGraphMemsetNodeGetParams)                     \
	X(cuGraphMemsetNodeSetParams) X(cuGraphMemcpyNodeGetParams)                     \
	X(cuGraphMemcpyNodeSetParams) X(cuGraphHostNodeSetParams)                       \
	X(cuGraphChildGraphNodeGetGraph) X(cuGraphNodeSetParams) X(cuMemsetD2D8Async)   \
	X(cuMemsetD2D16Async) X(cuMemsetD2D32Async) X(cuMemcpy3DAsync) X(cuGraphLaunch) \
	X(cuEventCreate) X(cuEventRecord) X(cuEventSynchronize) X(cuEventElapsedTime)   \
	X(cuEventDestroy) X(cuGraphGetEdges) X(cuGraphKernelNodeGetAttribute)              \
	X(cuThreadExchangeStreamCaptureMode) X(cuStreamWaitEvent) X(cuMemsetD16Async)     \
	X(cuMemsetD32Async) X(cuFuncGetAttribute) X(cuCtxGetLimit) X(cuKernelGetFunction)  \
	X(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags) X(cuMemGetInfo)

#define RP_CUPTI_FUNCTIONS(X)                                                          \
	X(cuptiGetResultString) X(cuptiSubscribe) X(cuptiUnsubscribe)                  \
	X(cuptiEnableCallback) X(cuptiGetStreamIdEx) X(cuptiGetDeviceId)               \
	X(cuptiProfilerInitialize) X(cuptiDeviceGetChipName)                           \
	X(cuptiProfilerGetCounterAvailability) X(cuptiProfilerHostInitialize)          \
	X(cuptiProfilerHostDeinitialize) X(cuptiProfilerHostConfigAddMetrics)          \
	X(cuptiProfilerHostGetConfigImageSize) X(cuptiProfilerHostGetConfigImage)      \
	X(cuptiProfilerHostGetNumOfPasses) X(cuptiProfilerHostEvaluateToGpuValues)     \
	X(cuptiProfilerHostGetMetricProperties) X(cuptiProfilerHostGetBaseMetrics)     \
	X(cuptiProfilerHostGetSubMetrics) X(cuptiRangeProfilerEnable)                  \
	X(cuptiRangeProfilerDisable) X(cuptiRangeProfilerSetConfig)                    \
	X(cuptiRangeProfilerStart) X(cuptiRangeProfilerStop)                           \
	X(cuptiRangeProfilerDecodeData) X(cuptiRangeProfilerGetCounterDataSize)        \
	X(cuptiRangeProfilerCounterDataImageInitialize)                                \
	X(cuptiRangeProfilerGetCounterDataInfo) X(cuptiRangeProfilerPushRange)          \
	X(cuptiRangeProfilerPopRange) X(cuptiGetCallbackName) X(cuptiGetContextId)      \
	X(cuptiEnableDomain)

typedef CUptiResult (*rp_checkpoint_fn)(RP_CUpti_Checkpoint *const handle);

struct rp_api {
#define RP_API_MEMBER(name) __typeof__(&name) name;
	RP_DRIVER_FUNCTIONS(RP_API_MEMBER)
	RP_CUPTI_FUNCTIONS(RP_API_MEMBER)
#undef RP_API_MEMBER
	rp_checkpoint_fn cuptiCheckpointSave;
	rp_checkpoint_fn cuptiCheckpointRestore;
	rp_checkpoint_fn cuptiCheckpointFree;
};

/* Loaded once; NULL until collector_api_load() succeeded. */
extern struct rp_api rp_api;

/* Loads libcuda.so.1 (from the library path), then libcupti.so.13 from the first of the
 * places collector_api_places() lists, then libcheckpoint.so from beside it (or the same
 * places). Returns 0, or -ENOENT with what is missing in err: for CUPTI one line naming
 * every place looked in. Idempotent; not thread-safe (called under inject's once).
 * cuda_lib_dir is the toolkit's library directory (/usr/local/cuda/lib64). */
int collector_api_load(const char *cuda_lib_dir, char *err, size_t err_size);

#define COLLECTOR_PLACES_MAX 8
#define COLLECTOR_PLACE_DIR_SIZE 4096

/* A place where CUPTI is looked for. found says which (doc/records.md, session "cupti"):
 * "loaded" (already in the process, by name), "CUDA_HOME" (dir empty when unset),
 * "toolkit", "pip", "library_path" (the loader's own search, by name). */
struct collector_place {
	const char *found;
	char dir[COLLECTOR_PLACE_DIR_SIZE];
};

/* The places, in the order they are tried: a libcupti.so.13 already loaded (PyTorch's);
 * $CUDA_HOME/lib64 and $CUDA_HOME/extras/CUPTI/lib64; toolkit_lib_dir and extras/CUPTI/
 * lib64 beside it; when self_path (this code's file) is <site-packages>/rangeprof/_lib/...,
 * <site-packages>/nvidia/cu13/lib (NVIDIA's pip packages); the library path
 * (LD_LIBRARY_PATH, ld.so.cache). Returns how many were written. */
size_t collector_api_places(const char *toolkit_lib_dir, const char *self_path,
			    struct collector_place places[COLLECTOR_PLACES_MAX]);

/* Which CUPTI was loaded: the path the loader has for it, the place's found, and
 * cuptiGetVersion's number (-1 when it gave none). */
struct collector_cupti_info {
	char path[COLLECTOR_PLACE_DIR_SIZE];
	const char *found;
	long version;
};

/* Opens the first of names (NULL-terminated) at the first place that has it. Fills found
 * (when not NULL) and returns the handle; else NULL with one line in err naming every
 * place and the loader's reason (that of a file that exists but failed to load first). */
void *collector_api_open(const struct collector_place *places, size_t count,
			 const char *const *names, struct collector_cupti_info *found, char *err,
			 size_t err_size);

/* The CUPTI that collector_api_load() loaded; NULL before. */
const struct collector_cupti_info *collector_api_cupti(void);

/* Names of results for messages; never NULL. */
const char *collector_cu_error(CUresult r);
const char *collector_cupti_error(CUptiResult r);

#endif
