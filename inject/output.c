/* inject/output.c - the output file, reports said once, and the measuring flag
 * (output.h). Records are written whole with one write(2) each (collector/jsonl.c), so
 * that a signal or crash never leaves half a line and processes never interleave.
 * Calls: collector/ (records, JSON Lines), common/ (options, log).
 * Called by: checkpoint.c, control.c, device.c, emit.c, graph_measure.c, graphs.c, init.c,
 * launch.c, measure.c, range_memory.c, range_workload.c, save.c, select.c, session.c,
 * watchdog.c.
 * Lock: output_lock (the output file), report_lock (the reports said once). */
#include "inject/output.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/jsonl.h"
#include "collector/records.h"
#include "common/log.h"
#include "common/options.h"

static const char *output_template;
static int output_fd = -1;                 /* -1 until opened, -2 after a failure */
static pthread_mutex_t output_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_bool measuring;
static atomic_bool fork_child;
/* Set once by the control API's capture; called with each line under output_lock. */
static void (*_Atomic record_tap)(const char *line, size_t len);

void inject_output_set_tap(void (*tap)(const char *line, size_t len))
{
	atomic_store(&record_tap, tap);
}

bool inject_output_measuring(void)
{
	return atomic_load_explicit(&measuring, memory_order_relaxed);
}

void inject_output_measuring_start(void)
{
	atomic_store(&measuring, true);
}

void inject_output_measuring_stop(void)
{
	atomic_store(&measuring, false);
}

void inject_output_fork_child(void)
{
	atomic_store(&fork_child, true);
	atomic_store(&measuring, false);
}

bool inject_output_is_fork_child(void)
{
	return atomic_load(&fork_child);
}

void inject_output_configure(const char *templ)
{
	output_template = templ;
}

void inject_output_write_record(cJSON *record)
{
	/* Checked before the lock: another thread may have held it when the process forked,
	 * and it would stay locked in the child for ever. */
	if (!record || atomic_load(&fork_child)) {
		cJSON_Delete(record);
		return;
	}
	/* Every record names its writer: processes appending to one file (no %p) interleave
	 * their lines, and readers give each line to the session of its pid (doc/records.md).
	 * The session record has its pid already. */
	if (!cJSON_HasObjectItem(record, "pid"))
		cJSON_AddNumberToObject(record, "pid", (double)getpid());
	pthread_mutex_lock(&output_lock);
	if (output_fd == -1 && output_template) {
		char path[PATH_MAX], err[PATH_MAX + 128];
		if (rp_output_path_expand(output_template, getpid(), path, sizeof(path), err,
					  sizeof(err)) == 0)
			output_fd = collector_jsonl_open(path, err, sizeof(err));
		if (output_fd < 0) {
			rp_log_error("%s; measuring nothing, the application runs on", err);
			inject_output_measuring_stop();
			output_fd = -2; /* do not try again */
		}
	}
	static bool write_failed_said;
	size_t len = 0;
	char *line = output_fd >= 0 ? collector_jsonl_line(record, &len) : NULL;
	void (*tap)(const char *, size_t) = atomic_load(&record_tap);
	if (line && tap)
		tap(line, len);
	int rc = output_fd < 0 ? 0 : line ? collector_jsonl_write_line(output_fd, line, len) :
		-ENOMEM;
	free(line);
	if (rc != 0 && !write_failed_said) {
		/* Once: a full disk fails every later write too. */
		write_failed_said = true;
		rp_log_error("cannot write a record to the output (disk full?); later records "
			     "are lost, the application runs on");
	}
	pthread_mutex_unlock(&output_lock);
	cJSON_Delete(record);
}

/* ------------------------------------------------------------------------------------ */
/* Reports said once                                                                    */
/* ------------------------------------------------------------------------------------ */

struct report_key {
	struct report_key *next;
	char key[];
};
static struct report_key *reported;
static pthread_mutex_t report_lock = PTHREAD_MUTEX_INITIALIZER;

/* The hidden key: the report's code and everything it concerns, unit-separated, in full
 * (a kernel name cut short would merge templates that share a prefix). Codes and
 * identities only: no message text reaches it (struct inject_concerns' detail is a
 * number). NULL when out of memory. */
static char *dedupe_key(enum inject_report report, const struct inject_concerns *c)
{
	const char *parts[] = { c->mangled ? c->mangled : c->kernel, c->metric, c->option,
				c->call };
	char numbers[96];
	snprintf(numbers, sizeof(numbers), "%d/%d/%u/%lld", (int)report,
		 c->device_set ? c->device : -1, (unsigned)c->context, c->detail);
	size_t len = strlen(numbers) + 1;
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		len += (parts[i] ? strlen(parts[i]) : 0) + 1;
	char *key = malloc(len);
	if (!key)
		return NULL;
	size_t n = 0;
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		size_t l = parts[i] ? strlen(parts[i]) : 0;
		memcpy(key + n, parts[i] ? parts[i] : "", l);
		n += l;
		key[n++] = '\x1f';
	}
	strcpy(key + n, numbers);
	return key;
}

void inject_output_forget_reports(void)
{
	pthread_mutex_lock(&report_lock);
	struct report_key *k = reported;
	reported = NULL;
	pthread_mutex_unlock(&report_lock);
	while (k) {
		struct report_key *next = k->next;
		free(k);
		k = next;
	}
}

/* True the first time key is seen. */
static bool first_time(const char *key)
{
	pthread_mutex_lock(&report_lock);
	for (struct report_key *k = reported; k; k = k->next) {
		if (!strcmp(k->key, key)) {
			pthread_mutex_unlock(&report_lock);
			return false;
		}
	}
	struct report_key *k = malloc(sizeof(*k) + strlen(key) + 1);
	if (k) {
		strcpy(k->key, key);
		k->next = reported;
		reported = k;
	}
	pthread_mutex_unlock(&report_lock);
	return true;
}

static cJSON *concerns_object(const struct inject_concerns *c)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	bool ok = true;
	if (c->kernel)
		ok &= collector_json_add_string(o, "kernel", c->kernel) == 0;
	if (c->device_set)
		ok &= cJSON_AddNumberToObject(o, "device", c->device) != NULL;
	if (c->context)
		ok &= cJSON_AddNumberToObject(o, "context", c->context) != NULL;
	if (c->metric)
		ok &= collector_json_add_string(o, "metric", c->metric) == 0;
	if (c->option)
		ok &= collector_json_add_string(o, "option", c->option) == 0;
	if (c->call)
		ok &= collector_json_add_string(o, "call", c->call) == 0;
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

void inject_output_report(enum inject_report report, const struct inject_concerns *c,
			  bool error, const char *fmt, ...)
{
	if (atomic_load(&fork_child))
		return;
	static const struct inject_concerns none;
	if (!c)
		c = &none;
	char *key = dedupe_key(report, c);
	/* Out of memory: once per code, as the next best. */
	char code_only[24];
	snprintf(code_only, sizeof(code_only), "%d", (int)report);
	bool first = first_time(key ? key : code_only);
	free(key);
	if (!first)
		return;
	char message[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(message, sizeof(message), fmt, ap);
	va_end(ap);
	if (error)
		rp_log_error("%s", message);
	else
		rp_log_warn("%s", message);
	cJSON *record = collector_record_message(error ? "error" : "warning", message, NULL, NULL);
	cJSON *concerns = record ? concerns_object(c) : NULL;
	if (record && (!concerns || !cJSON_AddItemToObject(record, "concerns", concerns))) {
		cJSON_Delete(concerns);
		cJSON_Delete(record);
		record = NULL;
	}
	inject_output_write_record(record);
}

/* The table's columns, indexed by code (output_reports.h). */
static const struct {
	const char *name, *words, *todo;
} reports[INJECT_REPORT_COUNT] = {
	[INJECT_REPORT_NONE] = { "INJECT_REPORT_NONE", "", "" },
#define INJECT_REPORT_ROW(code, words, todo) [code] = { #code, words, todo },
	INJECT_OUTPUT_REPORTS(INJECT_REPORT_ROW)
#undef INJECT_REPORT_ROW
};

static unsigned report_row(enum inject_report report)
{
	return (unsigned)report < INJECT_REPORT_COUNT ? (unsigned)report : INJECT_REPORT_NONE;
}

const char *inject_output_report_name(enum inject_report report)
{
	return reports[report_row(report)].name;
}

const char *inject_output_report_words(enum inject_report report)
{
	return reports[report_row(report)].words;
}

const char *inject_output_report_todo(enum inject_report report)
{
	return reports[report_row(report)].todo;
}
