/* inject/replay.c - measuring one selected launch: synchronise, save the memory the launch
 * can reach (memory/), and per pass and run restore it, flush the L2 with a read sweep and
 * launch the kernel again under the range profiler; leave the memory as the application's
 * own launch must find or leave it; then write the records. The first measured launch of
 * each kernel shows that its reach is enough: the application's own launch runs between
 * two hashes of all other memory, and the runs follow at the driver call's EXIT. A kernel
 * whose reach is unknown or was not enough is measured with the full CUPTI checkpoint.
 * Called by launch.c with the replay lock held and the launch's context current.
 * Calls collector/ (profiler, records, device) and nvtx_bridge/ (snapshot). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collector/api.h"
#include "collector/cost.h"
#include "collector/device.h"
#include "collector/profiler.h"
#include "collector/records.h"
#include "collector/stats.h"
#include "collector/table.h"
#include "common/log.h"
#include "inject/flush.h"
#include "inject/inject.h"
#include "memory/memory.h"
#include "nvtx_bridge/nvtx_bridge.h"

/* Per device: the metric set and what the device record said. */
struct device_state {
	bool ready, failed;
	struct collector_metric_set *set;
	struct collector_device_info info;
};

/* Per context: its range profiler, flush buffer, memory hash kernel and the two saved
 * copies of a launch's reach (its inputs, and the application's own result while a launch
 * is being verified). A list, so that pointers stay valid from a launch's ENTER to EXIT. */
struct context_state {
	struct context_state *next;
	CUcontext ctx;
	struct collector_profiler *profiler;
	struct inject_flush flush;
	struct mem_verifier verifier;
	struct mem_backup inputs, result;
	CUstream warm_stream;        /* only while inject_replay_prepare() runs */
	bool failed;
};

#define MAX_DEVICES 64
static struct device_state devices[MAX_DEVICES];
static struct context_state *contexts;

/* How each kernel's memory is saved, per context and function. */
enum save_policy {
	SAVE_UNVERIFIED,             /* reach not yet shown to be enough: verify at next launch */
	SAVE_REACH,                  /* verified: save and restore the reach only */
	SAVE_CHECKPOINT,             /* wrote outside its reach once: full checkpoint from now on */
};
struct function_state {
	struct function_state *next;
	CUcontext ctx;
	CUfunction function;
	const char *mangled;
	enum save_policy policy;
};
#define FUNCTION_BUCKETS 256
static struct function_state *functions[FUNCTION_BUCKETS];

static struct function_state *function_state(CUcontext ctx, CUfunction f, const char *mangled)
{
	unsigned b = (unsigned)(((uintptr_t)f >> 4) ^ ((uintptr_t)ctx >> 8)) % FUNCTION_BUCKETS;
	for (struct function_state *s = functions[b]; s; s = s->next)
		if (s->ctx == ctx && s->function == f && !strcmp(s->mangled, mangled))
			return s;
	struct function_state *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	const char *interned = NULL;
	inject_name_intern(mangled, &interned);
	*s = (struct function_state){ functions[b], ctx, f, interned ? interned : "",
				      SAVE_UNVERIFIED };
	functions[b] = s;
	return s;
}

/* Backups larger than this are freed after each launch, so that rangeprof never keeps
 * device memory an application close to full would need. */
#define BACKUP_KEEP_BYTES ((size_t)256 << 20)

static double now_seconds(void)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static struct device_state *device_ready(CUcontext ctx, int device)
{
	struct device_state *d = &devices[device];
	if (d->ready || d->failed)
		return d->ready ? d : NULL;
	char err[2048], key[32];
	snprintf(key, sizeof(key), "device-%d", device);
	if (collector_device_info(device, &d->info, err, sizeof(err))) {
		d->failed = true;
		inject_report_once(key, true, "%s; measuring nothing on device %d", err, device);
		return NULL;
	}
	inject_write_record(collector_record_device(&d->info));
	char nvml_err[512];
	if (collector_nvml_open("libnvidia-ml.so.1", nvml_err, sizeof(nvml_err)))
		inject_report_once("nvml", false, "%s; temperatures will be null", nvml_err);
	if (collector_metric_set_create(ctx, device, inject_session.opts.metrics, &d->set, err,
					sizeof(err))) {
		d->failed = true;
		inject_report_once(key, true, "%s; measuring nothing on device %d (%s), the "
				   "application runs on", err, device, d->info.name);
		return NULL;
	}
	if (inject_session.opts.clock_control == RP_CLOCK_BASE) {
		unsigned mhz;
		if (collector_clock_lock_base(d->info.uuid, &mhz, err, sizeof(err))) {
			d->failed = true;
			inject_report_once(key, true, "%s; measuring nothing on device %d", err, device);
			return NULL;
		}
		rp_log_progress("device %d: SM clock locked to base %u MHz until exit", device, mhz);
	}
	d->ready = true;
	return d;
}

static struct context_state *context_ready(CUcontext ctx, int device)
{
	for (struct context_state *c = contexts; c; c = c->next)
		if (c->ctx == ctx)
			return c->failed ? NULL : c;
	struct context_state *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->ctx = ctx;
	c->next = contexts;
	contexts = c;
	char err[2048];
	if (collector_profiler_create(ctx, &c->profiler, err, sizeof(err)) ||
	    inject_flush_init(&c->flush, device, err, sizeof(err)) ||
	    mem_verifier_init(&c->verifier, device, err, sizeof(err))) {
		c->failed = true;
		inject_report_once("context", true, "%s; measuring nothing in this context", err);
		return NULL;
	}
	return c;
}

/* How the memory of one measured launch is saved, and what the records say about it. */
struct save {
	const char *strategy;        /* "reach" or "checkpoint" */
	char why[320];               /* why this strategy */
	struct mem_reach reach;      /* strategy "reach" */
	RP_CUpti_Checkpoint checkpoint;  /* strategy "checkpoint" */
	bool checkpoint_saved;
	bool verified;               /* this launch showed the reach to be enough */
	size_t verified_bytes;       /* bytes hashed outside the reach */
};

/* One measured launch from start to records: it may span the driver call (ENTER to EXIT)
 * while the application's own launch is being verified. */
struct measurement {
	struct inject_launch launch;
	const char *kernel;
	int device;
	struct device_state *d;
	struct context_state *c;
	struct function_state *fn;
	struct save save;
	struct mem_hashes before;    /* verification: hashes before the application's launch */
	struct collector_cost cost;
	double started, lap;
};

struct replay_run {
	const struct inject_launch *launch;
	struct context_state *context;
	struct save *save;
	bool flush;
	double *temperature;
	double *wall;
	const char *uuid;
};

static int run_once(void *arg, unsigned run, unsigned pass)
{
	struct replay_run *rr = arg;
	if (rr->save->checkpoint_saved) {
		if (rp_api.cuptiCheckpointRestore(&rr->save->checkpoint) != CUPTI_SUCCESS)
			return -1;
	} else if (mem_restore(&rr->context->inputs, &rr->save->reach, rr->launch->stream) !=
		   CUDA_SUCCESS) {
		return -1;
	}
	if (rr->flush && inject_flush_launch(&rr->context->flush, rr->launch->stream) != CUDA_SUCCESS)
		return -2;
	if (pass == 0) {
		rr->temperature[run] = collector_nvml_temperature(rr->uuid);
		rr->wall[run] = now_seconds();
	}
	return inject_relaunch(rr->launch) == CUDA_SUCCESS ? 0 : -3;
}

static enum collector_payload payload_of(enum nvtx_bridge_payload p)
{
	switch (p) {
	case NVTX_BRIDGE_PAYLOAD_UINT: return COLLECTOR_PAYLOAD_UINT;
	case NVTX_BRIDGE_PAYLOAD_INT: return COLLECTOR_PAYLOAD_INT;
	case NVTX_BRIDGE_PAYLOAD_DOUBLE: return COLLECTOR_PAYLOAD_DOUBLE;
	default: return COLLECTOR_PAYLOAD_NONE;
	}
}

static void write_records(const struct measurement *m, unsigned runs, unsigned passes,
			  const double *values, const double *clocks, const double *temps,
			  const double *walls)
{
	const struct inject_launch *l = &m->launch;
	const char *kernel = m->kernel;
	struct device_state *d = m->d;
	int device = m->device;
	const struct collector_cost *cost = &m->cost;
	const struct nvtx_bridge_snapshot *snap = nvtx_bridge_snapshot();
	struct collector_nvtx_range *ranges = calloc(snap->count + 1, sizeof(*ranges));
	char path[4096];
	nvtx_bridge_path(snap, path, sizeof(path));
	for (size_t i = 0; ranges && i < snap->count; i++) {
		const struct nvtx_bridge_range *r = &snap->ranges[i];
		ranges[i].domain = nvtx_bridge_domain_name(r->domain);
		ranges[i].text = r->text;
		ranges[i].start_end = r->start_end;
		ranges[i].payload_type = payload_of(r->payload_type);
		memcpy(&ranges[i].payload, &r->payload, sizeof(r->payload));
		ranges[i].category = r->category;
		ranges[i].category_name = r->category ?
			nvtx_bridge_category_name(r->domain, r->category) : NULL;
	}
	uint32_t stream_id = 0;
	rp_api.cuptiGetStreamIdEx(l->ctx, l->stream, 0, &stream_id);
	struct collector_launch launch = {
		.index = l->index, .kernel = kernel, .mangled = l->mangled, .device = device,
		.context = l->context_id, .stream = stream_id,
		.grid = { l->grid[0], l->grid[1], l->grid[2] },
		.block = { l->block[0], l->block[1], l->block[2] },
		.shared_mem_bytes = l->shared_mem_bytes,
		.nvtx = ranges, .nvtx_count = ranges ? snap->count : 0, .nvtx_path = path,
	};
	size_t metric_count = collector_metric_set_user_count(d->set);
	struct collector_measure_info info = {
		.metrics = collector_metric_set_names(d->set),
		.units = collector_metric_set_units(d->set),
		.metric_count = metric_count, .passes = passes, .runs = runs,
		.cache_control = inject_session.opts.cache_control,
		.clock_control = inject_session.opts.clock_control,
		.rated_sm_clock_hz = d->info.rated_sm_clock_hz,
	};
	for (unsigned r = 0; r < runs; r++) {
		struct collector_run run = { r, values + (size_t)r * metric_count, clocks[r],
					     temps[r], walls[r] };
		inject_write_record(collector_record_run(&launch, &info, &run));
	}
	cJSON *summary = collector_record_summary(&launch, &info, values, clocks, runs);
	if (summary) {
		cJSON_AddItemToObject(summary, "cost_ms", collector_cost_json(cost));
		cJSON *save = cJSON_AddObjectToObject(summary, "save");
		if (save) {
			cJSON_AddStringToObject(save, "strategy", m->save.strategy);
			cJSON_AddStringToObject(save, "why", m->save.why);
			if (!m->save.checkpoint_saved) {
				cJSON_AddNumberToObject(save, "bytes", (double)m->save.reach.bytes);
				cJSON_AddNumberToObject(save, "ranges", (double)m->save.reach.count);
				cJSON_AddBoolToObject(save, "on_host", m->c->inputs.on_host);
				cJSON_AddBoolToObject(save, "verified_now", m->save.verified);
				if (m->save.verified)
					cJSON_AddNumberToObject(save, "verified_bytes",
								(double)m->save.verified_bytes);
			}
		}
	}
	inject_write_record(summary);
	struct stats_summary first;
	double *column = malloc(runs * sizeof(*column));
	if (column) {
		for (unsigned r = 0; r < runs; r++)
			column[r] = values[(size_t)r * metric_count];
		stats_summarize(column, clocks, runs, &first);
		collector_table_add(kernel, path, column, runs, 1, first.stable == STATS_STABLE_TRUE);
		free(column);
	}
	rp_log_progress("%s [%s] launch %llu: %u runs, %u pass%s (%.1f ms)", kernel, path,
			(unsigned long long)l->index, runs, passes, passes == 1 ? "" : "es",
			cost->ms[COST_TOTAL]);
	free(ranges);
}

/* Runs the measurement proper: every run restores the saved inputs, flushes and
 * relaunches; writes the records. The memory is left as the runs left it: the caller
 * puts it back. */
static void measure(struct measurement *m)
{
	unsigned runs = (unsigned)inject_session.opts.runs;
	bool flush = inject_session.opts.cache_control == RP_CACHE_ALL;
	size_t metric_count = collector_metric_set_user_count(m->d->set);
	double *values = calloc((size_t)runs * metric_count + 1, sizeof(double));
	double *clocks = calloc(runs, sizeof(double));
	double *temps = calloc(runs, sizeof(double));
	double *walls = calloc(runs, sizeof(double));
	if (values && clocks && temps && walls) {
		struct replay_run rr = { &m->launch, m->c, &m->save, flush, temps, walls,
					 m->d->info.uuid };
		unsigned passes = 0;
		char err[2048];
		int rc = collector_profiler_measure(m->c->profiler, m->d->set, runs, flush ? 2 : 1,
						    run_once, &rr, values, clocks, &passes, &m->cost,
						    err, sizeof(err));
		m->lap = collector_cost_now();
		if (rc) {
			char key[64];
			snprintf(key, sizeof(key), "measure-%.40s", m->kernel);
			inject_report_once(key, true, "%s: %s; not measured", m->kernel, err);
			if (strstr(err, "INSUFFICIENT_PRIVILEGES"))
				inject_session.measuring = false;
		} else {
			m->cost.ms[COST_TOTAL] = m->lap - m->started;
			write_records(m, runs, passes, values, clocks, temps, walls);
		}
	}
	free(values);
	free(clocks);
	free(temps);
	free(walls);
}

/* The full checkpoint of the context: every allocation, whatever the launch can reach. */
static void measure_with_checkpoint(struct measurement *m)
{
	m->save.strategy = "checkpoint";
	m->save.checkpoint = (RP_CUpti_Checkpoint){
		.structSize = RP_CUPTI_CHECKPOINT_STRUCT_SIZE, .ctx = m->launch.ctx,
		.allowOverwrite = 1, .reserveHostMB = collector_checkpoint_host_reserve_mb() };
	CUptiResult r = rp_api.cuptiCheckpointSave(&m->save.checkpoint);
	if (r != CUPTI_SUCCESS) {
		inject_report_once("checkpoint", true, "cuptiCheckpointSave for %s (launch %llu): "
				   "%s%s; launch not measured, the application runs on", m->kernel,
				   (unsigned long long)m->launch.index, collector_cupti_error(r),
				   r == CUPTI_ERROR_OUT_OF_MEMORY ?
				   " (no room in device or host memory to save the application's "
				   "device memory)" : "");
		return;
	}
	m->save.checkpoint_saved = true;
	collector_cost_lap(&m->cost, COST_SAVE, &m->lap);
	measure(m);
	/* Whatever happened, the application's launch must see its own memory. */
	CUptiResult restore = rp_api.cuptiCheckpointRestore(&m->save.checkpoint);
	rp_api.cuCtxSynchronize();
	rp_api.cuptiCheckpointFree(&m->save.checkpoint);
	if (restore != CUPTI_SUCCESS)
		inject_report_once("restore", true, "cuptiCheckpointRestore: %s; the application's "
				   "memory may differ", collector_cupti_error(restore));
}

/* Falls back to the full checkpoint for this launch, saying why once per kernel. */
static void fall_back(struct measurement *m, const char *why)
{
	snprintf(m->save.why, sizeof(m->save.why), "%s", why);
	char key[96];
	snprintf(key, sizeof(key), "checkpoint-%p-%p", (void *)m->launch.ctx,
		 (void *)m->launch.function);
	inject_report_once(key, false, "%s: %s; its launches are measured with the full "
			   "checkpoint, whose cost grows with the application's device memory",
			   m->kernel, why);
	measure_with_checkpoint(m);
}

static void finish(struct measurement *m)
{
	mem_reach_finish(&m->save.reach);
	mem_hashes_finish(&m->before);
	if (m->c) {
		mem_backup_trim(&m->c->inputs, BACKUP_KEEP_BYTES);
		mem_backup_trim(&m->c->result, BACKUP_KEEP_BYTES);
	}
	free(m);
}

static int warm_run(void *arg, unsigned run, unsigned pass)
{
	(void)run;
	(void)pass;
	struct context_state *c = arg;
	unsigned kernels = inject_session.opts.cache_control == RP_CACHE_ALL ? 2 : 1;
	for (unsigned k = 0; k < kernels; k++)
		if (inject_flush_launch(&c->flush, c->warm_stream) != CUDA_SUCCESS)
			return -1;
	return 0;
}

void inject_replay_prepare(CUcontext ctx)
{
	CUdevice dev;
	if (rp_api.cuCtxSetCurrent(ctx) != CUDA_SUCCESS)
		return;
	if (rp_api.cuCtxGetDevice(&dev) == CUDA_SUCCESS && dev >= 0 && dev < MAX_DEVICES) {
		struct device_state *d = device_ready(ctx, (int)dev);
		struct context_state *c = d ? context_ready(ctx, (int)dev) : NULL;
		/* The range profiler's first pass in a context costs ~170 ms (bench/NOTES.md):
		 * one pass of flushes on a stream of ours takes it here. It has the shape of a
		 * real measurement (runs x kernels per run), since CUPTI 13.0 keeps the range
		 * count of the first configuration (H200: a first pass sized for one range left
		 * every later measurement with 2 ranges). Its numbers are not used, and an
		 * application kernel that runs meanwhile only makes it fail. */
		unsigned runs = (unsigned)inject_session.opts.runs;
		size_t metrics = d ? collector_metric_set_user_count(d->set) : 0;
		double *values = calloc((size_t)runs * metrics + 1, sizeof(double));
		double *clocks = calloc(runs, sizeof(double));
		if (c && values && clocks &&
		    rp_api.cuStreamCreate(&c->warm_stream, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS) {
			unsigned passes;
			char err[512];
			collector_profiler_measure(c->profiler, d->set, runs,
						   inject_session.opts.cache_control == RP_CACHE_ALL ?
						   2 : 1, warm_run, c, values, clocks, &passes, NULL,
						   err, sizeof(err));
			rp_api.cuStreamSynchronize(c->warm_stream);
			rp_api.cuStreamDestroy(c->warm_stream);
			c->warm_stream = NULL;
		}
		free(values);
		free(clocks);
	}
	rp_api.cuCtxSetCurrent(NULL);
}

struct measurement *inject_replay_enter(const struct inject_launch *l, const char *kernel)
{
	struct measurement *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->launch = *l;
	m->kernel = kernel;
	m->started = m->lap = collector_cost_now();
	CUdevice dev;
	if (rp_api.cuCtxGetDevice(&dev) != CUDA_SUCCESS || dev < 0 || dev >= MAX_DEVICES)
		goto done;
	m->device = (int)dev;
	/* Work the application queued before this launch must finish first: the saved copy
	 * has to see its results, and a sticky error is the application's to see. */
	CUresult cr = rp_api.cuCtxSynchronize();
	if (cr != CUDA_SUCCESS) {
		inject_report_once("sync", true, "cuCtxSynchronize before launch %llu: %s; not "
				   "measured", (unsigned long long)l->index, collector_cu_error(cr));
		goto done;
	}
	collector_cost_lap(&m->cost, COST_SYNC, &m->lap);
	m->d = device_ready(l->ctx, m->device);
	m->c = m->d ? context_ready(l->ctx, m->device) : NULL;
	m->fn = m->c ? function_state(l->ctx, l->function, l->mangled) : NULL;
	if (!m->fn)
		goto done;
	collector_cost_lap(&m->cost, COST_SETUP, &m->lap);
	if (inject_session.opts.memory_save == RP_MEMORY_SAVE_CHECKPOINT) {
		snprintf(m->save.why, sizeof(m->save.why), "--memory-save checkpoint");
		measure_with_checkpoint(m);
		goto done;
	}
	if (m->fn->policy == SAVE_CHECKPOINT) {
		snprintf(m->save.why, sizeof(m->save.why), "an earlier launch wrote outside the "
			 "memory its parameters reach");
		measure_with_checkpoint(m);
		goto done;
	}
	void **kernel_params = NULL, **extra = NULL;
	inject_launch_arguments(l, &kernel_params, &extra);
	mem_reach_collect(&m->save.reach, l->function, kernel_params, extra);
	collector_cost_lap(&m->cost, COST_REACH, &m->lap);
	if (m->save.reach.unknown[0]) {
		fall_back(m, m->save.reach.unknown);
		goto done;
	}
	char err[512];
	if (mem_save(&m->c->inputs, &m->save.reach, l->stream, err, sizeof(err))) {
		fall_back(m, err);
		goto done;
	}
	m->save.strategy = "reach";
	collector_cost_lap(&m->cost, COST_SAVE, &m->lap);
	if (m->fn->policy == SAVE_REACH) {
		snprintf(m->save.why, sizeof(m->save.why), "an earlier launch of this kernel "
			 "wrote only inside the memory its parameters reach");
		measure(m);
		/* The application's own launch must see its inputs. */
		mem_restore(&m->c->inputs, &m->save.reach, l->stream);
		rp_api.cuCtxSynchronize();
		collector_cost_lap(&m->cost, COST_RESTORE, &m->lap);
		goto done;
	}
	/* First launch of this kernel: show that the reach is enough. The application's own
	 * launch runs between two hashes of everything else; inject_replay_exit() compares
	 * them. If it wrote elsewhere, that was its one real execution: nothing is replayed. */
	if (mem_hash_outside(&m->c->verifier, &m->save.reach, l->stream, &m->before, err,
			     sizeof(err))) {
		fall_back(m, err);
		goto done;
	}
	collector_cost_lap(&m->cost, COST_VERIFY, &m->lap);
	return m;
done:
	finish(m);
	return NULL;
}

void inject_replay_exit(struct measurement *m, const struct inject_launch *l, bool launched)
{
	m->launch.params = l->params;
	l = &m->launch; /* the launch as seen at ENTER: function, index, stream */
	if (!launched)
		goto done; /* the driver refused the launch: the application sees its error */
	CUresult cr = rp_api.cuCtxSynchronize();
	if (cr != CUDA_SUCCESS) {
		inject_report_once("sync", true, "cuCtxSynchronize after launch %llu: %s; not "
				   "measured", (unsigned long long)l->index, collector_cu_error(cr));
		goto done;
	}
	/* The application's kernel ran: the time from here on is ours. */
	m->lap = collector_cost_now();
	struct mem_hashes after;
	char err[512];
	if (mem_hash_again(&m->c->verifier, &m->before, l->stream, &after, err, sizeof(err))) {
		inject_report_once("verify", true, "%s: %s; launch %llu not measured", m->kernel,
				   err, (unsigned long long)l->index);
		goto done;
	}
	long changed = mem_hashes_differ(&m->before, &after);
	collector_cost_lap(&m->cost, COST_VERIFY, &m->lap);
	mem_hashes_finish(&after);
	if (changed >= 0) {
		m->fn->policy = SAVE_CHECKPOINT;
		const struct mem_range *seg = &m->before.segments[changed];
		char key[96];
		snprintf(key, sizeof(key), "outside-%p-%p", (void *)l->ctx, (void *)l->function);
		inject_report_once(key, false, "%s wrote outside the memory its parameters reach "
				   "(%zu bytes at %#llx changed); launch %llu ran once and is not "
				   "measured, later launches use the full checkpoint", m->kernel,
				   seg->size, (unsigned long long)seg->base,
				   (unsigned long long)l->index);
		goto done;
	}
	m->fn->policy = SAVE_REACH;
	m->save.verified = true;
	m->save.verified_bytes = m->before.bytes;
	snprintf(m->save.why, sizeof(m->save.why), "verified now: the application's own launch "
		 "changed nothing outside the %zu saved bytes (%zu bytes hashed)",
		 m->save.reach.bytes, m->before.bytes);
	/* The application's result, to be put back after the runs. */
	if (mem_save(&m->c->result, &m->save.reach, l->stream, err, sizeof(err))) {
		inject_report_once("save-result", true, "%s: %s; launch %llu not measured",
				   m->kernel, err, (unsigned long long)l->index);
		goto done;
	}
	collector_cost_lap(&m->cost, COST_SAVE, &m->lap);
	measure(m);
	mem_restore(&m->c->result, &m->save.reach, l->stream);
	rp_api.cuCtxSynchronize();
	collector_cost_lap(&m->cost, COST_RESTORE, &m->lap);
done:
	finish(m);
}
