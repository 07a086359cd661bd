/* collector/stats.c - mean, sample standard deviation, median, Student-t interval, RSD,
 * drift and the stability verdict (doc/records.md, "summary").
 * Calls: none (libc only).
 * Called by: adaptive.c, records.c, table.c.
 * Lock: none (constant tables). */
#include "collector/stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* t(0.975, df) for df = 1..30; beyond, a Cornish-Fisher expansion around the normal
 * quantile is accurate to better than 1e-4. */
static const double t975_table[31] = {
	NAN,    12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622,
	2.2281, 2.2010, 2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930,
	2.0860, 2.0796, 2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452,
	2.0423,
};

double stats_t975(size_t df)
{
	if (df == 0)
		return NAN;
	if (df <= 30)
		return t975_table[df];
	const double z = 1.959963984540054, v = (double)df;
	double z3 = z * z * z, z5 = z3 * z * z, z7 = z5 * z * z;
	return z + (z3 + z) / (4 * v) + (5 * z5 + 16 * z3 + 3 * z) / (96 * v * v) +
	       (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / (384 * v * v * v);
}

/* IEEE 754's totalOrder on the values a run can hold: -inf, the numbers with -0 before +0,
 * +inf, then every NaN whatever its sign bit (a metric not produced is no smaller than any
 * value). qsort needs a total order: (x > y) - (x < y) calls NaN equal to every number,
 * which is not transitive, and C leaves qsort's result undefined then. */
static int compare_total(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	bool x_nan = isnan(x), y_nan = isnan(y);
	if (x_nan || y_nan)
		return (int)x_nan - (int)y_nan;
	if (x == y) /* equal, or -0 against +0 */
		return (int)(bool)signbit(y) - (int)(bool)signbit(x);
	return (x > y) - (x < y);
}

void stats_sort(double *values, size_t n)
{
	qsort(values, n, sizeof(*values), compare_total);
}

void stats_check_locked_clock(struct stats_summary *s, const double *clock_hz, size_t n,
			      double locked_hz)
{
	if (!clock_hz || !(locked_hz > 0))
		return;
	size_t off = 0;
	double worst = locked_hz;
	for (size_t i = 0; i < n; i++) {
		if (isnan(clock_hz[i]) || fabs(clock_hz[i] - locked_hz) <= 0.02 * locked_hz)
			continue;
		off++;
		if (fabs(clock_hz[i] - locked_hz) > fabs(worst - locked_hz))
			worst = clock_hz[i];
	}
	if (!off)
		return;
	char reason[128];
	snprintf(reason, sizeof(reason), "sm clock off the locked %.0f MHz in %zu of %zu runs "
		 "(%.0f MHz)", locked_hz / 1e6, off, n, worst / 1e6);
	stats_fail(s, reason);
}

static void add_reason(struct stats_summary *s, const char *reason)
{
	size_t used = strlen(s->reasons);
	snprintf(s->reasons + used, sizeof(s->reasons) - used, "%s%s", used ? "; " : "", reason);
}

void stats_note(struct stats_summary *s, const char *reason)
{
	add_reason(s, reason);
}

/* The runs' trend, for n >= 3 and a finite, nonzero mean: the least-squares line
 * value = a + b i over the run index i, its rise from the first run to the last in % of
 * the mean into *drift_pct, and whether the slope is significant (|b| > t975(n-2) se(b)).
 * A steady drift - a GPU heating up, clocks sagging - passes the RSD condition (a linear
 * drift of total D has a standard deviation of only about 0.29 D) and --runs auto's CI
 * target, yet the mean then depends on when the runs stopped. */
static bool trend(const double *values, size_t n, double mean, double *drift_pct)
{
	/* Deviations from the first run, not from the mean (sum / n need not equal the
	 * value it averages): a constant series' sums are then zero by construction, not by
	 * rounding that happens to cancel, so its slope is exactly 0. */
	double ibar = (double)(n - 1) / 2, sxx = 0, sxy = 0, dsum = 0;
	for (size_t i = 0; i < n; i++) {
		double di = (double)i - ibar;
		sxx += di * di;
		sxy += di * (values[i] - values[0]);
		dsum += values[i] - values[0];
	}
	double b = sxy / sxx, dmean = dsum / (double)n, sse = 0;
	for (size_t i = 0; i < n; i++) {
		double r = values[i] - values[0] - dmean - b * ((double)i - ibar);
		sse += r * r;
	}
	double se = sqrt(sse / (double)(n - 2) / sxx);
	*drift_pct = 100.0 * b * (double)(n - 1) / mean;
	/* A product, not |b| / se: a perfect line (se 0) with a slope is a trend, a constant
	 * series (b and se 0) is not, and neither divides by zero. */
	return fabs(b) > stats_t975(n - 2) * se;
}

/* A sorted copy of values[0..n), n >= 1, for the caller to free; NULL when out of
 * memory. */
static double *sorted_copy(const double *values, size_t n)
{
	double *sorted = malloc(n * sizeof(*sorted));
	if (sorted) {
		memcpy(sorted, values, n * sizeof(*sorted));
		stats_sort(sorted, n);
	}
	return sorted;
}

/* The median of sorted[0..n), n >= 1: the middle value, or the mean of the two middle
 * ones. */
static double sorted_median(const double *sorted, size_t n)
{
	return n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

/* The median of values[0..n), n >= 1; NaN when out of memory. */
static double median_of(const double *values, size_t n)
{
	double *sorted = sorted_copy(values, n);
	double m = sorted ? sorted_median(sorted, n) : NAN;
	free(sorted);
	return m;
}

/* Whether the trend also moved the bulk of the runs: the medians of the first and the last
 * third differ by more than 1 % of the mean, in the slope's direction. Two slow first runs
 * of twenty (+5 %) make a significant least-squares slope of about -2 % although the
 * kernel is steady after them; the thirds' medians ignore such a transient, while a real
 * drift, linear or a step, moves them. */
static bool thirds_moved(const double *values, size_t n, double mean, double drift_pct)
{
	size_t k = n / 3;
	double moved = median_of(values + n - k, k) - median_of(values, k);
	/* The slope's sign: drift_pct's flips with a negative mean. */
	return fabs(moved) > 0.01 * fabs(mean) && (moved > 0) == (drift_pct * mean > 0);
}

void stats_interval(const double *values, size_t n, double *mean, double *stddev,
		    double *half)
{
	double sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += values[i];
	*mean = n ? sum / (double)n : NAN;
	*stddev = *half = NAN;
	if (n < 2)
		return;
	double ss = 0;
	for (size_t i = 0; i < n; i++)
		ss += (values[i] - *mean) * (values[i] - *mean);
	*stddev = sqrt(ss / (double)(n - 1));
	*half = stats_t975(n - 1) * *stddev / sqrt((double)n);
}

const double *stats_finite_runs(const double *values, size_t n, size_t *kept, double **copy)
{
	size_t finite = 0;
	for (size_t i = 0; i < n; i++)
		finite += isfinite(values[i]) != 0;
	*kept = finite;
	*copy = NULL;
	if (finite == n || finite == 0)
		return values;
	if (!(*copy = malloc(finite * sizeof(**copy))))
		return NULL;
	for (size_t i = 0, k = 0; i < n; i++)
		if (isfinite(values[i]))
			(*copy)[k++] = values[i];
	return *copy;
}

/* stats_summarize over the finite values runs[0..n) (n >= 1) in run order; clock_hz, when
 * given, holds the clocks of all total runs, those without a value included. */
static void summarize_finite(const double *runs, size_t n, const double *clock_hz,
			     size_t total, struct stats_summary *out)
{
	double half;
	stats_interval(runs, n, &out->mean, &out->stddev, &half);
	double *sorted = sorted_copy(runs, n);
	if (sorted) {
		out->min = sorted[0];
		out->max = sorted[n - 1];
		out->median = sorted_median(sorted, n);
		free(sorted);
	}
	if (n < 2)
		return;
	out->ci95_low = out->mean - half;
	out->ci95_high = out->mean + half;
	out->rsd_pct = out->mean != 0 ? 100.0 * out->stddev / fabs(out->mean) : NAN;

	bool stable = true;
	char reason[96];
	if (n < 5) {
		stable = false;
		snprintf(reason, sizeof(reason), "n = %zu < 5", n);
		add_reason(out, reason);
	}
	if (!(out->rsd_pct <= 2.0)) {
		stable = false;
		snprintf(reason, sizeof(reason), "rsd %.2f %% > 2 %%", out->rsd_pct);
		add_reason(out, reason);
	}
	/* From 10 runs, --runs auto's minimum and first batch: below it a slope rests on too
	 * few points to call (the t threshold climbs fast, 2.31 at 8 degrees of freedom, 3.18
	 * at 3). The significance test keeps noise from reading as drift in short series; the
	 * 2 %, the RSD's bound, keeps a trend too small to matter from failing long ones, and
	 * thirds_moved a transient at the start from reading as drift. */
	if (n >= 10 && isfinite(out->mean) && out->mean != 0 &&
	    trend(runs, n, out->mean, &out->drift_pct) && fabs(out->drift_pct) > 2.0 &&
	    thirds_moved(runs, n, out->mean, out->drift_pct)) {
		stable = false;
		snprintf(reason, sizeof(reason), "drifted %+.1f %% over %zu runs", out->drift_pct, n);
		add_reason(out, reason);
	}
	if (clock_hz) {
		/* Over the known clocks only. None known (a time-only set, whose clock comes
		 * from NVML, on a MIG instance or without libnvidia-ml) is not a failure, as
		 * unknown throttle reasons are not: it would make every launch unstable. An
		 * infinite clock is no measurement either (rangeprof/stats.py leaves it out
		 * too). */
		double lo = INFINITY, hi = -INFINITY;
		for (size_t i = 0; i < total; i++) {
			if (!isfinite(clock_hz[i]))
				continue;
			lo = fmin(lo, clock_hz[i]);
			hi = fmax(hi, clock_hz[i]);
		}
		if (!isinf(lo) && hi > lo * 1.05) {
			stable = false;
			snprintf(reason, sizeof(reason), "sm clock varied %.1f %% > 5 %%",
				 100.0 * (hi / lo - 1));
			add_reason(out, reason);
		}
	}
	out->stable = stable ? STATS_STABLE_TRUE : STATS_STABLE_FALSE;
}

void stats_summarize(const double *values, const double *clock_hz, size_t n,
		     struct stats_summary *out)
{
	memset(out, 0, sizeof(*out));
	out->mean = out->stddev = out->min = out->median = out->max = NAN;
	out->ci95_low = out->ci95_high = out->rsd_pct = out->drift_pct = NAN;
	out->stable = STATS_STABLE_NULL;
	/* A run without a finite value (a metric not produced, a derived value undefined for
	 * it) says nothing of the kernel's speed: summarised with the others it made every
	 * statistic NaN and the launch not stable however steady its other runs were. It is
	 * left out, as rangeprof/stats.py leaves it out of tables, so that both give the same
	 * verdict on the same runs. */
	double *copy;
	size_t kept;
	const double *runs = stats_finite_runs(values, n, &kept, &copy);
	out->n = kept;
	if (runs && kept)
		summarize_finite(runs, kept, clock_hz, n, out);
	free(copy);
}

static const char *const throttle_names[] = {
	"gpu_idle", "applications_clocks_setting", "sw_power_cap", "hw_slowdown", "sync_boost",
	"sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown",
	"display_clocks_setting",
};

size_t stats_throttle_names(uint64_t mask, const char **names, size_t max)
{
	size_t n = 0;
	if (mask == STATS_THROTTLE_UNKNOWN)
		return 0;
	for (size_t bit = 0; bit < sizeof(throttle_names) / sizeof(*throttle_names); bit++)
		if ((mask & (1ull << bit)) && n < max)
			names[n++] = throttle_names[bit];
	return n;
}

void stats_fail(struct stats_summary *s, const char *reason)
{
	if (s->stable == STATS_STABLE_NULL)
		return;
	s->stable = STATS_STABLE_FALSE;
	add_reason(s, reason);
}

void stats_check_throttle(struct stats_summary *s, const uint64_t *reasons, size_t n)
{
	if (!reasons)
		return;
	uint64_t seen = 0;
	size_t runs = 0;
	for (size_t i = 0; i < n; i++) {
		if (reasons[i] == STATS_THROTTLE_UNKNOWN || !(reasons[i] & STATS_THROTTLE_DISTURBING))
			continue;
		seen |= reasons[i] & STATS_THROTTLE_DISTURBING;
		runs++;
	}
	if (!runs)
		return;
	const char *names[16];
	size_t count = stats_throttle_names(seen, names, 16);
	char reason[200];
	int len = snprintf(reason, sizeof(reason), "throttled in %zu of %zu runs:", runs, n);
	for (size_t i = 0; i < count && len > 0 && (size_t)len < sizeof(reason); i++)
		len += snprintf(reason + len, sizeof(reason) - (size_t)len, "%s %s",
				i ? "," : "", names[i]);
	stats_fail(s, reason);
}
