/* inject/replay.c - measuring one selected launch: synchronise, save the memory the launch
 * can reach (memory/), and per pass and run restore it, flush the caches (flush.c) and
 * launch the kernel again under the range profiler; leave the memory as the application's
 * own launch must find or leave it; then write the records. The first measured launch of
 * each kernel shows that its reach is enough: the application's own launch runs between
 * two hashes of all other memory, and the runs follow at the driver call's EXIT. A kernel
 * whose reach is unknown or was not enough is measured with the full CUPTI checkpoint.
 * Processes take turns on a device (devlock.c): the turn is held from before the profiler
 * is used until after the last Stop, the verification span included. State is kept per
 * device and per context (contexts.c), and released when a context is destroyed.
 * Called by launch.c with the replay lock held and the launch's context current, also on
 * early.c's thread for --setup early (inject_replay_set_up_early).
 * Calls inject/ launches, output, names, contexts, devlock, watchdog and flush,
 * collector/ (profiler, records, device), memory/ and nvtx_bridge/ (snapshot). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collector/adaptive.h"
#include "collector/api.h"
#include "collector/cost.h"
#include "collector/device.h"
#include "collector/profiler.h"
#include "collector/records.h"
#include "collector/stats.h"
#include "collector/table.h"
#include "collector/thermal.h"
#include "common/log.h"
#include "inject/captures.h"
#include "inject/contexts.h"
#include "inject/devlock.h"
#include "inject/flush.h"
#include "inject/inject.h"
#include "inject/output.h"
#include "inject/watchdog.h"
#include "memory/memory.h"
#include "nvtx_bridge/nvtx_bridge.h"

static struct inject_config config;

/* A metric set built for one --metrics value, or why it could not be (a metric the GPU
 * lacks): kept, so that a value the control API sets again costs nothing. */
struct metric_set_entry {
	struct metric_set_entry *next;
	struct collector_metric_set *set;   /* NULL: refused, for error */
	char *error;
	char metrics[];
};

/* Per device: what the device record said, the turn lock shared with other processes,
 * and the metric sets. */
struct device_state {
	bool known, ready, failed;
	struct collector_device_info info;
	struct inject_devlock *turns;     /* NULL: taking turns is not possible here */
	/* The set for config.metrics (the control API may change it between measurements),
	 * and every set built so far. */
	struct collector_metric_set *set;
	struct metric_set_entry *sets;
	double locked_sm_clock_hz;        /* --clock-control base: what was locked; 0: none */
	bool clock_lock_failed;           /* base was refused (no privileges) */
	/* The context whose range profiler is enabled on this device, if any: the profiling
	 * hardware takes one at a time, and a second context's Start fails with
	 * CUPTI_ERROR_HARDWARE_BUSY (tests/gpu/procs.cu reset: cuCtxCreate beside the primary
	 * context). Only touched under the replay lock. */
	struct context_state *profiler_owner;
	bool watching;                    /* the doorbell's watcher is started (devlock.h) */
	bool busy;                        /* the last metric set found the hardware busy */
};

/* How each kernel's memory is saved, per context and function. */
enum save_policy {
	SAVE_UNVERIFIED,             /* reach not yet shown to be enough: verify at next launch */
	SAVE_REACH,                  /* verified: save and restore the reach only */
	SAVE_CHECKPOINT,             /* wrote outside its reach once: full checkpoint from now on */
};
struct function_state {
	struct function_state *next;
	CUfunction function;
	const char *mangled;         /* interned: lives until exit */
	enum save_policy policy;
	double kernel_seconds;       /* its measured time, 0 while unknown (watchdog bound) */
};
#define FUNCTION_BUCKETS 64

/* Per context: its range profiler, flush buffer, memory hash kernel, the two saved copies
 * of a launch's reach (its inputs, and the application's own result while a launch is
 * being verified) and its kernels' save policies. Owned by contexts.c's registry from
 * creation to destruction; pointers stay valid from a launch's ENTER to EXIT, since a
 * context cannot be destroyed inside one of its own launches. */
struct context_state {
	CUcontext ctx;
	int device;
	struct collector_profiler *profiler;  /* NULL: released while others share the device;
					       * its ranges as the last measurement needed */
	/* What the profiler's first pass was sized for: CUPTI keeps the range count of a
	 * context's first SetConfig (profiler.h), so a measurement with another set or more
	 * ranges (options the control API changed) gets a new profiler. */
	const struct collector_metric_set *profiler_set;
	size_t profiler_ranges;
	struct inject_flush flush;
	bool flush_ready, verifier_ready;
	struct mem_verifier verifier;
	struct mem_backup inputs, result;
	bool failed;
	struct function_state *functions[FUNCTION_BUCKETS];
};

#define MAX_DEVICES 64
static struct device_state devices[MAX_DEVICES];

void inject_replay_configure(const struct inject_config *c)
{
	/* The control API turned the clock lock off: the clocks go back now, not at exit. */
	if (config.clock_control == RP_CLOCK_BASE && c->clock_control == RP_CLOCK_NONE) {
		collector_clock_restore();
		for (size_t i = 0; i < MAX_DEVICES; i++) {
			devices[i].locked_sm_clock_hz = 0;
			devices[i].clock_lock_failed = false;
		}
	}
	config = *c;
}
static atomic_ulong turn_timeouts;
static struct inject_replay_hooks hooks;

void inject_replay_set_hooks(const struct inject_replay_hooks *h)
{
	hooks = *h;
}

static struct function_state *function_state(struct context_state *c, CUfunction f,
					     const char *mangled)
{
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

/* Backups larger than this are freed after each launch, so that rangeprof never keeps
 * device memory an application close to full would need. */
#define BACKUP_KEEP_BYTES ((size_t)256 << 20)

static double now_seconds(void)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static bool hardware_busy(const char *err)
{
	return strstr(err, "HARDWARE_BUSY") != NULL;
}

/* The device's description and its turn lock: no profiler call, so that it can come
 * before the turn. NULL when the device cannot be described. */
static struct device_state *device_known(int device)
{
	struct device_state *d = &devices[device];
	if (d->known || d->failed)
		return d->known ? d : NULL;
	char err[2048];
	if (collector_device_info(device, &d->info, err, sizeof(err))) {
		d->failed = true;
		inject_report("device", INJECT_CONCERNS(INJECT_ON_DEVICE(device), .detail = err), true,
			      "%s; measuring nothing on device %d", err, device);
		return NULL;
	}
	d->known = true;
	inject_write_record(collector_record_device(&d->info));
	/* Opened without counting this process as one that measures: the early set-up comes
	 * here too, and a process that never measures must not make the others give up their
	 * profiler after every launch (let_others_measure). take_turn marks it. */
	if (inject_devlock_open_absent(d->info.uuid, NULL, &d->turns, err, sizeof(err)))
		inject_report("device-lock", INJECT_CONCERNS(INJECT_ON_DEVICE(device), .detail = err), false,
			      "%s; device %d (%s) is measured without taking turns with other "
			      "processes", err, device, d->info.uuid);
	return d;
}

static void profiler_release(struct context_state *c);

/* With the turn held: waits until no other rangeprof process keeps the profiling hardware
 * with an idle profiler (its watcher lets go when the doorbell rings, ~12 ms), at most
 * --device-lock-timeout. false, with a warning and the turn given back, when one kept it
 * past that. */
static bool hardware_free(struct device_state *d, int device, const char *kernel,
			  const char *mangled, uint64_t index)
{
	double waited_ms;
	int rc = inject_devlock_wait_hardware(d->turns, config.device_lock_timeout_ms, &waited_ms);
	if (rc == 0) {
		if (waited_ms > 0)
			rp_log_progress("device %d: waited %.1f ms for another rangeprof process to "
					"give the profiling hardware back", device, waited_ms);
		return true;
	}
	atomic_fetch_add(&turn_timeouts, 1);
	inject_report("device-busy", INJECT_CONCERNS(INJECT_ON_DEVICE(device), .kernel = kernel,
						     .mangled = mangled,
						     .option = "--device-lock-timeout"), false,
		      "device %d (%s): another rangeprof process kept the profiling hardware for "
		      "%.1f s without giving it back; launch %llu%s%s is not measured, the "
		      "application runs on (--device-lock-timeout)", device, d->info.uuid,
		      waited_ms / 1e3, (unsigned long long)index, kernel ? " of " : "",
		      kernel ? kernel : "");
	inject_devlock_release(d->turns);
	return false;
}

/* Waits for this process's turn on the device. false when another process kept it past
 * --device-lock-timeout: the launch is then not measured. */
static bool take_turn(struct device_state *d, int device, const char *kernel,
		      const char *mangled, uint64_t index)
{
	if (!d->turns)
		return true;
	int rc = inject_devlock_mark_present(d->turns);
	if (rc)
		inject_report("device-lock", INJECT_CONCERNS(INJECT_ON_DEVICE(device),
							     .detail = strerror(-rc)), false,
			      "device %d: marking this process in the device lock: %s; other "
			      "processes measuring there may not give the profiler back between "
			      "launches", device, strerror(-rc));
	rc = inject_devlock_acquire(d->turns, 0);
	if (rc == -ETIMEDOUT) {
		/* Another process has the turn and will want the hardware: an idle profiler of
		 * ours would keep its Start failing (devlock.h), and our watcher cannot let go
		 * of it while this thread holds the replay lock. */
		if (d->profiler_owner)
			profiler_release(d->profiler_owner);
		rc = inject_devlock_acquire(d->turns, config.device_lock_timeout_ms);
	}
	if (rc == 0)
		return hardware_free(d, device, kernel, mangled, index);
	atomic_fetch_add(&turn_timeouts, 1);
	if (rc == -ETIMEDOUT)
		inject_report("device-lock-timeout",
			      INJECT_CONCERNS(INJECT_ON_DEVICE(device), .kernel = kernel, .mangled = mangled,
					      .option = "--device-lock-timeout"), false,
			      "device %d (%s): another process measured on it for more than "
			      "%ld s; launch %llu%s%s is not measured, the application runs on "
			      "(--device-lock-timeout)", device, d->info.uuid,
			      config.device_lock_timeout_ms / 1000, (unsigned long long)index,
			      kernel ? " of " : "", kernel ? kernel : "");
	else
		inject_report("device-lock", INJECT_CONCERNS(INJECT_ON_DEVICE(device),
							     .detail = strerror(-rc)), false,
			      "device %d: taking the device lock: %s; launch %llu is not measured",
			      device, strerror(-rc), (unsigned long long)index);
	return false;
}

/* The device's set for config.metrics: built at its first use, kept with every other set
 * (the control API changes the metrics between measurements). NULL when the GPU refuses
 * it, said as an error naming the metrics; a busy profiling hardware is tried again. */
static struct collector_metric_set *metric_set(struct device_state *d, CUcontext ctx,
					       int device)
{
	for (struct metric_set_entry *e = d->sets; e; e = e->next) {
		if (strcmp(e->metrics, config.metrics))
			continue;
		if (!e->set)
			inject_report("metric-set", INJECT_CONCERNS(INJECT_ON_DEVICE(device),
								    .metric = config.metrics,
								    .detail = e->error), true,
				      "%s; not measured on device %d (%s), the application runs on",
				      e->error, device, d->info.name);
		return e->set;
	}
	char err[2048];
	struct collector_metric_set *set = NULL;
	d->busy = false;
	/* CUPTI answers the counter availability query only while no range profiler is
	 * enabled in the context (CUPTI_ERROR_INVALID_PARAMETER otherwise: H200,
	 * tests/gpu/check_control.py early); a new set gets a new profiler anyway. */
	if (d->profiler_owner)
		profiler_release(d->profiler_owner);
	if (collector_metric_set_create(ctx, device, config.metrics, &set, err, sizeof(err))) {
		/* Another profiler (another process without rangeprof's turns, ncu) holds the
		 * hardware now; it may let go, so the set is tried again later. */
		/* Busy: the caller waits (wait_out_busy) and says so if it gives up. */
		if ((d->busy = hardware_busy(err)))
			return NULL;
		inject_report("metric-set", INJECT_CONCERNS(INJECT_ON_DEVICE(device),
							    .metric = config.metrics, .detail = err),
			      true, "%s; not measured on device %d (%s), the application runs on",
			      err, device, d->info.name);
		set = NULL;
	}
	size_t len = strlen(config.metrics);
	struct metric_set_entry *e = calloc(1, sizeof(*e) + len + 1);
	if (!e) {
		collector_metric_set_destroy(set);
		return NULL;
	}
	memcpy(e->metrics, config.metrics, len + 1);
	e->set = set;
	e->error = set ? NULL : strdup(err);
	e->next = d->sets;
	d->sets = e;
	return set;
}

/* The profiler part of a device: NVML, the metric set and the clock lock. Called with the
 * turn held. NULL when the launch cannot be measured on it now. */
static struct device_state *device_ready(CUcontext ctx, int device)
{
	struct device_state *d = device_known(device);
	if (!d || d->failed)
		return NULL;
	char err[2048];
	if (!d->ready) {
		char nvml_err[512];
		if (collector_nvml_open("libnvidia-ml.so.1", nvml_err, sizeof(nvml_err)))
			inject_report("nvml", INJECT_CONCERNS(INJECT_ON_DEVICE(device), .detail = nvml_err),
				      false, "%s; temperatures, clocks-event reasons, memory clock and "
				      "power will be null, and there are no thermal waits", nvml_err);
		d->ready = true;
	}
	if (!(d->set = metric_set(d, ctx, device)))
		return NULL;
	if (config.clock_control == RP_CLOCK_BASE && !d->locked_sm_clock_hz) {
		unsigned mhz;
		/* Tried once while base is asked for: the lock needs privileges that do not
		 * come later. Launches are not measured until clock control is none again. */
		if (d->clock_lock_failed ||
		    collector_clock_lock_base(d->info.uuid, &mhz, err, sizeof(err))) {
			if (!d->clock_lock_failed)
				inject_report("clock", INJECT_CONCERNS(INJECT_ON_DEVICE(device),
								       .option = "--clock-control"), true,
					      "%s; measuring nothing on device %d", err, device);
			d->clock_lock_failed = true;
			return NULL;
		}
		rp_log_progress("device %d: SM clock locked to base %u MHz until exit", device, mhz);
		d->locked_sm_clock_hz = mhz * 1e6;
	}
	return d;
}

/* c's profiler is disabled: the device's hardware byte goes with the last profiler this
 * process had enabled there (one per device: profiler_owner). */
static void profiler_gone(struct context_state *c)
{
	struct device_state *d = &devices[c->device];
	if (d->profiler_owner == c) {
		d->profiler_owner = NULL;
		inject_devlock_drop_hardware(d->turns);
	}
}

/* Another process rang the device's doorbell (devlock.h): from the watcher thread, through
 * launch.c with the replay lock held, so that no measurement of ours is under way. The
 * idle profiler goes only when that process holds the turn: our own ring (a measurement
 * of ours that waited for the hardware) finds the turn ours. */
void inject_replay_let_go(int device)
{
	if (device < 0 || device >= MAX_DEVICES)
		return;
	struct device_state *d = &devices[device];
	if (d->profiler_owner && inject_devlock_turn_elsewhere(d->turns)) {
		rp_log_progress("device %d: another process wants the profiling hardware; this "
				"process's idle range profiler lets go of it", device);
		profiler_release(d->profiler_owner);
	}
}

/* A profiler enabled on c's device: the hardware byte says so to other processes, and the
 * watcher hears them ask for it. */
static void profiler_enabled(struct context_state *c)
{
	struct device_state *d = &devices[c->device];
	d->profiler_owner = c;
	if (!d->turns)
		return;
	inject_devlock_hold_hardware(d->turns);
	if (!d->watching && hooks.let_go) {
		int rc = inject_devlock_watch(d->turns, hooks.let_go, (void *)(intptr_t)c->device);
		d->watching = rc == 0;
		if (rc)
			inject_report("device-lock", INJECT_CONCERNS(INJECT_ON_DEVICE(c->device),
								     .detail = strerror(-rc)), false,
				      "device %d: cannot listen for other processes that need the "
				      "profiling hardware (%s); they wait until this process's next "
				      "measured launch ends", c->device, strerror(-rc));
		else if (hooks.watching)
			hooks.watching();
	}
}

/* Disables c's range profiler, with c's context current as CUPTI expects, leaving the
 * calling thread's current context as it was. */
static void profiler_release(struct context_state *c)
{
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

/* What a measurement needs of the context's range profiler. */
enum profiler_need {
	PROFILER_NONE,               /* a graph launch timed by events only */
	PROFILER_PER_KERNEL,         /* kernel launches and graph nodes (AutoRange) */
	PROFILER_PER_GRAPH,          /* a whole graph launch with counters (UserRange) */
};

/* The context's state, set up at its first use. Called with the turn held (enabling the
 * range profiler uses the device's profiling hardware). A profiler of the other range
 * mode is disabled and a new one enabled: one object per context can run, and an object
 * keeps its mode (profiler.h). The new object's first pass costs ~145 ms, so a program
 * measuring kernels and whole graphs by turns pays that at every change
 * (bench/NOTES.md, "Graph mode"). */
static unsigned first_batch_runs(void);
static unsigned kernels_per_run(void);

/* The ranges a measurement's first pass holds (profiler.h sizes the counter data so). */
static size_t ranges_needed(enum profiler_need need)
{
	return (size_t)first_batch_runs() * (need == PROFILER_PER_GRAPH ? 1 : kernels_per_run());
}

static struct context_state *context_ready(CUcontext ctx, int device, uint32_t context_id,
					   enum profiler_need need,
					   const struct collector_metric_set *set, size_t ranges,
					   struct collector_cost *cost, double *lap)
{
	inject_context_gen gen = inject_contexts_created(ctx);
	struct context_state *c = inject_contexts_state(ctx, gen);
	if (!c) {
		if (!gen || !(c = calloc(1, sizeof(*c))))
			return NULL;
		c->ctx = ctx;
		c->device = device;
		inject_contexts_set_state(ctx, gen, c);
		char err[2048];
		if (inject_flush_init(&c->flush, device, err, sizeof(err)) ||
		    !(c->flush_ready = true) ||
		    mem_verifier_init(&c->verifier, device, err, sizeof(err))) {
			c->failed = true;
			inject_report("context", INJECT_CONCERNS(INJECT_ON_DEVICE(device), .context = context_id,
								 .detail = err), true,
				      "%s; measuring nothing in this context", err);
			return NULL;
		}
		c->verifier_ready = true;
	}
	collector_cost_lap(cost, COST_SETUP_CONTEXT, lap);
	if (c->failed)
		return NULL;
	enum collector_ranges kind = need == PROFILER_PER_GRAPH ? COLLECTOR_RANGE_USER :
		COLLECTOR_RANGE_PER_KERNEL;
	if (c->profiler && need != PROFILER_NONE &&
	    (collector_profiler_ranges(c->profiler) != kind || c->profiler_set != set ||
	     c->profiler_ranges < ranges))
		profiler_release(c);
	if (!c->profiler && need != PROFILER_NONE) {
		/* Another context of this device holds the profiling hardware: it gives it up
		 * and enables again at its own next measured launch. */
		struct context_state *owner = devices[device].profiler_owner;
		if (owner && owner != c)
			profiler_release(owner);
		char err[2048];
		if (collector_profiler_create(ctx, kind, &c->profiler, err, sizeof(err))) {
			bool busy = hardware_busy(err);
			c->failed = !busy;
			c->profiler = NULL;
			inject_report("profiler", INJECT_CONCERNS(INJECT_ON_DEVICE(device),
								  .context = context_id, .detail = err),
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

/* After a measured launch: when other processes measure on this device too, the range
 * profiler is disabled until this context's next measured launch, so that it does not
 * keep the device's profiling hardware from them between turns. Alone, it stays (its
 * first pass costs ~170 ms: bench/NOTES.md). Called with the turn still held. */
static void let_others_measure(struct device_state *d, struct context_state *c)
{
	if (c && c->profiler && d && d->turns && inject_devlock_shared(d->turns))
		profiler_release(c);
}

void inject_replay_context_destroyed(CUcontext ctx)
{
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

/* --runs auto's parameters, from the configuration. */
static struct adaptive_params adaptive_params(void)
{
	return (struct adaptive_params){ config.target_ci_pct, config.runs_min, config.runs_max,
					 config.runs_batch, config.runs_time_budget };
}

/* Runs of a launch's first profiler pass: all of --runs N, or --runs auto's first batch,
 * its largest. */
static unsigned first_batch_runs(void)
{
	struct adaptive_params ap = adaptive_params();
	return config.runs == RP_RUNS_AUTO ? (unsigned)adaptive_first_batch(&ap) : config.runs;
}

/* Kernels each run launches: the flush (unless --cache-control none), then the kernel. */
static unsigned kernels_per_run(void)
{
	return config.cache_control == RP_CACHE_ALL ? 2 : 1;
}


void inject_replay_set_up_early(CUcontext ctx, uint32_t context_id)
{
	/* A measured launch came first and set the context up: nothing left to do. */
	if (inject_contexts_state(ctx, inject_contexts_generation(ctx)))
		return;
	/* Loading modules and allocating are what a capture in global mode must not see from
	 * any thread (this one is in relaxed mode, launch.c); the profiler's passes are left
	 * out as well. Left to the first measured launch. */
	if (inject_captures_under_way())
		return;
	CUdevice dev;
	if (rp_api.cuCtxGetDevice(&dev) != CUDA_SUCCESS || dev < 0 || dev >= MAX_DEVICES)
		return;
	int device = (int)dev;
	struct collector_cost cost = { 0 };
	double started = collector_cost_now(), lap = started;
	struct device_state *known = device_known(device);
	/* Another process measuring on the device holds its turn: this one's set-up is left
	 * to its first measured launch rather than waiting behind it. */
	if (!known || (known->turns && inject_devlock_acquire(known->turns, 1000) != 0))
		return;
	lap = collector_cost_now(); /* the wait for the turn is in the total only */
	/* With others measuring on the device, a profiler enabled here would be given back
	 * after their next launch anyway (let_others_measure), and one of another process
	 * setting up early holds the hardware: host set-up and kernels only. */
	bool alone = !known->turns || (!inject_devlock_shared(known->turns) &&
					 !inject_devlock_hardware_elsewhere(known->turns));
	bool device_was_ready = known->ready;
	struct device_state *d = device_ready(ctx, device);
	collector_cost_lap(&cost, COST_SETUP, &lap);
	enum profiler_need need = alone ? PROFILER_PER_KERNEL : PROFILER_NONE;
	struct context_state *c = d ? context_ready(ctx, device, context_id, need, d->set,
						    ranges_needed(need), &cost, &lap) : NULL;
	/* One warm-up pass only for a one-pass set: a pass of a multi-pass set left half done
	 * could shift which counters the first measurement's passes collect. */
	if (c && c->profiler && collector_metric_set_passes(d->set) == 1) {
		char err[2048];
		/* At least as large as measure()'s first pass: CUPTI keeps the counter data
		 * size of a profiler's first SetConfig (profiler.h). */
		size_t ranges = ranges_needed(need);
		/* Under the control API the runs may grow between measurements, and a context
		 * whose profiler was sized for fewer gets a new one, paying the first pass
		 * again (context_ready): there the pass is sized for more. It costs: ~320 ms
		 * for 100 ranges against ~145 ms (H200, doc/control-api.md), on this thread. */
		if (ranges < config.warm_up_ranges)
			ranges = config.warm_up_ranges;
		if (collector_profiler_warm_up(c->profiler, d->set, ranges, err, sizeof(err))) {
			/* Not news: the first measurement makes the same calls and says what it
			 * meets, from a fresh profiler rather than one a failed pass left behind. */
			rp_log_progress("early set-up of device %d: %s", device, err);
			profiler_release(c);
		} else {
			c->profiler_ranges = ranges;
		}
		collector_cost_lap(&cost, COST_START, &lap);
	}
	cost.ms[COST_TOTAL] = lap - started;
	if (c && !device_was_ready)
		inject_write_record(collector_record_setup(device, context_id, &cost));
	if (known->turns)
		inject_devlock_release(known->turns);
}

void inject_replay_drop_backups(CUcontext ctx)
{
	struct context_state *c = inject_contexts_state(ctx, inject_contexts_generation(ctx));
	if (c) {
		mem_backup_trim(&c->inputs, 0);
		mem_backup_trim(&c->result, 0);
		if (c->verifier_ready)
			mem_verifier_drop_sums(&c->verifier);
	}
}

void inject_replay_fork_child(void)
{
	for (int i = 0; i < MAX_DEVICES; i++) {
		inject_devlock_forget(devices[i].turns);
		devices[i].turns = NULL;
		devices[i].watching = false; /* the watcher thread stayed in the parent */
	}
}

void inject_replay_report_totals(void)
{
	unsigned long n = atomic_load(&turn_timeouts);
	if (n)
		inject_report("device-lock-totals", INJECT_CONCERNS(.option = "--device-lock-timeout"),
			      false, "%lu launch(es) not measured: another process kept the "
			      "device past --device-lock-timeout", n);
}

/* How the memory of one measured launch is saved, and what the records say about it. */
struct save {
	const char *strategy;        /* "reach" or "checkpoint" */
	char why[320];               /* why this strategy */
	struct mem_reach reach;      /* strategy "reach" */
	RP_CUpti_Checkpoint checkpoint;  /* strategy "checkpoint" */
	bool checkpoint_saved;
	bool verified;               /* this launch showed the reach to be enough */
	size_t verified_bytes;       /* bytes hashed outside the reach */
};

/* One measured launch from start to records: it may span the driver call (ENTER to EXIT)
 * while the application's own launch is being verified. */
struct measurement {
	struct inject_launch launch;
	const char *kernel;
	int device;
	struct device_state *d;
	struct context_state *c;
	struct function_state *fn;
	struct save save;
	bool turn;                   /* this process's turn on the device is held */
	double watchdog_seconds;     /* bound of one replay pass */
	struct mem_hashes before;    /* verification: hashes before the application's launch */
	struct collector_cost cost;
	double started, lap;
	bool graph_workload;         /* --graph-profiling graph: graph_exec relaunched whole */
	CUgraphExec graph_exec;
};

struct replay_run {
	const struct measurement *m;
	const struct inject_launch *launch;
	struct context_state *context;
	struct save *save;
	bool flush;
	double *temperature;
	double *wall;
	const char *uuid;
	struct collector_run_nvml *nvml; /* per run of this batch */
	double *sm_clock;                /* NVML's SM clock per run of this batch */
	/* A whole graph launch: its runs are timed between events[2r] and events[2r + 1],
	 * or counted in one user range each when events is NULL; sample: NVML before each
	 * run of the first pass. */
	CUgraphExec exec;
	CUevent *events;
	bool sample;
};

/* NVML's view just before a run is queued (collector_nvml_sample: four queries, tens of
 * microseconds); a failed query is reported once per device. */
static void sample_before(struct replay_run *rr, unsigned run)
{
	struct collector_nvml_sample s;
	char err[256];
	if (collector_nvml_sample(rr->uuid, COLLECTOR_NVML_BEFORE, &s, err, sizeof(err)))
		inject_report("nvml-sample", INJECT_CONCERNS(INJECT_ON_DEVICE(rr->m->device)),
			      false, "%s; the run records' NVML fields of device %d are null where "
			      "NVML cannot tell", err, rr->m->device);
	rr->temperature[run] = s.temperature_c;
	rr->sm_clock[run] = s.sm_clock_hz;
	rr->nvml[run] = (struct collector_run_nvml){ s.temperature_c, NAN, s.memory_clock_hz,
						     NAN, s.throttle };
}

static int run_once(void *arg, unsigned run, unsigned pass)
{
	struct replay_run *rr = arg;
	if (run == 0) {
		/* Each pass gets the bound anew: a multi-pass metric set is not a hang. */
		const struct measurement *m = rr->m;
		inject_watchdog_arm(m->watchdog_seconds, m->kernel, m->fn->mangled, m->device,
				    m->launch.context_id, m->launch.index);
	}
	if (rr->save->checkpoint_saved) {
		if (rp_api.cuptiCheckpointRestore(&rr->save->checkpoint) != CUPTI_SUCCESS)
			return -1;
	} else if (mem_restore(&rr->context->inputs, &rr->save->reach, rr->launch->stream) !=
		   CUDA_SUCCESS) {
		return -1;
	}
	if (rr->flush && inject_flush_launch(&rr->context->flush, rr->launch->stream) != CUDA_SUCCESS)
		return -2;
	if (pass == 0) {
		sample_before(rr, run);
		rr->wall[run] = now_seconds();
	}
	return inject_relaunch(rr->launch) == CUDA_SUCCESS ? 0 : -3;
}

/* One run of a whole graph launch: the checkpoint put back, the L2 flushed, the graph
 * relaunched between two events or inside one user range. Each run ends before the next
 * one's restore begins. */
static int graph_run_once(void *arg, unsigned run, unsigned pass)
{
	struct replay_run *rr = arg;
	const struct measurement *m = rr->m;
	CUstream stream = rr->launch->stream;
	/* The timed runs, whose length is not known yet, are bounded one by one (a single
	 * relaunch of over 10 s would be extraordinary); the counter passes as a whole, from
	 * what the timed runs took (measure_graph_batch). */
	if (rr->events || run == 0)
		inject_watchdog_arm(rr->events ? 10 : m->watchdog_seconds, m->kernel,
				    m->launch.mangled, m->device, m->launch.context_id,
				    m->launch.index);
	if (rp_api.cuptiCheckpointRestore(&rr->save->checkpoint) != CUPTI_SUCCESS)
		return -1;
	if (rr->flush && inject_flush_launch(&rr->context->flush, stream) != CUDA_SUCCESS) {
		rp_api.cuStreamSynchronize(stream);
		return -2;
	}
	if (pass == 0 && rr->sample) {
		sample_before(rr, run);
		rr->wall[run] = now_seconds();
	}
	CUresult cr;
	int rc = 0;
	if (rr->events) {
		cr = rp_api.cuEventRecord(rr->events[2 * run], stream);
		if (cr == CUDA_SUCCESS)
			cr = rp_api.cuGraphLaunch(rr->exec, stream);
		if (cr == CUDA_SUCCESS)
			cr = rp_api.cuEventRecord(rr->events[2 * run + 1], stream);
	} else {
		if (collector_profiler_push_range(rr->context->profiler, run)) {
			rp_api.cuStreamSynchronize(stream);
			return -4;
		}
		cr = rp_api.cuGraphLaunch(rr->exec, stream);
		if (collector_profiler_pop_range(rr->context->profiler))
			rc = -4;
	}
	/* Whatever failed, what was queued ends before the caller puts the memory back. */
	CUresult sync = rp_api.cuStreamSynchronize(stream);
	if (cr == CUDA_SUCCESS)
		cr = sync;
	return rc ? rc : cr == CUDA_SUCCESS ? 0 : -3;
}

/* What graph_run_once's error codes mean, for the report. */
static const char *graph_run_error(int rc)
{
	switch (rc) {
	case -1: return "putting its memory back (cuptiCheckpointRestore) failed";
	case -2: return "flushing the L2 failed";
	case -3: return "relaunching it failed";
	case -4: return "opening or closing its user range failed";
	default: return "failed";
	}
}

static enum collector_payload payload_of(enum nvtx_bridge_payload p)
{
	switch (p) {
	case NVTX_BRIDGE_PAYLOAD_UINT: return COLLECTOR_PAYLOAD_UINT;
	case NVTX_BRIDGE_PAYLOAD_INT: return COLLECTOR_PAYLOAD_INT;
	case NVTX_BRIDGE_PAYLOAD_DOUBLE: return COLLECTOR_PAYLOAD_DOUBLE;
	default: return COLLECTOR_PAYLOAD_NONE;
	}
}

/* What the runs of a launch were measured under, for the records. */
struct run_conditions {
	const struct collector_run_nvml *nvml;      /* per run */
	const uint64_t *throttle;                   /* per run */
	const struct collector_adaptive *adaptive;  /* NULL: fixed --runs */
	const struct collector_thermal *thermal;    /* NULL: --thermal-control off */
};

static void write_records(const struct measurement *m, unsigned runs, unsigned passes,
			  const double *values, const double *clocks, const double *temps,
			  const double *walls, const struct run_conditions *cond)
{
	const struct inject_launch *l = &m->launch;
	const char *kernel = m->kernel;
	struct device_state *d = m->d;
	int device = m->device;
	const struct collector_cost *cost = &m->cost;
	const struct nvtx_bridge_snapshot *snap = nvtx_bridge_snapshot();
	struct collector_nvtx_range *ranges = calloc(snap->count + 1, sizeof(*ranges));
	char path[4096];
	nvtx_bridge_path(snap, path, sizeof(path));
	for (size_t i = 0; ranges && i < snap->count; i++) {
		const struct nvtx_bridge_range *r = &snap->ranges[i];
		ranges[i].domain = nvtx_bridge_domain_name(r->domain);
		ranges[i].text = r->text;
		ranges[i].start_end = r->start_end;
		ranges[i].payload_type = payload_of(r->payload_type);
		memcpy(&ranges[i].payload, &r->payload, sizeof(r->payload));
		ranges[i].category = r->category;
		ranges[i].category_name = r->category ?
			nvtx_bridge_category_name(r->domain, r->category) : NULL;
	}
	uint32_t stream_id = 0;
	rp_api.cuptiGetStreamIdEx(l->ctx, l->stream, 0, &stream_id);
	struct collector_launch launch = {
		.index = l->index, .kernel = kernel, .mangled = l->mangled, .device = device,
		.context = l->context_id, .stream = stream_id,
		.grid = { l->grid[0], l->grid[1], l->grid[2] },
		.block = { l->block[0], l->block[1], l->block[2] },
		.shared_mem_bytes = l->shared_mem_bytes,
		.nvtx = ranges, .nvtx_count = ranges ? snap->count : 0, .nvtx_path = path,
		.graph = l->graph,
	};
	size_t metric_count = collector_metric_set_user_count(d->set);
	struct collector_measure_info info = {
		.metrics = collector_metric_set_names(d->set),
		.units = collector_metric_set_units(d->set),
		.metric_count = metric_count, .passes = passes, .runs = runs,
		.cache_control = config.cache_control,
		.clock_control = config.clock_control,
		.rated_sm_clock_hz = d->info.rated_sm_clock_hz,
		.locked_sm_clock_hz = d->locked_sm_clock_hz,
		.sm_clock_source = collector_metric_set_measures_clock(d->set) ? "counters" : "nvml",
		.throttle = cond->throttle, .adaptive = cond->adaptive, .thermal = cond->thermal,
	};
	for (unsigned r = 0; r < runs; r++) {
		struct collector_run run = { r, values + (size_t)r * metric_count, clocks[r],
					     temps[r], walls[r], &cond->nvml[r] };
		inject_write_record(collector_record_run(&launch, &info, &run));
	}
	struct collector_save_info save = {
		.strategy = m->save.strategy, .why = m->save.why, .reach = !m->save.checkpoint_saved,
		.bytes = m->save.reach.bytes, .ranges = m->save.reach.count,
		.on_host = m->c->inputs.on_host, .verified_now = m->save.verified,
		.verified_bytes = m->save.verified_bytes };
	cJSON *summary = collector_record_add_save(
		collector_record_summary(&launch, &info, values, clocks, runs), &save, cost);
	inject_write_record(summary);
	/* The table's "stable" is the summary's verdict for the first metric, made where
	 * the summary makes it (with --runs auto's CI target). */
	struct stats_summary first;
	double *column = malloc((runs ? runs : 1) * sizeof(*column));
	if (column) {
		collector_launch_summarize(&info, values, clocks, runs, 0, column, &first);
		collector_table_add(kernel, path, column, runs, 1, first.stable == STATS_STABLE_TRUE);
		free(column);
	}
	char stopped[64] = "";
	if (cond->adaptive)
		snprintf(stopped, sizeof(stopped), " (auto: %s)", cond->adaptive->stopped);
	rp_log_progress("%s [%s] launch %llu: %u runs%s, %u pass%s (%.1f ms)", kernel, path,
			(unsigned long long)l->index, runs, stopped, passes, passes == 1 ? "" : "es",
			cost->ms[COST_TOTAL]);
	free(ranges);
}

/* Where gpu__time_duration.sum is in the set, SIZE_MAX when not measured. */
static size_t time_metric(const struct collector_metric_set *set)
{
	const char *const *names = collector_metric_set_names(set);
	size_t count = collector_metric_set_user_count(set);
	for (size_t k = 0; k < count; k++)
		if (!strcmp(names[k], "gpu__time_duration.sum"))
			return k;
	return SIZE_MAX;
}

/* Keeps the kernel's mean time, when measured, to bound its later replay passes. */
static void remember_kernel_time(struct measurement *m, const double *values, unsigned runs,
				 size_t metric_count)
{
	size_t k = time_metric(m->d->set);
	if (!m->fn || k == SIZE_MAX)
		return; /* a whole graph launch, or its time not measured */
	double sum = 0;
	for (unsigned r = 0; r < runs; r++)
		sum += values[(size_t)r * metric_count + k];
	if (runs && isfinite(sum) && sum > 0)
		m->fn->kernel_seconds = sum / runs * 1e-9;
}

/* The thermal guard before a launch's runs (--thermal-control); a timeout is a warning,
 * and the launch is measured anyway. Called with the device's turn held: another process
 * measuring on this GPU would heat it too. */
static void thermal_guard_before_runs(const struct measurement *m, struct thermal_wait *w)
{
	struct thermal_params p = { config.thermal_control, NAN, config.thermal_wait,
				    config.thermal_continue, (double)config.thermal_timeout,
				    THERMAL_POLL_S, THERMAL_PLATEAU_S };
	collector_nvml_thermal_guard(m->d->info.uuid, &p, w);
	if (w->outcome == THERMAL_TIMEOUT)
		inject_report("thermal-timeout", INJECT_CONCERNS(.kernel = m->kernel,
								 .mangled = m->launch.mangled,
								 INJECT_ON_DEVICE(m->device),
								 .option = "--thermal-timeout"), false,
			      "device %d stayed within %g C of its slowdown temperature (%.0f C) "
			      "for %ld s; launch %llu of %s is measured anyway at %.0f C "
			      "(--thermal-timeout)", m->device, config.thermal_continue,
			      w->slowdown_c, config.thermal_timeout,
			      (unsigned long long)m->launch.index, m->kernel, w->end_c);
	else if (w->outcome == THERMAL_UNKNOWN)
		inject_report("thermal-unknown", INJECT_CONCERNS(INJECT_ON_DEVICE(m->device),
								 .option = "--thermal-control"),
			      false, "device %d: NVML gives no %s; launches on it are measured "
			      "without thermal waits", m->device, isnan(w->slowdown_c) ?
			      "slowdown temperature" : "temperature");
}


/* The metric --runs auto judges: the kernel's time when measured, else the first. */
static size_t gating_metric(const struct measurement *m)
{
	size_t k = time_metric(m->d->set);
	return k == SIZE_MAX ? 0 : k;
}

/* Whether a whole graph launch needs profiler passes for set: any metric other than
 * gpu__time_duration.sum, counters or timers alike. */
static bool graph_needs_passes(const struct collector_metric_set *set)
{
	return collector_metric_set_user_count(set) > (time_metric(set) != SIZE_MAX ? 1u : 0u);
}

/* One batch of runs of a whole graph launch (--graph-profiling graph). Its time comes from
 * CUDA events around each relaunch with no profiler pass running: a user range around
 * the launch adds 10-40 us to the graph's ~160 us, and counters more
 * (bench/graph_range_probe.cu B, bench/NOTES.md). The timed runs always run, even when the
 * time is not asked for: they bound the passes that follow and give each run its NVML
 * sample. The set's other metrics come from user-range passes over the same runs, one
 * range per relaunch: under AutoRange a graph launch gives no usable range (alone, one
 * range without a duration, stop_probe G; beside plain kernels and a memset, the pass's
 * Stop fails, graph_range_probe A). So a run record's time and its counters come from
 * two relaunches of the same graph from the same memory, and rates over the range's
 * duration (.per_second, % of peak elapsed) include the range's own 10-40 us.
 * values and clocks as collector_profiler_measure fills them; passes counts the profiler
 * passes, 1 when only the time was measured. */
static int measure_graph_batch(struct measurement *m, struct replay_run *rr, unsigned batch,
			       double *values, double *clocks, unsigned *passes, char *err,
			       size_t err_size)
{
	const struct collector_metric_set *set = m->d->set;
	size_t count = collector_metric_set_user_count(set), time_k = time_metric(set);
	bool counters = graph_needs_passes(set);
	CUevent *events = calloc(2 * (size_t)batch, sizeof(*events));
	double *counted = calloc((size_t)batch * count + 1, sizeof(*counted));
	CUresult cr = events && counted ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
	int rc = 0;
	*passes = 0;
	for (unsigned r = 0; r < batch; r++)
		clocks[r] = NAN;
	for (unsigned i = 0; i < 2 * batch && cr == CUDA_SUCCESS; i++)
		cr = rp_api.cuEventCreate(&events[i], CU_EVENT_DEFAULT);
	rr->events = events;
	rr->sample = true;
	for (unsigned r = 0; r < batch && cr == CUDA_SUCCESS && !rc; r++)
		rc = graph_run_once(rr, r, 0);
	inject_watchdog_disarm();
	double total_s = 0;
	for (unsigned r = 0; r < batch && cr == CUDA_SUCCESS && !rc; r++) {
		float ms = 0;
		cr = rp_api.cuEventElapsedTime(&ms, events[2 * r], events[2 * r + 1]);
		if (time_k != SIZE_MAX)
			values[(size_t)r * count + time_k] = ms * 1e6;
		total_s += ms * 1e-3;
	}
	*passes = 1;
	/* The counter passes' bound: far longer than the batch took by events. */
	m->watchdog_seconds = total_s * 1000 > 10 ? total_s * 1000 : 10;
	collector_cost_lap(&m->cost, COST_RUNS, &m->lap);
	rr->events = NULL;
	rr->sample = false;
	if (cr != CUDA_SUCCESS || rc) {
		snprintf(err, err_size, "relaunching the graph: %s", cr != CUDA_SUCCESS ?
			 collector_cu_error(cr) : graph_run_error(rc));
		rc = -1;
	} else if (counters) {
		rc = collector_profiler_measure(m->c->profiler, set, batch, 1, graph_run_once, rr,
						counted, clocks, passes, &m->cost, err, err_size);
		for (unsigned r = 0; r < batch && !rc; r++)
			for (size_t k = 0; k < count; k++)
				if (k != time_k)
					values[(size_t)r * count + k] = counted[(size_t)r * count + k];
	}
	for (unsigned i = 0; events && i < 2 * batch; i++)
		if (events[i])
			rp_api.cuEventDestroy(events[i]);
	free(events);
	free(counted);
	return rc ? -1 : 0;
}

/* CUPTI_ERROR_HARDWARE_BUSY with this process's turn held. Another rangeprof process's
 * idle profiler is asked to let go (hardware_free); otherwise a profiler outside
 * rangeprof holds the hardware, and the launch waits for it, polling every 10 ms, until
 * --busy-timeout from since (cost clock, ms). true: try again; false: given up, said in
 * one warning naming who held the hardware and for how long. */
static bool wait_out_busy(struct measurement *m, struct device_state *d, double since)
{
	if (d->turns && inject_devlock_hardware_elsewhere(d->turns)) {
		double waited_ms;
		if (inject_devlock_wait_hardware(d->turns, config.device_lock_timeout_ms,
						 &waited_ms) == 0)
			return true;
	} else if (collector_cost_now() - since < config.busy_timeout_ms) {
		nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
		return true;
	}
	bool peer = d->turns && inject_devlock_hardware_elsewhere(d->turns);
	struct inject_concerns about = { .kernel = m->kernel, .mangled = m->launch.mangled,
					 INJECT_ON_DEVICE(m->device), .context = m->launch.context_id,
					 .option = peer ? "--device-lock-timeout" : "--busy-timeout" };
	inject_report("device-busy", &about, false,
		      "device %d (%s): the profiling hardware was held by %s for %.1f s "
		      "(CUPTI_ERROR_HARDWARE_BUSY); launch %llu of %s is not measured, the "
		      "application runs on (%s)", m->device, d->info.uuid,
		      peer ? "another rangeprof process that did not give it back" :
		      "a profiler outside rangeprof (ncu, Nsight Systems, DCGM profiling or "
		      "another CUPTI client)", (collector_cost_now() - since) / 1e3,
		      (unsigned long long)m->launch.index, m->kernel, about.option);
	return false;
}

/* Runs the measurement proper: every run restores the saved inputs, flushes and
 * relaunches; writes the records. --runs N is one batch of N runs; --runs auto measures
 * batches of --runs-batch (each replayed in every pass of the metric set, the first batch
 * the largest, so the counter data sized at the first configuration holds them all) until
 * collector/adaptive.c says
 * stop. The memory is left as the runs left it: the caller puts it back. */
static void measure(struct measurement *m)
{
	bool autorun = config.runs == RP_RUNS_AUTO;
	struct adaptive_params ap = adaptive_params();
	unsigned capacity = autorun ? config.runs_max : config.runs;
	unsigned batch = first_batch_runs();
	bool flush = config.cache_control == RP_CACHE_ALL;
	size_t metric_count = collector_metric_set_user_count(m->d->set);
	double *values = calloc((size_t)capacity * metric_count + 1, sizeof(double));
	double *clocks = calloc(capacity, sizeof(double));
	double *temps = calloc(capacity, sizeof(double));
	double *walls = calloc(capacity, sizeof(double));
	double *gate = calloc(capacity, sizeof(double));
	double *sm_clock = calloc(capacity, sizeof(double));
	struct collector_run_nvml *nvml = calloc(capacity, sizeof(*nvml));
	uint64_t *throttle = calloc(capacity, sizeof(*throttle));
	if (!values || !clocks || !temps || !walls || !gate || !sm_clock || !nvml || !throttle)
		goto out;
	bool clock_measured = collector_metric_set_measures_clock(m->d->set);
	struct thermal_wait tw = { .outcome = THERMAL_OFF };
	if (config.thermal_control != RP_THERMAL_OFF) {
		thermal_guard_before_runs(m, &tw);
		/* The wait is in the total only, like waiting for the turn. */
		m->lap = collector_cost_now();
	}
	size_t gate_index = gating_metric(m);
	struct collector_adaptive adaptive = { NULL, config.target_ci_pct, NAN, gate_index, 0, 0 };
	double first_batch_at = collector_cost_now(), busy_since = NAN;
	unsigned done = 0, passes = 0;
	for (;;) {
		struct replay_run rr = { m, &m->launch, m->c, &m->save, flush, temps + done,
					 walls + done, m->d->info.uuid, nvml + done, sm_clock + done };
		/* A pass of a kernel that waits for a peer would never end (watchdog.h):
		 * 10 s, or far longer than the kernel took before. */
		double known = m->fn ? m->fn->kernel_seconds * batch : 0;
		m->watchdog_seconds = known * 1000 > 10 ? known * 1000 : 10;
		rr.exec = m->graph_exec;
		char err[2048];
		int rc = m->graph_workload ?
			measure_graph_batch(m, &rr, batch, values + (size_t)done * metric_count,
					    clocks + done, &passes, err, sizeof(err)) :
			collector_profiler_measure(m->c->profiler, m->d->set, batch, kernels_per_run(),
						   run_once, &rr, values + (size_t)done * metric_count,
						   clocks + done, &passes, &m->cost, err, sizeof(err));
		inject_watchdog_disarm();
		m->lap = collector_cost_now();
		/* The hardware taken by someone else between our turn and the Start (a profiler
		 * outside rangeprof): the batch is tried again from a new profiler, the memory
		 * being restored at every run anyway. */
		if (rc && !done && hardware_busy(err)) {
			if (isnan(busy_since))
				busy_since = m->lap;
			profiler_release(m->c);
			if (wait_out_busy(m, m->d, busy_since) &&
			    context_ready(m->launch.ctx, m->device, m->launch.context_id,
					  m->graph_workload ? PROFILER_PER_GRAPH : PROFILER_PER_KERNEL,
					  m->d->set, ranges_needed(m->graph_workload ?
								   PROFILER_PER_GRAPH :
								   PROFILER_PER_KERNEL),
					  &m->cost, &m->lap))
				continue;
			goto out;
		}
		if (rc) {
			inject_report("measure", INJECT_CONCERNS(.kernel = m->kernel,
								 .mangled = m->launch.mangled,
								 INJECT_ON_DEVICE(m->device),
								 .context = m->launch.context_id,
								 .detail = err), true,
				      "%s: %s; %s", m->kernel, err, done ? "the runs measured before "
				      "are recorded" : "not measured");
			if (strstr(err, "INSUFFICIENT_PRIVILEGES"))
				inject_measuring_stop();
			if (!done)
				goto out;
			adaptive.stopped = "error";
			break;
		}
		/* NVML when the batch's results are in: the after-temperature, power, and the
		 * reasons, which count for every run of the batch. */
		struct collector_nvml_sample after;
		char nvml_err[256];
		if (collector_nvml_sample(m->d->info.uuid, COLLECTOR_NVML_AFTER, &after, nvml_err,
					  sizeof(nvml_err)))
			inject_report("nvml-sample", INJECT_CONCERNS(INJECT_ON_DEVICE(m->device)),
				      false, "%s; the run records' NVML fields of device %d are null "
				      "where NVML cannot tell", nvml_err, m->device);
		for (unsigned r = done; r < done + batch; r++) {
			nvml[r].temperature_after_c = after.temperature_c;
			nvml[r].power_w = after.power_w;
			if (nvml[r].throttle == STATS_THROTTLE_UNKNOWN)
				nvml[r].throttle = after.throttle;
			else if (after.throttle != STATS_THROTTLE_UNKNOWN)
				nvml[r].throttle |= after.throttle;
			throttle[r] = nvml[r].throttle;
			gate[r] = values[(size_t)r * metric_count + gate_index];
			if (!clock_measured)
				clocks[r] = sm_clock[r];
		}
		done += batch;
		adaptive.batches++;
		if (!autorun)
			break;
		struct adaptive_decision d;
		adaptive_decide(&ap, gate, done, (m->lap - first_batch_at) / 1e3, &d);
		adaptive.ci_pct = d.ci_pct;
		if (d.verdict != ADAPTIVE_CONTINUE) {
			adaptive.stopped = adaptive_verdict_name(d.verdict);
			break;
		}
		batch = (unsigned)d.next_batch;
	}
	adaptive.elapsed_s = (m->lap - first_batch_at) / 1e3; /* cost clock: milliseconds */
	remember_kernel_time(m, values, done, metric_count);
	m->cost.ms[COST_TOTAL] = m->lap - m->started;
	struct collector_thermal thermal = {
		config.thermal_control == RP_THERMAL_MANUAL ? "manual" : "auto",
		thermal_outcome_name(tw.outcome), tw.waited_s, tw.start_c, tw.end_c, tw.slowdown_c };
	struct run_conditions cond = { nvml, throttle, autorun ? &adaptive : NULL,
				       config.thermal_control != RP_THERMAL_OFF ? &thermal : NULL };
	write_records(m, done, passes, values, clocks, temps, walls, &cond);
out:
	free(values);
	free(clocks);
	free(temps);
	free(walls);
	free(gate);
	free(sm_clock);
	free(nvml);
	free(throttle);
}

CUptiResult inject_checkpoint_save(CUcontext ctx, RP_CUpti_Checkpoint *checkpoint)
{
	*checkpoint = (RP_CUpti_Checkpoint){
		.structSize = RP_CUPTI_CHECKPOINT_STRUCT_SIZE, .ctx = ctx, .allowOverwrite = 1,
		.reserveHostMB = collector_checkpoint_host_reserve_mb() };
	return rp_api.cuptiCheckpointSave(checkpoint);
}

CUptiResult inject_checkpoint_put_back(RP_CUpti_Checkpoint *checkpoint)
{
	CUptiResult restore = rp_api.cuptiCheckpointRestore(checkpoint);
	rp_api.cuCtxSynchronize();
	rp_api.cuptiCheckpointFree(checkpoint);
	return restore;
}

/* Saves the full checkpoint of the launch's context into m->save: every allocation,
 * whatever the launch can reach. false (reported) when CUPTI cannot. */
static bool checkpoint_save(struct measurement *m)
{
	m->save.strategy = "checkpoint";
	CUptiResult r = inject_checkpoint_save(m->launch.ctx, &m->save.checkpoint);
	if (r != CUPTI_SUCCESS) {
		inject_report("checkpoint", INJECT_CONCERNS(.kernel = m->kernel,
							    .mangled = m->launch.mangled,
							    INJECT_ON_DEVICE(m->device),
							    .call = "cuptiCheckpointSave",
							    .detail = collector_cupti_error(r)), true,
			      "cuptiCheckpointSave for %s (launch %llu): "
				   "%s%s; launch not measured, the application runs on", m->kernel,
				   (unsigned long long)m->launch.index, collector_cupti_error(r),
				   r == CUPTI_ERROR_OUT_OF_MEMORY ?
				   " (no room in device or host memory to save the application's "
				   "device memory)" : "");
		return false;
	}
	m->save.checkpoint_saved = true;
	collector_cost_lap(&m->cost, COST_SAVE, &m->lap);
	return true;
}

/* Whatever happened, the application's launch must see its own memory: puts the
 * checkpoint back, waits, frees it; says so when that fails. */
static void checkpoint_put_back(struct measurement *m)
{
	CUptiResult restore = inject_checkpoint_put_back(&m->save.checkpoint);
	if (restore != CUPTI_SUCCESS)
		inject_report("restore", INJECT_CONCERNS(.kernel = m->kernel,
							 .mangled = m->launch.mangled,
							 INJECT_ON_DEVICE(m->device),
							 .call = "cuptiCheckpointRestore",
							 .detail = collector_cupti_error(restore)), true,
			      "cuptiCheckpointRestore after %s: %s; the application's memory may "
			      "differ", m->kernel, collector_cupti_error(restore));
}

/* The full checkpoint of the context: every allocation, whatever the launch can reach. */
static void measure_with_checkpoint(struct measurement *m)
{
	if (!checkpoint_save(m))
		return;
	measure(m);
	checkpoint_put_back(m);
}

/* Puts the saved copy back for the application's launch (its inputs, or after a verified
 * launch its own result) and waits; says so when that fails, since the application's
 * memory may then differ. */
static void put_back(struct measurement *m, const struct mem_backup *b)
{
	CUresult cr = mem_restore(b, &m->save.reach, m->launch.stream);
	CUresult sync = rp_api.cuCtxSynchronize();
	if (cr == CUDA_SUCCESS)
		cr = sync;
	if (cr != CUDA_SUCCESS)
		inject_report("restore", INJECT_CONCERNS(.kernel = m->kernel,
							 .mangled = m->launch.mangled,
							 INJECT_ON_DEVICE(m->device),
							 .call = "cuMemcpyAsync",
							 .detail = collector_cu_error(cr)), true,
			      "putting back the saved memory of %s: %s; the application's memory "
			      "may differ", m->kernel, collector_cu_error(cr));
}

/* Falls back to the full checkpoint for this launch, saying why once per kernel. */
static void fall_back(struct measurement *m, const char *why)
{
	snprintf(m->save.why, sizeof(m->save.why), "%s", why);
	inject_report("fall-back", INJECT_CONCERNS(.kernel = m->kernel, .mangled = m->launch.mangled,
						   INJECT_ON_DEVICE(m->device),
						   .context = m->launch.context_id), false,
		      "%s: %s; its launches are measured with the full "
			   "checkpoint, whose cost grows with the application's device memory",
			   m->kernel, why);
	measure_with_checkpoint(m);
}

static void finish(struct measurement *m)
{
	mem_reach_finish(&m->save.reach);
	mem_hashes_finish(&m->before);
	if (m->c) {
		mem_backup_trim(&m->c->inputs, BACKUP_KEEP_BYTES);
		mem_backup_trim(&m->c->result, BACKUP_KEEP_BYTES);
	}
	if (m->turn) {
		let_others_measure(m->d, m->c);
		inject_devlock_release(devices[m->device].turns);
	}
	free(m);
}

static const struct inject_concerns *launch_concerns(const struct measurement *m,
						     struct inject_concerns *c, const char *detail)
{
	*c = (struct inject_concerns){ .kernel = m->kernel, .mangled = m->launch.mangled,
				       INJECT_ON_DEVICE(m->device), .context = m->launch.context_id,
				       .detail = detail };
	return c;
}

/* Everything before a measurement, for a kernel launch or a whole graph launch: the
 * application's queued work finished, this process's turn on the device, the device's
 * metric set and the context's profiler, flush and hash kernels. false when the launch
 * cannot be measured (said where it is news). */
static bool get_ready(struct measurement *m, enum profiler_need need)
{
	const struct inject_launch *l = &m->launch;
	struct inject_concerns about;
	CUdevice dev;
	if (rp_api.cuCtxGetDevice(&dev) != CUDA_SUCCESS || dev < 0 || dev >= MAX_DEVICES)
		return false;
	m->device = (int)dev;
	/* Work the application queued before this launch must finish first: the saved copy
	 * has to see its results, and a sticky error is the application's to see. Before the
	 * turn: another process need not wait for this one's queued work. */
	CUresult cr = rp_api.cuCtxSynchronize();
	if (cr != CUDA_SUCCESS) {
		inject_report("sync", launch_concerns(m, &about, collector_cu_error(cr)), true,
			      "cuCtxSynchronize before launch %llu of %s: %s; not measured",
			      (unsigned long long)l->index, m->kernel, collector_cu_error(cr));
		return false;
	}
	collector_cost_lap(&m->cost, COST_SYNC, &m->lap);
	struct device_state *known = device_known(m->device);
	if (!known || !(m->turn = take_turn(known, m->device, m->kernel, l->mangled, l->index)))
		return false;
	m->lap = collector_cost_now(); /* waiting for the turn is in the total only */
	double busy_since = m->lap;
	while (!(m->d = device_ready(l->ctx, m->device)) && known->busy)
		if (!wait_out_busy(m, known, busy_since))
			return false;
	collector_cost_lap(&m->cost, COST_SETUP, &m->lap);
	/* A graph timed by events alone leaves the profiler as it is. */
	if (need == PROFILER_PER_GRAPH && m->d && !graph_needs_passes(m->d->set))
		need = PROFILER_NONE;
	m->c = m->d ? context_ready(l->ctx, m->device, l->context_id, need, m->d->set,
				    ranges_needed(need), &m->cost, &m->lap) :
		NULL;
	return m->c != NULL;
}

struct measurement *inject_replay_enter(const struct inject_launch *l, const char *kernel)
{
	struct measurement *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->launch = *l;
	m->kernel = kernel;
	m->device = -1;
	m->started = m->lap = collector_cost_now();
	if (!get_ready(m, PROFILER_PER_KERNEL))
		goto done;
	m->fn = function_state(m->c, l->function, l->mangled);
	if (!m->fn)
		goto done;
	if (config.memory_save == RP_MEMORY_SAVE_CHECKPOINT) {
		snprintf(m->save.why, sizeof(m->save.why), "--memory-save checkpoint");
		measure_with_checkpoint(m);
		goto done;
	}
	if (m->fn->policy == SAVE_CHECKPOINT) {
		snprintf(m->save.why, sizeof(m->save.why), "an earlier launch wrote outside the "
			 "memory its parameters reach");
		measure_with_checkpoint(m);
		goto done;
	}
	mem_reach_collect(&m->save.reach, l->function, l->kernel_params, l->extra);
	collector_cost_lap(&m->cost, COST_REACH, &m->lap);
	if (m->save.reach.unknown[0]) {
		fall_back(m, m->save.reach.unknown);
		goto done;
	}
	char err[512];
	if (mem_save(&m->c->inputs, &m->save.reach, l->stream, err, sizeof(err))) {
		fall_back(m, err);
		goto done;
	}
	m->save.strategy = "reach";
	collector_cost_lap(&m->cost, COST_SAVE, &m->lap);
	if (m->fn->policy == SAVE_REACH) {
		snprintf(m->save.why, sizeof(m->save.why), "an earlier launch of this kernel "
			 "wrote only inside the memory its parameters reach");
		measure(m);
		/* The application's own launch must see its inputs. */
		put_back(m, &m->c->inputs);
		collector_cost_lap(&m->cost, COST_RESTORE, &m->lap);
		goto done;
	}
	/* First launch of this kernel: show that the reach is enough. The application's own
	 * launch runs between two hashes of everything else; inject_replay_exit() compares
	 * them. If it wrote elsewhere, that was its one real execution: nothing is replayed.
	 * The turn stays held until then. */
	if (mem_hash_outside(&m->c->verifier, &m->save.reach, l->stream, &m->before, err,
			     sizeof(err))) {
		fall_back(m, err);
		goto done;
	}
	collector_cost_lap(&m->cost, COST_VERIFY, &m->lap);
	return m;
done:
	finish(m);
	return NULL;
}

void inject_replay_exit(struct measurement *m, bool launched)
{
	const struct inject_launch *l = &m->launch; /* as seen at ENTER: function, index, stream */
	struct inject_concerns about;
	if (!launched)
		goto done; /* the driver refused the launch: the application sees its error */
	CUresult cr = rp_api.cuCtxSynchronize();
	if (cr != CUDA_SUCCESS) {
		inject_report("sync", launch_concerns(m, &about, collector_cu_error(cr)), true,
			      "cuCtxSynchronize after launch %llu of %s: %s; not measured",
			      (unsigned long long)l->index, m->kernel, collector_cu_error(cr));
		goto done;
	}
	/* The application's kernel ran: the time from here on is ours. */
	m->lap = collector_cost_now();
	struct mem_hashes after;
	char err[512];
	if (mem_hash_again(&m->c->verifier, &m->before, l->stream, &after, err, sizeof(err))) {
		inject_report("verify", launch_concerns(m, &about, err), true,
			      "%s: %s; launch %llu not measured", m->kernel, err,
			      (unsigned long long)l->index);
		goto done;
	}
	long changed = mem_hashes_differ(&m->before, &after);
	collector_cost_lap(&m->cost, COST_VERIFY, &m->lap);
	mem_hashes_finish(&after);
	if (changed >= 0) {
		m->fn->policy = SAVE_CHECKPOINT;
		const struct mem_range *seg = &m->before.segments[changed];
		inject_report("outside", launch_concerns(m, &about, NULL), false,
			      "%s wrote outside the memory its parameters reach (%zu bytes at "
			      "%#llx changed); launch %llu ran once and is not measured, later "
			      "launches use the full checkpoint", m->kernel, seg->size,
			      (unsigned long long)seg->base, (unsigned long long)l->index);
		goto done;
	}
	m->fn->policy = SAVE_REACH;
	m->save.verified = true;
	m->save.verified_bytes = m->before.bytes;
	snprintf(m->save.why, sizeof(m->save.why), "verified now: the application's own launch "
		 "changed nothing outside the %zu saved bytes (%zu bytes hashed)",
		 m->save.reach.bytes, m->before.bytes);
	/* The application's result, to be put back after the runs. */
	if (mem_save(&m->c->result, &m->save.reach, l->stream, err, sizeof(err))) {
		inject_report("save-result", launch_concerns(m, &about, err), true,
			      "%s: %s; launch %llu not measured", m->kernel, err,
			      (unsigned long long)l->index);
		goto done;
	}
	collector_cost_lap(&m->cost, COST_SAVE, &m->lap);
	measure(m);
	put_back(m, &m->c->result);
	collector_cost_lap(&m->cost, COST_RESTORE, &m->lap);
done:
	finish(m);
}

/* --graph-profiling graph: the whole graph launch is one workload, measured like a kernel
 * launch (runs, --runs auto, thermal guard, records) from the full checkpoint, since its
 * nodes may reach any memory; measure_graph_batch says how each batch is taken. */
void inject_replay_graph(CUgraphExec exec, CUstream stream, CUcontext ctx, uint32_t context_id,
			 uint64_t index, const struct collector_graph *where)
{
	struct measurement *m = calloc(1, sizeof(*m));
	if (!m)
		return;
	char name[64];
	snprintf(name, sizeof(name), "graph %llu", (unsigned long long)where->id);
	const char *interned = NULL;
	m->kernel = inject_name_intern(name, &interned);
	m->launch = (struct inject_launch){ .ctx = ctx, .context_id = context_id, .stream = stream,
					    .mangled = interned ? interned : m->kernel,
					    .index = index, .graph = where };
	m->graph_workload = true;
	m->graph_exec = exec;
	m->device = -1;
	m->started = m->lap = collector_cost_now();
	if (!get_ready(m, PROFILER_PER_GRAPH))
		goto done;
	snprintf(m->save.why, sizeof(m->save.why), "a graph launch: the memory all its nodes "
		 "can reach");
	if (checkpoint_save(m)) {
		measure(m);
		checkpoint_put_back(m);
	}
done:
	finish(m);
}
