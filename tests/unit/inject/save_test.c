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

Test(save, a_verified_kernels_next_launch_is_measured_at_enter_from_its_reach_and_put_back)
{
	launch_verified(0, 1);
	unsigned inputs = fw.restores_inputs, result = fw.restores_result;
	launch_measured_at_enter(0, 2);
	cr_assert_eq(fw.hashes_outside, 1, "not verified again");
	cr_assert_eq(fw.saves_inputs, 2);
	cr_assert_eq(fw.saves_result, 1, "no result to keep: the application's launch follows");
	cr_assert_eq(fw.batches, 2);
	cr_assert_eq(fw.restores_inputs - inputs, 5 + 1, "each run, then for the application");
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
