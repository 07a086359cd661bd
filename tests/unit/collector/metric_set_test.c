/* tests/unit/collector/metric_set_test.c - collector/profiler.c's metric sets and
 * measurement with launch__ metrics in the list, on stand-ins for CUPTI's host and range
 * profiler calls (rp_api): CUPTI is configured with the other metrics only (the timer
 * alone when there are none), the values come back in the user's order with the
 * launch__ ones NaN for the workload to fill, and their units are ncu's. No GPU. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "collector/api.h"
#include "collector/profiler.h"
#include "common/error.h"
#include "common/launch_metrics.h"

/* What CUPTI was configured with, and how many ranges a pass has. */
static char configured[16][128];
static size_t configured_count;
static size_t ranges_total;

static CUptiResult ok_init(CUpti_Profiler_Initialize_Params *p) { (void)p; return CUPTI_SUCCESS; }
static CUptiResult chip(CUpti_Device_GetChipName_Params *p)
{
	p->pChipName = "GH100";
	return CUPTI_SUCCESS;
}
static CUptiResult availability(CUpti_Profiler_GetCounterAvailability_Params *p)
{
	p->counterAvailabilityImageSize = 16;
	return CUPTI_SUCCESS;
}
static int host_object;
static CUptiResult host_init(CUpti_Profiler_Host_Initialize_Params *p)
{
	p->pHostObject = (CUpti_Profiler_Host_Object *)&host_object;
	return CUPTI_SUCCESS;
}
static CUptiResult host_deinit(CUpti_Profiler_Host_Deinitialize_Params *p) { (void)p; return CUPTI_SUCCESS; }
static CUptiResult add_metrics(CUpti_Profiler_Host_ConfigAddMetrics_Params *p)
{
	configured_count = p->numMetrics;
	for (size_t i = 0; i < p->numMetrics && i < 16; i++) {
		snprintf(configured[i], sizeof(configured[i]), "%s", p->ppMetricNames[i]);
		if (!strncmp(p->ppMetricNames[i], "launch__", 8))
			return CUPTI_ERROR_INVALID_METRIC_NAME;
	}
	return CUPTI_SUCCESS;
}
static CUptiResult image_size(CUpti_Profiler_Host_GetConfigImageSize_Params *p)
{
	p->configImageSize = 8;
	return CUPTI_SUCCESS;
}
static CUptiResult image(CUpti_Profiler_Host_GetConfigImage_Params *p) { (void)p; return CUPTI_SUCCESS; }
static CUptiResult passes(CUpti_Profiler_Host_GetNumOfPasses_Params *p)
{
	p->numOfPasses = 1;
	return CUPTI_SUCCESS;
}
static CUptiResult properties(CUpti_Profiler_Host_GetMetricProperties_Params *p)
{
	p->pDimUnit = "nsecond";
	p->pHwUnit = "";
	return CUPTI_SUCCESS;
}
static int profiler_object;
static CUptiResult enable(CUpti_RangeProfiler_Enable_Params *p)
{
	p->pRangeProfilerObject = (CUpti_RangeProfiler_Object *)&profiler_object;
	return CUPTI_SUCCESS;
}
static CUptiResult disable(CUpti_RangeProfiler_Disable_Params *p) { (void)p; return CUPTI_SUCCESS; }
static CUptiResult data_size(CUpti_RangeProfiler_GetCounterDataSize_Params *p)
{
	for (size_t i = 0; i < p->numMetrics; i++)
		cr_assert(strncmp(p->pMetricNames[i], "launch__", 8), "CUPTI sized for %s",
			  p->pMetricNames[i]);
	p->counterDataSize = 64;
	return CUPTI_SUCCESS;
}
static CUptiResult data_init(CUpti_RangeProfiler_CounterDataImage_Initialize_Params *p) { (void)p; return CUPTI_SUCCESS; }
static size_t configured_ranges; /* SetConfig's maxRangesPerPass, the last one */
static CUptiResult set_config(CUpti_RangeProfiler_SetConfig_Params *p)
{
	configured_ranges = p->maxRangesPerPass;
	return CUPTI_SUCCESS;
}
static CUptiResult start(CUpti_RangeProfiler_Start_Params *p) { (void)p; return CUPTI_SUCCESS; }
static CUptiResult stop(CUpti_RangeProfiler_Stop_Params *p)
{
	p->isAllPassSubmitted = 1;
	return CUPTI_SUCCESS;
}
static CUptiResult decode(CUpti_RangeProfiler_DecodeData_Params *p) { (void)p; return CUPTI_SUCCESS; }
static CUptiResult data_info(CUpti_RangeProfiler_GetCounterDataInfo_Params *p)
{
	p->numTotalRanges = ranges_total;
	return CUPTI_SUCCESS;
}
/* Metric i of what CUPTI was configured with has the value 100 * (i + 1) + the range. */
static CUptiResult evaluate(CUpti_Profiler_Host_EvaluateToGpuValues_Params *p)
{
	for (size_t i = 0; i < p->numMetrics; i++) {
		cr_assert(strncmp(p->ppMetricNames[i], "launch__", 8));
		p->pMetricValues[i] = 100.0 * (double)(i + 1) + (double)p->rangeIndex;
	}
	return CUPTI_SUCCESS;
}
static CUresult synchronize(void) { return CUDA_SUCCESS; }
static int run(void *arg, unsigned r, unsigned pass) { (void)arg, (void)r, (void)pass; return 0; }

static void stand_ins(void)
{
	rp_api.cuptiProfilerInitialize = ok_init;
	rp_api.cuptiDeviceGetChipName = chip;
	rp_api.cuptiProfilerGetCounterAvailability = availability;
	rp_api.cuptiProfilerHostInitialize = host_init;
	rp_api.cuptiProfilerHostDeinitialize = host_deinit;
	rp_api.cuptiProfilerHostConfigAddMetrics = add_metrics;
	rp_api.cuptiProfilerHostGetConfigImageSize = image_size;
	rp_api.cuptiProfilerHostGetConfigImage = image;
	rp_api.cuptiProfilerHostGetNumOfPasses = passes;
	rp_api.cuptiProfilerHostGetMetricProperties = properties;
	rp_api.cuptiRangeProfilerEnable = enable;
	rp_api.cuptiRangeProfilerDisable = disable;
	rp_api.cuptiRangeProfilerGetCounterDataSize = data_size;
	rp_api.cuptiRangeProfilerCounterDataImageInitialize = data_init;
	rp_api.cuptiRangeProfilerSetConfig = set_config;
	rp_api.cuptiRangeProfilerStart = start;
	rp_api.cuptiRangeProfilerStop = stop;
	rp_api.cuptiRangeProfilerDecodeData = decode;
	rp_api.cuptiRangeProfilerGetCounterDataInfo = data_info;
	rp_api.cuptiProfilerHostEvaluateToGpuValues = evaluate;
	rp_api.cuCtxSynchronize = synchronize;
}

TestSuite(metric_set, .init = stand_ins);

/* Two runs of the set: the values, run-major, in the user's order. */
static void measure(struct collector_metric_set *set, double *values, double clocks[2])
{
	struct collector_profiler *prof = NULL;
	char err[512];
	cr_assert_eq(collector_profiler_create(NULL, COLLECTOR_RANGE_PER_KERNEL, &prof, err,
					       sizeof(err)), 0, "%s", err);
	unsigned passes_done = 0;
	ranges_total = 4;
	cr_assert_eq(collector_profiler_measure(prof, set, 2, 2, run, NULL, values, clocks,
						&passes_done, NULL, err, sizeof(err)), 0, "%s", err);
	collector_profiler_destroy(prof);
}

Test(metric_set, cupti_gets_the_other_metrics_and_launch_ones_come_back_nan_in_place)
{
	struct collector_metric_set *set = NULL;
	char err[512];
	cr_assert_eq(collector_metric_set_create(NULL, 0, "launch__sm_count,"
						 "dram__bytes_read.sum,launch__grid_size,"
						 "gpu__time_duration.sum", &set, err, sizeof(err)),
		     0, "%s", err);
	cr_assert_eq(collector_metric_set_user_count(set), 4);
	const char *const *names = collector_metric_set_names(set);
	cr_assert_str_eq(names[0], "launch__sm_count");
	cr_assert_str_eq(names[2], "launch__grid_size");
	cr_assert_eq(configured_count, 3, "two counters and the clock counter, no launch__ one");
	cr_assert_str_eq(configured[0], "dram__bytes_read.sum");
	cr_assert_str_eq(configured[1], "gpu__time_duration.sum");
	cr_assert_str_eq(configured[2], COLLECTOR_CLOCK_METRIC);
	cr_assert_str_eq(collector_metric_set_units(set)[0], "SM");
	cr_assert_str_eq(collector_metric_set_units(set)[2], "");
	cr_assert_eq(collector_metric_set_launch(set, 0), RP_LAUNCH_SM_COUNT);
	cr_assert_eq(collector_metric_set_launch(set, 1), -1);
	cr_assert(collector_metric_set_measures_clock(set));
	double values[8], clocks[2];
	measure(set, values, clocks);
	/* Range 1 and 3 are the measured kernels (each run: flush, kernel). */
	cr_assert(isnan(values[0]) && isnan(values[2]) && isnan(values[4]) && isnan(values[6]));
	cr_assert_eq(values[1], 101);
	cr_assert_eq(values[3], 201);
	cr_assert_eq(values[5], 103);
	cr_assert_eq(values[7], 203);
	cr_assert_eq(clocks[1], 303, "the clock from its own place in CUPTI's list");
	collector_metric_set_destroy(set);
}

Test(metric_set, only_launch_metrics_configure_the_timer_alone_without_the_clock)
{
	struct collector_metric_set *set = NULL;
	char err[512];
	cr_assert_eq(collector_metric_set_create(NULL, 0, "launch__sm_count", &set, err,
						 sizeof(err)), 0, "%s", err);
	cr_assert_eq(configured_count, 1);
	cr_assert_str_eq(configured[0], "gpu__time_duration.sum");
	cr_assert_eq(collector_metric_set_user_count(set), 1, "the timer is not the user's");
	cr_assert_not(collector_metric_set_measures_clock(set), "NVML gives the clock, as for "
		      "a time-only set");
	double values[2], clocks[2];
	measure(set, values, clocks);
	cr_assert(isnan(values[0]) && isnan(values[1]));
	collector_metric_set_destroy(set);
}

static CUptiResult no_base_metrics(CUpti_Profiler_Host_GetBaseMetrics_Params *p)
{
	p->numMetrics = 0;
	return CUPTI_SUCCESS;
}

Test(metric_set, list_metrics_lists_the_launch_metrics_after_the_devices,
     .init = cr_redirect_stdout)
{
	stand_ins();
	rp_api.cuptiProfilerHostGetBaseMetrics = no_base_metrics;
	char err[256];
	cr_assert_eq(collector_list_metrics(NULL, 0, err, sizeof(err)), 0, "%s", err);
	fflush(stdout);
	char out[8192] = "";
	FILE *f = cr_get_redirected_stdout();
	size_t n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = '\0';
	const struct rp_launch_metric_desc *t = rp_launch_metric_table();
	for (size_t i = 0; i < RP_LAUNCH_METRIC_COUNT; i++)
		cr_assert(strstr(out, t[i].name), "%s is listed: %s", t[i].name, out);
	cr_assert(strstr(out, "launch__sm_count") && strstr(out, " SM "), "%s", out);
}

/* CUPTI's calls in order, for the first run's own pass. */
static char calls[256];
static CUptiResult start_logged(CUpti_RangeProfiler_Start_Params *p)
{
	(void)p;
	strcat(calls, "start ");
	return CUPTI_SUCCESS;
}
static CUptiResult stop_logged(CUpti_RangeProfiler_Stop_Params *p)
{
	strcat(calls, "stop ");
	p->isAllPassSubmitted = 1;
	return CUPTI_SUCCESS;
}
static CUptiResult stop_more_passes(CUpti_RangeProfiler_Stop_Params *p)
{
	p->isAllPassSubmitted = 0;
	return CUPTI_SUCCESS;
}
static CUptiResult decode_logged(CUpti_RangeProfiler_DecodeData_Params *p)
{
	(void)p;
	strcat(calls, "decode ");
	return CUPTI_SUCCESS;
}

Test(metric_set, the_first_runs_own_pass_gives_the_measured_kernels_values_once_closed)
{
	struct collector_metric_set *set = NULL;
	char err[512];
	cr_assert_eq(collector_metric_set_create(NULL, 0, "gpu__time_duration.sum", &set, err,
						 sizeof(err)), 0, "%s", err);
	struct collector_profiler *prof = NULL;
	cr_assert_eq(collector_profiler_create(NULL, COLLECTOR_RANGE_PER_KERNEL, &prof, err,
					       sizeof(err)), 0, "%s", err);
	rp_api.cuptiRangeProfilerStart = start_logged;
	rp_api.cuptiRangeProfilerStop = stop_logged;
	rp_api.cuptiRangeProfilerDecodeData = decode_logged;
	calls[0] = 0;
	cr_assert_eq(collector_profiler_open_first_pass(prof, set, 40, NULL, err, sizeof(err)), 0,
		     "%s", err);
	cr_assert_str_eq(calls, "start ", "started, the run left to the caller");
	cr_assert_eq(configured_ranges, 40, "the new object's first pass has room for the whole "
		     "measurement, not for the one run it holds");
	ranges_total = 2; /* its flush and the application's kernel */
	double value = 0, clock = 0;
	cr_assert_eq(collector_profiler_close_first_pass(prof, set, 2, &value, &clock, NULL, err,
							  sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(calls, "start stop decode ");
	cr_assert_eq(value, 101, "range 1, the kernel after the flush");
	cr_assert(isnan(clock), "a timer-only set does not measure the clock");
	cr_assert_neq(collector_profiler_close_first_pass(prof, set, 2, &value, &clock, NULL, err,
							  sizeof(err)), 0, "closed once");
	cr_assert_str_eq(err, "no pass is open");
	/* Another kernel in the pass (another thread's launch): said, not valued. */
	cr_assert_eq(collector_profiler_open_first_pass(prof, set, 40, NULL, err, sizeof(err)), 0);
	ranges_total = 3;
	cr_assert_neq(collector_profiler_close_first_pass(prof, set, 2, &value, &clock, NULL, err,
							  sizeof(err)), 0);
	cr_assert(strstr(err, "recorded 3 ranges for 2 kernel launches"), "%s", err);
	/* A set needing another pass cannot take the application's launch as its first run. */
	rp_api.cuptiRangeProfilerStop = stop_more_passes;
	cr_assert_eq(collector_profiler_open_first_pass(prof, set, 40, NULL, err, sizeof(err)), 0);
	cr_assert_neq(collector_profiler_close_first_pass(prof, set, 2, &value, &clock, NULL, err,
							  sizeof(err)), 0);
	cr_assert_str_eq(err, "the metric set needs more than one pass");
	/* A pass dropped: stopped, and the next opens afresh. */
	rp_api.cuptiRangeProfilerStop = stop_logged;
	calls[0] = 0;
	cr_assert_eq(collector_profiler_open_first_pass(prof, set, 40, NULL, err, sizeof(err)), 0);
	collector_profiler_drop_open_pass(prof);
	collector_profiler_drop_open_pass(prof);
	cr_assert_str_eq(calls, "start stop decode ", "dropped once: nothing open after");
	collector_profiler_destroy(prof);
	collector_metric_set_destroy(set);
}
