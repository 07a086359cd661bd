"""rangeprof/frame.py - pandas views: load() gives Nsight Python's long-form DataFrame (one
row per run and metric, config columns from key=value words), summarize() its aggregate
columns with SPEC.md section 5 statistics. The only module that needs pandas."""
import sys

try:
    import pandas as pd
except ImportError:  # a wheel installed with --no-deps: one line that says what to do
    raise ImportError("rangeprof.load and rangeprof.summarize need pandas: pip install "
                      "pandas") from None

from rangeprof import records, stats, table


def load(paths_or_globs, report="stderr", combine=None, derive=()):
    """Long-form DataFrame of every run record in the files (names, directories, globs;
    many processes and sessions together). Bad lines are printed on report as
    'FILE:LINE: reason; line skipped' and listed in df.attrs['bad_lines']. combine and
    derive are as in rangeprof.table.build (derive: 'name=expr' strings)."""
    from rangeprof.expr import parse_derivation
    if report == "stderr":
        report = sys.stderr  # looked up per call, so that redirections are honoured
    recs = records.read(paths_or_globs, report=report)
    samples = table.build(recs, derivations=[parse_derivation(d) for d in derive],
                          combine=combine, report=report)
    rows = table.long_rows(samples)
    configs = table.config_columns(rows)
    columns = ["Annotation"] + configs + [c for c in table.ID_COLUMNS if c != "Annotation"]
    df = pd.DataFrame(rows, columns=columns)
    df.attrs["bad_lines"] = [str(b) for b in recs.bad_lines]
    df.attrs["config_columns"] = configs
    return df


def summarize(df, by=None):
    """One row per group (default: Annotation, config columns, Kernel, GPU, Metric) with
    Nsight Python's columns AvgValue, StdDev, MinValue, MaxValue, NumRuns, CI95_Lower,
    CI95_Upper, RelativeStdDevPct, StableMeasurement (SPEC.md: Student-t interval; stable
    needs n >= 5, RSD <= 2 %, no launch that drifted - from 10 runs, a significant trend of
    more than 2 % that moved the bulk of the runs (stats.drift) -, the known SM clocks
    within 5 % and no thermal, power or slowdown throttle reason in any run), plus MedianValue,
    DriftPct, Unit and Reasons. Drift is judged per launch, as in the 'summary' records:
    DriftPct is the least-squares trend of a launch's runs (the rows of one Launch in Run
    order; without those columns, the group's rows in the frame's order), first to last,
    in % of its mean - where a group holds several launches, the one of largest magnitude -
    and a group is not stable when any of its launches drifted. A trend across launches
    (steady launches whose means step up) is not a drift."""
    if by is None:
        by = ["Annotation"] + list(df.attrs.get("config_columns", [])) + ["Kernel", "GPU", "Metric"]
    by = [by] if isinstance(by, str) else list(by)
    if "Metric" not in by:
        by.append("Metric")
    out = []
    for key, g in df.groupby(by, sort=False, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        s = stats.summarize(g["Value"].tolist(), g["SMClock"].tolist(),
                            g["ThrottleReasons"].tolist() if "ThrottleReasons" in g else None,
                            launches=g["Launch"].tolist() if "Launch" in g else None,
                            runs=g["Run"].tolist() if "Run" in g else None)
        row = dict(zip(by, key))
        row["Unit"] = g["Unit"].iloc[0]
        row.update(AvgValue=s["mean"], StdDev=s["stddev"], MinValue=s["min"],
                   MedianValue=s["median"], MaxValue=s["max"], NumRuns=s["n"],
                   CI95_Lower=s["ci95_low"], CI95_Upper=s["ci95_high"],
                   RelativeStdDevPct=s["rsd_pct"], DriftPct=s["drift_pct"],
                   StableMeasurement=s["stable"],
                   Reasons="; ".join(s["reasons"]))
        out.append(row)
    result = pd.DataFrame(out)
    if len(result):
        result["StableMeasurement"] = result["StableMeasurement"].astype("boolean")
    return result
