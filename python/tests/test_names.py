"""scripts/check_names.py: a function of inject/ carries the name of its file or of its
group (doc/layout.md, issue 34 item 5), so that a call says where the callee lives. The
tree is checked whole, then the script on small made-up trees, so that a pass of the
first test means "every name says where it lives" and not "the script read nothing"."""
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "check_names.py"

MAP = "RANGEPROF_1 {\n  global:\n    InitializeInjection;\n    rangeprof_attach;\n  local: *;\n};\n"


def run(root):
    if not SCRIPT.exists():
        pytest.skip(f"{SCRIPT} is not in this tree (a source checkout has it)")
    return subprocess.run([sys.executable, str(SCRIPT), "--root", str(root)],
                          capture_output=True, text=True, timeout=120)


def tree(root, files):
    files = {"inject/rangeprof.map": MAP, **files}
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_every_function_of_the_c_folders_says_where_it_lives():
    r = run(ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    count = int(r.stdout.split("check_names: ")[1].split()[0])
    assert count >= 300, r.stdout     # it read the tree


def test_names_of_the_file_or_the_group_pass(tmp_path):
    r = run(tree(tmp_path, {
        "inject/range/range_ops.c": "void range_ops_init(void) {}\n"
                                    "void inject_range_opened(void) {}\n"
                                    "void range_record_kernel(void) {}\n"
                                    "static void helper(void) {}\n",
        "inject/names.c": "const char *inject_name_of(void) { return 0; }\n",
        "inject/entry.c": "int InitializeInjection(void) { return 1; }\n"
                          "int rangeprof_attach(void) { return 0; }\n",
        "collector/stats.c": "void stats_sort(void) {}\nvoid collector_x(void) {}\n",
    }))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "check_names: 8 functions" in r.stdout


def test_a_name_of_another_file_fails(tmp_path):
    """The fault issue 34 found: save.c's inject_replay_enter, named after session.c's lock."""
    r = run(tree(tmp_path, {
        "inject/kernel/save.c": "void inject_save_enter(void) {}\n"
                                "void inject_replay_enter(void) {}\n",
    }))
    assert r.returncode == 1
    assert "inject/kernel/save.c: inject_replay_enter" in r.stdout
    assert "inject_save_enter" not in r.stdout


def test_a_top_level_file_has_no_group_to_lean_on(tmp_path):
    r = run(tree(tmp_path, {"inject/output.c": "void inject_report(void) {}\n"}))
    assert r.returncode == 1
    assert "inject/output.c: inject_report" in r.stdout


def test_another_folder_needs_its_prefix(tmp_path):
    r = run(tree(tmp_path, {"memory/track.c": "void track_add(void) {}\nvoid add(void) {}\n"}))
    assert r.returncode == 1
    assert "memory/track.c: add " in r.stdout
    assert "track_add" not in r.stdout
