/* tests/unit/common/launch_metrics_test.c - the launch__ metrics' formulas
 * (common/launch_metrics.c) against ncu's own values for 18 launches on the H200, recorded
 * in python/tests/fixtures/recorded_launch/ (its README says how): each launch's shape is
 * made from the recording (block, grid, dynamic shared memory, ptxas's registers, the
 * device's attributes, the occupancy API's blocks) and every value rangeprof supplies must
 * be ncu's. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/launch_metrics.h"

#define MAX_FIELDS 512

/* Splits one CSV line of ncu's (every field quoted) into fields; returns their count. */
static size_t split(char *line, char *fields[MAX_FIELDS])
{
	size_t n = 0;
	for (char *p = line; *p == '"' && n < MAX_FIELDS;) {
		char *end = strchr(p + 1, '"');
		if (!end)
			break;
		*end = '\0';
		fields[n++] = p + 1;
		p = end + 1;
		if (*p == ',')
			p++;
	}
	return n;
}

/* ncu's number: "3,670" is 3670. */
static double number(const char *text)
{
	char digits[64];
	size_t n = 0;
	for (const char *p = text; *p && n + 1 < sizeof(digits); p++)
		if (*p != ',')
			digits[n++] = *p;
	digits[n] = '\0';
	return n ? strtod(digits, NULL) : NAN;
}

static FILE *fixture(const char *name)
{
	const char *dir = getenv("LAUNCH_FIXTURES");
	cr_assert_not_null(dir, "LAUNCH_FIXTURES names python/tests/fixtures/recorded_launch");
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f, "%s", path);
	return f;
}

static long device_attribute(int id)
{
	FILE *f = fixture("device.txt");
	int n;
	long v, found = -1;
	while (fscanf(f, "devattr %d = %ld\n", &n, &v) == 2)
		if (n == id)
			found = v;
	fclose(f);
	cr_assert_geq(found, 0, "device attribute %d recorded", id);
	return found;
}

/* ptxas's registers of kernel name ("h17" for _Z3h17Pfi). */
static long ptxas_registers(const char *name)
{
	FILE *f = fixture("ptxas.txt");
	char mangled[128];
	long regs, found = -1;
	while (fscanf(f, "%127s %ld\n", mangled, &regs) == 2) {
		char *p = mangled + 2;
		long len = strtol(p, &p, 10);
		if ((size_t)len == strlen(name) && !strncmp(p, name, (size_t)len))
			found = regs;
	}
	fclose(f);
	cr_assert_geq(found, 0, "ptxas recorded %s", name);
	return found;
}

/* The occupancy API's blocks for the launch, -1 when the program did not print it. */
static long occupancy(const char *name, long threads, long dynamic)
{
	FILE *f = fixture("occupancy.txt");
	char line[256];
	long found = -1;
	while (fgets(line, sizeof(line), f)) {
		char who[64];
		long t, s, occ, regs;
		if (sscanf(line, "dyn %ld %ld occ=%ld", &t, &s, &occ) == 3) {
			if (!strcmp(name, "dyn") && t == threads && s == dynamic)
				found = occ;
		} else if (sscanf(line, "%63s regs=%ld occ=%ld", who, &regs, &occ) == 3 &&
			   !strcmp(who, name)) {
			found = occ;
		}
	}
	fclose(f);
	return found;
}

static void dims(const char *text, long out[3])
{
	cr_assert_eq(sscanf(text, "(%ld, %ld, %ld)", &out[0], &out[1], &out[2]), 3, "%s", text);
}

Test(launch_metrics, every_supplied_value_is_ncus_for_the_recorded_launches)
{
	FILE *f = fixture("ncu_raw.csv");
	static char header_line[1 << 16], line[1 << 16];
	char *header[MAX_FIELDS], *row[MAX_FIELDS];
	size_t columns = 0, launches = 0, compared = 0;
	while (fgets(line, sizeof(line), f)) {
		if (line[0] != '"')
			continue;
		if (!columns) {
			memcpy(header_line, line, sizeof(line));
			columns = split(header_line, header);
			fgets(line, sizeof(line), f); /* the units row */
			continue;
		}
		size_t n = split(line, row);
		cr_assert_eq(n, columns);
		const char *kernel = NULL, *block = NULL, *grid = NULL;
		double dynamic = NAN;
		for (size_t i = 0; i < n; i++) {
			if (!strcmp(header[i], "Kernel Name"))
				kernel = row[i];
			else if (!strcmp(header[i], "Block Size"))
				block = row[i];
			else if (!strcmp(header[i], "Grid Size"))
				grid = row[i];
			else if (!strcmp(header[i], "launch__shared_mem_per_block_dynamic"))
				dynamic = number(row[i]);
		}
		cr_assert(kernel && block && grid);
		if (isnan(dynamic))
			continue; /* the launch that failed: ncu has no values */
		char name[64];
		snprintf(name, sizeof(name), "%.*s", (int)strcspn(kernel, "("), kernel);
		struct rp_launch_shape s = {
			.dynamic_smem = (long)dynamic, .static_smem = 0,
			.registers = ptxas_registers(name), .stack_size = -1, .cc_major = 9,
			.sm_count = device_attribute(16), .warp_size = device_attribute(10),
			.max_threads_per_sm = device_attribute(39),
			.max_blocks_per_sm = device_attribute(106),
			.regs_per_sm = device_attribute(82), .regs_per_block = device_attribute(12),
			.reserved_smem_per_block = device_attribute(111) };
		dims(block, s.block);
		dims(grid, s.grid);
		s.active_blocks_per_sm = occupancy(name, s.block[0] * s.block[1] * s.block[2],
						   s.dynamic_smem);
		launches++;
		for (size_t i = 0; i < n; i++) {
			const struct rp_launch_metric_desc *d =
				rp_launch_metric_find(header[i], strlen(header[i]));
			if (!d || d->id == RP_LAUNCH_STACK_SIZE)
				continue; /* the context's limit: not recorded beside these */
			double ncu = number(row[i]), ours = rp_launch_metric_value(d->id, &s);
			if (d->id == RP_LAUNCH_WAVES_PER_MULTIPROCESSOR) {
				if (s.active_blocks_per_sm < 0)
					continue; /* the program did not print its occupancy */
				/* ncu prints two decimals, as printf does (0.125 is 0.12). */
				char text[32];
				snprintf(text, sizeof(text), "%.2f", ours);
				ours = strtod(text, NULL);
			}
			cr_assert_eq(ours, ncu, "%s <<<%s, %s>>>: %s is %g, ncu says %g", name, grid,
				     block, d->name, ours, ncu);
			compared++;
		}
	}
	fclose(f);
	cr_assert_eq(launches, 18, "every recorded launch with values was compared: %zu",
		     launches);
	/* Every metric but the stack size, the waves where the occupancy was printed (not for
	 * the two launches of 'tiny'). */
	cr_assert_eq(compared, 18 * (RP_LAUNCH_METRIC_COUNT - 1) - 2, "compared %zu", compared);
}

Test(launch_metrics, names_are_found_by_their_length_and_the_prefix_is_ncus)
{
	cr_assert(rp_metric_is_launch("launch__sm_count,x", 16));
	cr_assert_not(rp_metric_is_launch("gpu__time_duration.sum", 22));
	cr_assert_not_null(rp_launch_metric_find("launch__sm_count,gpu__x", 16));
	cr_assert_null(rp_launch_metric_find("launch__sm_coun", 15));
	cr_assert_null(rp_launch_metric_find("launch__shared_mem_config_size", 30),
		       "the driver's carveout choice is not supplied (doc/records.md says why)");
	for (size_t i = 0; i < RP_LAUNCH_METRIC_COUNT; i++)
		cr_assert_eq(rp_launch_metric_table()[i].id, (enum rp_launch_metric)i);
}

Test(launch_metrics, an_unknown_field_makes_only_the_metrics_that_need_it_nan)
{
	struct rp_launch_shape s = { .grid = { 10, 1, 1 }, .block = { 256, 1, 1 },
				     .registers = -1, .sm_count = 132, .warp_size = 32,
				     .max_threads_per_sm = 2048, .active_blocks_per_sm = -1,
				     .static_smem = -1 };
	cr_assert(isnan(rp_launch_metric_value(RP_LAUNCH_REGISTERS_PER_THREAD, &s)));
	cr_assert(isnan(rp_launch_metric_value(RP_LAUNCH_WAVES_PER_MULTIPROCESSOR, &s)));
	cr_assert(isnan(rp_launch_metric_value(RP_LAUNCH_SHARED_MEM_PER_BLOCK, &s)));
	cr_assert_eq(rp_launch_metric_value(RP_LAUNCH_OCCUPANCY_LIMIT_WARPS, &s), 8);
	cr_assert_eq(rp_launch_metric_value(RP_LAUNCH_THREAD_COUNT, &s), 2560);
	cr_assert_eq(rp_launch_metric_value(RP_LAUNCH_CLUSTER_SIZE, &s), 0, "no clusters");
}
