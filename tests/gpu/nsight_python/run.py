#!/usr/bin/env python3
"""tests/gpu/nsight_python/run.py - Nsight Python's own examples and public-behaviour tests,
unmodified, with 'import nsight' resolving to rangeprof (the shim in shim/nsight, put on
PYTHONPATH here only). Run from the repository root on the GPU machine, with the Python
that has rangeprof installed (and PyTorch, cuda-core, pytest), or through run.sh, which
installs the carried wheel first:

    bash tests/gpu/nsight_python/run.sh [--out DIR] [--only TEXT]
    /opt/torch/.venv/bin/python tests/gpu/nsight_python/run.py [--out DIR] [--only TEXT]

The files are those pins.txt names, copied into upstream/ by fetch.sh (where GitHub is
reachable) and carried here; their hashes are checked again before anything runs. Each
example runs as its own process (python examples/NN_x.py, as its README says), each test
file under pytest, in a scratch copy of upstream/ (examples write their PNGs and CSVs
there). One line per example and per test case:

    PASS example 00_minimal
    FAIL example 09_advanced_metric_custom: <the last line of its error>
    SKIP example 12_cutile: needs cuda.tile, which this Python lacks
    DELIBERATE tests/test_annotate.py::test_active_annotations_nested: <README row>: <why>
    PASS tests/test_profiler.py::test_simple

Two checks of rangeprof's own come first: "check silent" (verbosity=SILENT prints nothing,
the library's lines and exit table included) and "check import" (info() says it
measures; a child process gets neither RANGEPROF_OUTPUT nor CUDA's hook and prints and
writes nothing of rangeprof's; nothing is left in the temporary directory).
An example also fails where its output shows one of rangeprof's own columns: printed
under Nsight Python, to_dataframe() shows Nsight Python's columns only. A failing test case
is DELIBERATE when deliberate.txt lists it (each a row of python/README.md's table of
deliberate differences); any other failure, a listed case that passes and a listed case
that never ran fail the suite. test_parameter_clock_control[base] is not run: it locks the
SM clock, and the GPU suite never changes the card's settings.

Exit status: 0 all passed (deliberate differences aside), 1 a failure, 77 nothing could run
(no GPU, no upstream/, no rangeprof for this Python: the line says which), 2 bad arguments.
Logs, pytest's XML and the examples' output go to --out (default: a temporary directory,
named at the end)."""
import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
UPSTREAM = HERE / "upstream"
SHIM = HERE / "shim"
PINS = HERE / "pins.txt"
DELIBERATE = HERE / "deliberate.txt"
# Not run, with why (one line each in the output).
NOT_RUN = {"tests/test_profiler.py::test_parameter_clock_control[base]":
           "locks the SM clock (clock_control='base'); the GPU suite never changes the "
           "card's settings"}
# rangeprof's own columns: none may show in an example's output, where Nsight Python prints
# its DataFrame. A copy of rangeprof._results.OWN_COLUMNS (this runner does not import the
# package it tests), which python/tests/test_nsight_deliberate.py checks is equal.
OWN_COLUMNS = ["MedianValue", "DriftPct", "Reasons", "SMClock", "Temperature",
               "TemperatureMax", "Power", "ThrottleReasons", "Passes", "KernelIndex",
               "Launches", "RangeKernels", "RangeKernelNames"]


def read_pins(path=PINS):
    """(commit, {path: sha256}) of pins.txt."""
    commit, files = None, {}
    for line in path.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        if line.startswith("commit "):
            commit = line.split()[1]
            continue
        digest, name = line.split("  ", 1)
        files[name] = digest
    return commit, files


def read_deliberate(path=DELIBERATE):
    """{test id: (README row, how it fails: a compiled pattern, why)} of deliberate.txt."""
    out = {}
    for line in path.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        test, row, how, why = (part.strip() for part in line.split(" | ", 3))
        out[test] = (row, re.compile(how), why)
    return out


class Tally:
    def __init__(self):
        self.counts = {}
        self.failed = []

    def line(self, verdict, kind, name, detail=""):
        self.counts[(kind, verdict)] = self.counts.get((kind, verdict), 0) + 1
        if verdict == "FAIL":
            self.failed.append(name)
        text = f"{verdict} {name}" + (f": {detail}" if detail else "")
        print(text, flush=True)

    def summary(self, kind):
        return ", ".join(f"{self.counts.get((kind, v), 0)} {v.lower()}"
                         for v in ("PASS", "FAIL", "DELIBERATE", "SKIP"))


def gpu_here():
    try:
        return subprocess.run(["nvidia-smi", "-L"], capture_output=True,
                              timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def child_env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SHIM)] + (
        [env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env["MPLBACKEND"] = "Agg"
    env["PYTHONUNBUFFERED"] = "1"
    return env


def last_error_line(text):
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in reversed(lines):
        if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt)\b", line):
            return line[:300]
    return lines[-1][:300] if lines else "(no output)"


def missing_module(text):
    """The module a ModuleNotFoundError names, unless it is nsight's or rangeprof's own."""
    found = re.findall(r"ModuleNotFoundError: No module named '([^']+)'", text)
    for name in found:
        if not name.split(".")[0] in ("nsight", "rangeprof"):
            return name
    return None


def wanted(only, name):
    return not only or any(o in name for o in only)


def run_examples(py, work, out, tally, timeout, only=()):
    for path in sorted((work / "examples").glob("[0-9][0-9]_*.py")):
        name = f"example {path.stem}"
        if not wanted(only, name):
            continue
        try:
            r = subprocess.run([py, "-u", str(path.relative_to(work))], cwd=work,
                               env=child_env(), capture_output=True, text=True,
                               timeout=timeout)
        except subprocess.TimeoutExpired:
            tally.line("FAIL", "example", name, f"still running after {timeout} s")
            continue
        (out / f"{path.stem}.out").write_text(r.stdout)
        (out / f"{path.stem}.err").write_text(r.stderr)
        if r.returncode != 0:
            module = missing_module(r.stderr)
            if module:
                tally.line("SKIP", "example", name, f"needs {module}, which this Python lacks")
            else:
                tally.line("FAIL", "example", name,
                           f"exit {r.returncode}: {last_error_line(r.stderr)}")
            continue
        shown = [c for c in OWN_COLUMNS if re.search(rf"\b{c}\b", r.stdout)]
        if shown:
            tally.line("FAIL", "example", name, "its output shows rangeprof's own column(s) "
                       f"{', '.join(shown)}, which Nsight Python's DataFrame has not")
        else:
            tally.line("PASS", "example", name)


def junit_cases(xml_path, test_file):
    """[(test id, verdict, detail, the whole failure text)] of pytest's JUnit XML for one
    test file."""
    out = []
    module = test_file[:-len(".py")].replace("/", ".")
    for case in ET.parse(xml_path).getroot().iter("testcase"):
        classname, name = case.get("classname", ""), case.get("name", "")
        cls = classname[len(module):].lstrip(".") if classname.startswith(module) else ""
        test_id = f"{test_file}::{cls + '::' if cls else ''}{name}"
        failure = case.find("failure")
        if failure is None:
            failure = case.find("error")
        skipped = case.find("skipped")
        if failure is not None:
            message = (failure.get("message") or "").strip()
            detail = message.splitlines()
            if not detail or detail[0] in ("collection failure", "failed on setup"):
                # pytest's generic words: the error itself is the last line of the text.
                detail = [" ".join(detail[:1] + [last_error_line(failure.text or "")])]
            out.append((test_id, "FAIL", detail[0][:300], message + "\n" + (failure.text or "")))
        elif skipped is not None:
            out.append((test_id, "SKIP", (skipped.get("message") or "skipped").strip(), ""))
        else:
            out.append((test_id, "PASS", "", ""))
    return out


def run_tests(py, work, out, tally, deliberate, timeout, only=()):
    seen = set()
    for path in sorted((work / "tests").glob("test_*.py")):
        test_file = str(path.relative_to(work))
        if not wanted(only, test_file):
            deliberate = {t: v for t, v in deliberate.items()
                          if not t.startswith(test_file + "::")}
            continue
        xml_path = out / f"{path.stem}.xml"
        cmd = [py, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rN",
               "-o", "junit_family=xunit1", f"--junitxml={xml_path}", test_file]
        for test_id in NOT_RUN:
            if test_id.startswith(test_file + "::"):
                cmd += ["--deselect", test_id]
        try:
            r = subprocess.run(cmd, cwd=work, env=child_env(), capture_output=True,
                               text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            tally.line("FAIL", "test", test_file, f"pytest still running after {timeout} s")
            continue
        (out / f"{path.stem}.log").write_text(r.stdout + r.stderr)
        if not xml_path.exists():
            why = last_error_line(r.stdout + r.stderr)
            tally.line("FAIL", "test", test_file, f"pytest exit {r.returncode}, no results: {why}")
            continue
        for test_id, verdict, detail, text in junit_cases(xml_path, test_file):
            seen.add(test_id)
            if test_id in deliberate:
                row, how, why = deliberate[test_id]
                if verdict == "FAIL" and how.search(text):
                    tally.line("DELIBERATE", "test", test_id, f"{row}: {why}")
                elif verdict == "FAIL":
                    tally.line("FAIL", "test", test_id, f"{detail} (listed as a deliberate "
                               f"difference, {row}, failing with '{how.pattern}', but it "
                               "fails otherwise)")
                elif verdict == "PASS":
                    tally.line("FAIL", "test", test_id, "listed as a deliberate difference "
                               f"({row}) but passes: take it off deliberate.txt and "
                               "python/README.md's table")
                else:
                    tally.line(verdict, "test", test_id, detail)
            else:
                tally.line(verdict, "test", test_id, detail)
        for test_id, why in NOT_RUN.items():
            if test_id.startswith(test_file + "::"):
                tally.line("SKIP", "test", test_id, why)
                seen.add(test_id)
    for test_id, (row, _how, _why) in deliberate.items():
        if test_id not in seen:
            tally.line("FAIL", "test", test_id, f"listed as a deliberate difference ({row}) "
                       "but never ran")


# rangeprof's own promises under Nsight Python's API, on the GPU (issue 32's items 6 and 7):
# SILENT prints nothing at all, and 'import rangeprof' leaves nothing behind and gives child
# processes nothing to measure with.
SILENT_SCRIPT = """
import nsight, torch
@nsight.analyze.kernel(configs=[(256,), (512,)], runs=3,
                       verbosity=nsight.VerbosityLevel.SILENT)
def add(n):
    a = torch.randn(n, n, device="cuda")
    with nsight.annotate("add"):
        a + a
df = add().to_dataframe()
assert len(df) == 2, df
"""
CHILD_SCRIPT = """
import json, os, torch
a = torch.ones(1 << 20, device="cuda")
(a + a).sum().item()
print(json.dumps({n: os.environ.get(n) for n in ("RANGEPROF_OUTPUT", "CUDA_INJECTION64_PATH")}))
"""
# Prints one JSON object last: what info() says, the child's environment and stderr, and
# the files in this process's output directory.
IMPORT_SCRIPT = """
import json, os, subprocess, sys
import rangeprof, torch
torch.cuda.init()
info = rangeprof.info()
child = subprocess.run([sys.executable, "-c", sys.argv[1]], capture_output=True, text=True)
out_dir = os.path.dirname(info.get("output") or "")
files = sorted(os.listdir(out_dir)) if out_dir and os.path.isdir(out_dir) else []
print(json.dumps(dict(pid=os.getpid(), measuring=info.get("measuring"), reason=info.get("reason"),
                      child_rc=child.returncode, child_out=child.stdout.strip(),
                      child_err=child.stderr.strip()[-500:], files=files)))
"""


def _script(py, code, cwd, env=None, args=(), timeout=300):
    full = child_env()
    full.update(env or {})
    return subprocess.run([py, "-c", code, *args], cwd=cwd, env=full, capture_output=True,
                          text=True, timeout=timeout)


def check_silent(py, work, out, tally):
    """verbosity=SILENT prints nothing: no line of rangeprof's, none of its library's
    (==RANGEPROF== progress, the exit table)."""
    name = "check silent"
    try:
        r = _script(py, SILENT_SCRIPT, work)
    except subprocess.TimeoutExpired:
        tally.line("FAIL", "check", name, "still running after 300 s")
        return
    (out / "check_silent.txt").write_text(f"rc {r.returncode}\n{r.stdout}{r.stderr}")
    printed = (r.stdout + r.stderr).strip().splitlines()
    if r.returncode != 0:
        tally.line("FAIL", "check", name, f"exit {r.returncode}: {last_error_line(r.stderr)}")
    elif printed:
        tally.line("FAIL", "check", name, f"verbosity=SILENT printed {len(printed)} line(s), "
                   f"the first: {printed[0][:200]}")
    else:
        tally.line("PASS", "check", name)


def check_import(py, work, out, tally):
    """'import rangeprof' (then CUDA's initialisation): info() says it measures; a child
    process gets neither RANGEPROF_OUTPUT nor CUDA's hook, and prints and writes nothing
    of rangeprof's; the temporary directory is gone once the process ends (it measured
    nothing: its file holds the session and device records only)."""
    name = "check import"
    tmp = Path(tempfile.mkdtemp(prefix="nsight-python-tmp-"))
    try:
        r = _script(py, IMPORT_SCRIPT, work, env={"TMPDIR": str(tmp)}, args=[CHILD_SCRIPT])
        left = sorted(p.name for p in tmp.iterdir())
    except subprocess.TimeoutExpired:
        tally.line("FAIL", "check", name, "still running after 300 s")
        return
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    (out / "check_import.txt").write_text(f"rc {r.returncode}\n{r.stdout}{r.stderr}")
    if r.returncode != 0:
        tally.line("FAIL", "check", name, f"exit {r.returncode}: {last_error_line(r.stderr)}")
        return
    got = json.loads(r.stdout.strip().splitlines()[-1])
    problems = []
    if got["measuring"] is not True:
        problems.append(f"info() says measuring {got['measuring']} ({got['reason']})")
    if got["child_rc"] != 0:
        problems.append(f"the child failed: {got['child_err'][-200:]}")
    elif json.loads(got["child_out"].splitlines()[-1]) != {"RANGEPROF_OUTPUT": None,
                                                           "CUDA_INJECTION64_PATH": None}:
        problems.append(f"the child's environment holds {got['child_out']}")
    if "rangeprof" in got["child_err"].lower():
        problems.append(f"the child printed rangeprof's lines: {got['child_err'][:200]}")
    others = [f for f in got["files"] if f != f"rangeprof.{got['pid']}.jsonl"]
    if others:
        problems.append(f"the child wrote into the output directory: {others}")
    if left:
        problems.append(f"left in the temporary directory: {left}")
    if problems:
        tally.line("FAIL", "check", name, "; ".join(problems))
    else:
        tally.line("PASS", "check", name)


def check_upstream(files):
    """Problems with upstream/: missing files or hashes other than the pinned ones."""
    problems = []
    for name, digest in files.items():
        path = UPSTREAM / name
        if not path.is_file():
            problems.append(f"{name} missing")
        elif hashlib.sha256(path.read_bytes()).hexdigest() != digest:
            problems.append(f"{name} differs from its pinned sha256")
    return problems


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--python", default=sys.executable,
                   help="the Python with rangeprof, PyTorch and pytest (default: this one)")
    p.add_argument("--out", help="folder for the logs (default: a new temporary folder)")
    p.add_argument("--only", action="append", default=[], metavar="TEXT",
                   help="run only the examples and test files whose name holds TEXT "
                        "('example', 'tests/', '09_', 'test_profiler'); repeatable")
    p.add_argument("--timeout", type=int, default=900,
                   help="seconds one example or one test file may take (default 900)")
    args = p.parse_args(argv)
    if args.timeout < 1:
        p.error(f"--timeout {args.timeout}: expected seconds >= 1")
    name = "nsight-python"
    if not gpu_here():
        print(f"SKIP {name}: no GPU here (nvidia-smi -L fails)")
        return 77
    commit, files = read_pins()
    if not UPSTREAM.is_dir():
        print(f"SKIP {name}: no {UPSTREAM.relative_to(HERE.parents[2])}: run "
              "tests/gpu/nsight_python/fetch.sh where GitHub is reachable, and carry it")
        return 77
    problems = check_upstream(files)
    if problems:
        print(f"FAIL {name}: upstream/ is not NVIDIA/nsight-python@{commit[:7]} as pinned: "
              f"{'; '.join(problems[:5])} (run fetch.sh again)")
        return 1
    probe = subprocess.run(
        [args.python, "-c", "import nsight, rangeprof, pytest; assert nsight is rangeprof; "
         "print(rangeprof.__version__, rangeprof.__file__)"],
        env=child_env(), capture_output=True, text=True, cwd=tempfile.gettempdir())
    if probe.returncode != 0:
        print(f"SKIP {name}: {args.python} cannot import rangeprof (through the nsight shim) "
              f"and pytest: {last_error_line(probe.stderr)}")
        return 77
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="nsight-python-"))
    out.mkdir(parents=True, exist_ok=True)
    print(f"{name}: NVIDIA/nsight-python@{commit[:7]}, 'import nsight' is rangeprof "
          f"{probe.stdout.strip()}", flush=True)
    work = Path(tempfile.mkdtemp(prefix="nsight-python-work-"))
    try:
        shutil.copytree(UPSTREAM, work, dirs_exist_ok=True)
        tally = Tally()
        if wanted(args.only, "check"):
            check_silent(args.python, work, out, tally)
            check_import(args.python, work, out, tally)
        run_examples(args.python, work, out, tally, args.timeout, args.only)
        run_tests(args.python, work, out, tally, read_deliberate(), args.timeout, args.only)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{name}: checks: {tally.summary('check')}; examples: {tally.summary('example')}; "
          f"tests: {tally.summary('test')}; logs in {out}")
    if tally.failed:
        print(f"{name}: FAILED: {', '.join(tally.failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
