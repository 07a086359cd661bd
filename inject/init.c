/* inject/init.c - the session: options from the environment, the CUPTI subscription,
 * the output file, one-time reports and the table printed at exit.
 * inject_init_once() runs inside cuInit (InitializeInjection); it makes no driver call,
 * since the driver is not ready for them there. Calls common/, nvtx_bridge/, collector/. */
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
#include "inject/inject.h"
#include "inject/launch.h"
#include "memory/memory.h"

struct inject_session inject_session = { .output_fd = -1 };

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t output_lock = PTHREAD_MUTEX_INITIALIZER;
static CUpti_SubscriberHandle subscriber;

/* ------------------------------------------------------------------------------------ */
/* Output and reports                                                                   */
/* ------------------------------------------------------------------------------------ */

void inject_write_record(cJSON *record)
{
	if (!record)
		return;
	pthread_mutex_lock(&output_lock);
	if (inject_session.output_fd < 0 && inject_session.opts.output) {
		char path[PATH_MAX], err[PATH_MAX + 128];
		if (rp_output_path_expand(inject_session.opts.output, getpid(), path, sizeof(path),
					  err, sizeof(err)) == 0)
			inject_session.output_fd = collector_jsonl_open(path, err, sizeof(err));
		if (inject_session.output_fd < 0) {
			rp_log_error("%s; measuring nothing, the application runs on", err);
			inject_session.measuring = false;
			inject_session.output_fd = -2; /* do not try again */
		}
	}
	static bool write_failed_said;
	if (inject_session.output_fd >= 0 &&
	    collector_jsonl_write(inject_session.output_fd, record) != 0 && !write_failed_said) {
		/* Once: a full disk fails every later write too. */
		write_failed_said = true;
		rp_log_error("cannot write a record to the output (disk full?); later records "
			     "are lost, the application runs on");
	}
	pthread_mutex_unlock(&output_lock);
	cJSON_Delete(record);
}

struct report_key {
	struct report_key *next;
	char key[];
};
static struct report_key *reported;
static pthread_mutex_t report_lock = PTHREAD_MUTEX_INITIALIZER;

void inject_report_once(const char *key, bool error, const char *fmt, ...)
{
	pthread_mutex_lock(&report_lock);
	for (struct report_key *k = reported; k; k = k->next) {
		if (!strcmp(k->key, key)) {
			pthread_mutex_unlock(&report_lock);
			return;
		}
	}
	struct report_key *k = malloc(sizeof(*k) + strlen(key) + 1);
	if (k) {
		strcpy(k->key, key);
		k->next = reported;
		reported = k;
	}
	pthread_mutex_unlock(&report_lock);
	char message[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(message, sizeof(message), fmt, ap);
	va_end(ap);
	if (error)
		rp_log_error("%s", message);
	else
		rp_log_warn("%s", message);
	inject_write_record(collector_record_message(error ? "error" : "warning", message,
						     "key", key));
}

static void at_exit(void)
{
	inject_launch_quiesce();
	inject_launch_report_totals();
	const char *metrics = inject_session.opts.metrics;
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
		&inject_session.opts);
	/* What saving device memory may take of the host (issue 6: bounded and reported). */
	cJSON *save = session ? cJSON_AddObjectToObject(session, "memory_save") : NULL;
	if (save) {
		cJSON_AddStringToObject(save, "strategy", inject_session.opts.memory_save ==
					RP_MEMORY_SAVE_CHECKPOINT ? "checkpoint" : "reach");
		cJSON_AddNumberToObject(save, "host_bytes_max", (double)mem_backup_host_limit());
		cJSON_AddNumberToObject(save, "checkpoint_host_reserve_mb",
					(double)collector_checkpoint_host_reserve_mb());
	}
	inject_write_record(session);
}

static void init(void)
{
	char err[2048];
	struct rp_options *opts = &inject_session.opts;
	rp_options_init(opts);
	if (rp_options_load_env(opts, err, sizeof(err))) {
		rp_log_error("%s; measuring nothing, the application runs on", err);
		return;
	}
	rp_log_set_quiet(opts->quiet);
	if (rp_output_check(opts->output, getpid(), "RANGEPROF_OUTPUT", err, sizeof(err))) {
		rp_log_error("%s; measuring nothing, the application runs on", err);
		return;
	}
	if (inject_launch_configure(opts, err, sizeof(err))) {
		rp_log_error("%s; measuring nothing, the application runs on", err);
		return;
	}
	if (collector_api_load("/usr/local/cuda/lib64", err, sizeof(err))) {
		rp_log_error("%s; measuring nothing, the application runs on", err);
		return;
	}
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
	inject_session.measuring = true;
	write_session_record();
	if (inject_session.opts.list_metrics)
		rp_log_warn("--list-metrics is a launcher action; the library ignores it");
	atexit(at_exit);
}

void inject_init_once(void)
{
	pthread_once(&init_once, init);
}
