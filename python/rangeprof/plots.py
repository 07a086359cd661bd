"""rangeprof/plots.py - PNG plots with matplotlib (the only module that needs it), and the
rangeprof-plot command:
  sweep         a metric against a config column, lines per variant, row/column panels,
                with 95 % CI bars (drawn by _plot.draw_panel, as nsight.analyze.plot);
  distribution  the run-to-run values of each group, one panel each, with mean and 95 % CI;
  roofline      achieved FLOP/s against arithmetic intensity under the device's roofs;
  ab            A against B per kernel: the ratio of the means with its CI and verdict;
  by-rank       ranks compared: each kernel per rank, and the ranks' clocks (ranks.py)."""
import argparse
import math
import os
import sys
from collections import OrderedDict

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:  # said by main(), so that the command fails with one line
    plt = None

from rangeprof import _plot, bound, compare, records, report, scan, table  # noqa: E402
from rangeprof.expr import ExprError, parse_derivation  # noqa: E402
from rangeprof.output import Parser, add_version, brief, guarded, number, printable  # noqa: E402

PROG = "rangeprof-plot"


class Refused(Exception):
    """An argument the files or the output path show to be wrong: one line, exit 2."""


def _save(fig, out):
    import warnings
    with warnings.catch_warnings():
        # Labels too long for the margins (a config value of 400 digits) are drawn as
        # they fit: matplotlib's warning would be a second, unasked-for message.
        warnings.simplefilter("ignore", UserWarning)
        fig.tight_layout()
    try:
        fig.savefig(out, dpi=110)
    except (OSError, ValueError) as e:  # checked before drawing; a race or a full disk
        raise Refused(f"-o '{out}': cannot write it: {e}") from None
    finally:
        plt.close(fig)
    return out


def check_output(out):
    """Refuses an output path whose directory does not exist or cannot be written, that
    names a directory, or whose extension matplotlib cannot write, before any file is
    read (the accepted extensions are named)."""
    import os
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    kinds = FigureCanvasAgg(Figure()).get_supported_filetypes()
    if os.path.isdir(out):  # (before its extension: a directory has none to say)
        raise Refused(f"-o '{out}' is a directory; expected a file name such as plot.png")
    ext = os.path.splitext(out)[1].lstrip(".").lower()
    if ext not in kinds:
        raise Refused(f"-o '{out}': {'no extension' if not ext else f'extension .{ext}'}; "
                      f"accepted: {', '.join('.' + k for k in sorted(kinds))}")
    folder = os.path.dirname(out) or "."
    if not os.path.isdir(folder):
        raise Refused(f"-o '{out}': directory '{folder}' does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise Refused(f"-o '{out}': directory '{folder}' is not writable")


# Panels a figure holds at most: beyond it a page is taller than a screen many times
# over (thousands of panels took minutes and gigabytes for a PNG 352 000 pixels tall).
MAX_PANELS = 60


def _check_panels(count, what):
    if count > MAX_PANELS:
        raise Refused(f"{count} panels ({what}), more than the {MAX_PANELS} a figure shows "
                      "readably; choose fewer with --group-by, --row or --col, or select "
                      "ranges when recording")


def _number(v):
    """Whether a config value is a number matplotlib can place on an axis: an int or a
    float, not a bool, and not an integer too large for a float (a seed= of 400 digits)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    try:
        float(v)
    except OverflowError:
        return False
    return True


def _groups(files, metric, derive=(), combine=None, group_by=None, label=PROG, options=None):
    """(job, groups) of one metric's rows grouped by group_by, read as rangeprof-report
    reads them; a group_by column no run has is refused."""
    group_by = list(group_by or ["Annotation", "Kernel"])
    try:
        derivations = [parse_derivation(d) for d in derive]
        table.Deriver(derivations)
        paths = records.expand(files)
        job, _ = scan.run(lambda: table.StatsJob(group_by, [metric], derivations, combine),
                          paths, label, at_sessions=combine is not None)
    except (ExprError, FileNotFoundError) as e:
        raise Refused(str(e)) from None
    job.deriver.report(sys.stderr)
    if not job.runs:
        raise Refused(f"no runs in {', '.join(paths)}")
    agg = job.aggregator
    missing = [c for c in group_by if c in agg.unseen]
    if missing:
        named = ", ".join(f"{(options or {}).get(m, '--group-by')} '{m}'" for m in missing)
        raise Refused(f"{named}: no run has that column; the "
                      f"config columns are {', '.join(agg.configs) or 'none'}, the others "
                      f"{', '.join(c for c in table.ID_COLUMNS if c not in ('Value', 'Metric'))}")
    groups = agg.rows()
    if not groups:
        raise Refused(f"no values of '{metric}' in these files; they have "
                      f"{', '.join(agg.metric_names) or 'no metric'}")
    return job, groups


def sweep(files, metric, x, out, variant=None, row=None, col=None, derive=(), combine="sum",
          kind="line"):
    """metric against config column x; one line (or bar group) per value of variant, one
    panel per (row, col) value pair. Kernels of a range are combined (sum by default)."""
    keys = [k for k in (x, variant, row, col) if k]
    try:
        functions = table.parse_combine(combine)
    except ValueError as e:
        raise Refused(str(e)) from None
    options = {k: o for k, o in ((col, "--col"), (row, "--row"), (variant, "--variant"),
                                 (x, "--x")) if k}
    _, groups = _groups(files, metric, derive, functions, keys, options=options)
    without = [g for g in groups if g.get(x) is None]
    groups = [g for g in groups if g.get(x) is not None]
    if without:
        print(f"{PROG}: note: {len(without)} group(s) have no {x} (e.g. "
              f"'{printable(without[0].get('Annotation', ''))}'); left out", file=sys.stderr)
    if not groups:
        raise Refused(f"--x {x}: no run of '{metric}' has a value of {x}")
    rkeys, ckeys = [row] if row else [], [col] if col else []
    rvals, cvals, cells = _plot.panels(groups, rkeys, ckeys)
    _check_panels(len(rvals) * len(cvals), f"{len(rvals)} --row values x {len(cvals)} "
                  "--col values")
    fig, axes = plt.subplots(len(rvals), len(cvals), squeeze=False,
                             figsize=(4.5 * len(cvals) + 1, 3.5 * len(rvals)))
    numeric = all(_number(g[x]) for g in groups)
    for i, rv in enumerate(rvals):
        for j, cv in enumerate(cvals):
            ax = axes[i][j]
            panel = cells.get((rv, cv), [])
            variants = list(OrderedDict.fromkeys(g.get(variant) for g in panel)) if variant else [None]
            series = []
            for v in variants:
                pts = sorted((g for g in panel if not variant or g.get(variant) == v),
                             key=lambda g: _order(g.get(x)))
                series.append((f"{variant}={v}" if variant else metric,
                               [(g[x], g["AvgValue"], g["CI95_Lower"], g["CI95_Upper"])
                                for g in pts]))
            # The x values of all the panel's variants, in order: a variant without some
            # of them has its bars over its own values, not shifted onto the others'.
            _plot.draw_panel(ax, series, kind, order=_order, numeric_x=numeric)
            title = ", ".join(f"{k}={v}" for k, v in zip(rkeys + ckeys, rv + cv))
            ax.set_title(title, fontsize=9)
            ax.set_xlabel(x)
            ax.set_ylabel(f"{metric} [{panel[0]['Unit']}]" if panel else metric)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8)
    return _save(fig, out)


def distribution(files, metric, out, group_by=None):
    """One panel per group, each on its own scale: the runs in recorded order (red when the
    group is not stable), the mean as a line and its 95 % CI as a band, RSD and the
    stability verdict in the title."""
    _, groups = _groups(files, metric, group_by=group_by or ["Annotation"])
    _check_panels(len(groups), "one per group of " + ",".join(group_by or ["Annotation"]))
    cols = min(len(groups), 3)
    rows = math.ceil(len(groups) / cols)
    fig, axes = plt.subplots(rows, cols, squeeze=False, figsize=(4 * cols, 3.2 * rows))
    for ax, g in zip([a for r in axes for a in r], groups):
        vals = g["values"]
        color = "tab:blue" if g["StableMeasurement"] else "tab:red"
        ax.scatter(range(len(vals)), vals, s=6, alpha=0.6, color=color)
        ax.axhline(g["AvgValue"], color="black", lw=1)
        if not math.isnan(g["CI95_Lower"]):
            ax.axhspan(g["CI95_Lower"], g["CI95_Upper"], color="black", alpha=0.2)
        label = ", ".join(str(g[k]) for k in (group_by or ["Annotation"]) if g.get(k) is not None)
        verdict = "stable" if g["StableMeasurement"] else "not stable"
        half = (100 * (g["CI95_Upper"] - g["AvgValue"]) / abs(g["AvgValue"])
                if g["AvgValue"] else math.nan)  # no relative width for a zero mean
        ax.set_title(f"{label}\nRSD {g['RelativeStdDevPct']:.1f} %, {verdict}, "
                     f"CI \u00b1{half:.2f} %", fontsize=8)
        ax.set_xlabel("run (recorded order)", fontsize=8)
        ax.set_ylabel(f"{metric} [{g['Unit']}]", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    for ax in [a for r in axes for a in r][len(groups):]:
        ax.set_visible(False)
    return _save(fig, out)


def roofline(files, out, flops=None, peak_flops=None, peak_bandwidth=None):
    """Achieved FLOP/s against arithmetic intensity, under the memory and compute roofs."""
    try:
        extra = [parse_derivation(f"rangeprof_flops={flops}")] if flops else []
    except ExprError as e:
        raise Refused(str(e).replace("rangeprof_flops=", "--flops ")) from None
    args = report.parser().parse_args(["--bound"])
    args.files = files
    try:
        job = report.scan_files(args, ["Annotation", "Kernel", "GPU"], None, extra)
    except report.Refused as e:
        raise Refused(str(e)) from None
    groups = job.aggregator.rows()
    devices = {d[0].get("name"): d[0] for d in job.devices}
    rows = [r for r in bound.analyse(report._by_kernel(groups), devices,
                                     flops_metric="rangeprof_flops" if flops else None,
                                     peak_flops=peak_flops, peak_bandwidth=peak_bandwidth)
            if r["ArithmeticIntensity"] > 0 and r["FLOPsPerSecond"] > 0]
    if not rows:
        raise Refused("no kernel has both FLOPs and DRAM bytes (record the roofline preset, "
                      "or give --flops)")
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    bw = rows[0]["PeakBytesPerSecond"]
    peaks = sorted({r["PeakFLOPsPerSecond"] for r in rows})
    # The roofs span the kernels and the ridge points, a decade either side.
    ais = [r["ArithmeticIntensity"] for r in rows] + [p / bw for p in peaks]
    lo, hi = min(ais) / 10, max(ais) * 10
    for peak in peaks:
        ridge = peak / bw
        xs = [lo, ridge, hi] if lo < ridge else [lo, hi]
        ax.plot(xs, [min(peak, x * bw) for x in xs], color="gray")
        ax.text(ridge * 1.3, peak * 1.1, f"{peak / 1e12:.0f} TFLOP/s", fontsize=7)
    for r in rows:
        marker = dict(compute="^", memory="o", latency="s").get(r["Verdict"].split("-")[0], "x")
        ax.scatter(r["ArithmeticIntensity"], r["FLOPsPerSecond"], marker=marker, alpha=0.8,
                   edgecolors="black", linewidths=0.5, label=f"{r['Annotation']} ({r['Verdict']})")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity [FLOP/byte DRAM]")
    ax.set_ylabel("achieved FLOP/s")
    ax.set_title(f"roofline, DRAM {bw / 1e12:.2f} TB/s", fontsize=9)
    ax.legend(fontsize=6)
    ax.grid(alpha=0.3, which="both")
    return _save(fig, out)


def ab(a, b, out, metric="gpu__time_duration.sum"):
    """Per kernel, the ratio B/A of the means with its 95 % CI, coloured by the verdict of
    rangeprof-compare (one scale for kernels of any size; 1 means no change)."""
    sides = []
    for label, path in (("A", a), ("B", b)):
        try:
            groups, runs = compare._side(path, [metric], f"{PROG} ({label})")
        except FileNotFoundError as e:
            raise Refused(f"{label}: {e}") from None
        if not runs:
            raise Refused(f"{label} ('{path}') has no runs")
        sides.append(groups)
    rows = compare.compare(*sides)
    if not rows:
        raise Refused(f"no kernel (NVTX path, name, grid) has '{metric}' in both A and B")
    if len(rows) > MAX_PANELS:
        raise Refused(f"{len(rows)} kernels to place side by side, more than the "
                      f"{MAX_PANELS} a figure shows readably; rangeprof-compare lists them")
    fig, ax = plt.subplots(figsize=(max(5, 1.3 * len(rows) + 2), 4))
    colors = {"same": "tab:gray", "improvement": "tab:green", "REGRESSION": "tab:red"}
    for i, r in enumerate(rows):
        low, high = r["RatioCI95_Lower"], r["RatioCI95_Upper"]
        err = None if math.isnan(low) else [[r["Ratio"] - low], [high - r["Ratio"]]]
        ax.errorbar([i], [r["Ratio"]], yerr=err, fmt="o", capsize=5,
                    color=colors.get(r["Verdict"], "tab:orange"))
        ax.annotate(f"{r['Ratio']:.3f}\n{r['Verdict']}", (i, r["Ratio"]), xytext=(8, 0),
                    textcoords="offset points", fontsize=7, va="center")
    ax.axhline(1.0, color="black", lw=0.8)
    ax.set_xticks(range(len(rows)), [r["Annotation"] for r in rows], fontsize=7, rotation=15)
    ax.set_xlim(-0.5, len(rows) - 0.2)
    ax.set_ylabel(f"B / A of mean {metric}")
    ax.set_title(f"A = {os.path.basename(str(a))}, B = {os.path.basename(str(b))}: "
                 "ratio and 95 % CI", fontsize=9)
    ax.grid(alpha=0.3)
    return _save(fig, out)


def _order(v):
    """A sort key for x values of any types: numbers by value, then text."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return (0, v, "")
    return (1, 0, str(v))


def parser():
    p = Parser(prog=PROG, description="PNG (or PDF, SVG ...: by the extension of -o) plots "
               "of rangeprof JSONL, read as rangeprof-report reads it.")
    add_version(p)
    sub = p.add_subparsers(dest="kind", required=True, metavar="KIND",
                           help="sweep | distribution | roofline | ab | by-rank (each has --help)")
    files_help = "JSONL files, directories (their *.jsonl) or glob patterns"
    output_help = ("output file; its extension picks the format (.png, .pdf, .svg, ...); "
                   "its directory must exist")
    s = sub.add_parser("sweep", help="a metric against a config column",
                       description="A metric's mean against a config column, with 95 % CI "
                       "bars; lines (or bars) per variant, panels per row and column value.")
    s.add_argument("files", nargs="+", help=files_help)
    s.add_argument("--metric", default="gpu__time_duration.sum",
                   help="metric to plot (measured or --derive'd; default %(default)s)")
    s.add_argument("--x", required=True, help="config column on the x axis (e.g. n)")
    s.add_argument("--variant", help="config column giving one line per value (e.g. dtype)")
    s.add_argument("--row", help="config column giving one panel row per value")
    s.add_argument("--col", help="config column giving one panel column per value")
    s.add_argument("--derive", action="append", default=[], metavar="NAME[UNIT]=EXPR",
                   help="metric computed per run, as in rangeprof-report (repeatable)")
    s.add_argument("--combine", default="sum", metavar="FUNC|METRIC=FUNC,...",
                   help="how the kernels of a range are combined per run, as in "
                   "rangeprof-report (default sum)")
    s.add_argument("--bar", action="store_true", help="bars instead of lines")
    s.add_argument("-o", "--output", required=True, help=output_help)
    d = sub.add_parser("distribution", help="run-to-run values with mean and CI",
                       description="The runs of each group in recorded order, the mean and "
                       "its 95 % CI; red where the group is not stable.")
    d.add_argument("files", nargs="+", help=files_help)
    d.add_argument("--metric", default="gpu__time_duration.sum",
                   help="metric to plot (default %(default)s)")
    d.add_argument("--group-by", default="Annotation",
                   help="comma-separated columns, one panel per group (default %(default)s)")
    d.add_argument("-o", "--output", required=True, help=output_help)
    r = sub.add_parser("roofline", help="roofline scatter of the kernels",
                       description="Achieved FLOP/s against arithmetic intensity under the "
                       "device's roofs (rangeprof-report --bound's analysis).")
    r.add_argument("files", nargs="+", help=files_help)
    r.add_argument("--flops", metavar="EXPR", help="FLOPs per run where the counters lack "
                   "them (e.g. '2*n**3' for a matmul on tensor cores)")
    positive = number(0, low_open=True)
    r.add_argument("--peak-flops", type=positive, metavar="FLOP/S",
                   help=f"peak FLOP/s ({positive.accepted}; default: the device's)")
    r.add_argument("--peak-bandwidth", type=positive, metavar="BYTES/S",
                   help=f"peak DRAM bytes/s ({positive.accepted}; default: the device's)")
    r.add_argument("-o", "--output", required=True, help=output_help)
    a = sub.add_parser("ab", help="A against B",
                       description="Per kernel, the ratio B/A of the means with its 95 % CI "
                       "and rangeprof-compare's verdict.")
    a.add_argument("a", help="JSONL of A (the baseline): file, directory or glob")
    a.add_argument("b", help="JSONL of B")
    a.add_argument("--metric", default="gpu__time_duration.sum",
                   help="metric to compare (default %(default)s)")
    a.add_argument("-o", "--output", required=True, help=output_help)
    k = sub.add_parser("by-rank", help="ranks compared (rangeprof-report --by-rank)",
                       description="Per rank: each kernel's mean in % of the other ranks' "
                       "(ranks that stand out ringed in red), the rank's SM clock and its "
                       "temperature (red: throttled runs). Files may be Parquet datasets.")
    k.add_argument("files", nargs="+", help=files_help + ", or Parquet datasets")
    k.add_argument("--metric", default="gpu__time_duration.sum",
                   help="metric to compare (default %(default)s)")
    k.add_argument("--alpha", type=number(0, 1, low_open=True, high_open=True), default=0.01,
                   help="family-wise significance level per kernel (default %(default)s)")
    k.add_argument("-o", "--output", required=True, help=output_help)
    return p


def _main(argv):
    args = parser().parse_args(argv)
    if plt is None:
        print(f"{PROG}: error: matplotlib is not installed: pip install matplotlib",
              file=sys.stderr)
        return 1
    try:
        check_output(args.output)
        if args.kind == "sweep":
            sweep(args.files, args.metric, args.x, args.output, args.variant, args.row, args.col,
                  args.derive, args.combine, "bar" if args.bar else "line")
        elif args.kind == "distribution":
            distribution(args.files, args.metric, args.output,
                         [c for c in args.group_by.split(",") if c] or ["Annotation"])
        elif args.kind == "roofline":
            roofline(args.files, args.output, args.flops, args.peak_flops, args.peak_bandwidth)
        elif args.kind == "by-rank":
            from rangeprof import ranks
            try:
                ranks.plot(args.files, args.output, args.metric, args.alpha)
            except (ValueError, FileNotFoundError) as e:
                raise Refused(str(e)) from None
        else:
            ab(args.a, args.b, args.output, args.metric)
    except Refused as e:
        print(f"{PROG}: error: {brief(e)}", file=sys.stderr)
        return 2
    print(args.output)
    return 0


def main(argv=None):
    return guarded(PROG, _main, argv)


if __name__ == "__main__":
    sys.exit(main())
