/* tests/unit/inject/measure_test.c - the measuring loop (inject/measure/measure.c) with the kernel
 * and graph workloads (kernel_workload.c, whole_workload.c): how many batches and runs,
 * what each run does, which records come out, --runs auto's stopping rule, failed and busy
 * batches. On stand-ins for the driver, CUPTI, the profiler, NVML and memory/
 * (fake_world.c): no GPU. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "collector/cost.h"
#include "collector/records.h"
#include "inject/inject.h"
#include "tests/unit/inject/fake_world.h"

TestSuite(measure, .init = fake_world_init, .fini = fake_world_finish);

static void configure(struct inject_config c)
{
	inject_session_configure(&c);
}

/* A kernel's launch, measured: its first launch is verified from ENTER to EXIT and its
 * runs follow at EXIT; a later one is measured at ENTER. */
static void launch(unsigned f, uint64_t index)
{
	struct inject_launch l = fake_launch(fw.current, f, index);
	struct measurement *m = inject_save_enter(&l, "kernel(float*)");
	if (m)
		inject_save_exit(m, true);
}

/* 1000 and 3000 by turns: a CI of more than 3 % of the mean for any count of runs here. */
static double noisy(unsigned run, size_t metric)
{
	(void)metric;
	return run % 2 ? 3000 : 1000;
}

Test(measure, runs_5_is_one_batch_of_5_runs_each_restoring_flushing_and_relaunching)
{
	launch(0, 1);
	cr_assert_eq(fw.batches, 1);
	cr_assert_eq(fw.batch_runs[0], 5);
	cr_assert_eq(fw.batch_kernels[0], 2, "the flush and the kernel in each run");
	cr_assert_eq(fw.restores_inputs, 5, "each run starts from the saved inputs");
	cr_assert_eq(fw.flushes, 5);
	cr_assert_eq(fw.relaunches, 5);
	cr_assert_eq(fake_records("run"), 5);
	cr_assert_eq(fake_records("summary"), 1);
	cJSON *summary = fake_record("summary", 0);
	cr_assert_eq(fake_number(summary, "metrics/gpu__time_duration.sum/n"), 5);
	cr_assert_eq(fake_number(summary, "metrics/gpu__time_duration.sum/mean"), 1000);
	cr_assert_null(fake_string(summary, "runs_auto/stopped"), "no runs_auto under --runs 5");
	cr_assert_eq(fw.restores_result, 1, "the application's own result put back after");
}

Test(measure, cache_control_none_runs_without_the_flush)
{
	struct inject_config c = fake_config();
	c.cache_control = RP_CACHE_NONE;
	configure(c);
	launch(0, 1);
	cr_assert_eq(fw.batch_kernels[0], 1, "the kernel alone in each run");
	cr_assert_eq(fw.flushes, 0);
	cr_assert_eq(fw.relaunches, 5);
	cr_assert_eq(fw.restores_inputs, 5);
	cr_assert_eq(fake_records("run"), 5);
}

/* A flush that cannot leave the L2 empty (inject/session/flush.c's notice) still flushes every
 * run, and says so in one warning for the device and reason, not one per launch. */
Test(measure, a_flush_that_cannot_discard_is_said_once)
{
	fw.flush_notice = "the L2 flush cannot discard the lines it leaves on device 0 (test)";
	launch(0, 1);
	launch(0, 2);
	cr_assert_eq(fw.flushes, 10, "every run still flushed");
	cr_assert_eq(fake_records("run"), 10);
	cr_assert_eq(fake_messages("warning", "cannot discard the lines it leaves"), 1);
	cJSON *w = fake_record("warning", 0);
	cr_assert_eq(fake_number(w, "concerns/device"), 0);
}

/* A compiled image of the flush the driver refused (its text was compiled instead, the
 * JIT the image spares): one warning for the device, naming the driver's error, and every
 * run still measured, also in a second context of the device (the same driver). */
Test(measure, a_refused_flush_image_is_said_once_per_device)
{
	fw.flush_image_refused = CUDA_ERROR_NO_BINARY_FOR_GPU;
	launch(0, 1);
	launch(0, 2);
	fw.current = fake_context(1);
	launch(0, 3);
	cr_assert_eq(fake_records("run"), 15);
	cr_assert_eq(fake_messages("warning", "refused the cache flush's compiled image on "
				   "device 0"), 1);
	cJSON *w = fake_record("warning", 0);
	cr_assert_eq(fake_number(w, "concerns/device"), 0);
}

/* Under --cache-control none no flush runs: nothing to say about one that cannot discard. */
Test(measure, no_flush_no_word_about_its_discard)
{
	struct inject_config c = fake_config();
	c.cache_control = RP_CACHE_NONE;
	configure(c);
	fw.flush_notice = "the L2 flush cannot discard the lines it leaves on device 0 (test)";
	launch(0, 1);
	cr_assert_eq(fake_records("run"), 5);
	cr_assert_eq(fake_messages("warning", "cannot discard"), 0);
}

Test(measure, every_pass_of_a_multi_pass_set_replays_every_run)
{
	fw.passes = 3;
	launch(0, 1);
	cr_assert_eq(fw.batches, 1);
	cr_assert_eq(fw.relaunches, 15);
	cr_assert_eq(fw.restores_inputs, 15, "each run of each pass starts from the inputs");
	cr_assert_eq(fw.flushes, 15);
	cr_assert_eq(fake_records("run"), 5, "one record per run, not per pass");
	cr_assert_eq(fake_number(fake_record("summary", 0), "passes"), 3);
}

Test(measure, runs_auto_with_stable_values_stops_at_runs_min)
{
	struct inject_config c = fake_config();
	c.runs = RP_RUNS_AUTO;
	c.runs_min = 6;
	c.runs_batch = 2;
	c.runs_max = 40;
	configure(c);
	launch(0, 1);
	cr_assert_eq(fw.batches, 3, "batches of 2 until 6 runs have a value");
	for (unsigned b = 0; b < 3; b++)
		cr_assert_eq(fw.batch_runs[b], 2);
	cr_assert_eq(fake_records("run"), 6);
	cJSON *summary = fake_record("summary", 0);
	cr_assert_str_eq(fake_string(summary, "runs_auto/stopped"), "target_ci_reached");
	cr_assert_eq(fake_number(summary, "runs_auto/batches"), 3);
	cr_assert_eq(fw.relaunches, 6);
	cr_assert_eq(fw.restores_inputs, 6);
}

Test(measure, runs_auto_with_noisy_values_goes_on_to_runs_max)
{
	struct inject_config c = fake_config();
	c.runs = RP_RUNS_AUTO;
	c.runs_min = 4;
	c.runs_batch = 5;
	c.runs_max = 12;
	configure(c);
	fw.value = noisy;
	launch(0, 1);
	cr_assert_eq(fw.batches, 3);
	cr_assert_eq(fw.batch_runs[0], 5);
	cr_assert_eq(fw.batch_runs[1], 5);
	cr_assert_eq(fw.batch_runs[2], 2, "the last batch only up to --runs-max");
	cr_assert_eq(fake_records("run"), 12);
	cJSON *summary = fake_record("summary", 0);
	cr_assert_str_eq(fake_string(summary, "runs_auto/stopped"), "max_runs");
	cr_assert_gt(fake_number(summary, "runs_auto/ci_pct"), 1);
}

Test(measure, runs_auto_with_noisy_values_stops_at_the_time_budget)
{
	struct inject_config c = fake_config();
	c.runs = RP_RUNS_AUTO;
	c.runs_min = 4;
	c.runs_batch = 2;
	c.runs_max = 1000;
	c.runs_time_budget = 0.06;
	configure(c);
	fw.value = noisy;
	fw.batch_sleep_ms = 10;
	double started = collector_cost_now();
	launch(0, 1);
	cJSON *summary = fake_record("summary", 0);
	cr_assert_str_eq(fake_string(summary, "runs_auto/stopped"), "time_budget");
	size_t runs = fake_records("run");
	cr_assert_geq(runs, 4, "never fewer than --runs-min");
	cr_assert_lt(runs, 100, "%zu runs: the budget stops it long before --runs-max", runs);
	cr_assert_eq(runs, fw.runs_measured);
	cr_assert_geq(fake_number(summary, "runs_auto/elapsed_s"), 0.06);
	cr_assert_lt(collector_cost_now() - started, 2000);
}

Test(measure, a_failed_batch_after_some_runs_records_those_runs)
{
	struct inject_config c = fake_config();
	c.runs = RP_RUNS_AUTO;
	c.runs_batch = 2;
	configure(c);
	fw.value = noisy;
	fw.fail_batch = 3;
	launch(0, 1);
	cr_assert_eq(fw.batches, 3);
	cr_assert_eq(fake_records("run"), 4, "the two batches before the failure");
	cJSON *summary = fake_record("summary", 0);
	cr_assert_not_null(summary);
	cr_assert_str_eq(fake_string(summary, "runs_auto/stopped"), "error");
	cr_assert_eq(fake_number(summary, "metrics/gpu__time_duration.sum/n"), 4);
	cr_assert_eq(fake_messages("error", "the runs measured before are recorded"), 1);
}

Test(measure, a_failed_first_batch_records_nothing)
{
	fw.fail_batch = 1;
	launch(0, 1);
	cr_assert_eq(fake_records("run"), 0);
	cr_assert_eq(fake_records("summary"), 0);
	cr_assert_eq(fake_messages("error", "CUPTI_ERROR_UNKNOWN; not measured"), 1);
}

Test(measure, a_batch_busy_from_outside_rangeprof_is_tried_again_and_measured_when_clear)
{
	fw.busy_batches = 3;
	launch(0, 1);
	cr_assert_eq(fw.batches, 4, "three busy, then the one measured");
	cr_assert_eq(fw.profiler_creates, 4, "a fresh profiler for every try");
	cr_assert_eq(fw.profiler_destroys, 3);
	cr_assert_eq(fake_records("run"), 5);
	cr_assert_eq(fake_records("summary"), 1);
	cr_assert_eq(fake_messages("warning", "HARDWARE_BUSY"), 0);
}

Test(measure, a_metric_set_busy_from_outside_rangeprof_is_tried_again)
{
	fw.busy_sets = 2;
	launch(0, 1);
	cr_assert_eq(fw.set_creates, 3);
	cr_assert_eq(fake_records("run"), 5);
	cr_assert_eq(fake_records("error"), 0);
}

Test(measure, hardware_busy_past_busy_timeout_gives_one_device_busy_warning_and_no_runs)
{
	struct inject_config c = fake_config();
	c.busy_timeout_ms = 50;
	configure(c);
	fw.always_busy = true;
	double started = collector_cost_now();
	launch(0, 1);
	double took = collector_cost_now() - started;
	cr_assert_gt(fw.batches, 1, "tried again while the timeout lasts");
	cr_assert_geq(took, 50, "%.1f ms: waited for --busy-timeout", took);
	cr_assert_lt(took, 1000, "%.1f ms: gave up soon after --busy-timeout", took);
	cr_assert_eq(fake_messages("warning", "CUPTI_ERROR_HARDWARE_BUSY"), 1);
	cr_assert_eq(fake_messages("warning", "a profiler outside rangeprof"), 1);
	cJSON *w = fake_record("warning", 0);
	cr_assert_str_eq(fake_string(w, "concerns/option"), "--busy-timeout");
	cr_assert_eq(fake_records("run"), 0);
	cr_assert_eq(fake_records("summary"), 0);
}

Test(measure, each_launch_given_up_for_a_busy_hardware_says_so_in_its_own_warning)
{
	struct inject_config c = fake_config();
	c.busy_timeout_ms = 20;
	configure(c);
	fw.always_busy = true;
	launch(0, 1);
	launch(0, 2);
	launch(0, 3);
	cr_assert_eq(fake_messages("warning", "a profiler outside rangeprof"), 3,
		     "one per launch of the same kernel, not once per kernel");
	cr_assert_eq(fake_messages("warning", "launch 2 of"), 1);
	cr_assert_eq(fake_records("run"), 0);
}

Test(measure, a_whole_graph_launch_timed_by_events_needs_no_profiler)
{
	struct collector_graph where = { .id = 3, .node = -1, .nodes = 4 };
	inject_whole_workload_graph((CUgraphExec)(uintptr_t)0x6000, NULL, fw.current, 1, 9, &where);
	cr_assert_eq(fw.profiler_creates, 0);
	cr_assert_eq(fw.batches, 0, "no profiler pass for the time alone");
	cr_assert_eq(fw.checkpoint_saves, 1, "a graph may reach any memory");
	cr_assert_eq(fw.checkpoint_restores, 5 + 1, "each run, then the application's");
	cr_assert_eq(fw.checkpoint_frees, 1);
	cr_assert_eq(fw.relaunches, 5);
	cr_assert_eq(fake_records("run"), 5);
	cJSON *summary = fake_record("summary", 0);
	cr_assert_eq(fake_number(summary, "metrics/gpu__time_duration.sum/mean"), 250000);
	cr_assert_str_eq(fake_string(summary, "save/strategy"), "checkpoint");
}

/* ---- launch__ metrics: from the launch and the driver's tables, never from CUPTI ---- */

Test(measure, launch_metrics_come_from_the_launch_and_the_driver_mixed_with_cupti_ones)
{
	struct inject_config c = fake_config();
	c.metrics = "launch__sm_count,gpu__time_duration.sum,launch__grid_size,"
		    "launch__registers_per_thread,launch__waves_per_multiprocessor,"
		    "launch__occupancy_limit_registers,launch__shared_mem_per_block_dynamic";
	configure(c);
	fw.function_attributes[CU_FUNC_ATTRIBUTE_NUM_REGS] = 54;
	fw.active_blocks = 4;
	struct inject_launch l = fake_launch(fw.current, 0, 1);
	l.grid[0] = 500;
	l.block[0] = 256;
	l.shared_mem_bytes = 2048;
	struct measurement *m = inject_save_enter(&l, "regs(float*)");
	if (m)
		inject_save_exit(m, true);
	cr_assert_eq(fake_records("run"), 5);
	for (size_t r = 0; r < 5; r++) {
		cJSON *run = fake_record("run", r);
		cr_assert_eq(fake_number(run, "metrics/launch__sm_count"), 132);
		cr_assert_eq(fake_number(run, "metrics/gpu__time_duration.sum"), 1000,
			     "CUPTI's metric keeps its own value beside them");
		cr_assert_eq(fake_number(run, "metrics/launch__grid_size"), 500);
		cr_assert_eq(fake_number(run, "metrics/launch__registers_per_thread"), 54);
		/* ncu on the H200 for this kernel (54 registers, 256 threads, 500 blocks):
		 * 4 blocks by registers, 0.95 waves (tests/gpu/launch_kernels.cu "regs"). */
		cr_assert_eq(fake_number(run, "metrics/launch__occupancy_limit_registers"), 4);
		cr_assert_float_eq(fake_number(run, "metrics/launch__waves_per_multiprocessor"),
				   500.0 / (4 * 132), 1e-12);
		cr_assert_eq(fake_number(run, "metrics/launch__shared_mem_per_block_dynamic"), 2048);
		cr_assert_str_eq(fake_string(run, "units/launch__sm_count"), "SM");
		cr_assert_str_eq(fake_string(run, "units/launch__registers_per_thread"),
				 "register/thread");
	}
	cr_assert_eq(fw.occupancy_block_size, 256, "occupancy asked for the launch's block");
	cr_assert_eq(fw.occupancy_dynamic_smem, 2048);
	cJSON *summary = fake_record("summary", 0);
	cr_assert_eq(fake_number(summary, "metrics/launch__grid_size/mean"), 500);
	cr_assert_eq(fake_number(summary, "metrics/launch__grid_size/n"), 5);
}

Test(measure, a_list_of_only_launch_metrics_still_replays_and_writes_every_run)
{
	struct inject_config c = fake_config();
	c.metrics = "launch__sm_count";
	configure(c);
	launch(0, 1);
	cr_assert_eq(fw.batches, 1);
	cr_assert_eq(fw.relaunches, 5, "each run replays the kernel, as with any metric");
	cr_assert_eq(fake_records("run"), 5);
	cr_assert_eq(fake_number(fake_record("run", 4), "metrics/launch__sm_count"), 132);
	cr_assert(isnan(fake_number(fake_record("run", 0), "metrics/gpu__time_duration.sum")),
		  "nothing the user did not ask for is written");
	cr_assert_eq(fake_records("summary"), 1);
}

Test(measure, a_launch_metric_the_driver_cannot_give_is_null_not_made_up)
{
	struct inject_config c = fake_config();
	c.metrics = "launch__waves_per_multiprocessor,launch__grid_size";
	configure(c);
	fw.active_blocks = 0;   /* the occupancy calculator says the block cannot run */
	launch(0, 1);
	cJSON *run = fake_record("run", 0);
	cr_assert_eq(fake_number(run, "metrics/launch__grid_size"), 4);
	const cJSON *waves = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(run, "metrics"), "launch__waves_per_multiprocessor");
	cr_assert(waves && cJSON_IsNull(waves), "NaN is written as null");
}

Test(measure, a_cukernel_handle_is_asked_through_its_function_in_the_context)
{
	struct inject_config c = fake_config();
	c.metrics = "launch__registers_per_thread,launch__waves_per_multiprocessor";
	configure(c);
	struct inject_launch l = fake_launch(fw.current, 0, 1);
	fw.kernel_handle = l.function;
	fw.kernel_function = (CUfunction)(uintptr_t)0x7000;
	fw.function_attributes[CU_FUNC_ATTRIBUTE_NUM_REGS] = 40;
	struct measurement *m = inject_save_enter(&l, "k(float*)");
	if (m)
		inject_save_exit(m, true);
	cJSON *run = fake_record("run", 0);
	cr_assert_eq(fake_number(run, "metrics/launch__registers_per_thread"), 40,
		     "the CUkernel's registers, through cuKernelGetFunction");
	cr_assert_eq(fw.occupancy_function, fw.kernel_function);
	cr_assert_float_eq(fake_number(run, "metrics/launch__waves_per_multiprocessor"),
			   4.0 / (8 * 132), 1e-12);
}
