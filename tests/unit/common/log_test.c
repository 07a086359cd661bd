/* tests/unit/common/log_test.c - common/log.c: quiet drops the progress lines only;
 * silent (the control API's quiet, Nsight Python's verbosity SILENT) drops every line. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdio.h>

#include "common/log.h"

static void say_everything(void)
{
	rp_log_error("an error");
	rp_log_warn("a warning");
	rp_log_note("nothing measured: a note");
	rp_log_progress("k [r] launch 0: 5 runs, 1 pass");
	fflush(stderr);
}

Test(log, every_kind_of_line_is_written_by_default, .init = cr_redirect_stderr)
{
	say_everything();
	cr_assert_stderr_eq_str("rangeprof: error: an error\n"
				"rangeprof: warning: a warning\n"
				"rangeprof: nothing measured: a note\n"
				"==RANGEPROF== k [r] launch 0: 5 runs, 1 pass\n");
}

Test(log, quiet_drops_the_progress_lines_only, .init = cr_redirect_stderr)
{
	rp_log_set_quiet(true);
	cr_assert(rp_log_quiet());
	say_everything();
	cr_assert_stderr_eq_str("rangeprof: error: an error\n"
				"rangeprof: warning: a warning\n"
				"rangeprof: nothing measured: a note\n");
}

Test(log, silent_drops_every_line_until_it_is_turned_off, .init = cr_redirect_stderr)
{
	rp_log_set_silent(true);
	cr_assert(rp_log_quiet(), "the exit table asks rp_log_quiet");
	say_everything();
	rp_log_set_silent(false);
	cr_assert_not(rp_log_quiet());
	rp_log_warn("back");
	fflush(stderr);
	cr_assert_stderr_eq_str("rangeprof: warning: back\n");
}
