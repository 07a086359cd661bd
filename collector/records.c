/* collector/records.c - builds session, device, run, summary, warning and error records.
 * Calls: stats.c, jsonl.c (string escaping), cost.c (libc and cJSON besides), placement.c
 * (the DRAM write's reason).
 * Called by: inject/.
 * Lock: none (no state). */
#include "collector/records.h"
#include "collector/cost.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collector/jsonl.h"
#include "collector/placement.h"
#include "collector/stats.h"

void collector_iso8601(double epoch_seconds, char *buf, size_t size)
{
	time_t secs = (time_t)epoch_seconds;
	struct tm tm;
	gmtime_r(&secs, &tm);
	int ms = (int)((epoch_seconds - (double)secs) * 1000.0);
	char date[32];
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, size, "%s.%03dZ", date, ms < 0 ? 0 : ms > 999 ? 999 : ms);
}

static cJSON *add_number(cJSON *o, const char *key, double v)
{
	/* cJSON would print NaN as null too; say so explicitly for readers of this code. */
	return isfinite(v) ? cJSON_AddNumberToObject(o, key, v) : cJSON_AddNullToObject(o, key);
}

static cJSON *new_record(const char *type)
{
	cJSON *o = cJSON_CreateObject();
	if (o && !cJSON_AddStringToObject(o, "type", type)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* A NULL item is written as null. */
static cJSON *string_array(const char *const *items, size_t count)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; a && i < count; i++) {
		char *clean = items[i] ? collector_utf8_sanitize(items[i]) : NULL;
		cJSON *s = !items[i] ? cJSON_CreateNull() : clean ? cJSON_CreateString(clean) : NULL;
		free(clean);
		if (!s || !cJSON_AddItemToArray(a, s)) {
			cJSON_Delete(s);
			cJSON_Delete(a);
			return NULL;
		}
	}
	return a;
}

static const char *cache_name(enum rp_cache_control c)
{
	return c == RP_CACHE_NONE ? "none" : "all";
}

static const char *clock_name(enum rp_clock_control c)
{
	return c == RP_CLOCK_BASE ? "base" : "none";
}

static const char *thermal_name(enum rp_thermal_control c)
{
	return c == RP_THERMAL_OFF ? "off" : c == RP_THERMAL_MANUAL ? "manual" : "auto";
}

/* The names of the reason bits in mask, or null when unknown. */
static cJSON *throttle_array(uint64_t mask)
{
	if (mask == STATS_THROTTLE_UNKNOWN)
		return cJSON_CreateNull();
	const char *names[32];
	size_t n = stats_throttle_names(mask, names, 32);
	return cJSON_CreateStringArray(names, (int)n);
}

cJSON *collector_record_session(const char *tool_version, pid_t pid, const char *host,
				char *const *argv, double start_time,
				const struct rp_options *opts)
{
	cJSON *o = new_record("session");
	if (!o)
		return NULL;
	bool ok = true;
	size_t argc = 0;
	while (argv && argv[argc])
		argc++;
	char when[64];
	collector_iso8601(start_time, when, sizeof(when));
	ok &= cJSON_AddStringToObject(o, "tool", "rangeprof") != NULL;
	ok &= cJSON_AddStringToObject(o, "version", tool_version) != NULL;
	ok &= cJSON_AddNumberToObject(o, "schema", COLLECTOR_SCHEMA_VERSION) != NULL;
	ok &= cJSON_AddNumberToObject(o, "pid", (double)pid) != NULL;
	ok &= collector_json_add_string(o, "host", host) == 0;
	cJSON *args = string_array((const char *const *)argv, argc);
	ok &= args && cJSON_AddItemToObject(o, "argv", args);
	ok &= cJSON_AddStringToObject(o, "start_time", when) != NULL;

	cJSON *options = cJSON_AddObjectToObject(o, "options");
	ok &= options != NULL;
	if (options) {
		ok &= collector_json_add_string(options, "output", opts->output) == 0;
		ok &= collector_json_add_string(options, "metrics", opts->metrics) == 0;
		cJSON *inc = string_array((const char *const *)opts->nvtx_include,
					  opts->nvtx_include_count);
		ok &= inc && cJSON_AddItemToObject(options, "nvtx_include", inc);
		cJSON *exc = string_array((const char *const *)opts->nvtx_exclude,
					  opts->nvtx_exclude_count);
		ok &= exc && cJSON_AddItemToObject(options, "nvtx_exclude", exc);
		ok &= collector_json_add_string(options, "kernel_name", opts->kernel_name) == 0;
		ok &= cJSON_AddNumberToObject(options, "launch_skip", (double)opts->launch_skip) != NULL;
		if (opts->launch_count < 0)
			ok &= cJSON_AddNullToObject(options, "launch_count") != NULL;
		else
			ok &= cJSON_AddNumberToObject(options, "launch_count",
						      (double)opts->launch_count) != NULL;
		if (opts->runs == RP_RUNS_AUTO)
			ok &= cJSON_AddStringToObject(options, "runs", "auto") != NULL;
		else
			ok &= cJSON_AddNumberToObject(options, "runs", (double)opts->runs) != NULL;
		ok &= add_number(options, "target_ci_pct", opts->target_ci_pct) != NULL;
		ok &= cJSON_AddNumberToObject(options, "runs_min", (double)opts->runs_min) != NULL;
		ok &= cJSON_AddNumberToObject(options, "runs_max", (double)opts->runs_max) != NULL;
		ok &= cJSON_AddNumberToObject(options, "runs_batch", (double)opts->runs_batch) != NULL;
		ok &= add_number(options, "runs_time_budget_s", opts->runs_time_budget) != NULL;
		ok &= cJSON_AddStringToObject(options, "thermal_control",
					      thermal_name(opts->thermal_control)) != NULL;
		ok &= add_number(options, "thermal_wait_c", opts->thermal_wait) != NULL;
		ok &= add_number(options, "thermal_continue_c", opts->thermal_continue) != NULL;
		ok &= cJSON_AddNumberToObject(options, "thermal_timeout_s",
					      (double)opts->thermal_timeout) != NULL;
		ok &= cJSON_AddStringToObject(options, "cache_control",
					      cache_name(opts->cache_control)) != NULL;
		ok &= cJSON_AddStringToObject(options, "setup",
					      opts->setup == RP_SETUP_LAZY ? "lazy" : "early") != NULL;
		ok &= cJSON_AddStringToObject(options, "graph_profiling",
					      opts->graph_profiling == RP_GRAPH_GRAPH ? "graph" :
					      opts->graph_profiling == RP_GRAPH_NONE ? "none" : "node") != NULL;
		ok &= cJSON_AddStringToObject(options, "replay_mode",
					      opts->replay_mode == RP_REPLAY_RANGE ? "range" : "kernel") != NULL;
		ok &= cJSON_AddStringToObject(options, "range_scope",
					      opts->range_scope == RP_RANGE_SCOPE_KERNELS ?
					      "kernels" : "whole") != NULL;
		ok &= cJSON_AddStringToObject(options, "clock_control",
					      clock_name(opts->clock_control)) != NULL;
		ok &= cJSON_AddBoolToObject(options, "quiet", opts->quiet) != NULL;
	}
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

cJSON *collector_record_device(const struct collector_device_info *d)
{
	cJSON *o = new_record("device");
	if (!o)
		return NULL;
	char cc[16];
	snprintf(cc, sizeof(cc), "%d.%d", d->cc_major, d->cc_minor);
	bool ok = true;
	ok &= cJSON_AddNumberToObject(o, "index", d->index) != NULL;
	ok &= collector_json_add_string(o, "name", d->name) == 0;
	ok &= collector_json_add_string(o, "uuid", d->uuid) == 0;
	ok &= cJSON_AddStringToObject(o, "compute_capability", cc) != NULL;
	ok &= cJSON_AddNumberToObject(o, "sm_count", d->sm_count) != NULL;
	ok &= cJSON_AddNumberToObject(o, "l2_bytes", (double)d->l2_bytes) != NULL;
	ok &= add_number(o, "rated_sm_clock_hz", d->rated_sm_clock_hz) != NULL;
	ok &= add_number(o, "rated_memory_clock_hz", d->rated_memory_clock_hz) != NULL;
	ok &= cJSON_AddNumberToObject(o, "driver_version", d->driver_version) != NULL;
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

cJSON *collector_record_setup(int device, uint32_t context_id, const struct collector_cost *cost)
{
	cJSON *o = new_record("setup");
	if (!o)
		return NULL;
	bool ok = cJSON_AddNumberToObject(o, "device", device) != NULL;
	ok &= cJSON_AddNumberToObject(o, "context", context_id) != NULL;
	cJSON *c = collector_cost_json(cost);
	ok &= c != NULL;
	if (c)
		cJSON_AddItemToObject(o, "cost_ms", c);
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static cJSON *dim3(const unsigned v[3])
{
	int ints[3] = { (int)v[0], (int)v[1], (int)v[2] };
	return cJSON_CreateIntArray(ints, 3);
}

static cJSON *nvtx_array(const struct collector_launch *l)
{
	cJSON *a = cJSON_CreateArray();
	/* A stack 100 000 deep (NVTX_BRIDGE_MAX_DEPTH) of long texts could make every record
	 * of the launch hundreds of MB (records.h): the outermost ranges are listed, the
	 * rest counted in nvtx_omitted. */
	size_t count = l->nvtx_count < COLLECTOR_MAX_NVTX ? l->nvtx_count : COLLECTOR_MAX_NVTX;
	for (size_t i = 0; a && i < count; i++) {
		const struct collector_nvtx_range *r = &l->nvtx[i];
		cJSON *o = cJSON_CreateObject();
		bool ok = o && cJSON_AddItemToArray(a, o);
		if (!ok) {
			cJSON_Delete(o);
			cJSON_Delete(a);
			return NULL;
		}
		ok &= collector_json_add_string(o, "domain", r->domain) == 0;
		ok &= collector_json_add_string(o, "text", r->text) == 0;
		ok &= cJSON_AddStringToObject(o, "kind", r->start_end ? "start_end" : "push_pop") != NULL;
		switch (r->payload_type) {
		case COLLECTOR_PAYLOAD_UINT:
			ok &= cJSON_AddNumberToObject(o, "payload", (double)r->payload.u) != NULL;
			break;
		case COLLECTOR_PAYLOAD_INT:
			ok &= cJSON_AddNumberToObject(o, "payload", (double)r->payload.i) != NULL;
			break;
		case COLLECTOR_PAYLOAD_DOUBLE:
			ok &= add_number(o, "payload", r->payload.d) != NULL;
			break;
		case COLLECTOR_PAYLOAD_NONE:
			break;
		}
		if (r->category) {
			ok &= cJSON_AddNumberToObject(o, "category", r->category) != NULL;
			if (r->category_name)
				ok &= collector_json_add_string(o, "category_name", r->category_name) == 0;
		}
		if (!ok) {
			cJSON_Delete(a);
			return NULL;
		}
	}
	return a;
}

/* A range workload's "range" member (records.h, struct collector_range). */
static cJSON *range_object(const struct collector_range *r)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	bool ok = collector_json_add_string(o, "name", r->name) == 0;
	ok &= collector_json_add_string(o, "scope", r->scope ? r->scope : "whole") == 0;
	ok &= cJSON_AddNumberToObject(o, "kernels", (double)r->kernels) != NULL;
	cJSON *names = string_array(r->kernel_names, r->kernel_names ? r->kernels : 0);
	ok &= names && cJSON_AddItemToObject(o, "kernel_names", names);
	ok &= cJSON_AddNumberToObject(o, "memsets", (double)r->memsets) != NULL;
	ok &= cJSON_AddNumberToObject(o, "copies", (double)r->copies) != NULL;
	ok &= cJSON_AddNumberToObject(o, "graph_launches", (double)r->graph_launches) != NULL;
	ok &= cJSON_AddNumberToObject(o, "event_ops", (double)r->event_ops) != NULL;
	ok &= cJSON_AddNumberToObject(o, "syncs", (double)r->syncs) != NULL;
	cJSON *streams = cJSON_AddArrayToObject(o, "streams");
	ok &= streams != NULL;
	for (size_t i = 0; ok && r->streams && i < r->stream_count; i++) {
		cJSON *id = cJSON_CreateNumber((double)r->streams[i]);
		ok &= id && cJSON_AddItemToArray(streams, id);
		if (!ok)
			cJSON_Delete(id);
	}
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* The members every per-launch record shares. A range workload (l->range) has no grid,
 * block or dynamic shared memory of its own (null), no graph (null) and a "range"
 * object after "graph". */
static bool add_launch(cJSON *o, const struct collector_launch *l,
		       const struct collector_measure_info *info)
{
	bool ok = true;
	ok &= cJSON_AddNumberToObject(o, "launch", (double)l->index) != NULL;
	ok &= cJSON_AddNumberToObject(o, "runs", info->runs) != NULL;
	ok &= collector_json_add_string(o, "kernel", l->kernel) == 0;
	ok &= collector_json_add_string(o, "mangled", l->mangled) == 0;
	ok &= cJSON_AddNumberToObject(o, "device", l->device) != NULL;
	ok &= cJSON_AddNumberToObject(o, "context", l->context) != NULL;
	ok &= cJSON_AddNumberToObject(o, "stream", (double)l->stream) != NULL;
	cJSON *n = nvtx_array(l);
	if (l->range) {
		ok &= cJSON_AddNullToObject(o, "grid") != NULL;
		ok &= cJSON_AddNullToObject(o, "block") != NULL;
		ok &= cJSON_AddNullToObject(o, "shared_mem_bytes") != NULL;
	} else {
		cJSON *g = dim3(l->grid), *b = dim3(l->block);
		ok &= g && cJSON_AddItemToObject(o, "grid", g);
		ok &= b && cJSON_AddItemToObject(o, "block", b);
		ok &= cJSON_AddNumberToObject(o, "shared_mem_bytes", l->shared_mem_bytes) != NULL;
	}
	ok &= n && cJSON_AddItemToObject(o, "nvtx", n);
	if (l->nvtx_count > COLLECTOR_MAX_NVTX)
		ok &= cJSON_AddNumberToObject(o, "nvtx_omitted",
					      (double)(l->nvtx_count - COLLECTOR_MAX_NVTX)) != NULL;
	ok &= collector_json_add_string(o, "nvtx_path", l->nvtx_path ? l->nvtx_path : "") == 0;
	ok &= cJSON_AddStringToObject(o, "workload", l->range ? "range" :
				      l->graph && l->graph->node < 0 ? "graph" : "kernel") != NULL;
	if (l->range) {
		ok &= cJSON_AddNullToObject(o, "graph") != NULL;
		cJSON *r = range_object(l->range);
		ok &= r && cJSON_AddItemToObject(o, "range", r);
	} else if (l->graph) {
		cJSON *graph = cJSON_AddObjectToObject(o, "graph");
		ok &= graph != NULL;
		if (graph) {
			ok &= cJSON_AddNumberToObject(graph, "id", (double)l->graph->id) != NULL;
			ok &= cJSON_AddNumberToObject(graph, "launch", (double)l->graph->launch) != NULL;
			if (l->graph->node >= 0)
				ok &= cJSON_AddNumberToObject(graph, "node", (double)l->graph->node) != NULL;
			else
				ok &= cJSON_AddNullToObject(graph, "node") != NULL;
			ok &= cJSON_AddNumberToObject(graph, "nodes", (double)l->graph->nodes) != NULL;
		}
	} else {
		ok &= cJSON_AddNullToObject(o, "graph") != NULL;
	}
	ok &= cJSON_AddStringToObject(o, "cache_control", cache_name(info->cache_control)) != NULL;
	ok &= cJSON_AddStringToObject(o, "clock_control", clock_name(info->clock_control)) != NULL;
	ok &= cJSON_AddNumberToObject(o, "passes", info->passes) != NULL;
	return ok;
}

cJSON *collector_record_run(const struct collector_launch *l,
			    const struct collector_measure_info *info,
			    const struct collector_run *run)
{
	cJSON *o = new_record("run");
	if (!o)
		return NULL;
	bool ok = add_launch(o, l, info);
	ok &= cJSON_AddNumberToObject(o, "run", run->run) != NULL;
	cJSON *metrics = cJSON_AddObjectToObject(o, "metrics");
	cJSON *units = cJSON_AddObjectToObject(o, "units");
	ok &= metrics && units;
	for (size_t i = 0; ok && i < info->metric_count; i++) {
		ok &= add_number(metrics, info->metrics[i], run->values[i]) != NULL;
		ok &= cJSON_AddStringToObject(units, info->metrics[i], info->units[i]) != NULL;
	}
	ok &= add_number(o, "sm_clock_hz", run->sm_clock_hz) != NULL;
	if (info->sm_clock_source)
		ok &= cJSON_AddStringToObject(o, "sm_clock_source", info->sm_clock_source) != NULL;
	else
		ok &= cJSON_AddNullToObject(o, "sm_clock_source") != NULL;
	ok &= add_number(o, "rated_sm_clock_hz", info->rated_sm_clock_hz) != NULL;
	ok &= add_number(o, "locked_sm_clock_hz", info->locked_sm_clock_hz > 0 ?
			 info->locked_sm_clock_hz : NAN) != NULL;
	ok &= add_number(o, "temperature_c", run->temperature_c) != NULL;
	static const struct collector_run_nvml unknown = { NAN, NAN, NAN, NAN,
							   STATS_THROTTLE_UNKNOWN };
	const struct collector_run_nvml *nv = run->nvml ? run->nvml : &unknown;
	ok &= add_number(o, "temperature_before_c", nv->temperature_before_c) != NULL;
	ok &= add_number(o, "temperature_after_c", nv->temperature_after_c) != NULL;
	ok &= add_number(o, "memory_clock_hz", nv->memory_clock_hz) != NULL;
	ok &= add_number(o, "power_w", nv->power_w) != NULL;
	cJSON *reasons = throttle_array(nv->throttle);
	ok &= reasons && cJSON_AddItemToObject(o, "throttle_reasons", reasons);
	char when[64];
	collector_iso8601(run->wall_time, when, sizeof(when));
	ok &= cJSON_AddStringToObject(o, "time", when) != NULL;
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* The summary's account of the conditions: every reason any run saw, the thermal guard,
 * and how --runs auto ended. */
static bool add_conditions(cJSON *o, const struct collector_measure_info *info, size_t runs)
{
	bool ok = true, known = false;
	uint64_t seen = 0;
	for (size_t r = 0; info->throttle && r < runs; r++) {
		if (info->throttle[r] == STATS_THROTTLE_UNKNOWN)
			continue;
		known = true;
		seen |= info->throttle[r];
	}
	cJSON *reasons = throttle_array(known ? seen : STATS_THROTTLE_UNKNOWN);
	ok &= reasons && cJSON_AddItemToObject(o, "throttle_reasons", reasons);
	if (info->thermal) {
		const struct collector_thermal *t = info->thermal;
		cJSON *th = cJSON_AddObjectToObject(o, "thermal");
		ok &= th != NULL;
		if (th) {
			ok &= cJSON_AddStringToObject(th, "control", t->control) != NULL;
			ok &= cJSON_AddStringToObject(th, "outcome", t->outcome) != NULL;
			ok &= add_number(th, "waited_s", t->waited_s) != NULL;
			ok &= add_number(th, "temperature_start_c", t->start_c) != NULL;
			ok &= add_number(th, "temperature_end_c", t->end_c) != NULL;
			ok &= add_number(th, "slowdown_c", t->slowdown_c) != NULL;
		}
	}
	if (info->adaptive) {
		const struct collector_adaptive *a = info->adaptive;
		cJSON *ra = cJSON_AddObjectToObject(o, "runs_auto");
		ok &= ra != NULL;
		if (ra) {
			ok &= cJSON_AddStringToObject(ra, "stopped", a->stopped) != NULL;
			ok &= collector_json_add_string(ra, "metric",
							info->metrics[a->metric]) == 0;
			ok &= add_number(ra, "target_ci_pct", a->target_ci_pct) != NULL;
			ok &= add_number(ra, "ci_pct", a->ci_pct) != NULL;
			ok &= cJSON_AddNumberToObject(ra, "batches", a->batches) != NULL;
			ok &= add_number(ra, "elapsed_s", a->elapsed_s) != NULL;
		}
	}
	return ok;
}

void collector_launch_summarize(const struct collector_measure_info *info,
				const double *values, const double *clocks, size_t runs, size_t m,
				double *column, struct stats_summary *s)
{
	for (size_t r = 0; r < runs; r++)
		column[r] = values[r * info->metric_count + m];
	stats_summarize(column, clocks, runs, s);
	stats_check_throttle(s, info->throttle, runs);
	stats_check_locked_clock(s, clocks, runs, info->locked_sm_clock_hz);
	const struct collector_adaptive *a = info->adaptive;
	if (a && m == a->metric && a->stopped && !(a->ci_pct <= a->target_ci_pct)) {
		/* The user asked for this precision and did not get it, however the runs
		 * stopped (an unknown CI is not within the target). */
		char reason[128];
		snprintf(reason, sizeof(reason), "ci %.2f %% > target %.2f %% (%s)", a->ci_pct,
			 a->target_ci_pct, a->stopped);
		stats_fail(s, reason);
	}
}

/* placement.h's reason for the DRAM write's summary into why, from the medians of the
 * runs' DRAM read and write: the write metric's index, or SIZE_MAX when the set lacks
 * either or the rule does not hold. */
static size_t placement_reason(const struct collector_measure_info *info,
			       const double *values, const double *clocks, size_t runs,
			       double *column, char *why, size_t size)
{
	size_t read_k = SIZE_MAX, write_k = SIZE_MAX;
	for (size_t m = 0; m < info->metric_count; m++) {
		if (!strcmp(info->metrics[m], COLLECTOR_PLACEMENT_READ_METRIC))
			read_k = m;
		else if (!strcmp(info->metrics[m], COLLECTOR_PLACEMENT_WRITE_METRIC))
			write_k = m;
	}
	if (read_k == SIZE_MAX || write_k == SIZE_MAX || !(info->l2_bytes > 0))
		return SIZE_MAX;
	struct stats_summary r, w;
	collector_launch_summarize(info, values, clocks, runs, read_k, column, &r);
	collector_launch_summarize(info, values, clocks, runs, write_k, column, &w);
	return collector_placement_reason(r.median, w.median, info->l2_bytes, why, size) ?
		write_k : SIZE_MAX;
}

cJSON *collector_record_summary(const struct collector_launch *l,
				const struct collector_measure_info *info, const double *values,
				const double *clocks, size_t runs)
{
	cJSON *o = new_record("summary");
	double *column = malloc((runs ? runs : 1) * sizeof(*column));
	if (!o || !column) {
		cJSON_Delete(o);
		free(column);
		return NULL;
	}
	bool ok = add_launch(o, l, info);
	cJSON *metrics = cJSON_AddObjectToObject(o, "metrics");
	ok &= metrics != NULL;
	char placement[128];
	size_t write_k = placement_reason(info, values, clocks, runs, column, placement,
					  sizeof(placement));
	for (size_t m = 0; ok && m < info->metric_count; m++) {
		struct stats_summary s;
		collector_launch_summarize(info, values, clocks, runs, m, column, &s);
		if (m == write_k)
			stats_note(&s, placement);
		cJSON *st = cJSON_AddObjectToObject(metrics, info->metrics[m]);
		ok &= st != NULL;
		if (!st)
			break;
		ok &= cJSON_AddStringToObject(st, "unit", info->units[m]) != NULL;
		ok &= add_number(st, "mean", s.mean) != NULL;
		ok &= add_number(st, "stddev", s.stddev) != NULL;
		ok &= add_number(st, "min", s.min) != NULL;
		ok &= add_number(st, "median", s.median) != NULL;
		ok &= add_number(st, "max", s.max) != NULL;
		ok &= cJSON_AddNumberToObject(st, "n", (double)s.n) != NULL;
		ok &= add_number(st, "ci95_low", s.ci95_low) != NULL;
		ok &= add_number(st, "ci95_high", s.ci95_high) != NULL;
		ok &= add_number(st, "rsd_pct", s.rsd_pct) != NULL;
		ok &= add_number(st, "drift_pct", s.drift_pct) != NULL;
		if (s.stable == STATS_STABLE_NULL)
			ok &= cJSON_AddNullToObject(st, "stable") != NULL;
		else
			ok &= cJSON_AddBoolToObject(st, "stable", s.stable == STATS_STABLE_TRUE) != NULL;
		cJSON *reasons = cJSON_AddArrayToObject(st, "reasons");
		ok &= reasons != NULL;
		for (char *p = s.reasons; ok && *p;) {
			size_t len = strcspn(p, ";");
			char item[128];
			snprintf(item, sizeof(item), "%.*s", (int)len, p);
			ok &= cJSON_AddItemToArray(reasons, cJSON_CreateString(item));
			p += len;
			while (*p == ';' || *p == ' ')
				p++;
		}
	}
	free(column);
	if (ok)
		ok = add_conditions(o, info, runs);
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

cJSON *collector_record_add_save(cJSON *summary, const struct collector_save_info *save,
				 const struct collector_cost *cost)
{
	if (!summary)
		return NULL;
	if (cost)
		cJSON_AddItemToObject(summary, "cost_ms", collector_cost_json(cost));
	cJSON *o = cJSON_AddObjectToObject(summary, "save");
	if (!o)
		return summary;
	collector_json_add_string(o, "strategy", save->strategy);
	collector_json_add_string(o, "why", save->why);
	if (save->reach) {
		cJSON_AddNumberToObject(o, "bytes", (double)save->bytes);
		cJSON_AddNumberToObject(o, "ranges", (double)save->ranges);
		cJSON_AddBoolToObject(o, "on_host", save->on_host);
		cJSON_AddBoolToObject(o, "verified_now", save->verified_now);
		if (save->verified_now)
			cJSON_AddNumberToObject(o, "verified_bytes", (double)save->verified_bytes);
	}
	return summary;
}

cJSON *collector_record_add_memory_save(cJSON *session, const char *strategy,
					size_t host_bytes_max, size_t checkpoint_host_reserve_mb)
{
	cJSON *o = session ? cJSON_AddObjectToObject(session, "memory_save") : NULL;
	if (o) {
		collector_json_add_string(o, "strategy", strategy);
		cJSON_AddNumberToObject(o, "host_bytes_max", (double)host_bytes_max);
		cJSON_AddNumberToObject(o, "checkpoint_host_reserve_mb",
					(double)checkpoint_host_reserve_mb);
	}
	return session;
}

cJSON *collector_record_add_cupti(cJSON *session, const char *path, const char *from,
				  long version)
{
	cJSON *o = session ? cJSON_AddObjectToObject(session, "cupti") : NULL;
	if (o) {
		collector_json_add_string(o, "path", path);
		collector_json_add_string(o, "from", from);
		if (version >= 0)
			cJSON_AddNumberToObject(o, "version", (double)version);
		else
			cJSON_AddNullToObject(o, "version");
	}
	return session;
}

cJSON *collector_record_message(const char *type, const char *message,
				const char *concerns_key, const char *concerns_value)
{
	cJSON *o = new_record(type);
	if (!o)
		return NULL;
	bool ok = collector_json_add_string(o, "message", message) == 0;
	if (concerns_key) {
		cJSON *c = cJSON_AddObjectToObject(o, "concerns");
		ok &= c && collector_json_add_string(c, concerns_key, concerns_value) == 0;
	}
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}
