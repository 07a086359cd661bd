/* tests/unit/inject/control_test.c - the control API (doc/control-api.md) without a GPU.
 * Two halves: control.c and output.c linked here with stand-ins for the session (init.c)
 * and the launch gate (launch.c), to see annotations, captures and the gate; and the
 * built librangeprof.so opened with dlopen (CONTROL_LIB), to see its real option checks
 * as a Python caller meets them. */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "collector/records.h"
#include "common/error.h"
#include "inject/inject.h"
#include "inject/callback/launch.h"
#include "inject/output.h"
#include "inject/rangeprof_control.h"
#include "nvtx_bridge/nvtx_bridge.h"

/* ---- stand-ins for init.c and launch.c --------------------------------------------- */

static int gate_open_count;
static bool gate_controlled;
static char last_option[64], last_value[64];

void inject_launch_control(void) { gate_controlled = true; }
bool inject_launch_controlled(void) { return gate_controlled; }
int inject_launch_open_annotations(void) { return gate_open_count; }
void inject_launch_annotations_open(int delta) { gate_open_count += delta; }
void inject_init_once(void) {}
void inject_init_late(void) {}
void inject_init_attached(void) {}
void inject_init_mark_controller(void) {}
bool inject_init_preloaded(const char *path) { (void)path; return false; }
bool inject_initialised(void) { return true; }
static bool stand_in_measuring, stand_in_early = true;
static int prepared_count, early_waits;
static CUcontext prepared_ctx;
bool inject_init_measuring_possible(char *why, size_t size)
{
	snprintf(why, size, "stand-in: not measuring");
	return stand_in_measuring;
}
bool inject_init_sets_up_early(void) { return stand_in_early; }
static enum inject_early_start stand_in_start = INJECT_EARLY_STARTED;
/* The host half (launch.c): how often and for which device; whether it saw the stand-in
 * driver's retain begin (within 2 s) and what the driver's log held then; then it takes
 * host_ms more. host_until_stopping: it waits instead (within 2 s) for its stopping()
 * to say true, and says whether it did. host_pipe: it writes "done" there as it ends. */
static const char *(*fake_log)(void);
static int host_count, host_device = -1, host_ms = 0, host_pipe = -1;
static bool host_saw_retain, host_until_stopping, host_saw_stopping;
static char host_saw[256];
static atomic_bool host_ended;
static bool set_up_after_host;
static void sleep_ms(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000 };
	nanosleep(&t, NULL);
}
void inject_launch_prepare_host(int device, bool (*stopping)(void))
{
	host_count++;
	host_device = device;
	for (int i = 0; i < 200 && fake_log && !host_saw_retain; i++) {
		snprintf(host_saw, sizeof(host_saw), "%s", fake_log());
		if (!(host_saw_retain = strstr(host_saw, "cuDevicePrimaryCtxRetain") != NULL))
			sleep_ms(10);
	}
	for (int i = 0; i < 200 && host_until_stopping && !host_saw_stopping; i++)
		if (!(host_saw_stopping = stopping()))
			sleep_ms(10);
	sleep_ms(host_ms);
	atomic_store(&host_ended, true);
	if (host_pipe >= 0 && write(host_pipe, "done", 4) != 4)
		abort();
}
enum inject_early_start inject_launch_prepare(CUcontext ctx)
{
	prepared_count++;
	prepared_ctx = ctx;
	set_up_after_host = atomic_load(&host_ended);
	return stand_in_start;
}
void inject_early_wait(void) { early_waits++; }
void inject_init_describe(cJSON *o) { cJSON_AddStringToObject(o, "memory_save", "reach"); }
int inject_init_set_option(const char *name, const char *value, char *err, size_t size)
{
	snprintf(last_option, sizeof(last_option), "%s", name);
	snprintf(last_value, sizeof(last_value), "%s", value);
	if (!strcmp(value, "bad")) {
		snprintf(err, size, "stand-in refuses '%s'", value);
		return RP_ERR_FAILED;
	}
	if (!strcmp(value, "huge")) {
		snprintf(err, size, "rangeprof_set_option(\"%s\"): out of memory", name);
		return RP_ERR_NO_MEMORY;
	}
	return 0;
}

static char output_path[] = "/tmp/rangeprof-control-test-XXXXXX";

static void use_output(void)
{
	int fd = mkstemp(output_path);
	cr_assert_geq(fd, 0);
	close(fd);
	inject_output_configure(output_path);
}

static void record(const char *message)
{
	inject_output_write_record(collector_record_message("warning", message, NULL, NULL));
}

static char *file_text(const char *path)
{
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f);
	static char buf[1 << 16];
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

Test(control, version_is_2)
{
	cr_assert_eq(rangeprof_control_version(), 2);
	cr_assert_eq(RANGEPROF_CONTROL_VERSION, 2);
}

Test(control, attach_closes_the_gate_until_an_annotation_opens)
{
	cr_assert_eq(rangeprof_attach(), RANGEPROF_EUNAVAILABLE,
		     "the stand-in session does not measure: attach says so");
	cr_assert_str_eq(rangeprof_last_error(), "stand-in: not measuring");
	cr_assert(gate_controlled);
	cr_assert_eq(gate_open_count, 0);
	cr_assert_eq(rangeprof_annotation_begin("matmul"), RANGEPROF_OK);
	cr_assert_eq(gate_open_count, 1);
	cr_assert_eq(rangeprof_annotation_begin("softmax"), RANGEPROF_OK);
	cr_assert_eq(gate_open_count, 2);
	cr_assert_eq(rangeprof_annotation_end("matmul"), RANGEPROF_OK);
	cr_assert_eq(rangeprof_annotation_end("softmax"), RANGEPROF_OK);
	cr_assert_eq(gate_open_count, 0);
}

Test(control, an_annotation_is_a_start_end_range_in_domain_rangeprof_on_every_thread)
{
	cr_assert_eq(rangeprof_annotation_begin("attention n=4096"), RANGEPROF_OK);
	const struct nvtx_bridge_snapshot *snap = nvtx_bridge_snapshot();
	cr_assert_eq(snap->count - snap->push_count, 1);
	const struct nvtx_bridge_range *r = &snap->ranges[snap->push_count];
	cr_assert(r->start_end);
	cr_assert_str_eq(r->text, "attention n=4096");
	cr_assert_str_eq(nvtx_bridge_domain_name(r->domain), "rangeprof");
	cr_assert_eq(rangeprof_annotation_end("attention n=4096"), RANGEPROF_OK);
	snap = nvtx_bridge_snapshot();
	cr_assert_eq(snap->count - snap->push_count, 0, "closed: no range left open");
}

Test(control, nesting_an_annotation_in_itself_is_refused_by_name)
{
	cr_assert_eq(rangeprof_annotation_begin("step"), RANGEPROF_OK);
	cr_assert_eq(rangeprof_annotation_begin("step"), RANGEPROF_ENESTED);
	cr_assert(strstr(rangeprof_last_error(), "'step' is already open"),
		  "%s", rangeprof_last_error());
	cr_assert_eq(gate_open_count, 1, "the refused one opened nothing");
	cr_assert_eq(rangeprof_annotation_end("step"), RANGEPROF_OK);
	cr_assert_eq(rangeprof_annotation_end("step"), RANGEPROF_ENOTOPEN);
	cr_assert(strstr(rangeprof_last_error(), "'step' is not open"));
	cr_assert_eq(rangeprof_annotation_begin(""), RANGEPROF_EINVAL);
	cr_assert_eq(rangeprof_annotation_begin(NULL), RANGEPROF_EINVAL);
	cr_assert_eq(rangeprof_annotation_end(NULL), RANGEPROF_EINVAL);
}

Test(control, a_capture_hands_over_exactly_the_lines_the_file_got, .init = use_output)
{
	record("before the capture");
	cr_assert_eq(rangeprof_capture_begin(), RANGEPROF_OK);
	record("first");
	record("second \"quoted\" \xce\xb1");
	size_t len = 99;
	char *taken = rangeprof_capture_take(&len);
	cr_assert_not_null(taken);
	cr_assert_eq(len, strlen(taken));
	const char *file = file_text(output_path);
	const char *first = strstr(file, "{\"type\":\"warning\",\"message\":\"first\"");
	cr_assert_not_null(first, "%s", file);
	cr_assert_str_eq(taken, first, "the capture is the file's text from the capture on");
	rangeprof_free(taken);
	cr_assert_null(rangeprof_capture_take(&len), "taken once");
	cr_assert_eq(len, 0);
	record("third");
	taken = rangeprof_capture_take(&len);
	cr_assert_not_null(taken);
	cr_assert(strstr(taken, "\"third\"") && !strstr(taken, "\"first\""), "%s", taken);
	rangeprof_free(taken);
	rangeprof_capture_end();
	record("after the end");
	cr_assert_null(rangeprof_capture_take(&len), "nothing is kept after the end");
	cr_assert(strstr(file_text(output_path), "after the end"), "the file gets every record");
	unlink(output_path);
}

Test(control, a_capture_holds_a_megabyte_of_records, .init = use_output)
{
	rangeprof_capture_begin();
	char message[1024];
	memset(message, 'x', sizeof(message) - 1);
	message[sizeof(message) - 1] = '\0';
	for (int i = 0; i < 1024; i++)
		record(message);
	size_t len;
	char *taken = rangeprof_capture_take(&len);
	cr_assert_not_null(taken);
	size_t lines = 0;
	for (size_t i = 0; i < len; i++)
		lines += taken[i] == '\n';
	cr_assert_eq(lines, 1024);
	rangeprof_free(taken);
	rangeprof_capture_end();
	unlink(output_path);
}

Test(control, a_new_capture_hears_a_report_said_before, .init = use_output)
{
	rangeprof_capture_begin();
	inject_output_report(INJECT_REPORT_METRIC_SET,
			     INJECT_CONCERNS(.metric = "nope__x.sum"), true,
		      "unknown metric nope__x.sum");
	inject_output_report(INJECT_REPORT_METRIC_SET,
			     INJECT_CONCERNS(.metric = "nope__x.sum"), true,
		      "unknown metric nope__x.sum");
	size_t len;
	char *taken = rangeprof_capture_take(&len);
	cr_assert_not_null(taken);
	size_t said = 0;
	for (const char *p = taken; (p = strstr(p, "unknown metric nope__x.sum")); p++)
		said++;
	cr_assert_eq(said, 1, "said once within a capture: %s", taken);
	rangeprof_free(taken);
	rangeprof_capture_end();
	rangeprof_capture_begin();
	inject_output_report(INJECT_REPORT_METRIC_SET,
			     INJECT_CONCERNS(.metric = "nope__x.sum"), true,
		      "unknown metric nope__x.sum");
	taken = rangeprof_capture_take(&len);
	cr_assert_not_null(taken, "said again in the next capture");
	rangeprof_free(taken);
	rangeprof_capture_end();
	unlink(output_path);
}

Test(control, set_option_hands_the_value_on_and_returns_einval_with_the_message)
{
	cr_assert_eq(rangeprof_set_option("runs", "20"), RANGEPROF_OK);
	cr_assert_str_eq(last_option, "runs");
	cr_assert_str_eq(last_value, "20");
	cr_assert_str_eq(rangeprof_last_error(), "");
	cr_assert_eq(rangeprof_set_option("runs", "bad"), RANGEPROF_EINVAL);
	cr_assert_str_eq(rangeprof_last_error(), "stand-in refuses 'bad'");
	cr_assert_eq(rangeprof_set_option(NULL, "1"), RANGEPROF_EINVAL);
	cr_assert_eq(rangeprof_set_option("runs", NULL), RANGEPROF_EINVAL);
	/* Decided on the code (common/error.h), the message handed on as it is. */
	cr_assert_eq(rangeprof_set_option("metrics", "huge"), RANGEPROF_ENOMEM);
	cr_assert_str_eq(rangeprof_last_error(),
			 "rangeprof_set_option(\"metrics\"): out of memory");
}

Test(control, info_is_json_naming_the_state)
{
	rangeprof_attach();
	rangeprof_annotation_begin("x");
	char *text = rangeprof_info();
	cr_assert_not_null(text);
	cJSON *o = cJSON_Parse(text);
	cr_assert_not_null(o, "%s", text);
	cr_assert_eq(cJSON_GetObjectItem(o, "control_version")->valuedouble, 2);
	cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(o, "attached")));
	cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(o, "measuring")));
	cr_assert_str_eq(cJSON_GetObjectItem(o, "reason")->valuestring, "stand-in: not measuring");
	cr_assert_eq(cJSON_GetObjectItem(o, "annotations_open")->valuedouble, 1);
	/* Both from select.c's gate (the stand-ins here), not from a copy in control.c. */
	cr_assert_eq(cJSON_IsTrue(cJSON_GetObjectItem(o, "controlled")), gate_controlled);
	gate_open_count += 5;
	char *again = rangeprof_info();
	cJSON *o2 = cJSON_Parse(again);
	cr_assert_eq(cJSON_GetObjectItem(o2, "annotations_open")->valuedouble, 6,
		     "info reads the gate's count");
	gate_open_count -= 5;
	cJSON_Delete(o2);
	rangeprof_free(again);
	cr_assert(cJSON_IsNumber(cJSON_GetObjectItem(o, "nvtx_modules")));
	cr_assert_str_eq(cJSON_GetObjectItem(o, "memory_save")->valuestring, "reach");
	cJSON_Delete(o);
	rangeprof_free(text);
	rangeprof_annotation_end("x");
}

/* ---- the real library, as ctypes sees it -------------------------------------------- */

static void *lib;
static int (*real_set)(const char *, const char *);
static const char *(*real_error)(void);
static int (*real_attach)(void);
static char *(*real_info)(void);

static void open_library(void)
{
	unsetenv("CUDA_INJECTION64_PATH");
	unsetenv("NVTX_INJECTION64_PATH");
	const char *path = getenv("CONTROL_LIB");
	cr_assert_not_null(path, "CONTROL_LIB names the built librangeprof.so");
	lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	cr_assert_not_null(lib, "%s", dlerror());
	real_set = (int (*)(const char *, const char *))dlsym(lib, "rangeprof_set_option");
	real_error = (const char *(*)(void))dlsym(lib, "rangeprof_last_error");
	real_attach = (int (*)(void))dlsym(lib, "rangeprof_attach");
	real_info = (char *(*)(void))dlsym(lib, "rangeprof_info");
	cr_assert(real_set && real_error && real_attach && real_info);
}

Test(library, options_that_change_at_run_time_are_checked_like_the_launchers,
     .init = open_library)
{
	cr_assert_eq(real_set("runs", "20"), RANGEPROF_OK, "%s", real_error());
	cr_assert_eq(real_set("runs", "auto"), RANGEPROF_OK, "%s", real_error());
	cr_assert_eq(real_set("metrics", "gpu__time_duration.sum,dram__bytes_read.sum"),
		     RANGEPROF_OK, "%s", real_error());
	cr_assert_eq(real_set("cache-control", "none"), RANGEPROF_OK, "%s", real_error());
	cr_assert_eq(real_set("thermal-control", "off"), RANGEPROF_OK, "%s", real_error());

	cr_assert_eq(real_set("runs", "0"), RANGEPROF_EINVAL);
	cr_assert(strstr(real_error(), "rangeprof_set_option(\"runs\") '0'"), "%s", real_error());
	cr_assert_eq(real_set("cache-control", "some"), RANGEPROF_EINVAL);
	cr_assert(strstr(real_error(), "'some'") && strstr(real_error(), "all"), "%s",
		  real_error());
	cr_assert_eq(real_set("runs", ""), RANGEPROF_EINVAL);
}

Test(library, a_contradiction_between_two_given_options_is_refused_and_undone,
     .init = open_library)
{
	cr_assert_eq(real_set("runs-max", "20"), RANGEPROF_OK, "%s", real_error());
	cr_assert_eq(real_set("runs-min", "50"), RANGEPROF_EINVAL);
	cr_assert(strstr(real_error(), "runs-min") && strstr(real_error(), "runs-max"), "%s",
		  real_error());
	cr_assert_eq(real_set("runs-min", "10"), RANGEPROF_OK, "the refused value was undone: "
		     "%s", real_error());
}

Test(library, options_fixed_at_start_up_and_unknown_ones_are_named, .init = open_library)
{
	cr_assert_eq(real_set("output", "/tmp/x.jsonl"), RANGEPROF_EINVAL);
	cr_assert(strstr(real_error(), "RANGEPROF_OUTPUT before the process starts"), "%s",
		  real_error());
	cr_assert_eq(real_set("nvtx-include", "a/"), RANGEPROF_EINVAL);
	cr_assert_eq(real_set("run", "5"), RANGEPROF_EINVAL);
	cr_assert(strstr(real_error(), "'run' is unknown") && strstr(real_error(), "runs, "),
		  "%s", real_error());
}

/* Whether this machine has a CUDA driver of its own (then the tests without one skip). */
static bool real_driver(void)
{
	void *cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
	if (!cuda)
		cuda = dlopen("libcuda.so.1", RTLD_LAZY);
	return cuda != NULL;
}

/* The stand-in driver (fake_libcuda.c), loaded before the library asks for libcuda.so.1. */
static bool fake_driver_loaded;
static void open_library_with_driver(void)
{
	const char *fake = getenv("FAKE_LIBCUDA");
	cr_assert_not_null(fake, "FAKE_LIBCUDA names the stand-in driver");
	if (!real_driver()) {
		cr_assert_not_null(dlopen(fake, RTLD_NOW | RTLD_GLOBAL), "%s", dlerror());
		fake_driver_loaded = true;
	}
	open_library();
}

/* ---- rangeprof_prepare, with the stand-ins above and the stand-in driver ------------ */

static void use_fake_driver(void)
{
	if (real_driver())
		cr_skip_test("this machine has a CUDA driver: prepare would start it");
	const char *fake = getenv("FAKE_LIBCUDA");
	cr_assert_not_null(fake, "FAKE_LIBCUDA names the stand-in driver");
	void *h = dlopen(fake, RTLD_NOW | RTLD_GLOBAL);
	cr_assert_not_null(h, "%s", dlerror());
	fake_log = (const char *(*)(void))dlsym(h, "fake_cuda_log");
	cr_assert_not_null(fake_log);
	stand_in_measuring = true;
	cr_assert_eq(rangeprof_attach(), RANGEPROF_OK, "%s", rangeprof_last_error());
}

/* Waits (at most 5 s) until device's prepare thread has said what it met. */
static void wait_prepared(int device);

/* info's "prepare" entry of device (its result), "(none)" when there is none; every entry
 * names a device asked for once. */
static const char *prepare_result_of(int device)
{
	static char result[256];
	char *text = rangeprof_info();
	cJSON *o = cJSON_Parse(text);
	cr_assert_not_null(o, "%s", text);
	rangeprof_free(text);
	snprintf(result, sizeof(result), "(none)");
	const cJSON *list = cJSON_GetObjectItem(o, "prepare"), *p;
	cr_assert(cJSON_IsArray(list) || cJSON_IsNull(list));
	int found = 0;
	cJSON_ArrayForEach(p, list)
		if (cJSON_GetObjectItem(p, "device")->valuedouble == device) {
			found++;
			snprintf(result, sizeof(result), "%s",
				 cJSON_GetObjectItem(p, "result")->valuestring);
		}
	cr_assert_leq(found, 1, "device %d listed %d times", device, found);
	cJSON_Delete(o);
	return result;
}

static void wait_prepared(int device)
{
	for (int i = 0; i < 500; i++) {
		const char *r = prepare_result_of(device);
		if (strcmp(r, "") && strcmp(r, "(none)"))
			return;
		struct timespec t = { 0, 10 * 1000 * 1000 };
		nanosleep(&t, NULL);
	}
	cr_assert_fail("device %d's prepare thread said nothing in 5 s", device);
}

Test(prepare, a_device_below_minus_one_or_past_the_last_is_refused_by_value)
{
	cr_assert_eq(rangeprof_prepare(-2), RANGEPROF_EINVAL);
	cr_assert(strstr(rangeprof_last_error(), "device -2") &&
		  strstr(rangeprof_last_error(), "accepted: -1"), "%s", rangeprof_last_error());
	cr_assert_eq(rangeprof_prepare(64), RANGEPROF_EINVAL);
	cr_assert(strstr(rangeprof_last_error(), "device 64"), "%s", rangeprof_last_error());
}

Test(prepare, before_attach_it_is_refused_naming_attach)
{
	cr_assert_eq(rangeprof_prepare(0), RANGEPROF_EUNAVAILABLE);
	cr_assert(strstr(rangeprof_last_error(), "rangeprof_attach"), "%s",
		  rangeprof_last_error());
}

Test(prepare, where_nothing_is_measured_it_says_why)
{
	cr_assert_eq(rangeprof_attach(), RANGEPROF_EUNAVAILABLE);
	cr_assert_eq(rangeprof_prepare(0), RANGEPROF_EUNAVAILABLE);
	cr_assert_str_eq(rangeprof_last_error(), "stand-in: not measuring");
}

Test(prepare, starts_the_driver_and_the_devices_set_up_once_on_a_thread_of_its_own,
     .init = use_fake_driver)
{
	setenv("FAKE_CUDA_DEVICES", "2", 1);
	cr_assert_eq(rangeprof_prepare(1), RANGEPROF_OK, "%s", rangeprof_last_error());
	cr_assert_eq(rangeprof_prepare(1), RANGEPROF_OK, "asked again: nothing more starts");
	wait_prepared(1);
	rangeprof_before_exit();
	cr_assert_str_eq(fake_log(), "cuInit(0) cuDeviceGet(1) cuDevicePrimaryCtxRetain(1) "
			 "cuCtxSetCurrent(1) ");
	cr_assert_eq(prepared_count, 1, "the set-up was started once");
	cr_assert_not_null(prepared_ctx);
	cr_assert_eq(early_waits, 1, "before_exit waits for the set-ups too");
	cr_assert_str_eq(prepare_result_of(1), "set-up started");
	void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	int (*get_current)(void **) = (int (*)(void **))dlsym(cuda, "cuCtxGetCurrent");
	void *current = (void *)1;
	cr_assert(get_current && !get_current(&current));
	cr_assert_null(current, "the context was made current on a thread of its own, not "
		       "the caller's");
}

Test(prepare, the_host_half_runs_beside_the_contexts_creation_and_ends_before_the_set_up,
     .init = use_fake_driver)
{
	setenv("FAKE_CUDA_DEVICES", "2", 1);
	setenv("FAKE_CUDA_RETAIN_MS", "300", 1);
	host_ms = 500; /* it outlasts the retain: the set-up must wait for it */
	cr_assert_eq(rangeprof_prepare(1), RANGEPROF_OK, "%s", rangeprof_last_error());
	wait_prepared(1);
	rangeprof_before_exit();
	cr_assert_eq(host_count, 1);
	cr_assert_eq(host_device, 1);
	cr_assert(host_saw_retain, "the host half ran while the context was being made: it saw "
		  "the retain begin (log: %s)", host_saw);
	cr_assert_str_eq(host_saw, "cuInit(0) cuDeviceGet(1) cuDevicePrimaryCtxRetain(1) ",
			 "and not yet end (the stand-in's retain takes 300 ms)");
	cr_assert_eq(prepared_count, 1);
	cr_assert(set_up_after_host, "the set-up started after the host half had ended");
}

Test(prepare, before_exit_stops_a_host_half_under_way, .init = use_fake_driver)
{
	setenv("FAKE_CUDA_RETAIN_MS", "100", 1);
	host_until_stopping = true;
	cr_assert_eq(rangeprof_prepare(0), RANGEPROF_OK, "%s", rangeprof_last_error());
	sleep_ms(200);
	rangeprof_before_exit();
	cr_assert_eq(host_count, 1);
	cr_assert(host_saw_stopping, "the host half's stopping() said true once "
		  "rangeprof_before_exit was called");
	cr_assert(atomic_load(&host_ended), "and the exit waited for it");
}

/* A program that exits without rangeprof_before_exit, once the host half has begun: the
 * handler the first prepare registered waits for it (it writes "done" as it ends, 300 ms
 * in). (An exit before the prepare thread runs starts nothing: prepare_run sees it.) */
Test(prepare, exit_without_before_exit_waits_for_the_host_half, .init = use_fake_driver)
{
	int fds[2];
	cr_assert_eq(pipe(fds), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		close(fds[0]);
		host_pipe = fds[1];
		host_ms = 300;
		if (rangeprof_prepare(0) != RANGEPROF_OK)
			_exit(3);
		sleep_ms(100); /* the host half has begun its 300 ms */
		exit(0); /* atexit handlers run; the host half is still sleeping */
	}
	close(fds[1]);
	char done[8] = "";
	ssize_t n = read(fds[0], done, 4);
	close(fds[0]);
	int status;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child ended badly");
	cr_assert(n == 4 && !memcmp(done, "done", 4), "the process ended before its host half");
}

Test(prepare, minus_one_is_the_callers_current_device_else_0, .init = use_fake_driver)
{
	setenv("FAKE_CUDA_DEVICES", "2", 1);
	cr_assert_eq(rangeprof_prepare(-1), RANGEPROF_OK, "%s", rangeprof_last_error());
	wait_prepared(0);
	rangeprof_before_exit();
	cr_assert_str_eq(fake_log(), "cuInit(0) cuDeviceGet(0) cuDevicePrimaryCtxRetain(0) "
			 "cuCtxSetCurrent(0) ", "no current context: device 0");
}

Test(prepare, minus_one_follows_a_current_context, .init = use_fake_driver)
{
	setenv("FAKE_CUDA_DEVICES", "2", 1);
	void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	int (*retain)(void **, int) = (int (*)(void **, int))dlsym(cuda, "cuDevicePrimaryCtxRetain");
	int (*set_current)(void *) = (int (*)(void *))dlsym(cuda, "cuCtxSetCurrent");
	void *ctx;
	cr_assert(retain && set_current && !retain(&ctx, 1) && !set_current(ctx));
	cr_assert_eq(rangeprof_prepare(-1), RANGEPROF_OK, "%s", rangeprof_last_error());
	wait_prepared(1);
	rangeprof_before_exit();
	cr_assert(strstr(fake_log(), "cuInit(0) cuDeviceGet(1) "), "%s", fake_log());
}

Test(prepare, a_device_the_driver_does_not_have_is_said_in_info, .init = use_fake_driver)
{
	setenv("FAKE_CUDA_DEVICES", "1", 1);
	cr_assert_eq(rangeprof_prepare(3), RANGEPROF_OK, "%s", rangeprof_last_error());
	wait_prepared(3);
	rangeprof_before_exit();
	cr_assert_eq(prepared_count, 0);
	cr_assert_eq(host_count, 0, "no host half for a device the driver does not have");
	const char *result = prepare_result_of(3);
	cr_assert(strstr(result, "cuDeviceGet failed") && strstr(result, "no such device"), "%s",
		  result);
}

Test(prepare, lazy_set_up_or_a_clock_lock_prepares_nothing, .init = use_fake_driver)
{
	stand_in_early = false;
	cr_assert_eq(rangeprof_prepare(0), RANGEPROF_OK, "%s", rangeprof_last_error());
	rangeprof_before_exit();
	cr_assert_str_eq(fake_log(), "");
	cr_assert_eq(prepared_count, 0);
}

Test(prepare, after_before_exit_nothing_starts, .init = use_fake_driver)
{
	rangeprof_before_exit();
	cr_assert_eq(rangeprof_prepare(0), RANGEPROF_OK, "%s", rangeprof_last_error());
	rangeprof_before_exit();
	cr_assert_str_eq(fake_log(), "");
}

Test(prepare, each_device_has_its_own_result_and_one_under_way_is_empty,
     .init = use_fake_driver)
{
	setenv("FAKE_CUDA_DEVICES", "1", 1);
	setenv("FAKE_CUDA_INIT_MS", "300", 1);
	stand_in_start = INJECT_EARLY_ALREADY;
	cr_assert_str_eq(prepare_result_of(0), "(none)", "nothing asked yet: null");
	cr_assert_eq(rangeprof_prepare(0), RANGEPROF_OK, "%s", rangeprof_last_error());
	cr_assert_str_eq(prepare_result_of(0), "", "under way (cuInit takes 300 ms here)");
	unsetenv("FAKE_CUDA_INIT_MS");
	cr_assert_eq(rangeprof_prepare(5), RANGEPROF_OK, "%s", rangeprof_last_error());
	wait_prepared(0);
	wait_prepared(5);
	rangeprof_before_exit();
	cr_assert_str_eq(prepare_result_of(0), "set up already, or under way");
	cr_assert(strstr(prepare_result_of(5), "no such device"), "device 5's failure is kept "
		  "beside device 0's result: %s", prepare_result_of(5));
}

Test(prepare, a_set_up_that_does_not_start_is_said, .init = use_fake_driver)
{
	stand_in_start = INJECT_EARLY_OFF;
	cr_assert_eq(rangeprof_prepare(0), RANGEPROF_OK, "%s", rangeprof_last_error());
	wait_prepared(0);
	rangeprof_before_exit();
	cr_assert(strstr(prepare_result_of(0), "no set-up ahead"), "%s", prepare_result_of(0));
}

Test(prepare, a_forked_child_waits_for_nothing_and_starts_nothing, .init = use_fake_driver)
{
	cr_assert_eq(rangeprof_prepare(0), RANGEPROF_OK, "%s", rangeprof_last_error());
	wait_prepared(0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		/* The parent's thread is not here: the wait returns at once, the lock works. */
		struct timespec t0, t1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		rangeprof_before_exit();
		clock_gettime(CLOCK_MONOTONIC, &t1);
		double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
		int rc = s < 1.0 ? 0 : 3;
		if (rangeprof_prepare(1) != RANGEPROF_OK)
			rc = 4;
		char *text = rangeprof_info();
		if (!text)
			rc = 5;
		rangeprof_free(text);
		_exit(rc);
	}
	int status = 0;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child's status: %d", status);
	rangeprof_before_exit();
	cr_assert_eq(prepared_count, 1, "the parent's set-up alone");
}

static cJSON *info_object(void)
{
	char *text = real_info();
	cJSON *o = cJSON_Parse(text);
	cr_assert_not_null(o, "%s", text);
	free(text);
	return o;
}

Test(library, attach_without_cuda_waits_for_cuinit_and_says_so_in_info,
     .init = open_library_with_driver)
{
	cr_assert_not_null(getenv("NVTX_INJECTION64_PATH"), "loading points NVTX's hook here");
	cr_assert_null(getenv("CUDA_INJECTION64_PATH"), "but not CUDA's: a library loaded by "
		       "NVTX in a notebook's child must not make the child measure");
	cr_assert_eq(real_attach(), RANGEPROF_OK, "%s", real_error());
	const char *hook = getenv("CUDA_INJECTION64_PATH");
	cr_assert(hook && strstr(hook, "librangeprof.so"), "attach points CUDA's hook here for "
		  "cuInit: %s", hook ? hook : "(unset)");
	char pid[32];
	snprintf(pid, sizeof(pid), "%ld", (long)getpid());
	cr_assert_str_eq(getenv("RANGEPROF_CONTROL_PID"), pid, "children know who attached");
	cJSON *o = info_object();
	cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(o, "attached")));
	cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(o, "initialised")), "no cuInit here");
	cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(o, "late_attach")));
	cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(o, "measuring")), "a driver is there");
	cr_assert(cJSON_IsNull(cJSON_GetObjectItem(o, "reason")));
	cJSON_Delete(o);
}

Test(library, without_a_driver_attach_and_info_say_nothing_is_measured_and_why,
     .init = open_library)
{
	if (real_driver())
		cr_skip_test("this machine has a CUDA driver");
	cr_assert_eq(real_attach(), RANGEPROF_OK, "nothing to refuse: a process without a GPU "
		     "may import rangeprof to read records");
	cr_assert_null(getenv("CUDA_INJECTION64_PATH"), "no hook for a driver that is not there");
	cJSON *o = info_object();
	cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(o, "measuring")));
	const cJSON *reason = cJSON_GetObjectItem(o, "reason");
	cr_assert(cJSON_IsString(reason) && strstr(reason->valuestring, "no CUDA driver") &&
		  strstr(reason->valuestring, "libcuda.so.1"), "%s", cJSON_Print(o));
	cJSON_Delete(o);
}

Test(library, quiet_and_children_change_at_run_time_with_the_flag_values,
     .init = open_library_with_driver)
{
	static const char *const on[] = { "true", "1", "yes", "TRUE" };
	static const char *const off[] = { "false", "0", "no" };
	for (size_t i = 0; i < sizeof(on) / sizeof(on[0]); i++)
		cr_assert_eq(real_set("quiet", on[i]), RANGEPROF_OK, "%s: %s", on[i], real_error());
	for (size_t i = 0; i < sizeof(off) / sizeof(off[0]); i++)
		cr_assert_eq(real_set("quiet", off[i]), RANGEPROF_OK, "%s: %s", off[i], real_error());
	cr_assert_eq(real_set("quiet", "maybe"), RANGEPROF_EINVAL);
	cr_assert(strstr(real_error(), "'maybe'") && strstr(real_error(), "'true'"), "%s",
		  real_error());
	cr_assert_eq(real_set("replay-mode", "range"), RANGEPROF_OK, "%s", real_error());
	cr_assert_eq(real_set("kernel-name", "gemm"), RANGEPROF_EINVAL, "-k shapes the session");
	cr_assert(strstr(real_error(), "RANGEPROF_KERNEL_NAME"), "%s", real_error());

	cr_assert_eq(real_attach(), RANGEPROF_OK, "%s", real_error());
	cr_assert_eq(real_set("children", "true"), RANGEPROF_OK, "%s", real_error());
	cr_assert_str_eq(getenv("RANGEPROF_CHILDREN"), "1");
	cr_assert_not_null(getenv("CUDA_INJECTION64_PATH"));
	cr_assert_eq(real_set("children", "false"), RANGEPROF_OK, "%s", real_error());
	cr_assert_null(getenv("RANGEPROF_CHILDREN"));
	cr_assert_not_null(getenv("CUDA_INJECTION64_PATH"), "kept until this process's cuInit "
			   "has read it");
}

Test(library, prepare_without_rangeprofs_init_in_cuinit_says_so_in_info,
     .init = open_library_with_driver)
{
	if (!fake_driver_loaded)
		cr_skip_test("this machine has a CUDA driver: prepare would start it");
	int (*prepare)(int) = (int (*)(int))dlsym(lib, "rangeprof_prepare");
	void (*before_exit)(void) = (void (*)(void))dlsym(lib, "rangeprof_before_exit");
	cr_assert(prepare && before_exit, "the library exports version 2's functions");
	cr_assert_eq(real_attach(), RANGEPROF_OK, "%s", real_error());
	cr_assert_eq(prepare(0), RANGEPROF_OK, "%s", real_error());
	for (int i = 0; i < 500; i++) { /* the thread's answer, before exit */
		cJSON *w = info_object();
		const cJSON *l = cJSON_GetObjectItem(w, "prepare");
		bool said = cJSON_IsArray(l) &&
			    *cJSON_GetObjectItem(cJSON_GetArrayItem(l, 0), "result")->valuestring;
		cJSON_Delete(w);
		if (said)
			break;
		struct timespec t = { 0, 10 * 1000 * 1000 };
		nanosleep(&t, NULL);
	}
	before_exit();
	cJSON *o = info_object();
	const cJSON *list = cJSON_GetObjectItem(o, "prepare");
	cr_assert(cJSON_IsArray(list) && cJSON_GetArraySize(list) == 1, "%s", cJSON_Print(o));
	const cJSON *p = cJSON_GetArrayItem(list, 0);
	cr_assert_eq(cJSON_GetObjectItem(p, "device")->valuedouble, 0);
	const char *result = cJSON_GetObjectItem(p, "result")->valuestring;
	/* The stand-in's cuInit loads no injection: the driver started, the set-up could not. */
	cr_assert(strstr(result, "the driver started; no set-up ahead"), "%s", result);
	cJSON_Delete(o);
}
