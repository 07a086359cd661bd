/* collector/table.c - the short table printed at exit: per kernel and NVTX path, the runs
 * measured, their mean, RSD and how many launches were stable. Filled after each measured
 * launch (any thread), printed once by inject/'s exit handler.
 * Calls: stats.c, common/ (log.c; libc besides).
 * Called by: inject/ (emit.c fills it, init.c prints it).
 * Lock: table_lock (the rows). */
#include "collector/table.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/stats.h"
#include "common/log.h"

struct table_row {
	char *kernel, *path;
	double *values;
	size_t n, capacity;
	size_t launches, unstable;
};
static struct table_row *rows;
static size_t row_count;
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;

void collector_table_add(const char *kernel, const char *nvtx_path, const double *values,
		      size_t runs, size_t stride, bool stable)
{
	pthread_mutex_lock(&table_lock);
	struct table_row *row = NULL;
	for (size_t i = 0; i < row_count && !row; i++)
		if (!strcmp(rows[i].kernel, kernel) && !strcmp(rows[i].path, nvtx_path))
			row = &rows[i];
	if (!row) {
		struct table_row *grown = realloc(rows, (row_count + 1) * sizeof(*grown));
		if (!grown)
			goto out;
		rows = grown;
		row = &rows[row_count++];
		memset(row, 0, sizeof(*row));
		row->kernel = strdup(kernel);
		row->path = strdup(nvtx_path);
	}
	if (row->n + runs > row->capacity) {
		size_t cap = 2 * (row->n + runs);
		double *grown = realloc(row->values, cap * sizeof(*grown));
		if (!grown)
			goto out;
		row->values = grown;
		row->capacity = cap;
	}
	for (size_t r = 0; r < runs; r++)
		row->values[row->n++] = values[r * stride];
	row->launches++;
	row->unstable += !stable;
out:
	pthread_mutex_unlock(&table_lock);
}

size_t collector_table_rows(void)
{
	pthread_mutex_lock(&table_lock);
	size_t n = row_count;
	pthread_mutex_unlock(&table_lock);
	return n;
}

bool collector_nothing_measured_why(const struct collector_launch_counts *c, char *why,
				    size_t size)
{
	char q[RP_QUOTE_SIZE], qr[RP_QUOTE_SIZE];
	if (c->controlled && !c->annotated)
		return false;
	if (!c->launches) {
		snprintf(why, size, "the application launched no kernel");
		return true;
	}
	if (c->controlled && !c->nvtx_selected) {
		snprintf(why, size, "none of its %lu kernel launches came while a rangeprof "
			 "annotation was open", c->launches);
		return true;
	}
	if (c->nvtx_filtered && !c->nvtx_selected) {
		int n = snprintf(why, size, "none of its %lu kernel launches was inside the NVTX "
				 "ranges --nvtx-include/--nvtx-exclude select", c->launches);
		if (n < 0 || (size_t)n >= size)
			return true;
		if (!c->nvtx_modules)
			snprintf(why + n, size - (size_t)n, " (no NVTX range reached rangeprof: no "
				 "module of the application called NVTX)");
		else if (c->hint_expr && !strchr(c->hint_expr, ','))
			/* 'regex:^matmul' names start/end ranges; the user meant push/pop ranges. */
			snprintf(why + n, size - (size_t)n, "; '%s' has no '/', so it names start/end "
				 "ranges (nvtxRangeStart), but push/pop ranges such as '%s' were open: "
				 "'%s/' selects the launches inside push/pop ranges",
				 rp_quote(c->hint_expr, q, sizeof(q)),
				 rp_quote(c->hint_range, qr, sizeof(qr)), q);
		else if (c->hint_expr)
			snprintf(why + n, size - (size_t)n, "; '%s' has no '/', so it names start/end "
				 "ranges (nvtxRangeStart), but push/pop ranges such as '%s' were open: "
				 "the '/' form ('A/', 'A/*/B') selects launches inside push/pop ranges",
				 rp_quote(c->hint_expr, q, sizeof(q)),
				 rp_quote(c->hint_range, qr, sizeof(qr)));
		return true;
	}
	if (c->kernel_name && !c->name_selected) {
		snprintf(why, size, "none of the %lu launches inside the selected ranges was of a "
			 "kernel named -k '%s'", c->nvtx_selected,
			 rp_quote(c->kernel_name, q, sizeof(q)));
		return true;
	}
	if (c->taken && c->launch_skip && c->taken <= (unsigned long)c->launch_skip) {
		snprintf(why, size, "all %lu selected launches were skipped by --launch-skip %ld",
			 c->taken, c->launch_skip);
		return true;
	}
	if (c->not_replayed && !c->taken) {
		snprintf(why, size, "the selected launches could not be replayed (the totals "
			 "above say which)");
		return true;
	}
	snprintf(why, size, "the selected launches were not measured (the messages above say "
		 "why)");
	return true;
}

void collector_table_print(const char *metric)
{
	if (!row_count || rp_log_quiet())
		return;
	rp_log_progress("%-40.40s %-30.30s %5s %14s %7s %s", "kernel", "nvtx", "runs", "mean",
			"rsd%", "stable");
	for (size_t i = 0; i < row_count; i++) {
		struct stats_summary s;
		stats_summarize(rows[i].values, NULL, rows[i].n, &s);
		char stable[32];
		snprintf(stable, sizeof(stable), "%zu/%zu", rows[i].launches - rows[i].unstable,
			 rows[i].launches);
		rp_log_progress("%-40.40s %-30.30s %5zu %14.6g %7.2f %s", rows[i].kernel,
				*rows[i].path ? rows[i].path : "-", rows[i].n, s.mean, s.rsd_pct,
				stable);
	}
	rp_log_progress("(mean of %s over all runs; stable: launches whose runs were stable)",
			metric);
}

