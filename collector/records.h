/* collector/records.h - the JSON Lines records of doc/records.md, built as cJSON
 * objects. Pure construction, no I/O and no CUDA: inject/ and collector/profiler.c fill
 * the plain structs below, collector_jsonl_write() writes the result. The caller owns the
 * returned object (cJSON_Delete); NULL means out of memory. */
#ifndef COLLECTOR_RECORDS_H
#define COLLECTOR_RECORDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/options.h"

struct cJSON;

#define COLLECTOR_SCHEMA_VERSION 1
/* Ranges listed in a record's "nvtx", outermost first; more are counted in
 * "nvtx_omitted". A range's text, domain name and category name are each cut to 4096
 * bytes (NVTX_BRIDGE_MAX_TEXT), so the listed ranges take ~4 MB of a record when every
 * text is 4096 printable bytes and the names are short, and at most ~74 MB (all three
 * 4096 bytes long, every byte a control character that JSON writes as 6). */
#define COLLECTOR_MAX_NVTX 1000

enum collector_payload { COLLECTOR_PAYLOAD_NONE, COLLECTOR_PAYLOAD_UINT,
			 COLLECTOR_PAYLOAD_INT, COLLECTOR_PAYLOAD_DOUBLE };

struct collector_nvtx_range {
	const char *domain;          /* "" for the default domain */
	const char *text;
	bool start_end;
	enum collector_payload payload_type;
	union {
		uint64_t u;
		int64_t i;
		double d;
	} payload;
	uint32_t category;           /* 0: none */
	const char *category_name;   /* NULL: unnamed */
};

/* One launch as the application made it. */
struct collector_launch {
	uint64_t index;              /* process-wide launch index */
	const char *kernel;          /* demangled */
	const char *mangled;
	int device;
	uint32_t context;            /* CUPTI context id */
	uint64_t stream;             /* CUPTI stream id */
	unsigned grid[3], block[3];
	unsigned shared_mem_bytes;
	const struct collector_nvtx_range *nvtx;
	size_t nvtx_count;
	const char *nvtx_path;
	const struct collector_graph *graph;  /* NULL: a plain launch (workload "kernel") */
	const struct collector_range *range;  /* NULL: not a range workload */
};

/* A launch inside a CUDA graph (issue 8): a kernel node measured on its own
 * (--graph-profiling node: workload "kernel", node set) or the whole graph launch
 * (--graph-profiling graph: workload "graph", node -1). */
struct collector_graph {
	uint64_t id;                 /* rangeprof's number for the executable graph */
	uint64_t launch;             /* this graph's cuGraphLaunch, counted from 0 */
	long node;                   /* kernel node in topological order, -1: the graph */
	size_t nodes;                /* nodes of the graph, child graphs flattened */
};

/* A whole NVTX range measured as one workload (--replay-mode range, workload "range").
 * Its records write grid, block and shared_mem_bytes as null (the launch's are zeros),
 * graph null, and a "range" object with these members; kernel, mangled, stream and nvtx
 * are what the caller put in the launch. */
struct collector_range {
	const char *name;            /* the range's own text (the workload's NVTX range) */
	size_t kernels;              /* kernel launches in it */
	const char *const *kernel_names;  /* demangled, in launch order, kernels of them */
	size_t memsets, copies, graph_launches, event_ops, syncs;
	const uint64_t *streams;     /* CUPTI stream ids in first-use order */
	size_t stream_count;
	const char *scope;           /* --range-scope: "whole" or "kernels" */
};

/* How --runs auto ended for a launch (summary member "runs_auto"). */
struct collector_adaptive {
	const char *stopped;         /* "target_ci_reached", "max_runs", "time_budget", "error" */
	double target_ci_pct, ci_pct; /* asked for, and reached by the gating metric */
	size_t metric;               /* index of the gating metric in metrics */
	unsigned batches;
	double elapsed_s;            /* measuring time of the runs, wall clock */
};

/* The thermal guard before a launch's runs (summary member "thermal"). */
struct collector_thermal {
	const char *control;         /* "auto", "manual" */
	const char *outcome;         /* thermal_outcome_name() */
	double waited_s, start_c, end_c, slowdown_c;
};

/* What a measured launch was measured with. */
struct collector_measure_info {
	const char *const *metrics;  /* the user's metrics */
	const char *const *units;    /* per metric, "" when unknown */
	size_t metric_count;
	unsigned passes;
	unsigned runs;
	enum rp_cache_control cache_control;
	enum rp_clock_control clock_control;
	double rated_sm_clock_hz;
	double locked_sm_clock_hz;   /* --clock-control base: the clock locked; 0: none */
	/* Summary only; NULL when not known or not used. */
	const uint64_t *throttle;    /* per run: NVML reason bits (collector/stats.h) */
	const struct collector_adaptive *adaptive;   /* --runs auto */
	const struct collector_thermal *thermal;     /* --thermal-control auto|manual */
	double l2_bytes;             /* the device's L2 (placement.h's rule); 0: unknown */
	/* Run records: where sm_clock_hz comes from, "counters" (measured during the run)
	 * or "nvml" (read just before it was queued, when the metric set has no counters:
	 * profiler.h). */
	const char *sm_clock_source;
};

/* What NVML said around one run (collector_nvml_sample), NaN / STATS_THROTTLE_UNKNOWN
 * where it could not tell. */
struct collector_run_nvml {
	double temperature_before_c, temperature_after_c;
	double memory_clock_hz, power_w;
	uint64_t throttle;           /* reasons before the run or when its batch was decoded */
};

struct collector_run {
	unsigned run;                /* 0-based */
	const double *values;        /* per metric */
	double sm_clock_hz;          /* NaN when unknown */
	double temperature_c;        /* NaN when unknown */
	double wall_time;            /* seconds since the epoch */
	const struct collector_run_nvml *nvml;  /* NULL: those members are all null */
};

struct collector_device_info {
	int index;
	char name[256];
	char uuid[64];
	int cc_major, cc_minor;
	int sm_count;
	long long l2_bytes;
	double rated_sm_clock_hz, rated_memory_clock_hz;
	int driver_version;
};

struct cJSON *collector_record_session(const char *tool_version, pid_t pid, const char *host,
				       char *const *argv, double start_time,
				       const struct rp_options *opts);
struct cJSON *collector_record_device(const struct collector_device_info *device);
/* --setup early: what the set-up done ahead of the first measured launch in a context cost
 * (cost_ms: setup, setup_context, setup_profiler, start for the profiler's first pass,
 * total), written from rangeprof's own thread. */
struct collector_cost;
struct cJSON *collector_record_setup(int device, uint32_t context_id,
				     const struct collector_cost *cost);
struct cJSON *collector_record_run(const struct collector_launch *launch,
				   const struct collector_measure_info *info,
				   const struct collector_run *run);
/* Metric m's statistics over a launch's runs and its verdict, with every condition the
 * summary record applies (stats_summarize, the throttle reasons, the locked clock, and
 * for --runs auto's gating metric the CI target): the one place a launch's verdict is
 * made, so that the exit table (collector_table_add) and the summary agree. values and
 * clocks as for collector_record_summary; column (runs doubles, the caller's) receives
 * the metric's values. Cannot fail. */
struct stats_summary;
void collector_launch_summarize(const struct collector_measure_info *info,
				const double *values, const double *clocks, size_t runs, size_t m,
				double *column, struct stats_summary *s);
/* values holds runs × metric_count, run-major; clocks holds one SM clock per run. */
struct cJSON *collector_record_summary(const struct collector_launch *launch,
				       const struct collector_measure_info *info,
				       const double *values, const double *clocks, size_t runs);
/* How a measured launch's memory was saved (summary member "save"). */
struct collector_save_info {
	const char *strategy;        /* "reach" or "checkpoint" */
	const char *why;
	bool reach;                  /* the members below apply */
	size_t bytes, ranges;
	bool on_host, verified_now;
	size_t verified_bytes;       /* when verified_now */
};
/* Adds "save" and "cost_ms" (cost may be NULL) to a summary record. Returns summary. */
struct collector_cost;
struct cJSON *collector_record_add_save(struct cJSON *summary,
					const struct collector_save_info *save,
					const struct collector_cost *cost);
/* Adds "memory_save" to a session record: the strategy and the host memory bounds.
 * Returns session. */
struct cJSON *collector_record_add_memory_save(struct cJSON *session, const char *strategy,
					       size_t host_bytes_max,
					       size_t checkpoint_host_reserve_mb);
/* Adds "cupti" to a session record: which CUPTI measured, path (as the loader has it),
 * from (the place it was found: "loaded", "CUDA_HOME", "toolkit", "pip",
 * "library_path") and version (cuptiGetVersion; negative: null). NULL strings are null.
 * Returns session. */
struct cJSON *collector_record_add_cupti(struct cJSON *session, const char *path,
					 const char *from, long version);

/* type is "warning" or "error"; concerns (kernel, metric, option ...) may be NULL. */
struct cJSON *collector_record_message(const char *type, const char *message,
				       const char *concerns_key, const char *concerns_value);

/* ISO 8601 UTC with milliseconds, "2026-11-29T19:21:16.123Z". */
void collector_iso8601(double epoch_seconds, char *buf, size_t size);

#endif
