/* common/launch_metrics.h - the launch__ metrics rangeprof supplies itself, as Nsight
 * Compute reports them (its Launch Statistics and Occupancy sections): values of the
 * launch (grid, block, shared memory), the function (registers, static shared memory) and
 * the device (SM count, limits), not counters, so no profiler pass measures them. One
 * table of names, units and descriptions, read by the options' check (an unknown launch__
 * name is refused before the application starts), by the metric sets
 * (collector/profiler.c keeps them out of CUPTI's configuration), by inject/ (which fills
 * their values per run from the driver) and by --list-metrics. The values come from
 * struct rp_launch_shape by arithmetic alone, so that the tests check every formula
 * without a GPU. libc only. */
#ifndef COMMON_LAUNCH_METRICS_H
#define COMMON_LAUNCH_METRICS_H

#include <stdbool.h>
#include <stddef.h>

enum rp_launch_metric {
	RP_LAUNCH_BLOCK_SIZE,
	RP_LAUNCH_GRID_SIZE,
	RP_LAUNCH_THREAD_COUNT,
	RP_LAUNCH_BLOCK_DIM_X,
	RP_LAUNCH_BLOCK_DIM_Y,
	RP_LAUNCH_BLOCK_DIM_Z,
	RP_LAUNCH_GRID_DIM_X,
	RP_LAUNCH_GRID_DIM_Y,
	RP_LAUNCH_GRID_DIM_Z,
	RP_LAUNCH_CLUSTER_DIM_X,
	RP_LAUNCH_CLUSTER_DIM_Y,
	RP_LAUNCH_CLUSTER_DIM_Z,
	RP_LAUNCH_CLUSTER_SIZE,
	RP_LAUNCH_SM_COUNT,
	RP_LAUNCH_REGISTERS_PER_THREAD,
	RP_LAUNCH_REGISTERS_PER_THREAD_ALLOCATED,
	RP_LAUNCH_SHARED_MEM_PER_BLOCK,
	RP_LAUNCH_SHARED_MEM_PER_BLOCK_ALLOCATED,
	RP_LAUNCH_SHARED_MEM_PER_BLOCK_STATIC,
	RP_LAUNCH_SHARED_MEM_PER_BLOCK_DYNAMIC,
	RP_LAUNCH_SHARED_MEM_PER_BLOCK_DRIVER,
	RP_LAUNCH_STACK_SIZE,
	RP_LAUNCH_OCCUPANCY_LIMIT_BLOCKS,
	RP_LAUNCH_OCCUPANCY_LIMIT_WARPS,
	RP_LAUNCH_OCCUPANCY_LIMIT_REGISTERS,
	RP_LAUNCH_WAVES_PER_MULTIPROCESSOR,
	RP_LAUNCH_METRIC_COUNT
};

struct rp_launch_metric_desc {
	enum rp_launch_metric id;
	const char *name;
	const char *unit;          /* ncu's unit, "" where ncu gives none */
	const char *description;
};

/* What a kernel launch, its function and its device say; filled by inject/measure/launch_shape.c
 * from the launch and the driver. A field the driver could not give is -1, and the
 * metrics that need it are NaN. */
struct rp_launch_shape {
	long grid[3], block[3];
	long cluster[3];             /* 0 0 0: the launch has no clusters */
	long dynamic_smem;           /* the launch's sharedMemBytes */
	long static_smem;            /* CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES */
	long registers;              /* CU_FUNC_ATTRIBUTE_NUM_REGS (ptxas's count) */
	long cc_major;               /* compute capability: the shared memory granularity */
	long stack_size;             /* cuCtxGetLimit(CU_LIMIT_STACK_SIZE) */
	long sm_count;               /* CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT */
	long warp_size;
	long max_threads_per_sm;
	long max_blocks_per_sm;
	long regs_per_sm, regs_per_block;
	long reserved_smem_per_block; /* CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK */
	long active_blocks_per_sm;   /* cuOccupancyMaxActiveBlocksPerMultiprocessor */
};

/* The table, indexed by enum rp_launch_metric. */
const struct rp_launch_metric_desc *rp_launch_metric_table(void);
/* Whether the metric name (its first len bytes, as in a comma-separated list) has ncu's
 * launch__ prefix: such a name is never given to CUPTI. */
bool rp_metric_is_launch(const char *name, size_t len);
/* The row of a launch__ name, or NULL when rangeprof does not supply it. */
const struct rp_launch_metric_desc *rp_launch_metric_find(const char *name, size_t len);
/* The names rangeprof supplies, comma-separated, for messages. */
const char *rp_launch_metric_names(void);
/* The metric's value for the launch, as ncu computes it; NaN where a field it needs is
 * unknown (-1). */
double rp_launch_metric_value(enum rp_launch_metric id, const struct rp_launch_shape *s);

#endif
