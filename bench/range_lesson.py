"""bench/range_lesson.py - the fusion lesson measured both ways (README, "Kernel or range?"):
the same NVTX ranges measured by kernel replay (each kernel alone, after a cache flush) and
by range replay (the range as one workload, one flush before it, the L2 warm between its
kernels as it really is).

    PYTHONPATH=python python3 bench/range_lesson.py LABEL=KERNEL.jsonl,RANGE.jsonl [...]

Each LABEL names one program run (e.g. '64MiB'); KERNEL.jsonl was recorded with
--replay-mode kernel and RANGE.jsonl with --replay-mode range, with the same
--nvtx-include and metrics (gpu__time_duration.sum, dram__bytes_read.sum,
dram__bytes_write.sum). Kernel replay's figure for a range is the sum over its kernels of
each kernel's median (over its runs and the range's occurrences), the kernels told apart
by name: a range that launches one kernel twice would count it once (the fusion ranges
do not); range replay's is the median over the range's runs. Prints one Markdown table
row per label and range. The files are read by rangeprof's own reader (bad lines said
and skipped) and units converted by rangeprof.units. Exit 1, with one line naming the
label, when a range is in one file only or a file gives no runs; 2 on a usage error."""
import statistics
import sys
from collections import defaultdict

from rangeprof import records
from rangeprof.output import guarded
from rangeprof.units import UnitError, conversion_factor, parse_unit

PROG = "range_lesson.py"
TIME = "gpu__time_duration.sum"
READ = "dram__bytes_read.sum"
WRITE = "dram__bytes_write.sum"
BASE = {TIME: "nsecond", READ: "byte", WRITE: "byte"}


def value(run, metric):
    """The run's value of metric in BASE's unit, None where absent or not convertible."""
    v = run.record.get("metrics", {}).get(metric)
    unit = (run.record.get("units") or {}).get(metric, BASE[metric])
    if v is None:
        return None
    try:
        return v * conversion_factor(parse_unit(unit), parse_unit(BASE[metric]))
    except UnitError:
        return None


def kernel_mode(runs):
    """{range: {metric: sum over its kernels of each kernel's median}, and 'kernels'}."""
    per = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for r in runs:
        if r.record.get("workload", "kernel") != "kernel":
            continue
        rng = r.annotation.split("/")[-1]
        for m in BASE:
            v = value(r, m)
            if v is not None:
                per[rng][r.kernel][m].append(v)
    out = {}
    for rng, kernels in per.items():
        out[rng] = {m: sum(statistics.median(k[m]) for k in kernels.values() if k[m])
                    for m in BASE}
        out[rng]["kernels"] = len(kernels)
    return out


def range_mode(runs):
    per = defaultdict(lambda: defaultdict(list))
    for r in runs:
        if r.record.get("workload") != "range" or r.range is None:
            continue
        for m in BASE:
            v = value(r, m)
            if v is not None:
                per[str(r.range.get("name", ""))][m].append(v)
    return {n: {m: statistics.median(v) for m, v in ms.items()} for n, ms in per.items()}


def main(argv):
    pairs = []
    for arg in argv:
        label, _, files = arg.partition("=")
        kpath, _, rpath = files.partition(",")
        if not label or not kpath or not rpath:
            print(f"{PROG}: '{arg[:200]}': expected LABEL=KERNEL.jsonl,RANGE.jsonl",
                  file=sys.stderr)
            return 2
        pairs.append((label, kpath, rpath))
    if not pairs:
        print(f"{PROG}: expected LABEL=KERNEL.jsonl,RANGE.jsonl ...", file=sys.stderr)
        return 2
    print("| size | range | kernels | time, kernel replay (sum) | time, range replay "
          "| DRAM MB, kernel replay (sum) | DRAM MB, range replay |")
    print("|---|---|---|---|---|---|---|")
    bad = 0
    for label, kpath, rpath in pairs:
        try:
            k, r = kernel_mode(records.read(kpath).runs), range_mode(records.read(rpath).runs)
        except OSError as e:
            print(f"{PROG}: {label}: {e}", file=sys.stderr)
            bad += 1
            continue
        if not k or not r:
            print(f"{PROG}: {label}: no {'kernel' if not k else 'range'} replay runs in "
                  f"{kpath if not k else rpath}", file=sys.stderr)
            bad += 1
            continue
        for name in sorted(set(k) | set(r)):
            if name not in k or name not in r:
                print(f"{PROG}: {label}: range '{name}' only in "
                      f"{'kernel' if name in k else 'range'} replay's file", file=sys.stderr)
                bad += 1
                continue
            kd = (k[name][READ] + k[name][WRITE]) / 1e6
            rd = (r[name].get(READ, 0) + r[name].get(WRITE, 0)) / 1e6
            print(f"| {label} | {name} | {k[name]['kernels']} | {k[name][TIME] / 1e3:.1f} us "
                  f"| {r[name].get(TIME, float('nan')) / 1e3:.1f} us | {kd:.1f} | {rd:.1f} |")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(guarded(PROG, main, sys.argv[1:]))
