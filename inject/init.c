/* inject/init.c - the session: options from the environment, the CUPTI subscription,
 * the session record, forks, and the table printed at exit.
 * inject_init_once() runs inside cuInit (InitializeInjection); it makes no driver call,
 * since the driver is not ready for them there. Hands replay.c a read-only configuration
 * and launch.c the filters. Calls inject/ launch, replay and output, common/, collector/. */
#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collector/api.h"
#include "collector/device.h"
#include "collector/jsonl.h"
#include "collector/records.h"
#include "collector/table.h"
#include "common/log.h"
#include "inject/early.h"
#include "inject/inject.h"
#include "inject/launch.h"
#include "inject/output.h"
#include "memory/memory.h"

/* The options, read once in init() and never written after: everything else gets the
 * values it needs from them. */
static struct rp_options opts;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static CUpti_SubscriberHandle subscriber;

static void at_exit(void)
{
	/* A child forked without exec runs the parent's atexit handlers: the table and the
	 * totals are the parent's to print. */
	if (inject_output_is_fork_child())
		return;
	inject_launch_report_totals();
	inject_replay_report_totals();
	const char *metrics = opts.metrics;
	char first[256];
	snprintf(first, sizeof(first), "%.*s", (int)strcspn(metrics, ","), metrics);
	collector_table_print(first);
}

/* ------------------------------------------------------------------------------------ */
/* Initialisation                                                                       */
/* ------------------------------------------------------------------------------------ */

static void write_session_record(void)
{
	char host[256] = "";
	gethostname(host, sizeof(host) - 1);
	/* argv of the process as the kernel has it: we are not given main's. */
	char *args[256] = { NULL };
	static char cmdline[65536];
	FILE *f = fopen("/proc/self/cmdline", "r");
	if (f) {
		size_t len = fread(cmdline, 1, sizeof(cmdline) - 1, f);
		fclose(f);
		size_t n = 0;
		for (size_t i = 0; i < len && n < 255; i += strlen(cmdline + i) + 1)
			args[n++] = cmdline + i;
	}
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	cJSON *session = collector_record_session(
		PROJECT_VERSION, getpid(), host, args, (double)now.tv_sec + now.tv_nsec / 1e9,
		&opts);
	/* What saving device memory may take of the host: bounded, and said. */
	collector_record_add_memory_save(session, opts.memory_save == RP_MEMORY_SAVE_CHECKPOINT ?
					 "checkpoint" : "reach", mem_backup_host_limit(),
					 collector_checkpoint_host_reserve_mb());
	inject_write_record(session);
}

/* A child forked without exec (multiprocessing's fork, a shell-out before exec) cannot
 * use its parent's CUDA context and must not write into the parent's file: it measures
 * nothing and writes nothing. A child that execs starts afresh from the environment. */
static void in_fork_child(void)
{
	inject_output_fork_child();
	inject_replay_fork_child();
	inject_early_fork_child();
}

static void init(void)
{
	char err[2048];
	rp_options_init(&opts);
	if (rp_options_load_env(&opts, err, sizeof(err)) ||
	    rp_options_check(&opts, err, sizeof(err))) {
		rp_log_error("%s; measuring nothing, the application runs on", err);
		return;
	}
	rp_log_set_quiet(opts.quiet);
	if (rp_output_check(opts.output, getpid(), "RANGEPROF_OUTPUT", err, sizeof(err))) {
		rp_log_error("%s; measuring nothing, the application runs on", err);
		return;
	}
	if (inject_launch_configure(&opts, err, sizeof(err))) {
		rp_log_error("%s; measuring nothing, the application runs on", err);
		return;
	}
	if (collector_api_load("/usr/local/cuda/lib64", err, sizeof(err))) {
		rp_log_error("%s; measuring nothing, the application runs on", err);
		return;
	}
	inject_output_configure(opts.output);
	inject_replay_configure(&(struct inject_config){
		.runs = (unsigned)opts.runs, .target_ci_pct = opts.target_ci_pct,
		.runs_min = (unsigned)opts.runs_min, .runs_max = (unsigned)opts.runs_max,
		.runs_batch = (unsigned)opts.runs_batch, .runs_time_budget = opts.runs_time_budget,
		.thermal_control = opts.thermal_control, .thermal_wait = opts.thermal_wait,
		.thermal_continue = opts.thermal_continue, .thermal_timeout = opts.thermal_timeout,
		.cache_control = opts.cache_control,
		.clock_control = opts.clock_control, .memory_save = opts.memory_save,
		.metrics = opts.metrics,
		.device_lock_timeout_ms = opts.device_lock_timeout * 1000 });
	CUptiResult r = rp_api.cuptiSubscribe(&subscriber, inject_launch_callback, NULL);
	if (r != CUPTI_SUCCESS) {
		rp_log_error("cuptiSubscribe: %s; %s; measuring nothing, the application runs on",
			     collector_cupti_error(r),
			     r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED ?
			     "another CUPTI client (ncu, nsys, torch.profiler, ...) is attached" :
			     "CUPTI cannot be used here");
		return;
	}
	if (inject_launch_enable(subscriber, err, sizeof(err))) {
		rp_log_error("%s; measuring nothing, the application runs on", err);
		return;
	}
	pthread_atfork(NULL, NULL, in_fork_child);
	inject_measuring_start();
	write_session_record();
	atexit(at_exit);
}

void inject_init_once(void)
{
	pthread_once(&init_once, init);
}
