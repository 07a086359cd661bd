/* inject/session/watchdog.c - reports a replay pass that has not finished (watchdog.h).
 * Its thread waits on a condition with a timeout, so that it costs nothing while no
 * pass runs.
 * Calls: output.c (libc besides).
 * Called by: kernel_workload.c, whole_workload.c, measure.c, save.c (an opened pass dropped).
 * Lock: lock (armed, the deadline and the kernel watched). */
#include "inject/session/watchdog.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <time.h>

#include "inject/output.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static bool started, armed;
static struct timespec deadline;
static double bound;
static const char *watched_kernel, *watched_mangled;
static int watched_device;
static uint32_t watched_context;
static uint64_t watched_launch;

static void *watch(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&lock);
	for (;;) {
		if (!armed) {
			pthread_cond_wait(&changed, &lock);
			continue;
		}
		struct timespec until = deadline;
		if (pthread_cond_timedwait(&changed, &lock, &until) != ETIMEDOUT)
			continue;
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (!armed || now.tv_sec < deadline.tv_sec ||
		    (now.tv_sec == deadline.tv_sec && now.tv_nsec < deadline.tv_nsec))
			continue;
		armed = false;
		const char *kernel = watched_kernel, *mangled = watched_mangled;
		int device = watched_device;
		uint32_t context = watched_context;
		unsigned long long launch = watched_launch;
		double seconds = bound;
		/* Reported without the lock: writing the record may take a while, and a late
		 * disarm must not wait for it. */
		pthread_mutex_unlock(&lock);
		inject_output_report(INJECT_REPORT_REPLAY_HANG,
				     INJECT_CONCERNS(.kernel = kernel, .mangled = mangled,
							     INJECT_ON_DEVICE(device), .context = context,
							     .option = "--nvtx-exclude"),
			      true, "%s (launch %llu, device %d): a replay pass has not finished "
			      "after %.0f s; the kernel may wait for another GPU, process or the "
			      "host, and a running kernel cannot be stopped. Exclude it with "
			      "--nvtx-exclude around its range or -k for the kernels to measure",
			      kernel, launch, device, seconds);
		pthread_mutex_lock(&lock);
	}
	return NULL;
}

void inject_watchdog_arm(double seconds, const char *kernel, const char *mangled, int device,
			 uint32_t context, uint64_t launch)
{
	pthread_mutex_lock(&lock);
	if (!started) {
		pthread_condattr_t attr;
		pthread_condattr_init(&attr);
		pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
		pthread_cond_destroy(&changed);
		pthread_cond_init(&changed, &attr);
		pthread_condattr_destroy(&attr);
		pthread_attr_t tattr;
		pthread_t thread;
		if (pthread_attr_init(&tattr) == 0) {
			pthread_attr_setdetachstate(&tattr, PTHREAD_CREATE_DETACHED);
			/* As early.c's threads: with every signal blocked from birth, the
			 * application's handlers run on its own threads only. */
			sigset_t all, old;
			sigfillset(&all);
			pthread_sigmask(SIG_SETMASK, &all, &old);
			started = pthread_create(&thread, &tattr, watch, NULL) == 0;
			pthread_sigmask(SIG_SETMASK, &old, NULL);
			pthread_attr_destroy(&tattr);
		}
		if (!started) {
			pthread_mutex_unlock(&lock);
			return;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += (time_t)seconds;
	deadline.tv_nsec += (long)((seconds - (double)(time_t)seconds) * 1e9);
	if (deadline.tv_nsec >= 1000000000L) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000L;
	}
	bound = seconds;
	watched_kernel = kernel;
	watched_mangled = mangled;
	watched_device = device;
	watched_context = context;
	watched_launch = launch;
	armed = true;
	pthread_cond_signal(&changed);
	pthread_mutex_unlock(&lock);
}

void inject_watchdog_disarm(void)
{
	pthread_mutex_lock(&lock);
	if (armed) {
		armed = false;
		pthread_cond_signal(&changed);
	}
	pthread_mutex_unlock(&lock);
}
