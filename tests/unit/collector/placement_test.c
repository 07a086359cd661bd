/* tests/unit/collector/placement_test.c - collector/placement.c's rule at each of its
 * bounds, on both sides, the spread of each band, unknown values, the reason's length and
 * separator, and its way into a summary (collector_record_summary): on the write metric's
 * reasons from the runs' medians, its "stable" left as it was.
 * The spreads expected come from placement.h's own table (COLLECTOR_PLACEMENT_BANDS, a
 * GPU measurement: bench/placement_sweep.sh), not typed here; the bounds are the rule's. */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/placement.h"
#include "collector/records.h"

/* An H200's L2 (its device record's l2_bytes): any size does, the rule is relative. */
#define L2 62914560.0

static const struct collector_placement_band bands[] = COLLECTOR_PLACEMENT_BANDS;
#define BAND_COUNT (sizeof(bands) / sizeof(bands[0]))

/* Whether the rule gives a reason for (r, w, l2); the reason into why. */
static bool gives(double r, double w, double l2, char *why, size_t size)
{
	size_t n = collector_placement_reason(r, w, l2, why, size);
	cr_assert_eq(n, strlen(why), "the length returned is the text's (r %a w %a l2 %a)", r,
		     w, l2);
	return n > 0;
}

/* The spread a reason states: the number after "moves up to ". */
static double spread_of(const char *why)
{
	const char *at = strstr(why, "moves up to ");
	cr_assert_not_null(at, "no spread in '%s'", why);
	return strtod(at + strlen("moves up to "), NULL);
}

Test(placement, reads_from_a_quarter_of_the_l2_to_all_of_it)
{
	char why[128];
	double low = COLLECTOR_PLACEMENT_READ_MIN_L2 * L2, high = COLLECTOR_PLACEMENT_READ_MAX_L2 * L2;
	double w = 0.05 * low;   /* inside every other bound at both ends */
	cr_assert(!gives(nextafter(low, 0), w, L2, why, sizeof(why)), "just under a quarter");
	cr_assert_str_eq(why, "", "no reason leaves why empty");
	cr_assert(gives(low, w, L2, why, sizeof(why)), "a quarter of the L2");
	cr_assert(gives(high, w, L2, why, sizeof(why)), "the whole L2");
	cr_assert(!gives(nextafter(high, INFINITY), w, L2, why, sizeof(why)), "just over the L2");
}

Test(placement, writes_from_one_kilobyte_to_a_share_of_the_reads)
{
	char why[128];
	double r = 0.5 * L2;
	double most = COLLECTOR_PLACEMENT_WRITE_MAX_READ * r;
	cr_assert(!gives(r, nextafter(COLLECTOR_PLACEMENT_WRITE_MIN_BYTES, 0), L2, why,
			 sizeof(why)), "just under 1 KB written: none left is none moved");
	cr_assert(gives(r, COLLECTOR_PLACEMENT_WRITE_MIN_BYTES, L2, why, sizeof(why)), "1 KB");
	cr_assert(gives(r, most, L2, why, sizeof(why)), "writes at the share of the reads");
	cr_assert(!gives(r, nextafter(most, INFINITY), L2, why, sizeof(why)),
		  "writes just over the share of the reads");
	cr_assert(!gives(r, r, L2, why, sizeof(why)), "as much written as read");
}

Test(placement, each_band_states_its_spread_up_to_its_bound)
{
	char why[128];
	double r = 0.5 * L2;
	cr_assert_eq(BAND_COUNT, 3, "the bands of placement.h: 0.01, 0.1 and the rule's bound");
	cr_assert_eq(bands[BAND_COUNT - 1].write_over_read_max, COLLECTOR_PLACEMENT_WRITE_MAX_READ,
		     "the last band ends where the rule does");
	for (size_t i = 0; i < BAND_COUNT; i++) {
		double top = bands[i].write_over_read_max * r;
		cr_assert(gives(r, top, L2, why, sizeof(why)), "band %zu's bound", i);
		cr_assert_eq(spread_of(why), bands[i].spread_pct, "band %zu at its bound: %s", i, why);
		if (i + 1 < BAND_COUNT) {
			cr_assert(gives(r, nextafter(top, INFINITY), L2, why, sizeof(why)));
			cr_assert_eq(spread_of(why), bands[i + 1].spread_pct,
				     "just over band %zu's bound: the next band: %s", i, why);
		}
		/* Each band's spread differs from its neighbour's, or the bound above tells
		 * nothing. */
		if (i)
			cr_assert_neq(bands[i].spread_pct, bands[i - 1].spread_pct);
	}
}

Test(placement, the_text_says_the_spread_and_the_sizes_in_megabytes)
{
	char why[128], expected[128];
	/* 31.5 MB read of the 62.9 MB L2, 2.0 MB written: W / R 0.063, the second band. */
	cr_assert(gives(31.5e6, 2.0e6, L2, why, sizeof(why)));
	snprintf(expected, sizeof(expected), "placement: moves up to %.0f %% with where memory "
		 "lies (reads 31.5 MB fit the 62.9 MB L2, writes 2.00 MB)", bands[1].spread_pct);
	cr_assert_str_eq(why, expected);
	cr_assert_null(strchr(why, ';'), "the summary splits reasons on ';'");
}

Test(placement, an_unknown_value_gives_no_reason)
{
	char why[128];
	double r = 0.5 * L2, w = 0.05 * r;
	cr_assert(gives(r, w, L2, why, sizeof(why)), "the case itself holds");
	const double unknown_l2[] = { NAN, 0, -L2, -INFINITY };
	for (size_t i = 0; i < sizeof(unknown_l2) / sizeof(*unknown_l2); i++) {
		strcpy(why, "stale");
		cr_assert(!gives(r, w, unknown_l2[i], why, sizeof(why)), "l2 %g", unknown_l2[i]);
		cr_assert_str_eq(why, "");
	}
	cr_assert(!gives(NAN, w, L2, why, sizeof(why)), "read NaN");
	cr_assert(!gives(r, NAN, L2, why, sizeof(why)), "write NaN");
	cr_assert(!gives(INFINITY, w, INFINITY, why, sizeof(why)), "infinite read and L2");
	cr_assert(!gives(r, INFINITY, L2, why, sizeof(why)), "infinite write");
}

Test(placement, huge_values_are_cut_to_the_buffer_without_a_separator)
{
	/* An L2 of 1e300 bytes makes numbers of ~300 digits: the text is cut, whole bytes,
	 * at the buffer's end. */
	char why[128];
	double l2 = 1e300, r = 0.5e300, w = 0.001e300;
	size_t n = collector_placement_reason(r, w, l2, why, sizeof(why));
	cr_assert_eq(n, sizeof(why) - 1, "%zu bytes: %s", n, why);
	cr_assert_eq(strlen(why), sizeof(why) - 1);
	cr_assert_null(strchr(why, ';'));
	cr_assert(!strncmp(why, "placement: moves up to ", strlen("placement: moves up to ")));
	/* A smaller buffer is cut the same way, and one of no byte is not written. */
	char small[16];
	cr_assert_eq(collector_placement_reason(r, w, l2, small, sizeof(small)), sizeof(small) - 1);
	cr_assert_eq(strlen(small), sizeof(small) - 1);
	char untouched = 'x';
	cr_assert_eq(collector_placement_reason(r, w, l2, &untouched, 0), 0);
	cr_assert_eq(untouched, 'x');
}

/* ---- collector_record_summary: the reason on the write metric's summary ---- */

static const char *const dram_names[] = { COLLECTOR_PLACEMENT_READ_METRIC,
					  COLLECTOR_PLACEMENT_WRITE_METRIC };
static const char *const dram_units[] = { "byte", "byte" };
#define RUNS 5
/* Per run: read, write. The reads' median is 25 MB (in the rule) but their mean is 80 MB,
 * over the L2, for one run's 300 MB: a rule on the means would give no reason. The
 * writes are steady (stable) at a median of 1 MB. */
static const double dram_values[RUNS * 2] = {
	25e6, 1.00e6,   25e6, 1.001e6,   300e6, 0.999e6,   25e6, 1.00e6,   25e6, 1.00e6 };
static const double dram_clocks[RUNS] = { 1.98e9, 1.98e9, 1.98e9, 1.98e9, 1.98e9 };

static cJSON *dram_summary(const char *const *names, double l2)
{
	struct collector_measure_info info = {
		.metrics = names, .units = dram_units, .metric_count = 2, .passes = 1,
		.runs = RUNS, .cache_control = RP_CACHE_ALL, .clock_control = RP_CLOCK_NONE,
		.rated_sm_clock_hz = 1.98e9, .l2_bytes = l2 };
	struct collector_launch l = { .index = 4, .kernel = "k", .mangled = "k" };
	cJSON *s = collector_record_summary(&l, &info, dram_values, dram_clocks, RUNS);
	cr_assert_not_null(s);
	return s;
}

static cJSON *metric_of(cJSON *summary, const char *name)
{
	cJSON *m = cJSON_GetObjectItem(cJSON_GetObjectItem(summary, "metrics"), name);
	cr_assert_not_null(m, "no summary of %s", name);
	return m;
}

/* Whether a metric's reasons hold text. */
static bool has_reason(cJSON *metric, const char *text)
{
	cJSON *r;
	cJSON_ArrayForEach(r, cJSON_GetObjectItem(metric, "reasons"))
		if (cJSON_IsString(r) && !strcmp(r->valuestring, text))
			return true;
	return false;
}

Test(placement, the_summary_of_the_write_carries_the_reason_of_the_medians)
{
	char expected[128];
	cr_assert(collector_placement_reason(25e6, 1.00e6, L2, expected, sizeof(expected)),
		  "the medians are in the rule");
	double mean_r = 0, mean_w = 0;
	for (size_t r = 0; r < RUNS; r++) {
		mean_r += dram_values[2 * r] / RUNS;
		mean_w += dram_values[2 * r + 1] / RUNS;
	}
	char on_means[128];
	cr_assert_eq(collector_placement_reason(mean_r, mean_w, L2, on_means, sizeof(on_means)), 0,
		     "the means are not: a summary with the reason took the medians");
	cJSON *with = dram_summary(dram_names, L2), *without = dram_summary(dram_names, 0);
	cJSON *w = metric_of(with, COLLECTOR_PLACEMENT_WRITE_METRIC);
	cJSON *w0 = metric_of(without, COLLECTOR_PLACEMENT_WRITE_METRIC);
	cr_assert(has_reason(w, expected), "the write's reasons lack '%s'", expected);
	cr_assert(!has_reason(metric_of(with, COLLECTOR_PLACEMENT_READ_METRIC), expected),
		  "the reason speaks of the write only");
	cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(w0, "stable")), "the writes alone are stable");
	cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(w, "stable")),
		  "the reason is a note, not a failed condition: still stable");
	cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(w, "reasons")),
		     cJSON_GetArraySize(cJSON_GetObjectItem(w0, "reasons")) + 1,
		     "one reason more than without the L2");
	cJSON_Delete(with);
	cJSON_Delete(without);
}

Test(placement, no_reason_without_the_l2_or_the_read_metric)
{
	static const char *const no_read[] = { "gpu__time_duration.sum",
					       COLLECTOR_PLACEMENT_WRITE_METRIC };
	const struct { const char *const *names; double l2; const char *what; } cases[] = {
		{ dram_names, 0, "the L2 unknown (0)" },
		{ dram_names, NAN, "the L2 unknown (NaN)" },
		{ no_read, L2, "no read metric in the set" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		cJSON *s = dram_summary(cases[i].names, cases[i].l2);
		cJSON *reasons = cJSON_GetObjectItem(metric_of(s, COLLECTOR_PLACEMENT_WRITE_METRIC),
						     "reasons");
		cJSON *r;
		cJSON_ArrayForEach(r, reasons)
			cr_assert_null(strstr(r->valuestring, "placement"), "%s: %s", cases[i].what,
				       r->valuestring);
		cJSON_Delete(s);
	}
}
