/* tests/unit/collector/stats_print.c - collector/stats.c's summary of run sets read from
 * stdin, for python/tests/test_stats_c_agree.py, which compiles this file with stats.c
 * and compares the output with rangeprof/stats.py's summarize() on the same runs. Not a
 * Criterion test and not built by meson: it needs only libc and libm.
 *
 * Input, one run set per line: the values, then optionally '|' and the SM clocks of the
 * same runs, then optionally '|' and their throttle masks; numbers as strtod reads them
 * (nan, inf, -0, hex floats: Python's float.hex() gives them exactly), masks as strtoull
 * reads them (0x28) or 'u' for unknown; '-' for a part that is absent (NULL).
 * Output, one line per set, tab-separated: n, mean, stddev, min, median, max, ci95_low,
 * ci95_high, rsd_pct, drift_pct (each as printf's %a, exact), stable (true, false or
 * null) and the reasons. */
#define _POSIX_C_SOURCE 200809L /* getline, strtok_r */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/stats.h"

/* Splits line at each '|' into at most max parts; returns how many. */
static size_t split_parts(char *line, char **parts, size_t max)
{
	size_t count = 0;
	for (char *p = line; count < max;) {
		parts[count++] = p;
		char *bar = strchr(p, '|');
		if (!bar)
			break;
		*bar = '\0';
		p = bar + 1;
	}
	return count;
}

/* The numbers of text into a new array (*count of them); NULL for '-' (absent). Exits on
 * a token that is no number: the test wrote it, so that is the test's mistake. */
static double *read_numbers(char *text, size_t *count)
{
	*count = 0;
	size_t capacity = 16;
	double *out = malloc(capacity * sizeof(*out));
	char *save = NULL;
	for (char *tok = strtok_r(text, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save)) {
		if (!strcmp(tok, "-")) {
			free(out);
			return NULL;
		}
		char *end;
		double v = strtod(tok, &end);
		if (*end) {
			fprintf(stderr, "stats_print: '%s' is no number\n", tok);
			exit(2);
		}
		if (*count == capacity)
			out = realloc(out, (capacity *= 2) * sizeof(*out));
		out[(*count)++] = v;
	}
	return out;
}

static uint64_t *read_masks(char *text, size_t *count)
{
	*count = 0;
	size_t capacity = 16;
	uint64_t *out = malloc(capacity * sizeof(*out));
	char *save = NULL;
	for (char *tok = strtok_r(text, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save)) {
		if (!strcmp(tok, "-")) {
			free(out);
			return NULL;
		}
		uint64_t v = STATS_THROTTLE_UNKNOWN;
		if (strcmp(tok, "u")) {
			char *end;
			v = strtoull(tok, &end, 0);
			if (*end) {
				fprintf(stderr, "stats_print: '%s' is no mask\n", tok);
				exit(2);
			}
		}
		if (*count == capacity)
			out = realloc(out, (capacity *= 2) * sizeof(*out));
		out[(*count)++] = v;
	}
	return out;
}

int main(void)
{
	char *line = NULL;
	size_t size = 0;
	while (getline(&line, &size, stdin) > 0) {
		char *parts[3];
		size_t n_parts = split_parts(line, parts, 3), n = 0, n_clocks = 0, n_masks = 0;
		double *values = read_numbers(parts[0], &n);
		double *clocks = n_parts > 1 ? read_numbers(parts[1], &n_clocks) : NULL;
		uint64_t *masks = n_parts > 2 ? read_masks(parts[2], &n_masks) : NULL;
		if (!values || (clocks && n_clocks != n) || (masks && n_masks != n)) {
			fprintf(stderr, "stats_print: %zu values, %zu clocks, %zu masks\n", n,
				n_clocks, n_masks);
			return 2;
		}
		struct stats_summary s;
		stats_summarize(values, clocks, n, &s);
		stats_check_throttle(&s, masks, n);
		printf("%zu\t%a\t%a\t%a\t%a\t%a\t%a\t%a\t%a\t%a\t%s\t%s\n", s.n, s.mean, s.stddev,
		       s.min, s.median, s.max, s.ci95_low, s.ci95_high, s.rsd_pct, s.drift_pct,
		       s.stable == STATS_STABLE_NULL ? "null" :
		       s.stable == STATS_STABLE_TRUE ? "true" : "false", s.reasons);
		free(values);
		free(clocks);
		free(masks);
	}
	free(line);
	return 0;
}
