/* collector/adaptive.h - the stopping rule of --runs auto: after each batch of runs, go on
 * or stop, and why. Pure functions over the samples so far; inject/measure/measure.c calls them
 * between profiler passes, the tests call them with made-up samples. */
#ifndef COLLECTOR_ADAPTIVE_H
#define COLLECTOR_ADAPTIVE_H

#include <stddef.h>

struct adaptive_params {
	double target_ci_pct;        /* 95 % CI half-width to reach, in % of the mean */
	size_t runs_min, runs_max;   /* 2 <= runs_min <= runs_max */
	size_t batch;                /* runs per batch, replayed in each profiler pass, >= 1 */
	double time_budget_s;        /* measuring time after which no batch is started */
};

enum adaptive_verdict {
	ADAPTIVE_CONTINUE,
	ADAPTIVE_TARGET_CI,          /* "target_ci_reached" */
	ADAPTIVE_MAX_RUNS,           /* "max_runs" */
	ADAPTIVE_TIME_BUDGET,        /* "time_budget" */
};

struct adaptive_decision {
	enum adaptive_verdict verdict;
	size_t next_batch;           /* ADAPTIVE_CONTINUE: runs of the next batch */
	double ci_pct;               /* half-width of the samples so far that have a value
				      * (finite), % of |mean|; NaN when fewer than 2 have
				      * one or the mean is 0 with a spread */
};

/* Runs of the first batch: the largest any batch of the launch will have, so that the
 * profiler's counter data, sized at its first configuration, holds every later batch. */
size_t adaptive_first_batch(const struct adaptive_params *p);

/* Decides after a batch: values[0..n) are the gating metric's samples so far, elapsed_s
 * the seconds spent measuring this launch. Samples that are NaN or infinite are left out
 * of the CI, as stats_summarize leaves them out of the summary (stats_finite_runs). In
 * order: stop when at least runs_min samples are finite and their CI half-width is
 * within the target; stop when n >= runs_max; stop when n >= runs_min and the budget is
 * spent; else continue with min(batch, runs_max - n) runs. So any verdict but
 * ADAPTIVE_TARGET_CI means the target was not reached. Cannot fail (out of memory for
 * the copy of the finite samples, the CI is unknown and the target not reached). */
void adaptive_decide(const struct adaptive_params *p, const double *values, size_t n,
		     double elapsed_s, struct adaptive_decision *out);

/* "target_ci_reached", "max_runs", "time_budget"; NULL for ADAPTIVE_CONTINUE. */
const char *adaptive_verdict_name(enum adaptive_verdict v);

#endif
