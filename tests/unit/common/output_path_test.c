/* tests/unit/common/output_path_test.c - %q{ENV} in --output gives each rank of a job
 * its own file, as in ncu. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/options.h"

static char path[512], err[512];

Test(output_path, q_env_is_the_variables_value)
{
	setenv("RP_TEST_RANK", "3", 1);
	cr_assert_eq(rp_output_path_expand("r.%q{RP_TEST_RANK}.%p.jsonl", 42, path, sizeof(path),
					   err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(path, "r.3.42.jsonl");
}

Test(output_path, an_unset_variable_is_empty)
{
	/* The launcher checks the path before torchrun sets RANK for the ranks. */
	unsetenv("RP_TEST_UNSET");
	cr_assert_eq(rp_output_path_expand("r%q{RP_TEST_UNSET}.jsonl", 1, path, sizeof(path), err,
					   sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(path, "r.jsonl");
}

Test(output_path, a_malformed_q_is_refused)
{
	cr_assert_neq(rp_output_path_expand("r.%q{RANK.jsonl", 1, path, sizeof(path), err,
					    sizeof(err)), 0);
	cr_assert(strstr(err, "%q{RANK}"), "%s", err);
	cr_assert_neq(rp_output_path_expand("r.%q{}.jsonl", 1, path, sizeof(path), err,
					    sizeof(err)), 0);
	cr_assert_neq(rp_output_path_expand("r.%q{1X}.jsonl", 1, path, sizeof(path), err,
					    sizeof(err)), 0);
}

Test(output_path, a_variable_name_too_long_to_hold_is_refused)
{
	/* Cut to 255 characters it would name another variable: A...A (255) is set here. */
	char name[301], templ[320];
	memset(name, 'A', 300);
	name[300] = '\0';
	char cut[256];
	memset(cut, 'A', 255);
	cut[255] = '\0';
	setenv(cut, "other", 1);
	snprintf(templ, sizeof(templ), "r.%%q{%s}.jsonl", name);
	cr_assert_neq(rp_output_path_expand(templ, 1, path, sizeof(path), err, sizeof(err)), 0,
		      "expanded to %s", path);
	cr_assert(strstr(err, "300 characters"), "%s", err);
	unsetenv(cut);
}

Test(output_path, the_option_accepts_q_env)
{
	struct rp_options opts;
	rp_options_init(&opts);
	cr_assert_eq(rp_option_set(&opts, RP_OPT_OUTPUT, "/tmp/r.%q{RANK}.%p.jsonl", "-o", err,
				   sizeof(err)), 0, "%s", err);
	rp_options_finish(&opts);
}

Test(output_path, device_lock_timeout_is_an_option_with_a_default)
{
	struct rp_options opts;
	rp_options_init(&opts);
	cr_assert_eq(opts.device_lock_timeout, 60);
	cr_assert_eq(rp_option_set(&opts, RP_OPT_DEVICE_LOCK_TIMEOUT, "5",
				   "RANGEPROF_DEVICE_LOCK_TIMEOUT", err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(opts.device_lock_timeout, 5);
	cr_assert_neq(rp_option_set(&opts, RP_OPT_DEVICE_LOCK_TIMEOUT, "-1", "--device-lock-timeout",
				    err, sizeof(err)), 0);
	rp_options_finish(&opts);
}
