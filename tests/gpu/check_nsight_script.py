"""tests/gpu/check_nsight_script.py - issue 18: "a Nsight Python script with only its import
changed". Runs tests/gpu/nsight_script.py under Nsight Python 0.9.6 (which reruns it under
ncu) and, with only 'import nsight' turned into 'import rangeprof as nsight' (a copy made by
sed), under rangeprof in-process; then compares the two DataFrames. Called by
tests/gpu/notebook.sh with the Python of its venv (torch, nsight-python 0.9.6, rangeprof).

    check_nsight_script.py nsight SCRIPT OUT.json [--workdir DIR]
    check_nsight_script.py rangeprof SCRIPT OUT.json [--workdir DIR]
    check_nsight_script.py compare NSIGHT.json RANGEPROF.json [--tolerance 2]

nsight     exit 77 (a skip) when Nsight Python 0.9.6, ncu or ncu's ncu_report module is not
           there, with the reason; ncu is put on PATH and its extras/python on PYTHONPATH.
rangeprof  the DataFrame must hold Nsight Python's columns and one time row per config.
compare    every column of Nsight Python's DataFrame is in rangeprof's, and AvgValue of
           gpu__time_duration.sum agrees per config within --tolerance percent; exit 77 when
           NSIGHT.json is missing (the nsight step was skipped).
Never changes the card's settings: both tools run with clock control none."""

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys

TIME = "gpu__time_duration.sum"
SKIP = 77
# Nsight Python 0.9.6's to_dataframe() columns besides the config parameters (1.x adds Unit).
NSIGHT_096_COLUMNS = [
    "Annotation",
    "Metric",
    "AvgValue",
    "StdDev",
    "MinValue",
    "MaxValue",
    "NumRuns",
    "Kernel",
    "GPU",
    "Host",
    "ComputeClock",
    "MemoryClock",
    "CI95_Lower",
    "CI95_Upper",
    "RelativeStdDevPct",
    "StableMeasurement",
    "Normalized",
    "Geomean",
]
RANGEPROF_IMPORT = "import rangeprof as nsight"


def find_ncu():
    """ncu's path: on PATH, in the CUDA toolkit, or in /opt/nvidia/nsight-compute."""
    for p in [
        shutil.which("ncu"),
        "/usr/local/cuda/bin/ncu",
        *sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu"), reverse=True),
    ]:
        if p and os.access(p, os.X_OK):
            return p
    return None


def find_ncu_report(ncu):
    """The folder holding ncu_report.py (Nsight Compute's extras/python), or None."""
    here = os.path.dirname(os.path.realpath(ncu)) if ncu else ""
    candidates = [
        os.path.join(here, "extras", "python"),
        os.path.join(here, "..", "extras", "python"),
        *sorted(glob.glob("/opt/nvidia/nsight-compute/*/extras/python"), reverse=True),
        *sorted(glob.glob("/usr/local/cuda/nsight-compute*/extras/python"), reverse=True),
    ]
    for d in candidates:
        if os.path.isfile(os.path.join(d, "ncu_report.py")):
            return os.path.normpath(d)
    return None


def clean_env():
    """The environment without anything that would load rangeprof into the process."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("RANGEPROF_")
        and k not in ("CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH")
    }
    if "LD_PRELOAD" in env:
        env["LD_PRELOAD"] = " ".join(
            p for p in env["LD_PRELOAD"].replace(":", " ").split() if "rangeprof" not in p
        )
    env["PYTHONUNBUFFERED"] = "1"
    return env


def nsight_env():
    """(env, None) to run Nsight Python 0.9.6 with, or (None, why not)."""
    from importlib import metadata

    try:
        version = metadata.version("nsight-python")
    except metadata.PackageNotFoundError:
        return (
            None,
            "Nsight Python is not installed (pip install --no-deps nsight_python-0.9.6-*.whl)",
        )
    if version != "0.9.6":
        return (
            None,
            f"Nsight Python {version} is installed, not 0.9.6 (the version that reruns under ncu)",
        )
    ncu = find_ncu()
    if ncu is None:
        return None, "ncu is not installed (PATH, /usr/local/cuda/bin, /opt/nvidia/nsight-compute)"
    report = find_ncu_report(ncu)
    if report is None:
        return (
            None,
            f"no ncu_report.py beside {ncu} nor in /opt/nvidia/nsight-compute/*/extras/python",
        )
    env = clean_env()
    # Nsight Python 0.9.6 runs 'ncu' by name, and imports ncu_report.
    env["PATH"] = os.path.dirname(ncu) + os.pathsep + env.get("PATH", "")
    env["PYTHONPATH"] = report + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    probe = subprocess.run(
        [sys.executable, "-c", "import nsight, ncu_report"], env=env, capture_output=True, text=True
    )
    if probe.returncode != 0:
        return (
            None,
            f"'import nsight, ncu_report' fails with {report} on PYTHONPATH: "
            f"{probe.stderr.strip()[-500:]}",
        )
    print(f"Nsight Python {version}, {ncu}, ncu_report from {report}")
    return env, None


def run_script(script, out, env, workdir, timeout):
    if os.path.exists(out):
        os.remove(out)
    print("$", sys.executable, script, out, flush=True)
    done = subprocess.run([sys.executable, script, out], env=env, cwd=workdir, timeout=timeout)
    if done.returncode != 0:
        print(f"the script exited with status {done.returncode}")
        return 1
    if not os.path.exists(out):
        print(f"the script wrote no {out}")
        return 1
    return 0


def load(path):
    """(columns, [row dicts]) of a DataFrame written with orient='split'."""
    with open(path) as f:
        d = json.load(f)
    return d["columns"], [dict(zip(d["columns"], r)) for r in d["data"]]


def times(rows_):
    """{n: AvgValue} of the time rows."""
    return {int(r["n"]): float(r["AvgValue"]) for r in rows_ if r["Metric"] == TIME}


def as_rangeprof(script, workdir):
    """A copy of the script, made by sed, with only its 'import nsight' line changed."""
    copy = os.path.join(workdir, "rangeprof_" + os.path.basename(script))
    with open(copy, "w") as f:
        subprocess.run(
            ["sed", "-e", f"s/^import nsight$/{RANGEPROF_IMPORT}/", script], stdout=f, check=True
        )
    with open(script) as f:
        before = f.read().splitlines()
    with open(copy) as f:
        after = f.read().splitlines()
    changed = [i for i, (a, b) in enumerate(zip(before, after)) if a != b]
    if len(before) != len(after) or len(changed) != 1 or after[changed[0]] != RANGEPROF_IMPORT:
        raise SystemExit(
            f"{script}: expected exactly one line 'import nsight' to change, "
            f"changed lines {[i + 1 for i in changed]}"
        )
    print(f"{copy}: line {changed[0] + 1} is now '{RANGEPROF_IMPORT}', the rest unchanged")
    return copy


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="what", required=True)
    for name in ("nsight", "rangeprof"):
        s = sub.add_parser(name)
        s.add_argument("script")
        s.add_argument("out")
        s.add_argument("--workdir", default=None)
        s.add_argument("--timeout", type=int, default=900)
    c = sub.add_parser("compare")
    c.add_argument("nsight")
    c.add_argument("rangeprof")
    c.add_argument("--tolerance", type=float, default=2.0, help="percent")
    args = p.parse_args()

    if args.what == "nsight":
        env, why = nsight_env()
        if env is None:
            print(f"Nsight Python 0.9.6 cannot run here: {why}")
            return SKIP
        workdir = args.workdir or os.path.dirname(os.path.abspath(args.out))
        return run_script(
            os.path.abspath(args.script), os.path.abspath(args.out), env, workdir, args.timeout
        )

    if args.what == "rangeprof":
        workdir = args.workdir or os.path.dirname(os.path.abspath(args.out))
        copy = as_rangeprof(args.script, workdir)
        env = clean_env()
        env["RANGEPROF_OUTPUT"] = os.path.join(workdir, "nsight_script.%p.jsonl")
        status = run_script(copy, os.path.abspath(args.out), env, workdir, args.timeout)
        if status:
            return status
        columns, rows_ = load(args.out)
        missing = [c for c in NSIGHT_096_COLUMNS + ["n"] if c not in columns]
        got = times(rows_)
        print(f"columns: {columns}")
        print(f"{TIME} per n: {got}")
        ok = not missing and sorted(got) == [1024, 2048, 4096]
        if missing:
            print(f"missing Nsight Python's columns: {missing}")
        if sorted(got) != [1024, 2048, 4096]:
            print(f"expected one {TIME} row for each of n = 1024, 2048, 4096")
        return 0 if ok else 1

    if not os.path.exists(args.nsight):
        print(f"no {args.nsight}: Nsight Python's run was skipped or failed, nothing to compare")
        return SKIP
    ns_columns, ns_rows = load(args.nsight)
    rp_columns, rp_rows = load(args.rangeprof)
    missing = [c for c in ns_columns if c not in rp_columns]
    print(f"Nsight Python's columns: {ns_columns}")
    print(f"rangeprof's columns:     {rp_columns}")
    failed = bool(missing)
    if missing:
        print(f"FAIL: rangeprof's DataFrame lacks {missing}")
    ns, rp = times(ns_rows), times(rp_rows)
    if sorted(ns) != sorted(rp) or not ns:
        print(f"FAIL: configs differ: Nsight Python {sorted(ns)}, rangeprof {sorted(rp)}")
        return 1
    print(f"{'n':>6} {'Nsight Python (ns)':>20} {'rangeprof (ns)':>16} {'diff':>8}")
    for n in sorted(ns):
        d = 100 * (rp[n] - ns[n]) / ns[n]
        bad = abs(d) > args.tolerance
        failed |= bad
        print(f"{n:>6} {ns[n]:>20.1f} {rp[n]:>16.1f} {d:>+7.2f}%{'  FAIL' if bad else ''}")
    print(f"AvgValue of {TIME} within {args.tolerance} % at every n: {'no' if failed else 'yes'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
