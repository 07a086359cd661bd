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


def test_a_circle_through_data_is_found(tmp_path):
    """Issue 34: the dependency check covers data. b.c reads a.c's table (the shape of the
    `rp_api` table and of `inject_graph_workload`) while a.c calls b.c: a circle, though
    only one of its edges is a call."""
    write(tmp_path, {
        "collector/a.c": "struct api { int (*get)(void); };\n"
                         "struct api a_api = { 0 };\n"
                         "void a_run(void) { b_run(); }\n",
        "collector/b.c": "void b_run(void)\n{\n\tif (a_api.get)\n\t\ta_api.get();\n}\n",
    })
    r = run("--root", tmp_path, "collector")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "call circle between 2 files: collector/a.c, collector/b.c" in r.stdout
    assert "b_run() -> a_api (data)" in r.stdout
    assert "a_run() -> b_run()" in r.stdout


def test_a_circle_through_a_constant_and_an_array_is_found(tmp_path):
    """A constant struct whose initializer names another file's function (range_workload.c's
    `inject_range_workload` names whole_workload.c's batch), and an extern array."""
    write(tmp_path, {
        "inject/w.c": "struct workload { void (*batch)(void); };\n"
                      "const struct workload w_range = { m_batch };\n",
        "inject/m.c": "void m_batch(void) { t_counts[0]++; }\n",
        "inject/t.c": "unsigned t_counts[4], t_other;\n"
                      "void t_go(void) { (void)w_range; }\n",
    })
    r = run("--root", tmp_path, "inject")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "call circle between 3 files: inject/m.c, inject/t.c, inject/w.c" in r.stdout
    assert "w_range -> m_batch()" in r.stdout          # from the file-scope initializer
    assert "m_batch() -> t_counts (data)" in r.stdout  # the second of two declarators
    assert "t_go() -> w_range (data)" in r.stdout


def test_a_headers_inline_function_and_macro_are_their_users_code(tmp_path):
    """select.h's inline functions read select.c's atomics from launch.c: the use is
    launch.c's. So is a macro's (INJECT_REPLAY_HELD calls session.c)."""
    write(tmp_path, {
        "inject/s.h": "extern int s_flag;\n"
                      "static inline int s_done(void) { return s_flag; }\n"
                      "#define S_HELD() s_held_at(__func__)\n",
        "inject/s.c": "int s_flag;\nvoid s_held_at(const char *f) { l_note(f); }\n",
        "inject/l.c": "void l_note(const char *f) { (void)f; }\n"
                      "int l_go(void) { return s_done(); }\n",
        "inject/m.c": "void m_go(void) { S_HELD(); }\n",
    })
    r = run("--root", tmp_path, "inject")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "call circle between 2 files: inject/l.c, inject/s.c" in r.stdout
    assert "l_go() -> s_done > s_flag (data)" in r.stdout
    assert "inject/m.c" not in r.stdout.split("\n")[0]


def test_declarations_static_data_and_members_are_no_edges(tmp_path):
    """An extern declaration defines nothing; a static variable, a typedef, a struct tag or
    member of the same name is no use of another file's variable."""
    write(tmp_path, {
        "memory/a.c": "int shared;\nint a_get(void) { return b_get(); }\n",
        "memory/b.c": ("extern int shared;\n"
                       "typedef struct shared_s { int shared; } shared_t;\n"
                       "static int shared_copy;\n"
                       "int b_get(void)\n{\n\tshared_t s = { 0 };\n"
                       "\treturn s.shared + shared_copy;\n}\n"),
        "memory/c.c": "static int shared = 1;\nint c_get(void) { return shared + a_get(); }\n",
    })
    r = run("--root", tmp_path, "memory")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "no call circle among 3 files (2 file-to-file edges)" in r.stdout


def test_a_static_assert_comparing_with_equals_is_read(tmp_path):
    """'==' inside a file-scope _Static_assert is no initializer's '=' (it stopped the
    script once, session 21), and the files around it are still read."""
    write(tmp_path, {
        "memory/a.c": ("#define N 2\n"
                       "_Static_assert(N == 1 || N == 2, \"1 or 2\");\n"
                       "int a_get(void) { return b_get(); }\n"),
        "memory/b.c": "int b_get(void) { return a_get(); }\n",
    })
    r = run("--root", tmp_path, "memory")
    assert r.returncode != 0 and "Traceback" not in r.stderr, r.stdout + r.stderr
    assert "a.c" in r.stdout and "b.c" in r.stdout, r.stdout


def test_a_static_assert_defines_none_of_its_words(tmp_path):
    """A _Static_assert naming a variable does not make its file that variable's owner:
    'counter' is defined outside the tree, so the one edge, a.c calling b.c, is no circle
    (the words inside one were read as a variable a.c defines, which b.c's use then
    made an edge back: session 21's review)."""
    write(tmp_path, {
        "memory/a.c": ("extern int counter;\n"
                       "_Static_assert(sizeof(counter) == 4, \"an int\");\n"
                       "int a_get(void) { return b_get(); }\n"),
        "memory/b.c": "extern int counter;\nint b_get(void) { return counter; }\n",
    })
    r = run("--root", tmp_path, "memory")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "no call circle among 2 files (1 file-to-file edges)" in r.stdout, r.stdout
