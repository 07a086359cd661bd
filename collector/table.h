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
/* How many rows the table has: 0 when the process measured nothing. */
size_t collector_table_rows(void);

/* What the process's launches went through, for the exit line of a run that measured
 * nothing (inject/callback/launch.c fills it). */
struct collector_launch_counts {
	unsigned long launches;         /* kernel and graph launches the process made */
	bool nvtx_filtered;             /* NVTX expressions were given */
	unsigned long nvtx_selected;    /* launches inside the selected ranges */
	unsigned nvtx_modules;          /* NVTX client modules that reached rangeprof */
	const char *hint_expr;          /* nvtx_filter_push_pop_hint: the include ... */
	const char *hint_range;         /* ... and the push/pop range it named */
	const char *kernel_name;        /* -k, NULL when not given */
	unsigned long name_selected;    /* launches also of a kernel -k names */
	long launch_skip;               /* -s */
	unsigned long taken;            /* launches past every filter, -s and -c counted */
	unsigned long not_replayed;     /* under capture, collectives, graphs with -g none */
	bool controlled;                /* the control API selects (annotations) */
	bool annotated;                 /* ... and an annotation was opened */
};
/* Why a process measured nothing, from what its launches went through: the first filter
 * that let none pass, with the push/pop hint where an include without '/' named such a
 * range. Writes one sentence without a final stop into why; false when there is nothing
 * to say (under the control API with no annotation ever opened, nothing was asked). */
bool collector_nothing_measured_why(const struct collector_launch_counts *c, char *why,
				    size_t size);

#endif
