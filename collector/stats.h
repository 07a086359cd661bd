/* collector/stats.h - summary statistics of a launch's runs (doc/records.md, "summary").
 * Pure functions over arrays; used when a launch's runs are done and by the tests. */
#ifndef COLLECTOR_STATS_H
#define COLLECTOR_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum stats_stability { STATS_STABLE_NULL, STATS_STABLE_FALSE, STATS_STABLE_TRUE };

struct stats_summary {
	size_t n;
	double mean, stddev, min, median, max;
	double ci95_low, ci95_high;
	double rsd_pct;
	double drift_pct;            /* least-squares trend over the runs, first to last, in % of
					the mean; NaN when n < 10 or the mean is 0 */
	enum stats_stability stable;
	/* "; "-separated failed conditions when not stable. Room for all of them at once
	 * (rsd, drift, clock spread, every throttle reason, locked clock, ci: ~310 chars). */
	char reasons[384];
};

/* NVML's clocks-event ("throttle") reason bits, numbered as nvml.h numbers them
 * (nvmlClocksEventReason*). A run's mask is what NVML reported just before it was
 * launched or when its results were decoded; STATS_THROTTLE_UNKNOWN when NVML could not
 * tell. */
#define STATS_THROTTLE_GPU_IDLE              0x1ull
#define STATS_THROTTLE_APPLICATIONS_CLOCKS   0x2ull
#define STATS_THROTTLE_SW_POWER_CAP          0x4ull
#define STATS_THROTTLE_HW_SLOWDOWN           0x8ull
#define STATS_THROTTLE_SYNC_BOOST            0x10ull
#define STATS_THROTTLE_SW_THERMAL            0x20ull
#define STATS_THROTTLE_HW_THERMAL            0x40ull
#define STATS_THROTTLE_HW_POWER_BRAKE        0x80ull
#define STATS_THROTTLE_DISPLAY_CLOCKS        0x100ull
#define STATS_THROTTLE_UNKNOWN               UINT64_MAX
/* The reasons that slow a kernel down: thermal, power and hardware slowdown. Idle,
 * application clocks (the base-clock lock sets them), sync boost and display clocks do
 * not make a run unrepresentative. */
#define STATS_THROTTLE_DISTURBING                                                     \
	(STATS_THROTTLE_SW_POWER_CAP | STATS_THROTTLE_HW_SLOWDOWN |                   \
	 STATS_THROTTLE_SW_THERMAL | STATS_THROTTLE_HW_THERMAL |                      \
	 STATS_THROTTLE_HW_POWER_BRAKE)

/* The name of each set bit that has one ("sw_power_cap", ...), in bit order, into
 * names[0..max); returns how many were written. Unknown bits are left out. */
size_t stats_throttle_names(uint64_t mask, const char **names, size_t max);

/* Two-sided 95 % quantile of Student's t with df degrees of freedom (df >= 1). */
double stats_t975(size_t df);

/* Mean, sample standard deviation (n-1) and the Student-t 95 % CI half-width of the mean
 * of values[0..n); stddev and half are NaN when n < 2 (mean NaN when n == 0). The one
 * computation of the interval: stats_summarize's ci95_low/high and --runs auto's
 * stopping rule (collector/adaptive.c) both use it. */
void stats_interval(const double *values, size_t n, double *mean, double *stddev,
		    double *half);

/* The runs that have a value: the finite ones of values[0..n), in run order, and their
 * count in *kept. values itself when all are finite or none is (the common case, no
 * copy; *copy NULL), else a copy in *copy for the caller to free. NULL, with *kept still
 * the count, when the copy cannot be allocated. stats_summarize and --runs auto's
 * stopping rule (collector/adaptive.c) both leave the other runs out through it. */
const double *stats_finite_runs(const double *values, size_t n, size_t *kept,
				double **copy);

/* Sorts values[0..n) ascending in a total order (IEEE 754 totalOrder): -inf, the numbers
 * with -0 before +0, +inf, then every NaN. The same input in any order gives the same
 * output, NaN or not. Cannot fail. */
void stats_sort(double *values, size_t n);

/* Summarises values[0..n), in run order (the drift condition needs it). A run whose value
 * is NaN or infinite (a metric not produced, a derived value undefined for that run) is
 * left out: s->n counts the others, which are summarised in their order, so a single
 * missing run no longer makes every statistic NaN and the launch not stable;
 * rangeprof/stats.py's summarize() does the same, verdicts and reasons included.
 * clock_hz holds the SM clock measured for each of the n runs, those left out included
 * (NULL, or NaN entries, when unknown); the clock condition of stability (known clocks
 * within 5 % of each other) uses it, and unknown clocks, even all of them, are no
 * failure. Cannot fail; no finite value (n == 0, or all NaN) gives NaN statistics and
 * stable null, as does running out of memory for the copy of the finite values that a
 * run set with a missing value needs. */
void stats_summarize(const double *values, const double *clock_hz, size_t n,
		     struct stats_summary *out);

/* Stability from the runs' throttle reasons: when a disturbing reason (above) was
 * active in any run, s becomes not stable with a reason naming them and how many runs
 * had them. reasons[0..n) per run, NULL or STATS_THROTTLE_UNKNOWN entries when unknown
 * (unknown is not a failure: no NVML must not make every launch unstable). A null
 * verdict (n < 2) stays null. */
void stats_check_throttle(struct stats_summary *s, const uint64_t *reasons, size_t n);

/* A reason that is not a failed condition (collector/placement.h's): added to s's
 * reasons, s's verdict unchanged. */
void stats_note(struct stats_summary *s, const char *reason);

/* --clock-control base: every run's SM clock must be the locked one, within 2 % (NVML
 * reads the clock it set; the counters' average over a run is within ~1 % of it). Runs
 * whose clock is off make s not stable, with a reason giving their count and the clocks;
 * unknown clocks (NaN) are left to stats_summarize's own check. Nothing when locked_hz is
 * not positive (no lock). A null verdict stays null. */
void stats_check_locked_clock(struct stats_summary *s, const double *clock_hz, size_t n,
			      double locked_hz);

/* Marks s not stable for reason (appended to s->reasons); a null verdict stays null. */
void stats_fail(struct stats_summary *s, const char *reason);

#endif
