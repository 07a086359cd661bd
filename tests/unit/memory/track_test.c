/* tests/unit/memory/track_test.c - the allocation list and range arithmetic that decide
 * what a measured launch saves and what verification hashes (memory/track.c). */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "memory/memory.h"

Test(ranges, normalize_merges_overlaps_but_not_touching_allocations)
{
	/* Two allocations that touch must stay apart: one copy may not span both. */
	struct mem_range r[] = { { 0x3000, 0x100 }, { 0x1000, 0x1000 }, { 0x2000, 0x800 },
				 { 0x1800, 0x100 }, { 0x3080, 0x100 } };
	size_t n = mem_ranges_normalize(r, 5);
	cr_assert_eq(n, 3);
	cr_assert_eq(r[0].base, 0x1000);
	cr_assert_eq(r[0].size, 0x1000);
	cr_assert_eq(r[1].base, 0x2000);
	cr_assert_eq(r[1].size, 0x800);
	cr_assert_eq(r[2].base, 0x3000);
	cr_assert_eq(r[2].size, 0x180);
	cr_assert_eq(mem_ranges_normalize(r, 0), 0);
}

Test(ranges, find_is_exact_at_both_ends)
{
	struct mem_range r[] = { { 0x1000, 0x100 }, { 0x2000, 0x10 } };
	cr_assert_eq(mem_ranges_find(r, 2, 0xfff), -1);
	cr_assert_eq(mem_ranges_find(r, 2, 0x1000), 0);
	cr_assert_eq(mem_ranges_find(r, 2, 0x10ff), 0);
	cr_assert_eq(mem_ranges_find(r, 2, 0x1100), -1);
	cr_assert_eq(mem_ranges_find(r, 2, 0x200f), 1);
	cr_assert_eq(mem_ranges_find(r, 2, 0x2010), -1);
	cr_assert_eq(mem_ranges_find(r, 0, 0x1000), -1);
}

Test(ranges, subtract_leaves_exactly_what_is_outside)
{
	struct mem_range all[] = { { 0x1000, 0x1000 }, { 0x3000, 0x100 }, { 0x5000, 0x100 } };
	/* A hole in the middle of the first, the whole second, the start of the third. */
	struct mem_range cut[] = { { 0x1400, 0x200 }, { 0x3000, 0x100 }, { 0x4f00, 0x180 } };
	struct mem_range out[6];
	size_t n = mem_ranges_subtract(all, 3, cut, 3, out);
	cr_assert_eq(n, 3);
	cr_assert_eq(out[0].base, 0x1000);
	cr_assert_eq(out[0].size, 0x400);
	cr_assert_eq(out[1].base, 0x1600);
	cr_assert_eq(out[1].size, 0xa00);
	cr_assert_eq(out[2].base, 0x5080);
	cr_assert_eq(out[2].size, 0x80);
	cr_assert_eq(mem_ranges_subtract(all, 3, NULL, 0, out), 3);
}

static size_t snapshot(struct mem_range **out)
{
	size_t n = mem_track_snapshot(out);
	return mem_ranges_normalize(*out, n);
}

Test(track, follows_allocations_frees_and_unmaps)
{
	struct mem_range *s = NULL;
	cr_assert_eq(mem_track_snapshot(&s), 0);
	cr_assert_null(s);
	mem_track_add(0x30000, 0x1000);
	mem_track_add(0x10000, 0x2000);
	mem_track_add(0x20000, 0x100);
	mem_track_add(0, 0x100);        /* failed calls report no pointer: ignored */
	mem_track_add(0x40000, 0);
	cr_assert_eq(mem_track_bytes(), 0x3100);
	size_t n = snapshot(&s);
	cr_assert_eq(n, 3);
	cr_assert_eq(s[0].base, 0x10000);
	cr_assert_eq(s[2].base, 0x30000);
	free(s);
	mem_track_remove(0x20000);
	mem_track_remove(0x12345);      /* not an allocation's start: nothing happens */
	cr_assert_eq(mem_track_bytes(), 0x3000);
	/* cuMemUnmap of a range covering the middle of one mapping and another whole. */
	mem_track_add(0x50000, 0x1000);
	mem_track_add(0x51000, 0x1000);
	mem_track_remove_range(0x50800, 0x1000);
	n = snapshot(&s);
	cr_assert_eq(n, 2);
	cr_assert_eq(s[0].base, 0x10000);
	cr_assert_eq(s[1].base, 0x30000);
	free(s);
	/* An address reused without a free we saw takes the new size. */
	mem_track_add(0x10000, 0x500);
	cr_assert_eq(mem_track_bytes(), 0x1500);
}

Test(track, keeps_thousands_sorted)
{
	for (unsigned i = 0; i < 5000; i++)
		mem_track_add(0x100000000ull + (CUdeviceptr)((i * 7919u) % 5000u) * 0x1000, 0x800);
	struct mem_range *s = NULL;
	size_t n = mem_track_snapshot(&s);
	cr_assert_eq(n, 5000);
	for (size_t i = 1; i < n; i++)
		cr_assert_gt(s[i].base, s[i - 1].base);
	free(s);
}
