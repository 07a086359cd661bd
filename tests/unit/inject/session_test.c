/* tests/unit/inject/session_test.c - which context's range profiler holds a device's
 * profiling hardware (inject/session/session.c, device.c): a second context takes it over, a new
 * metric set gets a new profiler, another process holding the turn makes an idle one let
 * go, a context's destruction releases its own, and the saved copies kept between
 * measurements until the application allocates. On stand-ins for the driver, CUPTI and
 * the profiler (fake_world.c), with the real device lock and a forked process: no GPU. */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "inject/session/device.h"
#include "inject/session/contexts.h"
#include "inject/session/devlock.h"
#include "inject/session/session.h"
#include "inject/inject.h"
#include "tests/unit/inject/fake_world.h"

TestSuite(session, .init = fake_world_init, .fini = fake_world_finish);

/* A launch of kernel f in ctx (made current, as the driver's callback finds it), measured
 * to the end. */
static void launch_in(CUcontext ctx, unsigned f, uint64_t index)
{
	fw.current = ctx;
	struct inject_launch l = fake_launch(ctx, f, index);
	struct measurement *m = inject_save_enter(&l, "kernel(float*)");
	if (m)
		inject_save_exit(m, true);
}

Test(session, a_second_context_of_the_device_disables_the_first_contexts_profiler_first)
{
	CUcontext a = fake_context(0), b = fake_context(1);
	launch_in(a, 0, 1);
	cr_assert_eq(fw.profiler_creates, 1);
	cr_assert_eq(fw.profiler_destroys, 0, "alone on the device, the profiler stays");
	launch_in(b, 0, 2);
	long gone = fake_event_find(FAKE_PROFILER_DESTROY, a, 0);
	long made = fake_event_find(FAKE_PROFILER_CREATE, b, 0);
	cr_assert_geq(gone, 0, "a's profiler disabled");
	cr_assert_gt(made, gone, "before b's is enabled");
	cr_assert_eq(fw.events[gone].ctx, a, "with a current, as CUPTI expects");
	cr_assert_eq(fw.current, b, "and b current again after");
	cr_assert_eq(fake_records("summary"), 2);
	/* And back: a's next measurement takes the hardware from b. */
	launch_in(a, 0, 3);
	long b_gone = fake_event_find(FAKE_PROFILER_DESTROY, b, 0);
	long a_again = fake_event_find(FAKE_PROFILER_CREATE, a, (size_t)made);
	cr_assert_geq(b_gone, 0);
	cr_assert_gt(a_again, b_gone);
	cr_assert_eq(fake_records("summary"), 3);
}

Test(session, a_metric_set_change_releases_the_profiler_before_building_the_new_set)
{
	CUcontext a = fake_context(0);
	launch_in(a, 0, 1);
	struct inject_config c = fake_config();
	c.metrics = "gpu__time_duration.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed";
	inject_session_configure(&c);
	launch_in(a, 0, 2);
	cr_assert_eq(fw.set_creates, 2);
	long set = fake_event_find(FAKE_SET_CREATE, NULL, 1);
	cr_assert_geq(set, 0);
	cr_assert_str_eq(fw.events[set].metrics, c.metrics);
	long gone = fake_event_find(FAKE_PROFILER_DESTROY, a, 0);
	cr_assert_geq(gone, 0, "the old profiler disabled");
	cr_assert_lt(gone, set, "before the new set is built (CUPTI refuses the query)");
	long made = fake_event_find(FAKE_PROFILER_CREATE, a, (size_t)set);
	cr_assert_gt(made, set, "a new profiler for the new set");
	cr_assert_gt(fake_event_find(FAKE_MEASURE, a, (size_t)made), made, "measured with it");
	cr_assert_eq(fw.profiler_creates, 2);
	cr_assert_eq(fake_number(fake_record("run", 5), "metrics/sm__throughput.avg."
				 "pct_of_peak_sustained_elapsed"), 1000);
	/* Back to the first metrics: that set is kept, not built again, but the profiler
	 * sized for the other one is replaced. */
	struct inject_config first = fake_config();
	inject_session_configure(&first);
	launch_in(a, 0, 3);
	cr_assert_eq(fw.set_creates, 2);
	cr_assert_eq(fw.profiler_creates, 3);
	cr_assert_eq(fake_records("summary"), 3);
}

/* A process that takes the device's turn (the lock file device.c opened, from the fake
 * UUID) and keeps it until told through the pipe. Returns its id; *tell is the pipe's end
 * that lets it go. */
static pid_t turn_holder(int *tell)
{
	int took[2], go[2];
	cr_assert_eq(pipe(took), 0);
	cr_assert_eq(pipe(go), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		/* Only the test's ends: if the test dies, the read below sees the end of
		 * the pipe and this process ends too. */
		close(took[0]);
		close(go[1]);
		struct inject_devlock *l = NULL;
		char err[256], c;
		if (inject_devlock_open(fw.uuid, NULL, &l, err, sizeof(err)) ||
		    inject_devlock_acquire(l, 5000, err, sizeof(err)))
			_exit(3);
		if (write(took[1], "x", 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(4);
		inject_devlock_release(l);
		_exit(0);
	}
	close(took[1]);
	close(go[0]);
	char c;
	cr_assert_eq(read(took[0], &c, 1), 1, "the other process took the turn");
	close(took[0]);
	*tell = go[1];
	return pid;
}

static void let_holder_go(pid_t pid, int tell)
{
	cr_assert_eq(write(tell, "x", 1), 1);
	close(tell);
	int status;
	cr_assert_eq(waitpid(pid, &status, 0), pid, "waitpid: %s", strerror(errno));
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the holder ended badly");
}

Test(session, let_go_releases_the_idle_profiler_only_when_another_process_holds_the_turn)
{
	CUcontext a = fake_context(0), b = fake_context(1);
	launch_in(a, 0, 1);
	fw.current = b; /* the application's thread is elsewhere */
	inject_session_let_go(0);
	cr_assert_eq(fw.profiler_destroys, 0, "a ring of our own: the turn is not elsewhere");
	int tell;
	pid_t pid = turn_holder(&tell);
	inject_session_let_go(1);
	cr_assert_eq(fw.profiler_destroys, 0, "another device's ring leaves this one");
	inject_session_let_go(0);
	cr_assert_eq(fw.profiler_destroys, 1, "the other process holds the turn: let go");
	long gone = fake_event_find(FAKE_PROFILER_DESTROY, a, 0);
	cr_assert_eq(fw.events[gone].ctx, a, "disabled with its context current");
	cr_assert_eq(fw.current, b, "the thread's context left as it was");
	inject_session_let_go(0);
	cr_assert_eq(fw.profiler_destroys, 1, "nothing left to let go");
	let_holder_go(pid, tell);
	/* The next measurement enables a profiler again. */
	launch_in(a, 0, 2);
	cr_assert_eq(fw.profiler_creates, 2);
	cr_assert_eq(fake_records("summary"), 2);
}

/* Decided on RP_ERR_TIMEOUT from the device lock: a turn another process holds first makes
 * the idle profiler let go, then is waited for up to --device-lock-timeout; past that the
 * launch is not measured, and the warning says so (not the lock's own failure). */
Test(session, a_turn_held_past_the_device_lock_timeout_lets_go_then_gives_the_launch_up)
{
	CUcontext a = fake_context(0);
	launch_in(a, 0, 1);
	cr_assert_eq(fw.profiler_destroys, 0);
	struct inject_config c = fake_config();
	c.device_lock_timeout_ms = 100;
	inject_session_configure(&c);
	int tell;
	pid_t pid = turn_holder(&tell);
	launch_in(a, 0, 2);
	cr_assert_eq(fw.profiler_destroys, 1, "the idle profiler let go of the hardware first");
	cr_assert_eq(fake_records("summary"), 1, "launch 2 not measured");
	cr_assert_eq(fake_messages("warning", "another process measured on it for more than"), 1);
	cr_assert_eq(fake_messages("warning", "taking the device lock"), 0);
	let_holder_go(pid, tell);
	launch_in(a, 0, 3);
	cr_assert_eq(fake_records("summary"), 2);
}

Test(session, a_contexts_destruction_releases_its_profiler)
{
	CUcontext a = fake_context(0), b = fake_context(1);
	launch_in(a, 0, 1);
	fw.current = b;
	inject_session_context_destroyed(a);
	cr_assert_eq(fw.profiler_destroys, 1);
	long gone = fake_event_find(FAKE_PROFILER_DESTROY, a, 0);
	cr_assert_eq(fw.events[gone].ctx, a, "released with the dying context current");
	cr_assert_eq(fw.current, b, "the application's current context left as it was");
	/* Another context measures without touching the one released. */
	launch_in(b, 0, 2);
	cr_assert_eq(fw.profiler_destroys, 1);
	/* A new context under the old handle starts afresh: verified again, new profiler. */
	unsigned hashes = fw.hashes_outside;
	launch_in(a, 0, 3);
	cr_assert_eq(fw.hashes_outside, hashes + 1, "its kernel's save policy forgotten");
	cr_assert_eq(fake_event_count(FAKE_PROFILER_CREATE, a), 2);
	cr_assert_eq(fake_records("summary"), 3);
}

Test(session, a_context_never_measured_is_destroyed_without_a_profiler_call)
{
	inject_session_context_destroyed(fake_context(3));
	cr_assert_eq(fw.profiler_destroys, 0);
	cr_assert_eq(fw.syncs, 0);
}

/* A process that has the device's lock open and counts as measuring there (presence), but
 * takes no turn: a notebook that measured once, beside a script that measures now. */
static pid_t present_idle(int *tell)
{
	int ready[2], go[2];
	cr_assert_eq(pipe(ready), 0);
	cr_assert_eq(pipe(go), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		close(ready[0]);
		close(go[1]);
		struct inject_devlock *l = NULL;
		char err[256], c;
		if (inject_devlock_open(fw.uuid, NULL, &l, err, sizeof(err)))
			_exit(3);
		if (write(ready[1], "x", 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(4);
		_exit(0);
	}
	close(ready[1]);
	close(go[0]);
	char c;
	cr_assert_eq(read(ready[0], &c, 1), 1, "the other process is present");
	close(ready[0]);
	*tell = go[1];
	return pid;
}

/* With the hand-over (doc/concurrency.md), a process merely present on the device costs
 * the one measuring nothing: the profiler stays enabled between launches, and only a ring
 * from a process holding the turn makes it let go. */
Test(session, another_process_present_but_idle_leaves_the_profiler_enabled_between_launches)
{
	CUcontext a = fake_context(0);
	int tell;
	pid_t pid = present_idle(&tell);
	launch_in(a, 0, 1);
	launch_in(a, 0, 2);
	launch_in(a, 0, 3);
	cr_assert_eq(fake_records("summary"), 3);
	cr_assert_eq(fw.profiler_creates, 1, "one profiler for the three launches");
	cr_assert_eq(fw.profiler_destroys, 0, "kept while the other process is idle");
	let_holder_go(pid, tell);
}

/* rangeprof_prepare's host half (device.c, inject_device_prepare_host), made before the
 * device has a context: the set it builds by chip name is the one the first measured
 * launch uses; one it cannot build leaves nothing behind. */
Test(session, the_host_half_ahead_of_a_context_builds_the_set_the_first_launch_uses)
{
	inject_session_prepare_host(0);
	cr_assert_eq(fw.set_creates_by_name, 1);
	cr_assert_eq(fw.profiler_creates, 0, "no profiler: there is no context yet");
	launch_in(fake_context(0), 0, 1);
	cr_assert_eq(fw.set_creates, 0, "the set built ahead is used");
	cr_assert_eq(fw.profiler_creates, 1);
	cr_assert_eq(fake_records("summary"), 1);
	inject_session_prepare_host(0);
	cr_assert_eq(fw.set_creates_by_name, 1, "a device with a set is left alone");
}

Test(session, a_host_half_refused_leaves_the_set_to_the_first_launch)
{
	fw.by_name_refused = true;
	inject_session_prepare_host(0);
	cr_assert_eq(fw.set_creates_by_name, 1);
	launch_in(fake_context(0), 0, 1);
	cr_assert_eq(fw.set_creates, 1, "built again, with the context");
	cr_assert_eq(fake_records("summary"), 1, "and measured");
	cr_assert_eq(fake_records("error"), 0, "the refusal ahead is not said: the set-up with "
		     "the context decides");
}

Test(session, no_host_half_under_a_clock_lock_or_a_capture_or_out_of_range)
{
	fw.capture_under_way = true;
	inject_session_prepare_host(0);
	fw.capture_under_way = false;
	inject_session_prepare_host(-1);
	inject_session_prepare_host(INJECT_MAX_DEVICES);
	struct inject_config c = fake_config();
	c.clock_control = RP_CLOCK_BASE;
	inject_session_configure(&c);
	inject_session_prepare_host(0);
	cr_assert_eq(fw.set_creates_by_name, 0);
}

/* The early set-up after a host half still writes its `setup` record (the device was not
 * made ready ahead), and a metrics change between them builds the new set with the
 * context. */
Test(session, after_a_host_half_the_early_set_up_still_writes_its_record)
{
	inject_session_prepare_host(0);
	CUcontext a = fake_context(0);
	fw.current = a;
	inject_session_set_up_early(a, 1);
	cr_assert_eq(fake_records("setup"), 1);
	cr_assert_eq(fw.set_creates, 0, "the set built ahead served the set-up");
	cr_assert_eq(fw.profiler_creates, 1);
}

Test(session, metrics_changed_after_a_host_half_are_built_with_the_context)
{
	inject_session_prepare_host(0);
	struct inject_config c = fake_config();
	c.metrics = "gpu__time_duration.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed";
	inject_session_configure(&c);
	launch_in(fake_context(0), 0, 1);
	cr_assert_eq(fw.set_creates_by_name, 1);
	cr_assert_eq(fw.set_creates, 1, "the new metrics' set, with the context");
	long set = fake_event_find(FAKE_SET_CREATE, NULL, 0);
	cr_assert_geq(set, 0);
	cr_assert_str_eq(fw.events[set].metrics, c.metrics);
}

/* ---- saved copies kept between measurements (session.c, BACKUP_KEEP_BYTES) ---- */

static const struct mem_backup *inputs_of(CUcontext ctx)
{
	struct context_state *c = inject_contexts_state(ctx, inject_contexts_generation(ctx));
	cr_assert_not_null(c, "the context was set up");
	return &c->inputs;
}

/* The application allocating on a thread of its own, as a PyTorch tensor's cuMemAlloc
 * while the test's thread holds (or has let go of) the replay lock: the bytes in *arg
 * (SIZE_MAX: a call that does not say, as an array's). */
static void *allocate_on_another_thread(void *arg)
{
	inject_session_allocation_coming(*(const size_t *)arg);
	return NULL;
}

/* Unless a test says otherwise, an allocation of more than a quarter of the stand-in
 * device (all of it free): one that leaves it short, so that the kept copies go. */
static size_t allocating = SIZE_MAX;

static void allocate_bytes_from_another_thread(size_t bytes)
{
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, allocate_on_another_thread, &bytes), 0);
	cr_assert_eq(pthread_join(t, NULL), 0);
}

static void allocate_from_another_thread(void)
{
	allocate_bytes_from_another_thread(fw.mem_total / 4 * 3 + 1);
}

#define BIG_RANGE ((size_t)300 << 20) /* one range over the 256 MiB always kept */

Test(session, copies_beyond_256_mib_are_kept_for_the_next_launch_while_a_quarter_is_free)
{
	CUcontext a = fake_context(0);
	fw.range_bytes = BIG_RANGE;
	launch_in(a, 0, 1); /* verified: its inputs and the application's result saved */
	cr_assert_eq(fake_records("summary"), 1);
	cr_assert_eq(fw.backups_freed, 0, "neither copy freed at the launch's end");
	cr_assert_eq(inputs_of(a)->device_size, BIG_RANGE);
	launch_in(a, 0, 2);
	cr_assert_eq(fake_records("summary"), 2);
	cr_assert_eq(fw.backups_freed, 0);
}

Test(session, the_applications_allocation_frees_the_kept_copies_first)
{
	CUcontext a = fake_context(0);
	fw.range_bytes = BIG_RANGE;
	launch_in(a, 0, 1);
	inject_session_unlock(); /* between launches: launch.c holds the lock only in one */
	allocate_from_another_thread();
	inject_session_lock();
	cr_assert_eq(fw.backups_freed, 2, "the inputs and the result freed before it");
	cr_assert_eq(inputs_of(a)->device_size, 0);
	/* Nothing is kept now: a second allocation frees nothing more. */
	inject_session_unlock();
	allocate_from_another_thread();
	inject_session_lock();
	cr_assert_eq(fw.backups_freed, 2);
}

/* Context a measured once with copies kept, then an application thread freeing them
 * (an allocation that leaves the device short), each free taking ms: returned once the
 * frees are under way, the replay lock let go. Joined by the caller. */
static pthread_t freeing_slowly(CUcontext a, unsigned ms)
{
	fw.range_bytes = BIG_RANGE;
	launch_in(a, 0, 1);
	fw.free_sleep_ms = ms;
	inject_session_unlock();
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, allocate_on_another_thread, &allocating), 0);
	for (int i = 0; i < 2000 && !atomic_load(&fw.frees_under_way); i++)
		nanosleep(&(struct timespec){ 0, 1000 * 1000 }, NULL);
	cr_assert(atomic_load(&fw.frees_under_way), "the allocating thread is freeing them");
	return t;
}

/* The kept copies cost the application nothing until it runs short: an allocation that
 * leaves the device a quarter free frees none of them (cuMemFree would wait for the whole
 * device inside a call that does not, and cuMemAllocAsync never blocks); one that would
 * leave less, or whose size the call does not say, frees them first. Within the headroom
 * the driver gave last, an allocation asks the driver nothing; past it, it asks again, in
 * the holder's context, and the thread's own context is current again after. */
Test(session, an_allocation_that_leaves_a_quarter_free_keeps_the_copies)
{
	CUcontext a = fake_context(0), other = fake_context(1);
	fw.range_bytes = BIG_RANGE;
	fw.mem_free = fw.mem_total / 2;  /* a quarter of headroom */
	launch_in(a, 0, 1);
	unsigned asked = fw.mem_info_calls;
	inject_session_unlock();
	allocate_bytes_from_another_thread(fw.mem_total / 8);
	allocate_bytes_from_another_thread(fw.mem_total / 8);
	inject_session_lock();
	cr_assert_eq(fw.backups_freed, 0, "half free less a quarter: still a quarter");
	cr_assert_eq(fw.mem_info_calls, asked, "within the headroom: no driver call");
	cr_assert_eq(inputs_of(a)->device_size, BIG_RANGE);
	/* The headroom is spent; the driver, asked again in a, still says half is free. */
	fw.current = other;
	inject_session_unlock();
	allocate_bytes_from_another_thread(1);
	inject_session_lock();
	cr_assert_eq(fw.mem_info_calls, asked + 1, "past the headroom: asked again");
	cr_assert_eq(fw.mem_info_context, a, "in the holder's context");
	cr_assert_eq(fw.current, other, "and the thread's own is current again");
	cr_assert_eq(fw.backups_freed, 0, "frees come back at the question: room again");
	fw.current = a;
	inject_session_unlock();
	allocate_bytes_from_another_thread(fw.mem_total / 4 + 1);
	inject_session_lock();
	cr_assert_eq(fw.backups_freed, 2, "one byte more than the quarter: the device would run "
		     "short");
	cr_assert_eq(inputs_of(a)->device_size, 0);
	/* Kept again by the next launch; an array's size is not said: freed. */
	launch_in(a, 0, 2);
	cr_assert_eq(inputs_of(a)->device_size, BIG_RANGE);
	unsigned freed = fw.backups_freed;
	inject_session_unlock();
	allocate_bytes_from_another_thread(SIZE_MAX);
	inject_session_lock();
	cr_assert_gt(fw.backups_freed, freed);
	cr_assert_eq(inputs_of(a)->device_size, 0);
}

/* No application thread waits for another's frees of the kept copies: cuMemFree waits
 * for the whole device, and a kernel there may wait for this very thread (a feeder, a
 * proxy). An allocation that finds the frees under way goes on; the measurement that
 * needs the copies waits for them (below). */
Test(session, an_allocation_does_not_wait_for_another_threads_frees, .timeout = 10)
{
	pthread_t t = freeing_slowly(fake_context(0), 2000);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	allocate_bytes_from_another_thread(SIZE_MAX);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	cr_assert(atomic_load(&fw.frees_under_way), "returned while the frees went on");
	cr_assert_lt((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000, 1000,
		     "without waiting for them");
	cr_assert_eq(pthread_join(t, NULL), 0);
	inject_session_lock();
	cr_assert_eq(fw.backups_freed, 2, "each copy freed once, by the first thread");
}

/* An allocating thread frees the kept copies with the replay lock free (a device-wide
 * wait, milliseconds or more): the context's next measurement must wait for those frees
 * to end before it saves into the same copies, not find them no holder's already and write
 * into memory being freed (the review of session 24). */
Test(session, a_measurement_waits_for_the_kept_copies_being_freed_by_an_allocation)
{
	CUcontext a = fake_context(0);
	pthread_t t = freeing_slowly(a, 200);
	inject_session_lock();
	launch_in(a, 0, 2);
	inject_session_unlock();
	cr_assert_eq(pthread_join(t, NULL), 0);
	inject_session_lock();
	cr_assert_eq(fake_records("summary"), 2);
	cr_assert_eq(atomic_load(&fw.saves_beside_a_free), 0,
		     "a copy saved while the allocating thread still freed it");
}

Test(session, copies_up_to_256_mib_are_kept_whatever_the_application_allocates)
{
	CUcontext a = fake_context(0);
	launch_in(a, 0, 1); /* 256 bytes */
	inject_session_unlock();
	allocate_from_another_thread();
	inject_session_lock();
	cr_assert_eq(fw.backups_freed, 0);
	cr_assert_eq(inputs_of(a)->device_size, 256);
}

Test(session, a_device_with_under_a_quarter_free_gets_the_copies_back_at_the_launchs_end)
{
	CUcontext a = fake_context(0);
	fw.range_bytes = BIG_RANGE;
	fw.mem_free = fw.mem_total / 4 - 1;
	launch_in(a, 0, 1);
	cr_assert_eq(fake_records("summary"), 1);
	cr_assert_eq(fw.backups_freed, 2);
	cr_assert_eq(inputs_of(a)->device_size, 0);
}

Test(session, an_allocation_frees_the_kept_copies_without_waiting_for_the_replay_lock)
{
	CUcontext a = fake_context(0);
	fw.range_bytes = BIG_RANGE;
	launch_in(a, 0, 1);
	/* The test's thread holds the replay lock, as the early set-up or a wait for the
	 * device's turn would: the allocation does not wait for it. */
	allocate_from_another_thread();
	cr_assert_eq(fw.backups_freed, 2, "freed at once, under the kept copies' lock alone");
	cr_assert_eq(fw.backups_freed_relaxed, 2, "in relaxed capture mode");
	cr_assert_eq(inputs_of(a)->device_size, 0);
}

Test(session, copies_a_measurement_is_using_are_not_freed_by_an_allocation)
{
	CUcontext a = fake_context(0);
	fw.range_bytes = BIG_RANGE;
	launch_in(a, 0, 1);
	/* Launch 2's ENTER: its pass opened, the application's own launch to come; its copies
	 * are in use until its EXIT. */
	struct inject_launch l = fake_launch(a, 0, 2);
	struct measurement *m = inject_save_enter(&l, "kernel(float*)");
	cr_assert_not_null(m, "pending until EXIT");
	allocate_from_another_thread();
	cr_assert_eq(fw.backups_freed, 0, "not under the measurement's feet");
	cr_assert_eq(inputs_of(a)->device_size, BIG_RANGE);
	inject_save_exit(m, true);
	cr_assert_eq(fake_records("summary"), 2);
	cr_assert_eq(fw.backups_freed, 0, "kept again at its end");
	allocate_from_another_thread();
	cr_assert_eq(fw.backups_freed, 2, "and freed by the next allocation");
}

Test(session, no_allocation_frees_the_kept_copies_while_a_capture_is_under_way)
{
	CUcontext a = fake_context(0);
	fw.range_bytes = BIG_RANGE;
	launch_in(a, 0, 1);
	fw.capture_under_way = true;
	allocate_from_another_thread();
	cr_assert_eq(fw.backups_freed, 0);
	fw.capture_under_way = false;
	allocate_from_another_thread();
	cr_assert_eq(fw.backups_freed, 2, "the next allocation after it");
}

Test(session, pinned_host_copies_over_256_mib_are_freed_at_the_launchs_end)
{
	CUcontext a = fake_context(0);
	launch_in(a, 0, 1);
	struct context_state *c = inject_contexts_state(a, inject_contexts_generation(a));
	cr_assert_not_null(c);
	/* As mem_save leaves a copy that found no room on the device. */
	c->inputs = (struct mem_backup){ .host = (void *)0x9000, .host_size = BIG_RANGE,
					 .on_host = true };
	inject_session_keep_backups(c);
	cr_assert_eq(fw.backups_freed, 1, "host allocations would not free it");
	cr_assert_eq(c->inputs.host_size, 0);
}

Test(session, a_checkpoint_frees_the_kept_copies_before_it_saves)
{
	CUcontext a = fake_context(0);
	fw.range_bytes = BIG_RANGE;
	launch_in(a, 0, 1);
	struct inject_config conf = fake_config();
	conf.memory_save = RP_MEMORY_SAVE_CHECKPOINT;
	inject_session_configure(&conf);
	launch_in(a, 0, 2);
	cr_assert_eq(fw.checkpoint_saves, 1);
	cr_assert_eq(fw.backups_freed, 2, "the checkpoint saves the application's memory only");
}

Test(session, one_context_at_a_time_keeps_copies_beyond_256_mib)
{
	CUcontext a = fake_context(0), b = fake_context(1);
	fw.range_bytes = BIG_RANGE;
	launch_in(a, 0, 1);
	launch_in(b, 0, 2);
	cr_assert_eq(fake_records("summary"), 2);
	cr_assert_eq(inputs_of(a)->device_size, 0, "a's freed at b's launch's end");
	cr_assert_eq(inputs_of(b)->device_size, BIG_RANGE, "b's kept");
	/* A destroyed holder is forgotten: the next allocation has nothing to free. */
	fw.current = a;
	inject_session_context_destroyed(b);
	unsigned freed = fw.backups_freed;
	inject_session_unlock();
	allocate_from_another_thread();
	inject_session_lock();
	cr_assert_eq(fw.backups_freed, freed);
}
