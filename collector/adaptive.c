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
 * Calls libc and collector/stats. */
#include "collector/adaptive.h"

#include <math.h>
#include <stddef.h>

#include "collector/stats.h"

size_t adaptive_first_batch(const struct adaptive_params *p)
{
	size_t b = p->batch ? p->batch : 1;
	return b < p->runs_max ? b : p->runs_max;
}

/* The summary's interval (stats_interval), as % of |mean|. */
static double ci_pct(const double *values, size_t n)
{
	if (n < 2)
		return NAN;
	double mean, stddev, half;
	stats_interval(values, n, &mean, &stddev, &half);
	/* Identical samples are as precise as it gets, whatever their mean. */
	if (half == 0)
		return 0;
	return mean != 0 ? 100.0 * half / fabs(mean) : NAN;
}

void adaptive_decide(const struct adaptive_params *p, const double *values, size_t n,
		     double elapsed_s, struct adaptive_decision *out)
{
	out->ci_pct = ci_pct(values, n);
	out->next_batch = 0;
	/* The target first: a launch that reaches it on the batch that also reaches the
	 * maximum (or spends the budget) reached it. */
	if (n >= p->runs_min && out->ci_pct <= p->target_ci_pct) {
		out->verdict = ADAPTIVE_TARGET_CI;
		return;
	}
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
