/* inject/measure/emit.c - a measurement's records: one run record per run, the summary with
 * how the memory was saved and what the measurement cost, the line of the end-of-run
 * table, and the progress line.
 * Calls: output.c, config.c, nvtx_bridge/ (the NVTX ranges open now), collector/, common/.
 * Called by: measure.c.
 * Lock: the replay lock. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/profiler.h"
#include "collector/stats.h"
#include "collector/table.h"
#include "common/log.h"
#include "inject/session/device.h"
#include "inject/measure/measurement.h"
#include "inject/session/session.h"
#include "nvtx_bridge/nvtx_bridge.h"

static enum collector_payload payload_of(enum nvtx_bridge_payload p)
{
	switch (p) {
	case NVTX_BRIDGE_PAYLOAD_UINT: return COLLECTOR_PAYLOAD_UINT;
	case NVTX_BRIDGE_PAYLOAD_INT: return COLLECTOR_PAYLOAD_INT;
	case NVTX_BRIDGE_PAYLOAD_DOUBLE: return COLLECTOR_PAYLOAD_DOUBLE;
	default: return COLLECTOR_PAYLOAD_NONE;
	}
}

void inject_emit_records(const struct measurement *m, unsigned runs, unsigned passes,
			  const double *values, const double *clocks, const double *temps,
			  const double *walls, const struct run_conditions *cond)
{
	INJECT_REPLAY_HELD();
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
		.graph = l->graph, .range = m->range,
	};
	size_t metric_count = collector_metric_set_user_count(d->set);
	struct collector_measure_info info = {
		.metrics = collector_metric_set_names(d->set),
		.units = collector_metric_set_units(d->set),
		.metric_count = metric_count, .passes = passes, .runs = runs,
		.cache_control = inject_config()->cache_control,
		.clock_control = inject_config()->clock_control,
		.rated_sm_clock_hz = d->info.rated_sm_clock_hz,
		.locked_sm_clock_hz = d->locked_sm_clock_hz,
		.sm_clock_source = collector_metric_set_measures_clock(d->set) ? "counters" : "nvml",
		.throttle = cond->throttle, .adaptive = cond->adaptive, .thermal = cond->thermal,
		.l2_bytes = (double)d->info.l2_bytes,
	};
	for (unsigned r = 0; r < runs; r++) {
		struct collector_run run = { r, values + (size_t)r * metric_count, clocks[r],
					     temps[r], walls[r], &cond->nvml[r] };
		inject_output_write_record(collector_record_run(&launch, &info, &run));
	}
	struct collector_save_info save = {
		.strategy = m->save.strategy, .why = m->save.why, .reach = !m->save.checkpoint_saved,
		.bytes = m->save.reach.bytes, .ranges = m->save.reach.count,
		.on_host = m->c->inputs.on_host, .verified_now = m->save.verified,
		.verified_bytes = m->save.verified_bytes };
	cJSON *summary = collector_record_add_save(
		collector_record_summary(&launch, &info, values, clocks, runs), &save, cost);
	inject_output_write_record(summary);
	/* The table's "stable" is the summary's verdict for the first metric, made where
	 * the summary makes it (with --runs auto's CI target). */
	struct stats_summary first;
	double *column = malloc((runs ? runs : 1) * sizeof(*column));
	if (column) {
		collector_launch_summarize(&info, values, clocks, runs, 0, column, &first);
		collector_table_add(kernel, path, column, runs, 1, first.stable == STATS_STABLE_TRUE);
		free(column);
	}
	char stopped[64] = "";
	if (cond->adaptive)
		snprintf(stopped, sizeof(stopped), " (auto: %s)", cond->adaptive->stopped);
	rp_log_progress("%s [%s] launch %llu: %u runs%s, %u pass%s (%.1f ms)", kernel, path,
			(unsigned long long)l->index, runs, stopped, passes, passes == 1 ? "" : "es",
			cost->ms[COST_TOTAL]);
	free(ranges);
}
