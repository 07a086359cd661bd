/* collector/placement.h - when a workload's DRAM write depends on where its memory lies
 * (doc/measurements.md, "Placement"; issue 36). A kernel or range whose reads fit the L2
 * and only some of whose written lines leave it during the run writes back a number of
 * bytes that follows the physical addresses of its arrays: over 12 places 2 MB apart (two
 * sweeps, 24 places) the same kernel's DRAM write moved by up to 287 % of its mean, under
 * rangeprof and ncu alike, while the kernels outside the rule moved by at most 3.2 %
 * (bench/placement_sweep.sh; doc/measurements.md, "Placement"). One measurement cannot
 * tell where in that spread it fell, so the summary's dram__bytes_write.sum carries a
 * reason saying so.
 * python/rangeprof/placement.py applies the same rule to the DataFrames' Reasons;
 * python/tests/test_placement.py reads this header and fails when the two differ.
 * Lock: none (pure). */
#ifndef RANGEPROF_COLLECTOR_PLACEMENT_H
#define RANGEPROF_COLLECTOR_PLACEMENT_H

#include <stddef.h>

/* The rule, on the medians of a workload's runs: reads R, writes W, L2 size. */
#define COLLECTOR_PLACEMENT_READ_MIN_L2 0.25    /* R >= this share of the L2 */
#define COLLECTOR_PLACEMENT_READ_MAX_L2 1.0     /* R <= the L2 */
#define COLLECTOR_PLACEMENT_WRITE_MIN_BYTES 1024.0   /* W at least 1 KB: none left is none moved */
#define COLLECTOR_PLACEMENT_WRITE_MAX_READ 0.3  /* W <= this share of R: few lines left */
#define COLLECTOR_PLACEMENT_PLACES 12           /* places the spreads were measured over */

/* The largest spread over places measured (either tool) for W / R up to the bound. */
struct collector_placement_band {
	double write_over_read_max;
	double spread_pct;
};
#define COLLECTOR_PLACEMENT_BANDS \
	{ { 0.01, 287.0 }, { 0.1, 63.0 }, { COLLECTOR_PLACEMENT_WRITE_MAX_READ, 22.0 } }

/* The metrics the rule reads and the one it speaks of. */
#define COLLECTOR_PLACEMENT_READ_METRIC "dram__bytes_read.sum"
#define COLLECTOR_PLACEMENT_WRITE_METRIC "dram__bytes_write.sum"

/* The reason for W's summary into why (at most 128 bytes with its NUL, no ';': the
 * summary splits its reasons on it), or 0 with why empty when the rule does not hold
 * (or a value is unknown: NaN, l2_bytes <= 0). Returns the length written. */
size_t collector_placement_reason(double read_bytes, double write_bytes, double l2_bytes,
				  char *why, size_t size);

#endif
