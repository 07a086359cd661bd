/* tests/unit/inject/early_test.c - the early set-up's threads (inject/early.c): one set-up
 * per device whatever the number of threads and calls, none when --setup lazy, the wait at
 * exit really waits and ends the starting, a forked child starts none. The driver's
 * cuCtxGetDevice is replaced: the "current device" is a thread-local the test sets. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "collector/api.h"
#include "inject/session/contexts.h"
#include "inject/early.h"

static __thread int current_device;
static atomic_int set_ups;
static atomic_int finished;
static CUcontext seen_ctx;
static inject_context_gen seen_gen;
static uint32_t seen_id;

static CUresult fake_get_device(CUdevice *dev)
{
	*dev = current_device;
	return CUDA_SUCCESS;
}

static void slow_set_up(CUcontext ctx, uint32_t id, inject_context_gen gen)
{
	atomic_fetch_add(&set_ups, 1);
	seen_ctx = ctx;
	seen_id = id;
	seen_gen = gen;
	struct timespec t = { 0, 200 * 1000 * 1000 };
	nanosleep(&t, NULL);
	atomic_fetch_add(&finished, 1);
}

static void setup(void)
{
	rp_api.cuCtxGetDevice = fake_get_device;
}

TestSuite(early, .init = setup);

static void *use_device0(void *ctx)
{
	current_device = 0;
	for (int i = 0; i < 100; i++)
		inject_early_context_used((CUcontext)ctx, 7);
	return NULL;
}

Test(early, one_set_up_per_device_from_any_number_of_threads_and_calls)
{
	inject_early_configure(true, slow_set_up);
	CUcontext ctx = (CUcontext)(uintptr_t)0x1000;
	pthread_t t[8];
	for (int i = 0; i < 8; i++)
		pthread_create(&t[i], NULL, use_device0, ctx);
	for (int i = 0; i < 8; i++)
		pthread_join(t[i], NULL);
	current_device = 1;
	inject_early_context_used((CUcontext)(uintptr_t)0x2000, 8);
	inject_early_context_used((CUcontext)(uintptr_t)0x3000, 9); /* device 1 again */
	inject_early_wait();
	cr_assert_eq(atomic_load(&set_ups), 2, "one per device: %d", atomic_load(&set_ups));
	cr_assert_eq(atomic_load(&finished), 2, "the wait waited for both");
	cr_assert_eq(seen_id == 7 || seen_id == 8, true);
	cr_assert_neq(seen_gen, 0, "the context is registered with a generation");
	cr_assert_eq(inject_contexts_generation(seen_ctx), seen_gen);
}

Test(early, the_wait_at_exit_waits_and_nothing_starts_after_it)
{
	inject_early_configure(true, slow_set_up);
	current_device = 0;
	inject_early_context_used((CUcontext)(uintptr_t)0x1000, 1);
	inject_early_wait();
	cr_assert_eq(atomic_load(&finished), 1, "set-up finished before the wait returned");
	cr_assert(inject_early_exiting(), "a set-up that gets its lock later does nothing");
	current_device = 2;
	inject_early_context_used((CUcontext)(uintptr_t)0x4000, 2);
	inject_early_wait();
	cr_assert_eq(atomic_load(&set_ups), 1, "no set-up starts once exit has begun");
}

Test(early, lazy_starts_nothing)
{
	inject_early_configure(false, slow_set_up);
	current_device = 0;
	inject_early_context_used((CUcontext)(uintptr_t)0x1000, 1);
	inject_early_wait();
	cr_assert_eq(atomic_load(&set_ups), 0);
}

Test(early, a_forked_child_starts_nothing)
{
	inject_early_configure(true, slow_set_up);
	inject_early_fork_child();
	current_device = 0;
	inject_early_context_used((CUcontext)(uintptr_t)0x1000, 1);
	inject_early_wait();
	cr_assert_eq(atomic_load(&set_ups), 0);
}
