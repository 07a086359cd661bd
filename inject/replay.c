/* inject/replay.c - measuring one selected launch: synchronise, checkpoint device memory,
 * and per pass and run restore it, flush the L2 with a read sweep, launch the kernel
 * again under the range profiler; restore once more so that the application's own launch
 * sees exactly the memory it would have seen; then write the records.
 * Called by launch.c with the replay lock held and the launch's context current.
 * Calls collector/ (profiler, records, device) and nvtx_bridge/ (snapshot). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collector/api.h"
#include "collector/device.h"
#include "collector/profiler.h"
#include "collector/records.h"
#include "collector/stats.h"
#include "collector/table.h"
#include "common/log.h"
#include "inject/flush.h"
#include "inject/inject.h"
#include "nvtx_bridge/nvtx_bridge.h"

/* Per device: the metric set and what the device record said. */
struct device_state {
	bool ready, failed;
	struct collector_metric_set *set;
	struct collector_device_info info;
};

/* Per context: its range profiler and flush buffer. */
struct context_state {
	CUcontext ctx;
	struct collector_profiler *profiler;
	struct inject_flush flush;
	bool failed;
};

#define MAX_DEVICES 64
static struct device_state devices[MAX_DEVICES];
static struct context_state *contexts;
static size_t context_count;

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
	for (size_t i = 0; i < context_count; i++)
		if (contexts[i].ctx == ctx)
			return contexts[i].failed ? NULL : &contexts[i];
	struct context_state *grown = realloc(contexts, (context_count + 1) * sizeof(*grown));
	if (!grown)
		return NULL;
	contexts = grown;
	struct context_state *c = &contexts[context_count++];
	memset(c, 0, sizeof(*c));
	c->ctx = ctx;
	char err[2048];
	if (collector_profiler_create(ctx, &c->profiler, err, sizeof(err)) ||
	    inject_flush_init(&c->flush, device, err, sizeof(err))) {
		c->failed = true;
		inject_report_once("context", true, "%s; measuring nothing in this context", err);
		return NULL;
	}
	return c;
}

struct replay_run {
	const struct inject_launch *launch;
	struct context_state *context;
	RP_CUpti_Checkpoint *checkpoint;
	bool flush;
	double *temperature;
	double *wall;
	const char *uuid;
	int error;
};

static int run_once(void *arg, unsigned run, unsigned pass)
{
	struct replay_run *rr = arg;
	CUptiResult cr = rp_api.cuptiCheckpointRestore(rr->checkpoint);
	if (cr != CUPTI_SUCCESS)
		return -1;
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

static double monotonic_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void write_records(const struct inject_launch *l, const char *kernel,
			  struct device_state *d, int device, unsigned runs, unsigned passes,
			  const double *values, const double *clocks, const double *temps,
			  const double *walls, double started_ms)
{
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
	inject_write_record(collector_record_summary(&launch, &info, values, clocks, runs));
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
			monotonic_ms() - started_ms);
	free(ranges);
}

void inject_replay(const struct inject_launch *l, const char *kernel)
{
	double started_ms = monotonic_ms();
	CUdevice dev;
	if (rp_api.cuCtxGetDevice(&dev) != CUDA_SUCCESS || dev < 0 || dev >= MAX_DEVICES)
		return;
	int device = (int)dev;
	/* Work the application queued before this launch must finish first: the checkpoint
	 * has to see its results, and a sticky error is the application's to see. */
	CUresult cr = rp_api.cuCtxSynchronize();
	if (cr != CUDA_SUCCESS) {
		inject_report_once("sync", true, "cuCtxSynchronize before launch %llu: %s; not "
				   "measured", (unsigned long long)l->index, collector_cu_error(cr));
		return;
	}
	struct device_state *d = device_ready(l->ctx, device);
	struct context_state *c = d ? context_ready(l->ctx, device) : NULL;
	if (!c)
		return;

	unsigned runs = (unsigned)inject_session.opts.runs;
	bool flush = inject_session.opts.cache_control == RP_CACHE_ALL;
	size_t metric_count = collector_metric_set_user_count(d->set);
	double *values = calloc((size_t)runs * metric_count + 1, sizeof(double));
	double *clocks = calloc(runs, sizeof(double));
	double *temps = calloc(runs, sizeof(double));
	double *walls = calloc(runs, sizeof(double));
	RP_CUpti_Checkpoint checkpoint = {
		.structSize = RP_CUPTI_CHECKPOINT_STRUCT_SIZE, .ctx = l->ctx, .allowOverwrite = 1,
		.reserveHostMB = collector_checkpoint_host_reserve_mb() };
	if (!values || !clocks || !temps || !walls)
		goto out;
	CUptiResult r = rp_api.cuptiCheckpointSave(&checkpoint);
	if (r != CUPTI_SUCCESS) {
		inject_report_once("checkpoint", true, "cuptiCheckpointSave for %s (launch %llu): "
				   "%s%s; launch not measured, the application runs on", kernel,
				   (unsigned long long)l->index, collector_cupti_error(r),
				   r == CUPTI_ERROR_OUT_OF_MEMORY ?
				   " (no room in device or host memory to save the application's "
				   "device memory)" : "");
		goto out;
	}
	struct replay_run rr = { l, c, &checkpoint, flush, temps, walls, d->info.uuid, 0 };
	unsigned passes = 0;
	char err[2048];
	int rc = collector_profiler_measure(c->profiler, d->set, runs, flush ? 2 : 1, run_once,
					    &rr, values, clocks, &passes, err, sizeof(err));
	/* Whatever happened, the application's launch must see its own memory. */
	CUptiResult restore = rp_api.cuptiCheckpointRestore(&checkpoint);
	rp_api.cuCtxSynchronize();
	rp_api.cuptiCheckpointFree(&checkpoint);
	if (restore != CUPTI_SUCCESS)
		inject_report_once("restore", true, "cuptiCheckpointRestore: %s; the application's "
				   "memory may differ", collector_cupti_error(restore));
	if (rc) {
		char key[64];
		snprintf(key, sizeof(key), "measure-%.40s", kernel);
		inject_report_once(key, true, "%s: %s; not measured", kernel, err);
		if (strstr(err, "INSUFFICIENT_PRIVILEGES"))
			inject_session.measuring = false;
		goto out;
	}
	write_records(l, kernel, d, device, runs, passes, values, clocks, temps, walls,
		      started_ms);
out:
	free(values);
	free(clocks);
	free(temps);
	free(walls);
}
