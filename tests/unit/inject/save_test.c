/* tests/unit/inject/save_test.c - each kernel's save policy (inject/kernel/save.c): a first launch
 * verified from ENTER to EXIT, the reach from then on, the full checkpoint after a launch
 * that wrote outside its reach, the fall-back when the reach is unknown, and --memory-save
 * checkpoint. On stand-ins for the driver, CUPTI, the profiler and memory/
 * (fake_world.c): no GPU. */
#include <criterion/criterion.h>
#include <string.h>

#include "inject/session/contexts.h"
#include "inject/inject.h"
#include "inject/session/session.h"
#include "tests/unit/inject/fake_world.h"

TestSuite(save, .init = fake_world_init, .fini = fake_world_finish);

static const char *kernel = "kernel(float*)";

/* Kernel f's save policy in the current context, as inject/session/session.c keeps it. */
static enum save_policy policy(unsigned f)
{
	struct inject_launch l = fake_launch(fw.current, f, 0);
	struct context_state *c = inject_contexts_state(fw.current,
							inject_contexts_generation(fw.current));
	cr_assert_not_null(c, "the context was set up");
	struct function_state *s = inject_session_function_state(c, l.function, l.mangled);
	cr_assert_not_null(s);
	return s->policy;
}

/* A launch the save policy measures at ENTER: nothing pending for EXIT. */
static void launch_measured_at_enter(unsigned f, uint64_t index)
{
	struct inject_launch l = fake_launch(fw.current, f, index);
	cr_assert_null(inject_save_enter(&l, kernel), "launch %llu is measured at ENTER",
		       (unsigned long long)index);
}

/* A launch of a verified kernel: its pass opened at ENTER, the application's own launch
 * its first run, the others at EXIT. */
static void launch_first_run_is_app(unsigned f, uint64_t index)
{
	struct inject_launch l = fake_launch(fw.current, f, index);
	size_t opened = fake_events(FAKE_OPEN_FIRST_PASS);
	struct measurement *m = inject_save_enter(&l, kernel);
	cr_assert_not_null(m, "launch %llu is pending until EXIT", (unsigned long long)index);
	cr_assert_eq(fake_events(FAKE_OPEN_FIRST_PASS), opened + 1, "its pass opened at ENTER");
	inject_save_exit(m, true);
}

/* A first launch: pending at ENTER, finished at EXIT (the application's launch ran). */
static void launch_verified(unsigned f, uint64_t index)
{
	struct inject_launch l = fake_launch(fw.current, f, index);
	struct measurement *m = inject_save_enter(&l, kernel);
	cr_assert_not_null(m, "launch %llu is verified", (unsigned long long)index);
	inject_save_exit(m, true);
}

Test(save, a_first_launch_is_verified_and_measured_at_exit_then_the_kernel_uses_its_reach)
{
	struct inject_launch l = fake_launch(fw.current, 0, 1);
	struct measurement *m = inject_save_enter(&l, kernel);
	cr_assert_not_null(m, "pending until EXIT");
	cr_assert_eq(fw.batches, 0, "nothing replayed before the application's own launch");
	cr_assert_eq(fw.hashes_outside, 1, "the memory outside the reach hashed before it");
	cr_assert_eq(fw.saves_inputs, 1, "its inputs saved");
	cr_assert_eq(policy(0), SAVE_UNVERIFIED);
	inject_save_exit(m, true);
	cr_assert_eq(fw.hashes_again, 1, "hashed again after it");
	cr_assert_eq(fw.saves_result, 1, "the application's result saved");
	cr_assert_eq(fw.batches, 1);
	cr_assert_eq(fw.restores_inputs, 5, "the runs start from the inputs");
	cr_assert_eq(fw.restores_result, 1, "the result put back after the runs");
	cr_assert_eq(fake_records("run"), 5);
	cJSON *summary = fake_record("summary", 0);
	cr_assert_str_eq(fake_string(summary, "save/strategy"), "reach");
	cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(summary, "save"),
						   "verified_now")));
	cr_assert_eq(fake_number(summary, "save/verified_bytes"), 4096);
	cr_assert_eq(policy(0), SAVE_REACH);
	cr_assert_eq(fw.checkpoint_saves, 0);
}

Test(save, a_verified_kernels_next_launch_is_its_own_first_run_and_nothing_is_put_back)
{
	launch_verified(0, 1);
	unsigned inputs = fw.restores_inputs, result = fw.restores_result;
	unsigned flushes = fw.flushes, relaunches = fw.relaunches;
	struct inject_launch l = fake_launch(fw.current, 0, 2);
	struct measurement *m = inject_save_enter(&l, kernel);
	cr_assert_not_null(m, "pending: the application's launch is run 0");
	cr_assert_eq(fw.batches, 1, "nothing replayed before the application's own launch");
	cr_assert_eq(fw.flushes - flushes, 1, "run 0's flush queued before it");
	/* A new profiler object's first pass fixes the room of the passes after it: sized
	 * for run 0 alone, the replays that follow lost half their ranges on the H200. */
	cr_assert_eq(fw.first_pass_ranges, 5 * 2, "run 0's pass sized for all 5 runs with a "
		     "flush each, not %zu ranges", fw.first_pass_ranges);
	cr_assert_eq(fw.restores_inputs, inputs, "run 0 starts from the application's memory");
	inject_save_exit(m, true);
	cr_assert_eq(fw.hashes_outside, 1, "not verified again");
	cr_assert_eq(fw.saves_inputs, 2);
	cr_assert_eq(fw.saves_result, 1, "no result to keep: the last run leaves it");
	cr_assert_eq(fw.batches, 2);
	cr_assert_eq(fw.relaunches - relaunches, 5 - 1, "runs 1 to 4 replayed, run 0 was the "
		     "application's");
	cr_assert_eq(fw.flushes - flushes, 5, "a flush before every run");
	cr_assert_eq(fw.restores_inputs - inputs, 5 - 1, "each replayed run, nothing after");
	cr_assert_eq(fw.restores_result, result);
	cr_assert_eq(fake_records("run"), 10);
	cJSON *summary = fake_record("summary", 1);
	cr_assert_str_eq(fake_string(summary, "save/strategy"), "reach");
	cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetObjectItem(summary, "save"),
						    "verified_now")));
	cr_assert_not_null(strstr(fake_string(summary, "save/why"), "wrote only inside"));
	cr_assert_eq(fw.checkpoint_saves, 0);
}

Test(save, a_launch_that_wrote_outside_its_reach_is_not_measured_and_the_kernel_uses_the_checkpoint)
{
	fw.wrote_outside = true;
	launch_verified(0, 1);
	cr_assert_eq(fw.batches, 0, "that launch ran once, unmeasured");
	cr_assert_eq(fake_records("run"), 0);
	cr_assert_eq(fake_records("summary"), 0);
	cr_assert_eq(fake_messages("warning", "wrote outside the memory its parameters reach"), 1);
	cr_assert_eq(policy(0), SAVE_CHECKPOINT);
	fw.wrote_outside = false;
	unsigned collects = fw.reach_collects;
	launch_measured_at_enter(0, 2);
	launch_measured_at_enter(0, 3);
	cr_assert_eq(fw.reach_collects, collects, "the reach is no longer looked at");
	cr_assert_eq(fw.hashes_outside, 1);
	cr_assert_eq(fw.checkpoint_saves, 2);
	cr_assert_eq(fw.checkpoint_restores, 2 * (5 + 1), "each run, then for the application");
	cr_assert_eq(fw.checkpoint_frees, 2);
	cr_assert_eq(fake_records("run"), 10);
	cr_assert_str_eq(fake_string(fake_record("summary", 0), "save/strategy"), "checkpoint");
	cr_assert_not_null(strstr(fake_string(fake_record("summary", 1), "save/why"),
				  "wrote outside"));
}

Test(save, an_unknown_reach_falls_back_to_the_checkpoint_with_one_warning)
{
	fw.reach_unknown = "a parameter points into memory that is not tracked";
	launch_measured_at_enter(0, 1);
	launch_measured_at_enter(0, 2);
	cr_assert_eq(fw.hashes_outside, 0, "nothing to verify");
	cr_assert_eq(fw.saves_inputs, 0);
	cr_assert_eq(fw.checkpoint_saves, 2);
	cr_assert_eq(fw.checkpoint_restores, 2 * (5 + 1));
	cr_assert_eq(fw.checkpoint_frees, 2);
	cr_assert_eq(fake_records("run"), 10);
	cr_assert_eq(fake_messages("warning", "measured with the full checkpoint"), 1,
		     "the fall-back said once for the kernel");
	cJSON *summary = fake_record("summary", 1);
	cr_assert_str_eq(fake_string(summary, "save/strategy"), "checkpoint");
	cr_assert_str_eq(fake_string(summary, "save/why"), fw.reach_unknown);
}

Test(save, memory_save_checkpoint_always_uses_the_checkpoint)
{
	struct inject_config c = fake_config();
	c.memory_save = RP_MEMORY_SAVE_CHECKPOINT;
	inject_session_configure(&c);
	launch_measured_at_enter(0, 1);
	launch_measured_at_enter(0, 2);
	launch_measured_at_enter(1, 3);
	cr_assert_eq(fw.reach_collects, 0);
	cr_assert_eq(fw.hashes_outside, 0);
	cr_assert_eq(fw.saves_inputs + fw.restores_inputs, 0);
	cr_assert_eq(fw.checkpoint_saves, 3);
	cr_assert_eq(fw.checkpoint_restores, 3 * (5 + 1));
	cr_assert_eq(fw.checkpoint_frees, 3);
	cr_assert_eq(fake_records("summary"), 3);
	for (size_t i = 0; i < 3; i++) {
		cr_assert_str_eq(fake_string(fake_record("summary", i), "save/strategy"),
				 "checkpoint");
		cr_assert_str_eq(fake_string(fake_record("summary", i), "save/why"),
				 "--memory-save checkpoint");
	}
	cr_assert_eq(fake_records("warning"), 0, "not a fall-back");
}

Test(save, a_launch_the_driver_refused_is_not_measured_and_stays_unverified)
{
	struct inject_launch l = fake_launch(fw.current, 0, 1);
	struct measurement *m = inject_save_enter(&l, kernel);
	cr_assert_not_null(m);
	inject_save_exit(m, false);
	cr_assert_eq(fw.batches, 0);
	cr_assert_eq(fw.hashes_again, 0);
	cr_assert_eq(fake_records("summary"), 0);
	cr_assert_eq(policy(0), SAVE_UNVERIFIED);
	launch_verified(0, 2);
	cr_assert_eq(fake_records("summary"), 1);
}

/* ---- the replay lock, checked (common/lock.h; compiled out with NDEBUG) ----------- */
#if RP_LOCK_CHECKS
#include <signal.h>

Test(save, a_launch_measured_without_the_replay_lock_aborts_naming_it, .signal = SIGABRT)
{
	/* A path that forgot the lock would measure while another thread changes what the
	 * measurement reads: stopped at the door instead. */
	inject_session_unlock();
	struct inject_launch l = fake_launch(fw.current, 0, 0);
	inject_save_enter(&l, kernel);
}

Test(save, taking_the_replay_lock_twice_on_one_thread_aborts_instead_of_hanging,
     .signal = SIGABRT)
{
	inject_session_lock();
}

#endif

Test(save, a_refused_application_launch_drops_the_opened_pass_and_records_nothing)
{
	launch_verified(0, 1);
	size_t runs = fake_records("run");
	unsigned restores = fw.restores_inputs + fw.restores_result, batches = fw.batches;
	struct inject_launch l = fake_launch(fw.current, 0, 2);
	struct measurement *m = inject_save_enter(&l, kernel);
	cr_assert_not_null(m);
	inject_save_exit(m, false);
	cr_assert_eq(fake_events(FAKE_DROP_OPEN_PASS), 1, "the pass was stopped and dropped");
	cr_assert_eq(fw.batches, batches, "no runs replayed");
	cr_assert_eq(fake_records("run"), runs);
	cr_assert_eq(fw.restores_inputs + fw.restores_result, restores, "nothing put back");
	/* The next launch is measured again, its pass opened afresh. */
	launch_first_run_is_app(0, 3);
	cr_assert_eq(fake_records("run"), runs + 5);
}

Test(save, a_measurement_failing_after_the_application_run_runs_the_kernel_once_more)
{
	launch_verified(0, 1);
	fw.fail_batch = 2;
	unsigned inputs = fw.restores_inputs, relaunches = fw.relaunches;
	size_t runs = fake_records("run");
	launch_first_run_is_app(0, 2);
	cr_assert_eq(fake_records("run"), runs + 1, "run 0, the application's, is recorded");
	cr_assert_eq(fake_messages("error", "the runs measured before are recorded"), 1);
	cr_assert_eq(fw.restores_inputs - inputs, 4 + 1, "the runs, then the inputs once more");
	cr_assert_eq(fw.relaunches - relaunches, 4 + 1, "and the kernel from them, so that the "
		     "application finds its own result");
}

Test(save, a_multi_pass_set_is_replayed_at_enter_and_the_inputs_put_back)
{
	fw.passes = 2;
	launch_verified(0, 1);
	unsigned inputs = fw.restores_inputs;
	launch_measured_at_enter(0, 2);
	cr_assert_eq(fake_events(FAKE_OPEN_FIRST_PASS), 0, "the application's launch could "
		     "be in pass 0 only");
	cr_assert_eq(fw.restores_inputs - inputs, 2 * 5 + 1, "each run of each pass, then for "
		     "the application");
}

Test(save, runs_auto_is_replayed_at_enter_and_the_inputs_put_back)
{
	struct inject_config c = fake_config();
	c.runs = RP_RUNS_AUTO;
	c.runs_min = 3;
	c.runs_max = 3;
	c.runs_batch = 3;
	inject_config_set(&c);
	launch_verified(0, 1);
	launch_measured_at_enter(0, 2);
	cr_assert_eq(fake_events(FAKE_OPEN_FIRST_PASS), 0);
}

Test(save, the_replays_restore_only_the_ranges_the_applications_launch_changed)
{
	fw.reach_ranges = 3;
	fw.reach_unchanged_mask = 0x3; /* a matmul's inputs a and b, then its product */
	launch_verified(0, 1);
	unsigned restored = fw.ranges_restored, relaunches = fw.relaunches;
	launch_first_run_is_app(0, 2);
	cr_assert_eq(fw.reach_compares, 2, "after the application's launch, and after the runs");
	cr_assert_eq(fw.ranges_compared, 3 + 2, "all three, then the two run 0 left as they were");
	cr_assert_eq(fw.ranges_restored - restored, 4, "the product alone before runs 1 to 4");
	cr_assert_eq(fw.relaunches - relaunches, 4, "no run more: nothing else changed");
	cr_assert_eq(fake_records("run"), 10);
	cr_assert_eq(fake_messages("warning", "changed"), 0);
}

Test(save, a_kernel_that_changes_all_it_reaches_is_compared_once)
{
	fw.reach_ranges = 2;
	launch_verified(0, 1);
	launch_first_run_is_app(0, 2);
	cr_assert_eq(fw.reach_compares, 1, "every range changed: no check after the runs");
	unsigned restored = fw.ranges_restored;
	launch_first_run_is_app(0, 3);
	cr_assert_eq(fw.reach_compares, 1, "not compared again");
	cr_assert_eq(fw.ranges_restored - restored, 4 * 2, "the whole reach before each run");
}

Test(save, a_replay_that_changes_what_the_launch_left_is_said_and_the_kernel_runs_again)
{
	fw.reach_ranges = 3;
	fw.reach_unchanged_mask = 0x3;
	fw.replay_changes_more = true;
	launch_verified(0, 1);
	unsigned restored = fw.ranges_restored, relaunches = fw.relaunches;
	launch_first_run_is_app(0, 2);
	cr_assert_eq(fake_messages("warning", "that the application's own launch had left as "
					      "they were"), 1);
	cr_assert_eq(fw.ranges_restored - restored, 4 + 3, "the product before each run, then "
		     "the whole reach for the kernel to run once more");
	cr_assert_eq(fw.relaunches - relaunches, 4 + 1);
	cr_assert_eq(fake_records("run"), 10, "the runs are recorded, with the warning");
	unsigned compares = fw.reach_compares;
	restored = fw.ranges_restored;
	launch_first_run_is_app(0, 3);
	cr_assert_eq(fw.reach_compares, compares, "the kernel restores its whole reach now");
	cr_assert_eq(fw.ranges_restored - restored, 4 * 3);
}

Test(save, fewer_than_three_runs_restore_the_whole_reach_without_comparing)
{
	struct inject_config c = fake_config();
	c.runs = 2;
	inject_config_set(&c);
	fw.reach_ranges = 3;
	fw.reach_unchanged_mask = 0x3;
	launch_verified(0, 1);
	unsigned restored = fw.ranges_restored;
	launch_first_run_is_app(0, 2);
	cr_assert_eq(fw.reach_compares, 0);
	cr_assert_eq(fw.ranges_restored - restored, 1 * 3, "run 1 from the whole reach");
}
