"""scripts/check_maps.py: the call and lock maps of the C files' opening comments and of
doc/layout.md are checked against the code (issue 34 item 6: a review found 11 stale maps in
file headers, and a list of 5 locks called complete beside 20 mutexes). The tree is checked
whole; then the script on small made-up trees, one fault each, so that a pass of the first
test means "every map is true" and not "the script read nothing"."""
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "check_maps.py"

LAYOUT = """# Layout

## Locks

- `inject/session/session.c`: `replay_lock`: the replay lock.
- `memory/track.c`: `lock`: the allocations.

### inject/ - which way the calls run

1. `init.c`
2. `kernel/`
3. `session/`
4. `memory/`
5. `common/`
"""

# A tree whose maps are all true: init.c -> kernel/save.c -> session/session.c -> memory/
# track.c -> common/log.c, and save.c asserts the replay lock.
GOOD = {
    "inject/init.c": (
        "/* inject/init.c - set-up.\n"
        " * Calls: save.c (the first launch).\n"
        " * Called by: none (the driver).\n"
        " * Lock: none (set once). */\n"
        "void inject_init_once(void) { inject_save_enter(); }\n"),
    "inject/kernel/save.c": (
        "/* inject/kernel/save.c - the save policy.\n"
        " * Calls: session.c, memory/.\n"
        " * Called by: init.c.\n"
        " * Lock: the replay lock; not asserted by: inject_save_reset (before any\n"
        " * callback). */\n"
        "static int state;\n"
        "void inject_save_enter(void)\n{\n\tINJECT_REPLAY_HELD();\n"
        "\tinject_session_turn();\n\tmem_track_add(state);\n}\n"
        "void inject_save_reset(void) { state = 0; }\n"),
    "inject/session/session.c": (
        "/* inject/session/session.c - the replay lock and the turn.\n"
        " * Calls: memory/.\n"
        " * Called by: save.c.\n"
        " * Lock: the replay lock; not asserted by: inject_session_held_at (the check\n"
        " * itself). */\n"
        "static struct rp_lock replay_lock = RP_LOCK_INITIALIZER(\"the replay lock\");\n"
        "void inject_session_held_at(const char *f) { rp_lock_held(&replay_lock, f); }\n"
        "void inject_session_turn(void) { INJECT_REPLAY_HELD(); mem_track_add(1); }\n"),
    "inject/inject.h": (
        "/* inject/inject.h - internals. */\n"
        "#define INJECT_REPLAY_HELD() inject_session_held_at(__func__)\n"),
    "memory/track.c": (
        "/* memory/track.c - the allocations.\n"
        " * Calls: common/ (log.c).\n"
        " * Called by: inject/.\n"
        " * Lock: lock (the allocations). */\n"
        "static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;\n"
        "void mem_track_add(int n) { if (n < 0) rp_log(\"bad\"); }\n"),
    "common/log.c": (
        "/* common/log.c - messages.\n"
        " * Calls: none (libc only).\n"
        " * Called by: memory/.\n"
        " * Lock: none (no state). */\n"
        "void rp_log(const char *m) { (void)m; }\n"),
}


def run(root, *args):
    if not SCRIPT.exists():
        pytest.skip(f"{SCRIPT} is not in this tree (a source checkout has it)")
    return subprocess.run([sys.executable, str(SCRIPT), "--root", str(root), *args],
                          capture_output=True, text=True, timeout=120)


def tree(root, changes=None, layout=LAYOUT):
    files = {**GOOD, **(changes or {}), "doc/layout.md": layout}
    for name, text in files.items():
        if text is None:
            continue
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def replace(name, old, new):
    assert old in GOOD[name], old
    return {name: GOOD[name].replace(old, new)}


def test_the_trees_maps_are_true():
    r = run(ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    # It read the tree: its files, their names, the locks and the tiers.
    words = r.stdout.split()
    assert int(words[1]) >= 60, r.stdout
    assert int(r.stdout.split("(")[1].split()[0]) >= 200, r.stdout
    assert int(r.stdout.split("), ")[1].split()[0]) >= 20, r.stdout
    assert int(r.stdout.split("listed, ")[1].split()[0]) >= 100, r.stdout


def test_a_true_made_up_tree_passes(tmp_path):
    r = run(tree(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "check_maps: 5 files' maps true (9 names" in r.stdout
    assert "2 locks listed, 5 edges between tiers running down" in r.stdout


def test_a_callee_it_does_not_call_fails(tmp_path):
    """The fault the review found most: a header naming a file its code no longer calls
    (launch.c's 'replay', whole_workload.c's save.c)."""
    r = run(tree(tmp_path, replace("inject/init.c", "Calls: save.c (the first launch).",
                                   "Calls: save.c (the first launch), session.c.")))
    assert r.returncode == 1
    assert ("inject/init.c:2: says 'Calls: session.c', but inject/init.c calls or uses "
            "nothing of session.c") in r.stdout


def test_a_caller_that_does_not_call_it_fails(tmp_path):
    """collectives.c said 'Called by launch.c', which did not call it."""
    r = run(tree(tmp_path, replace("common/log.c", "Called by: memory/.",
                                   "Called by: memory/, inject/.")))
    assert r.returncode == 1
    assert ("common/log.c:3: says 'Called by: inject/', but common/log.c is called or used "
            "by nothing of inject/") in r.stdout


def test_a_callee_left_out_fails_naming_the_call(tmp_path):
    r = run(tree(tmp_path, replace("inject/kernel/save.c", "Calls: session.c, memory/.",
                                   "Calls: session.c.")))
    assert r.returncode == 1
    assert ("inject/kernel/save.c:2: 'Calls:' leaves out memory/ "
            "(inject_save_enter() -> mem_track_add())") in r.stdout


def test_a_missing_sentence_fails_with_the_true_one(tmp_path):
    r = run(tree(tmp_path, replace("common/log.c", " * Called by: memory/.\n", "")))
    assert r.returncode == 1
    assert ("common/log.c:1: its opening comment has no 'Called by:' sentence; true: "
            "'Called by: memory/.'") in r.stdout


def test_a_call_claimed_in_prose_fails(tmp_path):
    """A sentence nothing checks is how maps went stale: it must be a checked one."""
    r = run(tree(tmp_path, {
        **replace("common/log.c", "messages.", "messages. Called by memory/track.c only."),
        **replace("inject/inject.h", "internals. */", "internals.\n * Calls: session.c. */"),
    }))
    assert r.returncode == 1
    assert "common/log.c:1: 'Called by memory/track.c' says who calls whom" in r.stdout
    assert "inject/inject.h:2: a header carries no 'Calls:' sentence" in r.stdout


def test_an_unnamed_lock_and_an_unlisted_one_fail(tmp_path):
    """A file that defines a lock names it, and doc/layout.md lists it: the list that said
    5 locks were all of them."""
    r = run(tree(tmp_path, replace(
        "common/log.c", "void rp_log",
        "static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;\nvoid rp_log")))
    assert r.returncode == 1
    assert ("common/log.c:5: defines the lock log_lock, which its 'Lock:' sentence does not "
            "name") in r.stdout
    assert ("common/log.c:5: defines the lock log_lock, which doc/layout.md's list of locks "
            "does not name") in r.stdout


def test_a_listed_lock_that_is_gone_fails(tmp_path):
    r = run(tree(tmp_path, layout=LAYOUT.replace(
        "- `memory/track.c`", "- `common/log.c`: `log_lock`: gone.\n- `memory/track.c`")))
    assert r.returncode == 1
    assert ("doc/layout.md:6: lists the lock `log_lock` of `common/log.c`, which the sources "
            "do not define") in r.stdout


def test_asserting_the_replay_lock_without_saying_so_fails(tmp_path):
    r = run(tree(tmp_path, replace("inject/kernel/save.c",
                                   " * Lock: the replay lock; not asserted by: inject_save_reset"
                                   " (before any\n * callback). */",
                                   " * Lock: none (a state machine). */")))
    assert r.returncode == 1
    assert ("inject/kernel/save.c:4: its functions assert INJECT_REPLAY_HELD() "
            "(inject_save_enter), but 'Lock:' does not name the replay lock") in r.stdout


def test_a_function_under_the_replay_lock_that_does_not_assert_it_fails(tmp_path):
    """'Under the replay lock' in prose, asserted nowhere: what the issue found 65 times."""
    r = run(tree(tmp_path, replace("inject/kernel/save.c", "; not asserted by: "
                                   "inject_save_reset (before any\n * callback). */", ". */")))
    assert r.returncode == 1
    assert ("inject/kernel/save.c:4: says its state is under the replay lock, but "
            "inject_save_reset() neither asserts INJECT_REPLAY_HELD() nor takes it") in r.stdout


def test_an_exception_that_does_assert_fails(tmp_path):
    r = run(tree(tmp_path, replace("inject/kernel/save.c", "inject_save_reset (before any",
                                   "inject_save_reset, inject_save_enter (before any")))
    assert r.returncode == 1
    assert ("names inject_save_enter() after 'not asserted by:', but it asserts or takes "
            "the replay lock") in r.stdout


def test_a_call_up_the_tiers_fails(tmp_path):
    """doc/layout.md's order of inject/'s groups, checked: session/ using kernel/ runs up."""
    r = run(tree(tmp_path, {
        **replace("inject/session/session.c", "void inject_session_turn(void) {",
                  "void inject_session_turn(void) { inject_save_reset();"),
    }))
    assert r.returncode == 1
    assert ("doc/layout.md:12: session/ (tier 3) is above kernel/ (tier 2), but "
            "inject/session/session.c -> inject/kernel/save.c: inject_session_turn() -> "
            "inject_save_reset()") in r.stdout


def test_a_group_in_no_tier_fails(tmp_path):
    r = run(tree(tmp_path, layout=LAYOUT.replace("2. `kernel/`\n", "")))
    assert r.returncode == 1
    assert "doc/layout.md: 'kernel/' is in no tier of 'which way the calls run'" in r.stdout


def test_write_makes_the_lists_true_and_keeps_their_notes(tmp_path):
    root = tree(tmp_path, {
        **replace("inject/kernel/save.c", "Calls: session.c, memory/.",
                  "Calls: session.c (the turn), output.c."),
        **replace("common/log.c", " * Called by: memory/.\n", ""),
    })
    assert run(root).returncode == 1
    r = run(root, "--write")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "check_maps: wrote inject/kernel/save.c" in r.stdout
    save = (root / "inject/kernel/save.c").read_text()
    assert " * Calls: session.c (the turn), memory/.\n" in save
    log = (root / "common/log.c").read_text()
    assert " * Calls: none (libc only).\n * Lock: none (no state).\n * Called by: memory/. */" \
        in log


def test_an_opening_comment_line_of_100_columns_fails(tmp_path):
    r = run(tree(tmp_path, replace("common/log.c", "messages.", "messages" + "." * 74)))
    assert r.returncode == 1
    assert "common/log.c:1: 100 columns in the opening comment" in r.stdout


def test_a_header_under_the_replay_lock_needs_its_c_files_to_say_so(tmp_path):
    """session.h, measurement.h and range.h said "under the replay lock" in prose; the .c
    files that define what they declare must name it in their Lock: sentence."""
    header = ("/* memory/memory.h - tracking. Under the replay lock. */\n"
              "void mem_track_add(int n);\n")
    r = run(tree(tmp_path, {"memory/memory.h": header}))
    assert r.returncode == 1
    assert ("memory/memory.h:1: says 'under the replay lock', but memory/track.c, which "
            "defines mem_track_add (declared here), does not name the replay lock") in r.stdout
    header = header.replace("void mem_track_add", "void inject_save_enter")
    assert run(tree(tmp_path, {"memory/memory.h": header})).returncode == 0


def test_a_call_claimed_in_layout_md_prose_fails(tmp_path):
    """doc/layout.md said "Calls registry.c" of state.c, unchecked; the map is the files'."""
    r = run(tree(tmp_path, layout=LAYOUT + "\n- `state.c`: the stacks.\n  Calls `registry.c`.\n"))
    assert r.returncode == 1
    assert "doc/layout.md:16: '.   Calls `registry.c' says who calls whom" in r.stdout


def test_write_leaves_true_sentences_as_their_author_wrapped_them(tmp_path):
    root = tree(tmp_path, replace("inject/kernel/save.c", "Calls: session.c, memory/.",
                                  "Calls: session.c (the\n * turn), memory/."))
    before = (root / "inject/kernel/save.c").read_text()
    r = run(root, "--write")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "wrote" not in r.stdout
    assert (root / "inject/kernel/save.c").read_text() == before
