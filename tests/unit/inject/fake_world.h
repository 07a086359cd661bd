/* tests/unit/inject/fake_world.h - the world inject/'s measuring files (config, device,
 * session, measure, emit, save, kernel_workload, whole_workload) see, made of stand-ins so
 * that their tests need no GPU (fake_world.c): the driver, CUPTI and checkpoint table
 * (rp_api), collector/profiler.h, collector/device.h, memory/memory.h and inject/session/flush.h.
 * Each stand-in counts its calls and does what the test scripted in `fw`; the profiler's
 * and metric sets' calls are also logged in order (events), and every record written by
 * the real inject/output.c is kept, parsed (records). The real devlock.c takes turns on a
 * lock file named from a UUID made of this process's id, removed by fake_world_finish.
 * Each test runs in its own process (Criterion forks it), on one thread, which holds the
 * replay lock from fake_world_init to fake_world_finish, as launch.c's callback holds it
 * around the measuring files' calls (they assert it: INJECT_REPLAY_HELD). */
#ifndef TESTS_UNIT_INJECT_FAKE_WORLD_H
#define TESTS_UNIT_INJECT_FAKE_WORLD_H

#include <cjson/cJSON.h>
#include <cuda.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "inject/inject.h"

/* What happened to metric sets and range profilers, in order. */
enum fake_event_kind {
	FAKE_SET_CREATE,          /* collector_metric_set_create (metrics: the list) */
	FAKE_SET_CREATE_BY_NAME,  /* collector_metric_set_create_by_name (no context) */
	FAKE_PROFILER_CREATE,     /* collector_profiler_create in ctx */
	FAKE_PROFILER_DESTROY,    /* collector_profiler_destroy of ctx's profiler */
	FAKE_MEASURE,             /* collector_profiler_measure with ctx's profiler */
	FAKE_WARM_UP,
	FAKE_OPEN_FIRST_PASS,     /* collector_profiler_open_first_pass: run 0 is the caller's */
	FAKE_DROP_OPEN_PASS,      /* collector_profiler_drop_open_pass of an open pass */
};
struct fake_event {
	enum fake_event_kind kind;
	CUcontext ctx;            /* the context current at the call (set: its ctx argument) */
	CUcontext profiler_ctx;   /* a profiler's own context */
	char metrics[128];
};

#define FAKE_MAX_EVENTS 512
#define FAKE_MAX_RECORDS 2048
#define FAKE_MAX_BATCHES 1024

struct fake_world {
	/* ---- scripted by the test ---- */
	const char *reach_unknown;    /* mem_reach_collect: the reach is unknown, for this */
	bool wrote_outside;           /* mem_hashes_differ: segment 0 changed */
	unsigned busy_sets;           /* the next so many metric sets find the hardware busy */
	bool by_name_refused;         /* collector_metric_set_create_by_name fails */
	unsigned busy_batches;        /* the next so many batches find the hardware busy */
	bool always_busy;             /* every batch finds the hardware busy */
	unsigned fail_batch;          /* this batch (1 = the first) fails, after its runs */
	unsigned passes;              /* passes of every metric set (0 taken as 1) */
	unsigned batch_sleep_ms;      /* each batch takes this long (--runs-time-budget) */
	double (*value)(unsigned run, size_t metric);   /* run: over the whole test */
	const char *flush_notice;     /* the flush's notice (it cannot discard), or NULL */
	CUresult flush_image_refused; /* the driver's refusal of the flush's compiled image */
	/* mem_reach_changed: range i of the reach was left as it was by the application's
	 * launch when bit i is set (the first comparison of a measurement); a later one
	 * finds the same, or every range changed when a replay changed more. */
	unsigned reach_unchanged_mask;
	bool replay_changes_more;
	unsigned reach_ranges;        /* ranges of mem_reach_collect's reach (0 taken as 1) */
	size_t range_bytes;           /* each of those ranges' size (0 taken as 256) */
	size_t mem_free;              /* cuMemGetInfo's free bytes (0: all of mem_total) */
	unsigned mem_info_calls;      /* cuMemGetInfo, and the context current at the last */
	CUcontext mem_info_context;
	/* ---- counted ---- */
	unsigned reach_compares;      /* mem_reach_changed */
	unsigned ranges_compared;     /* the ranges it read (not skipped) */
	unsigned ranges_restored;     /* ranges put back by mem_restore(_changed) */
	unsigned syncs;               /* cuCtxSynchronize */
	unsigned checkpoint_saves, checkpoint_restores, checkpoint_frees;
	unsigned relaunches;          /* cuLaunchKernel (inject_kernel_launch_again) */
	size_t first_pass_ranges;     /* the counter data the last first pass was opened for */
	unsigned flushes;             /* inject_flush_launch */
	unsigned reach_collects;
	unsigned reach_collects_direct;   /* mem_reach_collect_direct (a range's call's ENTER) */
	/* mem_reach_collect: 4096 bytes here too, found through memory (not directly). */
	CUdeviceptr reach_through_memory;
	bool collecting_direct;
	unsigned saves_queued;            /* mem_save_queued (a first occurrence's calls) */
	unsigned frees_queued;            /* and those copies freed */
	unsigned backups_freed;           /* mem_backup_trim freeing the inputs' or result's */
	unsigned backups_freed_relaxed;   /* of those, in relaxed stream capture mode */
	/* Each such free takes this long, on whichever thread frees (cuMemFree waits for the
	 * device); frees_under_way counts those in progress, and saves_beside_a_free the
	 * mem_save calls made meanwhile (a copy written while another thread frees it). */
	unsigned free_sleep_ms;
	atomic_uint frees_under_way;
	atomic_uint saves_beside_a_free;
	unsigned frees;                   /* cuMemFree and cuMemFreeHost (the copies freed) */
	bool capture_under_way;           /* inject_captures_under_way() */
	unsigned restores_other;          /* mem_restore from another backup (those parts) */
	unsigned saves_inputs, saves_result;    /* mem_save into the context's inputs/result */
	unsigned restores_inputs, restores_result;  /* mem_restore from them */
	unsigned hashes_outside, hashes_again;
	unsigned set_creates, set_creates_by_name;
	unsigned profiler_creates, profiler_destroys;
	unsigned batches;             /* collector_profiler_measure calls */
	unsigned batch_runs[FAKE_MAX_BATCHES];       /* runs asked for by each */
	unsigned batch_kernels[FAKE_MAX_BATCHES];    /* kernels_per_run asked for by each */
	unsigned runs_measured;       /* runs of the batches that succeeded */
	unsigned clock_restores;
	struct fake_event events[FAKE_MAX_EVENTS];
	size_t event_count;
	cJSON *records[FAKE_MAX_RECORDS];
	size_t record_count;
	/* ---- the driver's tables (an H200's, set by fake_world_init) ---- */
	int device_attributes[CU_DEVICE_ATTRIBUTE_MAX];   /* cuDeviceGetAttribute */
	int function_attributes[CU_FUNC_ATTRIBUTE_MAX];   /* cuFuncGetAttribute, any function */
	size_t stack_size;            /* cuCtxGetLimit(CU_LIMIT_STACK_SIZE) */
	int active_blocks;            /* cuOccupancyMaxActiveBlocksPerMultiprocessor */
	size_t mem_total;             /* cuMemGetInfo's total bytes: 140 GiB, a device the
				       * size of an H200 (the tests ask only whether a quarter
				       * of it is free) */
	/* A CUkernel handle launched as a function: the function queries call it invalid,
	 * cuKernelGetFunction gives kernel_function for it (NULL: none is). */
	CUfunction kernel_handle, kernel_function;
	CUfunction occupancy_function;   /* what the occupancy query was asked for */
	int occupancy_block_size;     /* what it was last asked for */
	size_t occupancy_dynamic_smem;
	/* ---- the machine ---- */
	CUcontext current;            /* this thread's current context */
	char uuid[64];                /* device 0's (and every device's) UUID */
};
extern struct fake_world fw;

/* Resets fw, installs the stand-ins, writes records to /dev/null and keeps them, makes
 * fake_context(0) current, and takes the replay lock, as launch.c holds it around the
 * measuring files' calls. Every test's .init. */
void fake_world_init(void);
/* Lets go of the replay lock, frees the records and removes the device lock file. Every
 * test's .fini. */
void fake_world_finish(void);
/* The CUPTI calls launch.c's set-up makes, for the tests and the bench that run the
 * callback itself (launch_test.c, bench/callback_cost.c): enabling a callback or a domain
 * succeeds and every context's id is 1 (each thread's capture mode is fake_world_init's).
 * A test may put counting ones in their place. */
void fake_world_callback_stand_ins(void);

/* Context n (0, 1, ...) of device 0: an opaque handle, never NULL. */
CUcontext fake_context(unsigned n);
/* A kernel launch of function f ((CUfunction)(f + 1) as a handle) in ctx, named
 * "_Z7kernel<f>Pf" as mangled. */
struct inject_launch fake_launch(CUcontext ctx, unsigned f, uint64_t index);
/* The configuration the tests start from: --runs 5, --cache-control all, --memory-save
 * reach, --thermal-control off, --clock-control none, gpu__time_duration.sum, short
 * timeouts. */
struct inject_config fake_config(void);

/* The number of events of kind so far. */
size_t fake_events(enum fake_event_kind kind);
/* The number of records of type ("run", "summary", "warning", "error", ...). */
size_t fake_records(const char *type);
/* The i-th record of type, NULL when there are not that many. */
cJSON *fake_record(const char *type, size_t i);
/* The number of "warning" or "error" records (type) whose message contains text. */
size_t fake_messages(const char *type, const char *text);
/* A string member of a record, or NULL; path names the members from the record down,
 * separated by '/' since metric names have dots: "save/strategy",
 * "metrics/gpu__time_duration.sum/n". */
const char *fake_string(const cJSON *record, const char *path);
/* A number member of a record as fake_string finds it, NaN when absent. */
double fake_number(const cJSON *record, const char *path);

/* The index of the first event of kind in ctx at or after from, or -1. ctx NULL: any. */
long fake_event_find(enum fake_event_kind kind, CUcontext ctx, size_t from);
/* How many events of kind in ctx (NULL: any). */
size_t fake_event_count(enum fake_event_kind kind, CUcontext ctx);

#endif
