/* common/launch_metrics.c - the launch__ metrics' table and formulas (launch_metrics.h).
 * Each formula is the one ncu's values follow, checked against ncu 2025.3.1 on an H200
 * (tests/gpu/check_launch_metrics.py; doc/records.md, "launch__ metrics").
 * Calls: none (libc only).
 * Called by: options.c, inject/, collector/.
 * Lock: none (a constant table). */
#include "common/launch_metrics.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define ROW(id, name, unit, text) [id] = { id, name, unit, text }

static const struct rp_launch_metric_desc table[RP_LAUNCH_METRIC_COUNT] = {
	ROW(RP_LAUNCH_BLOCK_SIZE, "launch__block_size", "", "threads per block"),
	ROW(RP_LAUNCH_GRID_SIZE, "launch__grid_size", "", "blocks in the grid"),
	ROW(RP_LAUNCH_THREAD_COUNT, "launch__thread_count", "thread",
	    "threads of the launch (grid size x block size)"),
	/* ncu's unit for these, though they count threads. */
	ROW(RP_LAUNCH_BLOCK_DIM_X, "launch__block_dim_x", "block", "block dimension x"),
	ROW(RP_LAUNCH_BLOCK_DIM_Y, "launch__block_dim_y", "block", "block dimension y"),
	ROW(RP_LAUNCH_BLOCK_DIM_Z, "launch__block_dim_z", "block", "block dimension z"),
	ROW(RP_LAUNCH_GRID_DIM_X, "launch__grid_dim_x", "", "grid dimension x"),
	ROW(RP_LAUNCH_GRID_DIM_Y, "launch__grid_dim_y", "", "grid dimension y"),
	ROW(RP_LAUNCH_GRID_DIM_Z, "launch__grid_dim_z", "", "grid dimension z"),
	ROW(RP_LAUNCH_CLUSTER_DIM_X, "launch__cluster_dim_x", "",
	    "cluster dimension x (0 without clusters)"),
	ROW(RP_LAUNCH_CLUSTER_DIM_Y, "launch__cluster_dim_y", "",
	    "cluster dimension y (0 without clusters)"),
	ROW(RP_LAUNCH_CLUSTER_DIM_Z, "launch__cluster_dim_z", "",
	    "cluster dimension z (0 without clusters)"),
	ROW(RP_LAUNCH_CLUSTER_SIZE, "launch__cluster_size", "",
	    "blocks per cluster (0 without clusters)"),
	ROW(RP_LAUNCH_SM_COUNT, "launch__sm_count", "SM", "SMs of the device"),
	ROW(RP_LAUNCH_REGISTERS_PER_THREAD, "launch__registers_per_thread", "register/thread",
	    "registers of each thread: the function's, at least 16"),
	ROW(RP_LAUNCH_REGISTERS_PER_THREAD_ALLOCATED, "launch__registers_per_thread_allocated",
	    "register/thread", "registers allocated to each thread (in units of 8)"),
	ROW(RP_LAUNCH_SHARED_MEM_PER_BLOCK, "launch__shared_mem_per_block", "byte/block",
	    "shared memory of each block: static, dynamic and the driver's"),
	ROW(RP_LAUNCH_SHARED_MEM_PER_BLOCK_ALLOCATED, "launch__shared_mem_per_block_allocated",
	    "byte/block", "shared memory allocated to each block (in the device's units)"),
	ROW(RP_LAUNCH_SHARED_MEM_PER_BLOCK_STATIC, "launch__shared_mem_per_block_static",
	    "byte/block", "static shared memory of each block"),
	ROW(RP_LAUNCH_SHARED_MEM_PER_BLOCK_DYNAMIC, "launch__shared_mem_per_block_dynamic",
	    "byte/block", "dynamic shared memory of each block (the launch's)"),
	ROW(RP_LAUNCH_SHARED_MEM_PER_BLOCK_DRIVER, "launch__shared_mem_per_block_driver",
	    "byte/block", "shared memory the driver reserves for each block"),
	ROW(RP_LAUNCH_STACK_SIZE, "launch__stack_size", "", "the context's stack size per thread"),
	ROW(RP_LAUNCH_OCCUPANCY_LIMIT_BLOCKS, "launch__occupancy_limit_blocks", "block",
	    "blocks per SM allowed by the SM's block slots"),
	ROW(RP_LAUNCH_OCCUPANCY_LIMIT_WARPS, "launch__occupancy_limit_warps", "block",
	    "blocks per SM allowed by the SM's warp slots"),
	ROW(RP_LAUNCH_OCCUPANCY_LIMIT_REGISTERS, "launch__occupancy_limit_registers", "block",
	    "blocks per SM allowed by the register file"),
	ROW(RP_LAUNCH_WAVES_PER_MULTIPROCESSOR, "launch__waves_per_multiprocessor", "",
	    "waves of blocks per SM: grid size / (active blocks per SM x SMs)"),
};

const struct rp_launch_metric_desc *rp_launch_metric_table(void)
{
	return table;
}

bool rp_metric_is_launch(const char *name, size_t len)
{
	static const char prefix[] = "launch__";
	return len >= sizeof(prefix) - 1 && !memcmp(name, prefix, sizeof(prefix) - 1);
}

const struct rp_launch_metric_desc *rp_launch_metric_find(const char *name, size_t len)
{
	for (size_t i = 0; i < RP_LAUNCH_METRIC_COUNT; i++)
		if (strlen(table[i].name) == len && !memcmp(table[i].name, name, len))
			return &table[i];
	return NULL;
}

const char *rp_launch_metric_names(void)
{
	static char names[2048];
	if (!names[0]) {
		size_t n = 0;
		for (size_t i = 0; i < RP_LAUNCH_METRIC_COUNT && n < sizeof(names); i++)
			n += (size_t)snprintf(names + n, sizeof(names) - n, "%s%s", i ? ", " : "",
					      table[i].name);
	}
	return names;
}

static long product(const long v[3])
{
	return v[0] < 0 || v[1] < 0 || v[2] < 0 ? -1 : v[0] * v[1] * v[2];
}

static long divide_up(long x, long y)
{
	return (x + y - 1) / y;
}

/* Blocks per SM that the register file allows, as CUDA's occupancy calculator
 * (cuda_occupancy.h, cudaOccMaxBlocksPerSMRegsLimit) and ncu count them: registers go to
 * warps in units of 256, each of the SM's 4 sub-partitions holding a quarter of the file;
 * a block whose warps, rounded up to the sub-partitions, exceed the registers a block may
 * have cannot run (0). */
static double registers_limit(const struct rp_launch_shape *s)
{
	const long unit = 256, partitions = 4;
	long block = product(s->block);
	if (block < 0 || s->registers < 0 || s->warp_size <= 0 || s->regs_per_sm <= 0 ||
	    s->regs_per_block <= 0)
		return NAN;
	long warps = divide_up(block, s->warp_size);
	long per_warp = divide_up(s->registers * s->warp_size, unit) * unit;
	if (per_warp == 0)
		return INFINITY;
	if (per_warp * divide_up(warps, partitions) * partitions > s->regs_per_block ||
	    per_warp * warps > s->regs_per_block || s->registers > 256)
		return 0;
	long warps_per_partition = s->regs_per_sm / partitions / per_warp;
	return (double)(warps_per_partition * partitions / warps);
}

/* The registers ncu reports for a thread: ptxas's count, but never fewer than 16 (the
 * H200 with ncu 2025.3.1: 10 and 12 are reported as 16, 24, 30, 33, 47, 72 and 102 as
 * they are). */
static long registers(const struct rp_launch_shape *s)
{
	return s->registers < 0 ? -1 : s->registers < 16 ? 16 : s->registers;
}

/* Shared memory of a block as the driver allocates it: static, dynamic and its own
 * reserve, in units of 128 bytes from compute capability 8.0 on, 256 before (CUDA's
 * occupancy calculator, cudaOccSMemAllocationGranularity). */
static long smem_per_block(const struct rp_launch_shape *s)
{
	if (s->static_smem < 0 || s->dynamic_smem < 0 || s->reserved_smem_per_block < 0)
		return -1;
	return s->static_smem + s->dynamic_smem + s->reserved_smem_per_block;
}

static double known(long v)
{
	return v < 0 ? NAN : (double)v;
}

double rp_launch_metric_value(enum rp_launch_metric id, const struct rp_launch_shape *s)
{
	long grid = product(s->grid), block = product(s->block);
	switch (id) {
	case RP_LAUNCH_BLOCK_SIZE: return known(block);
	case RP_LAUNCH_GRID_SIZE: return known(grid);
	case RP_LAUNCH_THREAD_COUNT: return grid < 0 || block < 0 ? NAN : (double)grid * block;
	case RP_LAUNCH_BLOCK_DIM_X: return known(s->block[0]);
	case RP_LAUNCH_BLOCK_DIM_Y: return known(s->block[1]);
	case RP_LAUNCH_BLOCK_DIM_Z: return known(s->block[2]);
	case RP_LAUNCH_GRID_DIM_X: return known(s->grid[0]);
	case RP_LAUNCH_GRID_DIM_Y: return known(s->grid[1]);
	case RP_LAUNCH_GRID_DIM_Z: return known(s->grid[2]);
	case RP_LAUNCH_CLUSTER_DIM_X: return known(s->cluster[0]);
	case RP_LAUNCH_CLUSTER_DIM_Y: return known(s->cluster[1]);
	case RP_LAUNCH_CLUSTER_DIM_Z: return known(s->cluster[2]);
	case RP_LAUNCH_CLUSTER_SIZE: return known(product(s->cluster));
	case RP_LAUNCH_SM_COUNT: return known(s->sm_count);
	case RP_LAUNCH_REGISTERS_PER_THREAD: return known(registers(s));
	case RP_LAUNCH_REGISTERS_PER_THREAD_ALLOCATED:
		return registers(s) < 0 ? NAN : (double)(divide_up(registers(s), 8) * 8);
	case RP_LAUNCH_SHARED_MEM_PER_BLOCK: return known(smem_per_block(s));
	case RP_LAUNCH_SHARED_MEM_PER_BLOCK_ALLOCATED: {
		long unit = s->cc_major >= 8 ? 128 : 256;
		if (smem_per_block(s) < 0 || s->cc_major < 0)
			return NAN;
		return (double)(divide_up(smem_per_block(s), unit) * unit);
	}
	case RP_LAUNCH_SHARED_MEM_PER_BLOCK_STATIC: return known(s->static_smem);
	case RP_LAUNCH_SHARED_MEM_PER_BLOCK_DYNAMIC: return known(s->dynamic_smem);
	case RP_LAUNCH_SHARED_MEM_PER_BLOCK_DRIVER: return known(s->reserved_smem_per_block);
	case RP_LAUNCH_STACK_SIZE: return known(s->stack_size);
	case RP_LAUNCH_OCCUPANCY_LIMIT_BLOCKS: return known(s->max_blocks_per_sm);
	case RP_LAUNCH_OCCUPANCY_LIMIT_WARPS:
		if (block <= 0 || s->warp_size <= 0 || s->max_threads_per_sm < 0)
			return NAN;
		return (double)(s->max_threads_per_sm / s->warp_size / divide_up(block, s->warp_size));
	case RP_LAUNCH_OCCUPANCY_LIMIT_REGISTERS: return registers_limit(s);
	case RP_LAUNCH_WAVES_PER_MULTIPROCESSOR:
		if (grid < 0 || s->active_blocks_per_sm <= 0 || s->sm_count <= 0)
			return NAN;
		return (double)grid / ((double)s->active_blocks_per_sm * (double)s->sm_count);
	case RP_LAUNCH_METRIC_COUNT: break;
	}
	return NAN;
}
