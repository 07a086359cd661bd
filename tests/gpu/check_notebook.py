"""tests/gpu/check_notebook.py - issue 18 on the GPU machine: executes
examples/tutorial/tutorial.ipynb headless (nbclient, the kernel named by --kernel) and checks
what it computed. Called by tests/gpu/notebook.sh, with a Python that has nbclient, nbformat
and pandas.

    check_notebook.py run NOTEBOOK EXECUTED.ipynb VALUES.json [--kernel NAME] [--cwd DIR]
    check_notebook.py verify VALUES.json

run    executes every cell (going on after a failed one, so that one run shows every
       failure), writes the executed notebook (the committed cells with their outputs, the
       original kernelspec) and VALUES.json: the DataFrames and values the cells left in the
       kernel, read by one extra cell that is not written back. Exit 0 when every code cell
       ran without an error, 1 otherwise (each failed cell named).
verify checks VALUES.json: the DataFrames have Nsight Python's columns and plausible H200
       values (fp32 matmul at n = 4096 between 1 and 10 ms, 10-100 TFLOP/s in fp32, ...),
       the lessons show what they teach (cache, fusion, bound, clocks), rangeprof agrees
       with ncu. One line per check; exit 1 when any fails.

The names the notebook's cells must define are listed in VARIABLES; a notebook edit that
renames one fails here, by name."""

import argparse
import glob
import json
import math
import os
import re
import shutil
import sys

# What the notebook leaves in its kernel for the checks (see examples/tutorial/tutorial.ipynb).
VARIABLES = [
    "df_matmul",
    "df_noise",
    "df_cache",
    "df_sweep",
    "df_bound",
    "bound_verdicts",
    "df_fusion",
    "df_fusion_range",
    "fused_with",
    "FUSION_N",
    "df_clocks",
    "clock_runs",
    "df_side",
    "ncu_rows",
    "ncu_csv",
    "ncu_status",
    "NCU",
]

# Nsight Python 1.1's columns of ProfileResults.to_dataframe(), besides the config parameters.
NSIGHT_COLUMNS = [
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
    "Unit",
    "CI95_Lower",
    "CI95_Upper",
    "RelativeStdDevPct",
    "StableMeasurement",
    "Normalized",
    "Geomean",
]

TIME = "gpu__time_duration.sum"

# Runs in the kernel after the notebook's own cells: the values above, as JSON.
EXTRACT = r"""
import json as _json
def _value(v):
    if hasattr(v, "to_json") and hasattr(v, "columns"):
        return {"columns": [str(c) for c in v.columns],
                "data": _json.loads(v.to_json(orient="values", default_handler=str))}
    try:
        _json.dumps(v)
        return v
    except TypeError:
        return str(v)
with open(%r, "w") as _f:
    _json.dump({_n: (_value(globals()[_n]) if _n in globals() else "<undefined>")
                for _n in %r}, _f, default=str)
"""


def run(args):
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(args.notebook, as_version=4)
    kernelspec = nb.metadata.get("kernelspec")
    n_cells = len(nb.cells)
    if os.path.exists(args.values):
        os.remove(args.values)
    nb.cells.append(nbformat.v4.new_code_cell(EXTRACT % (os.path.abspath(args.values), VARIABLES)))
    cwd = args.cwd or os.path.dirname(os.path.abspath(args.executed))
    # A fresh machine reads the kernel's packages from a cold disk: a long start-up timeout.
    client = NotebookClient(
        nb,
        timeout=args.timeout,
        startup_timeout=300,
        kernel_name=args.kernel,
        allow_errors=True,
        record_timing=False,
        resources={"metadata": {"path": cwd}},
    )
    stopped = None
    try:
        client.execute()
    except Exception as e:  # a cell over its timeout, a kernel that died
        stopped = f"execution stopped: {type(e).__name__}: {str(e)[:2000]}"
    extract = nb.cells.pop()
    assert len(nb.cells) == n_cells
    if kernelspec is not None:
        nb.metadata["kernelspec"] = kernelspec
    nbformat.validate(nb)
    nbformat.write(nb, args.executed)
    print(f"executed notebook: {args.executed}")

    problems = [stopped] if stopped else []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        first = cell.source.strip().splitlines()[0] if cell.source.strip() else ""
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        for o in errors:
            tb = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(o.get("traceback", [])[-6:]))  # no colours
            problems.append(f"cell {i} ('{first[:60]}'): {o.get('ename')}: {o.get('evalue')}\n{tb}")
        if not errors and cell.get("execution_count") is None:
            problems.append(f"cell {i} ('{first[:60]}') did not run")
    if any(o.get("output_type") == "error" for o in extract.get("outputs", [])):
        problems.append(
            "the values could not be read from the kernel: "
            + str([o.get("evalue") for o in extract.outputs])
        )
    if problems:
        print("\n\n".join(problems))
        return 1
    print(f"{sum(c.cell_type == 'code' for c in nb.cells)} code cells ran without error")
    return 0


# ---------------------------------------------------------------------------------------
# verify


class Checks:
    def __init__(self):
        self.failed = 0
        self.passed = 0

    def __call__(self, ok, what):
        if ok:
            self.passed += 1
            print(f"ok    {what}")
        else:
            self.failed += 1
            print(f"FAIL  {what}")
        return ok


def rows(values, name):
    """The DataFrame VALUES[name] as a list of dicts, or None when the notebook left none."""
    v = values.get(name)
    if not isinstance(v, dict) or "columns" not in v:
        return None
    return [dict(zip(v["columns"], r)) for r in v["data"]]


def num(x):
    try:
        f = float(x)
    except (TypeError, ValueError):
        return math.nan
    return f


def within(x, lo, hi):
    return not math.isnan(num(x)) and lo <= num(x) <= hi


def pick(table, **match):
    """The rows of table whose columns equal match (numbers compared as numbers)."""
    out = []
    for r in table:
        if all(
            (num(r.get(k)) == num(v)) if isinstance(v, (int, float)) else r.get(k) == v
            for k, v in match.items()
        ):
            out.append(r)
    return out


def one(table, **match):
    found = pick(table, **match)
    return found[0] if len(found) == 1 else None


def fmt(x):
    return f"{num(x):.4g}"


def check_frame(check, values, name, params):
    """Nsight Python's columns and the config parameters; returns the rows or None."""
    table = rows(values, name)
    if not table:
        check(False, f"{name}: a DataFrame with rows ({'missing' if table is None else 'empty'})")
        return None
    columns = values[name]["columns"]
    missing = [c for c in NSIGHT_COLUMNS + params if c not in columns]
    check(
        not missing,
        f"{name}: Nsight Python's columns and {params}"
        + (f"; missing {missing}" if missing else ""),
    )
    for r in table:
        if r.get("Metric") in (TIME,) or str(r.get("Metric", "")).startswith("dram__"):
            ok = (
                num(r["MinValue"]) <= num(r["AvgValue"]) <= num(r["MaxValue"])
                and num(r["CI95_Lower"]) <= num(r["AvgValue"]) <= num(r["CI95_Upper"])
                and num(r["StdDev"]) >= 0
                and num(r["NumRuns"]) >= 1
            )
            if not ok:
                check(
                    False, f"{name}: Min <= Avg <= Max and CI95_Lower <= Avg <= CI95_Upper in {r}"
                )
                break
    else:
        check(True, f"{name}: Min <= Avg <= Max, CI95_Lower <= Avg <= CI95_Upper, StdDev >= 0")
    return table


def verify_matmul(check, values):
    t = check_frame(check, values, "df_matmul", ["n"])
    if t is None:
        return
    for n in (1024, 2048, 4096):
        r = one(t, n=n, Metric=TIME)
        if not check(r is not None, f"df_matmul: one {TIME} row at n={n}"):
            continue
        check(num(r["NumRuns"]) == 20, f"df_matmul n={n}: NumRuns {r['NumRuns']} == 20")
        tf = 2 * n**3 / num(r["AvgValue"]) / 1e3
        check(10 <= tf <= 100, f"df_matmul n={n}: fp32 {tf:.1f} TFLOP/s in [10, 100]")
        check(
            isinstance(r.get("Kernel"), str) and r["Kernel"],
            f"df_matmul n={n}: kernel '{str(r.get('Kernel'))[:50]}'",
        )
        check(
            isinstance(r.get("Unit"), str) and r["Unit"], f"df_matmul n={n}: unit '{r.get('Unit')}'"
        )
    r = one(t, n=4096, Metric=TIME)
    if r is not None:
        check(
            within(r["AvgValue"], 1e6, 1e7),
            f"df_matmul n=4096: {fmt(num(r['AvgValue']) / 1e6)} ms in [1, 10] ms",
        )
        check(isinstance(r.get("GPU"), str) and r["GPU"], f"df_matmul: GPU '{r.get('GPU')}'")


def verify_noise(check, values):
    t = check_frame(check, values, "df_noise", ["n"])
    if t is None:
        return
    bounds = {4096: (500, 20e3), 1 << 20: (2e3, 40e3), 1 << 24: (20e3, 150e3)}
    for n, (lo, hi) in bounds.items():
        r = one(t, n=n, Metric=TIME)
        if not check(r is not None, f"df_noise: one {TIME} row at n={n}"):
            continue
        check(num(r["NumRuns"]) == 20, f"df_noise n={n}: NumRuns {r['NumRuns']} == 20")
        check(
            within(r["AvgValue"], lo, hi),
            f"df_noise n={n}: {fmt(r['AvgValue'])} ns in [{lo:g}, {hi:g}]",
        )
        check(
            within(r["RelativeStdDevPct"], 0, 50),
            f"df_noise n={n}: RSD {fmt(r['RelativeStdDevPct'])} % in [0, 50]",
        )
        check(
            r["StableMeasurement"] in (True, False),
            f"df_noise n={n}: StableMeasurement {r['StableMeasurement']!r} is a bool",
        )
    r = one(t, n=1 << 24, Metric=TIME)
    if r is not None:
        check(
            num(r["RelativeStdDevPct"]) < 5,
            f"df_noise n=16M: RSD {fmt(r['RelativeStdDevPct'])} % < 5",
        )


def verify_cache(check, values):
    t = check_frame(check, values, "df_cache", ["n", "cache_control"])
    if t is None:
        return

    def get(n, metric, cc):
        r = one(t, n=n, Metric=metric, cache_control=cc)
        return num(r["AvgValue"]) if r else math.nan

    small, large = 1 << 20, 1 << 24
    r_all, r_none = get(small, "dram__bytes_read.sum", "all"), get(
        small, "dram__bytes_read.sum", "none"
    )
    check(
        within(r_all, 6e6, 12e6),
        f"df_cache n=1M, all: {fmt(r_all)} bytes read in [6e6, 12e6] (two 4 MiB arrays)",
    )
    check(
        r_none < 0.5 * r_all,
        f"df_cache n=1M: none reads {fmt(r_none)} bytes, < half of all's {fmt(r_all)}",
    )
    t_all, t_none = get(small, TIME, "all"), get(small, TIME, "none")
    check(t_none < t_all, f"df_cache n=1M: none {fmt(t_none)} ns faster than all {fmt(t_all)} ns")
    l_all, l_none = get(large, "dram__bytes_read.sum", "all"), get(
        large, "dram__bytes_read.sum", "none"
    )
    check(
        0.8 * l_all <= l_none <= 1.2 * l_all,
        f"df_cache n=16M (more than the L2): none reads {fmt(l_none)} bytes, "
        f"within 20 % of all's {fmt(l_all)}",
    )


def verify_sweep(check, values):
    t = check_frame(check, values, "df_sweep", ["n", "dtype"])
    if t is None:
        return
    for dtype, (lo, hi) in (("fp32", (10, 100)), ("fp16", (50, 1200))):
        for n in (1024, 2048, 4096, 8192):
            r = one(t, n=n, dtype=dtype, Metric="tflops")
            if not check(r is not None, f"df_sweep: one 'tflops' row at n={n} {dtype}"):
                continue
            check(
                within(r["AvgValue"], lo, hi),
                f"df_sweep n={n} {dtype}: {fmt(r['AvgValue'])} TFLOP/s in [{lo}, {hi}]",
            )
            timed = one(t, n=n, dtype=dtype, Metric=TIME)
            if timed is not None:
                derived = 2 * n**3 / num(timed["AvgValue"]) / 1e3
                # The mean of per-run TFLOP/s is not 2n^3 over the mean time, but close.
                check(
                    abs(derived - num(r["AvgValue"])) <= 0.03 * derived,
                    f"df_sweep n={n} {dtype}: tflops {fmt(r['AvgValue'])} agrees with the "
                    f"time's {derived:.4g}",
                )
    r = one(t, n=4096, dtype="fp32", Metric="tflops")
    if r is not None:
        check(
            r.get("Unit") == "TFLOP/s",
            f"df_sweep: derive_metric's unit '{r.get('Unit')}' == 'TFLOP/s'",
        )
    for n in (2048, 4096, 8192):
        a, b = one(t, n=n, dtype="fp32", Metric="tflops"), one(
            t, n=n, dtype="fp16", Metric="tflops"
        )
        if a and b:
            check(
                num(b["AvgValue"]) > 3 * num(a["AvgValue"]),
                f"df_sweep n={n}: fp16 more than 3x fp32",
            )


def verify_bound(check, values):
    t = check_frame(check, values, "df_bound", ["n"])
    verdicts = values.get("bound_verdicts")
    if not check(isinstance(verdicts, dict) and len(verdicts) == 2, f"bound_verdicts: {verdicts}"):
        return
    matmul = [v for k, v in verdicts.items() if "matmul" in k]
    add = [v for k, v in verdicts.items() if "add" in k]
    check(matmul == ["compute-bound"], f"fp16 matmul is compute-bound: {matmul}")
    check(add == ["memory-bound"], f"vector add is memory-bound: {add}")
    if t is None:
        return
    pct = [r for r in t if str(r["Metric"]).endswith("pct_of_peak_sustained_elapsed")]
    check(
        len(pct) == 4 and all(within(r["AvgValue"], 0, 101) for r in pct),
        f"df_bound: 4 throughput rows in [0, 101] %: {[fmt(r['AvgValue']) for r in pct]}",
    )
    adds = [r for r in t if "add" in str(r["Annotation"])]
    get = {r["Metric"]: num(r["AvgValue"]) for r in adds}
    if all(m in get for m in (TIME, "dram__bytes_read.sum", "dram__bytes_write.sum")):
        tbs = (get["dram__bytes_read.sum"] + get["dram__bytes_write.sum"]) / get[TIME] / 1e3
        check(1.5 <= tbs <= 5.2, f"df_bound: the vector add moves {tbs:.2f} TB/s, in [1.5, 5.2]")
    else:
        check(False, f"df_bound: the vector add's time and DRAM bytes ({sorted(get)})")


def verify_fusion(check, values):
    t = check_frame(check, values, "df_fusion", ["n"])
    how = values.get("fused_with")
    check(how in ("torch.compile", "torch.addcmul"), f"fused_with: {how!r}")
    if how != "torch.compile":
        print("      (torch.compile did not work in the notebook: see its fusion cell)")
    if t is None:
        return
    n = num(values.get("FUSION_N"))
    moved = {}
    for name in ("unfused", "fused"):
        got = {r["Metric"]: num(r["AvgValue"]) for r in t if r["Annotation"] == name}
        moved[name] = got.get("dram__bytes_read.sum", math.nan) + got.get(
            "dram__bytes_write.sum", math.nan
        )
        moved[name + " time"] = got.get(TIME, math.nan)
    # 5 arrays read and 3 written, less what each kernel's last writes leave in the L2 (the
    # H200 recording of examples/tutorial: 0.66-0.84 of an array written per kernel).
    arrays = moved["unfused"] / (4 * n)
    check(
        5.5 <= arrays <= 9.0,
        f"df_fusion: unfused moves {arrays:.2f} arrays' worth, in [5.5, 9] "
        "(5 read, up to 3 written)",
    )
    ratio = moved["fused"] / moved["unfused"]
    lo, hi = (0.35, 0.65) if how == "torch.compile" else (0.6, 0.9)
    check(lo <= ratio <= hi, f"df_fusion: fused/unfused bytes {ratio:.3f} in [{lo}, {hi}] ({how})")
    check(
        moved["fused time"] < moved["unfused time"],
        f"df_fusion: fused {fmt(moved['fused time'])} ns faster than unfused "
        f"{fmt(moved['unfused time'])} ns",
    )


def verify_fusion_range(check, values):
    """Lesson 6's ranges (replay_mode="range"): one row per range and metric, the Kernel
    a range's and its kernels counted. Its bytes: the fused range's those of its one kernel
    (within 2 %); the unfused range's at least its kernels' summed (within 1 %) and at most
    that plus one L2 per kernel before the last: with 64 MiB arrays, more than the L2, no
    intermediate is read from it, but what each kernel left dirty there at its end, which
    kernel replay never counts, is written back during the next one in a range."""
    t = check_frame(check, values, "df_fusion_range", ["n"])
    kernel_rows = rows(values, "df_fusion")   # checked by verify_fusion
    if t is None or not kernel_rows:
        return
    how = values.get("fused_with")
    l2 = 60 * 2**20   # the H200's L2
    for name, kernels in (("unfused", 3), ("fused", 1 if how == "torch.compile" else 2)):
        mine = [r for r in t if r["Annotation"] == name]
        got = {r["Metric"]: num(r["AvgValue"]) for r in mine}
        summed = {r["Metric"]: num(r["AvgValue"]) for r in kernel_rows if r["Annotation"] == name}
        counted = {r.get("RangeKernels") for r in mine}
        check(counted == {kernels},
              f"df_fusion_range: {name} range holds {sorted(counted, key=str)} kernels, expected {kernels}")
        whole = got.get("dram__bytes_read.sum", math.nan) + got.get("dram__bytes_write.sum", math.nan)
        parts = summed.get("dram__bytes_read.sum", math.nan) + summed.get("dram__bytes_write.sum", math.nan)
        lo, hi = (0.98 * parts, 1.02 * parts) if kernels == 1 else \
            (0.99 * parts, parts + (kernels - 1) * l2)
        check(lo <= whole <= hi,
              f"df_fusion_range: {name} range moves {fmt(whole)} B against its kernels summed "
              f"{fmt(parts)} B ({whole / parts:.3f}), in [{fmt(lo)}, {fmt(hi)}]")
        check(got.get(TIME, math.nan) > 0, f"df_fusion_range: {name} range time {fmt(got.get(TIME))} ns")


def verify_clocks(check, values):
    t = check_frame(check, values, "df_clocks", ["step"])
    if t is not None:
        clk = [r for r in t if r["Metric"] == "sm__cycles_elapsed.avg.per_second"]
        check(
            len(clk) == 6 and all(within(r["AvgValue"], 3e8, 2.2e9) for r in clk),
            f"df_clocks: 6 steps of sm__cycles_elapsed.avg.per_second in [0.3, 2.2] GHz: "
            f"{[fmt(r['AvgValue']) for r in clk]}",
        )
    runs = rows(values, "clock_runs")
    if not check(
        runs is not None and len(runs) >= 30,
        f"clock_runs: at least 30 runs " f"({None if runs is None else len(runs)})",
    ):
        return
    clocks = [num(r["SMClock"]) for r in runs]
    temps = [num(r["Temperature"]) for r in runs]
    check(
        all(3e8 <= c <= 2.2e9 for c in clocks),
        f"clock_runs: every SMClock in [0.3, 2.2] GHz "
        f"({min(clocks) / 1e9:.3f}-{max(clocks) / 1e9:.3f} GHz)",
    )
    check(
        all(10 <= x <= 100 for x in temps),
        f"clock_runs: every Temperature in [10, 100] C " f"({min(temps):.0f}-{max(temps):.0f} C)",
    )


def local_ncu():
    found = shutil.which("ncu")
    for p in ["/usr/local/cuda/bin/ncu"] + sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu")):
        found = found or (p if os.access(p, os.X_OK) else None)
    return found


def verify_side_and_ncu(check, values, tolerance):
    t = check_frame(check, values, "df_side", ["n"])
    matmul = rows(values, "df_matmul") or []
    if t is not None:
        for n, (lo, hi) in ((2048, (1e5, 1e6)), (4096, (1e6, 1e7))):
            r = one(t, n=n, Metric=TIME)
            if check(
                r is not None and within(r["AvgValue"], lo, hi) and num(r["NumRuns"]) == 20,
                f"df_side n={n}: 20 runs, {fmt(r and r['AvgValue'])} ns in [{lo:g}, {hi:g}]",
            ):
                m = one(matmul, n=n, Metric=TIME)
                if m is not None:
                    d = 100 * (num(r["AvgValue"]) - num(m["AvgValue"])) / num(m["AvgValue"])
                    check(
                        abs(d) <= 3, f"df_side n={n} against lesson 1's: {d:+.2f} % (at most 3 %)"
                    )
    if values.get("NCU") is None:
        here = local_ncu()
        check(
            here is None,
            f"ncu: the notebook found none, and neither does this check "
            f"({here or 'none'}): {values.get('ncu_status')}",
        )
        print("      (no ncu: the comparison with ncu is not checked)")
        return
    check(values.get("ncu_csv") is not None, f"ncu ran: {values.get('ncu_status')}")
    cmp = rows(values, "ncu_rows")
    if not check(
        cmp is not None and len(cmp) >= 2,
        f"ncu_rows: rangeprof and ncu rows matched " f"({None if cmp is None else len(cmp)})",
    ):
        return
    sizes = sorted({int(num(r["n"])) for r in cmp if not math.isnan(num(r["n"]))})
    check(sizes == [2048, 4096], f"ncu_rows: both sizes compared ({sizes})")
    for r in cmp:
        check(
            abs(num(r["DiffPct"])) <= tolerance,
            f"ncu_rows n={r['n']} '{r['Annotation']}': rangeprof {fmt(r['RangeprofMedian'])} "
            f"against ncu "
            f"{fmt(r['NcuMedian'])}: {num(r['DiffPct']):+.2f} % (at most {tolerance} %)",
        )


def verify(args):
    with open(args.values) as f:
        values = json.load(f)
    undefined = [k for k in VARIABLES if values.get(k) == "<undefined>"]
    check = Checks()
    check(
        not undefined,
        "the notebook defines "
        + ", ".join(VARIABLES)
        + (f"; undefined: {undefined}" if undefined else ""),
    )
    for part in (
        verify_matmul,
        verify_noise,
        verify_cache,
        verify_sweep,
        verify_bound,
        verify_fusion,
        verify_fusion_range,
        verify_clocks,
    ):
        try:
            part(check, values)
        except Exception as e:  # one broken lesson must not hide the others' verdicts
            check(False, f"{part.__name__}: {type(e).__name__}: {e}")
    try:
        verify_side_and_ncu(check, values, args.ncu_tolerance)
    except Exception as e:
        check(False, f"verify_side_and_ncu: {type(e).__name__}: {e}")
    print(f"{check.passed} checks passed, {check.failed} failed")
    return 1 if check.failed else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="what", required=True)
    r = sub.add_parser("run")
    r.add_argument("notebook")
    r.add_argument("executed")
    r.add_argument("values")
    r.add_argument("--kernel", default="python3")
    r.add_argument("--cwd", help="the kernel's working directory (default: EXECUTED's folder)")
    r.add_argument("--timeout", type=int, default=600, help="seconds per cell")
    v = sub.add_parser("verify")
    v.add_argument("values")
    v.add_argument("--ncu-tolerance", type=float, default=3.0, help="percent")
    args = p.parse_args()
    return run(args) if args.what == "run" else verify(args)


if __name__ == "__main__":
    sys.exit(main())
