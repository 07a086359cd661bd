/* tests/unit/inject/init_test.c - the session's set-up (inject/init.c) with the real
 * output.c and the options of common/: what init does with the environment's options, the
 * CUPTI subscription, the session record, a late attach, the control API's attach and its
 * runtime options (taken under the replay lock), forks, and the line at exit. launch.c,
 * session.c, early.c and collector/api.c are stand-ins here that log what init asked of
 * them. Each test runs in its own process (Criterion forks it), so init runs once in each,
 * as in a real process. No GPU. */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collector/api.h"
#include "common/error.h"
#include "inject/inject.h"
#include "inject/callback/launch.h"
#include "inject/output.h"

/* ---- stand-ins, each logging its call ------------------------------------------- */

static char calls[4096];

static void said(const char *what)
{
	strncat(calls, what, sizeof(calls) - strlen(calls) - 2);
	strcat(calls, " ");
}

struct rp_api rp_api;
static CUptiResult subscribe_result = CUPTI_SUCCESS;
static int api_load_result;
static bool replay_held;
static struct inject_config configured;
static bool range_mode;
static int enable_result, configure_result;

static CUptiResult subscribe(CUpti_SubscriberHandle *s, CUpti_CallbackFunc f, void *data)
{
	(void)f, (void)data;
	*s = (CUpti_SubscriberHandle)0x5b;
	said("subscribe");
	return subscribe_result;
}

int collector_api_load(const char *lib_dir, char *err, size_t err_size)
{
	(void)lib_dir;
	said("api_load");
	rp_api.cuptiSubscribe = subscribe;
	if (api_load_result)
		snprintf(err, err_size, "stand-in: no CUPTI here");
	return api_load_result;
}

static const struct collector_cupti_info cupti_info = { .path = "/fake/libcupti.so.13",
							.found = "the test", .version = 130000 };

const struct collector_cupti_info *collector_api_cupti(void)
{
	return &cupti_info;
}

const char *collector_cupti_error(CUptiResult r)
{
	return r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED ?
		"CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED" : "CUPTI_ERROR_UNKNOWN";
}

int inject_launch_configure(const struct rp_options *opts, char *err, size_t err_size)
{
	(void)opts;
	said("launch_configure");
	if (configure_result)
		snprintf(err, err_size, "stand-in: the filters refused");
	return configure_result;
}

int inject_launch_enable(CUpti_SubscriberHandle sub, char *err, size_t err_size)
{
	(void)sub;
	said("launch_enable");
	if (enable_result)
		snprintf(err, err_size, "cuptiEnableCallback: stand-in refusal");
	return enable_result;
}

int inject_launch_set_range_mode(bool on, char *err, size_t err_size)
{
	(void)err, (void)err_size;
	cr_assert(replay_held || !inject_output_measuring(),
		  "range mode switched at run time without the replay lock");
	range_mode = on;
	said(on ? "range_on" : "range_off");
	return 0;
}

void CUPTIAPI inject_launch_callback(void *userdata, CUpti_CallbackDomain domain,
				     CUpti_CallbackId cbid, const void *data)
{
	(void)userdata, (void)domain, (void)cbid, (void)data;
}

void inject_launch_lock_replay(void)
{
	cr_assert_not(replay_held);
	replay_held = true;
}

void inject_launch_unlock_replay(void)
{
	cr_assert(replay_held);
	replay_held = false;
}

void inject_launch_report_totals(void) { said("launch_totals"); }
void inject_launch_counts(struct collector_launch_counts *c)
{
	*c = (struct collector_launch_counts){ .launches = 3 };
}
void inject_session_report_totals(void) { said("replay_totals"); }
void inject_session_fork_child(void) { said("replay_fork_child"); }
void inject_early_fork_child(void) { said("early_fork_child"); }
bool inject_early_enabled(void) { return true; }

void inject_session_configure(const struct inject_config *config)
{
	cr_assert(replay_held || !inject_output_measuring(),
		  "the configuration changed at run time without the replay lock");
	configured = *config;
	said("replay_configure");
}

size_t mem_backup_host_limit(void)
{
	return 1 << 20;
}

size_t collector_checkpoint_host_reserve_mb(void)
{
	return 64;
}

/* ---- set-up ---------------------------------------------------------------------- */

static char output[] = "/tmp/rangeprof-init-test-XXXXXX";

static void set_up(void)
{
	int fd = mkstemp(output);
	cr_assert_geq(fd, 0);
	close(fd);
	setenv("RANGEPROF_OUTPUT", output, 1);
	setenv("RANGEPROF_QUIET", "1", 1);
	unsetenv("RANGEPROF_CHILDREN");
	unsetenv("CUDA_INJECTION64_PATH");
	unsetenv("RANGEPROF_CONTROL_PID");
}

static void tear_down(void)
{
	unlink(output);
}

TestSuite(init, .init = set_up, .fini = tear_down);

/* The records written to the output so far, parsed: types joined by spaces. */
static const char *record_types(void)
{
	static char types[1024];
	types[0] = '\0';
	FILE *f = fopen(output, "r");
	cr_assert_not_null(f);
	char line[65536];
	while (fgets(line, sizeof(line), f)) {
		cJSON *r = cJSON_Parse(line);
		cr_assert_not_null(r, "not JSON: %s", line);
		const cJSON *t = cJSON_GetObjectItem(r, "type");
		strncat(types, t->valuestring, sizeof(types) - strlen(types) - 2);
		strcat(types, " ");
		cJSON_Delete(r);
	}
	fclose(f);
	return types;
}

/* The first record of type, NULL when none. */
static cJSON *first_record(const char *type)
{
	FILE *f = fopen(output, "r");
	cr_assert_not_null(f);
	char line[65536];
	cJSON *found = NULL;
	while (!found && fgets(line, sizeof(line), f)) {
		cJSON *r = cJSON_Parse(line);
		if (r && !strcmp(cJSON_GetObjectItem(r, "type")->valuestring, type))
			found = r;
		else
			cJSON_Delete(r);
	}
	fclose(f);
	return found;
}

/* ---- init at cuInit ---------------------------------------------------------------- */

Test(init, init_subscribes_enables_the_callbacks_and_writes_the_session_record)
{
	setenv("RANGEPROF_RUNS", "7", 1);
	inject_init_once();
	cr_assert_str_eq(calls, "launch_configure api_load replay_configure subscribe "
			 "launch_enable range_off ");
	cr_assert(inject_initialised());
	char why[256] = "";
	cr_assert(inject_init_measuring_possible(why, sizeof(why)), "%s", why);
	cr_assert_eq(configured.runs, 7);
	cr_assert_eq(configured.warm_up_ranges, 0, "not attached through the control API");
	cJSON *session = first_record("session");
	cr_assert_not_null(session, "records: %s", record_types());
	cr_assert_eq(cJSON_GetObjectItem(session, "pid")->valuedouble, (double)getpid());
	cJSON_Delete(session);
	inject_init_once();
	cr_assert_str_eq(calls, "launch_configure api_load replay_configure subscribe "
			 "launch_enable range_off ", "once only");
}

Test(init, bad_options_in_the_environment_are_refused_and_kept_for_info)
{
	setenv("RANGEPROF_RUNS", "many", 1);
	inject_init_once();
	cr_assert_str_eq(calls, "", "nothing set up");
	char why[2048] = "";
	cr_assert_not(inject_init_measuring_possible(why, sizeof(why)));
	cr_assert(strstr(why, "RANGEPROF_RUNS"), "%s", why);
}

Test(init, an_output_that_cannot_be_written_is_refused)
{
	setenv("RANGEPROF_OUTPUT", "/nonexistent-dir/rangeprof.jsonl", 1);
	inject_init_once();
	char why[2048] = "";
	cr_assert_not(inject_init_measuring_possible(why, sizeof(why)));
	cr_assert(strstr(why, "nonexistent-dir"), "%s", why);
	cr_assert_str_eq(calls, "");
}

Test(init, filters_the_launch_side_refuses_stop_init)
{
	configure_result = -1;
	inject_init_once();
	char why[2048] = "";
	cr_assert_not(inject_init_measuring_possible(why, sizeof(why)));
	cr_assert_str_eq(why, "stand-in: the filters refused");
}

Test(init, a_missing_cupti_stops_init_with_its_reason)
{
	api_load_result = -1;
	inject_init_once();
	char why[2048] = "";
	cr_assert_not(inject_init_measuring_possible(why, sizeof(why)));
	cr_assert_str_eq(why, "stand-in: no CUPTI here");
}

Test(init, another_cupti_client_is_named_as_the_reason)
{
	subscribe_result = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
	inject_init_once();
	char why[2048] = "";
	cr_assert_not(inject_init_measuring_possible(why, sizeof(why)));
	cr_assert(strstr(why, "another CUPTI client"), "%s", why);
	cr_assert_not(strstr(calls, "launch_enable"));
}

Test(init, callbacks_cupti_refuses_stop_init)
{
	enable_result = -1;
	inject_init_once();
	char why[2048] = "";
	cr_assert_not(inject_init_measuring_possible(why, sizeof(why)));
	cr_assert(strstr(why, "cuptiEnableCallback"), "%s", why);
}

Test(init, range_mode_at_start_up_switches_the_hooks_on_and_warns_without_a_filter)
{
	setenv("RANGEPROF_REPLAY_MODE", "range", 1);
	inject_init_once();
	cr_assert(range_mode);
	char why[256] = "";
	cr_assert(inject_init_measuring_possible(why, sizeof(why)), "%s", why);
}

/* ---- the control API's attach ------------------------------------------------------ */

Test(init, a_late_attach_saves_whole_memory_and_says_why)
{
	inject_init_attached();
	inject_init_late();
	cr_assert_eq(configured.memory_save, RP_MEMORY_SAVE_CHECKPOINT);
	cr_assert_eq(configured.warm_up_ranges, 48, "attached: measurements warm up for 24 runs");
	cr_assert(strstr(record_types(), "warning"), "the late-attach warning: %s",
		  record_types());
	cJSON *info = cJSON_CreateObject();
	inject_init_describe(info);
	cr_assert_str_eq(cJSON_GetObjectItem(info, "memory_save")->valuestring, "checkpoint");
	cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(info, "cupti"), "path")
			 ->valuestring, "/fake/libcupti.so.13");
	cr_assert_str_eq(cJSON_GetObjectItem(info, "output")->valuestring, output);
	cJSON_Delete(info);
}

Test(init, a_runtime_option_is_set_under_the_replay_lock_and_reconfigures_the_replay)
{
	inject_init_once();
	calls[0] = '\0';
	char err[2048] = "";
	cr_assert_eq(inject_init_set_option("runs", "9", err, sizeof(err)), 0, "%s", err);
	cr_assert_not(replay_held, "let go after");
	cr_assert_eq(configured.runs, 9);
	cr_assert_eq(inject_init_set_option("replay-mode", "range", err, sizeof(err)), 0, "%s", err);
	cr_assert(range_mode);
	cr_assert_str_eq(calls, "replay_configure replay_configure range_on ");
	cr_assert_neq(inject_init_set_option("runs", "0", err, sizeof(err)), 0);
	cr_assert(strstr(err, "runs"), "%s", err);
	cr_assert_eq(configured.runs, 9, "a refused value changes nothing");
}

Test(init, an_option_set_before_init_stands_over_the_environment)
{
	setenv("RANGEPROF_RUNS", "3", 1);
	char err[2048] = "";
	cr_assert_eq(inject_init_set_option("runs", "11", err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(calls, "", "no replay to reconfigure yet");
	inject_init_once();
	cr_assert_eq(configured.runs, 11);
}

Test(init, turning_children_off_takes_their_variable_out_and_leaves_another_tools_hook)
{
	/* (Turning them on exports this library's own path, which dladdr cannot give for a
	 * test executable: tests/integration/import_child.c covers that half.) */
	setenv("CUDA_INJECTION64_PATH", "/usr/lib/other-tool.so", 1);
	inject_init_once();
	inject_init_attached();
	setenv("RANGEPROF_CHILDREN", "1", 1);
	char err[2048] = "";
	cr_assert_eq(inject_init_set_option("children", "0", err, sizeof(err)), 0, "%s", err);
	cr_assert_null(getenv("RANGEPROF_CHILDREN"));
	cr_assert_str_eq(getenv("CUDA_INJECTION64_PATH"), "/usr/lib/other-tool.so",
			 "another tool's hook is not ours to take out");
}

Test(init, a_process_marked_as_controller_is_not_an_inheriting_child)
{
	cr_assert_not(inject_init_inherited());
	inject_init_mark_controller();
	cr_assert_not(inject_init_inherited(), "its own mark");
	setenv("RANGEPROF_CONTROL_PID", "1", 1);
	cr_assert(inject_init_inherited(), "a parent's mark: only the hooks were inherited");
}

Test(init, preloaded_names_only_what_ld_preload_lists)
{
	char self[] = "/tmp/rangeprof-init-preload-XXXXXX";
	int fd = mkstemp(self);
	cr_assert_geq(fd, 0);
	close(fd);
	char list[256];
	snprintf(list, sizeof(list), "libother.so: %s", self);
	setenv("LD_PRELOAD", list, 1);
	cr_assert(inject_init_preloaded(self));
	setenv("LD_PRELOAD", "libother.so", 1);
	cr_assert_not(inject_init_preloaded(self));
	unsetenv("LD_PRELOAD");
	unlink(self);
}

/* ---- forks and exit ----------------------------------------------------------------- */

Test(init, a_child_forked_without_exec_measures_nothing_and_says_so)
{
	inject_init_once();
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		char why[256] = "";
		bool possible = inject_init_measuring_possible(why, sizeof(why));
		_exit(!possible && strstr(why, "forked") && strstr(calls, "replay_fork_child") &&
		      strstr(calls, "early_fork_child") ? 0 : 1);
	}
	int status = 0;
	waitpid(pid, &status, 0);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

Test(init, exit_says_why_nothing_was_measured_even_when_quiet)
{
	int fds[2];
	cr_assert_eq(pipe(fds), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		/* A process of its own: init registers the exit handler, exit runs it. */
		dup2(fds[1], 2);
		close(fds[0]);
		inject_init_once();
		exit(0);
	}
	close(fds[1]);
	char text[8192] = "";
	size_t n = 0;
	ssize_t r;
	while (n < sizeof(text) - 1 && (r = read(fds[0], text + n, sizeof(text) - 1 - n)) > 0)
		n += (size_t)r;
	text[n] = '\0';
	close(fds[0]);
	int status = 0;
	waitpid(pid, &status, 0);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	cr_assert(strstr(text, "nothing measured"), "stderr: %s", text);
}
