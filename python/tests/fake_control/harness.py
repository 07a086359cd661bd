"""The harness of the test_analyze*.py tests: the stand-in control library
(fake_control.c, built by 'meson test' and named by RANGEPROF_TEST_PYTHON's environment as
RANGEPROF_TEST_FAKE_CONTROL; compiled here with cc when pytest runs on its own), a fixture
that attaches rangeprof to it with a fresh cursor and call log per test, and what the
tests compare with: the recorded launches, read straight from the fixture files."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import OrderedDict
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
PYTHON_DIR = HERE.parents[1]
RECORDED = Path(os.environ.get("RANGEPROF_FIXTURES", HERE.parent / "fixtures" / "recorded"))
FAKE_VARIABLES = ["RANGEPROF_FAKE_FIXTURE", "RANGEPROF_FAKE_RANGE", "RANGEPROF_FAKE_EPOCH",
                  "RANGEPROF_FAKE_LAUNCHES", "RANGEPROF_FAKE_NOT_REPLAYED",
                  "RANGEPROF_FAKE_UNAVAILABLE", "RANGEPROF_FAKE_CONTROL_VERSION",
                  "RANGEPROF_FAKE_NVTX_MODULES", "RANGEPROF_FAKE_ACCEPT", "RANGEPROF_FAKE_REFUSE",
                  "RANGEPROF_FAKE_LOG"]


def fake_library_path():
    """The stand-in library: meson's build of it, else one compiled now (cc, libcjson)."""
    path = os.environ.get("RANGEPROF_TEST_FAKE_CONTROL")
    if path:
        if not os.path.exists(path):
            pytest.fail(f"RANGEPROF_TEST_FAKE_CONTROL={path} does not exist")
        return path
    cc = shutil.which("cc") or shutil.which("gcc")
    out = Path(tempfile.gettempdir()) / f"rangeprof-fake-control-{os.getuid()}" / "libfake_control.so"
    # The stand-in links the real option table (common/options.c and what it needs).
    root = HERE.parents[2]
    sources = [HERE / "fake_control.c"] + [root / "common" / f for f in
                                           ("error.c", "log.c", "options.c", "regex.c", "utf8.c")]
    if out.exists() and all(out.stat().st_mtime >= f.stat().st_mtime for f in sources):
        return str(out)
    if not cc:
        pytest.skip("no RANGEPROF_TEST_FAKE_CONTROL and no C compiler to build "
                    "tests/fake_control/fake_control.c (meson test builds it)")
    out.parent.mkdir(parents=True, exist_ok=True)
    r = subprocess.run([cc, "-std=c11", "-D_GNU_SOURCE", "-fPIC", "-shared",
                        "-fvisibility=hidden", "-I", str(root), "-o", str(out)] +
                       [str(f) for f in sources] + ["-lcjson", "-lpthread", "-lm"],
                       capture_output=True, text=True)
    if r.returncode:
        pytest.skip(f"could not build the stand-in library: {r.stderr.strip()[:500]}")
    return str(out)


def recorded(name):
    path = RECORDED / name
    if not path.exists():
        pytest.skip(f"recorded fixture {name} is not in {RECORDED}")
    return path


def recorded_launches(name, nvtx_path=None):
    """The recording's launches in file order, each the list of its run records."""
    launches = OrderedDict()
    for line in open(recorded(name), encoding="utf-8"):
        r = json.loads(line)
        if r["type"] == "run" and (nvtx_path is None or r["nvtx_path"] == nvtx_path):
            key = (r["launch"], (r.get("graph") or {}).get("node"))
            launches.setdefault(key, []).append(r)
    return list(launches.values())


def recorded_device(name):
    for line in open(recorded(name), encoding="utf-8"):
        r = json.loads(line)
        if r["type"] == "device":
            return r
    return None


class Fake:
    """The stand-in library of one test: what it hands back and what it was asked."""

    def __init__(self, path, log, output, monkeypatch):
        self.path, self.log_path, self.output = path, log, output
        self._mp = monkeypatch

    def use(self, fixture, range=None, launches=None):
        self._mp.setenv("RANGEPROF_FAKE_FIXTURE", str(recorded(fixture)))
        self.set("RANGEPROF_FAKE_RANGE", range)
        self.set("RANGEPROF_FAKE_LAUNCHES", None if launches is None else str(launches))

    def set(self, name, value):
        if value is None:
            self._mp.delenv(name, raising=False)
        else:
            self._mp.setenv(name, str(value))

    def log(self):
        try:
            return self.log_path.read_text().splitlines()
        except FileNotFoundError:
            return []

    def clear_log(self):
        if self.log_path.exists():
            self.log_path.unlink()

    def options(self):
        """(name, value) of each option the library accepted, in order."""
        out = []
        for line in self.log():
            if line.startswith("rangeprof_set_option ") and line.endswith("-> 0"):
                _, name, value = line[:-len(" -> 0")].split(" ", 2)
                out.append((name, value))
        return out

    def open_annotations(self):
        from rangeprof import _control
        return _control.current().library.info()["annotations_open"]

    def output_file(self):
        return Path(str(self.output).replace("%p", str(os.getpid())))


@pytest.fixture(scope="session")
def fake_path():
    path = fake_library_path()
    # A build with sanitizers (meson's build-san) gives a library that only an interpreter
    # built with them can load: the runtime aborts any other. Tried in a child first.
    r = subprocess.run([sys.executable, "-c", f"import ctypes; ctypes.CDLL({path!r})"],
                       capture_output=True, text=True)
    if r.returncode:
        pytest.skip(f"this Python cannot load the stand-in library {path} (a sanitizer "
                    f"build?): {r.stderr.strip()[-300:]}")
    return path


def attach_stand_in(path, log, output, epoch, setenv, delenv, setattr_):
    """rangeprof attached to the stand-in library at path, as a test (the fake fixture,
    through monkeypatch) or bench/later_call_python.py (for good) wants it: the driver
    taken as loadable (the stand-in stands in for it too), the stand-in's variables
    cleared, then its call log, its cursor's epoch and rangeprof's output file set.
    Returns the attachment."""
    from rangeprof import _control, analyze
    setattr_(analyze, "_cuda_driver_loadable", lambda: True)
    for name in FAKE_VARIABLES:
        delenv(name)
    setenv("RANGEPROF_FAKE_LOG", str(log))
    setenv("RANGEPROF_FAKE_EPOCH", epoch)
    setenv("RANGEPROF_OUTPUT", str(output))
    _control._forget_for_tests()
    return _control.attach(path)


@pytest.fixture
def fake(fake_path, tmp_path, monkeypatch, request):
    """rangeprof attached to the stand-in library, with a fresh cursor (the test's id is
    the epoch), a call log and an output file of the test's own."""
    from rangeprof import _control
    log = tmp_path / "fake.log"
    output = tmp_path / "rangeprof.%p.jsonl"
    a = attach_stand_in(fake_path, log, output, request.node.nodeid, monkeypatch.setenv,
                        lambda name: monkeypatch.delenv(name, raising=False),
                        monkeypatch.setattr)
    assert a.library is not None and a.unavailable is None, a.describe()
    yield Fake(fake_path, log, output, monkeypatch)
    _control._forget_for_tests()


def run_python(code, env=None, cwd=None):
    """Runs code in a fresh interpreter (this one) with the package on its path:
    (returncode, stdout, stderr)."""
    full = dict(os.environ)
    full["PYTHONPATH"] = str(PYTHON_DIR) + (os.pathsep + full["PYTHONPATH"]
                                             if full.get("PYTHONPATH") else "")
    for name in FAKE_VARIABLES + ["RANGEPROF_OUTPUT", "LD_PRELOAD",
                                  "CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH"]:
        full.pop(name, None)
    full.update(env or {})
    r = subprocess.run([sys.executable, "-c", code], env=full, cwd=cwd, capture_output=True,
                       text=True, timeout=120)
    return r.returncode, r.stdout, r.stderr


# Puts a stand-in rangeprof._native in place before 'import rangeprof', so that the import
# finds the library the test names (or none).
NATIVE_STUB = """
import sys, types
_native = types.ModuleType("rangeprof._native")
_native.library_path = lambda: {path!r}
sys.modules["rangeprof._native"] = _native
"""
