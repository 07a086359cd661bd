/* tests/unit/inject/graph_order_test.c - the order graphs.c runs a graph's nodes in, and the
 * bookkeeping of stream captures under way. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <time.h>

#include "common/error.h"
#include "inject/session/captures.h"
#include "inject/graph/graph_order.h"

static bool respects(size_t n, const size_t *from, const size_t *to, size_t e, const size_t *order)
{
	size_t *at = calloc(n, sizeof(*at));
	bool *seen = calloc(n, sizeof(*seen));
	for (size_t i = 0; i < n; i++) {
		if (order[i] >= n || seen[order[i]])
			return false;
		seen[order[i]] = true;
		at[order[i]] = i;
	}
	bool ok = true;
	for (size_t i = 0; i < e; i++)
		ok &= at[from[i]] < at[to[i]];
	free(at);
	free(seen);
	return ok;
}

Test(graph_order, a_chain_runs_in_its_order)
{
	size_t from[] = { 2, 0 }, to[] = { 1, 2 }, order[3];
	cr_assert_eq(inject_graph_order(3, from, to, 2, order), 0);
	cr_assert(order[0] == 0 && order[1] == 2 && order[2] == 1);
}

Test(graph_order, ready_nodes_go_lowest_first_and_a_diamond_joins_last)
{
	/* 0 -> {1, 2} -> 3, and 4 alone. */
	size_t from[] = { 0, 0, 1, 2 }, to[] = { 2, 1, 3, 3 }, order[5];
	cr_assert_eq(inject_graph_order(5, from, to, 4, order), 0);
	size_t want[] = { 0, 1, 2, 3, 4 };
	for (size_t i = 0; i < 5; i++)
		cr_assert_eq(order[i], want[i], "position %zu: %zu", i, order[i]);
}

Test(graph_order, refuses_cycles_and_edges_to_nowhere)
{
	size_t from[] = { 0, 1, 2 }, to[] = { 1, 2, 0 }, order[3];
	cr_assert_eq(inject_graph_order(3, from, to, 3, order), RP_ERR_FAILED);
	size_t bad_from[] = { 0 }, bad_to[] = { 7 };
	cr_assert_eq(inject_graph_order(3, bad_from, bad_to, 1, order), RP_ERR_FAILED);
	cr_assert_eq(inject_graph_order(0, NULL, NULL, 0, order), 0, "an empty graph");
}

Test(graph_order, thousands_of_nodes_in_linear_time)
{
	/* A random DAG: edges go from a lower to a higher rank, nodes shuffled. */
	enum { N = 20000, E = 80000 };
	size_t *rank = malloc(N * sizeof(*rank)), *from = malloc(E * sizeof(*from));
	size_t *to = malloc(E * sizeof(*to)), *order = malloc(N * sizeof(*order));
	for (size_t i = 0; i < N; i++)
		rank[i] = i;
	srand(7);
	for (size_t i = N - 1; i > 0; i--) {
		size_t j = (size_t)rand() % (i + 1), t = rank[i];
		rank[i] = rank[j];
		rank[j] = t;
	}
	for (size_t i = 0; i < E; i++) {
		size_t a = (size_t)rand() % N, b = (size_t)rand() % N;
		if (a == b)
			b = (a + 1) % N;
		if (a > b) {
			size_t t = a;
			a = b;
			b = t;
		}
		from[i] = rank[a];
		to[i] = rank[b];
	}
	/* Measured here: 2 ms (debugoptimized), 5 ms under ASan+UBSan; a quadratic order
	 * (N^2 = 4e8 steps) takes hundreds. The best of three, so that one preemption on a
	 * busy machine does not fail it. */
	double best = 1e9;
	for (int k = 0; k < 3; k++) {
		struct timespec t0, t1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		cr_assert_eq(inject_graph_order(N, from, to, E, order), 0);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		double s = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
		best = s < best ? s : best;
	}
	cr_assert_lt(best, 0.040, "%d nodes, %d edges took %.1f ms", N, E, best * 1e3);
	cr_assert(respects(N, from, to, E, order));
	free(rank);
	free(from);
	free(to);
	free(order);
}

Test(graph_order, index_finds_exactly_the_keys)
{
	uintptr_t keys[] = { 0x10, 0x20, 0x30, 0x1000 };
	cr_assert_eq(inject_graph_index(keys, 4, 0x30), 2);
	cr_assert_eq(inject_graph_index(keys, 4, 0x10), 0);
	cr_assert_eq(inject_graph_index(keys, 4, 0x1000), 3);
	cr_assert_eq(inject_graph_index(keys, 4, 0x18), -1);
	cr_assert_eq(inject_graph_index(keys, 0, 0x10), -1);
}

Test(captures, every_mode_and_thread_counts_until_its_own_end)
{
	static int s1, s2;
	cr_assert_not(inject_captures_under_way());
	inject_captures_begin(&s1, 1);
	inject_captures_begin(NULL, 1);  /* per-thread default streams share a handle */
	inject_captures_begin(NULL, 2);
	cr_assert(inject_captures_under_way());
	inject_captures_end(NULL, 2);
	inject_captures_end(&s2, 1);     /* no such capture: nothing changes */
	inject_captures_end(&s1, 1);
	cr_assert(inject_captures_under_way(), "thread 1's NULL-stream capture still runs");
	inject_captures_end(NULL, 1);
	cr_assert_not(inject_captures_under_way());
	inject_captures_end(NULL, 1);    /* a second end never goes below zero */
	cr_assert_not(inject_captures_under_way());
}

Test(captures, a_relaxed_capture_may_end_on_another_thread)
{
	static int s1;
	inject_captures_begin(&s1, 1);
	inject_captures_begin(NULL, 1);
	inject_captures_end(NULL, 2);    /* thread 2's per-thread stream: another stream */
	inject_captures_end(&s1, 2);     /* the same explicit stream, ended elsewhere */
	cr_assert(inject_captures_under_way());
	inject_captures_end(NULL, 1);
	cr_assert_not(inject_captures_under_way());
}

Test(captures, a_full_table_never_lets_measuring_start_early)
{
	static int streams[300];
	for (int i = 0; i < 300; i++)
		inject_captures_begin(&streams[i], 9);
	for (int i = 0; i < 299; i++) {
		inject_captures_end(&streams[i], 9);
		cr_assert(inject_captures_under_way(), "after %d of 300 ends", i + 1);
	}
	inject_captures_end(&streams[299], 9);
	cr_assert_not(inject_captures_under_way());
}
