"""scripts/call_graph.py: calls between the C files run one way (STYLE.md, issue 19 "one
owner per state"). The tree is checked whole, inject/ included: it had no circle when this
test was written. Then the script itself, on small made-up trees, so that a pass of the
first test means "no circle" and not "the script sees nothing"."""
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "call_graph.py"


def run(*args):
    if not SCRIPT.exists():
        pytest.skip(f"{SCRIPT} is not in this tree (a source checkout has it)")
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)],
                          capture_output=True, text=True, timeout=120)


def test_the_c_folders_have_no_call_circle():
    r = run("--root", ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "no call circle" in r.stdout
    # It read the tree: every C folder has files, and they call each other.
    files = int(r.stdout.split(" among ")[1].split()[0])
    assert files >= 20, r.stdout


def write(root, files):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_two_files_calling_each_other_are_a_circle(tmp_path):
    """The shape registry.c and state.c had: each calls a function of the other."""
    write(tmp_path, {
        "nvtx_bridge/registry.c": "size_t kept(const char *s) { return length(s); }\n"
                                  "int lookup(void) { return 1; }\n",
        "nvtx_bridge/state.c": "size_t length(const char *s) { return strlen(s); }\n"
                               "int push(void)\n{\n\treturn lookup();\n}\n",
        "collector/stats.c": "double mean(void) { return 0; }\n",
    })
    r = run("--root", tmp_path)
    assert r.returncode == 1
    assert "call circle between 2 files: nvtx_bridge/registry.c, nvtx_bridge/state.c" in r.stdout
    assert "kept() -> length()" in r.stdout and "push() -> lookup()" in r.stdout
    assert "collector/stats.c" not in r.stdout


def test_a_circle_through_a_third_file_and_a_callback_is_found(tmp_path):
    """a -> b -> c -> a, the last edge a function handed on as a pointer, not called."""
    write(tmp_path, {
        "common/a.c": "void a_run(void) { b_run(); }\nvoid a_hook(void) {}\n",
        "common/b.c": "void b_run(void) { c_run(); }\n",
        "common/c.c": "void c_run(void) { register_hook(a_hook); }\n",
    })
    r = run("--root", tmp_path, "common")
    assert r.returncode == 1
    assert "call circle between 3 files: common/a.c, common/b.c, common/c.c" in r.stdout
    assert "c_run() -> a_hook()" in r.stdout


def test_static_functions_members_comments_and_strings_are_no_calls(tmp_path):
    """Only a function with external linkage can be called from another file; a static
    one of the same name, a struct member, a comment, a string or a macro body is no
    call of it."""
    write(tmp_path, {
        "memory/a.c": "int shared(void) { return other(); }\n",
        "memory/b.c": ("#define CALL shared()\n"
                       "static int shared(void) { return 0; }\n"
                       "/* shared() is called elsewhere */\n"
                       "struct ops { int (*shared)(void); };\n"
                       "int other(void)\n{\n\tstruct ops o = { 0 };\n"
                       "\tputs(\"shared()\");\n\treturn o.shared ? o.shared() : shared();\n}\n"),
    })
    r = run("--root", tmp_path, "memory")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "no call circle among 2 files (1 file-to-file edges)" in r.stdout


def test_an_excluded_folder_is_not_read(tmp_path):
    write(tmp_path, {
        "inject/a.c": "void a(void) { b(); }\n",
        "inject/b.c": "void b(void) { a(); }\n",
        "common/c.c": "void c(void) {}\n",
    })
    assert run("--root", tmp_path).returncode == 1
    r = run("--root", tmp_path, "--exclude", "inject")
    assert r.returncode == 0 and "among 1 files" in r.stdout
