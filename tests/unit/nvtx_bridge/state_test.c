/* tests/unit/nvtx_bridge/state_test.c - the NVTX state machine driven through the same
 * slot functions NVTX calls: push/pop per thread and domain, start/end across threads,
 * registered strings, Unicode, payloads, categories, and snapshots under 8 threads. */
#include <criterion/criterion.h>
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "nvtx_bridge/slots.h"

static void unwind(void)
{
	while (bridge_range_pop() >= 0)
		;
}

Test(nvtx_state, nested_push_pop_gives_outermost_first_and_levels)
{
	cr_assert_eq(bridge_range_push_a("outer"), 0);
	cr_assert_eq(bridge_range_push_a("inner"), 1);
	const struct nvtx_bridge_snapshot *s = nvtx_bridge_snapshot();
	cr_assert_eq(s->push_count, 2);
	cr_assert_str_eq(s->ranges[0].text, "outer");
	cr_assert_str_eq(s->ranges[1].text, "inner");
	char path[64];
	nvtx_bridge_path(s, path, sizeof(path));
	cr_assert_str_eq(path, "outer/inner");
	cr_assert_eq(bridge_range_pop(), 1);
	cr_assert_eq(bridge_range_pop(), 0);
	cr_assert_eq(bridge_range_pop(), -1, "an extra pop is ignored, not an underflow");
	cr_assert_eq(nvtx_bridge_snapshot()->count, 0);
}

Test(nvtx_state, domains_have_their_own_stacks_merged_in_push_order)
{
	nvtxDomainHandle_t d = bridge_domain_create_a("NVTX");
	cr_assert_eq(bridge_domain_create_a("NVTX"), d, "same name, same domain");
	nvtxEventAttributes_t a = { NVTX_VERSION, NVTX_EVENT_ATTRIB_STRUCT_SIZE };
	a.messageType = NVTX_MESSAGE_TYPE_ASCII;
	bridge_range_push_a("default-1");
	a.message.ascii = "dom-1";
	cr_assert_eq(bridge_domain_range_push_ex(d, &a), 0, "levels count per domain");
	bridge_range_push_a("default-2");
	const struct nvtx_bridge_snapshot *s = nvtx_bridge_snapshot();
	cr_assert_eq(s->push_count, 3);
	cr_assert_str_eq(s->ranges[1].text, "dom-1");
	cr_assert_str_eq(nvtx_bridge_domain_name(s->ranges[1].domain), "NVTX");
	cr_assert_str_eq(nvtx_bridge_domain_name(s->ranges[0].domain), "");
	/* Popping the domain's range leaves the default stack alone. */
	cr_assert_eq(bridge_domain_range_pop(d), 0);
	s = nvtx_bridge_snapshot();
	cr_assert_eq(s->push_count, 2);
	cr_assert_str_eq(s->ranges[1].text, "default-2");
	unwind();
}

Test(nvtx_state, registered_unicode_strings_payload_and_category)
{
	nvtxDomainHandle_t d = bridge_domain_create_w(L"wide-domain");
	nvtxStringHandle_t h = bridge_domain_register_string_a(d, "registered");
	bridge_domain_name_category_a(d, 7, "io");
	nvtxEventAttributes_t a = { NVTX_VERSION, NVTX_EVENT_ATTRIB_STRUCT_SIZE };
	a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
	a.message.registered = h;
	a.payloadType = NVTX_PAYLOAD_TYPE_INT64;
	a.payload.llValue = -5;
	a.category = 7;
	bridge_domain_range_push_ex(d, &a);
	nvtxEventAttributes_t w = { NVTX_VERSION, NVTX_EVENT_ATTRIB_STRUCT_SIZE };
	w.messageType = NVTX_MESSAGE_TYPE_UNICODE;
	w.message.unicode = L"gr\u00fc\u00df \u6f22";
	w.payloadType = NVTX_PAYLOAD_TYPE_DOUBLE;
	w.payload.dValue = 2.5;
	bridge_range_push_ex(&w);
	const struct nvtx_bridge_snapshot *s = nvtx_bridge_snapshot();
	cr_assert_eq(s->push_count, 2);
	cr_assert_str_eq(s->ranges[0].text, "registered");
	cr_assert_str_eq(nvtx_bridge_domain_name(s->ranges[0].domain), "wide-domain");
	cr_assert_eq(s->ranges[0].payload_type, NVTX_BRIDGE_PAYLOAD_INT);
	cr_assert_eq(s->ranges[0].payload.i, -5);
	cr_assert_eq(s->ranges[0].category, 7);
	cr_assert_str_eq(nvtx_bridge_category_name(s->ranges[0].domain, 7), "io");
	cr_assert_str_eq(s->ranges[1].text, "gr\xc3\xbc\xc3\x9f \xe6\xbc\xa2");
	cr_assert_eq(s->ranges[1].payload_type, NVTX_BRIDGE_PAYLOAD_DOUBLE);
	cr_assert_float_eq(s->ranges[1].payload.d, 2.5, 1e-12);
	bridge_range_pop();
	bridge_domain_range_pop(d);
	bridge_range_push_w(L"w");
	cr_assert_str_eq(nvtx_bridge_snapshot()->ranges[0].text, "w");
	unwind();
}

static nvtxRangeId_t started_elsewhere;

static void *start_range(void *arg)
{
	(void)arg;
	started_elsewhere = bridge_range_start_a("epoch");
	return NULL;
}

static void *end_range(void *arg)
{
	(void)arg;
	bridge_range_end(started_elsewhere);
	return NULL;
}

Test(nvtx_state, start_end_ranges_are_process_wide_and_end_on_any_thread)
{
	pthread_t t;
	pthread_create(&t, NULL, start_range, NULL);
	pthread_join(t, NULL);
	bridge_range_push_a("step");
	const struct nvtx_bridge_snapshot *s = nvtx_bridge_snapshot();
	cr_assert_eq(s->push_count, 1);
	cr_assert_eq(s->count, 2);
	cr_assert(s->ranges[1].start_end);
	cr_assert_str_eq(s->ranges[1].text, "epoch");
	pthread_create(&t, NULL, end_range, NULL);
	pthread_join(t, NULL);
	cr_assert_eq(nvtx_bridge_snapshot()->count, 1);
	bridge_range_end(started_elsewhere); /* twice: ignored */
	unwind();
}

#define THREADS 8
#define ITERATIONS 20000

static void *hammer(void *arg)
{
	long id = (long)arg;
	char name[32], inner[32];
	snprintf(name, sizeof(name), "thread%ld", id);
	long bad = 0;
	for (int i = 0; i < ITERATIONS; i++) {
		bridge_range_push_a(name);
		snprintf(inner, sizeof(inner), "it%d", i % 7);
		bridge_range_push_a(inner);
		nvtxRangeId_t r = bridge_range_start_a(name);
		const struct nvtx_bridge_snapshot *s = nvtx_bridge_snapshot();
		bad += s->push_count != 2 || strcmp(s->ranges[0].text, name) ||
		       strcmp(s->ranges[1].text, inner);
		bool mine = false;
		for (size_t k = s->push_count; k < s->count; k++)
			mine |= !strcmp(s->ranges[k].text, name);
		bad += !mine;
		bridge_range_end(r);
		bridge_range_pop();
		bridge_range_pop();
	}
	return (void *)bad;
}

Test(nvtx_state, snapshots_stay_per_thread_under_8_concurrent_threads)
{
	pthread_t t[THREADS];
	for (long i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, hammer, (void *)i);
	for (int i = 0; i < THREADS; i++) {
		void *bad;
		pthread_join(t[i], &bad);
		cr_assert_eq((long)bad, 0, "thread %d saw another thread's ranges", i);
	}
	cr_assert_eq(nvtx_bridge_snapshot()->count, 0);
}

/* A thread's NVTX state is freed by a pthread key destructor at thread exit; another
 * key's destructor that runs after it on the same thread may still call NVTX (the
 * application's, or a library's thread_local cleanup). Those calls must do nothing,
 * not use the freed state (issue 9, item 1: exit 139 under LD_PRELOAD). */
static pthread_key_t app_key;
static int late_results[6];
static size_t late_count;

static void app_key_destructor(void *arg)
{
	(void)arg;
	nvtxDomainHandle_t d = bridge_domain_create_a("late");
	nvtxEventAttributes_t a = { NVTX_VERSION, NVTX_EVENT_ATTRIB_STRUCT_SIZE };
	a.messageType = NVTX_MESSAGE_TYPE_ASCII;
	a.message.ascii = "late";
	late_results[0] = bridge_range_pop();
	late_results[1] = bridge_range_push_a("again");
	late_results[2] = bridge_range_pop();
	late_results[3] = bridge_domain_range_push_ex(d, &a);
	late_results[4] = bridge_domain_range_pop(d);
	late_results[5] = bridge_range_push_w(L"wide");
	late_count = nvtx_bridge_snapshot()->count;
}

static void *exits_with_a_late_nvtx_call(void *arg)
{
	(void)arg;
	bridge_range_push_a("worker");
	bridge_range_push_a("inner");
	nvtx_bridge_snapshot();
	pthread_setspecific(app_key, (void *)1);
	return NULL;
}

Test(nvtx_state, nvtx_calls_after_the_thread_state_is_freed_do_nothing)
{
	/* The bridge's key exists before the application's: its destructor runs first. */
	bridge_range_push_a("main");
	bridge_range_pop();
	cr_assert_eq(pthread_key_create(&app_key, app_key_destructor), 0);
	for (int round = 0; round < 50; round++) {
		pthread_t t;
		pthread_create(&t, NULL, exits_with_a_late_nvtx_call, NULL);
		pthread_join(t, NULL);
		for (int i = 0; i < 6; i++)
			cr_assert_eq(late_results[i], -1, "call %d after teardown returned %d", i,
				     late_results[i]);
		cr_assert_eq(late_count, 0);
	}
	pthread_key_delete(app_key);
}

/* Threads that exit in every order while others keep pushing: each frees only its own
 * state, and the survivors' snapshots stay theirs. */
static void *push_then_exit(void *arg)
{
	long id = (long)arg;
	char name[32];
	snprintf(name, sizeof(name), "t%ld", id);
	for (long i = 0; i <= id % 5; i++)
		bridge_range_push_a(name);
	const struct nvtx_bridge_snapshot *s = nvtx_bridge_snapshot();
	long bad = s->push_count != (size_t)(id % 5 + 1) || strcmp(s->ranges[0].text, name);
	usleep((useconds_t)((id * 7919) % 1000));
	return (void *)bad;
}

Test(nvtx_state, threads_exiting_in_any_order_keep_their_own_state)
{
	pthread_t t[64];
	for (long i = 0; i < 64; i++)
		pthread_create(&t[i], NULL, push_then_exit, (void *)i);
	for (int i = 63; i >= 0; i -= 2) {
		void *bad;
		pthread_join(t[i], &bad);
		cr_assert_eq((long)bad, 0);
	}
	for (int i = 0; i < 64; i += 2) {
		void *bad;
		pthread_join(t[i], &bad);
		cr_assert_eq((long)bad, 0);
	}
}

static double seconds(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Issue 9, item 3: 5M registrations of one string took 314 MB (a copy each). */
Test(nvtx_state, registering_a_string_again_returns_the_same_handle)
{
	nvtxDomainHandle_t d = bridge_domain_create_a("strings");
	nvtxStringHandle_t first = bridge_domain_register_string_a(d, "step");
	for (int i = 0; i < 1000000; i++)
		cr_assert_eq(bridge_domain_register_string_a(d, "step"), first);
	cr_assert_neq(bridge_domain_register_string_a(NULL, "step"), first,
		      "another domain, another handle");
	cr_assert_eq(bridge_domain_register_string_w(d, L"step"), first);
	/* 100 000 distinct strings: each once, found again in constant time. */
	double t0 = seconds();
	char text[32];
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < 100000; i++) {
			snprintf(text, sizeof(text), "s%d", i);
			nvtxStringHandle_t h = bridge_domain_register_string_a(d, text);
			cr_assert_str_eq(bridge_registered_text(h), text);
		}
	}
	cr_assert_lt(seconds() - t0, 2.0, "took %.2f s", seconds() - t0);
}

/* Issue 9, item 3: creating and destroying 100 000 domains took 24.9 s. */
Test(nvtx_state, creating_and_destroying_many_domains_is_fast_and_reuses_names)
{
	double t0 = seconds();
	char name[32];
	for (int i = 0; i < 100000; i++) {
		snprintf(name, sizeof(name), "dom%d", i);
		nvtxDomainHandle_t d = bridge_domain_create_a(name);
		cr_assert_str_eq(nvtx_bridge_domain_name((const struct nvtx_bridge_domain *)d), name);
		bridge_domain_destroy(d);
	}
	nvtxDomainHandle_t again = bridge_domain_create_a("dom7");
	cr_assert_eq(bridge_domain_create_a("dom7"), again);
	bridge_domain_destroy(again);
	cr_assert_eq(bridge_domain_create_a("dom7"), again, "a re-created domain is the old one");
	for (int i = 0; i < 100000; i++)
		bridge_domain_destroy(bridge_domain_create_a("loop"));
	cr_assert_lt(seconds() - t0, 2.0, "took %.2f s", seconds() - t0);
	/* A thread that pushed into the last of them still snapshots fast. */
	nvtxEventAttributes_t a = { NVTX_VERSION, NVTX_EVENT_ATTRIB_STRUCT_SIZE };
	a.messageType = NVTX_MESSAGE_TYPE_ASCII;
	a.message.ascii = "x";
	bridge_domain_range_push_ex(again, &a);
	cr_assert_eq(nvtx_bridge_snapshot()->push_count, 1);
	bridge_domain_range_pop(again);
}

Test(nvtx_state, renaming_categories_in_a_loop_keeps_each_name_once)
{
	nvtxDomainHandle_t d = bridge_domain_create_a("cats");
	bridge_domain_name_category_a(d, 1, "io");
	const char *io = nvtx_bridge_category_name((const struct nvtx_bridge_domain *)d, 1);
	for (int i = 0; i < 100000; i++) {
		bridge_domain_name_category_a(d, 1, i % 2 ? "io" : "compute");
		bridge_domain_name_category_a(d, 2, "io");
	}
	cr_assert_eq(nvtx_bridge_category_name((const struct nvtx_bridge_domain *)d, 1), io);
	cr_assert_eq(nvtx_bridge_category_name((const struct nvtx_bridge_domain *)d, 2), io);
}

/* Names of any bytes and any length: kept cut at 4096 bytes on a character boundary;
 * nesting past the depth limit is counted, not stored. */
Test(nvtx_state, long_names_are_cut_and_deep_nesting_is_bounded)
{
	size_t n = 1 << 20;
	char *big = malloc(n + 1);
	memset(big, 'x', n);
	big[n] = '\0';
	memcpy(big + 4095, "\xc3\xa9", 2); /* a character across the cut: dropped whole */
	bridge_range_push_a(big);
	const struct nvtx_bridge_snapshot *s = nvtx_bridge_snapshot();
	cr_assert_eq(strlen(s->ranges[0].text), 4095);
	bridge_range_pop();
	nvtxStringHandle_t h = bridge_domain_register_string_a(NULL, big);
	cr_assert_eq(strlen(bridge_registered_text(h)), 4095);
	free(big);
	double t0 = seconds();
	for (int i = 0; i < NVTX_BRIDGE_MAX_DEPTH + 10; i++)
		bridge_range_push_a("deep");
	cr_assert_eq(bridge_range_push_a("deeper"), NVTX_BRIDGE_MAX_DEPTH + 10);
	cr_assert_eq(nvtx_bridge_snapshot()->push_count, NVTX_BRIDGE_MAX_DEPTH);
	/* An unchanged snapshot at this depth costs nothing; one push and pop costs one. */
	uint64_t id = nvtx_bridge_snapshot()->id;
	double t1 = seconds();
	for (int i = 0; i < 100000; i++)
		cr_assert_eq(nvtx_bridge_snapshot()->id, id);
	double unchanged = seconds() - t1;
	cr_assert_eq(bridge_range_pop(), NVTX_BRIDGE_MAX_DEPTH + 10);
	while (bridge_range_pop() >= 0)
		;
	bridge_range_push_a("base");
	for (int i = 0; i < 9999; i++)
		bridge_range_push_a("deep");
	t1 = seconds();
	for (int i = 0; i < 100000; i++) {
		bridge_range_push_a("step");
		cr_assert_eq(nvtx_bridge_snapshot()->push_count, 10001);
		bridge_range_pop();
	}
	double changed = seconds() - t1;
	while (bridge_range_pop() >= 0)
		;
	cr_assert_lt(unchanged, 0.05, "100 000 unchanged snapshots at depth 100 000: %.3f s",
		     unchanged);
	cr_assert_lt(changed, 0.5, "100 000 push/snapshot/pop at depth 10 000: %.3f s", changed);
	cr_assert_lt(seconds() - t0, 5.0);
}

static nvtxDomainHandle_t newest;

static void *push_into_newest(void *arg)
{
	(void)arg;
	nvtxEventAttributes_t a = { NVTX_VERSION, NVTX_EVENT_ATTRIB_STRUCT_SIZE };
	a.messageType = NVTX_MESSAGE_TYPE_ASCII;
	a.message.ascii = "late";
	long bad = bridge_domain_range_push_ex(newest, &a) != 0 ||
		   nvtx_bridge_snapshot()->push_count != 1;
	bridge_domain_range_pop(newest);
	return (void *)bad;
}

/* Bytes the heap has handed out and not had back (glibc's count, every arena). */
static size_t heap_in_use(void)
{
	struct mallinfo2 m = mallinfo2();
	return m.uordblks + m.hblkhd;
}

/* Whether heap_in_use sees blocks as small as a stack's buffers: not where a sanitizer
 * replaces malloc. */
static bool heap_sees_small_blocks(void)
{
	enum { BLOCKS = 64, SIZE = 4096 };
	static void *p[BLOCKS]; /* static: the compiler may not drop the allocations */
	size_t before = heap_in_use();
	for (int i = 0; i < BLOCKS; i++)
		p[i] = malloc(SIZE);
	bool seen = heap_in_use() - before >= BLOCKS * SIZE;
	for (int i = 0; i < BLOCKS; i++)
		free(p[i]);
	return seen;
}

/* A thread's stacks are sized by the domains it used, not by the largest domain id: 32
 * threads pushing into the 100 001st domain once took 10 MB each. */
Test(nvtx_state, a_thread_pays_only_for_the_domains_it_uses)
{
	char name[32];
	for (int i = 0; i < 100000; i++) {
		snprintf(name, sizeof(name), "many%d", i);
		bridge_domain_create_a(name);
	}
	newest = bridge_domain_create_a("newest");
	struct rusage before, after;
	getrusage(RUSAGE_SELF, &before);
	pthread_t t[32];
	for (long i = 0; i < 32; i++)
		pthread_create(&t[i], NULL, push_into_newest, NULL);
	for (int i = 0; i < 32; i++) {
		void *bad;
		pthread_join(t[i], &bad);
		cr_assert_eq((long)bad, 0);
	}
	getrusage(RUSAGE_SELF, &after);
	cr_assert_lt(after.ru_maxrss - before.ru_maxrss, 16 * 1024, "peak RSS grew %ld KB",
		     after.ru_maxrss - before.ru_maxrss);
	/* A thread that used many domains keeps buffers for the open ones only: push and pop
	 * work in each of 1000 domains, and afterwards the heap holds the thread's table of
	 * domain slots and its bookkeeping (260 KiB measured) but not the 1000 stacks' buffers
	 * (16 entries and 1 KiB of text each: 1.9 MiB measured with every buffer kept). */
	bool heap_counted = heap_sees_small_blocks();
	size_t heap_before = heap_in_use();
	nvtxEventAttributes_t a = { NVTX_VERSION, NVTX_EVENT_ATTRIB_STRUCT_SIZE };
	a.messageType = NVTX_MESSAGE_TYPE_ASCII;
	a.message.ascii = "x";
	for (int i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "many%d", i);
		nvtxDomainHandle_t d = bridge_domain_create_a(name);
		bridge_range_push_a("outer");
		cr_assert_eq(bridge_domain_range_push_ex(d, &a), 0);
		const struct nvtx_bridge_snapshot *s = nvtx_bridge_snapshot();
		cr_assert_eq(s->push_count, 2);
		cr_assert_str_eq(s->ranges[1].text, "x");
		cr_assert_eq(bridge_domain_range_pop(d), 0);
		bridge_range_pop();
	}
	if (heap_counted) {
		size_t after_loop = heap_in_use();
		size_t grown = after_loop > heap_before ? after_loop - heap_before : 0;
		cr_assert_lt(grown, 768 * 1024, "1000 closed domains keep %zu KiB", grown / 1024);
	} else {
		cr_log_info("mallinfo2 does not see this allocator (a sanitizer's?): the buffers "
			    "of closed domains are not checked");
	}
}

/* ---- range replay's hooks ------------------------------------------------------------ */

/* What the hooks saw: each call with its key and the snapshot's innermost text then. */
static struct hook_call {
	char what;                   /* 'o' opened, 'c' closing */
	struct nvtx_bridge_range_key key;
	char top[32];                /* the snapshot's newest range of the key's kind */
	size_t count;                /* ranges in the snapshot */
} hook_calls[16];
static size_t hook_count;

static void record_hook(char what, const struct nvtx_bridge_range_key *key)
{
	const struct nvtx_bridge_snapshot *s = nvtx_bridge_snapshot();
	struct hook_call *h = &hook_calls[hook_count++ % 16];
	h->what = what;
	h->key = *key;
	h->count = s->count;
	size_t i = key->start_end ? s->count : s->push_count;
	snprintf(h->top, sizeof(h->top), "%s", i ? s->ranges[i - 1].text : "");
}

static void hook_opened(const struct nvtx_bridge_range_key *key) { record_hook('o', key); }
static void hook_closing(const struct nvtx_bridge_range_key *key) { record_hook('c', key); }
static const struct nvtx_bridge_range_hooks test_hooks = { hook_opened, hook_closing };

Test(nvtx_state, range_hooks_see_a_push_after_it_and_a_pop_before_it)
{
	hook_count = 0;
	nvtx_bridge_set_range_hooks(&test_hooks);
	bridge_range_push_a("outer");
	bridge_range_push_a("inner");
	bridge_range_pop();
	bridge_range_pop();
	bridge_range_pop();   /* an extra pop: no hook */
	nvtx_bridge_set_range_hooks(NULL);
	bridge_range_push_a("unhooked");
	bridge_range_pop();
	cr_assert_eq(hook_count, 4);
	cr_assert_eq(hook_calls[0].what, 'o');
	cr_assert_str_eq(hook_calls[0].top, "outer", "opened runs once the push took effect");
	cr_assert_eq(hook_calls[0].key.depth, 0);
	cr_assert_eq(hook_calls[1].key.depth, 1);
	cr_assert_str_eq(hook_calls[1].top, "inner");
	cr_assert_eq(hook_calls[2].what, 'c');
	cr_assert_str_eq(hook_calls[2].top, "inner", "closing runs while the range is still open");
	cr_assert_eq(hook_calls[2].key.depth, 1, "the popped range's depth, as its push had");
	cr_assert_eq(hook_calls[3].key.depth, 0);
	cr_assert_eq(hook_calls[3].count, 1);
	cr_assert_not(hook_calls[0].key.start_end);
	cr_assert_eq(hook_calls[0].key.domain, hook_calls[3].key.domain);
}

Test(nvtx_state, range_hooks_name_start_end_ranges_by_id_on_any_thread)
{
	hook_count = 0;
	nvtx_bridge_set_range_hooks(&test_hooks);
	nvtxRangeId_t a = bridge_range_start_a("step");
	nvtxRangeId_t b = bridge_range_start_a("other");
	bridge_range_end(a);
	bridge_range_end(b);
	nvtx_bridge_set_range_hooks(NULL);
	cr_assert_eq(hook_count, 4);
	cr_assert(hook_calls[0].key.start_end);
	cr_assert_eq(hook_calls[0].key.id, a);
	cr_assert_str_eq(hook_calls[0].top, "step");
	cr_assert_eq(hook_calls[1].key.id, b);
	cr_assert_eq(hook_calls[2].what, 'c');
	cr_assert_eq(hook_calls[2].key.id, a);
	cr_assert_eq(hook_calls[2].count, 2, "closing runs before the end takes effect");
	cr_assert_eq(hook_calls[3].count, 1);
}
