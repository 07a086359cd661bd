/* tests/unit/collector/stats_test.c - the summary statistics of doc/records.md. Expected
 * values are computed here from their definitions (or are Student-t table values), not
 * copied from the code under test. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "collector/stats.h"

Test(stats, ci95_uses_student_t)
{
	cr_assert_float_eq(stats_t975(1), 12.7062, 1e-4);
	cr_assert_float_eq(stats_t975(4), 2.7764, 1e-4);
	cr_assert_float_eq(stats_t975(19), 2.0930, 1e-4);
	cr_assert_float_eq(stats_t975(60), 2.0003, 2e-4);  /* published table value */
	cr_assert_float_eq(stats_t975(120), 1.9799, 2e-4);
	double v[] = { 10, 12, 11, 13, 14 };
	struct stats_summary s;
	stats_summarize(v, NULL, 5, &s);
	double mean = 12, sd = sqrt(10.0 / 4);
	cr_assert_float_eq(s.mean, mean, 1e-12);
	cr_assert_float_eq(s.stddev, sd, 1e-12);
	cr_assert_float_eq(s.ci95_low, mean - 2.7764 * sd / sqrt(5), 1e-3);
	cr_assert_float_eq(s.ci95_high, mean + 2.7764 * sd / sqrt(5), 1e-3);
	cr_assert_float_eq(s.median, 12, 1e-12);
	cr_assert_float_eq(s.min, 10, 0);
	cr_assert_float_eq(s.max, 14, 0);
	cr_assert_float_eq(s.rsd_pct, 100 * sd / mean, 1e-9);
}

Test(stats, median_of_even_count_is_the_middle_mean)
{
	double v[] = { 4, 1, 3, 2 };
	struct stats_summary s;
	stats_summarize(v, NULL, 4, &s);
	cr_assert_float_eq(s.median, 2.5, 1e-12);
}

Test(stats, stable_needs_five_runs_low_rsd_and_a_steady_clock)
{
	double v[] = { 100, 100.5, 99.5, 100.2, 99.8 };
	double steady[] = { 1.98e9, 1.97e9, 1.98e9, 1.96e9, 1.98e9 };
	double drifting[] = { 1.98e9, 1.5e9, 1.98e9, 1.98e9, 1.98e9 };
	struct stats_summary s;
	stats_summarize(v, steady, 5, &s);
	cr_assert_eq(s.stable, STATS_STABLE_TRUE);
	cr_assert_str_eq(s.reasons, "");
	stats_summarize(v, drifting, 5, &s);
	cr_assert_eq(s.stable, STATS_STABLE_FALSE);
	cr_assert(strstr(s.reasons, "sm clock varied"), "%s", s.reasons);
	stats_summarize(v, steady, 4, &s);
	cr_assert_eq(s.stable, STATS_STABLE_FALSE);
	cr_assert(strstr(s.reasons, "n = 4 < 5"), "%s", s.reasons);
	double noisy[] = { 100, 110, 90, 105, 95 };
	stats_summarize(noisy, steady, 5, &s);
	cr_assert_eq(s.stable, STATS_STABLE_FALSE);
	cr_assert(strstr(s.reasons, "rsd"), "%s", s.reasons);
}

/* A time-only metric set takes the clock from NVML; where NVML cannot give it (a MIG
 * instance, no libnvidia-ml) every clock is NaN. Unknown is not a failure, as unknown
 * throttle reasons are not: "sm clock unknown" made every such launch unstable. The
 * spread is checked over the clocks that are known. */
Test(stats, an_unknown_clock_is_not_a_failure_and_known_ones_are_checked)
{
	double v[] = { 100, 100.5, 99.5, 100.2, 99.8 };
	double unknown[] = { NAN, NAN, NAN, NAN, NAN };
	double some[] = { 1.98e9, NAN, 1.5e9, NAN, 1.98e9 };
	double some_steady[] = { 1.98e9, NAN, 1.97e9, NAN, 1.98e9 };
	struct stats_summary s;
	stats_summarize(v, unknown, 5, &s);
	cr_assert_eq(s.stable, STATS_STABLE_TRUE, "%s", s.reasons);
	cr_assert_str_eq(s.reasons, "");
	stats_summarize(v, some, 5, &s);
	cr_assert_eq(s.stable, STATS_STABLE_FALSE);
	cr_assert_str_eq(s.reasons, "sm clock varied 32.0 % > 5 %");
	stats_summarize(v, some_steady, 5, &s);
	cr_assert_eq(s.stable, STATS_STABLE_TRUE, "%s", s.reasons);
}

/* The interval both the summary and --runs auto's stopping rule use (adaptive.c had its
 * own copy of the computation). */
Test(stats, the_interval_is_the_summarys)
{
	double v[] = { 100, 100.5, 99.5, 100.2, 99.8, 101 };
	struct stats_summary s;
	stats_summarize(v, NULL, 6, &s);
	double mean, sd, half;
	stats_interval(v, 6, &mean, &sd, &half);
	cr_assert_float_eq(mean, s.mean, 0);
	cr_assert_float_eq(sd, s.stddev, 0);
	cr_assert_float_eq(mean - half, s.ci95_low, 0);
	cr_assert_float_eq(mean + half, s.ci95_high, 0);
	cr_assert_float_eq(half, stats_t975(5) * sd / sqrt(6.0), 1e-12);
	stats_interval(v, 1, &mean, &sd, &half);
	cr_assert_float_eq(mean, 100, 0);
	cr_assert(isnan(sd) && isnan(half), "one sample has no spread");
}

Test(stats, one_run_is_null_stability)
{
	double v[] = { 5 };
	struct stats_summary s;
	stats_summarize(v, NULL, 1, &s);
	cr_assert_eq(s.stable, STATS_STABLE_NULL);
	cr_assert(isnan(s.stddev));
	cr_assert_float_eq(s.mean, 5, 0);
}

/* Issue 11: the runs' NVML clocks-event reasons. */
Test(stats, throttle_reasons_are_named_as_nvml_numbers_them)
{
	const char *names[16];
	size_t n = stats_throttle_names(0x1ff, names, 16);
	cr_assert_eq(n, 9);
	const char *expected[] = { "gpu_idle", "applications_clocks_setting", "sw_power_cap",
				   "hw_slowdown", "sync_boost", "sw_thermal_slowdown",
				   "hw_thermal_slowdown", "hw_power_brake_slowdown",
				   "display_clocks_setting" };
	for (size_t i = 0; i < n; i++)
		cr_assert_str_eq(names[i], expected[i]);
	cr_assert_eq(stats_throttle_names(STATS_THROTTLE_UNKNOWN, names, 16), 0);
	cr_assert_eq(stats_throttle_names(0x200, names, 16), 0, "unknown bits are left out");
	cr_assert_eq(stats_throttle_names(0x28, names, 1), 1, "at most max");
	cr_assert_str_eq(names[0], "hw_slowdown");
}

Test(stats, a_thermal_power_or_slowdown_reason_in_any_run_makes_it_unstable)
{
	double v[] = { 100, 100.5, 99.5, 100.2, 99.8 };
	double clock[] = { 1.98e9, 1.98e9, 1.98e9, 1.98e9, 1.98e9 };
	uint64_t idle[] = { STATS_THROTTLE_GPU_IDLE, 0, STATS_THROTTLE_APPLICATIONS_CLOCKS, 0,
			    STATS_THROTTLE_UNKNOWN };
	uint64_t hot[] = { 0, STATS_THROTTLE_SW_THERMAL | STATS_THROTTLE_GPU_IDLE, 0,
			   STATS_THROTTLE_SW_POWER_CAP, STATS_THROTTLE_SW_THERMAL };
	struct stats_summary s;
	stats_summarize(v, clock, 5, &s);
	stats_check_throttle(&s, idle, 5);
	cr_assert_eq(s.stable, STATS_STABLE_TRUE, "idle, application clocks, unknown: %s",
		     s.reasons);
	stats_check_throttle(&s, NULL, 5);
	cr_assert_eq(s.stable, STATS_STABLE_TRUE, "no NVML is not a failure");
	stats_check_throttle(&s, hot, 5);
	cr_assert_eq(s.stable, STATS_STABLE_FALSE);
	cr_assert_str_eq(s.reasons, "throttled in 3 of 5 runs: sw_power_cap, sw_thermal_slowdown");
	uint64_t brake[] = { STATS_THROTTLE_HW_POWER_BRAKE, STATS_THROTTLE_HW_THERMAL,
			     STATS_THROTTLE_HW_SLOWDOWN, 0, 0 };
	stats_summarize(v, clock, 5, &s);
	stats_check_throttle(&s, brake, 5);
	cr_assert_str_eq(s.reasons, "throttled in 3 of 5 runs: hw_slowdown, hw_thermal_slowdown, "
			 "hw_power_brake_slowdown");
}

Test(stats, the_throttle_reason_joins_the_other_failed_conditions)
{
	double v[] = { 100, 110, 90, 105, 95 };
	double clock[] = { 1.98e9, 1.7e9, 1.98e9, 1.98e9, 1.98e9 };
	uint64_t hot[] = { STATS_THROTTLE_HW_SLOWDOWN, 0, 0, 0, 0 };
	struct stats_summary s;
	stats_summarize(v, clock, 5, &s);
	stats_check_throttle(&s, hot, 5);
	cr_assert_eq(s.stable, STATS_STABLE_FALSE);
	cr_assert(strstr(s.reasons, "rsd "), "%s", s.reasons);
	cr_assert(strstr(s.reasons, "sm clock varied 16.5 % > 5 %"), "%s", s.reasons);
	cr_assert(strstr(s.reasons, "; throttled in 1 of 5 runs: hw_slowdown"), "%s", s.reasons);
	/* One run has no verdict to spoil. */
	stats_summarize(v, clock, 1, &s);
	stats_check_throttle(&s, hot, 1);
	stats_fail(&s, "anything");
	cr_assert_eq(s.stable, STATS_STABLE_NULL);
	cr_assert_str_eq(s.reasons, "");
}

/* The drift condition: a steady trend over the runs. The noise is deterministic (a
 * linear congruential generator, uniform in [-1.5, 1.5] around 100: RSD ~0.9 %) so that
 * the expected verdicts do not depend on luck. */
#define DRIFT_RUNS 200

static void noisy_series(double *v, size_t n, double per_run)
{
	uint32_t x = 1;
	for (size_t i = 0; i < n; i++) {
		x = 1664525u * x + 1013904223u;
		v[i] = 100 + per_run * (double)i + 1.5 * ((double)x / 2147483648.0 - 1);
	}
}

Test(stats, steady_noise_is_not_drift)
{
	double v[DRIFT_RUNS];
	noisy_series(v, DRIFT_RUNS, 0);
	struct stats_summary s;
	stats_summarize(v, NULL, DRIFT_RUNS, &s);
	cr_assert(s.rsd_pct > 0.5 && s.rsd_pct < 1.5, "rsd %g", s.rsd_pct);
	cr_assert(fabs(s.drift_pct) < 0.5, "drift %g", s.drift_pct);
	cr_assert_eq(s.stable, STATS_STABLE_TRUE, "%s", s.reasons);
	cr_assert_str_eq(s.reasons, "");
}

Test(stats, a_linear_drift_under_the_rsd_bound_is_not_stable)
{
	/* +0.03 per run on 100: 5.97 from the first run to the last, 5.80 % of the mean. */
	double v[DRIFT_RUNS];
	noisy_series(v, DRIFT_RUNS, 0.03);
	double total_pct = 100 * 0.03 * (DRIFT_RUNS - 1) / (100 + 0.03 * (DRIFT_RUNS - 1) / 2);
	struct stats_summary s;
	stats_summarize(v, NULL, DRIFT_RUNS, &s);
	cr_assert(s.rsd_pct < 2, "rsd %g: the RSD condition alone would pass it", s.rsd_pct);
	cr_assert_float_eq(s.drift_pct, total_pct, 0.5);
	cr_assert_eq(s.stable, STATS_STABLE_FALSE);
	cr_assert_str_eq(s.reasons, "drifted +5.8 % over 200 runs");
	/* Downwards is drift too, and says so with its sign. */
	for (size_t i = 0; i < DRIFT_RUNS / 2; i++) {
		double t = v[i];
		v[i] = v[DRIFT_RUNS - 1 - i];
		v[DRIFT_RUNS - 1 - i] = t;
	}
	stats_summarize(v, NULL, DRIFT_RUNS, &s);
	cr_assert_float_eq(s.drift_pct, -total_pct, 0.5);
	cr_assert_str_eq(s.reasons, "drifted -5.8 % over 200 runs");
	/* A negative metric drifts too: drift_pct's sign, relative to a negative mean, is not
	 * the slope's. */
	for (size_t i = 0; i < DRIFT_RUNS; i++)
		v[i] = -v[i];
	stats_summarize(v, NULL, DRIFT_RUNS, &s);
	cr_assert_eq(s.stable, STATS_STABLE_FALSE);
	cr_assert_not_null(strstr(s.reasons, "drifted"), "%s", s.reasons);
}

Test(stats, a_step_halfway_is_drift)
{
	/* 100 runs at 100 and 100 at 103: RSD 1.48 %, but the mean depends on when the runs
	 * stopped. The line's slope is 3 * 5000 / (200 (200^2 - 1) / 12) per run. */
	double v[DRIFT_RUNS];
	for (size_t i = 0; i < DRIFT_RUNS; i++)
		v[i] = i < DRIFT_RUNS / 2 ? 100 : 103;
	double slope = 3.0 * 5000 / (200.0 * (200.0 * 200 - 1) / 12);
	struct stats_summary s;
	stats_summarize(v, NULL, DRIFT_RUNS, &s);
	cr_assert(s.rsd_pct < 2, "rsd %g", s.rsd_pct);
	cr_assert_float_eq(s.drift_pct, 100 * slope * 199 / 101.5, 1e-9);
	cr_assert_eq(s.stable, STATS_STABLE_FALSE);
	cr_assert_str_eq(s.reasons, "drifted +4.4 % over 200 runs");
}

Test(stats, drift_needs_ten_runs)
{
	/* A perfect line, 100 + 0.5 i: 4.5 over 10 runs (4.4 % of the mean), RSD 1.5 %. Its
	 * residuals are exactly zero, which must read as significant, not as 0 / 0. */
	double v[10];
	for (size_t i = 0; i < 10; i++)
		v[i] = 100 + 0.5 * (double)i;
	struct stats_summary s;
	stats_summarize(v, NULL, 9, &s);
	cr_assert(isnan(s.drift_pct));
	cr_assert_eq(s.stable, STATS_STABLE_TRUE, "%s", s.reasons);
	cr_assert_null(strstr(s.reasons, "drifted"));
	stats_summarize(v, NULL, 10, &s);
	cr_assert_float_eq(s.drift_pct, 100 * 4.5 / 102.25, 1e-9);
	cr_assert_eq(s.stable, STATS_STABLE_FALSE);
	cr_assert_str_eq(s.reasons, "drifted +4.4 % over 10 runs");
}

Test(stats, slow_first_runs_are_not_drift)
{
	/* Two runs 5 % slow, then 18 steady ones (+-0.2): the least-squares slope is
	 * significant and about -2.2 %, but the runs after the first two do not move. */
	double v[20] = { 105, 104 };
	for (size_t i = 2; i < 20; i++)
		v[i] = 100 + (i % 2 ? 0.2 : -0.2);
	struct stats_summary s;
	stats_summarize(v, NULL, 20, &s);
	cr_assert(s.drift_pct < -2, "drift %g: the slope alone would call it drift", s.drift_pct);
	cr_assert_eq(s.stable, STATS_STABLE_TRUE, "%s", s.reasons);
	cr_assert_str_eq(s.reasons, "");
}

Test(stats, a_warm_up_over_a_third_of_the_runs_is_drift)
{
	/* 8 % above, decaying with a time constant of 2 runs, over 10 runs: the first third's
	 * median is 100 * (1 + 0.08 e^-0.5) = 104.9 against the last third's ~100.1, so the
	 * mean still depends on when the runs stop. */
	double v[10];
	for (size_t i = 0; i < 10; i++)
		v[i] = 100 * (1 + 0.08 * exp(-(double)i / 2));
	struct stats_summary s;
	stats_summarize(v, NULL, 10, &s);
	cr_assert_eq(s.stable, STATS_STABLE_FALSE);
	cr_assert_not_null(strstr(s.reasons, "drifted -"), "%s", s.reasons);
}

Test(stats, a_constant_series_has_no_drift)
{
	/* 0.1 has no exact double: the mean of 200 of them is not exactly 0.1, yet the slope
	 * must come out exactly 0. */
	double v[DRIFT_RUNS];
	for (size_t i = 0; i < DRIFT_RUNS; i++)
		v[i] = 0.1;
	struct stats_summary s;
	stats_summarize(v, NULL, DRIFT_RUNS, &s);
	cr_assert_eq(s.drift_pct, 0);
	cr_assert_eq(s.stable, STATS_STABLE_TRUE, "%s", s.reasons);
	cr_assert_str_eq(s.reasons, "");
}

Test(stats, drift_is_nan_where_it_means_nothing)
{
	/* Mean 0: no percentage of it. */
	double v[12] = { -1, 1, -2, 2, -3, 3, -4, 4, -5, 5, -6, 6 };
	struct stats_summary s;
	stats_summarize(v, NULL, 12, &s);
	cr_assert(isnan(s.drift_pct));
	cr_assert_null(strstr(s.reasons, "drifted"), "%s", s.reasons);
	/* Nine runs with values and a tenth without: too few for a trend. */
	double w[10] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, NAN };
	stats_summarize(w, NULL, 10, &s);
	cr_assert_eq(s.n, 9);
	cr_assert(isnan(s.drift_pct));
	cr_assert_null(strstr(s.reasons, "drifted"), "%s", s.reasons);
}

/* ---- Runs without a value, and the order of the sort ---------------------------------
 * A run whose metric was not produced has a NaN value (null in its run record), a derived
 * value undefined for it an infinite one. The summary leaves them out, as
 * rangeprof/stats.py does (python/tests/test_stats_c_agree.py feeds both the same runs). */

Test(stats, sort_puts_nan_last_and_minus_zero_before_plus_zero)
{
	double v[] = { NAN, 3, -INFINITY, 0.0, -NAN, -0.0, INFINITY, 1, -2 };
	size_t n = sizeof(v) / sizeof(*v);
	stats_sort(v, n);
	const double expected[] = { -INFINITY, -2, -0.0, 0.0, 1, 3, INFINITY };
	for (size_t i = 0; i < 7; i++) {
		cr_assert_eq(v[i], expected[i], "v[%zu] = %g, expected %g", i, v[i], expected[i]);
		cr_assert_eq(!!signbit(v[i]), !!signbit(expected[i]), "sign of v[%zu] = %g", i,
			     v[i]);
	}
	cr_assert(isnan(v[7]) && isnan(v[8]), "every NaN last, whatever its sign: %g %g", v[7],
		  v[8]);
}

/* With NaN called equal to every number the comparison is not transitive (1 = NaN = 0 but
 * 1 > 0) and qsort's result depended on where the NaN started. */
#define ORDER_VALUES 7
static double reference_order[ORDER_VALUES];

/* Sorts a copy of v and checks it against reference_order, NaN for NaN and zeros by
 * sign. */
static void sorts_to_the_reference(const double *v)
{
	double sorted[ORDER_VALUES];
	memcpy(sorted, v, sizeof(sorted));
	stats_sort(sorted, ORDER_VALUES);
	for (size_t i = 0; i < ORDER_VALUES; i++) {
		double got = sorted[i], want = reference_order[i];
		bool same = isnan(want) ? isnan(got) :
			    got == want && !!signbit(got) == !!signbit(want);
		cr_assert(same, "sorted[%zu] = %g where another input order gave %g", i, got,
			  want);
	}
}

/* Calls sorts_to_the_reference for every order of v[0..k) (Heap's algorithm); returns
 * how many orders that was. */
static size_t each_order(double *v, size_t k)
{
	if (k <= 1) {
		sorts_to_the_reference(v);
		return 1;
	}
	size_t orders = each_order(v, k - 1);
	for (size_t i = 0; i + 1 < k; i++) {
		size_t j = k % 2 ? 0 : i;
		double t = v[j];
		v[j] = v[k - 1];
		v[k - 1] = t;
		orders += each_order(v, k - 1);
	}
	return orders;
}

Test(stats, sort_gives_one_order_whatever_the_input_order)
{
	double v[ORDER_VALUES] = { 2, NAN, -0.0, 1, 0.0, -INFINITY, NAN };
	memcpy(reference_order, v, sizeof(v));
	stats_sort(reference_order, ORDER_VALUES);
	cr_assert_eq(each_order(v, ORDER_VALUES), 5040, "all 7! input orders were sorted");
}

Test(stats, a_run_without_a_value_is_left_out_of_the_summary)
{
	/* Nine steady runs and one whose metric was not produced: the nine are stable (the
	 * NaN run made mean, stddev and rsd NaN and the verdict "rsd nan % > 2 %"). */
	double v[10] = { 5, 5, 5, 5, NAN, 5, 5, 5, 5, 5 };
	struct stats_summary s;
	stats_summarize(v, NULL, 10, &s);
	cr_assert_eq(s.n, 9);
	cr_assert_float_eq(s.mean, 5, 0);
	cr_assert_float_eq(s.stddev, 0, 0);
	cr_assert_float_eq(s.rsd_pct, 0, 0);
	cr_assert_float_eq(s.min, 5, 0);
	cr_assert_float_eq(s.median, 5, 0);
	cr_assert_float_eq(s.max, 5, 0);
	cr_assert_eq(s.stable, STATS_STABLE_TRUE, "%s", s.reasons);
	cr_assert_str_eq(s.reasons, "");
	/* The others keep their run order: eleven runs rising by 1 and a NaN drift as the
	 * eleven do, 10 from first to last on a mean of 6. */
	double w[12] = { 1, 2, 3, 4, 5, 6, NAN, 7, 8, 9, 10, 11 };
	stats_summarize(w, NULL, 12, &s);
	cr_assert_eq(s.n, 11);
	cr_assert_float_eq(s.mean, 6, 1e-12);
	cr_assert_float_eq(s.median, 6, 0);
	cr_assert_float_eq(s.drift_pct, 100.0 * 10 / 6, 1e-9);
	cr_assert_not_null(strstr(s.reasons, "drifted +166.7 % over 11 runs"), "%s", s.reasons);
}

Test(stats, infinite_runs_are_left_out_like_nan)
{
	double v[] = { 100, INFINITY, 100.5, 99.5, -INFINITY, 100.2, 99.8 };
	struct stats_summary s;
	stats_summarize(v, NULL, 7, &s);
	cr_assert_eq(s.n, 5);
	cr_assert_float_eq(s.mean, 100, 1e-12);
	cr_assert_float_eq(s.min, 99.5, 0);
	cr_assert_float_eq(s.max, 100.5, 0);
	cr_assert_float_eq(s.median, 100, 0);
	cr_assert_eq(s.stable, STATS_STABLE_TRUE, "%s", s.reasons);
}

Test(stats, no_finite_run_gives_nan_statistics_and_a_null_verdict)
{
	double v[] = { NAN, NAN, INFINITY, NAN };
	struct stats_summary s;
	stats_summarize(v, NULL, 4, &s);
	cr_assert_eq(s.n, 0);
	cr_assert(isnan(s.mean) && isnan(s.stddev) && isnan(s.min) && isnan(s.median) &&
		  isnan(s.max) && isnan(s.ci95_low) && isnan(s.ci95_high) && isnan(s.rsd_pct) &&
		  isnan(s.drift_pct));
	cr_assert_eq(s.stable, STATS_STABLE_NULL);
	cr_assert_str_eq(s.reasons, "");
}

Test(stats, one_finite_run_among_nan_is_that_run_with_a_null_verdict)
{
	double v[] = { NAN, 7.5, NAN };
	struct stats_summary s;
	stats_summarize(v, NULL, 3, &s);
	cr_assert_eq(s.n, 1);
	cr_assert_float_eq(s.mean, 7.5, 0);
	cr_assert_float_eq(s.min, 7.5, 0);
	cr_assert_float_eq(s.median, 7.5, 0);
	cr_assert_float_eq(s.max, 7.5, 0);
	cr_assert(isnan(s.stddev) && isnan(s.rsd_pct));
	cr_assert_eq(s.stable, STATS_STABLE_NULL);
}

Test(stats, minus_zero_is_the_minimum_and_plus_zero_the_maximum)
{
	double v[] = { 0.0, -0.0, 0.0, -0.0, 0.0 };
	struct stats_summary s;
	stats_summarize(v, NULL, 5, &s);
	cr_assert(s.min == 0 && signbit(s.min), "min %g", s.min);
	cr_assert(s.max == 0 && !signbit(s.max), "max %g", s.max);
	cr_assert(s.median == 0 && !signbit(s.median), "median %g: two -0 sort first",
		  s.median);
}

Test(stats, the_clocks_of_runs_left_out_still_count)
{
	/* The run without a value ran at 1.5 GHz: the clock moved during the launch all the
	 * same. An infinite clock is no reading and is left out. */
	double v[] = { 100, NAN, 100.5, 99.5, 100.2, 99.8 };
	double clocks[] = { 1.98e9, 1.5e9, 1.98e9, 1.98e9, INFINITY, 1.98e9 };
	struct stats_summary s;
	stats_summarize(v, clocks, 6, &s);
	cr_assert_eq(s.n, 5);
	cr_assert_eq(s.stable, STATS_STABLE_FALSE);
	cr_assert_str_eq(s.reasons, "sm clock varied 32.0 % > 5 %");
	clocks[1] = 1.98e9;
	stats_summarize(v, clocks, 6, &s);
	cr_assert_eq(s.stable, STATS_STABLE_TRUE, "%s", s.reasons);
}
