/* inject/session/session.c - this process's measuring session on each device and context
 * (session.h): taking the turn (devlock.c) and then the profiling hardware, the range
 * profiler of each context and which one holds the device's hardware (owners, one per
 * device: a second context's Start fails with CUPTI_ERROR_HARDWARE_BUSY, tests/gpu/procs.cu
 * reset), handing it over when another process rings (doc/concurrency.md), each kernel's
 * save policy, the saved copies kept between measurements, the context's release at
 * destruction, and the early set-up.
 * Owns the replay lock; its holders are the measurements' thread, the early set-up's
 * (early.c), rangeprof_prepare's host half (control.c, inject_session_prepare_host) and
 * the device lock's watcher (inject_session_let_go). State per context lives in
 * contexts.c's registry.
 * Calls: device.c, config.c, devlock.c, flush.c, captures.c, contexts.c, names.c, output.c,
 * collector/, memory/, common/.
 * Called by: launch.c, init.c, save.c, measure.c, checkpoint.c, graph_measure.c,
 * range_memory.c, range_workload.c.
 * Lock: the replay lock, backups_lock (the copies kept between measurements and their
 * holder); not asserted by: inject_session_lock, inject_session_lock_until,
 * inject_session_unlock, inject_session_held_at (the lock itself), inject_session_configure
 * (init.c's, before any callback, and the control API's, through inject_launch_lock_replay),
 * inject_session_set_hooks (before any callback), inject_session_fork_child (a fork's
 * child), inject_session_report_totals (at exit), inject_session_allocation_coming (an
 * application thread's allocation: the kept copies' lock alone). */
#include "inject/session/session.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collector/api.h"
#include "collector/profiler.h"
#include "collector/records.h"
#include "common/error.h"
#include "common/lock.h"
#include "common/log.h"
#include "inject/session/captures.h"
#include "inject/session/contexts.h"
#include "inject/session/device.h"
#include "inject/session/devlock.h"
#include "inject/inject.h"
#include "inject/output.h"

/* The replay lock: one measurement at a time in the process, and everything this file,
 * device.c, config.c and the measuring files (measure.c, save.c, emit.c, the workloads)
 * keep is touched only while it is held. Taken by launch.c around every measurement,
 * set-up, context destruction and hand-over, and by init.c to change options. */
static struct rp_lock replay_lock = RP_LOCK_INITIALIZER("the replay lock");

void inject_session_lock(void)
{
	rp_lock(&replay_lock);
}

void inject_session_unlock(void)
{
	rp_unlock(&replay_lock);
}

bool inject_session_lock_until(const struct timespec *deadline)
{
	return rp_lock_until(&replay_lock, deadline);
}

#if RP_LOCK_CHECKS
void inject_session_held_at(const char *func, const char *file, int line)
{
	if (!rp_lock_is_held(&replay_lock))
		rp_lock_fail(&replay_lock, "is not held by this thread", func, file, line);
}
#endif

/* The saved copies (c->inputs, c->result) are kept between measurements for the next
 * one, which then neither frees nor allocates them: at 10 configurations a notebook's
 * later call allocated and freed a copy of up to 1.3 GB at each of its six largest
 * (~1 ms each time; doc/measurements.md, "Cost at the physical floor"). Each copy of up
 * to BACKUP_KEEP_BYTES stays always, as before. Larger device copies stay too, in one
 * context at a time (backups_holder) and only while the device has a quarter of its
 * memory free; an allocation of the application's that would leave less frees them first
 * (inject_session_allocation_coming), and only such a one: cuMemFree waits for the whole
 * device, which an allocation does not (cuMemAllocAsync never blocks), and a kernel that
 * waits for the host to go on would wait for ever. Pinned host copies over
 * BACKUP_KEEP_BYTES are freed at each measurement's end: host allocations do not free
 * them.
 * A measurement checks its context's copies out at its start (inject_session_use_backups:
 * they are then no holder's, and no allocation frees them while it uses them, also while
 * a range is recorded with the replay lock let go) and in at its end
 * (inject_session_keep_backups). The kept copies' lock guards backups_holder, and the
 * holder's copies while it is the holder: an allocating thread frees them under it alone,
 * so that it never waits for a measurement (or the early set-up, or a wait for the
 * device's turn) holding the replay lock. Taken after the replay lock, never before it;
 * an allocating thread only tries it, so that no application thread waits for another's
 * frees (that device-wide wait). */
#define BACKUP_KEEP_BYTES ((size_t)256 << 20)
static struct rp_lock backups_lock = RP_LOCK_INITIALIZER("the kept copies' lock");
static struct context_state *backups_holder; /* the kept copies' lock */
/* Whether there is a holder, read by any thread without the lock: an allocation costs an
 * atomic load when nothing is kept. */
static atomic_bool backups_held;
/* What the application may still allocate before the holder's device would have less
 * than a quarter free: the driver's answer when it was last asked (under the lock), less
 * every allocation announced since (any thread, without the lock). An allocation within
 * it costs an atomic subtraction and no driver call; frees are not credited until the
 * next question. Two allocations racing at its end cannot both pass. */
static atomic_size_t backups_headroom;

/* The context whose range profiler is enabled on each device, if any. */
static struct context_state *owners[INJECT_MAX_DEVICES];
static atomic_ulong turn_timeouts;
static struct inject_replay_hooks hooks;

void inject_session_set_hooks(const struct inject_replay_hooks *h)
{
	hooks = *h;
}

void inject_session_configure(const struct inject_config *c)
{
	/* The control API turned the clock lock off: the clocks go back now, not at exit. */
	if (inject_config()->clock_control == RP_CLOCK_BASE && c->clock_control == RP_CLOCK_NONE) {
		collector_clock_restore();
		inject_devices_clocks_restored();
	}
	inject_config_set(c);
}

void inject_session_release_profilers(int device)
{
	INJECT_REPLAY_HELD();
	if (device >= 0 && device < INJECT_MAX_DEVICES && owners[device])
		inject_session_profiler_release(owners[device]);
}

void inject_session_fork_child(void)
{
	inject_devices_fork_child();
	/* The parent's copies are not the child's to free; its lock may have been held by a
	 * thread the child does not have. */
	backups_lock = (struct rp_lock)RP_LOCK_INITIALIZER("the kept copies' lock");
	backups_holder = NULL;
	atomic_store(&backups_held, false);
}

struct function_state *inject_session_function_state(struct context_state *c, CUfunction f,
					     const char *mangled)
{
	INJECT_REPLAY_HELD();
	unsigned b = (unsigned)((uintptr_t)f >> 4) % FUNCTION_BUCKETS;
	for (struct function_state *s = c->functions[b]; s; s = s->next)
		if (s->function == f && !strcmp(s->mangled, mangled))
			return s;
	struct function_state *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	const char *interned = NULL;
	inject_name_intern(mangled, &interned);
	*s = (struct function_state){ c->functions[b], f, interned ? interned : "",
				      SAVE_UNVERIFIED, 0 };
	c->functions[b] = s;
	return s;
}

/* With the turn held: waits until no other rangeprof process keeps the profiling hardware
 * with an idle profiler (its watcher lets go when the doorbell rings, ~12 ms), at most
 * --device-lock-timeout. false, with a warning and the turn given back, when one kept it
 * past that. */
static bool hardware_free(struct device_state *d, int device, const char *kernel,
			  const char *mangled, uint64_t index)
{
	double waited_ms;
	int rc = inject_devlock_wait_hardware(d->turns, inject_config()->device_lock_timeout_ms,
					     &waited_ms);
	if (rc == 0) {
		if (waited_ms > 0)
			rp_log_progress("device %d: waited %.1f ms for another rangeprof process to "
					"give the profiling hardware back", device, waited_ms);
		return true;
	}
	atomic_fetch_add(&turn_timeouts, 1);
	inject_output_report(INJECT_REPORT_DEVICE_BUSY,
			     INJECT_CONCERNS(INJECT_ON_DEVICE(device), .kernel = kernel,
						     /* one warning per launch */
						     .mangled = mangled, .detail = (long long)index,
						     .option = "--device-lock-timeout"), false,
		      "device %d (%s): another rangeprof process kept the profiling hardware for "
		      "%.1f s without giving it back; launch %llu%s%s is not measured, the "
		      "application runs on (--device-lock-timeout)", device, d->info.uuid,
		      waited_ms / 1e3, (unsigned long long)index, kernel ? " of " : "",
		      kernel ? kernel : "");
	inject_devlock_release(d->turns);
	return false;
}

bool inject_session_take_turn(struct device_state *d, int device, const char *kernel,
		      const char *mangled, uint64_t index)
{
	INJECT_REPLAY_HELD();
	if (!d->turns)
		return true;
	char why[128]; /* the system's reason */
	int rc = inject_devlock_mark_present(d->turns, why, sizeof(why));
	if (rc)
		inject_output_report(INJECT_REPORT_DEVICE_LOCK_MARK,
				     INJECT_CONCERNS(INJECT_ON_DEVICE(device), .detail = rc), false,
			      "device %d: marking this process in the device lock: %s; other "
			      "processes measuring there may not give the profiler back between "
			      "launches", device, why);
	rc = inject_devlock_acquire(d->turns, 0, why, sizeof(why));
	if (rc == RP_ERR_TIMEOUT) {
		/* Another process has the turn and will want the hardware: an idle profiler of
		 * ours would keep its Start failing (devlock.h), and our watcher cannot let go
		 * of it while this thread holds the replay lock. */
		inject_session_release_profilers(device);
		rc = inject_devlock_acquire(d->turns, inject_config()->device_lock_timeout_ms, why,
					    sizeof(why));
	}
	if (rc == 0)
		return hardware_free(d, device, kernel, mangled, index);
	atomic_fetch_add(&turn_timeouts, 1);
	if (rc == RP_ERR_TIMEOUT)
		inject_output_report(INJECT_REPORT_DEVICE_LOCK_TIMEOUT,
			      INJECT_CONCERNS(INJECT_ON_DEVICE(device), .kernel = kernel, .mangled = mangled,
					      .option = "--device-lock-timeout"), false,
			      "device %d (%s): another process measured on it for more than "
			      "%ld s; launch %llu%s%s is not measured, the application runs on "
			      "(--device-lock-timeout)", device, d->info.uuid,
			      inject_config()->device_lock_timeout_ms / 1000, (unsigned long long)index,
			      kernel ? " of " : "", kernel ? kernel : "");
	else
		inject_output_report(INJECT_REPORT_DEVICE_LOCK_TAKE,
				     INJECT_CONCERNS(INJECT_ON_DEVICE(device), .detail = rc), false,
			      "device %d: taking the device lock: %s; launch %llu is not measured",
			      device, why, (unsigned long long)index);
	return false;
}

/* c's profiler is disabled: the device's hardware byte goes with the last profiler this
 * process had enabled there (one per device: profiler_owner). */
static void profiler_gone(struct context_state *c)
{
	struct device_state *d = inject_device(c->device);
	if (owners[c->device] == c) {
		owners[c->device] = NULL;
		inject_devlock_drop_hardware(d->turns);
	}
}

/* Another process rang the device's doorbell (devlock.h): from the watcher thread, through
 * launch.c with the replay lock held, so that no measurement of ours is under way. The
 * idle profiler goes only when that process holds the turn: our own ring (a measurement
 * of ours that waited for the hardware) finds the turn ours. */
void inject_session_let_go(int device)
{
	INJECT_REPLAY_HELD();
	if (device < 0 || device >= INJECT_MAX_DEVICES)
		return;
	struct device_state *d = inject_device(device);
	if (owners[device] && inject_devlock_turn_elsewhere(d->turns)) {
		rp_log_progress("device %d: another process wants the profiling hardware; this "
				"process's idle range profiler lets go of it", device);
		inject_session_profiler_release(owners[device]);
	}
}

/* A profiler enabled on c's device: the hardware byte says so to other processes, and the
 * watcher hears them ask for it. */
static void profiler_enabled(struct context_state *c)
{
	struct device_state *d = inject_device(c->device);
	owners[c->device] = c;
	if (!d->turns)
		return;
	inject_devlock_hold_hardware(d->turns);
	if (!d->watching && hooks.let_go) {
		char why[128]; /* the system's reason */
		int rc = inject_devlock_watch(d->turns, hooks.let_go, (void *)(intptr_t)c->device,
					      why, sizeof(why));
		d->watching = rc == 0;
		if (rc)
			inject_output_report(INJECT_REPORT_DEVICE_LOCK_LISTEN,
					     INJECT_CONCERNS(INJECT_ON_DEVICE(c->device),
							     .detail = rc), false,
				      "device %d: cannot listen for other processes that need the "
				      "profiling hardware (%s); they wait until this process's next "
				      "measured launch ends", c->device, why);
		else if (hooks.watching)
			hooks.watching();
	}
}

/* Disables c's range profiler, with c's context current as CUPTI expects, leaving the
 * calling thread's current context as it was. */
void inject_session_profiler_release(struct context_state *c)
{
	INJECT_REPLAY_HELD();
	if (!c->profiler)
		return;
	CUcontext previous = NULL;
	rp_api.cuCtxGetCurrent(&previous);
	if (previous != c->ctx)
		rp_api.cuCtxSetCurrent(c->ctx);
	collector_profiler_destroy(c->profiler);
	c->profiler = NULL;
	if (previous != c->ctx)
		rp_api.cuCtxSetCurrent(previous);
	profiler_gone(c);
}

static void context_release(struct context_state *c)
{
	collector_profiler_destroy(c->profiler);
	c->profiler = NULL;
	profiler_gone(c);
	if (c->flush_ready)
		inject_flush_finish(&c->flush);
	if (c->verifier_ready)
		mem_verifier_finish(&c->verifier);
	inject_session_use_backups(c);
	mem_backup_trim(&c->inputs, 0);
	mem_backup_trim(&c->result, 0);
	for (unsigned b = 0; b < FUNCTION_BUCKETS; b++) {
		for (struct function_state *f = c->functions[b], *next; f; f = next) {
			next = f->next;
			free(f);
		}
	}
	free(c);
}

/* The context's state, set up at its first use. Called with the turn held (enabling the
 * range profiler uses the device's profiling hardware). A profiler of the other range
 * mode is disabled and a new one enabled: one object per context can run, and an object
 * keeps its mode (profiler.h). The new object's first pass costs ~145 ms, so a program
 * measuring kernels and whole graphs by turns pays that at every change (a change of mode
 * measured ~160 ms beyond a plain launch: doc/measurements.md, "First Start of a range
 * profiler object"). */
struct context_state *inject_session_context_ready(CUcontext ctx, int device, uint32_t context_id,
					   enum inject_profiler_need need,
					   const struct collector_metric_set *set, size_t ranges,
					   struct collector_cost *cost, double *lap)
{
	INJECT_REPLAY_HELD();
	inject_context_gen gen = inject_contexts_created(ctx);
	struct context_state *c = inject_contexts_state(ctx, gen);
	if (!c) {
		if (!gen || !(c = calloc(1, sizeof(*c))))
			return NULL;
		c->ctx = ctx;
		c->device = device;
		/* Cannot fail here: contexts are destroyed under the replay lock, held. */
		if (inject_contexts_set_state(ctx, gen, c)) {
			free(c);
			return NULL;
		}
		char err[2048];
		/* Which step failed (1: the flush, 2: the verifier) and its code. */
		int step = 1, rc = inject_flush_init(&c->flush, device, true, err, sizeof(err));
		if (!rc) {
			c->flush_ready = true;
			if (c->flush.image_refused)
				/* Once per device and error: every context of the device
				 * meets the same driver. */
				inject_output_report(INJECT_REPORT_FLUSH_IMAGE,
						     INJECT_CONCERNS(INJECT_ON_DEVICE(device),
								     .detail = c->flush.image_refused),
						     false, "the driver refused the cache flush's "
						     "compiled image on device %d (%s) and compiled "
						     "its text instead", device,
						     collector_cu_error(c->flush.image_refused));
			step = 2;
			rc = mem_verifier_init(&c->verifier, device, err, sizeof(err));
		}
		if (rc) {
			c->failed = true;
			long long failure = INJECT_DETAIL_PAIR(step, rc);
			inject_output_report(INJECT_REPORT_CONTEXT,
					     INJECT_CONCERNS(INJECT_ON_DEVICE(device),
							     .context = context_id,
							     .detail = failure),
					     true,
				      "%s; measuring nothing in this context", err);
			return NULL;
		}
		c->verifier_ready = true;
	}
	collector_cost_lap(cost, COST_SETUP_CONTEXT, lap);
	if (c->failed)
		return NULL;
	enum collector_ranges kind = need == INJECT_PROFILER_PER_GRAPH ? COLLECTOR_RANGE_USER :
		COLLECTOR_RANGE_PER_KERNEL;
	if (c->profiler && need != INJECT_PROFILER_NONE &&
	    (collector_profiler_ranges(c->profiler) != kind || c->profiler_set != set ||
	     c->profiler_ranges < ranges))
		inject_session_profiler_release(c);
	if (!c->profiler && need != INJECT_PROFILER_NONE) {
		/* Another context of this device holds the profiling hardware: it gives it up
		 * and enables again at its own next measured launch. */
		struct context_state *owner = owners[device];
		if (owner && owner != c)
			inject_session_profiler_release(owner);
		char err[2048];
		int rc = collector_profiler_create(ctx, kind, &c->profiler, err, sizeof(err));
		if (rc) {
			bool busy = rc == RP_ERR_HARDWARE_BUSY;
			c->failed = !busy;
			c->profiler = NULL;
			inject_output_report(INJECT_REPORT_PROFILER,
					     INJECT_CONCERNS(INJECT_ON_DEVICE(device),
							     .context = context_id, .detail = rc),
				      !busy, "%s; %s", err, busy ? "not measured while the hardware "
				      "is busy" : "measuring nothing in this context");
			return NULL;
		}
		profiler_enabled(c);
		c->profiler_set = set;
		c->profiler_ranges = ranges;
	}
	collector_cost_lap(cost, COST_SETUP_PROFILER, lap);
	return c;
}


void inject_session_give_turn(int device)
{
	INJECT_REPLAY_HELD();
	struct device_state *d = inject_device(device);
	if (!d)
		return;
	/* The profiler stays enabled, alone or not: another process that needs the hardware
	 * rings for it and our watcher lets go (doc/concurrency.md). Giving it back after
	 * every launch whenever another process was merely present made a process measuring
	 * beside an idle one (a notebook that measured once) pay a new profiler's first pass,
	 * ~145 ms, at every launch. */
	inject_devlock_release(d->turns);
}

void inject_session_context_destroyed(CUcontext ctx)
{
	INJECT_REPLAY_HELD();
	struct context_state *c = inject_contexts_destroyed(ctx);
	if (!c)
		return;
	/* The context is still valid here; the release needs it current on this thread,
	 * and the application's own current context must be left as it was. */
	CUcontext previous = NULL;
	rp_api.cuCtxGetCurrent(&previous);
	if (previous != ctx)
		rp_api.cuCtxSetCurrent(ctx);
	rp_api.cuCtxSynchronize();
	context_release(c);
	if (previous != ctx)
		rp_api.cuCtxSetCurrent(previous);
}


void inject_session_prepare_host(int device)
{
	INJECT_REPLAY_HELD();
	/* As the set-up below: nothing a capture in global mode must not see. */
	if (device < 0 || device >= INJECT_MAX_DEVICES || inject_captures_under_way())
		return;
	inject_device_prepare_host(device);
}

void inject_session_set_up_early(CUcontext ctx, uint32_t context_id)
{
	INJECT_REPLAY_HELD();
	/* A measured launch came first and set the context up: nothing left to do. */
	if (inject_contexts_state(ctx, inject_contexts_generation(ctx)))
		return;
	/* Loading modules and allocating are what a capture in global mode must not see from
	 * any thread (this one is in relaxed mode, launch.c); the profiler's passes are left
	 * out as well. Left to the first measured launch. */
	if (inject_captures_under_way())
		return;
	CUdevice dev;
	if (rp_api.cuCtxGetDevice(&dev) != CUDA_SUCCESS || dev < 0 || dev >= INJECT_MAX_DEVICES)
		return;
	int device = (int)dev;
	struct collector_cost cost = { 0 };
	double started = collector_cost_now(), lap = started;
	struct device_state *known = inject_device_known(device);
	/* Another process measuring on the device holds its turn: this one's set-up is left
	 * to its first measured launch rather than waiting behind it. */
	char ignored[128];
	if (!known || (known->turns && inject_devlock_acquire(known->turns, 1000, ignored,
							      sizeof(ignored)) != 0))
		return;
	lap = collector_cost_now(); /* the wait for the turn is in the total only */
	/* With others measuring on the device, a profiler enabled here would be given back
	 * as soon as they ring for the hardware, and one of another process
	 * setting up early holds the hardware: host set-up and kernels only. */
	bool alone = !known->turns || (!inject_devlock_shared(known->turns) &&
					 !inject_devlock_hardware_elsewhere(known->turns));
	bool device_was_ready = known->ready;
	struct device_state *d = inject_device_ready(ctx, device, inject_session_release_profilers);
	collector_cost_lap(&cost, COST_SETUP, &lap);
	enum inject_profiler_need need = alone ? INJECT_PROFILER_PER_KERNEL : INJECT_PROFILER_NONE;
	struct context_state *c = d ? inject_session_context_ready(ctx, device, context_id, need, d->set,
						    inject_config_ranges_needed(need), &cost, &lap) : NULL;
	/* One warm-up pass only for a one-pass set: a pass of a multi-pass set left half done
	 * could shift which counters the first measurement's passes collect. */
	if (c && c->profiler && collector_metric_set_passes(d->set) == 1) {
		char err[2048];
		/* At least as large as measure()'s first pass: CUPTI keeps the counter data
		 * size of a profiler's first SetConfig (profiler.h). */
		size_t ranges = inject_config_ranges_needed(need);
		/* Under the control API the runs may grow between measurements, and a context
		 * whose profiler was sized for fewer gets a new one, paying the first pass
		 * again (context_ready): there the pass is sized for more (init.c's
		 * INIT_WARM_UP_RANGES), on this thread (its time: doc/measurements.md, "Cost
		 * at the physical floor"). */
		if (ranges < inject_config()->warm_up_ranges)
			ranges = inject_config()->warm_up_ranges;
		if (collector_profiler_warm_up(c->profiler, d->set, ranges, err, sizeof(err))) {
			/* Not news: the first measurement makes the same calls and says what it
			 * meets, from a fresh profiler rather than one a failed pass left behind. */
			rp_log_progress("early set-up of device %d: %s", device, err);
			inject_session_profiler_release(c);
		} else {
			c->profiler_ranges = ranges;
		}
		collector_cost_lap(&cost, COST_START, &lap);
	}
	cost.ms[COST_TOTAL] = lap - started;
	if (c && !device_was_ready)
		inject_output_write_record(collector_record_setup(device, context_id, &cost));
	if (known->turns)
		inject_devlock_release(known->turns);
}

void inject_session_drop_backups(CUcontext ctx)
{
	INJECT_REPLAY_HELD();
	struct context_state *c = inject_contexts_state(ctx, inject_contexts_generation(ctx));
	if (c) {
		inject_session_use_backups(c);
		mem_backup_trim(&c->inputs, 0);
		mem_backup_trim(&c->result, 0);
		if (c->verifier_ready)
			mem_verifier_drop_sums(&c->verifier);
	}
}

/* What may still be taken before c's device has less than a quarter of its memory free,
 * in *headroom; false where it has less already or the driver does not say. Asked in c's
 * own context, the one whose device the copies are on. */
static bool device_headroom(const struct context_state *c, size_t *headroom)
{
	CUcontext current = NULL;
	size_t free_bytes = 0, total_bytes = 0;
	if (rp_api.cuCtxGetCurrent(&current) != CUDA_SUCCESS || current != c->ctx ||
	    rp_api.cuMemGetInfo(&free_bytes, &total_bytes) != CUDA_SUCCESS ||
	    free_bytes < total_bytes / 4)
		return false;
	*headroom = free_bytes - total_bytes / 4;
	return true;
}

/* The holder's copies beyond BACKUP_KEEP_BYTES freed, unless its device keeps a quarter
 * free after bytes_coming more are taken (SIZE_MAX: freed in any case), when the headroom
 * left is what the driver says less bytes_coming; the kept copies' lock held. In the
 * holder's own context (the thread may have another current: an allocation's, or none),
 * and in relaxed capture mode, so that the frees never invalidate a capture another
 * thread has under way (as early.c's set-up). The holder is cleared after the frees, not
 * before: inject_session_use_backups waits for them through the lock. */
static void give_back_held(size_t bytes_coming)
{
	rp_lock_held(&backups_lock);
	struct context_state *c = backups_holder;
	if (!c)
		return;
	CUcontext previous = NULL;
	bool switched = rp_api.cuCtxGetCurrent(&previous) == CUDA_SUCCESS && previous != c->ctx &&
			rp_api.cuCtxSetCurrent(c->ctx) == CUDA_SUCCESS;
	size_t headroom = 0;
	if (bytes_coming != SIZE_MAX && device_headroom(c, &headroom) && headroom >= bytes_coming) {
		atomic_store(&backups_headroom, headroom - bytes_coming);
	} else {
		CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
		bool relaxed = rp_api.cuThreadExchangeStreamCaptureMode(&mode) == CUDA_SUCCESS;
		mem_backup_trim(&c->inputs, BACKUP_KEEP_BYTES);
		mem_backup_trim(&c->result, BACKUP_KEEP_BYTES);
		if (relaxed)
			rp_api.cuThreadExchangeStreamCaptureMode(&mode);
		backups_holder = NULL;
		atomic_store(&backups_held, false);
	}
	if (switched)
		rp_api.cuCtxSetCurrent(previous);
}

/* Always through the lock: an allocating thread frees the holder's copies under it, for
 * the frees' time (a device-wide wait each), and c's copies must not be used, nor
 * c freed (context_release), while they are being freed. backups_held alone would tell
 * only while give_back_held clears it after its frees (it once cleared it before them).
 * Called by every path that is about to use, free or trim c's copies. */
void inject_session_use_backups(struct context_state *c)
{
	INJECT_REPLAY_HELD();
	rp_lock(&backups_lock);
	if (backups_holder == c) {
		backups_holder = NULL;
		atomic_store(&backups_held, false);
	}
	rp_unlock(&backups_lock);
}

void inject_session_keep_backups(struct context_state *c)
{
	INJECT_REPLAY_HELD();
	if (c->inputs.host_size > BACKUP_KEEP_BYTES)
		mem_backup_trim(&c->inputs, BACKUP_KEEP_BYTES);
	if (c->result.host_size > BACKUP_KEEP_BYTES)
		mem_backup_trim(&c->result, BACKUP_KEEP_BYTES);
	if (c->inputs.device_size <= BACKUP_KEEP_BYTES &&
	    c->result.device_size <= BACKUP_KEEP_BYTES)
		return;
	size_t headroom = 0;
	if (!device_headroom(c, &headroom)) {
		mem_backup_trim(&c->inputs, BACKUP_KEEP_BYTES);
		mem_backup_trim(&c->result, BACKUP_KEEP_BYTES);
		return;
	}
	rp_lock(&backups_lock);
	if (backups_holder != c)
		give_back_held(SIZE_MAX); /* one holder at a time */
	backups_holder = c;
	atomic_store(&backups_headroom, headroom);
	atomic_store(&backups_held, true);
	rp_unlock(&backups_lock);
}

void inject_session_trim_backups(struct context_state *c)
{
	INJECT_REPLAY_HELD();
	inject_session_use_backups(c);
	mem_backup_trim(&c->inputs, BACKUP_KEEP_BYTES);
	mem_backup_trim(&c->result, BACKUP_KEEP_BYTES);
}

void inject_session_allocation_coming(size_t bytes)
{
	/* Not under a stream capture anywhere: left for the next allocation (relaxed mode
	 * allows the frees, but a capture is no time for a device-wide wait). */
	if (!atomic_load_explicit(&backups_held, memory_order_relaxed) ||
	    inject_captures_under_way())
		return;
	if (bytes != SIZE_MAX) {
		size_t room = atomic_load(&backups_headroom);
		while (room >= bytes &&
		       !atomic_compare_exchange_weak(&backups_headroom, &room, room - bytes))
			;
		if (room >= bytes)
			return;
	}
	/* Not waiting for the lock: its holder is freeing the copies already, or a
	 * measurement is checking them out or in (then the next allocation asks again). */
	if (!rp_lock_try(&backups_lock))
		return;
	give_back_held(bytes);
	rp_unlock(&backups_lock);
}

void inject_session_report_totals(void)
{
	unsigned long n = atomic_load(&turn_timeouts);
	if (n)
		inject_output_report(INJECT_REPORT_DEVICE_LOCK_TOTALS,
				     INJECT_CONCERNS(.option = "--device-lock-timeout"),
			      false, "%lu launch(es) not measured: another process kept the "
			      "device past --device-lock-timeout", n);
}
