/* tests/unit/collector/profiler_test.c - the messages for the failure modes the GPU
 * machine cannot produce (it permits counters and is supported): each names the call and
 * says what to do. The paths that carry them on are the ones the GPU suite exercises
 * with an unknown metric and under ncu. */
#include <criterion/criterion.h>
#include <string.h>

#include "collector/profiler.h"
#include "common/error.h"

Test(profiler, insufficient_privileges_says_how_to_enable_counters)
{
	char err[512];
	cr_assert_eq(collector_cupti_failure("cuptiProfilerGetCounterAvailability",
					     CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, err, sizeof(err)),
		     RP_ERR_PRIVILEGES, "the caller stops measuring on this code");
	cr_assert(strstr(err, "cuptiProfilerGetCounterAvailability: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"), "%s", err);
	cr_assert(strstr(err, "NVreg_RestrictProfilingToAdminUsers=0"), "%s", err);
	cr_assert(strstr(err, "run as root"), "%s", err);
}

Test(profiler, unsupported_device_is_named_as_such)
{
	char err[512];
	collector_cupti_failure("cuptiProfilerHostInitialize", CUPTI_ERROR_NOT_SUPPORTED, err,
				sizeof(err));
	cr_assert(strstr(err, "not supported by the CUPTI range profiler"), "%s", err);
	collector_cupti_failure("cuptiProfilerHostInitialize", CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED,
				err, sizeof(err));
	cr_assert(strstr(err, "Turing or newer"), "%s", err);
}

/* One test of "a timer metric" for the set's clock and for how the set is built (it was
 * written out twice in profiler.c). */
Test(profiler, timer_metrics_are_the_gpu__time_duration_ones)
{
	cr_assert(collector_metric_is_timer("gpu__time_duration.sum", 22));
	cr_assert(collector_metric_is_timer("gpu__time_duration.max", 22));
	cr_assert(collector_metric_is_timer("gpu__time_duration.sum,dram__bytes_read.sum", 22),
		  "one element of a list");
	cr_assert_not(collector_metric_is_timer("gpu__time_duration.sum", 12), "cut short");
	cr_assert_not(collector_metric_is_timer("dram__bytes_read.sum", 20));
	cr_assert_not(collector_metric_is_timer("gpc__cycles_elapsed.avg.per_second", 34));
}

Test(profiler, another_profiler_is_named)
{
	char err[512];
	collector_cupti_failure("cuptiRangeProfilerEnable", CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED,
				err, sizeof(err));
	cr_assert(strstr(err, "another profiler (ncu, nsys, torch.profiler)"), "%s", err);
}

/* Callers decide on the code, never on the message (common/error.h): a busy profiling
 * hardware is waited for, a device not supported is not measured, anything else fails the
 * launch. */
Test(profiler, each_cupti_failure_that_changes_what_callers_do_has_its_own_code)
{
	char err[512];
	cr_assert_eq(collector_cupti_failure("cuptiRangeProfilerStart", CUPTI_ERROR_HARDWARE_BUSY,
					     err, sizeof(err)), RP_ERR_HARDWARE_BUSY);
	cr_assert(strstr(err, "cuptiRangeProfilerStart: "), "%s", err); /* names come from CUPTI */
	cr_assert_eq(collector_cupti_failure("cuptiProfilerHostInitialize", CUPTI_ERROR_NOT_SUPPORTED,
					     err, sizeof(err)), RP_ERR_NOT_SUPPORTED);
	cr_assert_eq(collector_cupti_failure("cuptiRangeProfilerStop", CUPTI_ERROR_UNKNOWN, err,
					     sizeof(err)), RP_ERR_FAILED);
	cr_assert_eq((int)RP_ERR_FAILED, -1, "a plain failure keeps the -1 callers compared with");
	cr_assert_str_eq(rp_error_name(RP_ERR_HARDWARE_BUSY), "RP_ERR_HARDWARE_BUSY");
	cr_assert_str_eq(rp_error_name(-99), "RP_ERR_FAILED", "a code not in the table");
	cr_assert(strstr(rp_error_text(RP_ERR_RESTORE), "memory back"));
}
