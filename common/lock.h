/* common/lock.h - a mutex that knows its owner, so that "called with the lock held" is
 * checked, not only written (issue 34). rp_lock_held(l) aborts, naming the lock and the
 * caller, when the calling thread does not hold l; rp_lock() and rp_lock_try() abort when
 * it already does (a self-deadlock would hang instead; a try would fail as if another
 * thread held it).
 * The owner is tracked and the checks made where assert() is on (no NDEBUG): meson's
 * debug and debugoptimized builds, the unit-test and sanitizer builds, and the GPU suite's
 * build. The wheel (-Dwheel=true: meson.build sets RP_LOCK_CHECKS=0) and NDEBUG builds
 * (-Db_ndebug=true, or buildtype=release with b_ndebug=if-release) have the bare mutex and
 * no checks: a user's application is never aborted for a lock fault of ours.
 * Header only: libc and pthreads. */
#ifndef COMMON_LOCK_H
#define COMMON_LOCK_H

#include <pthread.h>
#include <stdbool.h>
#include <time.h>

#ifndef RP_LOCK_CHECKS
#ifdef NDEBUG
#define RP_LOCK_CHECKS 0
#else
#define RP_LOCK_CHECKS 1
#endif
#endif
#if RP_LOCK_CHECKS
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#endif

struct rp_lock {
	pthread_mutex_t mutex;
	const char *name;       /* for the abort's message: "the replay lock" */
#if RP_LOCK_CHECKS
	/* pthread_self() of the holder, 0 when free. Written by the holder only; read by
	 * any thread, which compares it with itself: it can equal the reader only if the
	 * reader wrote it. */
	atomic_uintptr_t owner;
#endif
};

#define RP_LOCK_INITIALIZER(label) { .mutex = PTHREAD_MUTEX_INITIALIZER, .name = (label) }

#if RP_LOCK_CHECKS
static inline uintptr_t rp_lock_self(void)
{
	return (uintptr_t)pthread_self();
}

static inline void rp_lock_fail(const struct rp_lock *l, const char *what, const char *func,
				const char *file, int line)
{
	fprintf(stderr, "rangeprof: lock rule broken: %s %s, in %s (%s:%d)\n", l->name, what,
		func, file, line);
	abort();
}
#endif

/* Whether the calling thread holds l; always true where the checks are off. */
static inline bool rp_lock_is_held(const struct rp_lock *l)
{
#if RP_LOCK_CHECKS
	return atomic_load_explicit(&((struct rp_lock *)l)->owner, memory_order_relaxed) ==
	       rp_lock_self();
#else
	(void)l;
	return true;
#endif
}

#if RP_LOCK_CHECKS
#define rp_lock_held(l)                                                                   \
	do {                                                                              \
		if (!rp_lock_is_held(l))                                                  \
			rp_lock_fail((l), "is not held by this thread", __func__, __FILE__,  \
				     __LINE__);                                          \
	} while (0)
#define rp_lock_not_held(l)                                                               \
	do {                                                                              \
		if (rp_lock_is_held(l))                                                   \
			rp_lock_fail((l), "is held already by this thread", __func__,        \
				     __FILE__, __LINE__);                                \
	} while (0)
#else
#define rp_lock_held(l) ((void)(l))
#define rp_lock_not_held(l) ((void)(l))
#endif

static inline void rp_lock_owned(struct rp_lock *l)
{
#if RP_LOCK_CHECKS
	atomic_store_explicit(&l->owner, rp_lock_self(), memory_order_relaxed);
#else
	(void)l;
#endif
}

#define rp_lock(l)                                                                        \
	do {                                                                              \
		rp_lock_not_held(l);                                                      \
		pthread_mutex_lock(&(l)->mutex);                                          \
		rp_lock_owned(l);                                                         \
	} while (0)

/* pthread_mutex_trylock: true when taken now, false when another thread holds it. */
static inline bool rp_lock_try(struct rp_lock *l)
{
	rp_lock_not_held(l);
	if (pthread_mutex_trylock(&l->mutex) != 0)
		return false;
	rp_lock_owned(l);
	return true;
}

/* pthread_mutex_timedlock: true when taken before deadline (CLOCK_REALTIME). */
static inline bool rp_lock_until(struct rp_lock *l, const struct timespec *deadline)
{
	if (pthread_mutex_timedlock(&l->mutex, deadline) != 0)
		return false;
	rp_lock_owned(l);
	return true;
}

#if RP_LOCK_CHECKS
#define rp_unlock(l)                                                                      \
	do {                                                                              \
		rp_lock_held(l);                                                          \
		atomic_store_explicit(&(l)->owner, 0, memory_order_relaxed);              \
		pthread_mutex_unlock(&(l)->mutex);                                        \
	} while (0)
#else
#define rp_unlock(l) pthread_mutex_unlock(&(l)->mutex)
#endif

#endif
