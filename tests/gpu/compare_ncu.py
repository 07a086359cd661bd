"""tests/gpu/compare_ncu.py - median per kernel and metric from rangeprof's JSON Lines and
from ncu's raw CSV of the same program, side by side, with the difference in percent.

usage: compare_ncu.py RANGEPROF.jsonl NCU.csv [--min-us 20] [--tol time=2,dram=3] [--short]
Exits 1 when no kernel and metric appear in both files, or when a kernel of at least --min-us differs by more than the tolerance (2 % for
gpu__time_duration, 3 % for dram__bytes), except where the value is under 1 % of the
kernel's DRAM traffic ('small') or ncu's own samples spread by more than 10 %.
With --short, also when the time of a kernel whose ncu median is 2 us to --min-us differs
by more than 3 % or 0.3 us, whichever is larger (--tol short=3,short_us=0.3; issue 11),
except where ncu's own samples spread by more than 10 % and 0.6 us; their DRAM counts are
shown, not judged.

Where both files hold sm__cycles_elapsed.max (or .avg) and sm__cycles_elapsed.avg.per_second,
a second table gives per kernel each side's SM clock and the differences in time, clock and
cycles: a time difference with equal cycles is a clock difference. Shown, never judged."""
import os
import statistics
import sys
from collections import defaultdict

# The post-processing package reads both files (standard library only): one reader of
# ncu's CSV and of the JSON Lines for the product and its tests.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from rangeprof import compare_ncu as rangeprof_ncu  # noqa: E402
from rangeprof import units as rangeprof_units  # noqa: E402


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


def label(kernel, width=28):
    """The key cut to width, keeping its block count: long library names (cuDNN's
    'sm80_xmma_fprop_implicit_gemm_...') would otherwise all read alike."""
    if len(kernel) <= width:
        return kernel
    tail = kernel[kernel.rfind("<"):] if kernel.endswith(">") else ""
    return kernel[:width - len(tail) - 1] + "~" + tail


def load_rangeprof(path):
    """{(kernel key, metric): [values]} of the recording's runs, read by the post-processing
    package's own reader (python/rangeprof/compare_ncu.py)."""
    values = defaultdict(list)
    for (_path, _kernel, grid), entry in rangeprof_ncu.read_rangeprof([path])[1].items():
        for metric, (vals, unit) in entry["metrics"].items():
            f = _cycles_scale(unit) if metric.startswith("sm__cycles_elapsed") else 1
            values[(_key(entry["kernel"], grid), metric)].extend(v * f for v in vals)
    return values


SCALE = {"nsecond": 1, "usecond": 1e3, "msecond": 1e6, "second": 1e9, "byte": 1,
         "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9}
CYCLES = ("sm__cycles_elapsed.max", "sm__cycles_elapsed.avg")
CLOCK = "sm__cycles_elapsed.avg.per_second"


def _cycles_scale(unit):
    """Factor to cycles or to Hz of a cycle count's or a clock's unit, in either file's
    spelling ('cycle', 'Kcycle'; '1/second', 'cycle/nsecond', 'Ghz'): the unit's scale,
    its 'cycle' dimension being only a name."""
    try:
        return rangeprof_units.parse_unit(unit).scale
    except (ValueError, ZeroDivisionError):
        return 1.0


def load_ncu(path):
    """{(kernel key, metric): [values in ns or bytes]} from ncu's raw CSV, read by the
    package's reader."""
    values = defaultdict(list)
    for (_path, kernel, grid), metrics in rangeprof_ncu.read_ncu_csv(path).items():
        for metric, (vals, unit) in metrics.items():
            f = (_cycles_scale(unit) if metric.startswith("sm__cycles_elapsed")
                 else SCALE.get(unit, 1))
            values[(_key(kernel, grid), metric)].extend(v * f for v in vals)
    return values


def clock_table(rp, ncu):
    """Prints, per kernel in both files with a cycle count and the SM clock on both sides,
    the time, clock and cycle differences (rangeprof against ncu, medians). Returns the
    number of rows printed."""
    rows = []
    for kernel in sorted({k for k, _ in set(rp) & set(ncu)}):
        cyc = next((m for m in CYCLES if (kernel, m) in rp and (kernel, m) in ncu), None)
        keys = [(kernel, m) for m in ("gpu__time_duration.sum", CLOCK, cyc)]
        if cyc is None or not all(k in rp and k in ncu for k in keys):
            continue
        (ta, tb), (fa, fb), (ca, cb) = ((statistics.median(ncu[k]), statistics.median(rp[k]))
                                        for k in keys)
        pct = lambda a, b: 100.0 * (b - a) / a if a else float("nan")  # noqa: E731
        rows.append(f"{label(kernel):28} {ta / 1e3:9.2f} {tb / 1e3:9.2f} {pct(ta, tb):7.2f} "
                    f"{fa / 1e6:8.0f} {fb / 1e6:8.0f} {pct(fa, fb):7.2f} {pct(ca, cb):8.2f}  "
                    f"{cyc.rsplit('.', 1)[1]}")
    if rows:
        print("\nSM clock and cycles (medians; a time difference with equal cycles is a clock "
              "difference):")
        print(f"{'kernel':28} {'ncu us':>9} {'rp us':>9} {'time %':>7} {'ncu MHz':>8} "
              f"{'rp MHz':>8} {'clock %':>7} {'cycles %':>8}  cycles")
        for r in rows:
            print(r)
    return len(rows)


def main():
    args = sys.argv[1:]
    min_us = 20.0
    if "--min-us" in args:
        min_us = float(args[args.index("--min-us") + 1])
    short_rule = "--short" in args
    tolerance = {"time": 2.0, "dram": 3.0, "short": 3.0, "short_us": 0.3}
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
        t_ncu = statistics.median(ncu.get((kernel, "gpu__time_duration.sum"), [0]))
        tol = tolerance["time"] if metric.startswith("gpu__time") else tolerance["dram"]
        # Which rule judges a kernel goes by ncu's time, the reference: by rangeprof's own,
        # a kernel it measured far too short would fall out of judgment.
        judged = t_ncu >= min_us * 1000 and metric.startswith(("gpu__time", "dram__bytes"))
        # Short kernels (issue 11): 2 us to --min-us by ncu's median, time only, within a
        # percentage or an absolute bound, whichever is larger: 0.3 us is about the
        # launch-to-launch jitter of a few-microsecond kernel. Their DRAM counts are often
        # a few lines of L2 state and are shown only.
        short_kernel = (short_rule and 2000 <= t_ncu < min_us * 1000 and
                        metric.startswith("gpu__time"))
        flag = "ok" if abs(diff) <= tol else "FAIL"
        if short_kernel:
            bound = max(tolerance["short"] / 100.0 * a, tolerance["short_us"] * 1000)
            flag = "ok short" if abs(b - a) <= bound else "FAIL short"
        elif not judged:
            flag = ""
        elif metric.startswith("dram__bytes"):
            # A DRAM count below 1 % of the kernel's DRAM traffic (an output that stays
            # in the L2) says nothing in percent: shown, marked 'small', not judged.
            traffic = sum(statistics.median(ncu.get((kernel, m), [0]))
                          for m in ("dram__bytes_read.sum", "dram__bytes_write.sum"))
            if a < 0.01 * traffic:
                flag = "small"
        # Nor can agreement be judged against an ncu that does not agree with itself
        # (CUTLASS sgemm writes: 61 KB to 2.35 MB between runs: doc/measurements.md,
        # "Agreement with ncu"). A short
        # kernel's samples may spread by the absolute bound on both sides (0.6 us) first.
        spread = (max(ncu[key]) - min(ncu[key])) / a if a else 0.0
        wide = spread > 0.10 and (not short_kernel or
                                  max(ncu[key]) - min(ncu[key]) > 2 * tolerance["short_us"] * 1000)
        if flag and flag != "small" and len(ncu[key]) > 1 and wide:
            flag = f"ncu-spread-{100 * spread:.0f}%"
        bad += flag.startswith("FAIL")
        print(f"{label(kernel):28} {metric[:26]:26} {a:14.6g} {b:17.6g} {diff:8.2f} {len(ncu[key]):5} {len(rp[key]):4} {flag}")
    measured = {m for _, m in rp}
    missing = {k for k in set(ncu) - set(rp) if k[1] in measured}
    if missing:
        # Both tools selected the same launches: a kernel ncu measured that rangeprof did
        # not is a measurement lost.
        print("FAIL only in ncu:", sorted(missing))
        bad += 1
    clock_table(rp, ncu)
    # Nothing compared is no agreement: a renamed kernel or an empty file must fail.
    compared = set(rp) & set(ncu)
    if not compared:
        print(f"FAIL: no kernel and metric in both files ({len(rp)} in rangeprof's, "
              f"{len(ncu)} in ncu's)")
        sys.exit(1)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
