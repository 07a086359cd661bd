"""rangeprof/compare.py - rangeprof-compare A.jsonl B.jsonl: matches kernels by NVTX path,
kernel name and grid (config is part of the path; a range workload of --replay-mode range
by its path and kernel text, with no grid), and per metric prints both means, the
ratio B/A with its 95 % CI, Welch's t-test (or a bootstrap) and a verdict; groups that
were not stable on either side are flagged. A verdict is given only where one can be
judged: a kernel found on one side only is listed ('only in A', 'only in B'), and a row
with too few runs, units that differ, different GPUs, a baseline that is zero, sessions
mixed in one file or a change of a metric whose better side is not known says 'cannot
judge' and why (CANNOT_JUDGE). Exit status (EXIT): 1 a significant regression larger
than --threshold, 3 a kernel on one side only, 4 a row that cannot be judged, 2 bad
arguments or nothing in common. Standard library only; the files are streamed
(rangeprof/scan.py), keeping the values of each group and no record.
"""
import argparse
import math
import sys
from array import array
from collections import Counter

from rangeprof import records, scan, stats, table
from rangeprof.direction import HIGHER, LOWER, better
from rangeprof.expr import ExprError
from rangeprof.output import Parser, add_version, brief, guarded, number, said, write
from rangeprof.units import parse_unit, same_unit

PROG = "rangeprof-compare"
# A row is matched on NVTX path, kernel, grid and metric; the groups are read apart per
# GPU, so that a side that pools GPUs is seen (_side), and CompareJob notes the sessions
# of each file.
_KEY = ["Annotation", "Kernel", "Grid", "GPU", "Metric"]
# Fewer finite values than this on either side: no verdict. The SPEC's minimum for a
# stable measurement.
MIN_RUNS = stats.STABLE_MIN_RUNS
# Exit statuses; where several apply, the first of 1, 3, 4.
EXIT = dict(ok=0, regression=1, usage=2, unmatched=3, unjudged=4)
# What --allow can let pass.
ALLOW = ("unmatched", "unjudged", "sessions", "gpus")
CANNOT_JUDGE = "cannot judge"


class CompareJob:
    """One side's groups (NVTX path, kernel, grid, GPU, metric) over a stream, which of
    them a summary record calls not stable, and which sessions of which files hold each
    (NVTX path, kernel, grid): sessions {(path, kernel, grid): {file: {session: None}}}."""

    def __init__(self, metrics):
        self.aggregator = table.Aggregator(_KEY, metrics)
        self.metrics = metrics
        self.unstable = set()
        self.sessions = {}
        self.runs = 0

    def consume(self, reader, stream):
        add_run, sessions = self.aggregator.add_run, self.sessions
        last = None
        for kind, obj in stream:
            if kind == "run":
                self.runs += 1
                add_run(obj)
                rec = obj.record
                # Noted once per launch (its runs are one session's): a comparison per
                # run, not a lookup.
                mark = (obj.session_id, obj.path, rec.get("launch"))
                if mark != last:
                    last = mark
                    where = (rec.get("nvtx_path") or "", rec.get("kernel", ""),
                             table._dims(rec.get("grid")))
                    sessions.setdefault(where, {}).setdefault(obj.path, {})[obj.session_id] = None
            elif kind == "summary":
                rec = obj[0]
                for metric, st in rec["metrics"].items():
                    if st.get("stable") is False:
                        self.unstable.add((rec.get("nvtx_path") or "", rec.get("kernel", ""),
                                           table._dims(rec.get("grid")), metric))

    def merge(self, other):
        self.aggregator.merge(other.aggregator)
        self.unstable |= other.unstable
        for where, files in other.sessions.items():
            mine = self.sessions.setdefault(where, {})
            for file, ids in files.items():
                mine.setdefault(file, {}).update(ids)
        self.runs += other.runs


def _unique(items):
    return list(dict.fromkeys(items))


def _side(path, metrics, label=None):
    """(groups, runs) of one side: {(path, kernel, grid, metric): group dict} with
    values, launches and runs (one per value), unit, units (every unit text its runs
    gave), summary (stats.summarize's), unstable_launch, gpus, sessions, and per file the
    sessions it holds of the group (files)."""
    files = records.expand(path)
    job, _ = scan.run(lambda: CompareJob(metrics), files, label or PROG)
    return groups_of(job), job.runs


def groups_of(job):
    """The groups of a CompareJob that has read one side (see _side)."""
    agg = job.aggregator
    names = agg.launch_names
    parts = {}
    for key, g in agg.groups.items():
        annotation, kernel, grid, gpu, metric = key
        parts.setdefault((annotation, kernel, grid, metric), []).append((gpu, g))
    out = {}
    for key, items in parts.items():
        gs = [g for _, g in items]
        by_file = {file: list(ids) for file, ids in job.sessions.get(key[:3], {}).items()}
        values = gs[0].values if len(gs) == 1 else array("d", [v for g in gs for v in g.values])
        launches = [names[i] for g in gs for i in g.launches()]
        runs = [None if r == table._NO_RUN else r for g in gs for r in g.runs]
        summary = agg.group_stats(gs[0]) if len(gs) == 1 else _pooled_stats(agg, gs, values,
                                                                              launches, runs)
        known = [(lid, r) for lid, r in zip(launches, runs) if r is not None]
        twice = next((p for p, n in Counter(known).items() if n > 1), None) \
            if len(set(known)) < len(known) else None
        out[key] = dict(values=values, launches=launches, runs=runs, unit=gs[0].unit,
                        # A (launch, run) given twice: the first such, else None.
                        twice=twice,
                        # Every unit text of its runs (table._Group notes those that
                        # are not its own unit).
                        units=_unique([g.unit for g in gs] + sorted(
                            u for g in gs for u in g.other_units)), summary=summary,
                        unstable_launch=key in job.unstable,
                        # A GPU whose device record is lost (None) is not known to differ.
                        gpus=_unique(gpu for gpu, _ in items if gpu is not None),
                        sessions=_unique(s for ids in by_file.values() for s in ids),
                        files=by_file)
    return out


def _pooled_stats(agg, gs, values, launches, runs):
    """stats.summarize of the groups gs of one aggregator pooled (one kernel on several
    GPUs): from the drift each group judged per launch where every launch is in
    one group as one segment, else from the values, launches and runs."""
    lows = [g.clock_low for g in gs if g.clock_low is not None]
    highs = [g.clock_high for g in gs if g.clock_high is not None]
    clocks = (min(lows), max(highs)) if lows else None
    tally = (sum(g.hits for g in gs), len(values), set().union(*(g.seen for g in gs)))
    drifts, seen = [], set()
    for g in gs:
        if seen & set(g.seg_launch) or len(set(g.seg_launch)) != len(g.seg_launch):
            return stats.summarize(values, launches=launches, runs=runs, clock_range=clocks,
                                   throttle_tally=tally)
        seen.update(g.seg_launch)
        g.close()
        drifts += [(agg.launch_names[lid], m, pct, drifted)
                   for lid, (m, pct, drifted) in zip(g.seg_launch, g.seg_done) if m]
    return stats.summarize(values, clock_range=clocks, throttle_tally=tally, drifts=drifts)


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


def _mixed(g):
    """Whether a side's group holds values in more than one unit."""
    return table.mixed_units(g.get("units") or [g["unit"]])


def _unjudgeable(label, g, s, min_runs, allow):
    """Why one side's group cannot be judged on its own (a list of reasons)."""
    why = []
    if _mixed(g):
        units = sorted(g["units"], key=str)
        why.append(f"{label} mixes units ({', '.join(repr(u) for u in units)})")
    if len(g.get("gpus") or ()) > 1 and "gpus" not in allow:
        why.append(f"{label} pools GPUs ({', '.join(map(str, g['gpus']))}; --allow gpus)")
    files = g.get("files") or {}
    if "sessions" not in allow:
        for file, sessions in files.items():
            if len(sessions) > 1:
                why.append(f"{label}'s {file} holds {len(sessions)} sessions of it (recordings "
                           "appended to one file, or processes writing one file; --allow "
                           "sessions pools them)")
    # One session's runs in two files are one recording read twice (a copy of the file
    # beside it): pooled, they would count twice and narrow the CI.
    where = {}
    for file, sessions in files.items():
        for session in sessions:
            where.setdefault(session, []).append(file)
    for session, in_files in where.items():
        if len(in_files) > 1:
            why.append(f"{label} holds session {session} in {len(in_files)} files "
                       f"({', '.join(in_files)}): one recording read twice")
    if g.get("twice"):
        launch, run = g["twice"]
        why.append(f"{label} holds run {run} of launch {launch} twice (the lines of several "
                   "processes interleaved, recorded without %p in -o, or a file read twice)")
    if s["n"] < min_runs:
        why.append(f"{label} has {s['n']} run{'s' if s['n'] != 1 else ''} < {min_runs} "
                   "(--min-runs)")
    return why


def _row(key, a, b, sa, sb):
    annotation, kernel, grid, metric = key
    g, s = (a, sa) if a is not None else (b, sb)
    nan = math.nan
    return dict(Annotation=annotation, Kernel=kernel, Grid=grid, Metric=metric,
                Unit=g["unit"], RunsA=sa["n"] if sa else 0, MeanA=sa["mean"] if sa else nan,
                RunsB=sb["n"] if sb else 0, MeanB=sb["mean"] if sb else nan, Ratio=nan,
                RatioCI95_Lower=nan, RatioCI95_Upper=nan, ChangePct=nan, PValue=nan,
                Better=None, Verdict=None, Reason="", Flags="")


def _only(key, side, other_groups):
    """The reason of a row found on one side only: what the other side has of the kernel."""
    annotation, kernel, grid, metric = key
    other = "B" if side == "A" else "A"
    grids = [k[2] for k in other_groups if k[0] == annotation and k[1] == kernel
             and k[3] == metric]
    if grids:
        return f"{other} has it with grid {' and '.join(grids)}"
    if any(k[0] == annotation and k[1] == kernel for k in other_groups):
        return f"{other} has the kernel but not this metric"
    if any(k[0] == annotation for k in other_groups):
        return f"{other} runs other kernels in this range"
    return f"{other} has no such range"


def compare(a_groups, b_groups, method="welch", alpha=0.05, threshold_pct=0.0,
            min_runs=MIN_RUNS, allow=(), directions=None):
    """One row per (NVTX path, kernel, grid, metric) of A or B, A's order first: both
    means, the ratio B/A with its 95 % CI, the p-value and a Verdict - 'same',
    'improvement', 'REGRESSION', 'slower (within threshold)', 'worse (within
    threshold)', 'only in A', 'only in B' or 'cannot judge' - with its Reason where it
    is not a plain verdict. directions maps metric names to 'higher' or 'lower' (what is
    better), over direction.better's rules."""
    if not 0 < alpha < 1:  # also NaN: every verdict would be 'same'
        raise ValueError(f"alpha {alpha!r}: expected a number > 0 and < 1")
    if not threshold_pct >= 0 or math.isinf(threshold_pct):
        raise ValueError(f"threshold {threshold_pct!r}: expected a finite number >= 0")
    if not (isinstance(min_runs, int) and min_runs >= 2):
        raise ValueError(f"min_runs {min_runs!r}: expected an integer >= 2")
    rows = []
    progress = None
    if method == "bootstrap":
        progress = stats.BootstrapProgress("rangeprof-compare", stats.BOOTSTRAP_RESAMPLES * sum(
            len(a_groups[k]["values"]) + len(b_groups[k]["values"])
            for k in a_groups if k in b_groups))
    for key in list(a_groups) + [k for k in b_groups if k not in a_groups]:
        a, b = a_groups.get(key), b_groups.get(key)
        sa = _summary(a) if a is not None else None
        sb = _summary(b) if b is not None else None
        row = _row(key, a, b, sa, sb)
        rows.append(row)
        if a is None or b is None:
            side = "A" if b is None else "B"
            row["Verdict"] = f"only in {side}"
            row["Reason"] = _only(key, side, b_groups if side == "A" else a_groups)
            continue
        metric = key[3]
        if method == "bootstrap":
            bs = stats.bootstrap_ratio(a["values"], b["values"], progress=progress)
            ratio, low, high, p = bs["ratio"], bs["low"], bs["high"], bs["p"]
        else:
            ratio, low, high = stats.ratio_ci(a["values"], b["values"])
            p = stats.welch(a["values"], b["values"])["p"]
        change_pct = 100 * (ratio - 1) if math.isfinite(ratio) else math.nan
        direction, why_direction = better(metric, a["unit"], overrides=directions)
        row.update(Ratio=ratio, RatioCI95_Lower=low, RatioCI95_Upper=high,
                   ChangePct=change_pct, PValue=p, Better=direction)
        flags = []
        if sa["stable"] is not True or a["unstable_launch"]:
            flags.append("A unstable")
        if sb["stable"] is not True or b["unstable_launch"]:
            flags.append("B unstable")
        if set(a.get("sessions") or ()) & set(b.get("sessions") or ()):
            flags.append("same session in A and B")
        row["Flags"] = ", ".join(flags)
        why = _unjudgeable("A", a, sa, min_runs, allow) + _unjudgeable("B", b, sb, min_runs,
                                                                       allow)
        if not (_mixed(a) or _mixed(b) or same_unit(a["unit"], b["unit"])):
            why.append(f"units differ (A {a['unit']!r}, B {b['unit']!r})")
        if a.get("gpus") and b.get("gpus") and a["gpus"] != b["gpus"] \
                and "gpus" not in allow:
            why.append(f"GPUs differ (A {', '.join(map(str, a['gpus']))}, B "
                       f"{', '.join(map(str, b['gpus']))}; --allow gpus)")
        both_zero = sa["mean"] == 0 and sb["mean"] == 0 and sa["stddev"] == 0 \
            and sb["stddev"] == 0
        if not why and not both_zero:
            if sa["mean"] == 0:
                why.append("the baseline (A) mean is 0: no ratio")
            elif sa["mean"] < 0:
                why.append("the baseline (A) mean is negative: no ratio")
            elif not (math.isfinite(ratio) and not math.isnan(p)):
                why.append("no finite ratio or p-value (values beyond the float range's "
                           "precision)")
        if why:
            row["Verdict"], row["Reason"] = CANNOT_JUDGE, "; ".join(why)
            continue
        significant = not math.isnan(p) and p < alpha
        if both_zero or not significant:
            row["Verdict"] = "same"
        elif direction is None:
            row["Verdict"] = CANNOT_JUDGE
            row["Reason"] = (f"changed {change_pct:+.2f} %, and which way is better is not "
                             f"known ({why_direction}): --higher-is-better or "
                             "--lower-is-better names it")
        elif (change_pct < 0) if direction == HIGHER else (change_pct > 0):
            is_time = parse_unit(a["unit"]).dims == {"s": 1}
            row["Verdict"] = "REGRESSION" if abs(change_pct) > threshold_pct else \
                "slower (within threshold)" if is_time else "worse (within threshold)"
        else:
            row["Verdict"] = "improvement"
    if progress is not None:
        progress.finish()
    return rows


def _integer_at_least(low):
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < low:
            raise argparse.ArgumentTypeError(f"expected an integer >= {low}, not {said(text)}")
        return value
    return parse


def _choices(allowed, option):
    def parse(text):
        items = [x.strip() for x in text.split(",") if x.strip()]
        bad = [x for x in items if x not in allowed]
        if bad or not items:
            raise argparse.ArgumentTypeError(
                f"{option} {said(text)}: expected one or more of {', '.join(allowed)}")
        return items
    return parse


def parser():
    p = Parser(prog=PROG, description=(
        "A/B comparison of two rangeprof recordings, kernel by kernel (NVTX path, name and "
        "grid), with a verdict per metric: same, improvement, REGRESSION, slower or worse "
        "(within threshold); 'only in A' or 'only in B' for a kernel, range or config found "
        "on one side only; 'cannot judge' (with the reason) where a verdict would mislead: "
        f"fewer than --min-runs runs on a side, units that differ, different GPUs, a "
        "baseline mean of 0, several sessions of one file pooled (a second recording "
        "appended to the same -o file), or a significant change of a metric whose better "
        "side is not known. Which side is better comes from the metric's name and unit "
        "(time, bytes, cycles, instructions, stalls, misses: lower; throughput, % of peak, "
        "per second, per cycle, hit rates, occupancy: higher; a hardware capacity such as a "
        ".peak_sustained, launch__ and device__attribute_ metrics: no performance metric, "
        "a change cannot be judged). Exit status: 0 all judged, "
        "no significant regression past --threshold; 1 a significant regression past "
        "--threshold; 3 a kernel, range, config or metric on one side only (unless --allow "
        "unmatched); 4 a row that cannot be judged (unless --allow unjudged); where several "
        "apply, the first of 1, 3, 4; 2 bad arguments or nothing in common."))
    add_version(p)
    p.add_argument("a", help="JSONL of A (the baseline): file, directory or glob")
    p.add_argument("b", help="JSONL of B: file, directory or glob")
    p.add_argument("--metric", action="append", help="metric(s) to compare (repeatable or "
                   "comma-separated; default gpu__time_duration.sum; 'all' for every metric)")
    p.add_argument("--method", choices=("welch", "bootstrap"), default="welch",
                   help="welch: Welch's t-test and a delta-method CI of the ratio (default); "
                   f"bootstrap: {stats.BOOTSTRAP_RESAMPLES} resamples of each side (seeded), "
                   "percentile CI")
    alpha = number(0, 1, low_open=True, high_open=True)
    p.add_argument("--alpha", type=alpha, default=0.05,
                   help=f"significance level ({alpha.accepted}; default 0.05)")
    threshold = number(0)
    p.add_argument("--threshold", type=threshold, default=0.0, metavar="PCT",
                   help="a significant regression larger than PCT %% makes the exit status "
                   f"1 ({threshold.accepted}; default 0)")
    p.add_argument("--min-runs", type=_integer_at_least(2), default=MIN_RUNS, metavar="N",
                   help="fewer runs with a finite value than N on either side: 'cannot "
                   f"judge' (an integer >= 2; default {MIN_RUNS}, the SPEC's minimum for a "
                   "stable measurement)")
    p.add_argument("--allow", action="append", type=_choices(ALLOW, "--allow"), default=[],
                   metavar="WHAT", help="let pass (repeatable or comma-separated): "
                   "'unmatched' rows are listed but do not make exit status 3; 'unjudged' "
                   "rows are listed but do not make exit status 4; 'sessions' pools the "
                   "sessions of one file as one side; 'gpus' compares across GPUs")
    p.add_argument("--higher-is-better", action="append", default=[], metavar="METRIC",
                   help="a metric (repeatable or comma-separated) for which a larger B is "
                   "better, over the rules")
    p.add_argument("--lower-is-better", action="append", default=[], metavar="METRIC",
                   help="a metric for which a smaller B is better, over the rules")
    form = p.add_mutually_exclusive_group()
    form.add_argument("--csv", action="store_true", help="CSV on stdout (with Grid, Unit, "
                      "ChangePct and Better)")
    form.add_argument("--json", action="store_true", help="JSON on stdout (as --csv; NaN "
                      "as null)")
    return p


def _names(values):
    return [x for v in values for x in v.split(",") if x]


def _main(argv, out):
    p = parser()
    args = p.parse_args(argv)
    metrics = [x for m in args.metric or ["gpu__time_duration.sum"] for x in m.split(",") if x]
    metrics = None if "all" in metrics or not metrics else metrics
    allow = {x for items in args.allow for x in items}
    directions = {m: HIGHER for m in _names(args.higher_is_better)}
    both = [m for m in _names(args.lower_is_better) if m in directions]
    if both:
        p.error(f"--higher-is-better and --lower-is-better both name {said(both[0])}")
    directions.update({m: LOWER for m in _names(args.lower_is_better)})
    sides = []
    for label, path in (("A", args.a), ("B", args.b)):
        try:
            groups, runs = _side(path, metrics, f"{PROG} ({label})")
        except (FileNotFoundError, ExprError) as e:  # ExprError: table.TooManyGroups
            print(f"{PROG}: error: {label}: {brief(e)}", file=sys.stderr)
            return EXIT["usage"]
        if not runs:
            print(f"{PROG}: error: {label} ({said(path)}) has no runs", file=sys.stderr)
            return EXIT["usage"]
        sides.append(groups)
    rows = compare(sides[0], sides[1], args.method, args.alpha, args.threshold,
                   args.min_runs, allow, directions)
    matched = [r for r in rows if not r["Verdict"].startswith("only in")]
    unmatched = [r for r in rows if r["Verdict"].startswith("only in")]
    cols = ["Annotation", "Kernel", "Metric", "RunsA", "MeanA", "RunsB", "MeanB", "Ratio",
            "RatioCI95_Lower", "RatioCI95_Upper", "PValue", "Verdict", "Flags"]
    if args.csv or args.json:
        cols = cols[:3] + ["Grid", "Unit"] + cols[3:-1] + ["Reason", "Flags", "ChangePct",
                                                          "Better"]
    else:
        if unmatched:  # two rows of one kernel told apart by their grids
            cols.insert(2, "Grid")
        if any(r["Reason"] for r in rows):
            cols.insert(cols.index("Verdict") + 1, "Reason")
    write(rows, cols, "csv" if args.csv else "json" if args.json else "text", out,
          widths=dict(Kernel=40, Annotation=32))
    if not matched:
        print(f"{PROG}: error: no kernel (NVTX path, name, grid) and metric is in "
              "both A and B", file=sys.stderr)
        return EXIT["usage"]
    status = EXIT["ok"]
    unjudged = [r for r in rows if r["Verdict"] == CANNOT_JUDGE]
    if unjudged:
        print(f"{PROG}: {len(unjudged)} row(s) cannot be judged (see Reason)"
              + ("; --allow unjudged lets them pass" if "unjudged" not in allow else ""),
              file=sys.stderr)
        if "unjudged" not in allow:
            status = EXIT["unjudged"]
    if unmatched:
        a_only = sum(r["Verdict"] == "only in A" for r in unmatched)
        print(f"{PROG}: {a_only} row(s) only in A, {len(unmatched) - a_only} only in B "
              "(a kernel, range, config or metric that disappeared or appeared)"
              + ("; --allow unmatched lets them pass" if "unmatched" not in allow else ""),
              file=sys.stderr)
        if "unmatched" not in allow:
            status = EXIT["unmatched"]
    regressions = [r for r in rows if r["Verdict"] == "REGRESSION"]
    if regressions:
        print(f"{PROG}: {len(regressions)} significant regression(s) larger than "
              f"{args.threshold:g} %", file=sys.stderr)
        status = EXIT["regression"]
    return status


def main(argv=None, out=sys.stdout):
    return guarded(PROG, _main, argv, out)


if __name__ == "__main__":
    sys.exit(main())
