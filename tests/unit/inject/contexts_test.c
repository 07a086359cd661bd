/* tests/unit/inject/contexts_test.c - a destroyed context's state is handed back once, and
 * a later context with the same handle starts afresh. */
#include <criterion/criterion.h>

#include "common/error.h"
#include "inject/session/contexts.h"

static int a, b, state1, state2;

Test(contexts, a_created_context_has_a_generation_and_no_state)
{
	inject_context_gen g = inject_contexts_created(&a);
	cr_assert_neq(g, 0);
	cr_assert_eq(inject_contexts_created(&a), g, "seen again: the same context");
	cr_assert_eq(inject_contexts_generation(&a), g);
	cr_assert_null(inject_contexts_state(&a, g));
	cr_assert_eq(inject_contexts_generation(&b), 0, "never seen");
	inject_contexts_destroyed(&a);
}

Test(contexts, destroying_hands_the_state_back_once)
{
	inject_context_gen g = inject_contexts_created(&a);
	cr_assert_eq(inject_contexts_set_state(&a, g, &state1), 0);
	cr_assert_eq(inject_contexts_state(&a, g), &state1);
	cr_assert_eq(inject_contexts_destroyed(&a), &state1);
	cr_assert_null(inject_contexts_destroyed(&a), "released once only");
	cr_assert_eq(inject_contexts_generation(&a), 0);
	cr_assert_null(inject_contexts_state(&a, g));
}

Test(contexts, a_reused_handle_is_a_new_context)
{
	inject_context_gen g1 = inject_contexts_created(&a);
	inject_contexts_set_state(&a, g1, &state1);
	inject_contexts_destroyed(&a);
	inject_context_gen g2 = inject_contexts_created(&a);
	cr_assert_neq(g1, g2);
	cr_assert_null(inject_contexts_state(&a, g2), "no state of the old context");
	cr_assert_null(inject_contexts_state(&a, g1), "the old generation is gone");
	cr_assert_eq(inject_contexts_set_state(&a, g1, &state2), RP_ERR_FAILED,
		     "a set-up of the old context cannot store into the new one");
	cr_assert_eq(inject_contexts_set_state(&a, g2, &state2), 0);
	cr_assert_eq(inject_contexts_destroyed(&a), &state2);
}

Test(contexts, contexts_are_kept_apart)
{
	unsigned before = inject_contexts_count();
	inject_context_gen ga = inject_contexts_created(&a);
	inject_context_gen gb = inject_contexts_created(&b);
	inject_contexts_set_state(&a, ga, &state1);
	inject_contexts_set_state(&b, gb, &state2);
	cr_assert_eq(inject_contexts_count(), before + 2);
	cr_assert_eq(inject_contexts_destroyed(&b), &state2);
	cr_assert_eq(inject_contexts_state(&a, ga), &state1);
	cr_assert_eq(inject_contexts_destroyed(&a), &state1);
	cr_assert_eq(inject_contexts_count(), before);
}
