/* tests/unit/inject/devlock_test.c - processes take turns on a device: real processes
 * (fork), each with its own lock, on this machine; no GPU needed. Failures are codes of
 * common/error.h, with the system's reason in the caller's buffer. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/error.h"
#include "inject/session/devlock.h"

static char dir[] = "/tmp/rp_devlock_XXXXXX";
static const char *uuid = "GPU-0f1e2d3c-aaaa-bbbb-cccc-000000000001";

static void make_dir(void)
{
	cr_assert_not_null(mkdtemp(dir));
}

static struct inject_devlock *open_lock(void)
{
	struct inject_devlock *l = NULL;
	char err[512];
	int rc = inject_devlock_open(uuid, dir, &l, err, sizeof(err));
	cr_assert_eq(rc, 0, "%s", err);
	return l;
}

/* inject_devlock_acquire; the tests that look at the reason call it themselves. */
static int acquire(struct inject_devlock *l, long timeout_ms)
{
	char err[256];
	return inject_devlock_acquire(l, timeout_ms, err, sizeof(err));
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* Waits for the child pid and asserts that it exited with status 0; what names it in the
 * message, which says how it ended otherwise. */
static void reap_ok(pid_t pid, const char *what)
{
	int status;
	cr_assert_eq(waitpid(pid, &status, 0), pid, "%s: waitpid: %s", what, strerror(errno));
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s %s %d", what,
		  WIFEXITED(status) ? "exited with status" : "was killed by signal",
		  WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
}

/* A child that takes the turn, says so through the pipe, then does what `then` says. */
static pid_t holder(int then_sleep_ms, bool crash)
{
	int p[2];
	cr_assert_eq(pipe(p), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct inject_devlock *l = NULL;
		char err[256];
		if (inject_devlock_open(uuid, dir, &l, err, sizeof(err)) ||
		    acquire(l, 5000))
			_exit(3);
		if (write(p[1], "x", 1) != 1)
			_exit(4);
		if (crash)
			abort();
		usleep(then_sleep_ms * 1000);
		inject_devlock_release(l);
		_exit(0);
	}
	close(p[1]);
	char c;
	cr_assert_eq(read(p[0], &c, 1), 1, "the child took the turn");
	close(p[0]);
	return pid;
}

Test(devlock, file_is_private_and_named_from_the_uuid, .init = make_dir)
{
	struct inject_devlock *l = open_lock();
	char path[512];
	snprintf(path, sizeof(path), "%s/rangeprof-device-%s.lock", dir, uuid);
	struct stat st;
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0600);
	inject_devlock_close(l);
	/* Nothing in a UUID can make the name a path. */
	char err[256];
	cr_assert_eq(inject_devlock_open("../../x/y", dir, &l, err, sizeof(err)), 0, "%s", err);
	snprintf(path, sizeof(path), "%s/rangeprof-device-xy.lock", dir);
	cr_assert_eq(stat(path, &st), 0);
	inject_devlock_close(l);
}

Test(devlock, a_turn_held_by_another_process_excludes_this_one, .init = make_dir)
{
	pid_t child = holder(400, false);
	struct inject_devlock *l = open_lock();
	cr_assert_eq(acquire(l, 0), RP_ERR_TIMEOUT, "held by the child");
	double t0 = now();
	cr_assert_eq(acquire(l, 5000), 0, "given back by the child");
	cr_assert_lt(now() - t0, 4.0);
	reap_ok(child, "the holder");
	inject_devlock_release(l);
	inject_devlock_close(l);
}

Test(devlock, the_wait_is_bounded, .init = make_dir)
{
	pid_t child = holder(3000, false);
	struct inject_devlock *l = open_lock();
	double t0 = now();
	cr_assert_eq(acquire(l, 300), RP_ERR_TIMEOUT);
	double waited = now() - t0;
	cr_assert(waited >= 0.29 && waited < 2.0, "waited %.3f s for a 0.3 s bound", waited);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	inject_devlock_close(l);
}

Test(devlock, a_crashed_holder_gives_the_turn_back, .init = make_dir)
{
	pid_t child = holder(0, true);
	int status;
	waitpid(child, &status, 0);
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
	struct inject_devlock *l = open_lock();
	cr_assert_eq(acquire(l, 1000), 0);
	inject_devlock_close(l);
}

Test(devlock, measured_sections_never_overlap, .init = make_dir)
{
	/* Two processes, 40 turns each; inside a turn each marks the section busy, checks
	 * that nobody else is in it, and increments a shared counter non-atomically. */
	struct shared { atomic_int inside, overlaps; int counter; } *s =
		mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(s, MAP_FAILED);
	memset(s, 0, sizeof(*s));
	pid_t kids[2];
	for (int k = 0; k < 2; k++) {
		kids[k] = fork();
		if (kids[k] == 0) {
			struct inject_devlock *l = NULL;
			char err[256];
			if (inject_devlock_open(uuid, dir, &l, err, sizeof(err)))
				_exit(3);
			for (int i = 0; i < 40; i++) {
				if (acquire(l, 10000))
					_exit(4);
				if (atomic_fetch_add(&s->inside, 1) != 0)
					atomic_fetch_add(&s->overlaps, 1);
				int c = s->counter;
				usleep(500);
				s->counter = c + 1;
				atomic_fetch_sub(&s->inside, 1);
				inject_devlock_release(l);
			}
			_exit(0);
		}
	}
	reap_ok(kids[0], "the first child");
	reap_ok(kids[1], "the second child");
	cr_assert_eq(s->overlaps, 0);
	cr_assert_eq(s->counter, 80);
}

Test(devlock, a_waiting_process_gets_the_next_turn, .init = make_dir)
{
	/* This process takes turns back to back; a child waiting must still get one. */
	struct inject_devlock *l = open_lock();
	cr_assert_eq(acquire(l, 0), 0);
	int p[2];
	cr_assert_eq(pipe(p), 0);
	pid_t child = fork();
	if (child == 0) {
		struct inject_devlock *c = NULL;
		char err[256];
		if (inject_devlock_open(uuid, dir, &c, err, sizeof(err)))
			_exit(3);
		int rc = acquire(c, 5000);
		if (write(p[1], "x", 1) != 1)
			_exit(5);
		_exit(rc ? 4 : 0);
	}
	close(p[1]);
	usleep(100000); /* the child is waiting now */
	double t0 = now();
	bool child_got_it = false;
	while (now() - t0 < 3.0 && !child_got_it) {
		inject_devlock_release(l);
		/* Taken again at once, as a process measuring launch after launch does. */
		if (acquire(l, 0) == RP_ERR_TIMEOUT) {
			child_got_it = true;
			cr_assert_eq(acquire(l, 5000), 0);
		}
	}
	cr_assert(child_got_it, "the waiting process never got a turn");
	reap_ok(child, "the waiting child");
	inject_devlock_release(l);
	inject_devlock_close(l);
}

Test(devlock, a_process_knows_whether_others_measure_on_the_device, .init = make_dir)
{
	struct inject_devlock *l = open_lock();
	cr_assert_not(inject_devlock_shared(l));
	pid_t child = holder(600, false);
	cr_assert(inject_devlock_shared(l));
	reap_ok(child, "the holder");
	cr_assert_not(inject_devlock_shared(l));
	inject_devlock_close(l);
}

Test(devlock, a_process_that_does_not_measure_yet_is_not_counted, .init = make_dir)
{
	struct inject_devlock *l = open_lock();
	char err[256];
	struct inject_devlock *quiet = NULL;
	pid_t child = fork();
	cr_assert_geq(child, 0);
	if (child == 0) {
		/* Opened absent, it can take a turn without being counted; present, it is. */
		struct inject_devlock *c = NULL;
		if (inject_devlock_open_absent(uuid, dir, &c, err, sizeof(err)) ||
		    acquire(c, 5000))
			_exit(3);
		inject_devlock_release(c);
		usleep(300 * 1000);
		if (inject_devlock_mark_present(c, err, sizeof(err)))
			_exit(4);
		usleep(600 * 1000);
		_exit(0);
	}
	usleep(150 * 1000);
	cr_assert_not(inject_devlock_shared(l), "absent: not counted");
	usleep(500 * 1000);
	cr_assert(inject_devlock_shared(l), "marked present: counted");
	reap_ok(child, "the child opened absent");
	/* The absent side's probe gives its write lock back: the other can still mark itself. */
	cr_assert_eq(inject_devlock_open_absent(uuid, dir, &quiet, err, sizeof(err)), 0, "%s", err);
	cr_assert(inject_devlock_shared(quiet), "it sees the present one");
	cr_assert_not(inject_devlock_shared(l), "its probe left nothing behind");
	cr_assert_eq(inject_devlock_mark_present(quiet, err, sizeof(err)), 0, "%s", err);
	cr_assert(inject_devlock_shared(l), "the same process's second description counts as another");
	inject_devlock_close(quiet);
	inject_devlock_close(l);
}

Test(devlock, a_forked_child_dropping_the_lock_keeps_the_parents_turn, .init = make_dir)
{
	struct inject_devlock *l = open_lock();
	cr_assert_eq(acquire(l, 0), 0);
	pid_t child = fork();
	if (child == 0) {
		inject_devlock_forget(l);
		_exit(0);
	}
	reap_ok(child, "the child that forgot the lock");
	/* Another process must still find the turn taken. */
	pid_t probe = fork();
	if (probe == 0) {
		struct inject_devlock *c = NULL;
		char err[256];
		if (inject_devlock_open(uuid, dir, &c, err, sizeof(err)))
			_exit(3);
		_exit(acquire(c, 0) == RP_ERR_TIMEOUT ? 0 : 1);
	}
	reap_ok(probe, "the probe (exit 1: the turn was given away)");
	inject_devlock_close(l);
}

static void *unlock_later(void *arg)
{
	int fd = *(int *)arg;
	usleep(50 * 1000);
	struct flock fl = { .l_type = F_UNLCK, .l_whence = SEEK_SET, .l_start = 2, .l_len = 1 };
	fcntl(fd, F_OFD_SETLK, &fl);
	return NULL;
}

/* Another process probing whether it is alone (inject_devlock_shared) holds the presence
 * byte for a moment: a process opening its lock just then must wait, not give up and
 * measure without taking turns for ever. */
Test(devlock, opening_during_another_process_probe_waits_for_it, .init = make_dir)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/rangeprof-device-%s.lock", dir, uuid);
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 2, .l_len = 1 };
	cr_assert_eq(fcntl(fd, F_OFD_SETLK, &fl), 0, "the probe's write lock");
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, unlock_later, &fd), 0);
	struct inject_devlock *l = NULL;
	char err[512];
	int rc = inject_devlock_open(uuid, dir, &l, err, sizeof(err));
	pthread_join(t, NULL);
	cr_assert_eq(rc, 0, "%s", err);
	inject_devlock_close(l);
	close(fd);
}

/* A probe that holds the presence byte past the second a process waits for it: marking
 * the process present times out, with the system's reason for the message. */
Test(devlock, marking_present_past_a_probe_held_for_over_a_second_times_out, .init = make_dir)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/rangeprof-device-%s.lock", dir, uuid);
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 2, .l_len = 1 };
	cr_assert_eq(fcntl(fd, F_OFD_SETLK, &fl), 0, "the probe's write lock, never given back");
	struct inject_devlock *l = NULL;
	char err[512];
	cr_assert_eq(inject_devlock_open_absent(uuid, dir, &l, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(inject_devlock_mark_present(l, err, sizeof(err)), RP_ERR_TIMEOUT);
	cr_assert_str_eq(err, strerror(ETIMEDOUT));
	inject_devlock_close(l);
	cr_assert_eq(inject_devlock_open(uuid, dir, &l, err, sizeof(err)), RP_ERR_TIMEOUT);
	cr_assert(strstr(err, "cannot lock the device lock of ") &&
		  strstr(err, strerror(ETIMEDOUT)), "%s", err);
	close(fd);
}

/* What session.c decides on: a turn another process holds is RP_ERR_TIMEOUT (it then
 * waits longer, or says device-lock-timeout), anything else RP_ERR_FAILED; its messages
 * name the system's reason from the buffer. */
Test(devlock, failures_are_codes_with_the_systems_reason, .init = make_dir)
{
	char err[512];
	struct inject_devlock *l = NULL;
	cr_assert_eq(inject_devlock_open(uuid, "/nonexistent-rangeprof-dir", &l, err, sizeof(err)),
		     RP_ERR_FAILED);
	cr_assert(strstr(err, "cannot open the device lock") && strstr(err, strerror(ENOENT)),
		  "%s", err);
	cr_assert_eq(inject_devlock_acquire(NULL, 0, err, sizeof(err)), RP_ERR_FAILED);
	cr_assert_str_eq(err, strerror(EINVAL));
	cr_assert_eq(inject_devlock_mark_present(NULL, err, sizeof(err)), RP_ERR_FAILED);
	cr_assert_eq(inject_devlock_watch(NULL, NULL, NULL, err, sizeof(err)), RP_ERR_FAILED);
	cr_assert_eq(inject_devlock_hold_hardware(NULL), RP_ERR_FAILED);
	double waited_ms;
	cr_assert_eq(inject_devlock_wait_hardware(NULL, 0, &waited_ms), RP_ERR_FAILED);
	pid_t child = holder(400, false);
	l = open_lock();
	cr_assert_eq(inject_devlock_acquire(l, 0, err, sizeof(err)), RP_ERR_TIMEOUT);
	cr_assert_str_eq(err, strerror(ETIMEDOUT));
	reap_ok(child, "the holder");
	inject_devlock_close(l);
}

/* ---- the profiling hardware and the doorbell (issue 23) ------------------------------ */

struct idle_holder {
	struct inject_devlock *lock;
	int rings;                   /* doorbell rings heard */
	int let_go_ms;               /* how long "disabling the profiler" takes */
	bool let_go;                 /* drop the hardware when rung (a rangeprof process) */
	int report;                  /* pipe: one byte per ring heard */
};

static void heard(void *arg)
{
	struct idle_holder *h = arg;
	h->rings++;
	if (write(h->report, "r", 1) != 1)
		_exit(5);
	/* What session.c's let-go does when the ringer holds the turn: disable (11.4-13.0 ms
	 * on the H200, bench/busy_probe.c: doc/concurrency.md), then the hardware byte
	 * goes. */
	if (h->let_go && inject_devlock_turn_elsewhere(h->lock)) {
		usleep(h->let_go_ms * 1000);
		inject_devlock_drop_hardware(h->lock);
	}
}

/* A child holding the hardware byte idle, as a process whose range profiler ran a pass
 * and stays enabled; it listens from listen_after_ms on (-1: never) and lives life_ms.
 * Each ring it hears is one byte on *rings_fd. */
static pid_t idle_hardware_holder(bool let_go, int listen_after_ms, int life_ms, int *rings_fd)
{
	int ready[2], rings[2];
	cr_assert_eq(pipe(ready), 0);
	cr_assert_eq(pipe(rings), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		close(rings[0]);
		static struct idle_holder h;
		char err[256];
		if (inject_devlock_open(uuid, dir, &h.lock, err, sizeof(err)) ||
		    inject_devlock_hold_hardware(h.lock))
			_exit(3);
		h.let_go = let_go;
		h.let_go_ms = 12;
		h.report = rings[1];
		if (write(ready[1], "x", 1) != 1)
			_exit(4);
		if (listen_after_ms >= 0) {
			usleep(listen_after_ms * 1000);
			if (inject_devlock_watch(h.lock, heard, &h, err, sizeof(err)))
				_exit(6);
		}
		usleep(life_ms * 1000);
		inject_devlock_close(h.lock);
		_exit(0);
	}
	close(ready[1]);
	close(rings[1]);
	char c;
	cr_assert_eq(read(ready[0], &c, 1), 1, "the child holds the hardware");
	close(ready[0]);
	*rings_fd = rings[0];
	return pid;
}

Test(devlock, hardware_held_by_another_process_is_seen_and_ours_is_not, .init = make_dir)
{
	struct inject_devlock *l = open_lock();
	cr_assert_eq(inject_devlock_hold_hardware(l), 0);
	cr_assert_not(inject_devlock_hardware_elsewhere(l), "our own hold is not another's");
	int rings;
	pid_t child = idle_hardware_holder(false, -1, 300, &rings);
	cr_assert(inject_devlock_hardware_elsewhere(l), "the child holds it");
	reap_ok(child, "the holder");
	cr_assert_not(inject_devlock_hardware_elsewhere(l), "gone with the child");
	/* Looking never takes the byte: our own read lock is still there for the others. */
	struct inject_devlock *other = open_lock();
	cr_assert(inject_devlock_hardware_elsewhere(other));
	inject_devlock_drop_hardware(l);
	cr_assert_not(inject_devlock_hardware_elsewhere(other));
	inject_devlock_close(other);
	inject_devlock_close(l);
	close(rings);
}

Test(devlock, a_ring_makes_an_idle_holder_let_go_within_milliseconds, .init = make_dir)
{
	int rings;
	pid_t child = idle_hardware_holder(true, 0, 3000, &rings);
	usleep(50000); /* its watcher is asleep in the futex */
	struct inject_devlock *l = open_lock();
	cr_assert_eq(acquire(l, 1000), 0, "the ringer holds the turn");
	double waited_ms = -1;
	double t0 = now();
	cr_assert_eq(inject_devlock_wait_hardware(l, 2000, &waited_ms), 0);
	double took_ms = (now() - t0) * 1e3;
	cr_assert(took_ms >= 12 && took_ms < 500, "let go after %.1f ms (12 ms to disable)",
		  took_ms);
	cr_assert(waited_ms > 0 && waited_ms <= took_ms + 1, "waited_ms %.1f", waited_ms);
	char c;
	cr_assert_eq(read(rings, &c, 1), 1, "the holder heard the ring");
	inject_devlock_release(l);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	inject_devlock_close(l);
	close(rings);
}

Test(devlock, the_wait_for_hardware_is_bounded, .init = make_dir)
{
	int rings;
	pid_t child = idle_hardware_holder(false, 0, 3000, &rings); /* hears, never lets go */
	struct inject_devlock *l = open_lock();
	double waited_ms = 0, t0 = now();
	cr_assert_eq(inject_devlock_wait_hardware(l, 300, &waited_ms), RP_ERR_TIMEOUT);
	double took = now() - t0;
	cr_assert(took >= 0.29 && took < 1.5, "took %.3f s for a 0.3 s bound", took);
	cr_assert(waited_ms >= 290 && waited_ms < 1500, "waited_ms %.1f", waited_ms);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	inject_devlock_close(l);
	close(rings);
}

Test(devlock, a_holder_that_listens_late_still_hears_the_ring_again, .init = make_dir)
{
	int rings;
	pid_t child = idle_hardware_holder(true, 150, 3000, &rings);
	struct inject_devlock *l = open_lock();
	cr_assert_eq(acquire(l, 1000), 0);
	double waited_ms = 0;
	cr_assert_eq(inject_devlock_wait_hardware(l, 2000, &waited_ms), 0);
	cr_assert(waited_ms >= 150 && waited_ms < 1000, "waited_ms %.1f", waited_ms);
	inject_devlock_release(l);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	inject_devlock_close(l);
	close(rings);
}

Test(devlock, a_holder_lets_go_only_for_a_process_holding_the_turn, .init = make_dir)
{
	/* A ring from a process of our own kind that does not hold the turn (here: rung by a
	 * wait with no turn taken) is heard, but the holder keeps the hardware. */
	int rings;
	pid_t child = idle_hardware_holder(true, 0, 3000, &rings);
	usleep(50000);
	struct inject_devlock *l = open_lock();
	double waited_ms = 0;
	cr_assert_eq(inject_devlock_wait_hardware(l, 200, &waited_ms), RP_ERR_TIMEOUT);
	char c;
	cr_assert_eq(read(rings, &c, 1), 1, "heard");
	cr_assert(inject_devlock_hardware_elsewhere(l), "kept");
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	inject_devlock_close(l);
	close(rings);
}

Test(devlock, an_idle_holder_nobody_rings_hears_nothing, .init = make_dir)
{
	int rings;
	pid_t child = idle_hardware_holder(true, 0, 400, &rings);
	reap_ok(child, "the holder");
	char c;
	cr_assert_eq(read(rings, &c, 1), 0, "no ring heard in 0.4 s");
	close(rings);
}
