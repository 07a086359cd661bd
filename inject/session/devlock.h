/* inject/session/devlock.h - processes take turns on a device: a lock per device across processes,
 * named from the device's UUID, held for one measured launch. The profiling hardware is one
 * per device (a second process measuring at once gets CUPTI_ERROR_HARDWARE_BUSY:
 * doc/measurements.md, "Processes, contexts, collectives"; which state holds it,
 * doc/concurrency.md), so measured launches of all processes on one device are
 * serialised; unselected launches never touch the lock. libc only (no CUDA), so that its
 * tests run anywhere. Used by inject/'s measuring code with the replay lock held, and
 * by its own watcher thread (inject_devlock_watch).
 * Failures return a code of common/error.h: RP_ERR_TIMEOUT when another process kept a
 * lock past the wait, RP_ERR_NO_MEMORY, else RP_ERR_FAILED; where there is an err buffer
 * it gets the system's reason (strerror), which the callers' messages name. The questions
 * (inject_devlock_shared, _hardware_elsewhere, _turn_elsewhere) answer yes or no, and
 * are no failures. */
#ifndef INJECT_DEVLOCK_H
#define INJECT_DEVLOCK_H

#include <stdbool.h>
#include <stddef.h>

struct inject_devlock;

/* Opens (creating with mode 0600) the lock file of the device with this UUID in dir
 * (NULL: /dev/shm, else /tmp), O_CLOEXEC and O_NOFOLLOW, and marks this process as one
 * that measures on the device. Returns 0, or a code with the file and the reason in err
 * (the caller then measures without taking turns). */
int inject_devlock_open(const char *uuid, const char *dir, struct inject_devlock **out,
			char *err, size_t err_size);
/* The same without marking this process as measuring: it can take turns and ask whether
 * others measure, and is not counted by them until inject_devlock_mark_present (the early
 * set-up of a process that may never measure must not make the ones that do give up
 * their profiler after every launch). */
int inject_devlock_open_absent(const char *uuid, const char *dir, struct inject_devlock **out,
			       char *err, size_t err_size);
/* Marks this process as one that measures on the device (once; later calls do nothing).
 * 0, or a code (RP_ERR_TIMEOUT: another process probed the byte for over a second) with
 * the reason in err. */
int inject_devlock_mark_present(struct inject_devlock *lock, char *err, size_t err_size);
/* Waits at most timeout_ms (0: only tries) for this process's turn. Fair between
 * processes: a process that has just had its turn waits behind one already waiting.
 * Returns 0 with the turn held, RP_ERR_TIMEOUT, or RP_ERR_FAILED, with the reason in err.
 * Not re-entrant: one turn at a time per lock. */
int inject_devlock_acquire(struct inject_devlock *lock, long timeout_ms, char *err,
			   size_t err_size);
/* Gives the turn back. Cannot fail; does nothing when the turn is not held. */
void inject_devlock_release(struct inject_devlock *lock);
/* Whether another live process has this device's lock open (measures on it too). */
bool inject_devlock_shared(struct inject_devlock *lock);
/* The profiling hardware (bench/busy_probe.c, doc/concurrency.md): a range profiler that
 * has run a pass and is still enabled keeps every other process's Start, and its counter
 * availability query, failing with CUPTI_ERROR_HARDWARE_BUSY until it is disabled; one
 * that is only enabled does not. A process holds the hardware byte (a read lock: several
 * contexts of one process, or a process setting up early) from enabling a profiler until
 * disabling it, so that one that takes the turn can tell a rangeprof process's idle
 * profiler from a profiler outside rangeprof. 0 or RP_ERR_FAILED. */
int inject_devlock_hold_hardware(struct inject_devlock *lock);
void inject_devlock_drop_hardware(struct inject_devlock *lock);
/* Whether another process holds the hardware byte (F_OFD_GETLK: looks without locking,
 * so it never disturbs the holders). */
bool inject_devlock_hardware_elsewhere(struct inject_devlock *lock);
/* Whether another process holds the turn (looked at as above). */
bool inject_devlock_turn_elsewhere(struct inject_devlock *lock);
/* Asks the processes that hold the hardware idle to let it go: rings the device's doorbell
 * (a counter in the lock file's shared page, woken with a futex) and waits at most
 * timeout_ms (0: only looks) until no other process holds the hardware byte, ringing
 * again every 50 ms for a holder that was not listening yet. waited_ms gets the time spent
 * (a hand-over took 16.6-108.7 ms on the H200: doc/concurrency.md, "What it costs").
 * 0 when free, RP_ERR_TIMEOUT, or RP_ERR_FAILED (no lock). */
int inject_devlock_wait_hardware(struct inject_devlock *lock, long timeout_ms,
				 double *waited_ms);
/* Starts (once per lock) a thread that calls on_ring(arg) each time another process rings
 * the doorbell; on_ring decides, under its own locks, whether there is an idle profiler to
 * let go. Costs next to nothing while nobody rings: the thread sleeps in the futex, woken
 * once a second only to see whether it should stop. 0, or RP_ERR_FAILED with the reason
 * in err. */
int inject_devlock_watch(struct inject_devlock *lock, void (*on_ring)(void *arg), void *arg,
			 char *err, size_t err_size);
/* Closes the lock; a held turn is given back. NULL does nothing. */
void inject_devlock_close(struct inject_devlock *lock);
/* In a child forked without exec: drops the inherited descriptor without touching the
 * locks, which belong to the parent's open file description (unlocking here would give
 * away the parent's turn). NULL does nothing. */
void inject_devlock_forget(struct inject_devlock *lock);

#endif
