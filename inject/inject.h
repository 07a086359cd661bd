/* inject/inject.h - the injected library's internals. Calls run one way: doc/layout.md
 * gives the order of inject/'s groups, which scripts/check_maps.py checks against the
 * calls (scripts/call_graph.py, which also finds any circle between two files); each .c
 * file's opening comment lists whom it calls and who calls it, checked the same way.
 * entry.c reaches inject_init_once() only; all else stays inside inject/. */
#ifndef INJECT_INJECT_H
#define INJECT_INJECT_H

#include <cuda.h>
#include <stdbool.h>
#include <stdint.h>

#include "collector/api.h"
#include "common/lock.h"
#include "common/options.h"

#define RP_EXPORT __attribute__((visibility("default")))

struct collector_graph;

/* Reads the options, subscribes to CUDA launches, opens the output. Idempotent and
 * thread-safe: both the constructor path and InitializeInjection may call it. Never
 * fails the application: on any problem it says why once and measures nothing. */
void inject_init_once(void);
/* The same, for the control API's attach after cuInit (control.c): the process's
 * earlier allocations are unknown, so memory is saved with the full checkpoint. */
void inject_init_late(void);
/* The control API's attach went through (control.c; init.c owns the fact): once init has
 * run (or when it runs), CUDA_INJECTION64_PATH is taken out of the environment where it
 * names this library, so that children do not inherit the hook (they measure only if they
 * attach themselves), and measurements warm up (rp_session_config's warm_up_ranges).
 * Not the gate of annotations (select.c's controlled): a preloaded process that attaches
 * is still selected by its options until an annotation opens. */
void inject_init_attached(void);
void inject_init_forget_cuda_hook(void);
/* The control API's attach in a process that did not preload the library: marks this
 * process as the one whose hooks its children inherit (RANGEPROF_CONTROL_PID). */
void inject_init_mark_controller(void);
/* Whether this process only inherited the hooks from a parent under the control API (an
 * importing notebook's subprocess): neither preloaded nor attached here, and not asked
 * to measure (--children). Then the entry points do nothing: NVTX is told no, CUDA's
 * hook is ignored, nothing is measured or written. */
bool inject_init_inherited(void);
/* Whether path (absolute) is one of LD_PRELOAD's entries. */
bool inject_init_preloaded(const char *path);
/* Whether a device's set-up may start ahead of its first measured launch: --setup early,
 * and no --clock-control base (launch.c's inject_launch_configure says why). The options
 * are read first if they were not. */
bool inject_init_sets_up_early(void);
/* Whether init ran (it may have refused to measure). */
bool inject_initialised(void);
/* Whether this process measures; when not, why (init's refusal, a fork child, ...). */
bool inject_init_measuring_possible(char *why, size_t why_size);
/* Adds "output" (the expanded path) and "memory_save" to a control API info object. */
struct cJSON;
void inject_init_describe(struct cJSON *o);
/* Sets one option while the process runs (rangeprof_set_option): only those a
 * measurement reads when it starts; checked as the launcher checks them. 0, or a code of
 * common/error.h (RP_ERR_NO_MEMORY, else RP_ERR_FAILED) with one line in err naming the
 * option and what is accepted. */
int inject_init_set_option(const char *name, const char *value, char *err, size_t err_size);

/* ---- kernel_launch.c: what a launch callback knows of one launch ------------------------ */

enum inject_launch_kind {
	INJECT_LAUNCH_KERNEL,         /* cuLaunchKernel */
	INJECT_LAUNCH_COOPERATIVE,    /* cuLaunchCooperativeKernel */
	INJECT_LAUNCH_EX,             /* cuLaunchKernelEx */
};

/* Everything a launch callback knows of one launch, enough to launch it again. The
 * pointers are the driver call's own and valid until its EXIT. */
struct inject_launch {
	enum inject_launch_kind kind;
	CUcontext ctx;
	uint32_t context_id;
	CUfunction function;
	CUstream stream;
	unsigned grid[3], block[3];
	unsigned shared_mem_bytes;
	void **kernel_params;
	void **extra;
	const CUlaunchConfig *config;   /* INJECT_LAUNCH_EX */
	bool cooperative;               /* a cooperative launch (also through an attribute) */
	const char *mangled;
	uint64_t index;                 /* process-wide launch index */
	const struct collector_graph *graph;  /* a kernel node of a graph launch, else NULL */
};

/* Fills l from a kernel launch's driver callback (the one switch over the launch
 * callback ids). false when cbid is not a kernel launch this library replays. */
bool inject_kernel_launch_decode(int cbid, const void *params, struct inject_launch *l);
/* Launches the kernel of l again with its original parameters. 0, or RP_ERR_RELAUNCH
 * (common/error.h) with the driver's error name (CUDA_ERROR_...) in err. */
int inject_kernel_launch_again(const struct inject_launch *l, char *err, size_t err_size);

/* ---- the measuring files (save.c, session.c, whole_workload.c, config.c) ------------ */

/* What replay needs of the options, read-only after init. */
struct inject_config {
	unsigned runs;                  /* RP_RUNS_AUTO: batches until the rule below stops */
	double target_ci_pct;           /* --runs auto */
	unsigned runs_min, runs_max, runs_batch;
	double runs_time_budget;        /* seconds */
	enum rp_thermal_control thermal_control;
	double thermal_wait, thermal_continue;   /* degrees C of headroom */
	long thermal_timeout;           /* seconds */
	enum rp_cache_control cache_control;
	enum rp_clock_control clock_control;
	enum rp_memory_save memory_save;
	enum rp_range_scope range_scope;  /* --range-scope: what a range's runs measure */
	const char *metrics;
	long device_lock_timeout_ms;    /* how long to wait for another process's turn */
	long busy_timeout_ms;           /* how long to wait for hardware held outside rangeprof */
	/* The early set-up's warm-up pass is sized for at least this many ranges: under the
	 * control API, whose runs may grow between measurements (session.c); else 0. */
	size_t warm_up_ranges;
};

/* The replay lock (session.c): held around every measurement, early set-up, context
 * destruction and hand-over of the profiling hardware, and to change the options; all
 * state of the measuring files is under it. The timed form (exit handlers) gives up at
 * deadline (CLOCK_REALTIME) and returns false. */
void inject_session_lock(void);
void inject_session_unlock(void);
struct timespec;
bool inject_session_lock_until(const struct timespec *deadline);
/* INJECT_REPLAY_HELD(): the rule "called with the replay lock held", checked. Aborts,
 * naming the function, when the calling thread does not hold it; nothing where
 * RP_LOCK_CHECKS is 0, the wheel and NDEBUG builds (common/lock.h says why). */
#if RP_LOCK_CHECKS
void inject_session_held_at(const char *func, const char *file, int line);
#define INJECT_REPLAY_HELD() inject_session_held_at(__func__, __FILE__, __LINE__)
#else
#define INJECT_REPLAY_HELD() ((void)0)
#endif
/* Called once by init.c before any callback is enabled; the config is copied. */
void inject_session_configure(const struct inject_config *config);
/* Measures one selected launch from its driver call's ENTER (the replay lock is held by the
 * caller) and writes its records. Returns NULL when done; otherwise the launch is being
 * verified, or is the first run of its measurement (save.c), and inject_save_exit() must
 * be called at the same call's EXIT, on the same thread, with the lock still held. Never
 * fails the application's launch: errors are reported and skipped. */
struct measurement;
struct measurement *inject_save_enter(const struct inject_launch *launch, const char *kernel);
void inject_save_exit(struct measurement *m, bool launched);
/* --graph-profiling graph: measures the whole launch of exec (at its cuGraphLaunch ENTER,
 * replay lock held) as one workload and writes its records. */
void inject_whole_workload_graph(CUgraphExec exec, CUstream stream, CUcontext ctx,
				 uint32_t context_id, uint64_t index,
				 const struct collector_graph *where);
/* The context is being destroyed (CUPTI's CONTEXT_DESTROY_STARTING: still valid): releases
 * rangeprof's state for it - profiler, flush and hash kernels and buffers, saved copies,
 * per-kernel save policies - so that a later context with the same handle starts afresh.
 * Called with the replay lock held. */
void inject_session_context_destroyed(CUcontext ctx);
/* --setup early: everything a context's first measured launch would set up - the device
 * record, metric set, the context's flush and hash kernels and range profiler - and the
 * profiler's costly first pass (~145 ms on the H200: bench/first_launch_probe.cu P1, P4;
 * doc/measurements.md, "First Start of a range profiler object"), with no kernel in it
 * (one-pass sets only). Called by early.c's thread (through launch.c, with the replay
 * lock held and ctx current there). Waits at most a second for the device's turn without
 * counting this process as one that measures there; enables no profiler while another
 * process measures on the device or holds its profiling hardware, and does nothing while
 * a stream capture is under way or once a measured launch has set the context up. What
 * it could not do the first measured launch does.
 * Writes a setup record with its cost. */
void inject_session_set_up_early(CUcontext ctx, uint32_t context_id);
/* rangeprof_prepare's host half of device's set-up (device.c, inject_device_prepare_host),
 * made while the device's primary context is still being created; the set-up above then
 * starts at the profiler. Called by launch.c with the replay lock held, no context
 * needed; does nothing while a stream capture is under way. */
void inject_session_prepare_host(int device);
/* Frees the saved copies kept for the context's next launch. A CUDA graph's measurement
 * (graph_measure.c) calls it around its checkpoint: a copy freed or grown while the checkpoint
 * holds it would be restored into memory that is gone (a SIGSEGV, PyTorch graph). */
void inject_session_drop_backups(CUcontext ctx);
/* The application is about to allocate bytes (an allocation call's ENTER, any thread;
 * SIZE_MAX where the call does not say, or after an allocation that ran out of memory):
 * saved copies kept over 256 MiB for the next measurement are freed first, without
 * waiting for the replay lock or another thread's frees, if the allocation would leave
 * their device less than a quarter of its memory free. Copies a measurement is using
 * meanwhile are not kept ones: they stay until its end, as before. Nothing is freed
 * while a stream capture is under way. Costs an atomic load when nothing is kept, an
 * atomic subtraction within the headroom last asked of the driver; past it, the lock
 * and a cuMemGetInfo in the holder's context. */
void inject_session_allocation_coming(size_t bytes);
/* What the measuring files need from launch.c, which takes the replay lock: let_go(device, as an
 * intptr_t) is called on a device lock's watcher thread when another process rings for
 * the profiling hardware, and must call inject_session_let_go with the replay lock held;
 * watching() is called (replay lock held) when the first watcher starts, after CUDA
 * initialised, so that launch.c's exit handler runs before the CUDA runtime's. */
struct inject_replay_hooks {
	void (*let_go)(void *device);
	void (*watching)(void);
};
void inject_session_set_hooks(const struct inject_replay_hooks *hooks);
/* Lets go of this process's idle range profiler on device when another process holds the
 * turn there (it rang for the hardware). Replay lock held. */
void inject_session_let_go(int device);
/* In a child forked without exec: lets go of the device locks without giving away the
 * parent's turn. */
void inject_session_fork_child(void);
/* At exit: launches not measured because another process kept a device. */
void inject_session_report_totals(void);

/* ---- names.c ------------------------------------------------------------------------ */

/* Demangled name of a mangled kernel name (itself when it is not mangled). Cached per
 * name; the result lives until exit. */
const char *inject_name_demangle(const char *mangled);
/* The same, also giving the cache's own copy of mangled (stable until exit, NULL when out
 * of memory) so that callers can keep a pointer to it. */
const char *inject_name_intern(const char *mangled, const char **interned);
/* What is known of a kernel name, worked out at its first sight and kept until exit. */
struct inject_name {
	const char *mangled;      /* the cache's own copy */
	const char *demangled;    /* itself when not mangled */
	bool waits_for_peers;     /* a collective (collectives.c): what callers decide on */
	const char *collective;   /* its kind, said to the user; NULL when it is none */
};
/* The entry of mangled; NULL when out of memory. */
const struct inject_name *inject_name_of(const char *mangled);

#endif
