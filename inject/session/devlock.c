/* inject/session/devlock.c - a lock per device across processes (devlock.h).
 * One file per device UUID, three bytes of it locked with open-file-description locks
 * (F_OFD_SETLK): they are released when the process dies, however it dies, and they are
 * not shared with threads' own POSIX locks or lost when some other descriptor of the same
 * file is closed, as classic fcntl locks would be.
 *   byte 0  the entry: held while waiting for the turn, so that a process that has just
 *           given the turn back cannot take it again ahead of one already waiting;
 *   byte 1  the turn: held for one measured launch;
 *   byte 2  presence: read-locked by every process measuring on the device, so that one
 *           can tell whether it is alone;
 *   byte 3  hardware: read-locked by every process with a range profiler enabled on the
 *           device (devlock.h says why), looked at with F_OFD_GETLK only.
 * Waiting polls with a bounded sleep, which bounds the wait (a blocking F_OFD_SETLKW
 * cannot time out without a signal).
 * The doorbell is a counter in the file's first page, mapped shared: a process that needs
 * the hardware adds one and wakes the futex; each holder's watcher thread sleeps in
 * FUTEX_WAIT on it (a futex in a shared file mapping works across processes), so holding
 * an idle profiler costs no polling. Inside the file failures are -errno; each public
 * function turns them into a code of common/error.h (code_of).
 * Calls: none (libc only).
 * Called by: device.c (opens each device's), session.c (the turn, the hardware), measure.c.
 * Lock: none (the handles are device.c's, under the replay lock; across processes, the
 * file's byte locks). */
#include "inject/session/devlock.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/error.h"

enum { BYTE_ENTRY, BYTE_TURN, BYTE_PRESENCE, BYTE_HARDWARE };

/* The file's shared page; the locked bytes above are file offsets, not memory, so the page
 * can hold the doorbell at an offset of its own. */
#define PAGE_BYTES 4096
struct shared_page {
	char locked_bytes[64];
	_Atomic uint32_t doorbell;
};

struct inject_devlock {
	int fd;
	bool held;
	bool present;                /* holds the presence byte's read lock */
	bool hardware;               /* holds the hardware byte's read lock */
	struct shared_page *page;    /* NULL: no doorbell (the mapping failed) */
	pthread_t watcher;
	bool watching;
	atomic_bool stop;
	void (*on_ring)(void *);
	void *arg;
};

/* The code of common/error.h for -errno rc (0 stays 0). */
static int code_of(int rc)
{
	return !rc ? 0 : rc == -ETIMEDOUT ? RP_ERR_TIMEOUT : rc == -ENOMEM ? RP_ERR_NO_MEMORY :
		RP_ERR_FAILED;
}

/* code_of(rc), with the system's reason in err. */
static int failure(int rc, char *err, size_t err_size)
{
	snprintf(err, err_size, "%s", strerror(-rc));
	return code_of(rc);
}

static int lock_byte(int fd, int byte, short type)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET, .l_start = byte, .l_len = 1 };
	return fcntl(fd, F_OFD_SETLK, &fl) == 0 ? 0 : -errno;
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

/* Tries to lock byte (type F_WRLCK or F_RDLCK) until deadline (monotonic seconds),
 * sleeping 0.1 ms at first and up to 5 ms, so that a short wait stays short and a long one
 * costs little. */
static int lock_byte_until(int fd, int byte, short type, double deadline)
{
	long sleep_ns = 100000;
	for (;;) {
		int rc = lock_byte(fd, byte, type);
		if (rc != -EAGAIN && rc != -EACCES && rc != -EINTR)
			return rc;
		if (now() >= deadline)
			return -ETIMEDOUT;
		nanosleep(&(struct timespec){ 0, sleep_ns }, NULL);
		if (sleep_ns < 5000000)
			sleep_ns *= 2;
	}
}

int inject_devlock_open_absent(const char *uuid, const char *dir, struct inject_devlock **out,
			       char *err, size_t err_size)
{
	struct stat st;
	if (!dir)
		dir = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : "/tmp";
	/* The UUID comes from the driver, but a name is built from it: keep it to the
	 * characters a UUID has, so that nothing can make it a path. */
	char name[128];
	size_t n = 0;
	for (const char *p = uuid; *p && n < 80; p++)
		if ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
		    (*p >= 'A' && *p <= 'Z') || *p == '-')
			name[n++] = *p;
	name[n] = '\0';
	char path[4096];
	snprintf(path, sizeof(path), "%s/rangeprof-device-%s.lock", dir, n ? name : "unknown");
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		int e = errno;
		snprintf(err, err_size, "cannot open the device lock '%s': %s", path, strerror(e));
		return code_of(-e);
	}
	struct inject_devlock *lock = calloc(1, sizeof(*lock));
	if (!lock) {
		close(fd);
		snprintf(err, err_size, "out of host memory");
		return RP_ERR_NO_MEMORY;
	}
	lock->fd = fd;
	/* Grown, never shrunk: another process may have the page mapped already. */
	void *page = MAP_FAILED;
	if (fstat(fd, &st) == 0 && (st.st_size >= PAGE_BYTES || ftruncate(fd, PAGE_BYTES) == 0))
		page = mmap(NULL, PAGE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	lock->page = page == MAP_FAILED ? NULL : page;
	*out = lock;
	return 0;
}

int inject_devlock_mark_present(struct inject_devlock *lock, char *err, size_t err_size)
{
	if (!lock)
		return failure(-EINVAL, err, err_size);
	if (lock->present)
		return 0;
	/* A read lock never conflicts with another read lock: only a process probing for
	 * being alone (inject_devlock_shared's write lock, held for a few microseconds) is
	 * refused, so a refusal is waited out: giving up at once would leave this process
	 * measuring without taking turns for the rest of its life. */
	int rc = lock_byte_until(lock->fd, BYTE_PRESENCE, F_RDLCK, now() + 1.0);
	if (rc)
		return failure(rc, err, err_size);
	lock->present = true;
	return 0;
}

int inject_devlock_open(const char *uuid, const char *dir, struct inject_devlock **out,
			char *err, size_t err_size)
{
	struct inject_devlock *lock = NULL;
	int rc = inject_devlock_open_absent(uuid, dir, &lock, err, err_size);
	if (rc)
		return rc;
	char why[128];
	if ((rc = inject_devlock_mark_present(lock, why, sizeof(why))) != 0) {
		snprintf(err, err_size, "cannot lock the device lock of %s: %s", uuid, why);
		inject_devlock_close(lock);
		return rc;
	}
	*out = lock;
	return 0;
}

int inject_devlock_acquire(struct inject_devlock *lock, long timeout_ms, char *err,
			   size_t err_size)
{
	if (!lock)
		return failure(-EINVAL, err, err_size);
	if (lock->held)
		return 0;
	double deadline = now() + (timeout_ms > 0 ? timeout_ms / 1e3 : 0);
	int rc = lock_byte_until(lock->fd, BYTE_ENTRY, F_WRLCK, deadline);
	if (rc)
		return failure(rc, err, err_size);
	rc = lock_byte_until(lock->fd, BYTE_TURN, F_WRLCK, deadline);
	lock_byte(lock->fd, BYTE_ENTRY, F_UNLCK);
	if (rc)
		return failure(rc, err, err_size);
	lock->held = true;
	return 0;
}

void inject_devlock_release(struct inject_devlock *lock)
{
	if (!lock || !lock->held)
		return;
	lock_byte(lock->fd, BYTE_TURN, F_UNLCK);
	lock->held = false;
}

bool inject_devlock_shared(struct inject_devlock *lock)
{
	if (!lock)
		return false;
	/* Upgrading our read lock fails while any other process holds one; a failed F_SETLK
	 * leaves our read lock as it was. Without one of our own, the probe's write lock is
	 * given back. */
	if (lock_byte(lock->fd, BYTE_PRESENCE, F_WRLCK) != 0)
		return true;
	lock_byte(lock->fd, BYTE_PRESENCE, lock->present ? F_RDLCK : F_UNLCK);
	return false;
}

int inject_devlock_hold_hardware(struct inject_devlock *lock)
{
	if (!lock)
		return code_of(-EINVAL);
	if (lock->hardware)
		return 0;
	/* Nobody write-locks this byte (others only look), so a read lock is granted at once. */
	int rc = lock_byte(lock->fd, BYTE_HARDWARE, F_RDLCK);
	if (rc == 0)
		lock->hardware = true;
	return code_of(rc);
}

void inject_devlock_drop_hardware(struct inject_devlock *lock)
{
	if (!lock || !lock->hardware)
		return;
	lock_byte(lock->fd, BYTE_HARDWARE, F_UNLCK);
	lock->hardware = false;
}

/* Whether another open file description holds a lock on byte that a write lock would
 * conflict with. F_OFD_GETLK never reports this description's own locks. */
static bool locked_elsewhere(int fd, int byte)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = byte, .l_len = 1 };
	return fcntl(fd, F_OFD_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;
}

bool inject_devlock_hardware_elsewhere(struct inject_devlock *lock)
{
	return lock && locked_elsewhere(lock->fd, BYTE_HARDWARE);
}

bool inject_devlock_turn_elsewhere(struct inject_devlock *lock)
{
	return lock && locked_elsewhere(lock->fd, BYTE_TURN);
}

static void ring(struct inject_devlock *lock)
{
	if (!lock->page)
		return;
	atomic_fetch_add(&lock->page->doorbell, 1);
	syscall(SYS_futex, &lock->page->doorbell, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
}

int inject_devlock_wait_hardware(struct inject_devlock *lock, long timeout_ms,
				 double *waited_ms)
{
	double start = now();
	*waited_ms = 0;
	if (!lock)
		return code_of(-EINVAL);
	if (!inject_devlock_hardware_elsewhere(lock))
		return 0;
	double deadline = start + (timeout_ms > 0 ? timeout_ms / 1e3 : 0), rung = start;
	long sleep_ns = 100000;
	ring(lock);
	for (;;) {
		/* A holder lets go in ~12 ms (its Disable took 11.4-13.0 ms, bench/busy_probe.c:
		 * doc/concurrency.md): polled finely at first, then every 2 ms. */
		nanosleep(&(struct timespec){ 0, sleep_ns }, NULL);
		if (sleep_ns < 2000000)
			sleep_ns *= 2;
		double t = now();
		*waited_ms = (t - start) * 1e3;
		if (!inject_devlock_hardware_elsewhere(lock))
			return 0;
		if (t >= deadline)
			return code_of(-ETIMEDOUT);
		if (t - rung >= 0.05) {
			ring(lock);
			rung = t;
		}
	}
}

static void *watch(void *arg)
{
	struct inject_devlock *lock = arg;
	uint32_t seen = atomic_load(&lock->page->doorbell);
	while (!atomic_load(&lock->stop)) {
		/* Woken by a ring; the timeout only lets inject_devlock_close stop the thread. */
		struct timespec second = { 1, 0 };
		syscall(SYS_futex, &lock->page->doorbell, FUTEX_WAIT, seen, &second, NULL, 0);
		uint32_t bell = atomic_load(&lock->page->doorbell);
		if (bell != seen && !atomic_load(&lock->stop)) {
			seen = bell;
			lock->on_ring(lock->arg);
		}
	}
	return NULL;
}

int inject_devlock_watch(struct inject_devlock *lock, void (*on_ring)(void *arg), void *arg,
			 char *err, size_t err_size)
{
	if (!lock || !lock->page)
		return failure(-EINVAL, err, err_size);
	if (lock->watching)
		return 0;
	lock->on_ring = on_ring;
	lock->arg = arg;
	/* The application's signals are its own: the thread blocks them all. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(&lock->watcher, NULL, watch, lock);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc)
		return failure(-rc, err, err_size);
	lock->watching = true;
	return 0;
}

void inject_devlock_close(struct inject_devlock *lock)
{
	if (!lock)
		return;
	if (lock->watching) {
		atomic_store(&lock->stop, true);
		pthread_join(lock->watcher, NULL);
	}
	if (lock->page)
		munmap(lock->page, PAGE_BYTES);
	close(lock->fd); /* releases every byte this description holds */
	free(lock);
}

void inject_devlock_forget(struct inject_devlock *lock)
{
	if (!lock)
		return;
	/* The parent still holds the description open: closing our copy releases nothing.
	 * Its watcher thread, if any, was not forked with us. */
	if (lock->page)
		munmap(lock->page, PAGE_BYTES);
	close(lock->fd);
	free(lock);
}
