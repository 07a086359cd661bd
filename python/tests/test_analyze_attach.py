"""'import rangeprof' attaches the running interpreter to librangeprof.so: the installed
copy (rangeprof._native) or the one already in the process, with the output in a
temporary directory; never breaking the import when the library is missing, speaks
another version or cannot measure here; never in the command-line tools; and the ncu
that rangeprof-compare-ncu starts does not inherit the library's injection variables.
Imports are tested in fresh interpreters, with a stand-in rangeprof._native naming the
stand-in library (tests/fake_control/)."""
import ctypes
import ctypes.util
import json
import os
import re
import shutil
import sys
import textwrap

import pytest

import rangeprof
from rangeprof import _control, records
from rangeprof import compare_ncu as ncu
from rangeprof.exceptions import RangeprofWarning, Unavailable

from fake_control.harness import (NATIVE_STUB, fake, fake_path, recorded,  # noqa: F401
                                  run_python)

pytestmark = pytest.mark.filterwarnings("ignore::rangeprof.exceptions.RangeprofWarning")

SILENT = rangeprof.VerbosityLevel.SILENT


def in_fresh_python(code, native, env=None, cwd=None):
    """Runs code after 'import rangeprof' with _native naming native; its last line of
    stdout is a JSON value, returned with the return code and stderr."""
    script = NATIVE_STUB.format(path=native) + textwrap.dedent(code)
    rc, out, err = run_python(script, env=env, cwd=cwd)
    assert rc == 0, err
    return json.loads(out.strip().splitlines()[-1]), err


def _driver_here():
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return True


def test_import_attaches_to_the_installed_library(fake_path, tmp_path):
    result, err = in_fresh_python("""
        import json, os, subprocess, sys, warnings
        warnings.simplefilter("error")
        import rangeprof
        info = rangeprof.info()
        with open("/proc/self/maps") as f:
            maps = f.read().count("fake_control")
        child = subprocess.run([sys.executable, "-c",
                                "import os; print(os.environ.get('RANGEPROF_OUTPUT'))"],
                               capture_output=True, text=True).stdout.strip()
        print(json.dumps(dict(info=info, output=os.environ.get("RANGEPROF_OUTPUT"), maps=maps,
                              child=child)))
    """, fake_path, cwd=tmp_path)
    info = result["info"]
    assert info["attached"] is True and info["children"] is False
    assert info["library"] == fake_path and info["found"] == "installed"
    # The JSON Lines go to a per-process file in a fresh temporary directory, which the
    # library read at attach: neither this process's environment nor a child's keeps it.
    assert result["output"] is None and result["child"] == "None"
    output = info["output"]
    assert re.fullmatch(r".*/rangeprof-[^/]+/rangeprof\.\d+\.jsonl", output), output
    assert not output.startswith(str(tmp_path))
    assert list(tmp_path.iterdir()) == [], "nothing is written in the working directory"
    assert result["maps"] > 0
    assert err == ""
    # Without the NVIDIA driver there is nothing to measure, and info() says so.
    if _driver_here():
        assert info["measuring"] is True
    else:
        assert info["measuring"] is False and "libcuda.so.1" in info["reason"]


def test_import_leaves_nothing_in_the_temporary_directory(fake_path, tmp_path):
    """A process that measured nothing leaves no empty rangeprof-XXXXXX behind."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    result, _ = in_fresh_python("""
        import json, os, rangeprof
        print(json.dumps(os.listdir(os.environ["TMPDIR"])))
    """, fake_path, env={"TMPDIR": str(tmp)})
    assert len(result) == 1 and result[0].startswith("rangeprof-"), "made while it ran"
    assert list(tmp.iterdir()) == [], "and removed at exit, being empty"


_CHILD_PROBE = """
    import json, os, subprocess, sys, rangeprof
    probe = ("import json, os; print(json.dumps([os.environ.get(n) for n in "
             "('CUDA_INJECTION64_PATH', 'NVTX_INJECTION64_PATH', 'RANGEPROF_OUTPUT')]))")
    def child():
        return json.loads(subprocess.run([sys.executable, "-c", probe],
                                         capture_output=True, text=True).stdout)
    before = child()
    info = rangeprof.attach(children=True)
    print(json.dumps(dict(before=before, after=child(), info=info)))
"""


def _recorded_lines(recorded):
    """The first recorded line of each record type (a session with its setup record,
    and a warning), as the library writes them."""
    out = {}
    for name in ("setup_early.jsonl", "matmul.jsonl"):
        for line in recorded(name).read_text().splitlines(keepends=True):
            out.setdefault(json.loads(line)["type"], line)
    return out


@pytest.mark.parametrize("kinds,kept", [(["session", "device", "setup"], False),
                                         (["session", "device", "run"], True),
                                         (["session", "warning"], True)])
def test_a_file_of_bookkeeping_records_only_goes_at_exit(fake_path, tmp_path, recorded,
                                                         kinds, kept):
    """CUDA's initialisation makes the library write its session and device records: a
    process that measured nothing more leaves no file nor directory; one that measured
    keeps its records."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    lines = _recorded_lines(recorded)
    result, _ = in_fresh_python(f"""
        import json, os, rangeprof
        path = rangeprof.info()["output"]
        with open(path, "w") as f:
            f.write({"".join(lines[k] for k in kinds)!r})
        print(json.dumps(path))
    """, fake_path, env={"TMPDIR": str(tmp)})
    assert os.path.exists(result) is kept
    assert list(tmp.iterdir()) == ([] if not kept else [tmp / os.path.basename(
        os.path.dirname(result))])


def _pid_as_list(line):
    rec = json.loads(line)
    rec["pid"] = [rec["pid"]]
    return json.dumps(rec) + "\n"


@pytest.mark.parametrize("damage,why", [
    (_pid_as_list, "a session whose pid is a list"),
    (lambda line: line.replace('"schema":1', '"schema":99', 1), "a newer schema"),
    (lambda line: line.rstrip("\n")[:-1] + "\n", "a line cut short"),
])
def test_a_file_with_a_line_the_reader_refuses_is_kept(tmp_path, recorded, damage, why):
    """Whether a file measured nothing is decided by records.parse_line, the rule of every
    reader: a bookkeeping line that rangeprof-report would refuse (or note) keeps the file,
    to be looked at, rather than it being deleted at exit as if it measured nothing."""
    lines = _recorded_lines(recorded)
    good = tmp_path / "good.jsonl"
    good.write_text(lines["session"] + lines["device"])
    assert _control._measured_nothing(str(good)) is True
    bad = tmp_path / "bad.jsonl"
    bad.write_text(damage(lines["session"]) + lines["device"])
    assert bad.read_text() != good.read_text()
    rec, reason = records.parse_line(damage(lines["session"]))
    assert rec is None or reason is not None, why
    assert _control._measured_nothing(str(bad)) is False, why


def test_children_are_asked_for_through_the_librarys_option(fake_path, tmp_path):
    """attach(children=True) asks the library (its runtime option 'children'), which then
    puts what children need in the environment (doc/control-api.md)."""
    log = tmp_path / "fake.log"
    result, _ = in_fresh_python(_CHILD_PROBE, fake_path,
                                env={"RANGEPROF_FAKE_LOG": str(log),
                                     "RANGEPROF_FAKE_ACCEPT": "children"})
    assert result["before"] == [None, None, None]
    assert "rangeprof_set_option children true -> 0" in log.read_text().splitlines()
    assert result["info"]["children"] is True


def test_children_of_an_older_library_get_the_environment_from_python(fake_path):
    """A library without the option: the injection hook and the output go in the
    environment that child processes inherit."""
    result, _ = in_fresh_python(_CHILD_PROBE, fake_path,
                                env={"RANGEPROF_FAKE_REFUSE": "children"})
    assert result["before"] == [None, None, None]
    hook, nvtx, output = result["after"]
    assert hook == nvtx == os.path.realpath(fake_path)
    assert output.endswith("/rangeprof.%p.jsonl")
    assert result["info"]["children"] is True


def test_a_user_chosen_output_is_kept(fake_path, tmp_path):
    mine = str(tmp_path / "mine.jsonl")
    result, _ = in_fresh_python("""
        import json, os, rangeprof
        print(json.dumps(os.environ["RANGEPROF_OUTPUT"]))
    """, fake_path, env={"RANGEPROF_OUTPUT": mine})
    assert result == mine


def test_a_library_already_in_the_process_is_used(fake_path, tmp_path):
    """Under the launcher or LD_PRELOAD the library is mapped before Python starts:
    import uses that copy and loads no second one (nor chooses the output)."""
    preloaded = tmp_path / "lib" / "librangeprof.so"
    preloaded.parent.mkdir()
    shutil.copy(fake_path, preloaded)
    other = tmp_path / "other" / "librangeprof.so"
    other.parent.mkdir()
    shutil.copy(fake_path, other)
    result, _ = in_fresh_python("""
        import json, os, rangeprof
        maps = open("/proc/self/maps").read()
        print(json.dumps(dict(info=rangeprof.info(), output=os.environ.get("RANGEPROF_OUTPUT"),
                              other=maps.count("/other/librangeprof.so"))))
    """, str(other), env={"LD_PRELOAD": str(preloaded)})
    assert result["info"]["library"] == str(preloaded) and result["info"]["found"] == "loaded"
    assert result["other"] == 0
    assert result["output"] is None


@pytest.mark.parametrize("native", [None, "/nonexistent/librangeprof.so", "no _native"])
def test_without_the_library_import_works_and_analyze_says_what_is_missing(native):
    code = """
        import json, warnings
        warnings.simplefilter("error")
        import rangeprof
        df = rangeprof.load(%r, report=None)
        with rangeprof.annotate("plain"):
            ran = True

        @rangeprof.analyze.kernel(verbosity=rangeprof.VerbosityLevel.SILENT)
        def bench():
            with rangeprof.annotate("x"):
                pass
        try:
            bench()
            error = None
        except rangeprof.exceptions.Unavailable as e:
            error = str(e)
        print(json.dumps(dict(rows=len(df), ran=ran, error=error, info=rangeprof.info())))
    """ % str(recorded("matmul.jsonl"))
    if native == "no _native":
        code = 'import sys; sys.modules["rangeprof._native"] = None\n' + textwrap.dedent(code)
        native = None
    result, err = in_fresh_python(code, native)
    assert result["rows"] > 0 and result["ran"] is True
    assert result["error"].startswith("rangeprof cannot measure in this process: "
                                      "librangeprof.so is not installed with this rangeprof package")
    assert "install rangeprof with its library" in result["error"]
    assert result["info"]["attached"] is False
    assert err == ""


def test_the_command_line_tools_do_not_attach(fake_path):
    result, _ = in_fresh_python("""
        import json, sys
        sys.argv = ["/usr/local/bin/rangeprof-report", "x.jsonl"]
        import rangeprof
        print(json.dumps(dict(current=repr(rangeprof._control.current()),
                              maps=open("/proc/self/maps").read().count("fake_control"))))
    """, fake_path)
    assert result == {"current": "None", "maps": 0}


@pytest.mark.parametrize("argv,orig,env,expected", [
    (["notebook.py"], ["python3", "notebook.py"], {}, True),
    (["/usr/bin/rangeprof-plot", "sweep"], ["python3", "/usr/bin/rangeprof-plot"], {}, False),
    # The launcher's console script hands over to the C launcher: attaching first would
    # leave a temporary output folder behind at every run.
    (["/venv/bin/rangeprof", "--runs", "5"], ["python3", "/venv/bin/rangeprof"], {}, False),
    (["/x/rangeprof/report.py"], ["python3", "-m", "rangeprof.report", "a.jsonl"], {}, False),
    (["-m"], ["python3", "-m", "pytest"], {}, True),
])
def test_which_processes_attach_at_import(monkeypatch, argv, orig, env, expected):
    monkeypatch.setattr(sys, "argv", argv)
    monkeypatch.setattr(sys, "orig_argv", orig, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert _control.should_attach_at_import() is expected


def test_attach_unavailable_warns_once_and_the_notebook_goes_on(fake, fake_path, monkeypatch):
    why = "another CUPTI client holds the profiler (torch.profiler): rangeprof measures nothing"
    monkeypatch.setenv("RANGEPROF_FAKE_UNAVAILABLE", why)
    _control._forget_for_tests()
    with pytest.warns(RangeprofWarning, match=r"rangeprof measures nothing in this process: "
                      r"another CUPTI client holds the profiler \(torch.profiler\)"):
        _control.attach(fake_path)
    with __import__("warnings").catch_warnings():
        __import__("warnings").simplefilter("error")
        _control.attach()                       # tried again: no second warning
        with rangeprof.annotate("noop"):
            done = True
    assert done and not any("annotation_begin" in line for line in fake.log())
    assert rangeprof.info()["measuring"] is False and rangeprof.info()["reason"] == why
    fake.use("clocks.jsonl")

    @rangeprof.analyze.kernel(verbosity=SILENT)
    def bench():
        with rangeprof.annotate("x"):
            pass

    with pytest.raises(Unavailable, match=r"rangeprof measures nothing in this process: "
                       r"another CUPTI client"):
        bench()
    monkeypatch.delenv("RANGEPROF_FAKE_UNAVAILABLE")   # the other client is gone
    assert bench().to_dataframe(extra=True)["NumRuns"].tolist() == [1]


@pytest.mark.parametrize("version", ["0", "1", "-1"])
def test_a_library_of_an_older_control_api_is_refused_clearly(fake, fake_path, monkeypatch, version):
    monkeypatch.setenv("RANGEPROF_FAKE_CONTROL_VERSION", version)
    _control._forget_for_tests()
    a = _control.attach(fake_path)
    assert a.library is None
    with pytest.raises(Unavailable, match=rf"{fake_path} speaks control API version {version}; "
                       r"this rangeprof Python package needs version 2"):
        _control.require()


def test_a_newer_control_api_is_used_with_a_warning(fake, fake_path, monkeypatch):
    monkeypatch.setenv("RANGEPROF_FAKE_CONTROL_VERSION", "3")
    _control._forget_for_tests()
    with pytest.warns(RangeprofWarning, match="speaks control API version 3; this package "
                      "knows version 2"):
        a = _control.attach(fake_path)
    assert a.library is not None and _control.require() is a.library


def test_a_library_without_the_control_api_is_refused_clearly(fake):
    libm = ctypes.util.find_library("m")
    _control._forget_for_tests()
    a = _control.attach(libm)
    assert a.library is None and "exports no rangeprof_control_version" in a.problem
    with pytest.raises(Unavailable, match="is not a rangeprof library with the control API"):
        _control.require()


def test_without_injection_drops_only_rangeprofs():
    env = {"CUDA_INJECTION64_PATH": "/opt/x/lib/librangeprof.so",
           "NVTX_INJECTION64_PATH": "/opt/nsight/libnvtx-inj.so",
           "LD_PRELOAD": "/opt/x/lib/librangeprof.so:/usr/lib/libjemalloc.so",
           "PATH": "/bin"}
    out = _control.without_injection(env)
    assert out == {"NVTX_INJECTION64_PATH": "/opt/nsight/libnvtx-inj.so",
                   "LD_PRELOAD": "/usr/lib/libjemalloc.so", "PATH": "/bin"}
    assert "LD_PRELOAD" not in _control.without_injection({"LD_PRELOAD": "librangeprof.so"})
    assert env["CUDA_INJECTION64_PATH"], "the given environment is left as it was"


def test_ncu_runs_without_the_librarys_injection_variables(tmp_path, monkeypatch):
    """The library's constructor sets the injection variables with setenv(3), behind
    os.environ's back: a child started the usual way inherits them. rangeprof-compare-ncu's
    ncu must not."""
    libc = ctypes.CDLL(None)
    ours = str(tmp_path / "librangeprof.so")
    dump = tmp_path / "env.txt"
    fake_ncu = tmp_path / "ncu"
    fake_ncu.write_text(f"#!/bin/sh\nenv > {dump}\n")
    fake_ncu.chmod(0o755)
    libc.getenv.restype = ctypes.c_char_p
    monkeypatch.setenv("LD_PRELOAD", f"{ours} /usr/lib/libother.so")
    before = {}
    for name in ("CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH"):
        before[name] = libc.getenv(name.encode())   # a real library loaded at import set them
        assert libc.setenv(name.encode(), ours.encode(), 1) == 0
    try:
        import subprocess
        inherited = subprocess.run(["sh", "-c", "env"], capture_output=True, text=True).stdout
        assert f"CUDA_INJECTION64_PATH={ours}" in inherited, "what the test guards against"
        ncu.run_ncu(records.read(recorded("vadd.jsonl"), report=None), ["true"],
                    ncu=str(fake_ncu))
    finally:
        for name, value in before.items():
            if value is None:
                libc.unsetenv(name.encode())
            else:
                libc.setenv(name.encode(), value, 1)
    seen = dict(line.split("=", 1) for line in dump.read_text().splitlines() if "=" in line)
    assert "CUDA_INJECTION64_PATH" not in seen and "NVTX_INJECTION64_PATH" not in seen
    assert seen["LD_PRELOAD"] == "/usr/lib/libother.so"


@pytest.mark.parametrize("children", ["yes", "no", 1, 0, None, [True]])
def test_attach_refuses_children_that_is_not_true_or_false(children):
    """children='no' was accepted as true: child processes were measured. Refused before
    anything is done, naming the value and what is accepted."""
    with pytest.raises(TypeError) as e:
        rangeprof.attach(children=children)
    assert str(e.value) == (f"attach(children='{children}'): expected True or False, not "
                            f"{type(children).__name__}")
    assert not rangeprof.info().get("children")


def test_attach_refuses_a_library_that_is_not_a_path():
    with pytest.raises(TypeError, match=r"^attach\(library='5'\): expected the path of "
                       r"librangeprof.so \(str or os.PathLike\) or None, not int$"):
        rangeprof.attach(library=5)
    with pytest.raises(TypeError, match=r"\(100000 characters\)\): expected True or False"):
        rangeprof.attach(children="y" * 100000)


_DECORATE = """
    import json, os, sys
    if os.environ.get("AS_REPL"):
        sys.ps1 = ">>> "   # what the Python REPL sets: an interactive session
    import rangeprof

    @rangeprof.analyze.kernel(configs=[(1,)])
    def first(n):
        pass

    @rangeprof.analyze.kernel(configs=[(1,)], clock_control="base")
    def locked(n):
        pass

    print(json.dumps(open(os.environ["RANGEPROF_FAKE_LOG"]).read().splitlines()))
"""


def _log_calls(log, *names):
    return [c for c in log.read_text().splitlines() if c.split()[0] in names]


def test_decorating_in_an_interactive_session_starts_the_set_up_and_exit_waits_for_it(
        fake_path, tmp_path):
    """In a notebook or the REPL, analyze.kernel asks the library to set the device up when
    it decorates (not at the first call, which would wait for it), except under a clock
    lock; at the interpreter's exit the set-up is waited for before CUDA's own handlers."""
    log = tmp_path / "fake.log"
    calls, _ = in_fresh_python(_DECORATE, fake_path,
                               env={"RANGEPROF_FAKE_LOG": str(log), "AS_REPL": "1"})
    asked = [c for c in calls if c.startswith("rangeprof_prepare")]
    assert asked == ["rangeprof_prepare -1 -> 0"], calls
    assert calls.index("rangeprof_attach -> 0") < calls.index(asked[0])
    assert "rangeprof_before_exit" not in calls, "not before exit"
    after = log.read_text().splitlines()
    assert after[len(calls):] == ["rangeprof_before_exit"], after


def test_decorating_in_a_script_starts_nothing(fake_path, tmp_path):
    """A script may set CUDA_VISIBLE_DEVICES or fork after its definitions: the decorator
    leaves CUDA alone there."""
    log = tmp_path / "fake.log"
    in_fresh_python(_DECORATE, fake_path, env={"RANGEPROF_FAKE_LOG": str(log)})
    assert _log_calls(log, "rangeprof_prepare", "rangeprof_before_exit") == []


def test_decorating_where_nothing_is_measured_asks_nothing_and_raises_nothing(fake_path,
                                                                             tmp_path):
    log = tmp_path / "fake.log"
    in_fresh_python(_DECORATE, fake_path,
                    env={"RANGEPROF_FAKE_LOG": str(log), "AS_REPL": "1",
                         "RANGEPROF_FAKE_UNAVAILABLE": "another CUPTI client"})
    assert _log_calls(log, "rangeprof_prepare", "rangeprof_before_exit") == []


def test_rangeprof_prepare_passes_the_device_and_refuses_bad_ones_by_value(fake, fake_path,
                                                                            tmp_path,
                                                                            monkeypatch):
    log = tmp_path / "fake.log"
    monkeypatch.setenv("RANGEPROF_FAKE_LOG", str(log))
    _control._forget_for_tests()
    a = _control.attach(fake_path)
    assert a.library is not None and a.unavailable is None
    assert isinstance(rangeprof.prepare(), dict)
    rangeprof.prepare(1)
    assert _log_calls(log, "rangeprof_prepare") == ["rangeprof_prepare -1 -> 0",
                                                    "rangeprof_prepare 1 -> 0"]
    for bad, error, words in (("0", TypeError, "prepare(device='0'): expected a device "
                                               "ordinal (int) or None, not str"),
                              (True, TypeError, "not bool"),
                              (1.0, TypeError, "not float"),
                              (-1, ValueError, "prepare(device=-1): expected a device "
                                               "ordinal from 0 to 63"),
                              (2 ** 32, ValueError, "prepare(device=4294967296): expected"),
                              (64, ValueError, "prepare(device=64)")):
        with pytest.raises(error, match=re.escape(words)):
            rangeprof.prepare(bad)
    assert len(_log_calls(log, "rangeprof_prepare")) == 2, "refused before the library"


def test_rangeprof_prepare_where_nothing_is_measured_raises_unavailable(fake, fake_path,
                                                                        monkeypatch):
    monkeypatch.setenv("RANGEPROF_FAKE_UNAVAILABLE", "another CUPTI client")
    _control._forget_for_tests()
    with pytest.warns(RangeprofWarning):
        _control.attach(fake_path)
    with pytest.raises(Unavailable, match="rangeprof cannot measure in this process: "
                       "another CUPTI client"):
        rangeprof.prepare()


def test_the_librarys_refusal_comes_back_as_its_message(fake, fake_path):
    _control._forget_for_tests()
    a = _control.attach(fake_path)
    assert _control.prepare(0) == (_control.OK, "")
    assert a.library.prepare(-2) == (_control.EINVAL, "rangeprof_prepare: device -2; "
                                     "accepted: -1 or a device ordinal from 0 to 63")
    rc, msg = a.library.prepare(_control.MAX_DEVICES)
    assert rc == _control.EINVAL and "device 64" in msg, "the header's bound, in C too"


def test_the_exit_wait_is_the_asking_processs_only(fake, fake_path, tmp_path, monkeypatch):
    log = tmp_path / "fake.log"
    monkeypatch.setenv("RANGEPROF_FAKE_LOG", str(log))
    _control._forget_for_tests()
    a = _control.attach(fake_path)
    _control._before_exit(a.library, os.getpid() + 1)
    assert "rangeprof_before_exit" not in log.read_text().splitlines()
    _control._before_exit(a.library, os.getpid())
    assert log.read_text().splitlines()[-1] == "rangeprof_before_exit"
