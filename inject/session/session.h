/* inject/session/session.h - this process's measuring session on each device and context
 * (session.c): the turn, the range profiler of each context and which context's profiler
 * holds the device's profiling hardware, the hand-over of that hardware to other
 * processes, each kernel's save policy, and the early set-up. Under the replay lock. */
#ifndef INJECT_SESSION_H
#define INJECT_SESSION_H

#include <cuda.h>
#include <stdbool.h>
#include <stdint.h>

#include "collector/cost.h"
#include "inject/config.h"
#include "inject/session/flush.h"
#include "memory/memory.h"

struct device_state;
struct collector_metric_set;

/* How each kernel's memory is saved, per context and function (save.c's state machine). */
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
	/* A launch changed every range it reaches (or a replay changed one its launch had
	 * not): its replays restore the whole reach without comparing (save.c). */
	bool writes_all_reach;
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

/* The kernel's save policy in context c, made at its first measured launch. NULL when out
 * of memory. */
struct function_state *inject_session_function_state(struct context_state *c, CUfunction f,
					     const char *mangled);
/* Waits for this process's turn on the device, then for the profiling hardware. false
 * (said) when another process kept either past --device-lock-timeout: the launch is then
 * not measured, and the turn is not held. */
bool inject_session_take_turn(struct device_state *d, int device, const char *kernel,
		      const char *mangled, uint64_t index);
/* After a measurement: the turn given back. The profiler stays enabled until another
 * process rings for the hardware (doc/concurrency.md). */
void inject_session_give_turn(int device);
/* The context's state, set up at its first use, with the profiler need asks for (a new
 * one where the kind, set or ranges differ). Called with the turn held. NULL when the
 * launch cannot be measured in it now (said). cost and lap get the set-up's phases. */
struct context_state *inject_session_context_ready(CUcontext ctx, int device, uint32_t context_id,
					   enum inject_profiler_need need,
					   const struct collector_metric_set *set, size_t ranges,
					   struct collector_cost *cost, double *lap);
/* At the start of a measurement in c (inject_measure_get_ready): c's saved copies are
 * the measurement's until its end, which no allocation frees meanwhile (session.c, "the
 * saved copies"). */
void inject_session_use_backups(struct context_state *c);
/* At the end of a measurement in c: its saved device copies kept for the next one, or
 * those over 256 MiB freed (the device has under a quarter of its memory free); pinned
 * host copies over 256 MiB freed. Another context's kept copies are freed first: one
 * context at a time keeps more. */
void inject_session_keep_backups(struct context_state *c);
/* c's copies over 256 MiB freed now, before a checkpoint would save them with the
 * application's memory. */
void inject_session_trim_backups(struct context_state *c);
/* Disables c's range profiler (and gives the device's hardware byte back). */
void inject_session_profiler_release(struct context_state *c);
/* Disables the range profiler this process has enabled on device, if any. */
void inject_session_release_profilers(int device);

#endif
