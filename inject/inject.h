/* inject/inject.h - the injected library's internals: initialisation, the launch
 * callback and the replay of selected launches. entry.c calls inject_init_once(); all
 * else stays inside inject/. */
#ifndef INJECT_INJECT_H
#define INJECT_INJECT_H

#include <cuda.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/options.h"

#define RP_EXPORT __attribute__((visibility("default")))

struct cJSON;

/* Reads the options, subscribes to CUDA launches, opens the output. Idempotent and
 * thread-safe: both the constructor path and InitializeInjection may call it. Never
 * fails the application: on any problem it says why once and measures nothing. */
void inject_init_once(void);

/* Everything a launch callback knows of one launch, enough to launch it again. */
struct inject_launch {
	int cbid;                       /* CUPTI driver callback id */
	const void *params;             /* the driver call's parameter struct */
	CUcontext ctx;
	uint32_t context_id;
	CUfunction function;
	CUstream stream;
	unsigned grid[3], block[3];
	unsigned shared_mem_bytes;
	const char *mangled;
	uint64_t index;                 /* process-wide launch index */
};

/* Launches the kernel of launch again with its original parameters. */
CUresult inject_relaunch(const struct inject_launch *launch);
/* The launch's kernelParams and extra, as the driver call was given them. */
void inject_launch_arguments(const struct inject_launch *launch, void ***kernel_params,
			     void ***extra);

/* The session state replay.c needs from init.c. */
struct inject_session {
	struct rp_options opts;
	int output_fd;                  /* -1 until opened */
	bool measuring;                 /* false after a fatal problem */
};
extern struct inject_session inject_session;

/* Measures one selected launch at its driver call's ENTER (the replay lock is held by the
 * caller) and writes its records. Returns NULL when done; otherwise the launch is being
 * verified, and inject_replay_exit() must be called at the same call's EXIT, on the same
 * thread, with the lock still held. Never fails the application's launch: errors are
 * reported and skipped. */
struct measurement;
/* Sets up measuring in a new context (profiler, metric set, flush and hash kernels, the
 * profiler's first pass) so that the first measured launch does not pay for it. Called
 * on a thread of ours, with the replay lock held. */
void inject_replay_prepare(CUcontext ctx);
struct measurement *inject_replay_enter(const struct inject_launch *launch, const char *kernel);
void inject_replay_exit(struct measurement *m, const struct inject_launch *launch,
			bool launched);

/* Says a message once per key: stderr and a warning or error record. */
void inject_report_once(const char *key, bool error, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Writes a record to the output, opening it on first use. */
void inject_write_record(struct cJSON *record);

/* Demangled name of a mangled kernel name (itself when it is not mangled). Cached per
 * name; the result lives until exit. */
const char *inject_demangle(const char *mangled);
/* The same, also giving the cache's own copy of mangled (stable until exit, NULL when out
 * of memory) so that callers can keep a pointer to it. */
const char *inject_name_intern(const char *mangled, const char **interned);

#endif
