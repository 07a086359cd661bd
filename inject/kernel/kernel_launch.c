/* inject/kernel/kernel_launch.c - a kernel launch as the driver call gave it, and launching
 * it again.
 * The one switch over the launch callback ids is here; everything after it works on
 * struct inject_launch.
 * Calls: collector/ (the driver).
 * Called by: launch.c (decode, at ENTER), kernel_workload.c (relaunch), save.c (once more
 * after a failed measurement), graph_measure.c (a kernel node), range_ops.c (decode a
 * recorded launch), range_replay.c (relaunch).
 * Lock: none (no state). */
#include <cupti.h>
#include <stdio.h>

#include "collector/api.h"
#include "common/error.h"
#include "inject/inject.h"

static void set_dims(struct inject_launch *l, unsigned gx, unsigned gy, unsigned gz,
		     unsigned bx, unsigned by, unsigned bz, unsigned smem, CUstream stream)
{
	l->grid[0] = gx, l->grid[1] = gy, l->grid[2] = gz;
	l->block[0] = bx, l->block[1] = by, l->block[2] = bz;
	l->shared_mem_bytes = smem;
	l->stream = stream;
}

static bool decode(int cbid, const void *params, struct inject_launch *l);

bool inject_kernel_launch_decode(int cbid, const void *params, struct inject_launch *l)
{
	if (!decode(cbid, params, l))
		return false;
	/* A _ptsz call's NULL stream is the thread's per-thread default stream; the replay
	 * calls are the plain ones, where NULL would mean the legacy stream. */
	if (!l->stream && (cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz ||
			   cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz ||
			   cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz))
		l->stream = CU_STREAM_PER_THREAD;
	return true;
}

static bool decode(int cbid, const void *params, struct inject_launch *l)
{
	switch (cbid) {
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz: {
		const cuLaunchKernel_params *p = params;
		l->kind = INJECT_LAUNCH_KERNEL;
		l->function = p->f;
		set_dims(l, p->gridDimX, p->gridDimY, p->gridDimZ, p->blockDimX, p->blockDimY,
			 p->blockDimZ, p->sharedMemBytes, p->hStream);
		l->kernel_params = p->kernelParams;
		l->extra = p->extra;
		return true;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz: {
		const cuLaunchCooperativeKernel_params *p = params;
		l->kind = INJECT_LAUNCH_COOPERATIVE;
		l->function = p->f;
		set_dims(l, p->gridDimX, p->gridDimY, p->gridDimZ, p->blockDimX, p->blockDimY,
			 p->blockDimZ, p->sharedMemBytes, p->hStream);
		l->kernel_params = p->kernelParams;
		l->extra = NULL;
		l->cooperative = true;
		return true;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
		const cuLaunchKernelEx_params *p = params;
		const CUlaunchConfig *c = p->config;
		if (!c)
			return false;
		l->kind = INJECT_LAUNCH_EX;
		l->function = p->f;
		set_dims(l, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY,
			 c->blockDimZ, c->sharedMemBytes, c->hStream);
		l->kernel_params = p->kernelParams;
		l->extra = p->extra;
		l->config = c;
		for (unsigned i = 0; c->attrs && i < c->numAttrs; i++)
			if (c->attrs[i].id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE &&
			    c->attrs[i].value.cooperative)
				l->cooperative = true;
		return true;
	}
	default:
		return false;
	}
}

static CUresult relaunch(const struct inject_launch *l);

int inject_kernel_launch_again(const struct inject_launch *l, char *err, size_t err_size)
{
	CUresult cr = relaunch(l);
	if (cr == CUDA_SUCCESS)
		return 0;
	snprintf(err, err_size, "%s", collector_cu_error(cr));
	return RP_ERR_RELAUNCH;
}

/* The driver call of the launch's kind: the CUresult stays in this file. */
static CUresult relaunch(const struct inject_launch *l)
{
	switch (l->kind) {
	case INJECT_LAUNCH_KERNEL:
		return rp_api.cuLaunchKernel(l->function, l->grid[0], l->grid[1], l->grid[2],
					     l->block[0], l->block[1], l->block[2],
					     l->shared_mem_bytes, l->stream, l->kernel_params,
					     l->extra);
	case INJECT_LAUNCH_COOPERATIVE:
		return rp_api.cuLaunchCooperativeKernel(l->function, l->grid[0], l->grid[1],
							l->grid[2], l->block[0], l->block[1],
							l->block[2], l->shared_mem_bytes, l->stream,
							l->kernel_params);
	case INJECT_LAUNCH_EX: {
		/* Event attributes record or trigger the application's events: a replay would
		 * record them again (review finding), so they are left out. */
		const CUlaunchConfig *c = l->config;
		CUlaunchAttribute attrs[32];
		CUlaunchConfig copy = *c;
		unsigned kept = 0;
		for (unsigned i = 0; c->attrs && i < c->numAttrs; i++) {
			CUlaunchAttributeID id = c->attrs[i].id;
			if (id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT ||
			    id == CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT)
				continue;
			if (kept == sizeof(attrs) / sizeof(attrs[0]))
				return rp_api.cuLaunchKernelEx(c, l->function, l->kernel_params, l->extra);
			attrs[kept++] = c->attrs[i];
		}
		copy.attrs = kept ? attrs : NULL;
		copy.numAttrs = kept;
		return rp_api.cuLaunchKernelEx(&copy, l->function, l->kernel_params, l->extra);
	}
	}
	return CUDA_ERROR_NOT_SUPPORTED;
}
