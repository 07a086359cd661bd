/* tests/unit/common/output_path_test.c - %q{ENV} in --output gives each rank of a job
 * its own file, as in ncu; a loop of symbolic links is refused as one. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

Test(output_path, a_loop_of_symbolic_links_is_named_as_a_loop)
{
	char dir[] = "/tmp/rp_loop_XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char a[64], b[64], in_loop[96];
	snprintf(a, sizeof(a), "%s/a", dir);
	snprintf(b, sizeof(b), "%s/b", dir);
	cr_assert_eq(symlink(b, a), 0);
	cr_assert_eq(symlink(a, b), 0);
	/* The file a loop: it was said to be a link to a missing file. */
	cr_assert_neq(rp_output_check(a, 1, "-o", err, sizeof(err)), 0);
	cr_assert(strstr(err, "is a loop of symbolic links"), "%s", err);
	cr_assert_null(strstr(err, "missing"), "%s", err);
	/* The directory a loop. */
	snprintf(in_loop, sizeof(in_loop), "%s/x.jsonl", a);
	cr_assert_neq(rp_output_check(in_loop, 1, "-o", err, sizeof(err)), 0);
	char want[160];
	snprintf(want, sizeof(want), "directory '%s' is a loop of symbolic links", a);
	cr_assert(strstr(err, want), "%s", err);
	unlink(a);
	unlink(b);
	rmdir(dir);
}

/* The templates doc/records.md shows for torchrun and srun ("Ranks and jobs"). */
Test(output_path, documented_rank_templates_give_a_file_per_rank)
{
	setenv("RANK", "5", 1);
	cr_assert_eq(rp_output_path_expand("out/r.%q{RANK}.jsonl", 1, path, sizeof(path), err,
					   sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(path, "out/r.5.jsonl");
	unsetenv("RANK");
	setenv("SLURM_PROCID", "12", 1);
	char host[256] = "";
	gethostname(host, sizeof(host) - 1);
	char want[600];
	snprintf(want, sizeof(want), "out/%s.12.jsonl", host);
	cr_assert_eq(rp_output_path_expand("out/%h.%q{SLURM_PROCID}.jsonl", 1, path, sizeof(path),
					   err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(path, want);
	unsetenv("SLURM_PROCID");
}
