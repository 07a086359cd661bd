/* common/join.h - joins a set of threads within a bound: at exit a process waits for its
 * helper threads (the early set-ups, the control API's prepare threads) but must not hang
 * on one that never ends (a set-up waiting for a lock a stuck replay holds). Header only:
 * libc and pthreads. */
#ifndef COMMON_JOIN_H
#define COMMON_JOIN_H

#include <errno.h>
#include <pthread.h>
#include <time.h>

/* Joins threads[0 .. n), waiting at most seconds for all of them together; any still
 * running then is detached and left to end on its own. */
static inline void rp_join_within(pthread_t *threads, unsigned n, int seconds)
{
	struct timespec deadline;
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += seconds;
	for (unsigned i = 0; i < n; i++)
		if (pthread_timedjoin_np(threads[i], NULL, &deadline) == ETIMEDOUT)
			pthread_detach(threads[i]);
}

#endif
