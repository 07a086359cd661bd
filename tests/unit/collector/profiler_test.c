/* tests/unit/collector/profiler_test.c - the messages for the failure modes the GPU
 * machine cannot produce (it permits counters and is supported): each names the call and
 * says what to do. The paths that carry them on are the ones the GPU suite exercises
 * with an unknown metric and under ncu. */
#include <criterion/criterion.h>
#include <string.h>

#include "collector/profiler.h"

Test(profiler, insufficient_privileges_says_how_to_enable_counters)
{
	char err[512];
	cr_assert_eq(collector_cupti_failure("cuptiProfilerGetCounterAvailability",
					     CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, err, sizeof(err)), -1);
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
