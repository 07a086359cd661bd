/* tests/unit/collector/adaptive_test.c - the stopping rule of --runs auto: stop at the
 * CI target, at the maximum, or when the time budget is spent, never before the minimum;
 * batches never grow past the first. Samples are generated here with known spread. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "collector/adaptive.h"
#include "collector/stats.h"

static const struct adaptive_params defaults = { 1.0, 10, 200, 10, 10.0 };

/* Deterministic noise: a fixed sequence in [-1, 1] (a linear congruential generator), so
 * that the tests do not depend on the C library's rand(). */
static double noise(unsigned *state)
{
	*state = *state * 1103515245u + 12345u;
	return ((*state >> 8) & 0xffff) / 32767.5 - 1.0;
}

/* Runs the loop inject/measure/measure.c runs: batches until the rule says stop. values must hold
 * runs_max samples; make(i) gives sample i; each batch takes batch_s seconds. */
static size_t drive(const struct adaptive_params *p, double *values, double (*make)(size_t, void *),
		    void *arg, double batch_s, struct adaptive_decision *d)
{
	size_t n = 0, batch = adaptive_first_batch(p), largest = 0;
	double elapsed = 0;
	for (;;) {
		cr_assert_gt(batch, 0);
		largest = batch > largest ? batch : largest;
		cr_assert_leq(batch, adaptive_first_batch(p), "no batch is larger than the first");
		for (size_t i = 0; i < batch; i++, n++)
			values[n] = make(n, arg);
		elapsed += batch_s;
		adaptive_decide(p, values, n, elapsed, d);
		if (d->verdict != ADAPTIVE_CONTINUE)
			return n;
		batch = d->next_batch;
	}
}

struct steady { double mean, spread; unsigned state; };

static double steady_sample(size_t i, void *arg)
{
	(void)i;
	struct steady *s = arg;
	return s->mean * (1 + s->spread * noise(&s->state));
}

static double drifting_sample(size_t i, void *arg)
{
	struct steady *s = arg;
	/* 1 % slower every run, as a throttling GPU slows a heavy matmul, plus noise. The
	 * half-width of a trend grows as sqrt(n): once above the target it stays there.
	 * (A drift too slow to show within the first batches stops at the target, rightly:
	 * over that span the mean was that precise.) */
	return s->mean * (1 + 0.01 * (double)i) * (1 + s->spread * noise(&s->state));
}

Test(adaptive, a_quiet_kernel_stops_at_the_minimum_with_the_target_reached)
{
	double values[200];
	struct steady s = { 50000, 0.002, 1 };   /* 50 us, +-0.2 % */
	struct adaptive_decision d;
	size_t n = drive(&defaults, values, steady_sample, &s, 0.01, &d);
	cr_assert_eq(n, 10);
	cr_assert_eq(d.verdict, ADAPTIVE_TARGET_CI);
	cr_assert_str_eq(adaptive_verdict_name(d.verdict), "target_ci_reached");
	cr_assert_leq(d.ci_pct, 1.0);
}

Test(adaptive, a_noisy_short_kernel_takes_more_runs_and_the_ci_it_reports_is_studentt)
{
	double values[200];
	struct steady s = { 3000, 0.06, 7 };     /* 3 us, +-6 % uniform: RSD ~3.5 % */
	struct adaptive_decision d;
	size_t n = drive(&defaults, values, steady_sample, &s, 0.01, &d);
	cr_assert_eq(d.verdict, ADAPTIVE_TARGET_CI);
	cr_assert_gt(n, 20, "n = %zu", n);
	cr_assert_lt(n, 200, "n = %zu", n);
	cr_assert_eq(n % 10, 0, "whole batches");
	struct stats_summary sum;
	stats_summarize(values, NULL, n, &sum);
	double half = (sum.ci95_high - sum.ci95_low) / 2;
	cr_assert_float_eq(d.ci_pct, 100 * half / sum.mean, 1e-9);
	cr_assert_leq(d.ci_pct, 1.0);
	/* One batch fewer did not reach it: the rule stopped at the first batch that did. */
	adaptive_decide(&defaults, values, n - 10, 0.0, &d);
	cr_assert_eq(d.verdict, ADAPTIVE_CONTINUE);
	cr_assert_gt(d.ci_pct, 1.0);
}

Test(adaptive, a_drifting_kernel_runs_to_the_maximum)
{
	double values[200];
	struct steady s = { 1e6, 0.002, 3 };
	struct adaptive_decision d;
	size_t n = drive(&defaults, values, drifting_sample, &s, 0.01, &d);
	cr_assert_eq(n, 200);
	cr_assert_eq(d.verdict, ADAPTIVE_MAX_RUNS);
	cr_assert_str_eq(adaptive_verdict_name(d.verdict), "max_runs");
	cr_assert_gt(d.ci_pct, 1.0);
}

Test(adaptive, the_time_budget_stops_between_batches_but_never_before_the_minimum)
{
	double values[200];
	struct steady s = { 3000, 0.2, 5 };
	struct adaptive_decision d;
	struct adaptive_params p = defaults;
	p.runs_min = 30;
	p.time_budget_s = 1.0;
	/* Each batch takes 2 s: the budget is spent after the first, yet the minimum of 30
	 * (three batches) is measured. */
	size_t n = drive(&p, values, steady_sample, &s, 2.0, &d);
	cr_assert_eq(n, 30);
	cr_assert_eq(d.verdict, ADAPTIVE_TIME_BUDGET);
	cr_assert_str_eq(adaptive_verdict_name(d.verdict), "time_budget");
	/* Within budget, the same samples go on. */
	adaptive_decide(&p, values, 30, 0.5, &d);
	cr_assert_eq(d.verdict, ADAPTIVE_CONTINUE);
	cr_assert_eq(d.next_batch, 10);
}

Test(adaptive, the_last_batch_is_cut_to_the_maximum_and_the_first_is_the_largest)
{
	struct adaptive_params p = defaults;
	p.runs_max = 25;
	p.runs_min = 2;
	double values[25];
	for (int i = 0; i < 25; i++)
		values[i] = i % 2 ? 100 : 200;   /* far from any target */
	struct adaptive_decision d;
	cr_assert_eq(adaptive_first_batch(&p), 10);
	adaptive_decide(&p, values, 20, 0, &d);
	cr_assert_eq(d.verdict, ADAPTIVE_CONTINUE);
	cr_assert_eq(d.next_batch, 5);
	adaptive_decide(&p, values, 25, 0, &d);
	cr_assert_eq(d.verdict, ADAPTIVE_MAX_RUNS);
	p.runs_max = 4;
	cr_assert_eq(adaptive_first_batch(&p), 4, "a batch never exceeds the maximum");
}

Test(adaptive, identical_samples_reach_any_target_and_a_zero_mean_never_does)
{
	struct adaptive_params p = defaults;
	p.runs_min = 2;
	double same[4] = { 5, 5, 5, 5 }, zero_mean[4] = { -1, 1, -1, 1 }, zeros[4] = { 0 };
	struct adaptive_decision d;
	adaptive_decide(&p, same, 4, 0, &d);
	cr_assert_eq(d.verdict, ADAPTIVE_TARGET_CI);
	cr_assert_float_eq(d.ci_pct, 0, 0);
	adaptive_decide(&p, zeros, 4, 0, &d);
	cr_assert_eq(d.verdict, ADAPTIVE_TARGET_CI, "a counter that is always 0 is exact");
	adaptive_decide(&p, zero_mean, 4, 0, &d);
	cr_assert_eq(d.verdict, ADAPTIVE_CONTINUE);
	cr_assert(isnan(d.ci_pct));
	adaptive_decide(&p, same, 1, 0, &d);
	cr_assert(isnan(d.ci_pct), "one sample has no interval");
	cr_assert_null(adaptive_verdict_name(ADAPTIVE_CONTINUE));
}

/* A run whose gating value is NaN or infinite (a metric not produced) is left out of the
 * interval as the summary leaves it out of its n and its CI (stats_summarize): kept in,
 * it made the CI unknown, so that the launch never reached the target, ran to the budget
 * or the maximum, and got "ci nan % > target" in a summary whose own CI was fine. */
Test(adaptive, runs_without_a_value_are_left_out_of_the_ci_as_in_the_summary)
{
	struct adaptive_params p = defaults;
	p.runs_min = 2;
	double same[10] = { 1, 1, 1, NAN, 1, 1, 1, 1, 1, 1 };
	struct adaptive_decision d;
	adaptive_decide(&p, same, 10, 0, &d);
	cr_assert_float_eq(d.ci_pct, 0, 0, "ci %g", d.ci_pct);
	cr_assert_eq(d.verdict, ADAPTIVE_TARGET_CI);

	/* Noisy runs with NaN, +inf and -inf among them: the CI is the summary's. */
	double values[40];
	struct steady s = { 50000, 0.01, 11 };
	for (size_t i = 0; i < 40; i++)
		values[i] = steady_sample(i, &s);
	values[3] = NAN;
	values[17] = INFINITY;
	values[29] = -INFINITY;
	p.target_ci_pct = 1e-9;                  /* out of reach: the CI only is compared */
	adaptive_decide(&p, values, 40, 0, &d);
	struct stats_summary sum;
	stats_summarize(values, NULL, 40, &sum);
	cr_assert_eq(sum.n, 37);
	double half = (sum.ci95_high - sum.ci95_low) / 2;
	cr_assert(isfinite(d.ci_pct), "ci %g", d.ci_pct);
	cr_assert_float_eq(d.ci_pct, 100 * half / sum.mean, 1e-9);
	cr_assert_eq(d.verdict, ADAPTIVE_CONTINUE);
}

Test(adaptive, the_minimum_counts_runs_with_a_value_and_the_budget_runs_measured)
{
	struct adaptive_params p = defaults;    /* runs_min 10 */
	double v[20] = { 1, 1, 1, NAN, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1 };
	struct adaptive_decision d;
	/* 10 measured, 9 with a value: the summary would have n 9 < --runs-min. */
	adaptive_decide(&p, v, 10, 0, &d);
	cr_assert_float_eq(d.ci_pct, 0, 0);
	cr_assert_eq(d.verdict, ADAPTIVE_CONTINUE);
	cr_assert_eq(d.next_batch, 10);
	adaptive_decide(&p, v, 20, 0, &d);
	cr_assert_eq(d.verdict, ADAPTIVE_TARGET_CI);
	/* The budget bounds the time spent: it counts every run measured. */
	adaptive_decide(&p, v, 10, 1e9, &d);
	cr_assert_eq(d.verdict, ADAPTIVE_TIME_BUDGET);
	/* No run with a value: no CI, and the budget or the maximum stops it. */
	double none[10] = { NAN, NAN, INFINITY, NAN, NAN, NAN, -INFINITY, NAN, NAN, NAN };
	adaptive_decide(&p, none, 10, 0, &d);
	cr_assert(isnan(d.ci_pct));
	cr_assert_eq(d.verdict, ADAPTIVE_CONTINUE);
	adaptive_decide(&p, none, 10, 1e9, &d);
	cr_assert_eq(d.verdict, ADAPTIVE_TIME_BUDGET);
	/* One with a value among them: still no interval. */
	none[5] = 3;
	p.runs_min = 2;
	adaptive_decide(&p, none, 10, 0, &d);
	cr_assert(isnan(d.ci_pct), "one sample has no interval");
	cr_assert_eq(d.verdict, ADAPTIVE_CONTINUE);
}

/* A launch that reaches the target on the batch that also reaches the maximum reached
 * the target: it was reported "max_runs", and its summary made unstable with a CI
 * inside the target ("ci 0.04 % > target 1.00 % (max_runs)"). */
Test(adaptive, the_target_reached_on_the_last_batch_counts_as_reached)
{
	struct adaptive_params p = defaults;
	p.runs_max = 20;
	double values[20];
	for (int i = 0; i < 20; i++)
		values[i] = i < 10 ? (i % 2 ? 90 : 110) : 100;   /* wide first batch */
	struct adaptive_decision d;
	adaptive_decide(&p, values, 10, 0, &d);
	cr_assert_eq(d.verdict, ADAPTIVE_CONTINUE, "ci %g", d.ci_pct);
	for (int i = 0; i < 10; i++)
		values[i] = 100 + (i % 2 ? 0.05 : -0.05);
	adaptive_decide(&p, values, 20, 0, &d);
	cr_assert_leq(d.ci_pct, 1.0);
	cr_assert_eq(d.verdict, ADAPTIVE_TARGET_CI, "%s", adaptive_verdict_name(d.verdict));
	/* Out of budget too: still the target that counts. */
	adaptive_decide(&p, values, 20, 1e9, &d);
	cr_assert_eq(d.verdict, ADAPTIVE_TARGET_CI);
	/* Not reached: the maximum stops it. */
	for (int i = 0; i < 20; i++)
		values[i] = i % 2 ? 90 : 110;
	adaptive_decide(&p, values, 20, 0, &d);
	cr_assert_eq(d.verdict, ADAPTIVE_MAX_RUNS);
}
