/* collector/table.h - the end-of-run table on stderr (suppressed by --quiet). */
#ifndef COLLECTOR_TABLE_H
#define COLLECTOR_TABLE_H

#include <stdbool.h>
#include <stddef.h>

/* Adds one measured launch: runs values of the first metric, stride apart; stable is the
 * launch's verdict for that metric as its summary record gives it
 * (collector_launch_summarize). */
void collector_table_add(const char *kernel, const char *nvtx_path, const double *values,
			 size_t runs, size_t stride, bool stable);
/* Prints the table; metric names the first metric, whose values it holds. */
void collector_table_print(const char *metric);

#endif
