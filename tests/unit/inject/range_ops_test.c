/* tests/unit/inject/range_ops_test.c - range replay's calls (inject/range/range_calls.c,
 * range_args.c, range_ops.c, range_replay.c): each driver call of a range recorded, ignored or refused at its ENTER, and the recorded ones
 * issued again. The driver and CUPTI (rp_api) are stand-ins here that log what they are
 * asked, and the callback data are built by hand as CUPTI gives them; kernel_launch.c and
 * names.c run as they are. No GPU. Device pointers are made-up addresses above the user
 * half of the address space, so that they can never be host memory. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/api.h"
#include "common/error.h"
#include "inject/inject.h"
#include "inject/range/range.h"

/* Every member the tests do not set stays NULL: an unexpected call crashes the test. */
struct rp_api rp_api;

/* A huge host copy must find malloc failing, not stop the test under AddressSanitizer. */
const char *__asan_default_options(void)
{
	return "allocator_may_return_null=1";
}

const char *collector_cu_error(CUresult r)
{
	return r == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES ? "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES" :
		r == CUDA_SUCCESS ? "CUDA_SUCCESS" : "CUDA_ERROR_UNKNOWN";
}

#define DEVICE_BASE 0xd00000000000ull
#define MANAGED_BASE 0xe00000000000ull
#define DEV(x) ((CUdeviceptr)(DEVICE_BASE + (x)))
#define MANAGED(x) ((CUdeviceptr)(MANAGED_BASE + (x)))
/* A pointer the driver cannot describe (cuPointerGetAttributes fails). */
#define UNDESCRIBED ((CUdeviceptr)0xbad000000000ull)

static const CUcontext CTX = (CUcontext)(uintptr_t)0xc0;
static const CUcontext OTHER_CTX = (CUcontext)(uintptr_t)0xc1;
static const CUstream S1 = (CUstream)(uintptr_t)0x5001;
static const CUstream S2 = (CUstream)(uintptr_t)0x5002;
static const CUstream S3 = (CUstream)(uintptr_t)0x5003;
static const CUevent E1 = (CUevent)(uintptr_t)0xe001;
static const CUevent E2 = (CUevent)(uintptr_t)0xe002;
static const CUevent E_BEFORE = (CUevent)(uintptr_t)0xe0ff;

/* Functions with a parameter layout (cuFuncGetParamInfo): */
static const CUfunction F_THREE = (CUfunction)(uintptr_t)0xf1;   /* 8 @0, 4 @8, 8 @16 */
static const CUfunction F_KERNEL = (CUfunction)(uintptr_t)0xf2;  /* a CUkernel: 4 @0 */
static const CUfunction F_NONE = (CUfunction)(uintptr_t)0xf3;    /* no parameters */
static const CUfunction F_BAD = (CUfunction)(uintptr_t)0xf4;     /* no layout */

/* ---- the stand-ins' log --------------------------------------------------------------- */

#define MAX_SEEN 512

struct seen {
	const char *call;
	CUstream stream;
	CUevent event;
	unsigned long long a, b, c, d, e;   /* the call's numbers, in its order */
	unsigned char bytes[64];            /* parameter bytes, or a copy's host bytes */
	size_t nbytes;
	bool via_extra;
	unsigned num_attrs;
	CUlaunchAttributeID attr_ids[4];
	unsigned grid[3], block[3];
};
static struct seen seen[MAX_SEEN];
static size_t seen_count;
static unsigned events_created, events_destroyed;
static CUresult launch_answer;

static struct seen *log_call(const char *call)
{
	cr_assert_lt(seen_count, MAX_SEEN);
	struct seen *s = &seen[seen_count++];
	memset(s, 0, sizeof(*s));
	s->call = call;
	return s;
}

/* The i-th call of that name, NULL when there are not that many. */
static const struct seen *nth(const char *call, size_t i)
{
	for (size_t k = 0; k < seen_count; k++)
		if (!strcmp(seen[k].call, call) && i-- == 0)
			return &seen[k];
	return NULL;
}

static size_t count_of(const char *call)
{
	size_t n = 0;
	for (size_t k = 0; k < seen_count; k++)
		n += !strcmp(seen[k].call, call);
	return n;
}

static CUresult param_info(CUfunction f, size_t i, size_t *offset, size_t *size)
{
	static const size_t offsets[] = { 0, 8, 16 }, sizes[] = { 8, 4, 8 };
	if (f == F_KERNEL)
		return CUDA_ERROR_INVALID_HANDLE;
	if (f == F_BAD)
		return CUDA_ERROR_NOT_SUPPORTED;
	if (f != F_THREE || i >= 3)
		return CUDA_ERROR_INVALID_VALUE;
	*offset = offsets[i];
	*size = sizes[i];
	return CUDA_SUCCESS;
}

static CUresult kernel_param_info(CUkernel k, size_t i, size_t *offset, size_t *size)
{
	if ((CUfunction)k != F_KERNEL || i >= 1)
		return CUDA_ERROR_INVALID_VALUE;
	*offset = 0;
	*size = 4;
	return CUDA_SUCCESS;
}

/* The bytes the kernel would see, read as the driver reads them. */
static void take_params(struct seen *s, CUfunction f, void **params, void **extra)
{
	if (params) {
		size_t offset, size;
		bool kernel = f == F_KERNEL;
		for (size_t i = 0;; i++) {
			CUresult cr = kernel ? kernel_param_info((CUkernel)f, i, &offset, &size) :
				param_info(f, i, &offset, &size);
			if (cr != CUDA_SUCCESS)
				break;
			memcpy(s->bytes + offset, params[i], size);
			if (offset + size > s->nbytes)
				s->nbytes = offset + size;
		}
	} else if (extra) {
		cr_assert_eq(extra[0], CU_LAUNCH_PARAM_BUFFER_POINTER);
		cr_assert_eq(extra[2], CU_LAUNCH_PARAM_BUFFER_SIZE);
		cr_assert_eq(extra[4], CU_LAUNCH_PARAM_END);
		s->nbytes = *(size_t *)extra[3];
		cr_assert_leq(s->nbytes, sizeof(s->bytes));
		memcpy(s->bytes, extra[1], s->nbytes);
		s->via_extra = true;
	}
}

static CUresult launch_kernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
			      unsigned by, unsigned bz, unsigned smem, CUstream stream,
			      void **params, void **extra)
{
	struct seen *s = log_call("cuLaunchKernel");
	s->a = (uintptr_t)f;
	s->b = smem;
	s->stream = stream;
	s->grid[0] = gx, s->grid[1] = gy, s->grid[2] = gz;
	s->block[0] = bx, s->block[1] = by, s->block[2] = bz;
	take_params(s, f, params, extra);
	return launch_answer;
}

static CUresult launch_cooperative(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
				   unsigned bx, unsigned by, unsigned bz, unsigned smem,
				   CUstream stream, void **params)
{
	struct seen *s = log_call("cuLaunchCooperativeKernel");
	(void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)smem;
	s->a = (uintptr_t)f;
	s->stream = stream;
	take_params(s, f, params, NULL);
	return launch_answer;
}

static CUresult launch_ex(const CUlaunchConfig *config, CUfunction f, void **params,
			  void **extra)
{
	struct seen *s = log_call("cuLaunchKernelEx");
	s->a = (uintptr_t)f;
	s->stream = config->hStream;
	s->grid[0] = config->gridDimX;
	s->block[0] = config->blockDimX;
	s->num_attrs = config->numAttrs;
	for (unsigned i = 0; i < config->numAttrs && i < 4; i++)
		s->attr_ids[i] = config->attrs[i].id;
	if (config->numAttrs && config->attrs[0].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
		s->b = config->attrs[0].value.clusterDim.x;
	take_params(s, f, params, extra);
	return launch_answer;
}

static CUresult memset8(CUdeviceptr dst, unsigned char v, size_t n, CUstream stream)
{
	struct seen *s = log_call("cuMemsetD8Async");
	s->a = dst, s->b = v, s->c = n, s->stream = stream;
	return CUDA_SUCCESS;
}

static CUresult memset16(CUdeviceptr dst, unsigned short v, size_t n, CUstream stream)
{
	struct seen *s = log_call("cuMemsetD16Async");
	s->a = dst, s->b = v, s->c = n, s->stream = stream;
	return CUDA_SUCCESS;
}

static CUresult memset32(CUdeviceptr dst, unsigned v, size_t n, CUstream stream)
{
	struct seen *s = log_call("cuMemsetD32Async");
	s->a = dst, s->b = v, s->c = n, s->stream = stream;
	return CUDA_SUCCESS;
}

static CUresult memset2d8(CUdeviceptr dst, size_t pitch, unsigned char v, size_t w, size_t h,
			  CUstream stream)
{
	struct seen *s = log_call("cuMemsetD2D8Async");
	s->a = dst, s->b = pitch, s->c = v, s->d = w, s->e = h, s->stream = stream;
	return CUDA_SUCCESS;
}

static CUresult memset2d16(CUdeviceptr dst, size_t pitch, unsigned short v, size_t w, size_t h,
			   CUstream stream)
{
	struct seen *s = log_call("cuMemsetD2D16Async");
	s->a = dst, s->b = pitch, s->c = v, s->d = w, s->e = h, s->stream = stream;
	return CUDA_SUCCESS;
}

static CUresult memset2d32(CUdeviceptr dst, size_t pitch, unsigned v, size_t w, size_t h,
			   CUstream stream)
{
	struct seen *s = log_call("cuMemsetD2D32Async");
	s->a = dst, s->b = pitch, s->c = v, s->d = w, s->e = h, s->stream = stream;
	return CUDA_SUCCESS;
}

static bool fake_device(CUdeviceptr p)
{
	return p >= DEVICE_BASE && p < DEVICE_BASE + (1ull << 40);
}

static bool fake_managed(CUdeviceptr p)
{
	return p >= MANAGED_BASE && p < MANAGED_BASE + (1ull << 40);
}

static CUresult memcpy_async(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream)
{
	struct seen *s = log_call("cuMemcpyAsync");
	s->a = dst, s->b = src, s->c = bytes, s->stream = stream;
	if (!fake_device(src) && !fake_managed(src)) {
		s->nbytes = bytes < sizeof(s->bytes) ? bytes : sizeof(s->bytes);
		memcpy(s->bytes, (const void *)(uintptr_t)src, s->nbytes);
	}
	return CUDA_SUCCESS;
}

/* The replay's pinned copies (cuMemHostAlloc): handed out, and given back. */
static void *pinned_given[8];
static unsigned pinned_allocs, pinned_frees;

static CUresult host_alloc(void **p, size_t bytes, unsigned flags)
{
	(void)flags;
	*p = malloc(bytes);
	if (*p && pinned_allocs < 8)
		pinned_given[pinned_allocs] = *p;
	pinned_allocs++;
	return *p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

static CUresult free_host(void *p)
{
	free(p);
	pinned_frees++;
	return CUDA_SUCCESS;
}

/* Pinned host memory, for the driver. */
static unsigned char pinned[64];

static CUresult pointer_attributes(unsigned n, CUpointer_attribute *attrs, void **data,
				   CUdeviceptr p)
{
	if (p == UNDESCRIBED)
		return CUDA_ERROR_INVALID_VALUE;
	for (unsigned i = 0; i < n; i++) {
		if (attrs[i] == CU_POINTER_ATTRIBUTE_MEMORY_TYPE)
			*(unsigned *)data[i] = fake_device(p) || fake_managed(p) ?
				CU_MEMORYTYPE_DEVICE :
				p >= (uintptr_t)pinned && p < (uintptr_t)(pinned + sizeof(pinned)) ?
				CU_MEMORYTYPE_HOST : 0;
		else if (attrs[i] == CU_POINTER_ATTRIBUTE_IS_MANAGED)
			*(int *)data[i] = fake_managed(p);
		else
			cr_assert_fail("attribute %d asked", (int)attrs[i]);
	}
	return CUDA_SUCCESS;
}

static CUresult event_create(CUevent *event, unsigned flags)
{
	struct seen *s = log_call("cuEventCreate");
	s->a = flags;
	*event = (CUevent)(uintptr_t)(0x5a00 + ++events_created);
	s->event = *event;
	return CUDA_SUCCESS;
}

static CUresult event_destroy(CUevent event)
{
	log_call("cuEventDestroy")->event = event;
	events_destroyed++;
	return CUDA_SUCCESS;
}

static CUresult event_record(CUevent event, CUstream stream)
{
	struct seen *s = log_call("cuEventRecord");
	s->event = event, s->stream = stream;
	return CUDA_SUCCESS;
}

static CUresult stream_wait_event(CUstream stream, CUevent event, unsigned flags)
{
	struct seen *s = log_call("cuStreamWaitEvent");
	s->event = event, s->stream = stream, s->a = flags;
	return CUDA_SUCCESS;
}

static CUresult event_synchronize(CUevent event)
{
	log_call("cuEventSynchronize")->event = event;
	return CUDA_SUCCESS;
}

static CUresult stream_synchronize(CUstream stream)
{
	log_call("cuStreamSynchronize")->stream = stream;
	return CUDA_SUCCESS;
}

static CUresult ctx_synchronize(void)
{
	log_call("cuCtxSynchronize");
	return CUDA_SUCCESS;
}

static CUresult graph_launch(CUgraphExec exec, CUstream stream)
{
	struct seen *s = log_call("cuGraphLaunch");
	s->a = (uintptr_t)exec, s->stream = stream;
	return CUDA_SUCCESS;
}

/* CUPTI's names for the calls the tests refuse; no name for the rest. */
static CUptiResult callback_name(CUpti_CallbackDomain domain, uint32_t cbid, const char **name)
{
	cr_assert_eq(domain, CUPTI_CB_DOMAIN_DRIVER_API);
	switch (cbid) {
	case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2: *name = "cuMemAlloc_v2"; break;
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2: *name = "cuMemcpyDtoHAsync_v2"; break;
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync: *name = "cuMemcpyAsync"; break;
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchHostFunc: *name = "cuLaunchHostFunc"; break;
	case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2:
		*name = "cuStreamBeginCapture_v2";
		break;
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel: *name = "cuLaunchKernel"; break;
	case CUPTI_DRIVER_TRACE_CBID_cuCtxSetCurrent: *name = "cuCtxSetCurrent"; break;
	case CUPTI_DRIVER_TRACE_CBID_cuEventDestroy_v2: *name = "cuEventDestroy_v2"; break;
	case CUPTI_DRIVER_TRACE_CBID_cuStreamDestroy_v2: *name = "cuStreamDestroy_v2"; break;
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2: *name = "cuMemcpyHtoDAsync_v2"; break;
	default: *name = NULL; return CUPTI_ERROR_INVALID_PARAMETER;
	}
	return CUPTI_SUCCESS;
}

static struct range_ops ops;

/* session.c's replay lock, as range_workload.c holds it around the recording and the
 * replay: held from each test's start; a test that lets go of it finds the rule checked
 * (range_calls.c, range_replay.c). */
static bool replay_held;

void inject_session_held_at(const char *func, const char *file, int line)
{
	if (!replay_held) {
		fprintf(stderr, "replay lock not held in %s (%s:%d)\n", func, file, line);
		abort();
	}
}

static void stand_ins(void)
{
	memset(&rp_api, 0, sizeof(rp_api));
	rp_api.cuFuncGetParamInfo = param_info;
	rp_api.cuKernelGetParamInfo = kernel_param_info;
	rp_api.cuLaunchKernel = launch_kernel;
	rp_api.cuLaunchCooperativeKernel = launch_cooperative;
	rp_api.cuLaunchKernelEx = launch_ex;
	rp_api.cuMemsetD8Async = memset8;
	rp_api.cuMemsetD16Async = memset16;
	rp_api.cuMemsetD32Async = memset32;
	rp_api.cuMemsetD2D8Async = memset2d8;
	rp_api.cuMemsetD2D16Async = memset2d16;
	rp_api.cuMemsetD2D32Async = memset2d32;
	rp_api.cuMemcpyAsync = memcpy_async;
	rp_api.cuPointerGetAttributes = pointer_attributes;
	rp_api.cuEventCreate = event_create;
	rp_api.cuEventDestroy = event_destroy;
	rp_api.cuEventRecord = event_record;
	rp_api.cuStreamWaitEvent = stream_wait_event;
	rp_api.cuEventSynchronize = event_synchronize;
	rp_api.cuStreamSynchronize = stream_synchronize;
	rp_api.cuCtxSynchronize = ctx_synchronize;
	rp_api.cuGraphLaunch = graph_launch;
	rp_api.cuptiGetCallbackName = callback_name;
	rp_api.cuMemHostAlloc = host_alloc;
	rp_api.cuMemFreeHost = free_host;
	seen_count = 0;
	events_created = events_destroyed = 0;
	launch_answer = CUDA_SUCCESS;
	replay_held = true;
	range_ops_init(&ops, CTX);
}

static void clean_up(void)
{
	range_ops_finish(&ops);
}

/* One driver call at its ENTER, as CUPTI gives it, in ctx. */
static enum range_call call_in(CUcontext ctx, CUpti_CallbackId cbid, const void *params,
			       const char *symbol)
{
	CUpti_CallbackData cb = { .callbackSite = CUPTI_API_ENTER,
				  .functionName = "theDriverCall", .functionParams = params,
				  .context = ctx, .contextUid = 7, .symbolName = symbol };
	return range_ops_on_call(&ops, cbid, &cb);
}

static enum range_call call(CUpti_CallbackId cbid, const void *params)
{
	return call_in(CTX, cbid, params, NULL);
}

/* Prepares, issues part of what ops holds once and finishes the replay; the stand-ins'
 * log then holds the issued calls only (not the shadows' creation and destruction). */
static void replay_part(enum range_part part)
{
	struct range_replay rp;
	char err[256] = "";
	cr_assert_eq(range_replay_prepare(&ops, &rp, err, sizeof(err)), 0, "%s", err);
	seen_count = 0;
	cr_assert_eq(range_replay_issue(&ops, &rp, part, err, sizeof(err)), 0, "%s", err);
	size_t issued = seen_count;
	range_replay_finish(&rp);
	seen_count = issued;
}

/* The whole range (--range-scope whole). */
static void replay(void)
{
	replay_part(RANGE_PART_ALL);
}

TestSuite(range_ops, .init = stand_ins, .fini = clean_up);

/* ---- kernel launches ------------------------------------------------------------------ */

/* The application may reuse its argument variables, its kernelParams array and the name
 * CUPTI gave as soon as the launch returns: the replay launches with the bytes of the
 * call. */
Test(range_ops, a_launch_is_copied_deeply_and_relaunched_with_the_original_bytes)
{
	uint64_t pointer = DEV(0x100);
	int32_t n = 1234;
	double scale = 0.5;
	void *params[3] = { &pointer, &n, &scale };
	char symbol[32] = "_Z6kernelPfid";
	cuLaunchKernel_params p = { .f = F_THREE, .gridDimX = 8, .gridDimY = 2, .gridDimZ = 1,
				    .blockDimX = 256, .blockDimY = 1, .blockDimZ = 1,
				    .sharedMemBytes = 1024, .hStream = S1,
				    .kernelParams = params };
	cr_assert_eq(call_in(CTX, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &p, symbol),
		     RANGE_CALL_RECORDED);
	unsigned char want[24] = { 0 };
	memcpy(want, &pointer, 8);
	memcpy(want + 8, &n, 4);
	memcpy(want + 16, &scale, 8);
	pointer = DEV(0x999), n = -1, scale = 7.0;
	int32_t other = 42;
	params[1] = &other;
	memset(symbol, 'x', sizeof(symbol) - 1);
	memset(&p, 0, sizeof(p));

	cr_assert_eq(ops.count, 1);
	cr_assert_eq(ops.kernels, 1);
	cr_assert_eq(ops.ops[0].kind, RANGE_OP_KERNEL);
	cr_assert_eq(ops.ops[0].call, 0);
	cr_assert_str_eq(ops.ops[0].kernel.launch.mangled, "_Z6kernelPfid");
	cr_assert_eq(ops.ops[0].kernel.launch.ctx, CTX);
	cr_assert_not_null(ops.ops[0].kernel.name);
	replay();
	const struct seen *s = nth("cuLaunchKernel", 0);
	cr_assert_not_null(s);
	cr_assert_eq(count_of("cuLaunchKernel"), 1);
	cr_assert_eq(s->a, (uintptr_t)F_THREE);
	cr_assert_eq(s->stream, S1);
	cr_assert_eq(s->grid[0], 8);
	cr_assert_eq(s->grid[1], 2);
	cr_assert_eq(s->block[0], 256);
	cr_assert_eq(s->b, 1024);
	cr_assert_not(s->via_extra);
	cr_assert_eq(s->nbytes, 24);
	cr_assert_arr_eq(s->bytes, want, 24);
}

/* A CUDA 12 library's kernel comes as a CUkernel handle, whose layout only
 * cuKernelGetParamInfo gives. */
Test(range_ops, a_cukernel_handle_takes_its_layout_from_cuKernelGetParamInfo)
{
	int32_t v = 77;
	void *params[1] = { &v };
	cuLaunchCooperativeKernel_params p = { .f = F_KERNEL, .gridDimX = 1, .gridDimY = 1,
					       .gridDimZ = 1, .blockDimX = 32, .blockDimY = 1,
					       .blockDimZ = 1, .hStream = S2,
					       .kernelParams = params };
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, &p),
		     RANGE_CALL_RECORDED);
	v = 0;
	replay();
	const struct seen *s = nth("cuLaunchCooperativeKernel", 0);
	cr_assert_not_null(s);
	cr_assert_eq(s->stream, S2);
	cr_assert_eq(s->nbytes, 4);
	int32_t got;
	memcpy(&got, s->bytes, 4);
	cr_assert_eq(got, 77);
}

Test(range_ops, a_kernel_without_parameters_is_relaunched_with_a_parameter_array)
{
	void *params[1] = { NULL };
	cuLaunchKernel_params p = { .f = F_NONE, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
				    .blockDimX = 1, .blockDimY = 1, .blockDimZ = 1,
				    .kernelParams = params };
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &p), RANGE_CALL_RECORDED);
	cr_assert_not_null(ops.ops[0].kernel.launch.kernel_params);
	replay();
	cr_assert_eq(count_of("cuLaunchKernel"), 1);
	cr_assert_eq(nth("cuLaunchKernel", 0)->nbytes, 0);
}

Test(range_ops, a_kernel_whose_layout_the_driver_does_not_give_is_refused)
{
	int32_t v = 1;
	void *params[1] = { &v };
	cuLaunchKernel_params p = { .f = F_BAD, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
				    .blockDimX = 1, .blockDimY = 1, .blockDimZ = 1,
				    .kernelParams = params };
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &p), RANGE_CALL_REFUSED);
	cr_assert_str_eq(ops.refusal.call, "cuLaunchKernel");
	cr_assert_str_eq(ops.refusal.why, "passes kernel parameters rangeprof could not copy");
	cr_assert_eq(ops.refusal.code, RANGE_WHY_PARAMETERS);
	cr_assert_eq(ops.count, 0);
	cr_assert_eq(ops.kernels, 0);
}

/* The packed buffer of CU_LAUNCH_PARAM_BUFFER_POINTER, copied with the size it states. */
Test(range_ops, an_extra_buffer_launch_is_copied_and_relaunched_through_extra)
{
	unsigned char packed[16];
	for (unsigned i = 0; i < sizeof(packed); i++)
		packed[i] = (unsigned char)(0xa0 + i);
	size_t size = sizeof(packed);
	void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, packed, CU_LAUNCH_PARAM_BUFFER_SIZE,
			  &size, CU_LAUNCH_PARAM_END };
	cuLaunchKernel_params p = { .f = F_THREE, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
				    .blockDimX = 64, .blockDimY = 1, .blockDimZ = 1,
				    .hStream = S1, .extra = extra };
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &p), RANGE_CALL_RECORDED);
	unsigned char want[16];
	memcpy(want, packed, sizeof(want));
	memset(packed, 0, sizeof(packed));
	size = 4;
	extra[1] = NULL;
	replay();
	const struct seen *s = nth("cuLaunchKernel", 0);
	cr_assert_not_null(s);
	cr_assert(s->via_extra);
	cr_assert_eq(s->nbytes, 16);
	cr_assert_arr_eq(s->bytes, want, 16);
}

Test(range_ops, an_extra_array_with_an_unknown_key_is_refused)
{
	void *extra[] = { (void *)(uintptr_t)0x77, NULL, CU_LAUNCH_PARAM_END };
	cuLaunchKernel_params p = { .f = F_THREE, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
				    .blockDimX = 1, .blockDimY = 1, .blockDimZ = 1,
				    .extra = extra };
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &p), RANGE_CALL_REFUSED);
	cr_assert_str_eq(ops.refusal.why, "passes kernel parameters rangeprof could not copy");
	cr_assert_eq(ops.refusal.code, RANGE_WHY_PARAMETERS);
}

/* The ops array moves as it grows: every kernel's launch still points into its own
 * copies afterwards. */
Test(range_ops, launches_recorded_before_the_ops_grew_still_relaunch_their_own_bytes)
{
	enum { LAUNCHES = 300 };
	for (unsigned i = 0; i < LAUNCHES; i++) {
		uint32_t packed[2] = { i, ~i };
		size_t size = sizeof(packed);
		void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, packed,
				  CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END };
		uint64_t pointer = DEV(i);
		int32_t n = (int32_t)i;
		double d = i;
		void *params[3] = { &pointer, &n, &d };
		cuLaunchKernel_params p = { .f = F_THREE, .gridDimX = 1, .gridDimY = 1,
					    .gridDimZ = 1, .blockDimX = 1, .blockDimY = 1,
					    .blockDimZ = 1, .hStream = S1 };
		if (i % 2)
			p.extra = extra;
		else
			p.kernelParams = params;
		cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &p),
			     RANGE_CALL_RECORDED);
	}
	cr_assert_gt(ops.capacity, 64);
	replay();
	cr_assert_eq(count_of("cuLaunchKernel"), LAUNCHES);
	for (unsigned i = 0; i < LAUNCHES; i++) {
		const struct seen *s = nth("cuLaunchKernel", i);
		if (i % 2) {
			uint32_t got[2];
			cr_assert(s->via_extra);
			memcpy(got, s->bytes, sizeof(got));
			cr_assert_eq(got[0], i);
			cr_assert_eq(got[1], ~i);
		} else {
			uint64_t pointer;
			int32_t n;
			memcpy(&pointer, s->bytes, 8);
			memcpy(&n, s->bytes + 8, 4);
			cr_assert_eq(pointer, DEV(i));
			cr_assert_eq(n, (int32_t)i);
		}
	}
}

/* Its config and attributes are copied; a _ptsz call's NULL stream is the per-thread
 * stream in the relaunched config too; an event attribute is left out of the relaunch
 * (kernel_launch.c) and stood in for by a record of the event's shadow after the kernel. */
Test(range_ops, a_launch_kernel_ex_keeps_its_attributes_and_records_its_event_after_it)
{
	int32_t v = 5;
	uint64_t ptr = DEV(8);
	double d = 2.0;
	void *params[3] = { &ptr, &v, &d };
	CUlaunchAttribute attrs[2] = { 0 };
	attrs[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
	attrs[0].value.clusterDim.x = 2;
	attrs[0].value.clusterDim.y = 1;
	attrs[0].value.clusterDim.z = 1;
	attrs[1].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT;
	attrs[1].value.programmaticEvent.event = E1;
	CUlaunchConfig config = { .gridDimX = 4, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 128,
				  .blockDimY = 1, .blockDimZ = 1, .hStream = NULL,
				  .attrs = attrs, .numAttrs = 2 };
	cuLaunchKernelEx_ptsz_params p = { .config = &config, .f = F_THREE,
					   .kernelParams = params };
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz, &p),
		     RANGE_CALL_RECORDED);
	memset(attrs, 0, sizeof(attrs));
	memset(&config, 0, sizeof(config));
	v = 0;
	cr_assert_eq(ops.count, 2);
	cr_assert_eq(ops.kernels, 1);
	cr_assert_eq(ops.ops[1].kind, RANGE_OP_EVENT_RECORD);
	cr_assert_eq(ops.ops[1].event.event, E1);
	cr_assert_eq(ops.ops[1].stream, CU_STREAM_PER_THREAD);

	replay();
	const struct seen *s = nth("cuLaunchKernelEx", 0);
	cr_assert_not_null(s);
	cr_assert_eq(s->stream, CU_STREAM_PER_THREAD);
	cr_assert_eq(s->grid[0], 4);
	cr_assert_eq(s->block[0], 128);
	cr_assert_eq(s->num_attrs, 1);
	cr_assert_eq(s->attr_ids[0], CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION);
	cr_assert_eq(s->b, 2);
	int32_t got;
	memcpy(&got, s->bytes + 8, 4);
	cr_assert_eq(got, 5);
	const struct seen *r = nth("cuEventRecord", 0);
	cr_assert_not_null(r);
	cr_assert_gt(r - s, 0, "the event is recorded after the kernel");
	cr_assert_neq(r->event, E1);
	cr_assert_eq(r->stream, CU_STREAM_PER_THREAD);
}

/* ---- memsets and copies --------------------------------------------------------------- */

Test(range_ops, memsets_are_recorded_and_issued_with_their_arguments)
{
	cuMemsetD8Async_params a = { .dstDevice = DEV(0x10), .uc = 0xab, .N = 100,
				     .hStream = S1 };
	cuMemsetD32_v2_params b = { .dstDevice = DEV(0x20), .ui = 0xdeadbeef, .N = 7 };
	cuMemsetD2D16Async_ptsz_params c = { .dstDevice = DEV(0x30), .dstPitch = 512,
					     .us = 0x1234, .Width = 100, .Height = 3,
					     .hStream = NULL };
	cuMemsetD16_v2_ptds_params d = { .dstDevice = DEV(0x40), .us = 9, .N = 2 };
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async, &a), RANGE_CALL_RECORDED);
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2, &b), RANGE_CALL_RECORDED);
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D16Async_ptsz, &c),
		     RANGE_CALL_RECORDED);
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2_ptds, &d), RANGE_CALL_RECORDED);
	replay();
	cr_assert_eq(seen_count, 4);
	cr_assert_str_eq(seen[0].call, "cuMemsetD8Async");
	cr_assert_eq(seen[0].a, DEV(0x10));
	cr_assert_eq(seen[0].b, 0xab);
	cr_assert_eq(seen[0].c, 100);
	cr_assert_eq(seen[0].stream, S1);
	cr_assert_str_eq(seen[1].call, "cuMemsetD32Async");
	cr_assert_eq(seen[1].b, 0xdeadbeef);
	cr_assert_eq(seen[1].c, 7);
	cr_assert_null(seen[1].stream, "the synchronous form runs on the legacy stream");
	cr_assert_str_eq(seen[2].call, "cuMemsetD2D16Async");
	cr_assert_eq(seen[2].a, DEV(0x30));
	cr_assert_eq(seen[2].b, 512);
	cr_assert_eq(seen[2].c, 0x1234);
	cr_assert_eq(seen[2].d, 100);
	cr_assert_eq(seen[2].e, 3);
	cr_assert_eq(seen[2].stream, CU_STREAM_PER_THREAD);
	cr_assert_str_eq(seen[3].call, "cuMemsetD16Async");
	cr_assert_eq(seen[3].stream, CU_STREAM_PER_THREAD);
}

/* Device to device as given; host to device from the bytes of the call, not those the
 * buffer holds later; the synchronous host copy is waited for, as the host did. */
Test(range_ops, copies_to_the_device_are_issued_from_the_bytes_of_the_call)
{
	unsigned char host[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	cuMemcpyDtoDAsync_v2_params a = { .dstDevice = DEV(0x100), .srcDevice = DEV(0x200),
					  .ByteCount = 4096, .hStream = S2 };
	cuMemcpyHtoDAsync_v2_params b = { .dstDevice = DEV(0x300), .srcHost = host,
					  .ByteCount = sizeof(host), .hStream = S1 };
	cuMemcpyHtoD_v2_params c = { .dstDevice = DEV(0x400), .srcHost = host, .ByteCount = 4 };
	cuMemcpyDtoD_v2_params d = { .dstDevice = DEV(0x500), .srcDevice = DEV(0x600),
				     .ByteCount = 16 };
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2, &a), RANGE_CALL_RECORDED);
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2, &b), RANGE_CALL_RECORDED);
	memset(host, 0xee, 4);
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2, &c), RANGE_CALL_RECORDED);
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2, &d), RANGE_CALL_RECORDED);
	memset(host, 0, sizeof(host));
	replay();
	cr_assert_eq(seen_count, 5);
	cr_assert_str_eq(seen[0].call, "cuMemcpyAsync");
	cr_assert_eq(seen[0].a, DEV(0x100));
	cr_assert_eq(seen[0].b, DEV(0x200));
	cr_assert_eq(seen[0].c, 4096);
	cr_assert_eq(seen[0].stream, S2);
	cr_assert_str_eq(seen[1].call, "cuMemcpyAsync");
	cr_assert_eq(seen[1].a, DEV(0x300));
	cr_assert_neq(seen[1].b, (uintptr_t)host, "from rangeprof's copy");
	cr_assert_eq(pinned_allocs, 2, "each copy from the host replayed from pinned memory");
	cr_assert_eq(seen[1].b, (uintptr_t)pinned_given[0]);
	cr_assert_eq(seen[2].b, (uintptr_t)pinned_given[1]);
	cr_assert_eq(pinned_frees, 2, "given back when the replay is finished");
	cr_assert_eq(seen[1].stream, S1);
	unsigned char first[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	cr_assert_arr_eq(seen[1].bytes, first, 8);
	cr_assert_str_eq(seen[2].call, "cuMemcpyAsync");
	unsigned char second[4] = { 0xee, 0xee, 0xee, 0xee };
	cr_assert_eq(seen[2].c, 4);
	cr_assert_arr_eq(seen[2].bytes, second, 4);
	cr_assert_null(seen[2].stream);
	cr_assert_str_eq(seen[3].call, "cuStreamSynchronize");
	cr_assert_null(seen[3].stream);
	cr_assert_str_eq(seen[4].call, "cuMemcpyAsync");
	cr_assert_eq(seen[4].b, DEV(0x600));
}

/* cuMemcpyAsync with unified addressing: each side as cuPointerGetAttributes says. */
Test(range_ops, a_unified_copy_is_recorded_or_refused_by_where_its_sides_are)
{
	unsigned char host[4] = { 9, 8, 7, 6 };
	cuMemcpyAsync_params dd = { .dst = DEV(1), .src = MANAGED(2), .ByteCount = 64,
				    .hStream = S1 };
	cuMemcpyAsync_params hd = { .dst = MANAGED(3), .src = (CUdeviceptr)(uintptr_t)host,
				    .ByteCount = 4, .hStream = S1 };
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync, &dd), RANGE_CALL_RECORDED);
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync, &hd), RANGE_CALL_RECORDED);
	host[0] = 0;
	cr_assert_eq(ops.count, 2);
	cr_assert_eq(ops.ops[0].copy.src, MANAGED(2));
	cr_assert_null(ops.ops[0].copy.host);
	cr_assert_not_null(ops.ops[1].copy.host);
	cr_assert_eq(ops.ops[1].copy.src, 0);
	replay();
	cr_assert_eq(seen_count, 2);
	unsigned char want[4] = { 9, 8, 7, 6 };
	cr_assert_arr_eq(seen[1].bytes, want, 4);

	cuMemcpyAsync_params dh = { .dst = (CUdeviceptr)(uintptr_t)pinned, .src = DEV(4),
				    .ByteCount = 4, .hStream = S1 };
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync, &dh), RANGE_CALL_REFUSED);
	cr_assert_str_eq(ops.refusal.call, "cuMemcpyAsync");
	cr_assert_str_eq(ops.refusal.why, "reads device results on the host");
	cr_assert_eq(ops.refusal.code, RANGE_WHY_TO_HOST);
	cr_assert_eq(ops.refusal.call_index, 2);
}

Test(range_ops, a_unified_copy_between_host_buffers_is_outside_the_supported_set)
{
	unsigned char a[4], b[4] = { 0 };
	cuMemcpy_params hh = { .dst = (CUdeviceptr)(uintptr_t)a,
			       .src = (CUdeviceptr)(uintptr_t)b, .ByteCount = 4 };
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuMemcpy, &hh), RANGE_CALL_REFUSED);
	cr_assert_str_eq(ops.refusal.why, "is outside the calls range replay supports");
	cr_assert_eq(ops.refusal.code, RANGE_WHY_OUTSIDE);
}

/* A device pointer taken for a host one would be read on the host. */
Test(range_ops, a_unified_copy_of_memory_the_driver_cannot_describe_is_refused)
{
	cuMemcpyAsync_params p = { .dst = DEV(1), .src = UNDESCRIBED, .ByteCount = 4 };
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync, &p), RANGE_CALL_REFUSED);
	cr_assert_str_eq(ops.refusal.why, "copies memory the driver could not describe");
	cr_assert_eq(ops.refusal.code, RANGE_WHY_UNDESCRIBED);
}

Test(range_ops, a_host_copy_without_the_memory_for_it_is_refused)
{
	unsigned char host[1] = { 0 };
	cuMemcpyHtoDAsync_v2_params p = { .dstDevice = DEV(1), .srcHost = host,
					  .ByteCount = SIZE_MAX / 2, .hStream = S1 };
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2, &p), RANGE_CALL_REFUSED);
	cr_assert_str_eq(ops.refusal.call, "cuMemcpyHtoDAsync_v2");
	cr_assert_str_eq(ops.refusal.why, "rangeprof ran out of host memory recording it");
	cr_assert_eq(ops.refusal.code, RANGE_WHY_MEMORY);
	cr_assert_eq(ops.count, 0);
}

/* ---- refusals ------------------------------------------------------------------------- */

Test(range_ops, a_device_to_host_copy_is_refused_with_its_name_and_place)
{
	void *params[1] = { NULL };
	cuLaunchKernel_params k = { .f = F_NONE, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
				    .blockDimX = 1, .blockDimY = 1, .blockDimZ = 1,
				    .kernelParams = params };
	cuCtxGetCurrent_params q = { NULL };
	unsigned char host[4];
	cuMemcpyDtoHAsync_v2_params p = { .dstHost = host, .srcDevice = DEV(1), .ByteCount = 4,
					  .hStream = S1 };
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &k), RANGE_CALL_RECORDED);
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent, &q), RANGE_CALL_IGNORED);
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2, &p), RANGE_CALL_REFUSED);
	cr_assert(ops.refused);
	cr_assert_str_eq(ops.refusal.call, "cuMemcpyDtoHAsync_v2");
	cr_assert_str_eq(ops.refusal.why, "reads device results on the host");
	cr_assert_eq(ops.refusal.code, RANGE_WHY_TO_HOST);
	cr_assert_eq(ops.refusal.call_index, 2);
	cr_assert_eq(ops.refusal.kernels_before, 1);
	cr_assert_eq(ops.calls, 3);
}

Test(range_ops, an_allocation_is_refused)
{
	CUdeviceptr d;
	cuMemAlloc_v2_params p = { .dptr = &d, .bytesize = 64 };
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &p), RANGE_CALL_REFUSED);
	cr_assert_str_eq(ops.refusal.call, "cuMemAlloc_v2");
	cr_assert_str_eq(ops.refusal.why, "allocates or frees memory");
	cr_assert_eq(ops.refusal.code, RANGE_WHY_ALLOCATES);
	cr_assert_eq(ops.refusal.call_index, 0);
	cr_assert_eq(ops.refusal.kernels_before, 0);
}

Test(range_ops, a_host_function_is_refused)
{
	cuLaunchHostFunc_params p = { .hStream = S1 };
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuLaunchHostFunc, &p), RANGE_CALL_REFUSED);
	cr_assert_str_eq(ops.refusal.call, "cuLaunchHostFunc");
	cr_assert_str_eq(ops.refusal.why, "runs a host function");
	cr_assert_eq(ops.refusal.code, RANGE_WHY_HOST_FUNCTION);
}

Test(range_ops, a_stream_memory_operation_is_refused)
{
	cuStreamWaitValue32_v2_params p = { .stream = S1, .addr = DEV(0), .value = 1 };
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue32_v2, &p),
		     RANGE_CALL_REFUSED);
	cr_assert_str_eq(ops.refusal.why,
			 "synchronises with another process or the host through memory");
	cr_assert_eq(ops.refusal.code, RANGE_WHY_OTHER_PROCESS);
	/* CUPTI has no name for it here: the callback's own is said. */
	cr_assert_str_eq(ops.refusal.call, "theDriverCall");
}

/* A stream capture, for one: its launches would run for real in a replay. */
Test(range_ops, a_call_outside_the_supported_set_is_refused)
{
	cuStreamBeginCapture_v2_params p = { .hStream = S1 };
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2, &p),
		     RANGE_CALL_REFUSED);
	cr_assert_str_eq(ops.refusal.call, "cuStreamBeginCapture_v2");
	cr_assert_str_eq(ops.refusal.why, "is outside the calls range replay supports");
	cr_assert_eq(ops.refusal.code, RANGE_WHY_OUTSIDE);
}

/* The first refusal is the one said; later calls are counted but neither recorded nor
 * looked at. */
Test(range_ops, the_first_refusal_is_kept_and_nothing_is_recorded_after_it)
{
	CUdeviceptr d;
	cuMemAlloc_v2_params alloc = { .dptr = &d, .bytesize = 64 };
	cuLaunchHostFunc_params host = { .hStream = S1 };
	cuMemsetD8Async_params m = { .dstDevice = DEV(0), .uc = 1, .N = 1, .hStream = S1 };
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async, &m), RANGE_CALL_RECORDED);
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &alloc), RANGE_CALL_REFUSED);
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuLaunchHostFunc, &host), RANGE_CALL_REFUSED);
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async, &m), RANGE_CALL_REFUSED);
	cr_assert_str_eq(ops.refusal.call, "cuMemAlloc_v2");
	cr_assert_str_eq(ops.refusal.why, "allocates or frees memory");
	cr_assert_eq(ops.refusal.code, RANGE_WHY_ALLOCATES);
	cr_assert_eq(ops.refusal.call_index, 1);
	cr_assert_eq(ops.count, 1);
	cr_assert_eq(ops.calls, 4);
}

Test(range_ops, queries_loads_and_settings_are_ignored)
{
	CUcontext ctx;
	cuCtxGetCurrent_params a = { &ctx };
	int value;
	cuFuncGetAttribute_params b = { .pi = &value, .hfunc = F_THREE };
	cuStreamQuery_params c = { .hStream = S1 };
	CUevent e;
	cuEventCreate_params d = { .phEvent = &e };
	cuFuncSetAttribute_params f = { .hfunc = F_THREE, .value = 1 };
	cuCtxPushCurrent_v2_params g = { .ctx = OTHER_CTX };
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent, &a), RANGE_CALL_IGNORED);
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuFuncGetAttribute, &b), RANGE_CALL_IGNORED);
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuStreamQuery, &c), RANGE_CALL_IGNORED);
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuEventCreate, &d), RANGE_CALL_IGNORED);
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuFuncSetAttribute, &f), RANGE_CALL_IGNORED);
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuCtxPushCurrent_v2, &g), RANGE_CALL_IGNORED);
	/* A question asked in another context changes nothing either. */
	cr_assert_eq(call_in(OTHER_CTX, CUPTI_DRIVER_TRACE_CBID_cuStreamQuery, &c, NULL),
		     RANGE_CALL_IGNORED);
	cr_assert_eq(ops.count, 0);
	cr_assert_eq(ops.calls, 7);
	cr_assert_not(ops.refused);
	cr_assert_eq(seen_count, 0, "nothing asked of the driver");
}

Test(range_ops, a_call_in_another_context_is_refused)
{
	cuMemsetD8Async_params m = { .dstDevice = DEV(0), .uc = 1, .N = 1, .hStream = S1 };
	cr_assert_eq(call_in(OTHER_CTX, CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async, &m, NULL),
		     RANGE_CALL_REFUSED);
	cr_assert_str_eq(ops.refusal.why, "works in another context than the range began in");
	cr_assert_eq(ops.refusal.code, RANGE_WHY_CONTEXT);
	cr_assert_eq(ops.count, 0);
}

Test(range_ops, setting_another_context_current_is_refused_and_the_ranges_own_ignored)
{
	cuCtxSetCurrent_params own = { .ctx = CTX };
	cuCtxSetCurrent_params other = { .ctx = OTHER_CTX };
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuCtxSetCurrent, &own), RANGE_CALL_IGNORED);
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuCtxSetCurrent, &other), RANGE_CALL_REFUSED);
	cr_assert_str_eq(ops.refusal.call, "cuCtxSetCurrent");
	cr_assert_str_eq(ops.refusal.why, "works in another context than the range began in");
	cr_assert_eq(ops.refusal.code, RANGE_WHY_CONTEXT);
}

Test(range_ops, destroying_an_event_or_stream_the_range_used_is_refused)
{
	cuEventRecord_params r = { .hEvent = E1, .hStream = S1 };
	cuEventDestroy_v2_params unused = { .hEvent = E2 };
	cuStreamDestroy_v2_params unused_stream = { .hStream = S3 };
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuEventRecord, &r), RANGE_CALL_RECORDED);
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuEventDestroy_v2, &unused), RANGE_CALL_IGNORED);
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuStreamDestroy_v2, &unused_stream),
		     RANGE_CALL_IGNORED);
	cuStreamDestroy_v2_params used_stream = { .hStream = S1 };
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuStreamDestroy_v2, &used_stream),
		     RANGE_CALL_REFUSED);
	cr_assert_str_eq(ops.refusal.call, "cuStreamDestroy_v2");
	cr_assert_str_eq(ops.refusal.why, "destroys a stream or event the range used");
	cr_assert_eq(ops.refusal.code, RANGE_WHY_DESTROYS);
}

Test(range_ops, destroying_an_event_the_range_recorded_is_refused)
{
	cuEventRecord_params r = { .hEvent = E1, .hStream = S1 };
	cuEventDestroy_v2_params used = { .hEvent = E1 };
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuEventRecord, &r), RANGE_CALL_RECORDED);
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuEventDestroy_v2, &used), RANGE_CALL_REFUSED);
	cr_assert_str_eq(ops.refusal.call, "cuEventDestroy_v2");
	cr_assert_str_eq(ops.refusal.why, "destroys a stream or event the range used");
	cr_assert_eq(ops.refusal.code, RANGE_WHY_DESTROYS);
}

/* ---- events and the replay ------------------------------------------------------------ */

/* A replay records and waits on shadows, never on the application's events; a wait on an
 * event recorded before the range began is complete by the replay, and skipped. */
Test(range_ops, events_are_replayed_on_shadows_and_waits_on_earlier_records_are_skipped)
{
	cuStreamWaitEvent_params before = { .hStream = S2, .hEvent = E_BEFORE };
	cuEventRecord_params r1 = { .hEvent = E1, .hStream = S1 };
	cuEventRecordWithFlags_params r2 = { .hEvent = E2, .hStream = S1, .flags = 0 };
	cuEventRecord_params r1_again = { .hEvent = E1, .hStream = S1 };
	cuStreamWaitEvent_params w1 = { .hStream = S2, .hEvent = E1 };
	cuEventSynchronize_params s1 = { .hEvent = E1 };
	cuEventSynchronize_params s_before = { .hEvent = E_BEFORE };
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent, &before), RANGE_CALL_RECORDED);
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuEventRecord, &r1), RANGE_CALL_RECORDED);
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags, &r2),
		     RANGE_CALL_RECORDED);
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuEventRecord, &r1_again), RANGE_CALL_RECORDED);
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent, &w1), RANGE_CALL_RECORDED);
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize, &s1), RANGE_CALL_RECORDED);
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize, &s_before),
		     RANGE_CALL_RECORDED);

	struct range_replay rp;
	char err[256] = "";
	cr_assert_eq(range_replay_prepare(&ops, &rp, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(rp.count, 2, "one shadow for each event the range records");
	cr_assert_eq(events_created, 2);
	for (size_t i = 0; i < seen_count; i++)
		cr_assert_eq(seen[i].a, CU_EVENT_DISABLE_TIMING);
	CUevent shadow1 = NULL, shadow2 = NULL;
	for (size_t i = 0; i < rp.count; i++) {
		if (rp.app[i] == E1)
			shadow1 = rp.shadow[i];
		if (rp.app[i] == E2)
			shadow2 = rp.shadow[i];
	}
	cr_assert_not_null(shadow1);
	cr_assert_not_null(shadow2);
	seen_count = 0;
	cr_assert_eq(range_replay_issue(&ops, &rp, RANGE_PART_ALL, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(seen_count, 5);
	cr_assert_str_eq(seen[0].call, "cuEventRecord");
	cr_assert_eq(seen[0].event, shadow1);
	cr_assert_eq(seen[0].stream, S1);
	cr_assert_str_eq(seen[1].call, "cuEventRecord");
	cr_assert_eq(seen[1].event, shadow2);
	cr_assert_str_eq(seen[2].call, "cuEventRecord");
	cr_assert_eq(seen[2].event, shadow1);
	cr_assert_str_eq(seen[3].call, "cuStreamWaitEvent");
	cr_assert_eq(seen[3].stream, S2);
	cr_assert_eq(seen[3].event, shadow1);
	cr_assert_eq(seen[3].a, 0);
	cr_assert_str_eq(seen[4].call, "cuEventSynchronize");
	cr_assert_eq(seen[4].event, shadow1);
	for (size_t i = 0; i < seen_count; i++) {
		cr_assert_neq(seen[i].event, E1, "%s got the application's event", seen[i].call);
		cr_assert_neq(seen[i].event, E2, "%s got the application's event", seen[i].call);
		cr_assert_neq(seen[i].event, E_BEFORE, "%s got the application's event",
			      seen[i].call);
	}
	range_replay_finish(&rp);
	cr_assert_eq(events_destroyed, 2);
	cr_assert_null(rp.shadow);
	cr_assert_eq(rp.count, 0);
}

Test(range_ops, a_range_without_event_records_needs_no_shadow)
{
	cuStreamWaitEvent_params before = { .hStream = S2, .hEvent = E_BEFORE };
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent, &before), RANGE_CALL_RECORDED);
	replay();
	cr_assert_eq(events_created, 0);
	cr_assert_eq(seen_count, 0);
}

Test(range_ops, graph_launches_and_synchronisations_are_issued_again)
{
	CUgraphExec exec = (CUgraphExec)(uintptr_t)0x6001;
	cuGraphLaunch_params g = { .hGraph = exec, .hStream = S1 };
	cuStreamSynchronize_params s = { .hStream = S1 };
	cuCtxSynchronize_v2_params c = { .ctx = NULL };
	cuCtxSynchronize_v2_params other = { .ctx = OTHER_CTX };
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, &g), RANGE_CALL_RECORDED);
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, &s), RANGE_CALL_RECORDED);
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, NULL), RANGE_CALL_RECORDED);
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2, &c), RANGE_CALL_RECORDED);
	cr_assert_eq(ops.graph_launches, 1);
	cr_assert_eq(ops.kernels, 0);
	replay();
	cr_assert_eq(seen_count, 4);
	cr_assert_str_eq(seen[0].call, "cuGraphLaunch");
	cr_assert_eq(seen[0].a, (uintptr_t)exec);
	cr_assert_eq(seen[0].stream, S1);
	cr_assert_str_eq(seen[1].call, "cuStreamSynchronize");
	cr_assert_eq(seen[1].stream, S1);
	cr_assert_str_eq(seen[2].call, "cuCtxSynchronize");
	cr_assert_str_eq(seen[3].call, "cuCtxSynchronize");
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2, &other),
		     RANGE_CALL_REFUSED);
	cr_assert_str_eq(ops.refusal.why, "works in another context than the range began in");
	cr_assert_eq(ops.refusal.code, RANGE_WHY_CONTEXT);
}

/* --range-scope kernels: the memsets and copies go before the run's flush, the rest
 * (kernels, graph launches, syncs) into the measured window, each part in the recorded
 * order; the two parts together are the whole range, each call once. */
Test(range_ops, the_memory_part_holds_the_memsets_and_copies_and_the_rest_the_other_calls)
{
	void *params[1] = { NULL };
	cuLaunchKernel_params k = { .f = F_NONE, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
				    .blockDimX = 1, .blockDimY = 1, .blockDimZ = 1,
				    .kernelParams = params, .hStream = S1 };
	cuMemsetD8Async_params m = { .dstDevice = DEV(0x10), .uc = 1, .N = 64, .hStream = S1 };
	cuMemcpyDtoDAsync_v2_params c = { .dstDevice = DEV(0x100), .srcDevice = DEV(0x200),
					  .ByteCount = 4096, .hStream = S2 };
	cuGraphLaunch_params g = { .hGraph = (CUgraphExec)(uintptr_t)0x6001, .hStream = S1 };
	cuStreamSynchronize_params s = { .hStream = S1 };
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &k), RANGE_CALL_RECORDED);
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async, &m), RANGE_CALL_RECORDED);
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &k), RANGE_CALL_RECORDED);
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2, &c), RANGE_CALL_RECORDED);
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, &g), RANGE_CALL_RECORDED);
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, &s), RANGE_CALL_RECORDED);
	replay_part(RANGE_PART_MEMORY);
	cr_assert_eq(seen_count, 2);
	cr_assert_str_eq(seen[0].call, "cuMemsetD8Async");
	cr_assert_eq(seen[0].stream, S1);
	cr_assert_str_eq(seen[1].call, "cuMemcpyAsync");
	cr_assert_eq(seen[1].stream, S2, "each on the stream the application used");
	replay_part(RANGE_PART_REST);
	cr_assert_eq(seen_count, 4);
	cr_assert_str_eq(seen[0].call, "cuLaunchKernel");
	cr_assert_str_eq(seen[1].call, "cuLaunchKernel");
	cr_assert_str_eq(seen[2].call, "cuGraphLaunch");
	cr_assert_str_eq(seen[3].call, "cuStreamSynchronize");
	replay_part(RANGE_PART_ALL);
	static const char *const all[] = { "cuLaunchKernel", "cuMemsetD8Async", "cuLaunchKernel",
					   "cuMemcpyAsync", "cuGraphLaunch", "cuStreamSynchronize" };
	cr_assert_eq(seen_count, 6);
	for (size_t i = 0; i < 6; i++)
		cr_assert_str_eq(seen[i].call, all[i], "call %zu in the recorded order", i);
}

/* A _ptsz or _ptds call's NULL stream is the thread's per-thread stream; the replay's
 * plain calls would take NULL for the legacy stream. */
Test(range_ops, a_ptsz_calls_null_stream_is_the_per_thread_stream)
{
	void *params[1] = { NULL };
	cuLaunchKernel_ptsz_params k = { .f = F_NONE, .gridDimX = 1, .gridDimY = 1,
					 .gridDimZ = 1, .blockDimX = 1, .blockDimY = 1,
					 .blockDimZ = 1, .hStream = NULL,
					 .kernelParams = params };
	cuEventRecord_ptsz_params r = { .hEvent = E1, .hStream = NULL };
	cuStreamWaitEvent_ptsz_params w = { .hStream = NULL, .hEvent = E1 };
	cuStreamSynchronize_ptsz_params s = { .hStream = NULL };
	cuMemcpyDtoDAsync_v2_ptsz_params c = { .dstDevice = DEV(1), .srcDevice = DEV(2),
					       .ByteCount = 8, .hStream = NULL };
	cuGraphLaunch_ptsz_params g = { .hGraphExec = (CUgraphExec)(uintptr_t)0x6001,
					.hStream = NULL };
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz, &k), RANGE_CALL_RECORDED);
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuEventRecord_ptsz, &r), RANGE_CALL_RECORDED);
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent_ptsz, &w),
		     RANGE_CALL_RECORDED);
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz, &s),
		     RANGE_CALL_RECORDED);
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2_ptsz, &c),
		     RANGE_CALL_RECORDED);
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz, &g), RANGE_CALL_RECORDED);
	for (size_t i = 0; i < ops.count; i++)
		cr_assert_eq(ops.ops[i].stream, CU_STREAM_PER_THREAD, "op %zu", i);
	replay();
	cr_assert_eq(seen_count, 6);
	for (size_t i = 0; i < seen_count; i++)
		cr_assert_eq(seen[i].stream, CU_STREAM_PER_THREAD, "%s", seen[i].call);
}

Test(range_ops, streams_are_listed_in_the_order_of_first_use)
{
	cuMemsetD8Async_params m2 = { .dstDevice = DEV(0), .N = 1, .hStream = S2 };
	cuMemsetD8Async_params m1 = { .dstDevice = DEV(0), .N = 1, .hStream = S1 };
	cuMemsetD8_v2_params legacy = { .dstDevice = DEV(0), .N = 1 };
	cuEventSynchronize_params es = { .hEvent = E1 };
	cuStreamWaitEvent_params w3 = { .hStream = S3, .hEvent = E1 };
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async, &m2), RANGE_CALL_RECORDED);
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async, &m1), RANGE_CALL_RECORDED);
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async, &m2), RANGE_CALL_RECORDED);
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize, &es), RANGE_CALL_RECORDED);
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2, &legacy), RANGE_CALL_RECORDED);
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async, &m1), RANGE_CALL_RECORDED);
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent, &w3), RANGE_CALL_RECORDED);
	CUstream streams[8];
	cr_assert_eq(range_ops_streams(&ops, streams, 8), 4);
	cr_assert_eq(streams[0], S2);
	cr_assert_eq(streams[1], S1);
	cr_assert_null(streams[2]);
	cr_assert_eq(streams[2], NULL);
	cr_assert_eq(streams[3], S3);
	CUstream two[2] = { NULL, NULL };
	cr_assert_eq(range_ops_streams(&ops, two, 2), 4, "all counted, the first two written");
	cr_assert_eq(two[0], S2);
	cr_assert_eq(two[1], S1);
	cr_assert_eq(range_ops_streams(&ops, NULL, 0), 4);
}

Test(range_ops, a_failed_relaunch_names_the_call_the_kernel_and_the_drivers_error)
{
	void *params[1] = { NULL };
	cuLaunchKernel_params k = { .f = F_NONE, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
				    .blockDimX = 1, .blockDimY = 1, .blockDimZ = 1,
				    .kernelParams = params };
	cr_assert_eq(call_in(CTX, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &k, "plain_kernel"),
		     RANGE_CALL_RECORDED);
	launch_answer = CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
	struct range_replay rp;
	char err[256] = "";
	cr_assert_eq(range_replay_prepare(&ops, &rp, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(range_replay_issue(&ops, &rp, RANGE_PART_ALL, err, sizeof(err)), RP_ERR_RELAUNCH);
	cr_assert_str_eq(err, "cuLaunchKernel of plain_kernel: "
			 "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES");
	range_replay_finish(&rp);
}

/* Finished ops may record another range. */
Test(range_ops, finished_ops_start_again_empty)
{
	cuMemsetD8Async_params m = { .dstDevice = DEV(0), .N = 1, .hStream = S1 };
	CUdeviceptr d;
	cuMemAlloc_v2_params alloc = { .dptr = &d, .bytesize = 64 };
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async, &m), RANGE_CALL_RECORDED);
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &alloc), RANGE_CALL_REFUSED);
	range_ops_finish(&ops);
	range_ops_init(&ops, CTX);
	cr_assert_eq(ops.count, 0);
	cr_assert_not(ops.refused);
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async, &m), RANGE_CALL_RECORDED);
	cr_assert_eq(ops.ops[0].call, 0);
}

/* Replayed alone, a kernel that waits for its peers would wait for ever (collectives.h). */
Test(range_ops, a_collective_kernel_is_refused)
{
	void *params[1] = { NULL };
	cuLaunchKernel_params p = { .f = F_NONE, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
				    .blockDimX = 1, .blockDimY = 1, .blockDimZ = 1,
				    .kernelParams = params };
	cr_assert_eq(call_in(CTX, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &p,
			     "ncclKernel_AllReduce_RING_LL_Sum_float"), RANGE_CALL_REFUSED);
	cr_assert_str_eq(ops.refusal.call, "cuLaunchKernel");
	cr_assert(strstr(ops.refusal.why, "waits for other GPUs"), "%s", ops.refusal.why);
	cr_assert_eq(ops.refusal.code, RANGE_WHY_COLLECTIVE);
	cr_assert_not(ops.refusal.transient, "a collective comes back at every occurrence");
	cr_assert_eq(ops.count, 0);
}

/* names.c keeps the verdict per name: at a name's second launch the collective is still
 * refused and the other kernel still recorded, with its demangled name. */
Test(range_ops, the_collective_verdict_kept_per_name_holds_at_every_launch)
{
	void *params[1] = { NULL };
	cuLaunchKernel_params p = { .f = F_NONE, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
				    .blockDimX = 1, .blockDimY = 1, .blockDimZ = 1,
				    .kernelParams = params };
	for (int i = 0; i < 2; i++) {
		range_ops_finish(&ops);
		range_ops_init(&ops, CTX);
		cr_assert_eq(call_in(CTX, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &p,
				     "_Z16all_gather_smallPf"), RANGE_CALL_REFUSED, "launch %d", i);
		cr_assert(strstr(ops.refusal.why, "waits for other GPUs"), "%s", ops.refusal.why);
	cr_assert_eq(ops.refusal.code, RANGE_WHY_COLLECTIVE);
		cr_assert_eq(ops.refusal.code, RANGE_WHY_COLLECTIVE);
		range_ops_finish(&ops);
		range_ops_init(&ops, CTX);
		cr_assert_eq(call_in(CTX, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &p,
				     "_Z12small_reducePf"), RANGE_CALL_RECORDED, "launch %d", i);
		cr_assert_str_eq(ops.ops[0].kernel.name, "small_reduce(float*)");
	}
}

Test(range_ops, tma_descriptors_encoded_on_the_host_are_ignored)
{
	cuTensorMapEncodeTiled_params p = { 0 };
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuTensorMapEncodeTiled, &p), RANGE_CALL_IGNORED);
	cr_assert_not(ops.refused);
}

Test(range_ops, allocations_and_capture_begins_are_transient_refusals)
{
	cuMemAlloc_v2_params a = { 0 };
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &a), RANGE_CALL_REFUSED);
	cr_assert(ops.refusal.transient, "a caching allocator grows at the first iterations");
	range_ops_finish(&ops);
	range_ops_init(&ops, CTX);
	cuStreamBeginCapture_v2_params c = { .hStream = S1 };
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2, &c), RANGE_CALL_REFUSED);
	cr_assert(ops.refusal.transient);
	range_ops_finish(&ops);
	range_ops_init(&ops, CTX);
	cuLaunchHostFunc_params h = { .hStream = S1 };
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuLaunchHostFunc, &h), RANGE_CALL_REFUSED);
	cr_assert_not(ops.refusal.transient);
}

static CUresult no_pinned_memory(void **p, size_t bytes, unsigned flags)
{
	(void)bytes, (void)flags;
	*p = NULL;
	return CUDA_ERROR_OUT_OF_MEMORY;
}

Test(range_ops, a_copy_without_pinned_memory_is_replayed_from_the_pageable_copy)
{
	rp_api.cuMemHostAlloc = no_pinned_memory;
	unsigned char host[4] = { 9, 8, 7, 6 };
	cuMemcpyHtoDAsync_v2_params b = { .dstDevice = DEV(0x300), .srcHost = host,
					  .ByteCount = sizeof(host), .hStream = S1 };
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2, &b), RANGE_CALL_RECORDED);
	memset(host, 0, sizeof(host));
	replay();
	cr_assert_eq(seen_count, 1);
	unsigned char first[4] = { 9, 8, 7, 6 };
	cr_assert_arr_eq(seen[0].bytes, first, 4);
	cr_assert_eq(seen[0].b, (uintptr_t)ops.ops[0].copy.host);
}

/* ---- the reasons' table (range_why.h) ---------------------------------------------- */

Test(range_ops, every_reason_has_a_name_words_and_what_to_do)
{
	cr_assert_str_eq(range_why_text(RANGE_WHY_NONE), "");
	cr_assert_str_eq(range_why_name(RANGE_WHY_COUNT), "RANGE_WHY_NONE");
	for (int w = RANGE_WHY_NONE + 1; w < RANGE_WHY_COUNT; w++) {
		cr_assert(strncmp(range_why_name(w), "RANGE_WHY_", 10) == 0);
		cr_assert_neq(range_why_text(w)[0], '\0', "%s", range_why_name(w));
		cr_assert_neq(range_why_todo(w)[0], '\0', "%s", range_why_name(w));
		for (int v = w + 1; v < RANGE_WHY_COUNT; v++)
			cr_assert_str_neq(range_why_text(w), range_why_text(v));
	}
}

/* Whether a refusal may not recur is decided on its code, not on its words: an
 * allocation's refusal is transient, with the same words passed as another reason's or not. */
Test(range_ops, an_allocation_refusal_is_transient_by_its_code)
{
	CUdeviceptr d;
	cuMemAlloc_v2_params p = { .dptr = &d, .bytesize = 64 };
	cr_assert_eq(call(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &p), RANGE_CALL_REFUSED);
	cr_assert(ops.refusal.transient);
}

Test(range_ops, a_refusal_with_the_allocation_words_but_another_code_is_not_transient)
{
	cuLaunchHostFunc_params p = { .hStream = S1 };
	CUpti_CallbackData cb = { .callbackSite = CUPTI_API_ENTER, .functionParams = &p,
				  .context = CTX };
	range_ops_refuse(&ops, CUPTI_DRIVER_TRACE_CBID_cuLaunchHostFunc, &cb, RANGE_WHY_GRAPH,
			 range_why_text(RANGE_WHY_ALLOCATES));
	cr_assert(ops.refused);
	cr_assert_eq(ops.refusal.code, RANGE_WHY_GRAPH);
	cr_assert_str_eq(ops.refusal.why, "allocates or frees memory", "its own words, said");
	cr_assert_not(ops.refusal.transient);
}

#if RP_LOCK_CHECKS
Test(range_ops, a_call_recorded_without_the_replay_lock_aborts, .signal = SIGABRT)
{
	replay_held = false;
	cuLaunchHostFunc_params p = { .hStream = S1 };
	CUpti_CallbackData cb = { .callbackSite = CUPTI_API_ENTER, .functionParams = &p,
				  .context = CTX };
	range_ops_on_call(&ops, CUPTI_DRIVER_TRACE_CBID_cuLaunchHostFunc, &cb);
}
#endif
