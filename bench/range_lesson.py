"""bench/range_lesson.py - the fusion lesson measured both ways (README, "Kernel or range?"):
the same NVTX ranges measured by kernel replay (each kernel alone, after a cache flush) and
by range replay (the range as one workload, one flush before it, the L2 warm between its
kernels as it really is).

    python3 bench/range_lesson.py LABEL=KERNEL.jsonl,RANGE.jsonl [LABEL=...] ...

Each LABEL names one program run (e.g. '64MiB'); KERNEL.jsonl was recorded with
--replay-mode kernel and RANGE.jsonl with --replay-mode range, with the same
--nvtx-include and metrics (gpu__time_duration.sum, dram__bytes_read.sum,
dram__bytes_write.sum). Kernel replay's figure for a range is the sum over its kernels of
each kernel's median (over its runs and the range's occurrences), the kernels told apart
by name: a range that launches one kernel twice would count it once (the fusion ranges
do not); range replay's is the median over the range's runs. Prints one Markdown table row per label and range.
Standard library only; exits 1 when a file holds no runs for a range the other has."""
import json
import statistics
import sys
from collections import defaultdict

TIME = "gpu__time_duration.sum"
READ = "dram__bytes_read.sum"
WRITE = "dram__bytes_write.sum"


def runs(path):
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                r = json.loads(line)
                if r.get("type") == "run":
                    yield r


def value(r, metric):
    v = r.get("metrics", {}).get(metric)
    unit = (r.get("units") or {}).get(metric, "")
    if v is None:
        return None
    return v * {"us": 1e3, "usecond": 1e3, "ms": 1e6, "msecond": 1e6}.get(unit, 1)


def kernel_mode(path):
    """{range: {metric: sum over its kernels of each kernel's median}, and 'kernels'}."""
    per = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for r in runs(path):
        if r.get("workload", "kernel") != "kernel":
            continue
        rng = (r.get("nvtx_path") or "").split("/")[-1]
        for m in (TIME, READ, WRITE):
            v = value(r, m)
            if v is not None:
                per[rng][r.get("kernel", "")][m].append(v)
    out = {}
    for rng, kernels in per.items():
        out[rng] = {m: sum(statistics.median(k[m]) for k in kernels.values() if k[m])
                    for m in (TIME, READ, WRITE)}
        out[rng]["kernels"] = len(kernels)
    return out


def range_mode(path):
    per = defaultdict(lambda: defaultdict(list))
    for r in runs(path):
        if r.get("workload") != "range":
            continue
        name = (r.get("range") or {}).get("name", "")
        for m in (TIME, READ, WRITE):
            v = value(r, m)
            if v is not None:
                per[name][m].append(v)
    return {n: {m: statistics.median(v) for m, v in ms.items()} for n, ms in per.items()}


def main(argv):
    if not argv:
        sys.exit(__doc__)
    print("| size | range | kernels | time, kernel replay (sum) | time, range replay "
          "| DRAM MB, kernel replay (sum) | DRAM MB, range replay |")
    print("|---|---|---|---|---|---|---|")
    bad = 0
    for arg in argv:
        label, _, files = arg.partition("=")
        kpath, _, rpath = files.partition(",")
        k, r = kernel_mode(kpath), range_mode(rpath)
        for name in sorted(set(k) | set(r)):
            if name not in k or name not in r:
                print(f"{label}: range '{name}' only in {'kernel' if name in k else 'range'} "
                      "replay's file", file=sys.stderr)
                bad += 1
                continue
            kd = (k[name][READ] + k[name][WRITE]) / 1e6
            rd = (r[name].get(READ, 0) + r[name].get(WRITE, 0)) / 1e6
            print(f"| {label} | {name} | {k[name]['kernels']} | {k[name][TIME] / 1e3:.1f} us "
                  f"| {r[name][TIME] / 1e3:.1f} us | {kd:.1f} | {rd:.1f} |")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
