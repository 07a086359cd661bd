/* tests/unit/collector/clock_test.c - --clock-control base against a stand-in NVML (the
 * GPU machine is shared and its clocks are never touched): the lock uses the base clock,
 * and the clocks are reset on every exit path - explicitly, at exit, and on a fatal
 * signal - exactly once; without permission the message says what to do. */
#include <criterion/criterion.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collector/device.h"

static char log_path[64];
static char err[512];

static void setup(void)
{
	snprintf(log_path, sizeof(log_path), "/tmp/fake-nvml-%d.log", (int)getpid());
	unlink(log_path);
	setenv("FAKE_NVML_LOG", log_path, 1);
	unsetenv("FAKE_NVML_DENY");
	cr_assert_eq(collector_nvml_open(getenv("FAKE_NVML"), err, sizeof(err)), 0, "%s", err);
}

static void teardown(void) { unlink(log_path); }

static char *read_log(void)
{
	static char text[1024];
	text[0] = '\0';
	FILE *f = fopen(log_path, "r");
	if (f) {
		size_t n = fread(text, 1, sizeof(text) - 1, f);
		text[n] = '\0';
		fclose(f);
	}
	return text;
}

TestSuite(clock, .init = setup, .fini = teardown);

Test(clock, lock_uses_the_base_clock_and_restore_resets_once)
{
	unsigned mhz = 0;
	cr_assert_eq(collector_clock_lock_base("GPU-1234", &mhz, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(mhz, 1590);
	cr_assert_str_eq(read_log(), "lock 1590 1590\n");
	collector_clock_restore();
	collector_clock_restore();
	cr_assert_str_eq(read_log(), "lock 1590 1590\nreset\n");
}

Test(clock, normal_exit_restores_the_clock)
{
	pid_t child = fork();
	if (child == 0) {
		unsigned mhz;
		collector_clock_lock_base("GPU-1234", &mhz, err, sizeof(err));
		exit(5); /* atexit handlers run */
	}
	int status;
	waitpid(child, &status, 0);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 5, "exit status kept");
	cr_assert_str_eq(read_log(), "lock 1590 1590\nreset\n");
}

Test(clock, fatal_signal_restores_the_clock_and_still_kills)
{
	pid_t child = fork();
	if (child == 0) {
		unsigned mhz;
		collector_clock_lock_base("GPU-1234", &mhz, err, sizeof(err));
		raise(SIGTERM);
		_exit(0);
	}
	int status;
	waitpid(child, &status, 0);
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM, "died by the same signal");
	cr_assert_str_eq(read_log(), "lock 1590 1590\nreset\n");
}

static volatile sig_atomic_t app_handler_calls;
static void app_handler(int sig, siginfo_t *info, void *context)
{
	(void)sig, (void)info, (void)context;
	app_handler_calls++;
}

Test(clock, the_applications_own_handler_gets_the_signal_and_keeps_it)
{
	pid_t child = fork();
	if (child == 0) {
		struct sigaction sa = { .sa_sigaction = app_handler, .sa_flags = SA_SIGINFO };
		sigemptyset(&sa.sa_mask);
		sigaction(SIGINT, &sa, NULL);
		unsigned mhz;
		collector_clock_lock_base("GPU-1234", &mhz, err, sizeof(err));
		raise(SIGINT);
		raise(SIGINT); /* the application's handler again, not the default action */
		_exit(app_handler_calls == 2 ? 7 : 1);
	}
	int status;
	waitpid(child, &status, 0);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 7, "status %d", status);
	cr_assert_str_eq(read_log(), "lock 1590 1590\nreset\n");
}

Test(clock, without_permission_nothing_is_locked_and_the_message_says_why)
{
	setenv("FAKE_NVML_DENY", "1", 1);
	unsigned mhz = 0;
	cr_assert_neq(collector_clock_lock_base("GPU-1234", &mhz, err, sizeof(err)), 0);
	cr_assert(strstr(err, "--clock-control 'base'"), "%s", err);
	cr_assert(strstr(err, "needs root"), "%s", err);
	cr_assert_str_eq(read_log(), "");
}

Test(clock, temperature_comes_from_nvml)
{
	cr_assert_float_eq(collector_nvml_temperature("GPU-1234"), 41, 0);
	cr_assert(isnan(collector_nvml_temperature("not-a-uuid")));
}
