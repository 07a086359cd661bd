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

Test(stats, one_run_is_null_stability)
{
	double v[] = { 5 };
	struct stats_summary s;
	stats_summarize(v, NULL, 1, &s);
	cr_assert_eq(s.stable, STATS_STABLE_NULL);
	cr_assert(isnan(s.stddev));
	cr_assert_float_eq(s.mean, 5, 0);
}
