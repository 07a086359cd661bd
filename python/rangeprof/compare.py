"""rangeprof/compare.py - rangeprof-compare A.jsonl B.jsonl: matches kernels by NVTX path,
kernel name and grid (config is part of the path; a range workload of --replay-mode range
by its path and kernel text, with no grid), and per metric prints both means, the
ratio B/A with its 95 % CI, Welch's t-test (or a bootstrap) and a verdict; groups that
were not stable on either side are flagged. Exits 1 when a significant regression is
larger than --threshold, so that it can guard a CI job. Standard library only; the
files are streamed (rangeprof/scan.py), keeping the values of each group and no record.
"""
import math
import sys

from rangeprof import records, scan, stats, table
from rangeprof.output import Parser, add_version, guarded, number, write
from rangeprof.units import parse_unit

PROG = "rangeprof-compare"
# Metrics where bigger is better; for every other metric (time, bytes, counts) a ratio
# above 1 is a regression.
HIGHER_IS_BETTER = ("pct_of_peak", "per_second", "throughput")
_KEY = ["Annotation", "Kernel", "Grid", "Metric"]


class CompareJob:
    """One side's groups (NVTX path, kernel, grid, metric) over a stream, and which of them
    a summary record calls not stable."""

    def __init__(self, metrics):
        self.aggregator = table.Aggregator(_KEY, metrics)
        self.metrics = metrics
        self.unstable = set()
        self.runs = 0

    def consume(self, reader, stream):
        add_run = self.aggregator.add_run
        for kind, obj in stream:
            if kind == "run":
                self.runs += 1
                add_run(obj)
            elif kind == "summary":
                rec = obj[0]
                for metric, st in rec["metrics"].items():
                    if st.get("stable") is False:
                        self.unstable.add((rec.get("nvtx_path") or "", rec.get("kernel", ""),
                                           table._dims(rec.get("grid")), metric))

    def merge(self, other):
        self.aggregator.merge(other.aggregator)
        self.unstable |= other.unstable
        self.runs += other.runs


def _side(path, metrics, label=None):
    """(groups, runs) of one side: {key: group dict} with values, launches and runs (one
    per value), unit, summary (stats.summarize's) and unstable_launch."""
    files = records.expand(path)
    job, _ = scan.run(lambda: CompareJob(metrics), files, label or PROG)
    agg = job.aggregator
    names = agg.launch_names
    out = {}
    for key, g in agg.groups.items():
        out[key] = dict(values=g.values, launches=[names[i] for i in g.launches()],
                        runs=[None if r == table._NO_RUN else r for r in g.runs],
                        unit=g.unit, summary=agg.group_stats(g),
                        unstable_launch=key in job.unstable)
    return out, job.runs


def _groups(path, metrics):
    """The groups of one side (see _side); FileNotFoundError ends the tool with one line."""
    try:
        return _side(path, metrics)[0]
    except FileNotFoundError as e:
        raise SystemExit(f"{PROG}: error: {e}")


def _summary(g):
    # The drift condition per launch, as the summary records apply it: every launch of
    # the kernel is pooled here, and steady launches whose means differ are no drift.
    if "summary" in g:
        return g["summary"]
    return stats.summarize(g["values"], g.get("clocks"), g.get("throttle"),
                           launches=g["launches"], runs=g["runs"])


def compare(a_groups, b_groups, method="welch", alpha=0.05, threshold_pct=0.0):
    if not 0 < alpha < 1:  # also NaN: every verdict would be 'same'
        raise ValueError(f"alpha {alpha!r}: expected a number > 0 and < 1")
    if not threshold_pct >= 0 or math.isinf(threshold_pct):
        raise ValueError(f"threshold {threshold_pct!r}: expected a finite number >= 0")
    rows = []
    for key in a_groups:
        if key not in b_groups:
            continue
        a, b = a_groups[key], b_groups[key]
        sa, sb = _summary(a), _summary(b)
        if method == "bootstrap":
            bs = stats.bootstrap_ratio(a["values"], b["values"])
            ratio, low, high, p = bs["ratio"], bs["low"], bs["high"], bs["p"]
        else:
            ratio, low, high = stats.ratio_ci(a["values"], b["values"])
            p = stats.welch(a["values"], b["values"])["p"]
        annotation, kernel, grid, metric = key
        better_high = any(h in metric for h in HIGHER_IS_BETTER)
        change_pct = 100 * (ratio - 1) if math.isfinite(ratio) else math.nan
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


def parser():
    p = Parser(prog=PROG, description="A/B comparison of two rangeprof recordings, kernel "
               "by kernel (NVTX path, name and grid), with a verdict per metric. Exit "
               "status: 0 no significant regression past --threshold, 1 one or more, 2 "
               "bad arguments or nothing to compare.")
    add_version(p)
    p.add_argument("a", help="JSONL of A (the baseline): file, directory or glob")
    p.add_argument("b", help="JSONL of B: file, directory or glob")
    p.add_argument("--metric", action="append", help="metric(s) to compare (repeatable or "
                   "comma-separated; default gpu__time_duration.sum; 'all' for every metric)")
    p.add_argument("--method", choices=("welch", "bootstrap"), default="welch",
                   help="welch: Welch's t-test and a delta-method CI of the ratio (default); "
                   "bootstrap: 2000 resamples of each side (seeded), percentile CI")
    alpha = number(0, 1, low_open=True, high_open=True)
    p.add_argument("--alpha", type=alpha, default=0.05,
                   help=f"significance level ({alpha.accepted}; default 0.05)")
    threshold = number(0)
    p.add_argument("--threshold", type=threshold, default=0.0, metavar="PCT",
                   help="a significant regression larger than PCT %% makes the exit status "
                   f"1 ({threshold.accepted}; default 0)")
    form = p.add_mutually_exclusive_group()
    form.add_argument("--csv", action="store_true", help="CSV on stdout (with Grid, Unit "
                      "and ChangePct)")
    form.add_argument("--json", action="store_true", help="JSON on stdout (as --csv; NaN "
                      "as null)")
    return p


def _main(argv, out):
    args = parser().parse_args(argv)
    metrics = [x for m in args.metric or ["gpu__time_duration.sum"] for x in m.split(",") if x]
    metrics = None if "all" in metrics or not metrics else metrics
    sides = []
    for label, path in (("A", args.a), ("B", args.b)):
        try:
            groups, runs = _side(path, metrics, f"{PROG} ({label})")
        except FileNotFoundError as e:
            print(f"{PROG}: error: {label}: {e}", file=sys.stderr)
            return 2
        if not runs:
            print(f"{PROG}: error: {label} ('{path}') has no runs", file=sys.stderr)
            return 2
        sides.append(groups)
    rows = compare(sides[0], sides[1], args.method, args.alpha, args.threshold)
    if not rows:
        print(f"{PROG}: error: no kernel (NVTX path, name, grid) and metric is in "
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
        print(f"{PROG}: {len(regressions)} significant regression(s) larger than "
              f"{args.threshold:g} %", file=sys.stderr)
        return 1
    return 0


def main(argv=None, out=sys.stdout):
    return guarded(PROG, _main, argv, out)


if __name__ == "__main__":
    sys.exit(main())
