/* tests/unit/memory/track_test.c - the allocation list and range arithmetic that decide
 * what a measured launch saves and what verification hashes (memory/track.c). Linked with
 * -Wl,--wrap=malloc and --wrap=realloc (tests/meson.build), so that a snapshot and a growing
 * reach can meet a failing allocation. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/error.h"
#include "memory/memory.h"

/* malloc of this test and of track.c, failing while malloc_fails is set. */
void *__real_malloc(size_t size);
void *__wrap_malloc(size_t size);
static bool malloc_fails;
void *__wrap_malloc(size_t size)
{
	return malloc_fails ? NULL : __real_malloc(size);
}
/* realloc too: a growing array (mem_reach_add) meets the failure there. */
void *__real_realloc(void *p, size_t size);
void *__wrap_realloc(void *p, size_t size);
void *__wrap_realloc(void *p, size_t size)
{
	return malloc_fails ? NULL : __real_realloc(p, size);
}

/* "base+size base+size ..." of r[0..n), in hex. */
static void format_ranges(const struct mem_range *r, size_t n, char *buf, size_t size)
{
	size_t used = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < n && used < size; i++)
		used += (size_t)snprintf(buf + used, size - used, "%s%#llx+%#zx", i ? " " : "",
					 (unsigned long long)r[i].base, r[i].size);
}

/* got[0..got_n) is want[0..want_n), range for range; a mismatch shows both lists. */
static void assert_ranges(const struct mem_range *got, size_t got_n,
			  const struct mem_range *want, size_t want_n)
{
	char g[512], w[512];
	format_ranges(got, got_n, g, sizeof(g));
	format_ranges(want, want_n, w, sizeof(w));
	cr_assert_str_eq(g, w);
}

Test(ranges, normalize_merges_overlaps_but_not_touching_allocations)
{
	/* Two allocations that touch must stay apart: one copy may not span both. */
	struct mem_range r[] = { { 0x3000, 0x100 }, { 0x1000, 0x1000 }, { 0x2000, 0x800 },
				 { 0x1800, 0x100 }, { 0x3080, 0x100 } };
	size_t n = mem_ranges_normalize(r, 5);
	assert_ranges(r, n, (struct mem_range[]){ { 0x1000, 0x1000 }, { 0x2000, 0x800 },
						  { 0x3000, 0x180 } }, 3);
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
	assert_ranges(out, n, (struct mem_range[]){ { 0x1000, 0x400 }, { 0x1600, 0xa00 },
						    { 0x5080, 0x80 } }, 3);
	cr_assert_eq(mem_ranges_subtract(all, 3, NULL, 0, out), 3);
}

Test(ranges, cover_needs_each_inner_range_inside_one_outer_range)
{
	struct mem_range outer[] = { { 0x1000, 0x1000 }, { 0x3000, 0x100 } };
	struct mem_range inside[] = { { 0x1000, 0x1000 }, { 0x3080, 0x80 } };
	struct mem_range across[] = { { 0x1f00, 0x200 } };  /* runs past the first's end */
	struct mem_range gap[] = { { 0x2000, 0x10 } };
	cr_assert(mem_ranges_cover(outer, 2, inside, 2));
	cr_assert_not(mem_ranges_cover(outer, 2, across, 1));
	cr_assert_not(mem_ranges_cover(outer, 2, gap, 1));
	cr_assert(mem_ranges_cover(outer, 2, NULL, 0), "nothing is covered by anything");
	cr_assert_not(mem_ranges_cover(NULL, 0, gap, 1));
}

Test(ranges, reach_add_keeps_a_sorted_merged_union_and_its_bytes)
{
	struct mem_reach u = { 0 };
	struct mem_range a[] = { { 0x3000, 0x100 }, { 0x1000, 0x100 } };
	struct mem_range b[] = { { 0x1080, 0x100 }, { 0x3000, 0x100 } };
	cr_assert_eq(mem_reach_add(&u, a, 2), 0);
	cr_assert_eq(mem_reach_add(&u, b, 2), 0);
	assert_ranges(u.ranges, u.count, (struct mem_range[]){ { 0x1000, 0x180 }, { 0x3000, 0x100 } },
		      2);
	cr_assert_eq(u.bytes, 0x280);
	/* Past its capacity with malloc failing: refused, the set as it was. */
	struct mem_range many[40];
	for (size_t i = 0; i < 40; i++)
		many[i] = (struct mem_range){ 0x10000 + i * 0x1000, 0x10 };
	free(u.ranges);
	u = (struct mem_reach){ 0 };
	malloc_fails = true;
	int rc = mem_reach_add(&u, many, 40);
	malloc_fails = false;
	cr_assert_eq(rc, RP_ERR_NO_MEMORY);
	cr_assert_eq(u.count, 0);
	cr_assert_eq(mem_reach_add(&u, many, 40), 0);
	cr_assert_eq(u.count, 40);
	free(u.ranges);
}

Test(ranges, hashes_differ_outside_ignores_changes_the_kept_ranges_account_for)
{
	struct mem_range segments[] = { { 0x1000, 0x100 }, { 0x2000, 0x100 }, { 0x3000, 0x100 } };
	uint64_t was[] = { 1, 2, 3 }, now[] = { 1, 9, 9 };
	struct mem_hashes before = { .segments = segments, .sums = was, .count = 3 };
	struct mem_hashes after = { .segments = segments, .sums = now, .count = 3 };
	struct mem_range kept[] = { { 0x2000, 0x100 } };
	cr_assert_eq(mem_hashes_differ_outside(&before, &after, kept, 1), 2,
		     "segment 1 changed inside kept; segment 2 outside it");
	struct mem_range both[] = { { 0x2000, 0x1100 } };
	cr_assert_eq(mem_hashes_differ_outside(&before, &after, both, 1), -1);
	cr_assert_eq(mem_hashes_differ_outside(&before, &after, NULL, 0), 1);
}

static size_t snapshot(struct mem_range **out)
{
	size_t n = 0;
	cr_assert_eq(mem_track_snapshot(out, &n), 0);
	return mem_ranges_normalize(*out, n);
}

Test(track, follows_allocations_frees_and_unmaps)
{
	struct mem_range *s = NULL;
	size_t none = 1;
	cr_assert_eq(mem_track_snapshot(&s, &none), 0, "nothing tracked is no failure");
	cr_assert_eq(none, 0);
	cr_assert_null(s);
	mem_track_add(0x30000, 0x1000);
	mem_track_add(0x10000, 0x2000);
	mem_track_add(0x20000, 0x100);
	mem_track_add(0, 0x100);        /* failed calls report no pointer: ignored */
	mem_track_add(0x40000, 0);
	cr_assert_eq(mem_track_bytes(), 0x3100);
	size_t n = snapshot(&s);
	assert_ranges(s, n, (struct mem_range[]){ { 0x10000, 0x2000 }, { 0x20000, 0x100 },
						  { 0x30000, 0x1000 } }, 3);
	free(s);
	mem_track_remove(0x20000);
	mem_track_remove(0x12345);      /* not an allocation's start: nothing happens */
	cr_assert_eq(mem_track_bytes(), 0x3000);
	/* cuMemUnmap of a range covering the middle of one mapping and another whole. */
	mem_track_add(0x50000, 0x1000);
	mem_track_add(0x51000, 0x1000);
	mem_track_remove_range(0x50800, 0x1000);
	n = snapshot(&s);
	assert_ranges(s, n, (struct mem_range[]){ { 0x10000, 0x2000 }, { 0x30000, 0x1000 } }, 2);
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
	size_t n = 0;
	cr_assert_eq(mem_track_snapshot(&s, &n), 0);
	cr_assert_eq(n, 5000);
	for (size_t i = 1; i < n; i++)
		cr_assert_gt(s[i].base, s[i - 1].base);
	free(s);
}

/* A snapshot that cannot be copied says so: taken for "nothing tracked", it would make the
 * reach save nothing and verification hash nothing. */
Test(track, a_snapshot_without_memory_fails_with_no_memory_rather_than_coming_back_empty)
{
	mem_track_add(0x10000, 0x1000);
	struct mem_range *s = (struct mem_range *)&s;
	size_t n = 7;
	malloc_fails = true;
	int rc = mem_track_snapshot(&s, &n);
	malloc_fails = false;
	cr_assert_eq(rc, RP_ERR_NO_MEMORY, "%s", rp_error_name(rc));
	cr_assert_null(s);
	cr_assert_eq(n, 0);
	cr_assert_eq(mem_track_snapshot(&s, &n), 0);
	cr_assert_eq(n, 1);
	free(s);
}
