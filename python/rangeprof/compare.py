"""rangeprof/compare.py - rangeprof-compare A.jsonl B.jsonl: matches kernels by NVTX path,
kernel name and grid (config is part of the path), and per metric prints both means, the
ratio B/A with its 95 % CI, Welch's t-test (or a bootstrap) and a verdict; groups that
were not stable on either side are flagged. Exits 1 when a significant regression is
larger than --threshold, so that it can guard a CI job. Standard library only."""
import argparse
import math
import sys
from collections import OrderedDict

from rangeprof import records, stats, table
from rangeprof.output import add_version, write
from rangeprof.units import parse_unit

# Metrics where bigger is better; for every other metric (time, bytes, counts) a ratio
# above 1 is a regression.
HIGHER_IS_BETTER = ("pct_of_peak", "per_second", "throughput")


def _groups(path, metrics):
    try:
        recs = records.read(path)
    except FileNotFoundError as e:
        raise SystemExit(f"rangeprof-compare: error: {e}")
    out = OrderedDict()
    for s in table.samples(recs):
        for metric, (value, _u, unit) in s["values"].items():
            if metrics and metric not in metrics:
                continue
            key = (s["Annotation"], s["Kernel"], s["Grid"], metric)
            g = out.setdefault(key, dict(values=[], clocks=[], throttle=[], launches=[],
                                         runs=[], unit=unit, unstable_launch=False))
            g["values"].append(value)
            g["launches"].append(s["Launch"])
            g["runs"].append(s["Run"])
            g["clocks"].append(s["SMClock"])
            g["throttle"].append(s["ThrottleReasons"])
    for rec, _sid in recs.summaries:
        for metric, st in (rec.get("metrics") or {}).items():
            key = (rec.get("nvtx_path", ""), rec.get("kernel", ""),
                   ",".join(str(x) for x in rec.get("grid") or []), metric)
            if key in out and st.get("stable") is False:
                out[key]["unstable_launch"] = True
    return out


def compare(a_groups, b_groups, method="welch", alpha=0.05, threshold_pct=0.0):
    rows = []
    for key in a_groups:
        if key not in b_groups:
            continue
        a, b = a_groups[key], b_groups[key]
        # The drift condition per launch, as the summary records apply it: every launch of
        # the kernel is pooled here, and steady launches whose means differ are no drift.
        sa = stats.summarize(a["values"], a["clocks"], a["throttle"], a["launches"], a["runs"])
        sb = stats.summarize(b["values"], b["clocks"], b["throttle"], b["launches"], b["runs"])
        if method == "bootstrap":
            bs = stats.bootstrap_ratio(a["values"], b["values"])
            ratio, low, high, p = bs["ratio"], bs["low"], bs["high"], bs["p"]
        else:
            ratio, low, high = stats.ratio_ci(a["values"], b["values"])
            p = stats.welch(a["values"], b["values"])["p"]
        annotation, kernel, grid, metric = key
        better_high = any(h in metric for h in HIGHER_IS_BETTER)
        change_pct = 100 * (ratio - 1) if not math.isnan(ratio) else math.nan
        significant = not math.isnan(p) and p < alpha
        worse = change_pct < 0 if better_high else change_pct > 0
        if not significant:
            verdict = "same"
        elif worse:
            is_time = parse_unit(a["unit"]).dims == {"s": 1}
            verdict = "REGRESSION" if abs(change_pct) > threshold_pct else \
                "slower (within threshold)" if is_time else "worse (within threshold)"
        else:
            verdict = "improvement"
        flags = []
        if sa["stable"] is not True or a["unstable_launch"]:
            flags.append("A unstable")
        if sb["stable"] is not True or b["unstable_launch"]:
            flags.append("B unstable")
        rows.append(dict(Annotation=annotation, Kernel=kernel, Grid=grid, Metric=metric,
                         Unit=a["unit"], RunsA=sa["n"], MeanA=sa["mean"], RunsB=sb["n"],
                         MeanB=sb["mean"], Ratio=ratio, RatioCI95_Lower=low,
                         RatioCI95_Upper=high, ChangePct=change_pct, PValue=p,
                         Verdict=verdict, Flags=", ".join(flags)))
    return rows


def main(argv=None, out=sys.stdout):
    p = argparse.ArgumentParser(prog="rangeprof-compare", description="A/B comparison of two "
                                "rangeprof recordings, kernel by kernel, with a verdict.")
    add_version(p)
    p.add_argument("a", help="JSONL of A (the baseline): file, directory or glob")
    p.add_argument("b", help="JSONL of B")
    p.add_argument("--metric", action="append", help="metric(s) to compare (default "
                   "gpu__time_duration.sum; 'all' for every metric)")
    p.add_argument("--method", choices=("welch", "bootstrap"), default="welch")
    p.add_argument("--alpha", type=float, default=0.05, help="significance level (0.05)")
    p.add_argument("--threshold", type=float, default=0.0, metavar="PCT", help="a significant "
                   "regression larger than PCT %% makes the exit status 1 (default 0)")
    form = p.add_mutually_exclusive_group()
    form.add_argument("--csv", action="store_true")
    form.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    metrics = [x for m in args.metric or ["gpu__time_duration.sum"] for x in m.split(",")]
    metrics = None if "all" in metrics else metrics
    rows = compare(_groups(args.a, metrics), _groups(args.b, metrics), args.method,
                   args.alpha, args.threshold)
    if not rows:
        print("rangeprof-compare: error: no kernel (NVTX path, name, grid) and metric is in "
              "both A and B", file=sys.stderr)
        return 2
    cols = ["Annotation", "Kernel", "Metric", "RunsA", "MeanA", "RunsB", "MeanB", "Ratio",
            "RatioCI95_Lower", "RatioCI95_Upper", "PValue", "Verdict", "Flags"]
    if args.csv or args.json:
        cols = cols[:3] + ["Grid", "Unit"] + cols[3:] + ["ChangePct"]
    write(rows, cols, "csv" if args.csv else "json" if args.json else "text", out,
          widths=dict(Kernel=40, Annotation=32))
    regressions = [r for r in rows if r["Verdict"] == "REGRESSION"]
    if regressions:
        print(f"rangeprof-compare: {len(regressions)} significant regression(s) larger than "
              f"{args.threshold:g} %", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
