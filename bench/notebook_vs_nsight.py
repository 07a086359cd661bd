"""bench/notebook_vs_nsight.py - issue 18's side-by-side benchmark, on the GPU machine: the Nsight
Python tutorial's first lesson (fp32 matmul at n = 1024, 2048, 4096, 20 runs each) and a
10-config sweep (n = 1024 to 10240 in steps of 1024, 20 runs each), each measured three ways,
every way in its own process:

  plain      the program alone: the same function called as often (configs x runs), no profiler
  nsight     Nsight Python 0.9.6 ('import nsight'), which reruns this script under ncu 2025.3.1
  rangeprof  rangeprof in-process ('import rangeprof')

Each way's whole process is timed (time.perf_counter around subprocess.run), median of --reps.
Its cost is that median less the plain program's; the ratio is Nsight Python's cost over
rangeprof's (targets: at least 20 at 3 configs, 50 at 10). Per config, the mean
gpu__time_duration.sum of rangeprof, of Nsight Python, and of ncu run directly on the plain
program (once per lesson, --clock-control none --cache-control all, NVTX ranges 'matmul n=N'),
each pair within 2 %. Results go to OUT as JSON, with a table on stdout; exit 1 when a way
failed, a target was missed or values disagree.
Results (H200, session 6): doc/measurements.md, "Notebook vs Nsight Python"; cited by
README.md (the notebook paragraph) and doc/control-api.md (the warm-up pass's cost).

Never changes the card's settings: ncu and Nsight Python with clock control none, rangeprof's
default none. No sizes of 256 or 512: cuBLAS splits those in two kernels (split-K), which Nsight
Python 0.9.6 refuses.

usage, through bench/notebook_vs_nsight.sh (which makes the venv: torch, nsight-python 0.9.6,
rangeprof), on the GPU machine:
    bench/notebook_vs_nsight.sh OUT.json [--reps 3] [--runs 20] [--lessons 3,10] [--no-ncu]
The same file is the measured program, with --worker WAY --configs 3|10 --runs R --result PATH
(WAY: plain, nsight, rangeprof, or ncu for the plain program with NVTX ranges). Nsight Python
0.9.6 reruns the whole script under ncu with the same arguments, so the measured function is
defined at module level and everything runs under 'if __name__ == "__main__"'."""

import argparse
import contextlib
import json
import os
import sys


def _worker_way(argv):
    return argv[argv.index("--worker") + 1] if "--worker" in argv[:-1] else None


WAY = _worker_way(sys.argv)
# Each profiler is imported first, before anything touches CUDA, as each one documents.
if WAY == "nsight":
    import nsight as profiler
elif WAY == "rangeprof":
    import rangeprof as profiler
else:
    profiler = None
if WAY is not None:
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False  # fp32 stays fp32, as in the tutorial

LESSONS = {3: [1024, 2048, 4096], 10: [1024 * k for k in range(1, 11)]}
TIME = "gpu__time_duration.sum"


def _measured_range(n):
    if profiler is not None:
        return profiler.annotate("matmul")
    if WAY == "ncu":
        return torch.cuda.nvtx.range(f"matmul n={n}")
    return contextlib.nullcontext()


def matmul(n):
    """The tutorial's lesson: inputs made in the function, the product alone measured."""
    a = torch.randn(n, n, device="cuda")
    b = torch.randn(n, n, device="cuda")
    with _measured_range(n):
        _ = a @ b


def worker(args):
    sizes = LESSONS[args.configs]
    result = {"way": WAY, "sizes": sizes, "runs": args.runs}
    if profiler is None:
        for n in sizes:
            for _ in range(args.runs):
                matmul(n)
        torch.cuda.synchronize()
    else:
        measured = profiler.analyze.kernel(configs=[(n,) for n in sizes], runs=args.runs)(matmul)
        # Under Nsight Python 0.9.6 the process that ncu runs ends inside this call.
        df = measured().to_dataframe()
        result["columns"] = [str(c) for c in df.columns]
        t = df[df["Metric"] == TIME]
        result["values"] = {str(int(n)): float(v) for n, v in zip(t["n"], t["AvgValue"])}
        result["num_runs"] = {str(int(n)): int(v) for n, v in zip(t["n"], t["NumRuns"])}
        result["kernels"] = {str(int(n)): str(k) for n, k in zip(t["n"], t["Kernel"])}
    if args.result:
        with open(args.result, "w") as f:
            json.dump(result, f)


# ---------------------------------------------------------------------------------------
# The driver: runs the workers, times them, compares.


def find_ncu(given=None):
    import glob
    import shutil

    for p in [
        given,
        shutil.which("ncu"),
        "/usr/local/cuda/bin/ncu",
        *sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu"), reverse=True),
    ]:
        if p and os.access(p, os.X_OK):
            return p
    return None


def find_ncu_report(ncu):
    import glob

    here = os.path.dirname(os.path.realpath(ncu)) if ncu else ""
    for d in [
        os.path.join(here, "extras", "python"),
        os.path.join(here, "..", "extras", "python"),
        *sorted(glob.glob("/opt/nvidia/nsight-compute/*/extras/python"), reverse=True),
        *sorted(glob.glob("/usr/local/cuda/nsight-compute*/extras/python"), reverse=True),
    ]:
        if os.path.isfile(os.path.join(d, "ncu_report.py")):
            return os.path.normpath(d)
    return None


def base_env():
    """This environment without anything that loads rangeprof into a process."""
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


def median(xs):
    xs = sorted(xs)
    return (xs[(len(xs) - 1) // 2] + xs[len(xs) // 2]) / 2 if xs else float("nan")


def run_way(way, configs, runs, workdir, tag, env, ncu=None, timeout=900):
    """(wall seconds, the worker's result or None, exit status, log path)."""
    result = os.path.join(workdir, f"{way}-{configs}-{tag}.json")
    log = os.path.join(workdir, f"{way}-{configs}-{tag}.log")
    command = [
        sys.executable,
        os.path.abspath(__file__),
        "--worker",
        way,
        "--configs",
        str(configs),
        "--runs",
        str(runs),
        "--result",
        result,
    ]
    if way == "ncu":
        csv_path = os.path.join(workdir, f"ncu-{configs}-{tag}.csv")
        command = [
            ncu,
            "--clock-control",
            "none",
            "--cache-control",
            "all",
            "--csv",
            "--page",
            "raw",
            "--metrics",
            TIME,
            "--nvtx",
            "--nvtx-include",
            "regex:^matmul n=/",
            "--log-file",
            csv_path,
        ] + command
    for p in (result, log):
        if os.path.exists(p):
            os.remove(p)
    wall, status = timed_run(command, env, workdir, log, timeout)
    value = None
    if os.path.exists(result):
        with open(result) as f:
            value = json.load(f)
    if way == "ncu" and status == 0:
        value = dict(value or {}, values=ncu_values(csv_path))
    return wall, value, status, log


def timed_run(command, env, workdir, log, timeout):
    """(wall seconds, exit status or "timeout") of command, its output in log after the
    command line (bench/floor.py runs its ways through this too)."""
    import subprocess
    import time

    with open(log, "w") as f:
        f.write("$ " + " ".join(command) + "\n")
        f.flush()
        start = time.perf_counter()
        try:
            status = subprocess.run(
                command, env=env, cwd=workdir, stdout=f, stderr=subprocess.STDOUT, timeout=timeout
            ).returncode
        except subprocess.TimeoutExpired:
            status = "timeout"
        return time.perf_counter() - start, status


def ncu_values(csv_path):
    """{n: mean gpu__time_duration.sum in ns} of ncu's raw CSV, NVTX ranges 'matmul n=N'."""
    import re
    import statistics

    try:
        from rangeprof.compare_ncu import read_ncu_csv
    except ImportError:  # no rangeprof installed: the repository's own package
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
        from rangeprof.compare_ncu import read_ncu_csv
    from rangeprof.units import conversion_factor, parse_unit

    by_n = {}
    for (path, _kernel, _grid), metrics in read_ncu_csv(csv_path).items():
        m = re.search(r"n=(\d+)", path or "")
        if m and TIME in metrics:
            values, unit = metrics[TIME]
            factor = conversion_factor(parse_unit(unit), parse_unit("nanosecond")) if unit else 1.0
            by_n.setdefault(m.group(1), []).extend(v * factor for v in values)
    return {n: statistics.fmean(v) for n, v in by_n.items()}


def describe_machine(ncu):
    import subprocess
    from importlib import metadata

    info = {"python": sys.version.split()[0]}
    for dist in ("torch", "nsight-python", "rangeprof", "pandas"):
        try:
            info[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            info[dist] = None

    def out(cmd):
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            return None

    info["gpu"] = out(
        [
            "nvidia-smi",
            "--query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu",
            "--format=csv,noheader",
        ]
    )
    info["ncu"] = ncu
    info["ncu_version"] = (out([ncu, "--version"]) or "").splitlines()[-1:] if ncu else None
    return info


def driver(args):
    import tempfile

    workdir = os.path.abspath(args.workdir or tempfile.mkdtemp(prefix="notebook-vs-nsight-"))
    os.makedirs(workdir, exist_ok=True)
    ncu = find_ncu(args.ncu)
    report = find_ncu_report(ncu)
    plain_env = base_env()
    rp_env = dict(plain_env, RANGEPROF_OUTPUT=os.path.join(workdir, "rangeprof.%p.jsonl"))
    ns_env = dict(plain_env)
    if ncu:  # Nsight Python 0.9.6 runs 'ncu' by name and imports ncu_report
        ns_env["PATH"] = os.path.dirname(ncu) + os.pathsep + ns_env.get("PATH", "")
    if report:
        ns_env["PYTHONPATH"] = report + (
            os.pathsep + ns_env["PYTHONPATH"] if ns_env.get("PYTHONPATH") else ""
        )
    envs = {"plain": plain_env, "nsight": ns_env, "rangeprof": rp_env, "ncu": plain_env}
    out = {
        "machine": describe_machine(ncu),
        "workdir": workdir,
        "reps": args.reps,
        "runs": args.runs,
        "targets": {"3": 20, "10": 50},
        "tolerance_pct": args.tolerance,
        "lessons": {},
    }
    problems = []
    if ncu is None:
        problems.append("no ncu: Nsight Python cannot run")
    elif report is None:
        problems.append(f"no ncu_report.py found for {ncu}: Nsight Python cannot load its report")
    print(f"work directory {workdir}; ncu {ncu}; ncu_report {report}", flush=True)

    # One untimed plain process first: the first start reads torch and CUDA from disk.
    run_way("plain", 3, 1, workdir, "warmup", plain_env, timeout=args.timeout)
    lessons = [int(x) for x in args.lessons.split(",")]
    for configs in lessons:
        walls = {w: [] for w in ("plain", "nsight", "rangeprof")}
        results = {}
        for rep in range(args.reps):  # interleaved, so that a drift touches every way alike
            for way in ("plain", "rangeprof", "nsight"):
                wall, value, status, log = run_way(
                    way, configs, args.runs, workdir, f"rep{rep}", envs[way], timeout=args.timeout
                )
                print(
                    f"  {configs} configs, {way:9} rep {rep}: {wall:8.2f} s, exit {status}",
                    flush=True,
                )
                if status != 0 or (way != "plain" and not (value or {}).get("values")):
                    problems.append(
                        f"{way}, {configs} configs, rep {rep}: exit {status}, see {log}"
                    )
                    with open(log) as f:
                        print("".join(f.readlines()[-15:]))
                    continue
                walls[way].append(wall)
                if value and value.get("values") and way not in results:
                    results[way] = value
        if ncu and not args.no_ncu:
            wall, value, status, log = run_way(
                "ncu",
                configs,
                args.runs,
                workdir,
                "once",
                envs["ncu"],
                ncu=ncu,
                timeout=args.timeout,
            )
            print(f"  {configs} configs, ncu alone: {wall:8.2f} s, exit {status}", flush=True)
            if status == 0 and value and value.get("values"):
                results["ncu"] = dict(value, wall_s=wall)
            else:
                problems.append(f"ncu, {configs} configs: exit {status}, see {log}")
        lesson = summarize(configs, walls, results, args.tolerance, problems)
        out["lessons"][str(configs)] = lesson
        print_lesson(configs, args.runs, lesson)
    out["problems"] = problems
    out["ok"] = not problems
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
    print(f"\nresults: {args.out}")
    for p in problems:
        print(f"problem: {p}")
    return 0 if not problems else 1


def summarize(configs, walls, results, tolerance, problems):
    med = {w: median(v) for w, v in walls.items()}
    cost = {w: med[w] - med["plain"] for w in ("nsight", "rangeprof")}
    target = {3: 20, 10: 50}.get(configs)
    ratio = cost["nsight"] / cost["rangeprof"] if cost["rangeprof"] > 0 else float("inf")
    lesson = {
        "sizes": LESSONS[configs],
        "walls_s": walls,
        "median_s": med,
        "cost_s": cost,
        "ratio": ratio,
        "target": target,
        "target_met": bool(target and ratio >= target),
    }
    if target and not ratio >= target:
        problems.append(
            f"{configs} configs: Nsight Python's cost / rangeprof's = {ratio:.1f}, target {target}"
        )
    per = []
    sources = [s for s in ("rangeprof", "nsight", "ncu") if s in results]
    for n in LESSONS[configs]:
        row = {"n": n}
        for s in sources:
            row[s] = results[s]["values"].get(str(n))
        for a, b in (("rangeprof", "ncu"), ("nsight", "ncu"), ("rangeprof", "nsight")):
            if row.get(a) and row.get(b):
                d = 100 * (row[a] - row[b]) / row[b]
                row[f"{a}_vs_{b}_pct"] = d
                if abs(d) > tolerance:
                    problems.append(
                        f"{configs} configs, n={n}: {a} {row[a]:.0f} ns against "
                        f"{b} {row[b]:.0f} ns: "
                        f"{d:+.2f} % (more than {tolerance} %)"
                    )
        per.append(row)
    lesson["per_config"] = per
    lesson["kernels"] = (results.get("rangeprof") or {}).get("kernels")
    lesson["columns"] = {
        s: results[s].get("columns") for s in ("rangeprof", "nsight") if s in results
    }
    if "ncu" in results:
        lesson["ncu_alone_wall_s"] = results["ncu"].get("wall_s")
    return lesson


def print_lesson(configs, runs, lesson):
    print(
        f"\n== {configs} configs (n = {', '.join(map(str, lesson['sizes']))}), {runs} runs each =="
    )
    print(f"{'way':10} {'median wall (s)':>16}  {'walls (s)':24} {'cost beyond plain (s)':>22}")
    for w in ("plain", "nsight", "rangeprof"):
        walls = " ".join(f"{x:.2f}" for x in lesson["walls_s"][w])
        cost = lesson["cost_s"].get(w)
        print(
            f"{w:10} {lesson['median_s'][w]:>16.2f}  {walls:24} "
            f"{'' if cost is None else f'{cost:.2f}':>22}"
        )
    t = lesson["target"]
    print(
        f"Nsight Python's cost / rangeprof's: {lesson['ratio']:.1f} (target >= {t}: "
        f"{'met' if lesson['target_met'] else 'NOT met'})"
    )
    if lesson.get("ncu_alone_wall_s"):
        print(
            f"(ncu alone on the plain program: {lesson['ncu_alone_wall_s']:.2f} s, "
            "not in the ratio)"
        )
    print(
        f"{'n':>6} {'rangeprof (us)':>15} {'Nsight (us)':>12} {'ncu (us)':>10} {'rp-ncu %':>9} "
        f"{'ns-ncu %':>9} {'rp-ns %':>8}"
    )
    for r in lesson["per_config"]:
        us = lambda k: f"{r[k] / 1e3:.2f}" if r.get(k) else "-"
        pct = lambda k: f"{r[k]:+.2f}" if k in r else "-"
        print(
            f"{r['n']:>6} {us('rangeprof'):>15} {us('nsight'):>12} {us('ncu'):>10} "
            f"{pct('rangeprof_vs_ncu_pct'):>9} {pct('nsight_vs_ncu_pct'):>9} "
            f"{pct('rangeprof_vs_nsight_pct'):>8}"
        )


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", nargs="?", help="results as JSON (driver)")
    p.add_argument("--reps", type=int, default=3, help="timed processes per way (median)")
    p.add_argument("--runs", type=int, default=20, help="runs per config")
    p.add_argument(
        "--lessons", default="3,10", help="config counts: 3 (the lesson), 10 (the sweep)"
    )
    p.add_argument(
        "--no-ncu", action="store_true", help="no direct ncu run for the per-config values"
    )
    p.add_argument(
        "--ncu", help="ncu's path (default: PATH, /usr/local/cuda/bin, /opt/nvidia/nsight-compute)"
    )
    p.add_argument("--tolerance", type=float, default=2.0, help="percent, per config")
    p.add_argument("--timeout", type=int, default=900, help="seconds per process")
    p.add_argument(
        "--workdir", help="logs, CSVs and the workers' results (default: a new temporary folder)"
    )
    p.add_argument(
        "--worker", choices=["plain", "nsight", "rangeprof", "ncu"], help=argparse.SUPPRESS
    )
    p.add_argument(
        "--configs", type=int, choices=sorted(LESSONS), default=3, help=argparse.SUPPRESS
    )
    p.add_argument("--result", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        return worker(args)
    if not args.out:
        p.error("give OUT.json")
    return driver(args)


if __name__ == "__main__":
    sys.exit(main())
