"""bench/per_run.py - issue 35 item 7: what one measured run costs against its physical
floor, on the GPU machine, for two kernels:

  rmw64  examples/kernels.cu's inplace_add_one: 16 Mi floats (64 MiB) read, incremented
         and written back in place; selected with -k inplace_add_one in `kernels 4`
  sgemm  a cuBLAS fp32 matmul through PyTorch (n = 4096 by default, TF32 off), the
         product alone in NVTX range "mm"; this file is the program (--worker sgemm)

Each is run under the launcher (build/scripts/rangeprof) with --runs R for every R of
--runs-list (2, 5, 20 by default: from 2 the application's own launch is run 0 and the
others replay, the same path for each R), --reps times, the Rs interleaved rep by rep. A
measurement's cost is its summary's cost_ms.total (rangeprof's wall time for that launch:
its GPU work, waits and host work); each kernel's first summary (its first launch,
verified) is left out, the later ones are the steady state, and each must be saved by
reach (the floor describes that save). Where a workload launched more than one kernel,
the longest is costed and the others named. The cost of one run is the slope of the
median cost against R (least squares), and of each cost_ms part alike, so that the parts
that grow with R show where a run's time goes. A process that fails is said and skipped;
the JSON is written after each rep.

The floor of one run is what no replaying tool avoids, computed from this run's figures:
the kernel's own time (the median gpu__time_duration.sum of its runs, from the same
records), the restore of the bytes the kernel writes (the workload's output: 64 MiB, or
the product's 4 n^2 bytes) at the device-to-device copy rate measured here, and one cache
flush (one L2's size read from DRAM, measured here): bench/floor.py's floor_rates.
Target: a run costs at most 1.2x its floor.

usage, on the GPU machine, through bench/per_run.sh (PyTorch's Python, build/ carried):
    bench/per_run.sh OUT.json [--reps 3] [--runs-list 2,5,20] [--workloads rmw64,sgemm] [--n 4096]
Never changes the card's settings (rangeprof's default clock control, none)."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

# floor.py's TIME, which is not imported at module level: floor.py's module code reads the
# process's --worker argument, which this file's worker also takes.
TIME = "gpu__time_duration.sum"
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def fit_slope(points):
    """(slope, intercept) of the least-squares line through (x, y) points; at least two
    distinct x."""
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    if sxx == 0:
        raise ValueError(f"a slope needs two distinct x values, got {sorted({x for x, _ in points})}")
    slope = sum((x - mx) * (y - my) for x, y in points) / sxx
    return slope, my - slope * mx


def median(xs):
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return float("nan")
    return (xs[(len(xs) - 1) // 2] + xs[len(xs) // 2]) / 2


def steady_summaries(path, runs):
    """The summary records of a file after each kernel's first (its verified launch),
    each with the runs asked for, each saved by reach; ValueError naming what is wrong
    otherwise (a checkpoint save, or a replay that made the kernel restore everything,
    is another cost than the one the floor describes)."""
    summaries = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            if r.get("type") == "summary":
                summaries.append(r)
    seen, steady = set(), []
    for r in summaries:
        key = r.get("mangled") or r.get("kernel")
        if key not in seen:
            seen.add(key)
            continue
        if r.get("runs") != runs:
            raise ValueError(f"{path}: launch {r.get('launch')} kept {r.get('runs')} runs of "
                             f"{runs} asked")
        save = r.get("save") or {}
        if save.get("strategy") != "reach":
            raise ValueError(f"{path}: launch {r.get('launch')} saved by "
                             f"{save.get('strategy')!r} ({save.get('why')}), not by reach")
        steady.append(r)
    if not steady:
        raise ValueError(f"{path}: no summary after each kernel's first ({len(summaries)} "
                         "summaries)")
    return steady


def main_kernel(steady):
    """The summaries of the kernel that took the longest (median time) among those of a
    workload, and the names of the others: a workload meant as one kernel that launched
    more (a split-K reduction beside a GEMM) is said, and its main kernel alone is costed."""
    by = {}
    for r in steady:
        by.setdefault(r.get("mangled") or r.get("kernel"), []).append(r)
    longest = max(by, key=lambda k: median([r["metrics"][TIME]["median"] for r in by[k]]))
    return by[longest], sorted(k for k in by if k != longest)


def per_run(costs_by_runs):
    """From {R: [cost_ms dicts of the steady summaries, over reps]}: the median total and
    parts per R, and the slope of each (ms per run)."""
    parts = sorted({k for cs in costs_by_runs.values() for c in cs for k in c})
    med = {R: {k: median([c.get(k, 0.0) for c in cs]) for k in parts}
           for R, cs in costs_by_runs.items()}
    slopes = {k: fit_slope([(R, med[R][k]) for R in med])[0] for k in parts}
    return med, slopes


def floor_per_run_s(kernel_ns, written_bytes, rates):
    """The physical floor of one run, in seconds, and its three parts."""
    parts = {"kernel_s": kernel_ns * 1e-9,
             "restore_s": written_bytes / rates["copy_bytes_per_s"],
             "flush_s": rates["flush_s"]}
    return sum(parts.values()), parts


def workloads(args):
    kernels = os.path.join(args.work, "kernels")
    return {
        "rmw64": {"select": ["-k", "inplace_add_one"], "cmd": [kernels, "4"],
                  "writes": 64 << 20, "build": kernels},
        "sgemm": {"select": ["--nvtx-include", "mm/"],
                  "cmd": [sys.executable, os.path.abspath(__file__), "--worker", "sgemm",
                          "--n", str(args.n)],
                  "writes": 4 * args.n * args.n, "build": None},
    }


def sgemm_worker(n, iters=4):
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    a = torch.randn(n, n, device="cuda")
    b = torch.randn(n, n, device="cuda")
    for _ in range(iters):
        torch.cuda.nvtx.range_push("mm")
        c = a @ b
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    print(f"sgemm n={n} checksum {float(c.double().sum()):.6e}")


def run_one(args, w, runs, out):
    """The steady summaries of one process, its stderr kept beside its records."""
    cmd = [args.rangeprof, "-q", "-o", out, "--runs", str(runs), *w["select"], "--", *w["cmd"]]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    with open(out + ".stderr", "w") as f:
        f.write(p.stderr)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode}: {p.stderr[-2000:]}")
    return steady_summaries(out, runs)


def nvcc():
    found = shutil.which("nvcc")
    return found or "/usr/local/cuda/bin/nvcc"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--runs-list", default="2,5,20")
    ap.add_argument("--workloads", default="rmw64,sgemm")
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--rangeprof", default=os.path.join(ROOT, "build", "scripts", "rangeprof"))
    ap.add_argument("--work", default=None)
    ap.add_argument("--timeout", type=int, default=180)
    ap.add_argument("--target", type=float, default=1.2)
    args = ap.parse_args(argv)
    try:
        runs_list = [int(x) for x in args.runs_list.split(",")]
    except ValueError:
        runs_list = []
    if len(set(runs_list)) < 2 or min(runs_list) < 2 or max(runs_list) > 10000:
        ap.error(f"--runs-list {args.runs_list[:80]!r}: two or more distinct whole numbers "
                 "from 2 to 10000, comma-separated")
    for name, value, low in (("--reps", args.reps, 1), ("--n", args.n, 16),
                             ("--timeout", args.timeout, 1)):
        if value < low:
            ap.error(f"{name} {value}: expected a whole number from {low}")
    if not args.target > 0:
        ap.error(f"--target {args.target}: expected a positive number")
    args.work = args.work or tempfile.mkdtemp(prefix="per-run-")
    all_w = workloads(args)
    names = args.workloads.split(",")
    unknown = [x for x in names if x not in all_w]
    if unknown:
        ap.error(f"--workloads: {unknown} unknown; accepted: {', '.join(all_w)}")
    if "rmw64" in names:
        subprocess.run([nvcc(), "-O2", "-arch=sm_90", "-std=c++17",
                        os.path.join(ROOT, "examples", "kernels.cu"), "-o",
                        all_w["rmw64"]["build"]], check=True)
    sys.path.insert(0, HERE)
    from floor import floor_rates

    rates = floor_rates()
    import torch

    torch.cuda.empty_cache()  # this process holds no more than its context meanwhile
    print(f"rates: device-to-device copy {rates['copy_bytes_per_s'] / 1e12:.2f} TB/s, "
          f"one L2 ({rates['l2_bytes'] >> 20} MiB) read from DRAM {rates['flush_s'] * 1e6:.1f} us")
    result = {"rates": rates, "runs_list": runs_list, "reps": args.reps, "workloads": {}}
    costs = {x: {R: [] for R in runs_list} for x in names}
    kernel_ns = {x: [] for x in names}
    others = {x: set() for x in names}
    failures = []
    for rep in range(args.reps):
        for x in names:
            for R in runs_list:
                out = os.path.join(args.work, f"{x}-{R}-{rep}.jsonl")
                try:
                    main, other = main_kernel(run_one(args, all_w[x], R, out))
                except (RuntimeError, ValueError, subprocess.TimeoutExpired, OSError) as e:
                    failures.append(f"rep {rep} {x} runs {R}: {type(e).__name__}: {e}")
                    print(f"  {failures[-1]}", flush=True)
                    continue
                others[x].update(other)
                for s in main:
                    costs[x][R].append(s["cost_ms"])
                    kernel_ns[x].append(s["metrics"][TIME]["median"])
                print(f"  rep {rep} {x} runs {R}: cost_ms.total "
                      f"{median([c['total'] for c in costs[x][R]]):.2f} so far", flush=True)
        result["failures"] = failures
        with open(args.out, "w") as f:  # what is done so far, each rep
            json.dump({**result, "costs": costs, "kernel_ns": kernel_ns}, f, indent=1)
    failed = bool(failures)
    for x in names:
        if others[x]:
            print(f"{x}: other kernels in the selection, not costed: {sorted(others[x])}")
        usable = {R: cs for R, cs in costs[x].items() if cs}
        if len(usable) < 2:
            print(f"{x}: fewer than two --runs values measured; no slope")
            failed = True
            continue
        med, slopes = per_run(usable)
        floor_s, parts = floor_per_run_s(median(kernel_ns[x]), all_w[x]["writes"], rates)
        run_s = slopes["total"] / 1e3
        ratio = run_s / floor_s
        failed |= ratio > args.target
        print(f"{x}: a run costs {run_s * 1e6:.1f} us; floor {floor_s * 1e6:.1f} us (kernel "
              f"{parts['kernel_s'] * 1e6:.1f}, restore of {all_w[x]['writes'] >> 20} MiB "
              f"{parts['restore_s'] * 1e6:.1f}, flush {parts['flush_s'] * 1e6:.1f}): "
              f"{ratio:.2f}x, target <= {args.target}x")
        print("   median cost_ms.total by runs: " +
              ", ".join(f"{R}: {med[R]['total']:.2f}" for R in sorted(med)))
        grow = {k: v * 1e3 for k, v in slopes.items() if k != "total" and abs(v) * 1e3 >= 0.5}
        print("   us per run by part: " + ", ".join(f"{k} {v:.1f}" for k, v in
                                                  sorted(grow.items(), key=lambda kv: -kv[1])))
        result["workloads"][x] = {"per_run_s": run_s, "floor_s": floor_s, "floor_parts": parts,
                                  "ratio": ratio, "median_cost_ms": med,
                                  "slopes_ms_per_run": slopes,
                                  "kernel_ns_median": median(kernel_ns[x]),
                                  "other_kernels": sorted(others[x])}
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    if "--worker" in sys.argv:
        ap = argparse.ArgumentParser()
        ap.add_argument("--worker", choices=["sgemm"])
        ap.add_argument("--n", type=int, default=4096)
        a = ap.parse_args()
        sgemm_worker(a.n)
        sys.exit(0)
    sys.exit(main())
