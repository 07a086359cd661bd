/* collector/stats.h - summary statistics of a launch's runs (doc/records.md, "summary").
 * Pure functions over arrays; used when a launch's runs are done and by the tests. */
#ifndef COLLECTOR_STATS_H
#define COLLECTOR_STATS_H

#include <stdbool.h>
#include <stddef.h>

enum stats_stability { STATS_STABLE_NULL, STATS_STABLE_FALSE, STATS_STABLE_TRUE };

struct stats_summary {
	size_t n;
	double mean, stddev, min, median, max;
	double ci95_low, ci95_high;
	double rsd_pct;
	enum stats_stability stable;
	char reasons[256];           /* "; "-separated failed conditions when not stable */
};

/* Two-sided 95 % quantile of Student's t with df degrees of freedom (df >= 1). */
double stats_t975(size_t df);

/* Summarises values[0..n). clock_hz holds the SM clock measured for each run (NULL or
 * NaN entries when unknown); the clock condition of stability uses it. Cannot fail;
 * n == 0 gives NaN statistics and stable null. */
void stats_summarize(const double *values, const double *clock_hz, size_t n,
		     struct stats_summary *out);

#endif
