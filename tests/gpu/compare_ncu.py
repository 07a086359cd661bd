"""tests/gpu/compare_ncu.py - median per kernel and metric from rangeprof's JSON Lines and
from ncu's raw CSV of the same program, side by side, with the difference in percent.

usage: compare_ncu.py RANGEPROF.jsonl NCU.csv [--min-us 20] [--tol time=2,dram=3]
Exits 1 when no kernel and metric appear in both files, or when a kernel of at least --min-us differs by more than the tolerance (2 % for
gpu__time_duration, 3 % for dram__bytes), except where the value is under 1 % of the
kernel's DRAM traffic ('small') or ncu's own samples spread by more than 10 %."""
import os
import statistics
import sys
from collections import defaultdict

# The post-processing package reads both files (standard library only): one reader of
# ncu's CSV and of the JSON Lines for the product and its tests.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from rangeprof import ncu as rangeprof_ncu  # noqa: E402


def short(name):
    """The function's own name (the grid size is added to the key by the loaders, so
    that different launches of one template do not mix): no return type, namespaces, template arguments or
    parameters, so that ncu's and the demangler's spellings meet."""
    name = name.replace("(anonymous namespace)::", "").replace("<unnamed>::", "")
    name = name.replace("void ", "").strip()
    depth, cut = 0, len(name)
    for i, ch in enumerate(name):
        if ch in "<(" and depth == 0:
            cut = i
            break
    return name[:cut].split("::")[-1].strip()


def _key(kernel, grid):
    """The suite's spelling of a kernel: its own name and its block count, so that
    different launches of one template do not mix."""
    blocks = 1
    for x in grid.split(","):
        blocks *= int(x) if x else 1
    return f"{short(kernel)}<{blocks}>"


def load_rangeprof(path):
    """{(kernel key, metric): [values]} of the recording's runs, read by the post-processing
    package's own reader (python/rangeprof/ncu.py)."""
    values = defaultdict(list)
    for (_path, _kernel, grid), entry in rangeprof_ncu.read_rangeprof([path])[1].items():
        for metric, (vals, _unit) in entry["metrics"].items():
            values[(_key(entry["kernel"], grid), metric)].extend(vals)
    return values


SCALE = {"nsecond": 1, "usecond": 1e3, "msecond": 1e6, "second": 1e9, "byte": 1,
         "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9}


def load_ncu(path):
    """{(kernel key, metric): [values in ns or bytes]} from ncu's raw CSV, read by the
    package's reader."""
    values = defaultdict(list)
    for (_path, kernel, grid), metrics in rangeprof_ncu.read_ncu_csv(path).items():
        for metric, (vals, unit) in metrics.items():
            values[(_key(kernel, grid), metric)].extend(v * SCALE.get(unit, 1) for v in vals)
    return values


def main():
    args = sys.argv[1:]
    min_us = 20.0
    if "--min-us" in args:
        min_us = float(args[args.index("--min-us") + 1])
    tolerance = {"time": 2.0, "dram": 3.0}
    if "--tol" in args:
        for item in args[args.index("--tol") + 1].split(","):
            name, value = item.split("=")
            tolerance[name] = float(value)
    rp, ncu = load_rangeprof(args[0]), load_ncu(args[1])
    bad = 0
    print(f"{'kernel':28} {'metric':26} {'ncu median':>14} {'rangeprof median':>17} {'diff %':>8} n_ncu n_rp")
    for key in sorted(set(rp) & set(ncu)):
        a, b = statistics.median(ncu[key]), statistics.median(rp[key])
        diff = 100.0 * (b - a) / a if a else (0.0 if b == 0 else float("inf"))
        kernel, metric = key
        t = statistics.median(rp.get((kernel, "gpu__time_duration.sum"), [0]))
        tol = tolerance["time"] if metric.startswith("gpu__time") else tolerance["dram"]
        judged = t >= min_us * 1000 and metric.startswith(("gpu__time", "dram__bytes"))
        flag = "ok" if abs(diff) <= tol else "FAIL"
        if not judged:
            flag = ""
        elif metric.startswith("dram__bytes"):
            # A DRAM count below 1 % of the kernel's DRAM traffic (an output that stays
            # in the L2) says nothing in percent: shown, marked 'small', not judged.
            traffic = sum(statistics.median(ncu.get((kernel, m), [0]))
                          for m in ("dram__bytes_read.sum", "dram__bytes_write.sum"))
            if a < 0.01 * traffic:
                flag = "small"
        # Nor can agreement be judged against an ncu that does not agree with itself
        # (CUTLASS sgemm writes: 61 KB to 2.35 MB between runs, bench/NOTES.md).
        spread = (max(ncu[key]) - min(ncu[key])) / a if a else 0.0
        if flag and flag != "small" and len(ncu[key]) > 1 and spread > 0.10:
            flag = f"ncu-spread-{100 * spread:.0f}%"
        bad += flag == "FAIL"
        print(f"{kernel[:28]:28} {metric[:26]:26} {a:14.6g} {b:17.6g} {diff:8.2f} {len(ncu[key]):5} {len(rp[key]):4} {flag}")
    measured = {m for _, m in rp}
    missing = {k for k in set(ncu) - set(rp) if k[1] in measured}
    if missing:
        print("only in ncu:", sorted(missing))
    # Nothing compared is no agreement: a renamed kernel or an empty file must fail.
    compared = set(rp) & set(ncu)
    if not compared:
        print(f"FAIL: no kernel and metric in both files ({len(rp)} in rangeprof's, "
              f"{len(ncu)} in ncu's)")
        sys.exit(1)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
