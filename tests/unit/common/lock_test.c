/* tests/unit/common/lock_test.c - common/lock.h: the owner a lock knows, and the checks
 * that abort on a broken rule; with NDEBUG, that they are gone. The unit-test and
 * sanitizer builds are built without NDEBUG (meson.build's debugoptimized, b_ndebug
 * false). */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>

#include "common/lock.h"

static struct rp_lock lock = RP_LOCK_INITIALIZER("the test lock");

#if RP_LOCK_CHECKS
static void *held_here(void *arg)
{
	return (void *)(uintptr_t)rp_lock_is_held((struct rp_lock *)arg);
}

Test(lock, the_holder_holds_it_and_no_one_after_the_unlock)
{
	cr_assert_not(rp_lock_is_held(&lock));
	rp_lock(&lock);
	cr_assert(rp_lock_is_held(&lock));
	rp_lock_held(&lock);
	rp_unlock(&lock);
	cr_assert_not(rp_lock_is_held(&lock));
	rp_lock_not_held(&lock);
}

Test(lock, another_thread_does_not_hold_what_this_one_holds)
{
	rp_lock(&lock);
	pthread_t t;
	void *theirs = (void *)1;
	cr_assert_eq(pthread_create(&t, NULL, held_here, &lock), 0);
	pthread_join(t, &theirs);
	cr_assert_null(theirs, "the owner is one thread, not whoever asks");
	rp_unlock(&lock);
}

Test(lock, the_timed_form_records_its_owner_too)
{
	struct timespec deadline;
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += 1;
	cr_assert(rp_lock_until(&lock, &deadline));
	cr_assert(rp_lock_is_held(&lock));
	rp_unlock(&lock);
}

static void *try_here(void *arg)
{
	struct rp_lock *l = arg;
	bool taken = rp_lock_try(l);
	if (taken)
		rp_unlock(l);
	return (void *)(uintptr_t)taken;
}

/* What an allocating thread does with the kept copies' lock (inject/session/session.c):
 * takes it when free, goes on without it when another thread holds it. */
Test(lock, the_try_form_takes_a_free_lock_and_leaves_a_held_one)
{
	cr_assert(rp_lock_try(&lock));
	cr_assert(rp_lock_is_held(&lock), "its owner recorded");
	pthread_t t;
	void *taken = (void *)1;
	cr_assert_eq(pthread_create(&t, NULL, try_here, &lock), 0);
	pthread_join(t, &taken);
	cr_assert_null(taken, "held by this thread: another's try returns at once, without it");
	rp_unlock(&lock);
	cr_assert_eq(pthread_create(&t, NULL, try_here, &lock), 0);
	pthread_join(t, &taken);
	cr_assert_not_null(taken, "free again: taken");
}

Test(lock, trying_a_lock_this_thread_holds_aborts_instead_of_failing, .signal = SIGABRT)
{
	rp_lock(&lock);
	rp_lock_try(&lock);
}

Test(lock, asserting_a_lock_not_held_aborts, .signal = SIGABRT)
{
	rp_lock_held(&lock);
}

Test(lock, taking_a_lock_this_thread_holds_aborts_instead_of_hanging, .signal = SIGABRT)
{
	rp_lock(&lock);
	rp_lock(&lock);
}

Test(lock, unlocking_a_lock_this_thread_does_not_hold_aborts, .signal = SIGABRT)
{
	rp_unlock(&lock);
}
#else
/* -Db_ndebug=true: the lock is the mutex alone and no rule is checked. */
Test(lock, with_ndebug_nothing_is_checked_and_the_mutex_still_locks)
{
	rp_lock_held(&lock);
	cr_assert(rp_lock_is_held(&lock), "unknown, so taken as held");
	rp_lock(&lock);
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	cr_assert_not(rp_lock_until(&lock, &now), "taken: a second take times out");
	rp_unlock(&lock);
}
#endif
