/* tests/unit/collector/records_test.c - JSON records: hostile names stay valid JSON,
 * records carry the fields of doc/records.md, and lines are written whole under
 * concurrent writers from several threads and processes. */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collector/cost.h"
#include "collector/jsonl.h"
#include "collector/records.h"
#include "collector/stats.h"
#include "common/utf8.h"

static const char *const hostile[] = {
	"quote\" backslash\\ slash/",
	"control \x01\x02\x1f tab\t newline\n",
	"invalid utf8 \xff\xfe \xc3 \xe2\x82 overlong \xc0\xaf surrogate \xed\xa0\x80",
	"valid \xe2\x82\xac \xf0\x9f\x98\x80 \xc3\xa9",
	"",
	"truncated at the end \xf0\x9f\x98",
	"past U+10FFFF \xf4\x90\x80\x80 and C1 \xc2\x9b",
};

/* cJSON_Parse takes any bytes inside strings, so it cannot tell valid UTF-8 from
 * invalid: every sequence is checked first. */
static bool valid_utf8_and_parses(const char *text, cJSON **out)
{
	*out = NULL;
	for (const unsigned char *p = (const unsigned char *)text; *p;) {
		size_t len = rp_utf8_sequence(p);
		if (!len)
			return false;
		p += len;
	}
	*out = cJSON_Parse(text);
	return *out != NULL;
}

Test(records, hostile_names_give_valid_json_that_round_trips)
{
	for (size_t i = 0; i < sizeof(hostile) / sizeof(hostile[0]); i++) {
		struct collector_nvtx_range r = { .domain = hostile[i], .text = hostile[i] };
		struct collector_launch l = { .index = 3, .kernel = hostile[i], .mangled = hostile[i],
					      .nvtx = &r, .nvtx_count = 1, .nvtx_path = hostile[i],
					      .grid = { 1, 2, 3 }, .block = { 4, 5, 6 } };
		const char *names[] = { "gpu__time_duration.sum" }, *units[] = { "nanosecond" };
		struct collector_measure_info info = { names, units, 1, 1, 1, RP_CACHE_ALL,
						       RP_CLOCK_NONE, 1.98e9 };
		double value = 1234.5;
		struct collector_run run = { 0, &value, 1.9e9, NAN, 1.7e9 };
		cJSON *rec = collector_record_run(&l, &info, &run);
		char *text = cJSON_PrintUnformatted(rec);
		cJSON *back;
		cr_assert(valid_utf8_and_parses(text, &back), "case %zu: %s", i, text);
		const char *kernel = cJSON_GetObjectItem(back, "kernel")->valuestring;
		/* Valid UTF-8 survives unchanged; invalid bytes became U+FFFD. */
		if (i == 3 || i == 0 || i == 4)
			cr_assert_str_eq(kernel, hostile[i]);
		if (i == 2)
			cr_assert(strstr(kernel, "\xef\xbf\xbd"));
		for (const unsigned char *p = (const unsigned char *)text; *p; p++)
			cr_assert(*p >= 0x20, "raw control byte in output");
		cr_assert(cJSON_IsNull(cJSON_GetObjectItem(back, "temperature_c")));
		cJSON_Delete(back);
		free(text);
		cJSON_Delete(rec);
	}
}

Test(records, run_and_summary_carry_the_spec_fields)
{
	const char *names[] = { "gpu__time_duration.sum", "dram__bytes_read.sum" };
	const char *units[] = { "nanosecond", "byte" };
	struct collector_measure_info info = { names, units, 2, 1, 5, RP_CACHE_NONE, RP_CLOCK_BASE, 1.98e9 };
	struct collector_launch l = { .index = 9, .kernel = "k", .mangled = "_Z1kv", .device = 0,
				      .context = 1, .stream = 7, .grid = { 2, 1, 1 },
				      .block = { 32, 1, 1 }, .nvtx_path = "outer/inner" };
	double values[10] = { 10, 1, 11, 1, 10, 1, 11, 1, 10, 1 };
	double clocks[5] = { 1.9e9, 1.9e9, 1.9e9, 1.9e9, 1.9e9 };
	struct collector_run run = { 2, values + 4, clocks[2], 40, 0 };
	cJSON *r = collector_record_run(&l, &info, &run);
	static const char *const run_fields[] = { "type", "launch", "run", "runs", "kernel", "mangled",
		"device", "context", "stream", "grid", "block", "shared_mem_bytes", "nvtx", "nvtx_path",
		"cache_control", "clock_control", "passes", "metrics", "units", "sm_clock_hz",
		"rated_sm_clock_hz", "temperature_c", "time" };
	for (size_t i = 0; i < sizeof(run_fields) / sizeof(run_fields[0]); i++)
		cr_assert_not_null(cJSON_GetObjectItem(r, run_fields[i]), "run lacks %s", run_fields[i]);
	cr_assert_str_eq(cJSON_GetObjectItem(r, "cache_control")->valuestring, "none");
	cr_assert_str_eq(cJSON_GetObjectItem(r, "clock_control")->valuestring, "base");
	cJSON_Delete(r);
	cJSON *s = collector_record_summary(&l, &info, values, clocks, 5);
	cJSON *t = cJSON_GetObjectItem(cJSON_GetObjectItem(s, "metrics"), "gpu__time_duration.sum");
	static const char *const stat_fields[] = { "mean", "stddev", "min", "median", "max", "n",
		"ci95_low", "ci95_high", "rsd_pct", "drift_pct", "stable", "reasons" };
	for (size_t i = 0; i < sizeof(stat_fields) / sizeof(stat_fields[0]); i++)
		cr_assert_not_null(cJSON_GetObjectItem(t, stat_fields[i]), "summary lacks %s", stat_fields[i]);
	cr_assert_float_eq(cJSON_GetObjectItem(t, "mean")->valuedouble, 10.4, 1e-9);
	cr_assert_float_eq(cJSON_GetObjectItem(t, "median")->valuedouble, 10, 1e-9);
	cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(t, "stable")), "rsd of 5 %% is not stable");
	cr_assert(cJSON_IsNull(cJSON_GetObjectItem(t, "drift_pct")), "5 runs: no drift figure");
	cJSON_Delete(s);
}

Test(records, the_summary_states_the_drift_and_fails_on_it)
{
	const char *names[] = { "gpu__time_duration.sum" }, *units[] = { "nanosecond" };
	struct collector_measure_info info = { names, units, 1, 1, 10, RP_CACHE_ALL, RP_CLOCK_NONE,
					       1.98e9 };
	struct collector_launch l = { .index = 1, .kernel = "k", .mangled = "k" };
	/* 100 + 0.5 i: 4.5 over the runs, 4.4 % of the mean 102.25, RSD 1.5 %. */
	double values[10], clocks[10];
	for (size_t i = 0; i < 10; i++) {
		values[i] = 100 + 0.5 * (double)i;
		clocks[i] = 1.98e9;
	}
	cJSON *s = collector_record_summary(&l, &info, values, clocks, 10);
	cJSON *t = cJSON_GetObjectItem(cJSON_GetObjectItem(s, "metrics"), "gpu__time_duration.sum");
	cr_assert_float_eq(cJSON_GetObjectItem(t, "drift_pct")->valuedouble, 100 * 4.5 / 102.25, 1e-9);
	cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(t, "stable")));
	cJSON *reasons = cJSON_GetObjectItem(t, "reasons");
	cr_assert_eq(cJSON_GetArraySize(reasons), 1);
	cr_assert_str_eq(cJSON_GetArrayItem(reasons, 0)->valuestring, "drifted +4.4 % over 10 runs");
	cJSON_Delete(s);
}

Test(records, a_locked_clock_is_stated_and_checked_against_the_runs)
{
	const char *names[] = { "gpu__time_duration.sum" };
	const char *units[] = { "nanosecond" };
	struct collector_measure_info info = { names, units, 1, 1, 5, RP_CACHE_ALL, RP_CLOCK_BASE,
					       1.98e9, 1.59e9 };
	struct collector_launch l = { .index = 1, .kernel = "k", .mangled = "k" };
	double values[5] = { 100, 100.1, 99.9, 100, 100.2 };
	double at_lock[5] = { 1.59e9, 1.59e9, 1.595e9, 1.59e9, 1.585e9 };
	struct collector_run run = { 0, values, at_lock[0], 40, 0 };
	cJSON *r = collector_record_run(&l, &info, &run);
	cr_assert_float_eq(cJSON_GetObjectItem(r, "locked_sm_clock_hz")->valuedouble, 1.59e9, 1);
	cJSON_Delete(r);
	cJSON *s = collector_record_summary(&l, &info, values, at_lock, 5);
	cJSON *t = cJSON_GetObjectItem(cJSON_GetObjectItem(s, "metrics"), "gpu__time_duration.sum");
	cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(t, "stable")), "runs at the locked clock");
	cJSON_Delete(s);
	/* Two runs at the boost clock: the lock did not hold. */
	double boosted[5] = { 1.59e9, 1.98e9, 1.59e9, 1.98e9, 1.59e9 };
	s = collector_record_summary(&l, &info, values, boosted, 5);
	t = cJSON_GetObjectItem(cJSON_GetObjectItem(s, "metrics"), "gpu__time_duration.sum");
	cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(t, "stable")));
	char *text = cJSON_PrintUnformatted(cJSON_GetObjectItem(t, "reasons"));
	cr_assert(strstr(text, "sm clock off the locked 1590 MHz in 2 of 5 runs (1980 MHz)"), "%s", text);
	free(text);
	cJSON_Delete(s);
	/* No lock: null, and nothing checked. */
	info.clock_control = RP_CLOCK_NONE;
	info.locked_sm_clock_hz = 0;
	r = collector_record_run(&l, &info, &run);
	cr_assert(cJSON_IsNull(cJSON_GetObjectItem(r, "locked_sm_clock_hz")));
	cJSON_Delete(r);
}

Test(records, session_lists_effective_options)
{
	struct rp_options o;
	rp_options_init(&o);
	char *argv[] = { "python3", "train.py", NULL };
	cJSON *s = collector_record_session("0.1.0", 42, "host\xff", argv, 1.7e9, &o);
	char *text = cJSON_PrintUnformatted(s);
	cJSON *back = cJSON_Parse(text);
	cr_assert_not_null(back);
	cr_assert_str_eq(cJSON_GetObjectItem(back, "type")->valuestring, "session");
	cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(back, "argv")), 2);
	cJSON *opts = cJSON_GetObjectItem(back, "options");
	cr_assert_eq(cJSON_GetObjectItem(opts, "runs")->valueint, 5);
	cr_assert(cJSON_IsNull(cJSON_GetObjectItem(opts, "launch_count")));
	cr_assert_str_eq(cJSON_GetObjectItem(back, "start_time")->valuestring, "2023-11-14T22:13:20.000Z");
	cJSON_Delete(back);
	cJSON_Delete(s);
	free(text);
	rp_options_finish(&o);
}

/* Issue 17: the session says which CUPTI measured, after everything it said before: the
 * members before "cupti" are what they were (the text up to it is unchanged). */
Test(records, session_says_which_cupti_measured_after_its_other_members)
{
	struct rp_options o;
	rp_options_init(&o);
	char *argv[] = { "app", NULL };
	cJSON *plain = collector_record_session("0.1.0", 42, "h", argv, 1.7e9, &o);
	collector_record_add_memory_save(plain, "reach", 1024, 0);
	char *before = cJSON_PrintUnformatted(plain);
	collector_record_add_cupti(plain, "/venv/site-packages/nvidia/cu13/lib/libcupti.so.13", "pip",
				   130001);
	char *after = cJSON_PrintUnformatted(plain);
	size_t keep = strlen(before) - 1; /* all but the closing brace */
	cr_assert_eq(strncmp(before, after, keep), 0, "%s\n%s", before, after);
	cr_assert_str_eq(after + keep, ",\"cupti\":{\"path\":\"/venv/site-packages/nvidia/cu13/"
			 "lib/libcupti.so.13\",\"from\":\"pip\",\"version\":130001}}");
	cJSON_Delete(plain);
	free(before);
	free(after);

	/* Unknown parts are null, never left out. */
	cJSON *s = collector_record_add_cupti(cJSON_CreateObject(), NULL, NULL, -1);
	char *text = cJSON_PrintUnformatted(s);
	cr_assert_str_eq(text, "{\"cupti\":{\"path\":null,\"from\":null,\"version\":null}}");
	free(text);
	cJSON_Delete(s);
	rp_options_finish(&o);
}

/* Issue 11: what NVML said of each run, the summary's reasons, thermal wait and --runs
 * auto, and the new options in the session record. */
Test(records, a_run_carries_nvml_fields_and_null_without_nvml)
{
	const char *names[] = { "gpu__time_duration.sum" }, *units[] = { "nanosecond" };
	struct collector_measure_info info = { names, units, 1, 1, 2, RP_CACHE_ALL, RP_CLOCK_NONE,
					       1.98e9 };
	struct collector_launch l = { .index = 1, .kernel = "k", .mangled = "k" };
	double value = 5;
	struct collector_run_nvml nv = { 51, 53, 2619e6, 412.5,
					 STATS_THROTTLE_GPU_IDLE | STATS_THROTTLE_SW_POWER_CAP };
	struct collector_run run = { 0, &value, 1.9e9, 51, 0, &nv };
	cJSON *r = collector_record_run(&l, &info, &run);
	cr_assert_float_eq(cJSON_GetObjectItem(r, "temperature_c")->valuedouble, 51, 0);
	cr_assert_float_eq(cJSON_GetObjectItem(r, "temperature_before_c")->valuedouble, 51, 0);
	cr_assert_float_eq(cJSON_GetObjectItem(r, "temperature_after_c")->valuedouble, 53, 0);
	cr_assert_float_eq(cJSON_GetObjectItem(r, "memory_clock_hz")->valuedouble, 2619e6, 0);
	cr_assert_float_eq(cJSON_GetObjectItem(r, "power_w")->valuedouble, 412.5, 0);
	cJSON *reasons = cJSON_GetObjectItem(r, "throttle_reasons");
	cr_assert_eq(cJSON_GetArraySize(reasons), 2);
	cr_assert_str_eq(cJSON_GetArrayItem(reasons, 0)->valuestring, "gpu_idle");
	cr_assert_str_eq(cJSON_GetArrayItem(reasons, 1)->valuestring, "sw_power_cap");
	cJSON_Delete(r);
	nv.throttle = 0;
	r = collector_record_run(&l, &info, &run);
	cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(r, "throttle_reasons")), 0,
		     "none active: an empty list, not null");
	cJSON_Delete(r);
	run.nvml = NULL;
	r = collector_record_run(&l, &info, &run);
	static const char *const nvml_fields[] = { "temperature_before_c", "temperature_after_c",
		"memory_clock_hz", "power_w", "throttle_reasons" };
	for (size_t i = 0; i < sizeof(nvml_fields) / sizeof(*nvml_fields); i++)
		cr_assert(cJSON_IsNull(cJSON_GetObjectItem(r, nvml_fields[i])), "%s", nvml_fields[i]);
	cr_assert(cJSON_IsNull(cJSON_GetObjectItem(r, "sm_clock_source")));
	cJSON_Delete(r);
	/* A time-only metric set takes the SM clock from NVML (profiler.h): the run says so. */
	info.sm_clock_source = "nvml";
	r = collector_record_run(&l, &info, &run);
	cr_assert_str_eq(cJSON_GetObjectItem(r, "sm_clock_source")->valuestring, "nvml");
	cr_assert_float_eq(cJSON_GetObjectItem(r, "sm_clock_hz")->valuedouble, 1.9e9, 0);
	cJSON_Delete(r);
}

Test(records, the_summary_lists_throttle_reasons_thermal_wait_and_why_runs_stopped)
{
	const char *names[] = { "dram__bytes_read.sum", "gpu__time_duration.sum" };
	const char *units[] = { "byte", "nanosecond" };
	double values[12] = { 1, 100, 1, 100.1, 1, 99.9, 1, 100, 1, 100.2, 1, 99.8 };
	double clocks[6] = { 1.98e9, 1.98e9, 1.98e9, 1.98e9, 1.98e9, 1.98e9 };
	uint64_t throttle[6] = { STATS_THROTTLE_GPU_IDLE, 0, STATS_THROTTLE_HW_THERMAL,
				 STATS_THROTTLE_UNKNOWN, 0, 0 };
	struct collector_adaptive a = { "max_runs", 1.0, 1.7, 1, 3, 0.25 };
	struct collector_thermal th = { "auto", "cooled", 12.5, 80, 70, 90 };
	struct collector_measure_info info = { names, units, 2, 1, 6, RP_CACHE_ALL, RP_CLOCK_NONE,
					       1.98e9, 0, throttle, &a, &th };
	struct collector_launch l = { .index = 1, .kernel = "k", .mangled = "k" };
	cJSON *s = collector_record_summary(&l, &info, values, clocks, 6);
	cr_assert_not_null(s);
	cJSON *reasons = cJSON_GetObjectItem(s, "throttle_reasons");
	cr_assert_eq(cJSON_GetArraySize(reasons), 2);
	cr_assert_str_eq(cJSON_GetArrayItem(reasons, 1)->valuestring, "hw_thermal_slowdown");
	cJSON *time = cJSON_GetObjectItem(cJSON_GetObjectItem(s, "metrics"), "gpu__time_duration.sum");
	cJSON *bytes = cJSON_GetObjectItem(cJSON_GetObjectItem(s, "metrics"), "dram__bytes_read.sum");
	cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(time, "stable")));
	cJSON *why = cJSON_GetObjectItem(time, "reasons");
	cr_assert_eq(cJSON_GetArraySize(why), 2);
	cr_assert_str_eq(cJSON_GetArrayItem(why, 0)->valuestring,
			 "throttled in 1 of 6 runs: hw_thermal_slowdown");
	cr_assert_str_eq(cJSON_GetArrayItem(why, 1)->valuestring,
			 "ci 1.70 % > target 1.00 % (max_runs)");
	cJSON *bytes_why = cJSON_GetObjectItem(bytes, "reasons");
	cr_assert_eq(cJSON_GetArraySize(bytes_why), 1, "the CI target concerns the gating metric");
	cJSON *t = cJSON_GetObjectItem(s, "thermal");
	cr_assert_str_eq(cJSON_GetObjectItem(t, "control")->valuestring, "auto");
	cr_assert_str_eq(cJSON_GetObjectItem(t, "outcome")->valuestring, "cooled");
	cr_assert_float_eq(cJSON_GetObjectItem(t, "waited_s")->valuedouble, 12.5, 0);
	cr_assert_float_eq(cJSON_GetObjectItem(t, "temperature_start_c")->valuedouble, 80, 0);
	cr_assert_float_eq(cJSON_GetObjectItem(t, "temperature_end_c")->valuedouble, 70, 0);
	cr_assert_float_eq(cJSON_GetObjectItem(t, "slowdown_c")->valuedouble, 90, 0);
	cJSON *ra = cJSON_GetObjectItem(s, "runs_auto");
	cr_assert_str_eq(cJSON_GetObjectItem(ra, "stopped")->valuestring, "max_runs");
	cr_assert_str_eq(cJSON_GetObjectItem(ra, "metric")->valuestring, "gpu__time_duration.sum");
	cr_assert_float_eq(cJSON_GetObjectItem(ra, "ci_pct")->valuedouble, 1.7, 0);
	cr_assert_eq(cJSON_GetObjectItem(ra, "batches")->valueint, 3);
	cJSON_Delete(s);

	/* Fixed runs, guard off, no NVML: no such members, reasons unknown. */
	struct collector_measure_info plain = { names, units, 2, 1, 6, RP_CACHE_ALL,
						RP_CLOCK_NONE, 1.98e9 };
	s = collector_record_summary(&l, &plain, values, clocks, 6);
	cr_assert(cJSON_IsNull(cJSON_GetObjectItem(s, "throttle_reasons")));
	cr_assert_null(cJSON_GetObjectItem(s, "thermal"));
	cr_assert_null(cJSON_GetObjectItem(s, "runs_auto"));
	time = cJSON_GetObjectItem(cJSON_GetObjectItem(s, "metrics"), "gpu__time_duration.sum");
	cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(time, "stable")));
	cJSON_Delete(s);
}

/* Only a CI outside the target makes the gating metric unstable, however the runs
 * stopped: "ci 0.04 % > target 1.00 % (max_runs)" was a reason. */
Test(records, a_ci_within_the_target_is_stable_however_the_runs_stopped)
{
	const char *names[] = { "gpu__time_duration.sum" }, *units[] = { "nanosecond" };
	double values[6] = { 100, 100.1, 99.9, 100, 100.05, 99.95 };
	double clocks[6] = { 1.98e9, 1.98e9, 1.98e9, 1.98e9, 1.98e9, 1.98e9 };
	static const char *const how[] = { "max_runs", "time_budget", "error", "target_ci_reached" };
	for (size_t i = 0; i < sizeof(how) / sizeof(*how); i++) {
		struct collector_adaptive a = { how[i], 1.0, 0.04, 0, 2, 0.25 };
		struct collector_measure_info info = { names, units, 1, 1, 6, RP_CACHE_ALL,
						       RP_CLOCK_NONE, 1.98e9, 0, NULL, &a };
		struct collector_launch l = { .index = 1, .kernel = "k", .mangled = "k" };
		cJSON *s = collector_record_summary(&l, &info, values, clocks, 6);
		cJSON *time = cJSON_GetObjectItem(cJSON_GetObjectItem(s, "metrics"), names[0]);
		cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(time, "stable")), "%s", how[i]);
		cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(time, "reasons")), 0, "%s", how[i]);
		cJSON_Delete(s);
		/* An unknown CI is not within the target. */
		a.ci_pct = NAN;
		s = collector_record_summary(&l, &info, values, clocks, 6);
		time = cJSON_GetObjectItem(cJSON_GetObjectItem(s, "metrics"), names[0]);
		cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(time, "stable")), "%s", how[i]);
		cJSON_Delete(s);
	}
}

/* The exit table's "stable k/n" (collector_table_add, from inject/measure/emit.c) recomputed a
 * launch's verdict without --runs auto's CI target, so it could call a launch stable
 * that its summary did not. Both now take the verdict from collector_launch_summarize:
 * for every condition, it is the summary record's. */
Test(records, the_launch_verdict_is_the_summary_records)
{
	const char *names[] = { "gpu__time_duration.sum", "dram__bytes_read.sum" };
	const char *units[] = { "nanosecond", "byte" };
	double values[12] = { 100, 1, 100.1, 1, 99.9, 1, 100, 1, 100.2, 1, 99.8, 1 };
	double clocks[6] = { 1.98e9, 1.98e9, 1.98e9, 1.98e9, 1.98e9, 1.98e9 };
	uint64_t hot[6] = { 0, STATS_THROTTLE_SW_POWER_CAP, 0, 0, 0, 0 };
	struct collector_adaptive missed = { "max_runs", 1.0, 1.7, 0, 3, 0.25 };
	struct collector_adaptive reached = { "target_ci_reached", 1.0, 0.1, 0, 1, 0.25 };
	struct collector_adaptive other = { "max_runs", 1.0, 1.7, 1, 3, 0.25 };
	const struct { const uint64_t *throttle; const struct collector_adaptive *a;
		       double locked; bool stable; } cases[] = {
		{ NULL, NULL, 0, true },
		{ NULL, &reached, 0, true },
		{ NULL, &missed, 0, false },        /* the table said stable */
		{ NULL, &other, 0, true },          /* the target concerns metric 1 */
		{ hot, NULL, 0, false },
		{ NULL, NULL, 1.59e9, false },
	};
	struct collector_launch l = { .index = 1, .kernel = "k", .mangled = "k" };
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		struct collector_measure_info info = { names, units, 2, 1, 6, RP_CACHE_ALL,
						       RP_CLOCK_NONE, 1.98e9, cases[i].locked,
						       cases[i].throttle, cases[i].a };
		double column[6];
		struct stats_summary first;
		collector_launch_summarize(&info, values, clocks, 6, 0, column, &first);
		cr_assert_eq(first.stable == STATS_STABLE_TRUE, cases[i].stable, "case %zu: %s", i,
			     first.reasons);
		for (int r = 0; r < 6; r++)
			cr_assert_float_eq(column[r], values[2 * r], 0, "metric 0's values");
		cJSON *s = collector_record_summary(&l, &info, values, clocks, 6);
		cJSON *m0 = cJSON_GetObjectItem(cJSON_GetObjectItem(s, "metrics"), names[0]);
		cr_assert_eq(cJSON_IsTrue(cJSON_GetObjectItem(m0, "stable")), cases[i].stable,
			     "case %zu", i);
		cJSON_Delete(s);
	}
}

Test(records, session_options_say_runs_auto_and_the_thermal_guard)
{
	struct rp_options o;
	rp_options_init(&o);
	char err[256];
	cr_assert_eq(rp_option_set(&o, RP_OPT_RUNS, "auto", "--runs", err, sizeof(err)), 0);
	char *argv[] = { "app", NULL };
	cJSON *s = collector_record_session("0.1.0", 42, "h", argv, 1.7e9, &o);
	cJSON *opts = cJSON_GetObjectItem(s, "options");
	cr_assert_str_eq(cJSON_GetObjectItem(opts, "runs")->valuestring, "auto");
	cr_assert_float_eq(cJSON_GetObjectItem(opts, "target_ci_pct")->valuedouble, 1, 0);
	cr_assert_eq(cJSON_GetObjectItem(opts, "runs_min")->valueint, 10);
	cr_assert_eq(cJSON_GetObjectItem(opts, "runs_max")->valueint, 200);
	cr_assert_eq(cJSON_GetObjectItem(opts, "runs_batch")->valueint, 10);
	cr_assert_float_eq(cJSON_GetObjectItem(opts, "runs_time_budget_s")->valuedouble, 10, 0);
	cr_assert_str_eq(cJSON_GetObjectItem(opts, "thermal_control")->valuestring, "auto");
	cr_assert_float_eq(cJSON_GetObjectItem(opts, "thermal_wait_c")->valuedouble, 10, 0);
	cr_assert_float_eq(cJSON_GetObjectItem(opts, "thermal_continue_c")->valuedouble, 20, 0);
	cr_assert_eq(cJSON_GetObjectItem(opts, "thermal_timeout_s")->valueint, 30);
	cJSON_Delete(s);
	rp_options_finish(&o);
}

#define WRITERS 4
#define LINES 500

struct writer { int fd; int id; };

static void *write_lines(void *arg)
{
	struct writer *w = arg;
	char pad[3000];
	memset(pad, 'x', sizeof(pad) - 1);
	pad[sizeof(pad) - 1] = '\0';
	for (int i = 0; i < LINES; i++) {
		cJSON *o = collector_record_message("warning", pad, "writer", "w");
		cJSON_AddNumberToObject(o, "id", w->id);
		cJSON_AddNumberToObject(o, "i", i);
		cr_assert_eq(collector_jsonl_write(w->fd, o), 0);
		cJSON_Delete(o);
	}
	return NULL;
}

Test(jsonl, lines_stay_whole_under_threads_and_processes)
{
	char path[] = "/tmp/rangeprof-jsonl-XXXXXX";
	int tmp = mkstemp(path);
	close(tmp);
	char err[256];
	pid_t child = fork();
	if (child == 0) {
		int fd = collector_jsonl_open(path, err, sizeof(err));
		struct writer w = { fd, 100 };
		write_lines(&w);
		_exit(0);
	}
	int fd = collector_jsonl_open(path, err, sizeof(err));
	cr_assert_geq(fd, 0, "%s", err);
	pthread_t t[WRITERS];
	struct writer w[WRITERS];
	for (int i = 0; i < WRITERS; i++) {
		w[i] = (struct writer){ fd, i };
		pthread_create(&t[i], NULL, write_lines, &w[i]);
	}
	for (int i = 0; i < WRITERS; i++)
		pthread_join(t[i], NULL);
	int status;
	waitpid(child, &status, 0);
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;
	int count = 0;
	while (getline(&line, &cap, f) > 0) {
		cJSON *o = cJSON_Parse(line);
		cr_assert_not_null(o, "line %d is not whole JSON", count);
		cJSON_Delete(o);
		count++;
	}
	cr_assert_eq(count, (WRITERS + 1) * LINES);
	free(line);
	fclose(f);
	/* Appending never truncates what was written before. */
	int again = collector_jsonl_open(path, err, sizeof(err));
	cr_assert_geq(again, 0);
	close(again);
	f = fopen(path, "r");
	fseek(f, 0, SEEK_END);
	cr_assert_gt(ftell(f), 0);
	fclose(f);
	unlink(path);
	cr_assert_lt(collector_jsonl_open("/nonexistent-dir/x.jsonl", err, sizeof(err)), 0);
	cr_assert_str_eq(err, "cannot create output '/nonexistent-dir/x.jsonl': No such file or directory");
}

Test(records, the_utf8_check_itself_refuses_invalid_text)
{
	cJSON *o;
	/* cJSON_Parse alone accepts this. */
	cr_assert_not(valid_utf8_and_parses("\"\xff\"", &o));
	cr_assert_not(valid_utf8_and_parses("\"\xed\xa0\x80\"", &o));
	cr_assert(valid_utf8_and_parses("\"\xc3\xa9\"", &o));
	cJSON_Delete(o);
}

Test(records, a_one_megabyte_name_of_any_bytes_gives_valid_json)
{
	size_t n = 1 << 20;
	char *big = malloc(n + 1);
	for (size_t i = 0; i < n; i++)
		big[i] = (char)(1 + (i * 7919) % 255); /* every byte value but NUL */
	big[n] = '\0';
	cJSON *rec = collector_record_message("warning", big, "kernel", big);
	char *text = cJSON_PrintUnformatted(rec);
	cJSON *back;
	cr_assert(valid_utf8_and_parses(text, &back));
	cr_assert_null(strchr(text, '\n'));
	cJSON_Delete(back);
	free(text);
	cJSON_Delete(rec);
	free(big);
}

/* Issue 9: a full disk. The write fails whole with -ENOSPC; nothing is half written. */
Test(jsonl, a_full_disk_is_reported_not_ignored)
{
	int fd = open("/dev/full", O_WRONLY);
	if (fd < 0)
		cr_skip_test("no /dev/full here");
	cJSON *o = collector_record_message("warning", "disk", NULL, NULL);
	cr_assert_eq(collector_jsonl_write(fd, o), -ENOSPC);
	cJSON_Delete(o);
	close(fd);
}

static mode_t created_mode(mode_t mask)
{
	char dir[] = "/tmp/rangeprof-mode-XXXXXX", path[64], err[256];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/r.jsonl", dir);
	mode_t old = umask(mask);
	int fd = collector_jsonl_open(path, err, sizeof(err));
	umask(old);
	cr_assert_geq(fd, 0, "%s", err);
	close(fd);
	struct stat st;
	stat(path, &st);
	unlink(path);
	rmdir(dir);
	return st.st_mode & 07777;
}

Test(jsonl, new_files_are_0644_under_the_umask_and_existing_ones_appended)
{
	cr_assert_eq(created_mode(022), 0644);
	cr_assert_eq(created_mode(077), 0600);
	char path[] = "/tmp/rangeprof-append-XXXXXX", err[256];
	int tmp = mkstemp(path);
	cr_assert_eq(write(tmp, "{\"type\":\"old\"}\n", 15), 15);
	close(tmp);
	int fd = collector_jsonl_open(path, err, sizeof(err));
	cJSON *o = collector_record_message("warning", "new", NULL, NULL);
	cr_assert_eq(collector_jsonl_write(fd, o), 0);
	cJSON_Delete(o);
	close(fd);
	FILE *f = fopen(path, "r");
	char line[256];
	cr_assert_not_null(fgets(line, sizeof(line), f));
	cr_assert_str_eq(line, "{\"type\":\"old\"}\n", "never truncated");
	cr_assert_not_null(fgets(line, sizeof(line), f));
	cr_assert(strstr(line, "\"new\""));
	fclose(f);
	unlink(path);
}

Test(jsonl, a_fifo_without_reader_fails_at_once_instead_of_blocking)
{
	char dir[] = "/tmp/rangeprof-fifo-XXXXXX", path[64], err[256];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/fifo", dir);
	cr_assert_eq(mkfifo(path, 0600), 0);
	cr_assert_eq(collector_jsonl_open(path, err, sizeof(err)), -ENXIO);
	unlink(path);
	rmdir(dir);
}

Test(records, a_stack_deeper_than_the_limit_is_listed_outermost_first_and_counted)
{
	size_t depth = 100000;
	struct collector_nvtx_range *r = calloc(depth, sizeof(*r));
	for (size_t i = 0; i < depth; i++)
		r[i] = (struct collector_nvtx_range){ .domain = "", .text = i ? "inner" : "outer" };
	struct collector_launch l = { .kernel = "k", .mangled = "k", .nvtx = r,
				      .nvtx_count = depth, .nvtx_path = "outer/inner" };
	const char *names[] = { "gpu__time_duration.sum" }, *units[] = { "nanosecond" };
	struct collector_measure_info info = { names, units, 1, 1, 1, RP_CACHE_ALL,
					       RP_CLOCK_NONE, 1.98e9 };
	double value = 1;
	struct collector_run run = { 0, &value, 1.9e9, NAN, 1.7e9 };
	cJSON *rec = collector_record_run(&l, &info, &run);
	cJSON *nvtx = cJSON_GetObjectItem(rec, "nvtx");
	cr_assert_eq(cJSON_GetArraySize(nvtx), COLLECTOR_MAX_NVTX);
	cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(nvtx, 0), "text")->valuestring,
			 "outer");
	cr_assert_eq(cJSON_GetObjectItem(rec, "nvtx_omitted")->valuedouble,
		     (double)(depth - COLLECTOR_MAX_NVTX));
	cJSON_Delete(rec);
	free(r);
}

Test(records, save_and_cost_say_how_memory_was_saved)
{
	struct collector_cost cost = { { 0 } };
	cost.ms[COST_STOP] = 6.5;
	cost.ms[COST_TOTAL] = 12.25;
	struct collector_save_info reach = { .strategy = "reach", .why = "verified \"now\"",
					     .reach = true, .bytes = 4096, .ranges = 2,
					     .verified_now = true, .verified_bytes = 1 << 20 };
	cJSON *o = collector_record_add_save(cJSON_CreateObject(), &reach, &cost);
	char *text = cJSON_PrintUnformatted(o);
	cJSON *back = cJSON_Parse(text);
	cJSON *save = cJSON_GetObjectItem(back, "save");
	cr_assert_str_eq(cJSON_GetObjectItem(save, "strategy")->valuestring, "reach");
	cr_assert_str_eq(cJSON_GetObjectItem(save, "why")->valuestring, "verified \"now\"");
	cr_assert_eq(cJSON_GetObjectItem(save, "bytes")->valuedouble, 4096);
	cr_assert_eq(cJSON_GetObjectItem(save, "verified_bytes")->valuedouble, 1 << 20);
	cJSON *ms = cJSON_GetObjectItem(back, "cost_ms");
	cr_assert_eq(cJSON_GetObjectItem(ms, "stop")->valuedouble, 6.5);
	cr_assert_eq(cJSON_GetObjectItem(ms, "total")->valuedouble, 12.25);
	cr_assert_null(cJSON_GetObjectItem(ms, "save"), "phases that took no time are left out");
	free(text);
	cJSON_Delete(back);
	cJSON_Delete(o);
	/* The full checkpoint has no reach figures. */
	struct collector_save_info full = { .strategy = "checkpoint", .why = "--memory-save" };
	o = collector_record_add_save(cJSON_CreateObject(), &full, NULL);
	save = cJSON_GetObjectItem(o, "save");
	cr_assert_null(cJSON_GetObjectItem(save, "bytes"));
	cr_assert_null(cJSON_GetObjectItem(o, "cost_ms"));
	cJSON_Delete(o);
	cr_assert_null(collector_record_add_save(NULL, &full, NULL));
	o = collector_record_add_memory_save(cJSON_CreateObject(), "reach", 1 << 30, 512);
	cJSON *m = cJSON_GetObjectItem(o, "memory_save");
	cr_assert_str_eq(cJSON_GetObjectItem(m, "strategy")->valuestring, "reach");
	cr_assert_eq(cJSON_GetObjectItem(m, "host_bytes_max")->valuedouble, 1 << 30);
	cr_assert_eq(cJSON_GetObjectItem(m, "checkpoint_host_reserve_mb")->valuedouble, 512);
	cJSON_Delete(o);
}

/* Issue 8: a kernel node names its graph; a whole graph launch is workload "graph"; a
 * plain launch has graph null. */
Test(records, graph_launches_say_what_they_were)
{
	const char *names[] = { "gpu__time_duration.sum" }, *units[] = { "nanosecond" };
	struct collector_measure_info info = { names, units, 1, 1, 1, RP_CACHE_ALL, RP_CLOCK_NONE,
					       1.98e9 };
	double value = 5;
	struct collector_run run = { 0, &value, 1.9e9, 51, 0, NULL };
	struct collector_launch plain = { .index = 1, .kernel = "k", .mangled = "k" };
	cJSON *r = collector_record_run(&plain, &info, &run);
	cr_assert_str_eq(cJSON_GetObjectItem(r, "workload")->valuestring, "kernel");
	cr_assert(cJSON_IsNull(cJSON_GetObjectItem(r, "graph")));
	cJSON_Delete(r);
	struct collector_graph node = { 3, 1, 2, 7 };
	struct collector_launch in_graph = { .index = 9, .kernel = "k", .mangled = "k",
					     .graph = &node };
	r = collector_record_run(&in_graph, &info, &run);
	cr_assert_str_eq(cJSON_GetObjectItem(r, "workload")->valuestring, "kernel");
	cJSON *g = cJSON_GetObjectItem(r, "graph");
	cr_assert_eq(cJSON_GetObjectItem(g, "id")->valuedouble, 3);
	cr_assert_eq(cJSON_GetObjectItem(g, "launch")->valuedouble, 1);
	cr_assert_eq(cJSON_GetObjectItem(g, "node")->valuedouble, 2);
	cr_assert_eq(cJSON_GetObjectItem(g, "nodes")->valuedouble, 7);
	cJSON_Delete(r);
	struct collector_graph whole = { 3, 1, -1, 7 };
	struct collector_launch graph = { .index = 9, .kernel = "graph 3", .mangled = "graph 3",
					  .graph = &whole };
	r = collector_record_run(&graph, &info, &run);
	cr_assert_str_eq(cJSON_GetObjectItem(r, "workload")->valuestring, "graph");
	cr_assert(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "graph"), "node")));
	cJSON_Delete(r);
}

/* Issue 20: a whole NVTX range measured as one workload (--replay-mode range) is workload
 * "range", with a "range" object, grid, block and shared_mem_bytes null and graph null;
 * the other members are where they are for a kernel, in the same order. Plain launches
 * and graph launches are as they were. */
Test(records, a_range_workload_names_its_range_kernels_and_streams)
{
	const char *names[] = { "gpu__time_duration.sum" }, *units[] = { "nanosecond" };
	struct collector_measure_info info = { names, units, 1, 1, 3, RP_CACHE_ALL, RP_CLOCK_NONE,
					       1.98e9 };
	double values[3] = { 50, 51, 52 }, clocks[3] = { 1.9e9, 1.9e9, 1.9e9 };
	struct collector_run run = { 1, values + 1, 1.9e9, 51, 0, NULL };
	const char *kernels[] = { "add_one(float*, int)", "scale_add(float*, float const*, float)",
				  "add_one(float*, int)" };
	const uint64_t streams[] = { 7, 13 };
	struct collector_range range = { .name = "step", .kernels = 3, .kernel_names = kernels,
					 .memsets = 1, .copies = 2, .graph_launches = 0,
					 .event_ops = 4, .syncs = 1, .streams = streams,
					 .stream_count = 2 };
	struct collector_nvtx_range open[] = { { .domain = "", .text = "outer" },
					       { .domain = "", .text = "step" } };
	struct collector_launch l = { .index = 12, .kernel = "3 kernels: add_one, scale_add, add_one",
				      .mangled = "step", .device = 0, .context = 1, .stream = 7,
				      .nvtx = open, .nvtx_count = 2, .nvtx_path = "outer/step",
				      .range = &range };
	cJSON *recs[2] = { collector_record_run(&l, &info, &run),
			   collector_record_summary(&l, &info, values, clocks, 3) };
	for (int i = 0; i < 2; i++) {
		char *text = cJSON_PrintUnformatted(recs[i]);
		cJSON *r = cJSON_Parse(text);
		cr_assert_not_null(r);
		cr_assert_str_eq(cJSON_GetObjectItem(r, "workload")->valuestring, "range");
		cr_assert_str_eq(cJSON_GetObjectItem(r, "kernel")->valuestring,
				 "3 kernels: add_one, scale_add, add_one");
		cr_assert_str_eq(cJSON_GetObjectItem(r, "nvtx_path")->valuestring, "outer/step");
		cr_assert_eq(cJSON_GetObjectItem(r, "launch")->valuedouble, 12);
		cr_assert_eq(cJSON_GetObjectItem(r, "stream")->valuedouble, 7);
		for (const char *const *k = (const char *const[]){ "grid", "block", "shared_mem_bytes",
								   "graph", NULL }; *k; k++)
			cr_assert(cJSON_IsNull(cJSON_GetObjectItem(r, *k)), "%s is not null", *k);
		cJSON *o = cJSON_GetObjectItem(r, "range");
		cr_assert(cJSON_IsObject(o));
		cr_assert_str_eq(cJSON_GetObjectItem(o, "name")->valuestring, "step");
		cr_assert_eq(cJSON_GetObjectItem(o, "kernels")->valuedouble, 3);
		cJSON *kn = cJSON_GetObjectItem(o, "kernel_names");
		cr_assert_eq(cJSON_GetArraySize(kn), 3);
		for (int k = 0; k < 3; k++)
			cr_assert_str_eq(cJSON_GetArrayItem(kn, k)->valuestring, kernels[k]);
		cr_assert_eq(cJSON_GetObjectItem(o, "memsets")->valuedouble, 1);
		cr_assert_eq(cJSON_GetObjectItem(o, "copies")->valuedouble, 2);
		cr_assert_eq(cJSON_GetObjectItem(o, "graph_launches")->valuedouble, 0);
		cr_assert_eq(cJSON_GetObjectItem(o, "event_ops")->valuedouble, 4);
		cr_assert_eq(cJSON_GetObjectItem(o, "syncs")->valuedouble, 1);
		cJSON *st = cJSON_GetObjectItem(o, "streams");
		cr_assert_eq(cJSON_GetArraySize(st), 2);
		cr_assert_eq(cJSON_GetArrayItem(st, 0)->valuedouble, 7);
		cr_assert_eq(cJSON_GetArrayItem(st, 1)->valuedouble, 13);
		/* The members' order: a kernel's, with "range" right after "graph". */
		static const char *const order[] = { "type", "launch", "runs", "kernel", "mangled",
			"device", "context", "stream", "grid", "block", "shared_mem_bytes", "nvtx",
			"nvtx_path", "workload", "graph", "range", "cache_control", "clock_control",
			"passes" };
		cJSON *m = r->child;
		for (size_t k = 0; k < sizeof(order) / sizeof(order[0]); k++, m = m->next) {
			cr_assert_not_null(m, "record ends before %s", order[k]);
			cr_assert_str_eq(m->string, order[k]);
		}
		if (i == 1) {  /* the summary: statistics of the range's runs as of a kernel's */
			cJSON *t = cJSON_GetObjectItem(cJSON_GetObjectItem(r, "metrics"),
						       "gpu__time_duration.sum");
			cr_assert_float_eq(cJSON_GetObjectItem(t, "mean")->valuedouble, 51, 1e-9);
			cr_assert_eq(cJSON_GetObjectItem(t, "n")->valuedouble, 3);
		} else {
			cr_assert_eq(cJSON_GetObjectItem(r, "run")->valuedouble, 1);
		}
		cJSON_Delete(r);
		free(text);
		cJSON_Delete(recs[i]);
	}

	/* A range with no kernel and no stream list: empty arrays, not a crash; a NULL name
	 * is null. */
	struct collector_range empty = { .name = NULL };
	struct collector_launch bare = { .index = 1, .kernel = "0 kernels", .mangled = "",
					 .range = &empty };
	cJSON *r = collector_record_run(&bare, &info, &run);
	cr_assert_not_null(r);
	cJSON *o = cJSON_GetObjectItem(r, "range");
	cr_assert(cJSON_IsNull(cJSON_GetObjectItem(o, "name")));
	cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(o, "kernel_names")), 0);
	cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(o, "streams")), 0);
	cJSON_Delete(r);
}

/* Plain and graph launches have no "range" member and keep their grid and workload. */
Test(records, plain_and_graph_launches_have_no_range_member)
{
	const char *names[] = { "gpu__time_duration.sum" }, *units[] = { "nanosecond" };
	struct collector_measure_info info = { names, units, 1, 1, 1, RP_CACHE_ALL, RP_CLOCK_NONE,
					       1.98e9 };
	double value = 5;
	struct collector_run run = { 0, &value, 1.9e9, 51, 0, NULL };
	struct collector_graph whole = { 3, 1, -1, 7 }, node = { 3, 1, 2, 7 };
	struct collector_launch ls[3] = {
		{ .index = 1, .kernel = "k", .mangled = "k", .grid = { 2, 1, 1 }, .block = { 32, 1, 1 } },
		{ .index = 2, .kernel = "k", .mangled = "k", .grid = { 2, 1, 1 }, .block = { 32, 1, 1 },
		  .graph = &node },
		{ .index = 3, .kernel = "graph 3", .mangled = "graph 3", .graph = &whole },
	};
	const char *workload[3] = { "kernel", "kernel", "graph" };
	for (int i = 0; i < 3; i++) {
		cJSON *r = collector_record_run(&ls[i], &info, &run);
		cr_assert_null(cJSON_GetObjectItem(r, "range"));
		cr_assert_str_eq(cJSON_GetObjectItem(r, "workload")->valuestring, workload[i]);
		cr_assert(cJSON_IsArray(cJSON_GetObjectItem(r, "grid")));
		cr_assert(cJSON_IsNumber(cJSON_GetObjectItem(r, "shared_mem_bytes")));
		/* "graph" is followed by cache_control, as before. */
		cr_assert_str_eq(cJSON_GetObjectItem(r, "graph")->next->string, "cache_control");
		cJSON_Delete(r);
	}
}

Test(records, session_options_say_the_replay_mode)
{
	struct rp_options o;
	rp_options_init(&o);
	char *argv[] = { "app", NULL };
	cJSON *s = collector_record_session("0.1.0", 42, "h", argv, 1.7e9, &o);
	cJSON *opts = cJSON_GetObjectItem(s, "options");
	cr_assert_str_eq(cJSON_GetObjectItem(opts, "replay_mode")->valuestring, "kernel");
	cr_assert_str_eq(cJSON_GetObjectItem(opts, "graph_profiling")->next->string, "replay_mode");
	cJSON_Delete(s);
	char err[256];
	cr_assert_eq(rp_option_set(&o, RP_OPT_REPLAY_MODE, "range", "--replay-mode", err,
				   sizeof(err)), 0, "%s", err);
	s = collector_record_session("0.1.0", 42, "h", argv, 1.7e9, &o);
	opts = cJSON_GetObjectItem(s, "options");
	cr_assert_str_eq(cJSON_GetObjectItem(opts, "replay_mode")->valuestring, "range");
	cJSON_Delete(s);
	rp_options_finish(&o);
}
