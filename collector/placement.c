/* collector/placement.c - the placement rule of placement.h.
 * Calls: none (libc only).
 * Called by: records.c.
 * Lock: none (pure). */
#include "collector/placement.h"

#include <math.h>
#include <stdio.h>

size_t collector_placement_reason(double read_bytes, double write_bytes, double l2_bytes,
				  char *why, size_t size)
{
	static const struct collector_placement_band bands[] = COLLECTOR_PLACEMENT_BANDS;
	if (size)
		why[0] = 0;
	if (!(l2_bytes > 0) || !isfinite(read_bytes) || !isfinite(write_bytes) ||
	    read_bytes < COLLECTOR_PLACEMENT_READ_MIN_L2 * l2_bytes ||
	    read_bytes > COLLECTOR_PLACEMENT_READ_MAX_L2 * l2_bytes ||
	    write_bytes < COLLECTOR_PLACEMENT_WRITE_MIN_BYTES ||
	    write_bytes > COLLECTOR_PLACEMENT_WRITE_MAX_READ * read_bytes)
		return 0;
	double spread = bands[sizeof(bands) / sizeof(bands[0]) - 1].spread_pct;
	for (size_t i = 0; i < sizeof(bands) / sizeof(bands[0]); i++)
		if (write_bytes <= bands[i].write_over_read_max * read_bytes) {
			spread = bands[i].spread_pct;
			break;
		}
	int n = snprintf(why, size, "placement: moves up to %.0f %% with where memory lies "
			 "(reads %.1f MB fit the %.1f MB L2, writes %.2f MB)", spread,
			 read_bytes / 1e6, l2_bytes / 1e6, write_bytes / 1e6);
	return n < 0 ? 0 : (size_t)n < size ? (size_t)n : size ? size - 1 : 0;
}
