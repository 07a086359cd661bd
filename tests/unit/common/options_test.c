/* tests/unit/common/options_test.c - the option table, value parsing and every error. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/error.h"
#include "common/log.h"
#include "common/options.h"

static struct rp_options opts;
static char err[1024];

static void setup(void) { rp_options_init(&opts); err[0] = '\0'; }
static void teardown(void) { rp_options_finish(&opts); }

TestSuite(options, .init = setup, .fini = teardown);

Test(options, defaults_follow_the_spec)
{
	cr_assert_str_eq(opts.output, "rangeprof.%p.jsonl");
	cr_assert_str_eq(opts.metrics, "gpu__time_duration.sum");
	cr_assert_eq(opts.runs, 5);
	cr_assert_eq(opts.launch_skip, 0);
	cr_assert_eq(opts.launch_count, -1);
	cr_assert_eq(opts.cache_control, RP_CACHE_ALL);
	cr_assert_eq(opts.clock_control, RP_CLOCK_NONE);
	cr_assert_eq(opts.graph_profiling, RP_GRAPH_NODE, "ncu's default: kernel nodes measured");
	cr_assert_eq(opts.setup, RP_SETUP_EARLY, "set-up ahead of the first measured launch");
	cr_assert_not(opts.quiet);
	for (int i = 0; i < RP_OPT_COUNT; i++)
		cr_assert_not(opts.given[i], "defaults are not 'given'");
}

Test(options, table_rows_follow_the_enum_and_derive_env_names)
{
	const struct rp_option_desc *t = rp_option_table();
	char name[64];
	for (int i = 0; i < RP_OPT_COUNT; i++) {
		cr_assert_eq(t[i].id, (enum rp_option)i);
		cr_assert(t[i].help && *t[i].help && !strchr(t[i].help, '\n'), "one-line help");
		rp_option_env_name(&t[i], name, sizeof(name));
		cr_assert(!strncmp(name, "RANGEPROF_", 10));
		cr_assert_null(strchr(name, '-'));
	}
	rp_option_env_name(&t[RP_OPT_NVTX_INCLUDE], name, sizeof(name));
	cr_assert_str_eq(name, "RANGEPROF_NVTX_INCLUDE");
	cr_assert_eq(rp_option_find_short('k')->id, RP_OPT_KERNEL_NAME);
	cr_assert_eq(rp_option_find_long("launch-count", 12)->id, RP_OPT_LAUNCH_COUNT);
	cr_assert_null(rp_option_find_long("launch", 6));
}

Test(options, runs_rejects_zero_and_words_naming_option_and_value)
{
	cr_assert_eq(rp_option_set(&opts, RP_OPT_RUNS, "0", "--runs", err, sizeof(err)),
		     RP_ERR_FAILED, "a refused value is a plain failure (common/error.h)");
	cr_assert_str_eq(err, "--runs '0': expected an integer from 1 to 100000 or 'auto'");
	cr_assert_neq(rp_option_set(&opts, RP_OPT_RUNS, "abc", "--runs", err, sizeof(err)), 0);
	cr_assert(strstr(err, "'abc'"));
	cr_assert_neq(rp_option_set(&opts, RP_OPT_RUNS, "5x", "--runs", err, sizeof(err)), 0);
	cr_assert_neq(rp_option_set(&opts, RP_OPT_RUNS, "", "--runs", err, sizeof(err)), 0);
	cr_assert_eq(rp_option_set(&opts, RP_OPT_RUNS, "20", "--runs", err, sizeof(err)), 0);
	cr_assert_eq(opts.runs, 20);
	cr_assert(opts.given[RP_OPT_RUNS]);
}

Test(options, launch_skip_accepts_zero_count_does_not)
{
	cr_assert_eq(rp_option_set(&opts, RP_OPT_LAUNCH_SKIP, "0", "-s", err, sizeof(err)), 0);
	cr_assert_neq(rp_option_set(&opts, RP_OPT_LAUNCH_SKIP, "-1", "-s", err, sizeof(err)), 0);
	cr_assert_str_eq(err, "-s '-1': expected an integer >= 0");
	cr_assert_neq(rp_option_set(&opts, RP_OPT_LAUNCH_COUNT, "0", "-c", err, sizeof(err)), 0);
	cr_assert_str_eq(err, "-c '0': expected an integer >= 1 or 'unlimited'");
}

Test(options, choices_list_what_is_accepted)
{
	cr_assert_neq(rp_option_set(&opts, RP_OPT_CACHE_CONTROL, "maybe", "--cache-control", err,
				    sizeof(err)), 0);
	cr_assert_str_eq(err, "--cache-control 'maybe': should be one of 'all', 'none'");
	cr_assert_eq(rp_option_set(&opts, RP_OPT_CACHE_CONTROL, "none", "x", err, sizeof(err)), 0);
	cr_assert_eq(opts.cache_control, RP_CACHE_NONE);
	cr_assert_neq(rp_option_set(&opts, RP_OPT_CLOCK_CONTROL, "max", "--clock-control", err,
				    sizeof(err)), 0);
	cr_assert_str_eq(err, "--clock-control 'max': should be one of 'none', 'base'");
	cr_assert_neq(rp_option_set(&opts, RP_OPT_GRAPH_PROFILING, "kernel", "--graph-profiling",
				    err, sizeof(err)), 0);
	cr_assert_str_eq(err, "--graph-profiling 'kernel': should be one of 'node', 'graph', 'none'");
	cr_assert_eq(rp_option_set(&opts, RP_OPT_GRAPH_PROFILING, "graph", "x", err, sizeof(err)), 0);
	cr_assert_eq(opts.graph_profiling, RP_GRAPH_GRAPH);
	cr_assert_eq(rp_option_set(&opts, RP_OPT_GRAPH_PROFILING, "none", "x", err, sizeof(err)), 0);
	cr_assert_eq(opts.graph_profiling, RP_GRAPH_NONE);
	cr_assert_eq(opts.replay_mode, RP_REPLAY_KERNEL, "ncu's default: kernel replay");
	cr_assert_neq(rp_option_set(&opts, RP_OPT_REPLAY_MODE, "app-range", "--replay-mode", err,
				    sizeof(err)), 0);
	cr_assert_str_eq(err, "--replay-mode 'app-range': should be one of 'kernel', 'range'");
	cr_assert_eq(rp_option_set(&opts, RP_OPT_REPLAY_MODE, "range", "x", err, sizeof(err)), 0);
	cr_assert_eq(opts.replay_mode, RP_REPLAY_RANGE);
	cr_assert_neq(rp_option_set(&opts, RP_OPT_SETUP, "now", "--setup", err, sizeof(err)), 0);
	cr_assert_str_eq(err, "--setup 'now': should be one of 'early', 'lazy'");
	cr_assert_eq(rp_option_set(&opts, RP_OPT_SETUP, "lazy", "x", err, sizeof(err)), 0);
	cr_assert_eq(opts.setup, RP_SETUP_LAZY);
	cr_assert_eq(rp_option_set(&opts, RP_OPT_SETUP, "early", "x", err, sizeof(err)), 0);
	cr_assert_eq(opts.setup, RP_SETUP_EARLY);
}

Test(options, metric_lists_are_checked_for_shape)
{
	cr_assert_neq(rp_option_set(&opts, RP_OPT_METRICS, "a,,b", "--metrics", err, sizeof(err)), 0);
	cr_assert(strstr(err, "empty metric name at character 3"), "%s", err);
	cr_assert_neq(rp_option_set(&opts, RP_OPT_METRICS, "a b", "--metrics", err, sizeof(err)), 0);
	cr_assert(strstr(err, "character 2 ' '"), "%s", err);
	cr_assert_eq(rp_option_set(&opts, RP_OPT_METRICS, "dram__bytes_read.sum,gpu__time_duration.sum",
				   "--metrics", err, sizeof(err)), 0);
}

Test(options, output_template_escapes)
{
	char path[256];
	cr_assert_eq(rp_output_path_expand("r.%p.%%.jsonl", 42, path, sizeof(path), err, sizeof(err)), 0);
	cr_assert_str_eq(path, "r.42.%.jsonl");
	cr_assert_neq(rp_option_set(&opts, RP_OPT_OUTPUT, "x.%q", "-o", err, sizeof(err)), 0);
	cr_assert_str_eq(err, "-o 'x.%q': unknown escape '%q' at character 3; accepted are %p (pid), "
			      "%h (host name), %q{ENV} (a variable) and %%");
	char host[256];
	gethostname(host, sizeof(host));
	cr_assert_eq(rp_output_path_expand("%h", 1, path, sizeof(path), err, sizeof(err)), 0);
	cr_assert_str_eq(path, host);
}

Test(options, output_directory_must_exist_and_be_writable)
{
	cr_assert_neq(rp_output_check("/nonexistent-dir/r.jsonl", 1, "--output", err, sizeof(err)), 0);
	cr_assert_str_eq(err, "--output '/nonexistent-dir/r.jsonl': directory '/nonexistent-dir' "
			      "does not exist");
	cr_assert_eq(rp_output_check("/tmp/r.%p.jsonl", 1, "--output", err, sizeof(err)), 0);
	cr_assert_neq(rp_output_check("/etc/passwd/r.jsonl", 1, "--output", err, sizeof(err)), 0);
	cr_assert_str_eq(err, "--output '/etc/passwd/r.jsonl': '/etc/passwd' is not a directory");
}

Test(options, kernel_regex_is_compiled)
{
	cr_assert_neq(rp_option_set(&opts, RP_OPT_KERNEL_NAME, "regex:(", "-k", err, sizeof(err)), 0);
	cr_assert(strstr(err, "-k 'regex:(': invalid regular expression"), "%s", err);
	cr_assert_eq(rp_option_set(&opts, RP_OPT_KERNEL_NAME, "regex:^vadd", "-k", err, sizeof(err)), 0);
}

Test(options, environment_is_read_and_lists_split_on_unescaped_semicolons)
{
	setenv("RANGEPROF_RUNS", "7", 1);
	setenv("RANGEPROF_NVTX_INCLUDE", "a/;b\\;c/;Dom@x", 1);
	setenv("RANGEPROF_QUIET", "yes", 1);
	cr_assert_eq(rp_options_load_env(&opts, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(opts.runs, 7);
	cr_assert(opts.quiet);
	cr_assert_eq(opts.nvtx_include_count, 3);
	cr_assert_str_eq(opts.nvtx_include[0], "a/");
	cr_assert_str_eq(opts.nvtx_include[1], "b\\;c/");
	cr_assert_str_eq(opts.nvtx_include[2], "Dom@x");
	setenv("RANGEPROF_RUNS", "zero", 1);
	cr_assert_neq(rp_options_load_env(&opts, err, sizeof(err)), 0);
	cr_assert_str_eq(err, "RANGEPROF_RUNS 'zero': expected an integer from 1 to 100000 or 'auto'");
	unsetenv("RANGEPROF_RUNS");
	unsetenv("RANGEPROF_NVTX_INCLUDE");
	unsetenv("RANGEPROF_QUIET");
}

Test(options, joining_a_list_round_trips_through_the_environment_split)
{
	char *items[] = { "plain/", "with;semicolon/", "x" };
	char *joined = rp_option_join_list(items, 3);
	cr_assert_str_eq(joined, "plain/;with\\;semicolon/;x");
	setenv("RANGEPROF_NVTX_EXCLUDE", joined, 1);
	cr_assert_eq(rp_options_load_env(&opts, err, sizeof(err)), 0);
	cr_assert_eq(opts.nvtx_exclude_count, 3);
	cr_assert_str_eq(opts.nvtx_exclude[1], "with\\;semicolon/");
	unsetenv("RANGEPROF_NVTX_EXCLUDE");
	free(joined);
}

/* Issue 9, item 4: "A\\" (a name ending in a backslash) and "B" were joined into
 * "A\\;B", which the split read as one element with an escaped ';'. Every pair of short
 * elements over an alphabet of the characters that matter must come back as it went. */
static char **split_out;
static size_t split_count;

static int collect(const char *element, void *arg)
{
	(void)arg;
	split_out = realloc(split_out, (split_count + 1) * sizeof(*split_out));
	split_out[split_count++] = strdup(element);
	return 0;
}

static void free_split(void)
{
	for (size_t i = 0; i < split_count; i++)
		free(split_out[i]);
	free(split_out);
	split_out = NULL;
	split_count = 0;
}

/* e with each ';' that is not part of a backslash pair written "\;", as join does. */
static void canonical(const char *e, char *out)
{
	for (; *e; e++) {
		if (*e == '\\' && e[1]) {
			*out++ = *e++;
		} else if (*e == ';') {
			*out++ = '\\';
		}
		*out++ = *e;
	}
	*out = '\0';
}

Test(options, join_then_split_gives_back_every_pair_of_short_elements)
{
	const char alphabet[] = { 'A', '\\', ';', '/' };
	char elems[400][5];
	size_t n = 0;
	/* Every string of 1 to 4 characters that does not end in a lone backslash. */
	for (int len = 1; len <= 4; len++) {
		int total = 1;
		for (int i = 0; i < len; i++)
			total *= 4;
		for (int k = 0; k < total; k++) {
			char e[5];
			for (int i = 0, v = k; i < len; i++, v /= 4)
				e[i] = alphabet[v % 4];
			e[len] = '\0';
			int trailing = 0;
			for (int i = len - 1; i >= 0 && e[i] == '\\'; i--)
				trailing++;
			if (trailing % 2 == 0)
				strcpy(elems[n++], e);
		}
	}
	size_t checked = 0;
	for (size_t a = 0; a < n; a++) {
		for (size_t b = 0; b < n; b++) {
			char *pair[] = { elems[a], elems[b] };
			char *joined = rp_option_join_list(pair, 2);
			cr_assert_not_null(joined);
			rp_option_split_list(joined, collect, NULL);
			char ca[16], cb[16];
			canonical(elems[a], ca);
			canonical(elems[b], cb);
			cr_assert_eq(split_count, 2, "'%s' + '%s' joined as '%s' split into %zu",
				     elems[a], elems[b], joined, split_count);
			cr_assert_str_eq(split_out[0], ca);
			cr_assert_str_eq(split_out[1], cb);
			free_split();
			free(joined);
			checked++;
		}
	}
	cr_assert_gt(checked, 10000);
	char *dangling[] = { "A\\" };
	cr_assert_null(rp_option_join_list(dangling, 1), "a lone last backslash cannot be carried");
}

Test(options, a_backslash_before_the_separator_does_not_merge_two_expressions)
{
	setenv("RANGEPROF_NVTX_INCLUDE", "A\\\\;B/", 1);
	cr_assert_eq(rp_options_load_env(&opts, err, sizeof(err)), 0, "%s", err);
	unsetenv("RANGEPROF_NVTX_INCLUDE");
	cr_assert_eq(opts.nvtx_include_count, 2);
	cr_assert_str_eq(opts.nvtx_include[0], "A\\\\");
	cr_assert_str_eq(opts.nvtx_include[1], "B/");
}

Test(options, launch_count_can_be_set_back_to_unlimited)
{
	cr_assert_eq(rp_option_set(&opts, RP_OPT_LAUNCH_COUNT, "5", "-c", err, sizeof(err)), 0);
	cr_assert_eq(opts.launch_count, 5);
	cr_assert_eq(rp_option_set(&opts, RP_OPT_LAUNCH_COUNT, "unlimited", "-c", err,
				   sizeof(err)), 0);
	cr_assert_eq(opts.launch_count, -1);
}

static int parse(const char *const *args, int *app, enum rp_action *action)
{
	int argc = 0;
	while (args[argc])
		argc++;
	return rp_options_parse_argv(&opts, argc, (char *const *)args, app, action, err,
				     sizeof(err));
}

Test(options, argv_separator_is_never_taken_as_a_value)
{
	int app;
	enum rp_action action;
	const char *args[] = { "rangeprof", "-c", "--", "./app", NULL };
	cr_assert_neq(parse(args, &app, &action), 0);
	cr_assert_str_eq(err, "-c needs a value (N); see 'rangeprof --help'");
	const char *ok[] = { "rangeprof", "-c", "3", "--runs=2", "-q", "--", "./app", "x", NULL };
	cr_assert_eq(parse(ok, &app, &action), 0, "%s", err);
	cr_assert_eq(app, 6);
	cr_assert_eq(opts.launch_count, 3);
	cr_assert_eq(opts.runs, 2);
	cr_assert(opts.quiet);
	const char *version[] = { "rangeprof", "--version", NULL };
	cr_assert_eq(parse(version, &app, &action), 0);
	cr_assert_eq(action, RP_ACTION_VERSION);
}

Test(options, command_line_lists_replace_the_environment_and_origins_are_named)
{
	setenv("RANGEPROF_NVTX_EXCLUDE", "env/", 1);
	setenv("RANGEPROF_NVTX_INCLUDE", "env/", 1);
	cr_assert_eq(rp_options_load_env(&opts, err, sizeof(err)), 0, "%s", err);
	unsetenv("RANGEPROF_NVTX_EXCLUDE");
	unsetenv("RANGEPROF_NVTX_INCLUDE");
	int app;
	enum rp_action action;
	const char *args[] = { "rangeprof", "--nvtx-include", "a/", "--nvtx-include", "b/",
			       "./app", NULL };
	cr_assert_eq(parse(args, &app, &action), 0, "%s", err);
	cr_assert_eq(opts.nvtx_include_count, 2);
	cr_assert_str_eq(opts.nvtx_include[0], "a/");
	char origin[64];
	cr_assert_str_eq(rp_option_origin(&opts, RP_OPT_NVTX_INCLUDE, origin, sizeof(origin)),
			 "--nvtx-include");
	cr_assert_str_eq(rp_option_origin(&opts, RP_OPT_NVTX_EXCLUDE, origin, sizeof(origin)),
			 "RANGEPROF_NVTX_EXCLUDE");
}

Test(options, a_leftover_list_metrics_variable_is_ignored)
{
	setenv("RANGEPROF_LIST_METRICS", "1", 1);
	cr_assert_eq(rp_options_load_env(&opts, err, sizeof(err)), 0, "%s", err);
	unsetenv("RANGEPROF_LIST_METRICS");
	cr_assert_not(opts.list_metrics);
	cr_assert(opts.env_ignored[RP_OPT_LIST_METRICS]);
}

Test(options, values_in_messages_are_escaped_and_cut)
{
	cr_assert_neq(rp_option_set(&opts, RP_OPT_RUNS, "1\n\x1b[2J", "RANGEPROF_RUNS", err,
				    sizeof(err)), 0);
	cr_assert_str_eq(err, "RANGEPROF_RUNS '1\\n\\x1b[2J': expected an integer from 1 to 100000 or 'auto'");
	char *big = malloc(120001);
	memset(big, '7', 120000);
	big[120000] = '\0';
	cr_assert_neq(rp_option_set(&opts, RP_OPT_RUNS, big, "--runs", err, sizeof(err)), 0);
	cr_assert(strstr(err, "...(120000 bytes)': expected an integer from 1 to 100000 or 'auto'"), "%s",
		  err);
	cr_assert_lt(strlen(err), 300);
	free(big);
}

/* Issue 9, item 5: each of these passed the check and failed (or blocked) later, inside
 * the application. */
Test(options, output_paths_that_are_not_files_are_refused)
{
	char dir[] = "/tmp/rp-out-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char path[512];
	cr_assert_neq(rp_output_check(".", 1, "-o", err, sizeof(err)), 0);
	cr_assert(strstr(err, "-o '.': '.' names a directory"), "%s", err);
	cr_assert_neq(rp_output_check(dir, 1, "-o", err, sizeof(err)), 0);
	cr_assert(strstr(err, "is a directory; expected a file path"), "%s", err);
	snprintf(path, sizeof(path), "%s/", dir);
	cr_assert_neq(rp_output_check(path, 1, "-o", err, sizeof(err)), 0);
	cr_assert(strstr(err, "names a directory"), "%s", err);
	char name[300];
	memset(name, 'n', 256);
	name[256] = '\0';
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	cr_assert_neq(rp_output_check(path, 1, "-o", err, sizeof(err)), 0);
	cr_assert(strstr(err, "file name of 256 bytes; at most 255 are accepted"), "%s", err);
	snprintf(path, sizeof(path), "%s/fifo", dir);
	cr_assert_eq(mkfifo(path, 0600), 0);
	cr_assert_neq(rp_output_check(path, 1, "-o", err, sizeof(err)), 0);
	cr_assert(strstr(err, "is a FIFO; expected a regular file or a character device"), "%s",
		  err);
	unlink(path);
	snprintf(path, sizeof(path), "%s/dangling", dir);
	cr_assert_eq(symlink("/nonexistent/target", path), 0);
	cr_assert_neq(rp_output_check(path, 1, "-o", err, sizeof(err)), 0);
	cr_assert(strstr(err, "is a symbolic link to a missing file"), "%s", err);
	unlink(path);
	snprintf(path, sizeof(path), "%s/ok.%%p.jsonl", dir);
	cr_assert_eq(rp_output_check(path, 1, "-o", err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(rp_output_check("/dev/null", 1, "-o", err, sizeof(err)), 0, "%s", err);
	rmdir(dir);
}

/* Runs rp_output_check as an unprivileged user (nobody) when we are root, so that both
 * root's and a user's view are checked; returns the check's result, message in msg. */
static int check_as_nobody(const char *path, char *msg, size_t size)
{
	int pipe_fd[2];
	cr_assert_eq(pipe(pipe_fd), 0);
	pid_t child = fork();
	if (child == 0) {
		if (geteuid() == 0 && (setgid(65534) || setuid(65534)))
			_exit(2);
		char m[1024] = "";
		int rc = rp_output_check(path, 1, "--output", m, sizeof(m));
		ssize_t w = write(pipe_fd[1], m, strlen(m) + 1);
		(void)w;
		_exit(rc ? 1 : 0);
	}
	int status;
	waitpid(child, &status, 0);
	close(pipe_fd[1]);
	ssize_t n = read(pipe_fd[0], msg, size - 1);
	msg[n > 0 ? n : 0] = '\0';
	close(pipe_fd[0]);
	return WEXITSTATUS(status);
}

Test(options, output_in_a_directory_the_user_cannot_write_is_refused)
{
	/* Checked as an unprivileged user: root may write anywhere. /usr is root's, 0755. */
	char msg[1024];
	cr_assert_eq(check_as_nobody("/usr/r.jsonl", msg, sizeof(msg)), 1, "accepted: %s", msg);
	cr_assert(strstr(msg, "--output '/usr/r.jsonl': directory '/usr' is not writable"), "%s", msg);
}

Test(options, an_existing_writable_file_in_a_read_only_directory_is_accepted)
{
	char msg[1024];
	cr_assert_eq(check_as_nobody("/dev/null", msg, sizeof(msg)), 0, "refused: %s", msg);
}

Test(options, root_is_refused_where_the_open_would_fail)
{
	/* /proc/self is not writable even for root; access(W_OK) said yes to root. */
	cr_assert_neq(rp_output_check("/proc/self/r.jsonl", 1, "-o", err, sizeof(err)), 0);
	cr_assert(strstr(err, "directory '/proc/self' is not writable"), "%s", err);
}

/* Every message is one line of text, whatever its arguments hold (a kernel or NVTX name
 * with a newline, an escape sequence, bytes that are not UTF-8). */
/* Issue 11: --runs auto and its bounds, the thermal guard's thresholds. */
Test(options, runs_auto_and_its_bounds_have_careful_defaults)
{
	cr_assert_float_eq(opts.target_ci_pct, 1.0, 0);
	cr_assert_eq(opts.runs_min, 10);
	cr_assert_eq(opts.runs_max, 200);
	cr_assert_eq(opts.runs_batch, 10);
	cr_assert_float_eq(opts.runs_time_budget, 10.0, 0);
	cr_assert_eq(opts.thermal_control, RP_THERMAL_AUTO);
	cr_assert_float_eq(opts.thermal_wait, 10.0, 0);
	cr_assert_float_eq(opts.thermal_continue, 20.0, 0);
	cr_assert_eq(opts.thermal_timeout, 30);
	cr_assert_eq(rp_options_check(&opts, err, sizeof(err)), 0, "%s", err);
}

Test(options, runs_takes_the_word_auto)
{
	cr_assert_eq(rp_option_set(&opts, RP_OPT_RUNS, "auto", "--runs", err, sizeof(err)), 0);
	cr_assert_eq(opts.runs, RP_RUNS_AUTO);
	cr_assert_neq(rp_option_set(&opts, RP_OPT_RUNS, "Auto", "--runs", err, sizeof(err)), 0);
	cr_assert_str_eq(err, "--runs 'Auto': expected an integer from 1 to 100000 or 'auto'");
	cr_assert_eq(rp_option_set(&opts, RP_OPT_RUNS, "12", "--runs", err, sizeof(err)), 0);
	cr_assert_eq(opts.runs, 12);
}

Test(options, target_ci_is_a_positive_percentage)
{
	cr_assert_eq(rp_option_set(&opts, RP_OPT_TARGET_CI, "0.5", "--target-ci", err,
				   sizeof(err)), 0, "%s", err);
	cr_assert_float_eq(opts.target_ci_pct, 0.5, 0);
	cr_assert_eq(rp_option_set(&opts, RP_OPT_TARGET_CI, "2", "--target-ci", err, sizeof(err)), 0);
	cr_assert_float_eq(opts.target_ci_pct, 2, 0);
	static const char *const bad[] = { "0", "-1", "101", "1%", "abc", "", " 1", "nan", "inf",
					   "0x1p0", "1e999" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		cr_assert_neq(rp_option_set(&opts, RP_OPT_TARGET_CI, bad[i], "--target-ci", err,
					    sizeof(err)), 0, "'%s' accepted", bad[i]);
		cr_assert(strstr(err, "expected a number > 0 and <= 100"), "%s", err);
		cr_assert(!strncmp(err, "--target-ci '", 13), "%s", err);
	}
	cr_assert_float_eq(opts.target_ci_pct, 2, 0, "a refused value changes nothing");
}

Test(options, run_count_bounds_are_checked_alone_and_together)
{
	cr_assert_neq(rp_option_set(&opts, RP_OPT_RUNS_MIN, "1", "--runs-min", err, sizeof(err)), 0);
	cr_assert_str_eq(err, "--runs-min '1': expected an integer from 2 to 100000");
	cr_assert_neq(rp_option_set(&opts, RP_OPT_RUNS_BATCH, "0", "--runs-batch", err,
				    sizeof(err)), 0);
	cr_assert_str_eq(err, "--runs-batch '0': expected an integer from 1 to 1000");
	cr_assert_neq(rp_option_set(&opts, RP_OPT_RUNS_TIME_BUDGET, "0", "--runs-time-budget",
				    err, sizeof(err)), 0);
	cr_assert_str_eq(err, "--runs-time-budget '0': expected a number > 0 and <= 86400");
	cr_assert_eq(rp_option_set(&opts, RP_OPT_RUNS_TIME_BUDGET, "2.5", "--runs-time-budget",
				   err, sizeof(err)), 0);
	cr_assert_float_eq(opts.runs_time_budget, 2.5, 0);

	cr_assert_eq(rp_option_set(&opts, RP_OPT_RUNS_MIN, "300", "--runs-min", err, sizeof(err)), 0);
	cr_assert_eq(rp_option_set(&opts, RP_OPT_RUNS_MAX, "0250", "--runs-max", err, sizeof(err)), 0);
	cr_assert_eq(rp_options_check(&opts, err, sizeof(err)), RP_ERR_FAILED);
	cr_assert_str_eq(err, "--runs-min '300' is more than --runs-max '0250'; expected "
			 "at most as many runs as the maximum", "values as the user wrote them");
	cr_assert_eq(rp_option_set(&opts, RP_OPT_RUNS_MAX, "300", "--runs-max", err, sizeof(err)), 0);
	cr_assert_eq(rp_options_check(&opts, err, sizeof(err)), 0, "%s", err);
}

/* Only two values the user gave can contradict: one bound alone moves the default of the
 * other. --runs-max 5 was refused against the default --runs-min 10, even with --runs 3
 * and with --list-metrics. */
Test(options, one_run_bound_given_moves_the_default_other)
{
	cr_assert_eq(rp_option_set(&opts, RP_OPT_RUNS_MAX, "5", "--runs-max", err, sizeof(err)), 0);
	cr_assert_eq(rp_options_check(&opts, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(opts.runs_max, 5);
	cr_assert_eq(opts.runs_min, 5, "the default minimum comes down to the maximum");

	rp_options_finish(&opts);
	rp_options_init(&opts);
	cr_assert_eq(rp_option_set(&opts, RP_OPT_RUNS_MIN, "300", "--runs-min", err, sizeof(err)), 0);
	cr_assert_eq(rp_options_check(&opts, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(opts.runs_min, 300);
	cr_assert_eq(opts.runs_max, 300, "the default maximum goes up to the minimum");

	rp_options_finish(&opts);
	rp_options_init(&opts);
	char *argv[] = { "rangeprof", "--runs", "3", "--runs-max", "5", "--list-metrics", NULL };
	int app;
	enum rp_action action;
	cr_assert_eq(rp_options_parse_argv(&opts, 6, argv, &app, &action, err, sizeof(err)), 0);
	cr_assert_eq(rp_options_check(&opts, err, sizeof(err)), 0, "%s", err);
}

Test(options, one_thermal_threshold_given_moves_the_default_other)
{
	cr_assert_eq(rp_option_set(&opts, RP_OPT_THERMAL_WAIT, "30", "--thermal-wait", err,
				   sizeof(err)), 0);
	cr_assert_eq(rp_option_set(&opts, RP_OPT_THERMAL_CONTROL, "off", "--thermal-control",
				   err, sizeof(err)), 0);
	cr_assert_eq(rp_options_check(&opts, err, sizeof(err)), 0, "%s", err);
	cr_assert_float_eq(opts.thermal_wait, 30, 0);
	cr_assert_float_eq(opts.thermal_continue, 30, 0, "the default goes up to the wait");

	rp_options_finish(&opts);
	rp_options_init(&opts);
	setenv("RANGEPROF_THERMAL_CONTINUE", "5", 1);
	cr_assert_eq(rp_options_load_env(&opts, err, sizeof(err)), 0, "%s", err);
	unsetenv("RANGEPROF_THERMAL_CONTINUE");
	cr_assert_eq(rp_options_check(&opts, err, sizeof(err)), 0, "%s", err);
	cr_assert_float_eq(opts.thermal_continue, 5, 0);
	cr_assert_float_eq(opts.thermal_wait, 5, 0, "the default comes down to the continue");
}

Test(options, thermal_control_and_thresholds)
{
	cr_assert_eq(rp_option_set(&opts, RP_OPT_THERMAL_CONTROL, "manual", "--thermal-control",
				   err, sizeof(err)), 0);
	cr_assert_eq(opts.thermal_control, RP_THERMAL_MANUAL);
	cr_assert_eq(rp_option_set(&opts, RP_OPT_THERMAL_CONTROL, "off", "--thermal-control",
				   err, sizeof(err)), 0);
	cr_assert_eq(opts.thermal_control, RP_THERMAL_OFF);
	cr_assert_neq(rp_option_set(&opts, RP_OPT_THERMAL_CONTROL, "on", "--thermal-control",
				    err, sizeof(err)), 0);
	cr_assert_str_eq(err, "--thermal-control 'on': should be one of 'auto', 'manual', 'off'");
	cr_assert_eq(rp_option_set(&opts, RP_OPT_THERMAL_WAIT, "0", "--thermal-wait", err,
				   sizeof(err)), 0, "0: wait only past the slowdown temperature");
	cr_assert_neq(rp_option_set(&opts, RP_OPT_THERMAL_WAIT, "-5", "--thermal-wait", err,
				    sizeof(err)), 0);
	cr_assert_str_eq(err, "--thermal-wait '-5': expected a number >= 0 and <= 100");
	cr_assert_neq(rp_option_set(&opts, RP_OPT_THERMAL_TIMEOUT, "3601", "--thermal-timeout",
				    err, sizeof(err)), 0);
	cr_assert_str_eq(err, "--thermal-timeout '3601': expected an integer from 0 to 3600");

	setenv("RANGEPROF_THERMAL_WAIT", "25.5", 1);
	cr_assert_eq(rp_options_load_env(&opts, err, sizeof(err)), 0, "%s", err);
	unsetenv("RANGEPROF_THERMAL_WAIT");
	cr_assert_float_eq(opts.thermal_wait, 25.5, 0);
	cr_assert_eq(rp_option_set(&opts, RP_OPT_THERMAL_CONTINUE, "2e1", "--thermal-continue",
				   err, sizeof(err)), 0);
	cr_assert_eq(rp_options_check(&opts, err, sizeof(err)), RP_ERR_FAILED);
	cr_assert_str_eq(err, "RANGEPROF_THERMAL_WAIT '25.5' is more than --thermal-continue "
			 "'2e1'; a launch must go on at no less headroom than it starts "
			 "waiting at");
}

Test(options, new_options_come_from_the_one_table)
{
	char name[64];
	rp_option_env_name(rp_option_find_long("runs-time-budget", 16), name, sizeof(name));
	cr_assert_str_eq(name, "RANGEPROF_RUNS_TIME_BUDGET");
	rp_option_env_name(rp_option_find_long("target-ci", 9), name, sizeof(name));
	cr_assert_str_eq(name, "RANGEPROF_TARGET_CI");
	char *argv[] = { "rangeprof", "--runs", "auto", "--target-ci=0.5", "--runs-max", "50",
			 "--thermal-control", "manual", "--", "./app", NULL };
	int app;
	enum rp_action action;
	cr_assert_eq(rp_options_parse_argv(&opts, 10, argv, &app, &action, err, sizeof(err)), 0,
		     "%s", err);
	cr_assert_eq(app, 9);
	cr_assert_eq(opts.runs, RP_RUNS_AUTO);
	cr_assert_float_eq(opts.target_ci_pct, 0.5, 0);
	cr_assert_eq(opts.runs_max, 50);
	cr_assert_eq(opts.thermal_control, RP_THERMAL_MANUAL);
	char *text = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&text, &size);
	rp_options_print_help(f, "rangeprof");
	fclose(f);
	cr_assert(strstr(text, "--runs N|auto"), "%s", text);
	cr_assert(strstr(text, "--thermal-control auto|manual|off"), "%s", text);
	cr_assert(strstr(text, "(default: auto; env RANGEPROF_THERMAL_CONTROL)"), "%s", text);
	free(text);
}

/* The help says what the code does: the early set-up starts at a device's first kernel
 * launch or allocation (inject/early.c), and a batch of --runs auto takes one profiler
 * pass only where the metric set has one pass. */
Test(options, help_says_when_setup_starts_and_what_a_batch_is)
{
	char *text = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&text, &size);
	rp_options_print_help(f, "rangeprof");
	fclose(f);
	cr_assert(strstr(text, "from the first kernel launch or allocation there"), "%s", text);
	cr_assert_null(strstr(text, "runs per profiler pass"), "%s", text);
	cr_assert(strstr(text, "in each profiler pass of the metric set"), "%s", text);
	free(text);
}

Test(log, messages_escape_control_characters_and_stay_one_line)
{
	int fds[2];
	cr_assert_eq(pipe(fds), 0);
	int saved = dup(STDERR_FILENO);
	dup2(fds[1], STDERR_FILENO);
	rp_log_error("kernel %s [%s]", "k\nfake line", "\x1b[2Jouter\x9b/\xc3\xa9");
	dup2(saved, STDERR_FILENO);
	close(fds[1]);
	char got[512] = "";
	ssize_t n = read(fds[0], got, sizeof(got) - 1);
	close(fds[0]);
	cr_assert_gt(n, 0);
	cr_assert_str_eq(got, "rangeprof: error: kernel k\\nfake line [\\x1b[2Jouter\\x9b/\xc3\xa9]\n");
}

/* rp_options_env_typos' lines, collected. */
static char typos[8][512];
static size_t typo_count;

static void collect_typo(const char *line, void *arg)
{
	(void)arg;
	if (typo_count < 8)
		snprintf(typos[typo_count++], sizeof(typos[0]), "%s", line);
}

static void env_typos(void)
{
	typo_count = 0;
	rp_options_env_typos(collect_typo, NULL);
}

Test(options, a_mistyped_variable_is_named_with_the_nearest_option)
{
	setenv("RANGEPROF_RUN", "3", 1);
	env_typos();
	unsetenv("RANGEPROF_RUN");
	cr_assert_eq(typo_count, 1);
	cr_assert_str_eq(typos[0], "RANGEPROF_RUN is not a rangeprof option and is not read; "
			 "did you mean RANGEPROF_RUNS?");
	/* A word left out, a swap, lower case, one word too many. */
	const char *cases[][2] = {
		{ "RANGEPROF_KERNEL", "RANGEPROF_KERNEL_NAME" },
		{ "RANGEPROF_NVTX_INCLDUE", "RANGEPROF_NVTX_INCLUDE" },
		{ "RANGEPROF_quiet", "RANGEPROF_QUIET" },
		{ "RANGEPROF_RUNS_MAX_COUNT", "RANGEPROF_RUNS_MAX" },
		{ "RANGEPROF_THERMAL_WAIT_C", "RANGEPROF_THERMAL_WAIT" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		setenv(cases[i][0], "1", 1);
		env_typos();
		unsetenv(cases[i][0]);
		cr_assert_eq(typo_count, 1, "%s", cases[i][0]);
		cr_assert(strstr(typos[0], cases[i][0]) == typos[0], "%s", typos[0]);
		char want[128];
		snprintf(want, sizeof(want), "did you mean %s?", cases[i][1]);
		cr_assert(strstr(typos[0], want), "%s: %s", cases[i][0], typos[0]);
	}
}

Test(options, the_test_scripts_variables_and_the_options_do_not_warn)
{
	/* Every RANGEPROF_ variable the repository's scripts and tests set that is no option
	 * (grep -rhoE 'RANGEPROF_[A-Z0-9_]+' less the options and the C API's constants):
	 * none is within two edits of an option, so none may be said to be a typo. */
	const char *theirs[] = {
		"RANGEPROF_TEST_PYTHON", "RANGEPROF_TEST_FAKE_CONTROL", "RANGEPROF_SOURCE_ROOT",
		"RANGEPROF_FIXTURES", "RANGEPROF_WHEELS", "RANGEPROF_IMPORT",
		"RANGEPROF_FAKE_RANGE", "RANGEPROF_FAKE_LAUNCHES", "RANGEPROF_FAKE_UNAVAILABLE",
		"RANGEPROF_FAKE_EPOCH", "RANGEPROF_FAKE_NOT_REPLAYED", "RANGEPROF_FAKE_NVTX_MODULES",
		"RANGEPROF_FAKE_CONTROL_VERSION", "RANGEPROF_FAKE_LOG", "RANGEPROF_FAKE_FIXTURE",
		"RANGEPROF_FAKE_ACCEPT",
	};
	const size_t n = sizeof(theirs) / sizeof(theirs[0]);
	for (size_t i = 0; i < n; i++)
		setenv(theirs[i], "1", 1);
	const struct rp_option_desc *t = rp_option_table();
	char name[64];
	for (int i = 0; i < RP_OPT_COUNT; i++) {
		rp_option_env_name(&t[i], name, sizeof(name));
		setenv(name, "x", 0);  /* kept where set: only its name matters here */
	}
	env_typos();
	for (size_t i = 0; i < n; i++)
		unsetenv(theirs[i]);
	for (int i = 0; i < RP_OPT_COUNT; i++) {
		rp_option_env_name(&t[i], name, sizeof(name));
		unsetenv(name);
	}
	cr_assert_eq(typo_count, 0, "%s", typos[0]);
}

Test(options, a_list_variable_that_holds_no_expression_is_refused)
{
	const char *values[] = { ";;;", "", ";" };
	for (size_t i = 0; i < 3; i++) {
		setenv("RANGEPROF_NVTX_INCLUDE", values[i], 1);
		int rc = rp_options_load_env(&opts, err, sizeof(err));
		unsetenv("RANGEPROF_NVTX_INCLUDE");
		cr_assert_neq(rc, 0, "'%s' would select every launch", values[i]);
		char want[160];
		snprintf(want, sizeof(want), "RANGEPROF_NVTX_INCLUDE '%s': expected an NVTX "
			 "expression; the value holds none (';' separates expressions)", values[i]);
		cr_assert_str_eq(err, want);
		rp_options_finish(&opts);
		rp_options_init(&opts);
	}
	setenv("RANGEPROF_NVTX_EXCLUDE", "a/;;b/", 1);
	cr_assert_eq(rp_options_load_env(&opts, err, sizeof(err)), 0, "%s", err);
	unsetenv("RANGEPROF_NVTX_EXCLUDE");
	cr_assert_eq(opts.nvtx_exclude_count, 2, "empty elements between expressions are skipped");
}

Test(options, the_help_states_the_expression_cap)
{
	char *text = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&text, &size);
	rp_options_print_help(f, "rangeprof");
	fclose(f);
	char want[64];
	snprintf(want, sizeof(want), "at most %d expressions", RP_OPTION_MAX_LIST);
	const char *first = strstr(text, want);
	cr_assert(first && strstr(first + 1, want), "both --nvtx-include and --nvtx-exclude");
	free(text);
}

/* ---- launch__ metrics ------------------------------------------------------------- */

Test(options, launch_metrics_mix_with_cupti_ones_and_unknown_ones_are_named)
{
	cr_assert_eq(rp_option_set(&opts, RP_OPT_METRICS, "gpu__time_duration.sum,"
				   "launch__sm_count,launch__grid_size", "--metrics", err,
				   sizeof(err)), 0);
	opts.given[RP_OPT_METRICS] = true;
	cr_assert_eq(rp_options_check(&opts, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(rp_option_set(&opts, RP_OPT_METRICS, "launch__sm_count,launch__gird_size",
				   "--metrics", err, sizeof(err)), 0);
	cr_assert_eq(rp_options_check(&opts, err, sizeof(err)), RP_ERR_FAILED);
	cr_assert(strstr(err, "--metrics: 'launch__gird_size' is not one of the launch__ metrics "
			 "rangeprof supplies: launch__block_size, "), "%s", err);
	cr_assert(strstr(err, "launch__waves_per_multiprocessor"), "the list is whole: %s", err);
}

Test(options, launch_metrics_are_refused_where_a_workload_is_not_one_launch)
{
	cr_assert_eq(rp_option_set(&opts, RP_OPT_METRICS, "launch__sm_count", "--metrics", err,
				   sizeof(err)), 0);
	cr_assert_eq(rp_option_set(&opts, RP_OPT_REPLAY_MODE, "range", "--replay-mode", err,
				   sizeof(err)), 0);
	opts.given[RP_OPT_REPLAY_MODE] = true;
	cr_assert_eq(rp_options_check(&opts, err, sizeof(err)), RP_ERR_FAILED);
	cr_assert(strstr(err, "'launch__sm_count' describes one kernel launch, and "
			 "--replay-mode 'range' measures each NVTX range as one workload; use "
			 "--replay-mode kernel"), "%s", err);
	cr_assert_eq(rp_option_set(&opts, RP_OPT_REPLAY_MODE, "kernel", "x", err, sizeof(err)), 0);
	cr_assert_eq(rp_option_set(&opts, RP_OPT_GRAPH_PROFILING, "graph", "x", err,
				   sizeof(err)), 0);
	cr_assert_eq(rp_options_check(&opts, err, sizeof(err)), RP_ERR_FAILED);
	cr_assert(strstr(err, "measures each graph launch as one workload; use "
			 "--graph-profiling node"), "%s", err);
}

Test(options, at_run_time_a_refused_combination_leaves_the_options_as_they_were)
{
	enum rp_option id;
	cr_assert_eq(rp_options_set_runtime(&opts, "metrics", "launch__sm_count", &id, err,
					    sizeof(err)), 0, "%s", err);
	cr_assert_eq(id, RP_OPT_METRICS);
	cr_assert_eq(rp_options_set_runtime(&opts, "replay-mode", "range", &id, err,
					    sizeof(err)), RP_ERR_FAILED);
	cr_assert_eq(opts.replay_mode, RP_REPLAY_KERNEL, "put back");
	cr_assert_eq(rp_options_set_runtime(&opts, "kernel-name", "gemm", &id, err, sizeof(err)),
		     RP_ERR_FAILED);
	cr_assert(strstr(err, "fixed when rangeprof starts: set RANGEPROF_KERNEL_NAME"), "%s", err);
	cr_assert_eq(rp_options_set_runtime(&opts, "quiet", "true", &id, err, sizeof(err)), 0);
	cr_assert(opts.quiet);
	cr_assert(rp_option_runtime(RP_OPT_CHILDREN) && !rp_option_runtime(RP_OPT_OUTPUT));
}
