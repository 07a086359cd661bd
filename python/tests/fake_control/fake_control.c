/* python/tests/fake_control/fake_control.c - a stand-in librangeprof.so for the Python
 * tests of 'import rangeprof' (python/tests/test_analyze*.py): it exports exactly the
 * functions of doc/control-api.md, version 2, and measures nothing (rangeprof_prepare and
 * rangeprof_before_exit only log their calls). The records it hands
 * back are recorded ones: at each rangeprof_annotation_end it takes the next launch of a
 * recording from python/tests/fixtures/recorded/ and hands back its records as they are,
 * except that the 'nvtx' list of each gets the start/end ranges of the annotations open
 * at that moment (domain "rangeprof"), after the recorded push/pop ranges, as the library
 * writes them. Built by python/meson.build for the tests only, never installed.
 *
 * Scripted through the environment, read at each call (a test changes os.environ between
 * calls; Python's putenv reaches getenv here):
 *   RANGEPROF_FAKE_FIXTURE   the recording (JSON Lines) whose launches are handed back
 *   RANGEPROF_FAKE_RANGE     only launches whose recorded nvtx_path is this text
 *   RANGEPROF_FAKE_EPOCH     any text: each (fixture, range, epoch) has its own cursor,
 *                            starting at the recording's first launch
 *   RANGEPROF_FAKE_LAUNCHES  launches handed back per annotation_end (default 1; 0: the
 *                            annotated code launched no kernel)
 *   RANGEPROF_FAKE_NOT_REPLAYED  when set, each launch comes back as the warning the
 *                            library writes for a kernel it cannot replay (launch.c's
 *                            "wrote outside" message), without run or summary records
 *   RANGEPROF_FAKE_UNAVAILABLE   rangeprof_attach fails with RANGEPROF_EUNAVAILABLE and
 *                            this message (another CUPTI client, say)
 *   RANGEPROF_FAKE_CONTROL_VERSION  what rangeprof_control_version returns (default: the
 *                            header's RANGEPROF_CONTROL_VERSION)
 *   RANGEPROF_FAKE_NVTX_MODULES     nvtx_modules in rangeprof_info (default 1)
 *   RANGEPROF_FAKE_ACCEPT    comma-separated option names accepted with any value
 *   RANGEPROF_FAKE_REFUSE    comma-separated option names refused as unknown, as a library
 *                            older than the option refuses it (e.g. replay-mode)
 *   RANGEPROF_FAKE_LOG       a file each call is appended to: 'name args -> code'
 *   RANGEPROF_OUTPUT         as the library: every record is appended there too (%p is
 *                            the process id)
 * Options are checked by the real library's rules (common/options.c's
 * rp_options_set_runtime, linked in): the same run-time options, values and messages;
 * start-up options and unknown names are refused with EINVAL. A run takes the
 * 'runs' option: a launch recorded with more runs comes back with its first N run
 * records and without its summary. A metric of the 'metrics' option that the recorded
 * launch lacks comes back as the error record the library writes for a metric the GPU
 * does not know (collector/profiler.c's message, measure.c's ending). The device record
 * of a recording comes once per epoch (the tests' stand-in for a process), before its
 * first launch, as the library writes a device record once per process. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "common/error.h"
#include "common/options.h"
/* The codes and the version are the real header's: no copy here to drift from it. */
#include "inject/rangeprof_control.h"

#define EXPORT __attribute__((visibility("default")))


EXPORT int rangeprof_control_version(void);
EXPORT int rangeprof_attach(void);
EXPORT char *rangeprof_info(void);
EXPORT int rangeprof_set_option(const char *name, const char *value);
EXPORT int rangeprof_annotation_begin(const char *name);
EXPORT int rangeprof_annotation_end(const char *name);
EXPORT int rangeprof_capture_begin(void);
EXPORT char *rangeprof_capture_take(size_t *length);
EXPORT void rangeprof_capture_end(void);
EXPORT void rangeprof_free(void *p);
EXPORT const char *rangeprof_last_error(void);
EXPORT int rangeprof_prepare(int device);
EXPORT void rangeprof_before_exit(void);

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static __thread char last_error[2048];
static bool attached;

/* ------------------------------------------------------------------------------------ */
/* The call log and errors                                                              */

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...)
{
	const char *path = getenv("RANGEPROF_FAKE_LOG");
	if (!path || !*path)
		return;
	FILE *f = fopen(path, "a");
	if (!f)
		return;
	va_list ap;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
	fclose(f);
}

static int fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	return code;
}

static int ok(void)
{
	last_error[0] = '\0';
	return RANGEPROF_OK;
}

/* ------------------------------------------------------------------------------------ */
/* Options                                                                              */

/* The real library's option table and run-time rules (common/options.c, linked in): the
 * stand-in accepts and refuses exactly what librangeprof.so does, with its messages. */
static struct rp_options opts;
static bool opts_ready;

/* The option's value as last accepted, as written ("5", "auto", a metric list). */
static const char *option_value(enum rp_option id)
{
	if (!opts_ready) {
		rp_options_init(&opts);
		opts_ready = true;
	}
	return opts.text[id] ? opts.text[id] : "";
}

static bool in_list(const char *list, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = list; p && *p;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		if (len == n && !strncmp(p, name, n))
			return true;
		p = comma ? comma + 1 : NULL;
	}
	return false;
}

/* ------------------------------------------------------------------------------------ */
/* The recording                                                                        */

struct launch {
	cJSON *records;      /* array: warnings before it, its runs, its summary */
	const char *nvtx_path;
	size_t runs;         /* run records in it */
};

struct fixture {
	char *path;
	cJSON *device;       /* the first device record, or NULL */
	struct launch *launches;
	size_t count;
	struct fixture *next;
};
static struct fixture *fixtures;

struct cursor {
	char *key;
	size_t next;
	bool device_sent;    /* for keys of a fixture and epoch */
	struct cursor *next_cursor;
};
static struct cursor *cursors;

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 1 << 20, len = 0;
	char *text = malloc(cap);
	while (text) {
		size_t n = fread(text + len, 1, cap - len - 1, f);
		len += n;
		if (len + 1 < cap)
			break;
		char *grown = realloc(text, cap * 2);
		if (!grown) {
			free(text);
			text = NULL;
			break;
		}
		text = grown;
		cap *= 2;
	}
	fclose(f);
	if (text)
		text[len] = '\0';
	return text;
}

static bool same_launch(const cJSON *a, const cJSON *b)
{
	const cJSON *la = cJSON_GetObjectItemCaseSensitive(a, "launch");
	const cJSON *lb = cJSON_GetObjectItemCaseSensitive(b, "launch");
	if (!cJSON_IsNumber(la) || !cJSON_IsNumber(lb) || la->valuedouble != lb->valuedouble)
		return false;
	const cJSON *ga = cJSON_GetObjectItemCaseSensitive(a, "graph");
	const cJSON *gb = cJSON_GetObjectItemCaseSensitive(b, "graph");
	const cJSON *na = cJSON_IsObject(ga) ? cJSON_GetObjectItemCaseSensitive(ga, "node") : NULL;
	const cJSON *nb = cJSON_IsObject(gb) ? cJSON_GetObjectItemCaseSensitive(gb, "node") : NULL;
	if (!cJSON_IsNumber(na) || !cJSON_IsNumber(nb))
		return !cJSON_IsNumber(na) && !cJSON_IsNumber(nb);
	return na->valuedouble == nb->valuedouble;
}

static const char *type_of(const cJSON *record)
{
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(record, "type");
	return cJSON_IsString(t) ? t->valuestring : "";
}

static struct fixture *fixture_load(const char *path)
{
	for (struct fixture *f = fixtures; f; f = f->next)
		if (!strcmp(f->path, path))
			return f;
	char *text = read_file(path);
	if (!text)
		return NULL;
	struct fixture *f = calloc(1, sizeof(*f));
	if (!f) {
		free(text);
		return NULL;
	}
	f->path = strdup(path);
	cJSON *pending = cJSON_CreateArray();  /* warnings and errors before the next launch */
	struct launch *current = NULL;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		cJSON *record = cJSON_Parse(line);
		if (!record)
			continue;
		const char *type = type_of(record);
		if (!strcmp(type, "device") && !f->device) {
			f->device = record;
		} else if (!strcmp(type, "warning") || !strcmp(type, "error")) {
			cJSON_AddItemToArray(pending, record);
		} else if (!strcmp(type, "run")) {
			const cJSON *last = current ? cJSON_GetArrayItem(current->records,
				cJSON_GetArraySize(current->records) - 1) : NULL;
			if (!current || !last || strcmp(type_of(last), "run") ||
			    !same_launch(last, record)) {
				struct launch *grown = realloc(f->launches,
							       (f->count + 1) * sizeof(*grown));
				if (!grown) {
					cJSON_Delete(record);
					break;
				}
				f->launches = grown;
				current = &f->launches[f->count++];
				current->records = pending;
				current->runs = 0;
				const cJSON *p = cJSON_GetObjectItemCaseSensitive(record, "nvtx_path");
				current->nvtx_path = cJSON_IsString(p) ? p->valuestring : "";
				pending = cJSON_CreateArray();
			}
			/* nvtx_path points into the launch's first run record, which the
			 * array owns from here on. */
			cJSON_AddItemToArray(current->records, record);
			current->runs++;
		} else if (!strcmp(type, "summary") && current) {
			cJSON_AddItemToArray(current->records, record);
		} else if (record != f->device) {
			cJSON_Delete(record);
		}
	}
	cJSON_Delete(pending);
	free(text);
	f->next = fixtures;
	fixtures = f;
	return f;
}

static struct cursor *cursor_for(const char *key)
{
	for (struct cursor *c = cursors; c; c = c->next_cursor)
		if (!strcmp(c->key, key))
			return c;
	struct cursor *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->key = strdup(key);
	c->next_cursor = cursors;
	cursors = c;
	return c;
}

/* ------------------------------------------------------------------------------------ */
/* Annotations, the capture and the output file                                         */

#define MAX_OPEN 64
static char *open_names[MAX_OPEN];
static size_t open_count;

static bool capturing;
static char *captured;
static size_t captured_len, captured_cap;

static void append_captured(const char *line, size_t len)
{
	if (!capturing)
		return;
	if (captured_len + len + 1 > captured_cap) {
		size_t cap = captured_cap ? captured_cap : 1 << 16;
		while (cap < captured_len + len + 1)
			cap *= 2;
		char *grown = realloc(captured, cap);
		if (!grown)
			return;
		captured = grown;
		captured_cap = cap;
	}
	memcpy(captured + captured_len, line, len);
	captured_len += len;
	captured[captured_len] = '\0';
}

static void output_path(char *buf, size_t size)
{
	const char *tmpl = getenv("RANGEPROF_OUTPUT");
	size_t n = 0;
	buf[0] = '\0';
	for (const char *p = tmpl ? tmpl : ""; *p && n + 24 < size; p++) {
		if (p[0] == '%' && p[1] == 'p') {
			n += (size_t)snprintf(buf + n, size - n, "%ld", (long)getpid());
			p++;
		} else {
			buf[n++] = *p;
			buf[n] = '\0';
		}
	}
}

/* Writes one record as the library does: to the output file, and to the capture. */
static void write_record(const cJSON *record)
{
	char *text = cJSON_PrintUnformatted(record);
	if (!text)
		return;
	size_t len = strlen(text);
	char *line = malloc(len + 2);
	if (line) {
		memcpy(line, text, len);
		line[len] = '\n';
		line[len + 1] = '\0';
		char path[4096];
		output_path(path, sizeof(path));
		if (*path) {
			FILE *f = fopen(path, "a");
			if (f) {
				fwrite(line, 1, len + 1, f);
				fclose(f);
			}
		}
		append_captured(line, len + 1);
		free(line);
	}
	free(text);
}

/* A copy of a recorded record whose nvtx list also holds the open annotations. */
static cJSON *with_annotations(const cJSON *record)
{
	cJSON *copy = cJSON_Duplicate(record, true);
	if (!copy)
		return NULL;
	cJSON *nvtx = cJSON_GetObjectItemCaseSensitive(copy, "nvtx");
	if (!cJSON_IsArray(nvtx))
		return copy;
	for (size_t i = 0; i < open_count; i++) {
		cJSON *range = cJSON_CreateObject();
		cJSON_AddStringToObject(range, "domain", "rangeprof");
		cJSON_AddStringToObject(range, "text", open_names[i]);
		cJSON_AddStringToObject(range, "kind", "start_end");
		cJSON_AddItemToArray(nvtx, range);
	}
	return copy;
}

static void message_record(const char *type, const char *message, cJSON *concerns)
{
	cJSON *r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "type", type);
	cJSON_AddStringToObject(r, "message", message);
	cJSON_AddItemToObject(r, "concerns", concerns ? concerns : cJSON_CreateObject());
	write_record(r);
	cJSON_Delete(r);
}

/* The first metric of the 'metrics' option that the launch's runs lack, or NULL. */
static char *missing_metric(const struct launch *l)
{
	const cJSON *run = NULL;
	const cJSON *r;
	cJSON_ArrayForEach(r, l->records) {
		if (!strcmp(type_of(r), "run")) {
			run = r;
			break;
		}
	}
	const cJSON *metrics = run ? cJSON_GetObjectItemCaseSensitive(run, "metrics") : NULL;
	const char *list = option_value(RP_OPT_METRICS);
	for (const char *p = list; p && *p;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		char name[512];
		snprintf(name, sizeof(name), "%.*s", (int)len, p);
		if (!cJSON_GetObjectItemCaseSensitive(metrics, name))
			return strdup(name);
		p = comma ? comma + 1 : NULL;
	}
	return NULL;
}

static void hand_back(struct fixture *f, const struct launch *l, bool *device_sent)
{
	const cJSON *first_run = NULL;
	const cJSON *r;
	cJSON_ArrayForEach(r, l->records) {
		if (!strcmp(type_of(r), "run") && !first_run)
			first_run = r;
	}
	const cJSON *kernel = cJSON_GetObjectItemCaseSensitive(first_run, "kernel");
	const cJSON *device = cJSON_GetObjectItemCaseSensitive(first_run, "device");
	const cJSON *launch = cJSON_GetObjectItemCaseSensitive(first_run, "launch");
	char *missing = missing_metric(l);
	if (missing) {
		const cJSON *name = f->device ? cJSON_GetObjectItemCaseSensitive(f->device, "name")
			: NULL;
		char message[1024];
		snprintf(message, sizeof(message), "--metrics: unknown metric '%s' for this device "
			 "(CUPTI_ERROR_INVALID_METRIC_NAME); 'rangeprof --list-metrics' lists the "
			 "metrics it supports; measuring nothing on device %d (%s), the "
			 "application runs on", missing, cJSON_IsNumber(device) ? device->valueint : 0,
			 cJSON_IsString(name) ? name->valuestring : "?");
		cJSON *concerns = cJSON_CreateObject();
		cJSON_AddNumberToObject(concerns, "device", cJSON_IsNumber(device) ? device->valueint : 0);
		message_record("error", message, concerns);
		free(missing);
		return;
	}
	if (f->device && !*device_sent) {
		write_record(f->device);
		*device_sent = true;
	}
	if (getenv("RANGEPROF_FAKE_NOT_REPLAYED") && *getenv("RANGEPROF_FAKE_NOT_REPLAYED")) {
		char message[2048];
		snprintf(message, sizeof(message), "%s wrote outside the memory its parameters "
			 "reach; launch %.0f ran once and is not measured, later launches use the "
			 "full checkpoint", cJSON_IsString(kernel) ? kernel->valuestring : "?",
			 cJSON_IsNumber(launch) ? launch->valuedouble : 0.0);
		cJSON *concerns = cJSON_CreateObject();
		cJSON_AddStringToObject(concerns, "kernel", cJSON_IsString(kernel) ? kernel->valuestring : "?");
		message_record("warning", message, concerns);
		return;
	}
	const char *runs_text = option_value(RP_OPT_RUNS);
	size_t runs = strcmp(runs_text, "auto") ? (size_t)strtol(runs_text, NULL, 10) : l->runs;
	bool whole = runs >= l->runs;
	size_t sent = 0;
	cJSON_ArrayForEach(r, l->records) {
		const char *type = type_of(r);
		if (!strcmp(type, "run") && sent++ >= runs)
			continue;
		if (!strcmp(type, "summary") && !whole)
			continue;
		cJSON *copy = strcmp(type, "run") && strcmp(type, "summary") ?
			cJSON_Duplicate(r, true) : with_annotations(r);
		if (copy) {
			write_record(copy);
			cJSON_Delete(copy);
		}
	}
}

/* At an annotation's end: the next recorded launches, as the application's. */
static void launches_at_end(void)
{
	const char *path = getenv("RANGEPROF_FAKE_FIXTURE");
	if (!path || !*path)
		return;
	struct fixture *f = fixture_load(path);
	if (!f || !f->count) {
		logf_("fixture %s: no launches", path);
		return;
	}
	const char *range = getenv("RANGEPROF_FAKE_RANGE");
	const char *epoch = getenv("RANGEPROF_FAKE_EPOCH");
	const char *count_text = getenv("RANGEPROF_FAKE_LAUNCHES");
	long count = count_text && *count_text ? strtol(count_text, NULL, 10) : 1;
	char key[8192];
	snprintf(key, sizeof(key), "%s|%s|%s", path, range ? range : "", epoch ? epoch : "");
	struct cursor *cursor = cursor_for(key);
	snprintf(key, sizeof(key), "%s||%s", path, epoch ? epoch : "");
	struct cursor *device = cursor_for(key);
	if (!cursor || !device)
		return;
	size_t *next = &cursor->next;
	for (long i = 0; i < count; i++) {
		size_t tried = 0;
		while (tried < f->count &&
		       range && *range && strcmp(f->launches[*next % f->count].nvtx_path, range)) {
			(*next)++;
			tried++;
		}
		if (tried == f->count) {
			logf_("fixture %s: no launch in range '%s'", path, range);
			return;
		}
		const struct launch *l = &f->launches[*next % f->count];
		char *missing = missing_metric(l);
		if (missing) {
			free(missing);
			hand_back(f, l, &device->device_sent);   /* the error; the launch stays next */
			return;
		}
		(*next)++;
		hand_back(f, l, &device->device_sent);
	}
}

/* ------------------------------------------------------------------------------------ */
/* The API                                                                              */

int rangeprof_control_version(void)
{
	const char *v = getenv("RANGEPROF_FAKE_CONTROL_VERSION");
	int version = v && *v ? atoi(v) : RANGEPROF_CONTROL_VERSION;
	logf_("rangeprof_control_version -> %d", version);
	return version;
}

int rangeprof_attach(void)
{
	pthread_mutex_lock(&lock);
	const char *why = getenv("RANGEPROF_FAKE_UNAVAILABLE");
	int rc;
	attached = true;
	if (why && *why)
		rc = fail(RANGEPROF_EUNAVAILABLE, "%s", why);
	else
		rc = ok();
	logf_("rangeprof_attach -> %d", rc);
	pthread_mutex_unlock(&lock);
	return rc;
}

char *rangeprof_info(void)
{
	pthread_mutex_lock(&lock);
	const char *why = getenv("RANGEPROF_FAKE_UNAVAILABLE");
	const char *modules = getenv("RANGEPROF_FAKE_NVTX_MODULES");
	char path[4096];
	output_path(path, sizeof(path));
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "control_version", RANGEPROF_CONTROL_VERSION);
	cJSON_AddStringToObject(o, "version", "fake");
	cJSON_AddBoolToObject(o, "attached", attached);
	cJSON_AddBoolToObject(o, "measuring", !(why && *why));
	if (why && *why)
		cJSON_AddStringToObject(o, "reason", why);
	else
		cJSON_AddNullToObject(o, "reason");
	cJSON_AddBoolToObject(o, "late_attach", false);
	cJSON_AddStringToObject(o, "memory_save", "reach");
	cJSON_AddNumberToObject(o, "nvtx_modules", modules && *modules ? atoi(modules) : 1);
	cJSON_AddNumberToObject(o, "annotations_open", (double)open_count);
	if (*path)
		cJSON_AddStringToObject(o, "output", path);
	else
		cJSON_AddNullToObject(o, "output");
	cJSON_AddNullToObject(o, "cupti");
	char *text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	logf_("rangeprof_info");
	pthread_mutex_unlock(&lock);
	return text;
}

int rangeprof_set_option(const char *name, const char *value)
{
	pthread_mutex_lock(&lock);
	int rc = RANGEPROF_OK;
	if (!name || !value) {
		rc = fail(RANGEPROF_EINVAL, "rangeprof_set_option: a NULL %s",
			  !name ? "option name" : "value");
		goto out;
	}
	if (in_list(getenv("RANGEPROF_FAKE_ACCEPT"), name)) {
		rc = ok();
		goto out;
	}
	/* A library older than the option: refused as the real one refuses an unknown name. */
	if (in_list(getenv("RANGEPROF_FAKE_REFUSE"), name)) {
		rc = fail(RANGEPROF_EINVAL, "option '%s' is unknown; the options that can change "
			  "while the process runs are: runs", name);
		goto out;
	}
	option_value(RP_OPT_RUNS);
	char err[2048];
	int code = rp_options_set_runtime(&opts, name, value, NULL, err, sizeof(err));
	rc = code == 0 ? ok() : fail(code == RP_ERR_NO_MEMORY ? RANGEPROF_ENOMEM :
				     RANGEPROF_EINVAL, "%s", err);
out:
	logf_("rangeprof_set_option %s %s -> %d", name ? name : "(null)", value ? value : "(null)", rc);
	pthread_mutex_unlock(&lock);
	return rc;
}

int rangeprof_annotation_begin(const char *name)
{
	pthread_mutex_lock(&lock);
	int rc;
	if (!name || !*name) {
		rc = fail(RANGEPROF_EINVAL, "an annotation needs a non-empty name");
		goto out;
	}
	for (size_t i = 0; i < open_count; i++) {
		if (!strcmp(open_names[i], name)) {
			rc = fail(RANGEPROF_ENESTED, "annotation '%.200s' is already open: an "
				  "annotation cannot be nested in itself", name);
			goto out;
		}
	}
	if (open_count == MAX_OPEN || !(open_names[open_count] = strdup(name))) {
		rc = fail(RANGEPROF_ENOMEM, "out of memory opening annotation '%.200s'", name);
		goto out;
	}
	open_count++;
	rc = ok();
out:
	logf_("rangeprof_annotation_begin %s -> %d", name ? name : "(null)", rc);
	pthread_mutex_unlock(&lock);
	return rc;
}

int rangeprof_annotation_end(const char *name)
{
	pthread_mutex_lock(&lock);
	int rc = RANGEPROF_ENOTOPEN;
	if (!name) {
		rc = fail(RANGEPROF_EINVAL, "rangeprof_annotation_end: a NULL name");
		goto out;
	}
	for (size_t i = 0; i < open_count; i++) {
		if (strcmp(open_names[i], name))
			continue;
		if (attached && !(getenv("RANGEPROF_FAKE_UNAVAILABLE") &&
				  *getenv("RANGEPROF_FAKE_UNAVAILABLE")))
			launches_at_end();
		free(open_names[i]);
		memmove(&open_names[i], &open_names[i + 1], (open_count - i - 1) * sizeof(char *));
		open_count--;
		rc = ok();
		goto out;
	}
	rc = fail(RANGEPROF_ENOTOPEN, "annotation '%.200s' is not open", name);
out:
	logf_("rangeprof_annotation_end %s -> %d", name ? name : "(null)", rc);
	pthread_mutex_unlock(&lock);
	return rc;
}

int rangeprof_capture_begin(void)
{
	pthread_mutex_lock(&lock);
	captured_len = 0;
	if (captured)
		captured[0] = '\0';
	capturing = true;
	logf_("rangeprof_capture_begin -> 0");
	pthread_mutex_unlock(&lock);
	return ok();
}

char *rangeprof_capture_take(size_t *length)
{
	pthread_mutex_lock(&lock);
	char *taken = captured_len ? captured : NULL;
	if (length)
		*length = taken ? captured_len : 0;
	if (taken) {
		captured = NULL;
		captured_len = captured_cap = 0;
	}
	logf_("rangeprof_capture_take -> %zu", length ? *length : 0);
	pthread_mutex_unlock(&lock);
	ok();
	return taken;
}

void rangeprof_capture_end(void)
{
	pthread_mutex_lock(&lock);
	capturing = false;
	free(captured);
	captured = NULL;
	captured_len = captured_cap = 0;
	logf_("rangeprof_capture_end");
	pthread_mutex_unlock(&lock);
	ok();
}

void rangeprof_free(void *p)
{
	free(p);
}

const char *rangeprof_last_error(void)
{
	return last_error;
}

int rangeprof_prepare(int device)
{
	pthread_mutex_lock(&lock);
	int rc;
	if (device < -1 || device >= RANGEPROF_MAX_DEVICES)
		rc = fail(RANGEPROF_EINVAL, "rangeprof_prepare: device %d; accepted: -1 or a device "
			  "ordinal from 0 to %d", device, RANGEPROF_MAX_DEVICES - 1);
	else if (!attached)
		rc = fail(RANGEPROF_EUNAVAILABLE, "rangeprof_prepare: call rangeprof_attach first");
	else
		rc = ok();
	logf_("rangeprof_prepare %d -> %d", device, rc);
	pthread_mutex_unlock(&lock);
	return rc;
}

void rangeprof_before_exit(void)
{
	logf_("rangeprof_before_exit");
}
