/* tests/unit/common/options_test.c - the option table, value parsing and every error. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

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
	cr_assert_neq(rp_option_set(&opts, RP_OPT_RUNS, "0", "--runs", err, sizeof(err)), 0);
	cr_assert_str_eq(err, "--runs '0': expected an integer from 1 to 100000");
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
	cr_assert_str_eq(err, "-c '0': expected an integer >= 1");
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
	cr_assert_str_eq(err, "--clock-control 'max': should be one of 'base', 'none'");
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
			      "%h (host name) and %%");
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

Test(options, output_in_a_directory_the_user_cannot_write_is_refused)
{
	/* Checked as an unprivileged user: root may write anywhere. /usr is root's, 0755. */
	int pipe_fd[2];
	cr_assert_eq(pipe(pipe_fd), 0);
	pid_t child = fork();
	if (child == 0) {
		if (geteuid() == 0 && (setgid(65534) || setuid(65534)))
			_exit(2);
		char msg[512];
		int rc = rp_output_check("/usr/r.jsonl", 1, "--output", msg, sizeof(msg));
		ssize_t w = write(pipe_fd[1], msg, strlen(msg) + 1);
		_exit(rc != 0 && w > 0 ? 0 : 1);
	}
	int status;
	waitpid(child, &status, 0);
	char msg[512] = "";
	ssize_t n = read(pipe_fd[0], msg, sizeof(msg) - 1);
	cr_assert_gt(n, 0);
	cr_assert_eq(WEXITSTATUS(status), 0, "refused: %s", msg);
	cr_assert(strstr(msg, "--output '/usr/r.jsonl': directory '/usr' is not writable"), "%s", msg);
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
	cr_assert_str_eq(err, "RANGEPROF_RUNS 'zero': expected an integer from 1 to 100000");
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
