/* collector/adaptive.c - the stopping rule of --runs auto (README, "How many runs").
 *
 * nvbench, the anchor, stops a benchmark when the relative standard deviation of its
 * samples falls below max-noise (0.5 %) after min-time, or when that noise figure has
 * itself stopped moving (its own relative spread under 5 % over the last samples), or at
 * a timeout. It needs the second rule because a standard deviation does not shrink with
 * more samples. rangeprof's target is the 95 % CI half-width of the mean (Student t),
 * which does shrink, as 1/sqrt(n) for steady noise: a steady kernel always gets there,
 * a quiet one sooner than a noisy one, and a kernel whose time drifts fast (a heating
 * GPU) does not, so it runs to --runs-max, or until --runs-time-budget is spent, and is
 * reported as such. A drift of a few % over the runs can still reach the target (its
 * spread is only ~0.29 of the drift); the summary's drift condition (collector/stats.c)
 * makes such a launch not stable rather than running on, since more runs would only move
 * the mean further. nvbench's min-samples and
 * timeout are --runs-min and --runs-time-budget; the budget never cuts below the minimum
 * (a summary of two runs would say little). Checked between batches, since all runs of a
 * batch share each profiler pass (one for a time-only set, one per pass of the set
 * otherwise); a launch may run over the budget by one batch.
 * Calls: stats.c (libc besides).
 * Called by: inject/ (measure.c, between profiler passes; config.c, the first batch).
 * Lock: none (pure functions over the samples so far). */
#include "collector/adaptive.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>

#include "collector/stats.h"

size_t adaptive_first_batch(const struct adaptive_params *p)
{
	size_t b = p->batch ? p->batch : 1;
	return b < p->runs_max ? b : p->runs_max;
}

/* The summary's interval (stats_interval) over the runs that have a value, as % of
 * |mean|; *kept gets their count. A run whose gating value is NaN or infinite (a metric
 * not produced, a derived value undefined for that run) is left out as stats_summarize
 * leaves it out (stats_finite_runs): kept in, it made the CI unknown, so that a launch
 * with one such run never reached the target and ran to --runs-max or the budget, while
 * its summary computed a CI without it. NaN when fewer than two runs have a value, when
 * the mean is 0 with a spread, and when the copy of the values cannot be allocated (an
 * unknown CI is not within the target: the runs go on). */
static double ci_pct(const double *values, size_t n, size_t *kept)
{
	double *copy;
	const double *runs = stats_finite_runs(values, n, kept, &copy);
	double pct = NAN;
	if (runs && *kept >= 2) {
		double mean, stddev, half;
		stats_interval(runs, *kept, &mean, &stddev, &half);
		/* Identical samples are as precise as it gets, whatever their mean. */
		if (half == 0)
			pct = 0;
		else if (mean != 0)
			pct = 100.0 * half / fabs(mean);
	}
	free(copy);
	return pct;
}

void adaptive_decide(const struct adaptive_params *p, const double *values, size_t n,
		     double elapsed_s, struct adaptive_decision *out)
{
	size_t with_value;
	out->ci_pct = ci_pct(values, n, &with_value);
	out->next_batch = 0;
	/* The target first: a launch that reaches it on the batch that also reaches the
	 * maximum (or spends the budget) reached it. Only once --runs-min runs have a value:
	 * the summary's n counts those, and a target reached on fewer would be a summary of
	 * fewer runs than the user asked for. */
	if (with_value >= p->runs_min && out->ci_pct <= p->target_ci_pct) {
		out->verdict = ADAPTIVE_TARGET_CI;
		return;
	}
	/* The maximum and the budget count the runs measured, with a value or not: they
	 * bound the time spent, and a gating metric that is never produced must not run past
	 * the budget to the maximum. */
	if (n >= p->runs_max) {
		out->verdict = ADAPTIVE_MAX_RUNS;
		return;
	}
	if (n >= p->runs_min && elapsed_s >= p->time_budget_s) {
		out->verdict = ADAPTIVE_TIME_BUDGET;
		return;
	}
	size_t left = p->runs_max - n, b = p->batch ? p->batch : 1;
	out->verdict = ADAPTIVE_CONTINUE;
	out->next_batch = b < left ? b : left;
}

const char *adaptive_verdict_name(enum adaptive_verdict v)
{
	switch (v) {
	case ADAPTIVE_TARGET_CI: return "target_ci_reached";
	case ADAPTIVE_MAX_RUNS: return "max_runs";
	case ADAPTIVE_TIME_BUDGET: return "time_budget";
	default: return NULL;
	}
}
