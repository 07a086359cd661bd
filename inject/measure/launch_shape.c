/* inject/measure/launch_shape.c - the launch__ metrics' values of a measured kernel launch
 * (common/launch_metrics.h): what the launch says (grid, block, dynamic shared memory,
 * clusters), and what the driver says of its function and device, asked after each batch
 * with the launch's context current; a launch that is replayed has these the same in
 * every run.
 * Calls: collector/ (the driver), common/.
 * Called by: kernel_workload.c, measure.c (the first run, the application's launch).
 * Lock: the replay lock; not asserted by: inject_launch_shape (what the launch and the
 * driver say, no state). */
#include <math.h>

#include "collector/profiler.h"
#include "common/launch_metrics.h"
#include "inject/session/device.h"
#include "inject/measure/measurement.h"

static long function_attribute(CUfunction f, CUfunction_attribute a)
{
	int v = 0;
	return rp_api.cuFuncGetAttribute(&v, a, f) == CUDA_SUCCESS ? v : -1;
}

static long device_attribute(int device, CUdevice_attribute a)
{
	int v = 0;
	return rp_api.cuDeviceGetAttribute(&v, a, (CUdevice)device) == CUDA_SUCCESS ? v : -1;
}

/* The launch's cluster dimensions: a launch attribute of cuLaunchKernelEx, else the
 * function's own (__cluster_dims__), else none (0 0 0, as ncu says). */
static void cluster_of(const struct inject_launch *l, long out[3])
{
	out[0] = out[1] = out[2] = 0;
	if (l->kind == INJECT_LAUNCH_EX && l->config) {
		for (unsigned i = 0; i < l->config->numAttrs; i++) {
			const CUlaunchAttribute *a = &l->config->attrs[i];
			if (a->id != CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
				continue;
			out[0] = a->value.clusterDim.x;
			out[1] = a->value.clusterDim.y;
			out[2] = a->value.clusterDim.z;
			return;
		}
	}
	long x = function_attribute(l->function, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH);
	if (x > 0) {
		out[0] = x;
		out[1] = function_attribute(l->function, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT);
		out[2] = function_attribute(l->function, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH);
	}
}

/* The handle the driver's function queries take. The runtime launches CUkernel handles
 * (CUDA 12's library loading) through cuLaunchKernel, and cuFuncGetAttribute calls those
 * invalid (CUDA_ERROR_INVALID_HANDLE for cudaGetKernel's handle on the H200, driver 580,
 * where cuKernelGetFunction's gives the registers; memory/layout.c meets the same for the
 * parameters): the context's CUfunction of the kernel is asked instead. */
static CUfunction queried(CUfunction f)
{
	int v = 0;
	CUfunction g = NULL;
	if (rp_api.cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, f) != CUDA_ERROR_INVALID_HANDLE)
		return f;
	return rp_api.cuKernelGetFunction(&g, (CUkernel)f) == CUDA_SUCCESS && g ? g : f;
}

void inject_launch_shape(const struct inject_launch *l, int device, struct rp_launch_shape *s)
{
	struct inject_launch q = *l;
	q.function = queried(l->function);
	l = &q;
	*s = (struct rp_launch_shape){ .dynamic_smem = l->shared_mem_bytes };
	for (int i = 0; i < 3; i++) {
		s->grid[i] = l->grid[i];
		s->block[i] = l->block[i];
	}
	cluster_of(l, s->cluster);
	s->static_smem = function_attribute(l->function, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
	s->registers = function_attribute(l->function, CU_FUNC_ATTRIBUTE_NUM_REGS);
	size_t stack = 0;
	s->stack_size = rp_api.cuCtxGetLimit(&stack, CU_LIMIT_STACK_SIZE) == CUDA_SUCCESS ?
		(long)stack : -1;
	s->cc_major = device_attribute(device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
	s->sm_count = device_attribute(device, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
	s->warp_size = device_attribute(device, CU_DEVICE_ATTRIBUTE_WARP_SIZE);
	s->max_threads_per_sm =
		device_attribute(device, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
	s->max_blocks_per_sm =
		device_attribute(device, CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
	s->regs_per_sm = device_attribute(device, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
	s->regs_per_block = device_attribute(device, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
	s->reserved_smem_per_block =
		device_attribute(device, CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK);
	int active = 0;
	long block = (long)l->block[0] * l->block[1] * l->block[2];
	s->active_blocks_per_sm = rp_api.cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
		&active, l->function, (int)block, l->shared_mem_bytes, CU_OCCUPANCY_DEFAULT) ==
		CUDA_SUCCESS ? active : -1;
}

void inject_launch_shape_metrics(const struct measurement *m, unsigned runs, double *values)
{
	INJECT_REPLAY_HELD();
	const struct collector_metric_set *set = m->d->set;
	size_t count = collector_metric_set_user_count(set);
	bool any = false;
	for (size_t k = 0; k < count; k++)
		any |= collector_metric_set_launch(set, k) >= 0;
	if (!any)
		return;
	struct rp_launch_shape shape;
	inject_launch_shape(&m->launch, m->device, &shape);
	for (size_t k = 0; k < count; k++) {
		int id = collector_metric_set_launch(set, k);
		if (id < 0)
			continue;
		double v = rp_launch_metric_value((enum rp_launch_metric)id, &shape);
		for (unsigned r = 0; r < runs; r++)
			values[(size_t)r * count + k] = v;
	}
}
