"""rangeprof/plots.py - PNG plots with matplotlib (the only module that needs it), and the
rangeprof-plot command:
  sweep         a metric against a config column, lines per variant, row/column panels,
                with 95 % CI bars (like nsight.analyze.plot);
  distribution  the run-to-run values of each group, one panel each, with mean and 95 % CI;
  roofline      achieved FLOP/s against arithmetic intensity under the device's roofs;
  ab            A against B per kernel: the ratio of the means with its CI and verdict."""
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

from rangeprof import bound, compare, records, report, table  # noqa: E402
from rangeprof.expr import parse_derivation  # noqa: E402
from rangeprof.output import add_version  # noqa: E402


def _save(fig, out):
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def _groups(files, metric, derive=(), combine=None, group_by=None):
    recs = records.read(files)
    samples = table.build(recs, derivations=[parse_derivation(d) for d in derive],
                          combine=combine, report=sys.stderr)
    rows = [r for r in table.long_rows(samples) if r["Metric"] == metric]
    if not rows:
        raise SystemExit(f"rangeprof-plot: error: no values of '{metric}' in these files")
    return recs, rows, table.aggregate(rows, group_by or ["Annotation", "Kernel"])


def sweep(files, metric, x, out, variant=None, row=None, col=None, derive=(), combine="sum",
          kind="line"):
    """metric against config column x; one line (or bar group) per value of variant, one
    panel per (row, col) value pair. Kernels of a range are combined (sum by default)."""
    keys = [k for k in (x, variant, row, col) if k]
    _, rows, groups = _groups(files, metric, derive, table.parse_combine(combine), keys)
    rvals = list(OrderedDict.fromkeys(g.get(row) for g in groups)) if row else [None]
    cvals = list(OrderedDict.fromkeys(g.get(col) for g in groups)) if col else [None]
    fig, axes = plt.subplots(len(rvals), len(cvals), squeeze=False,
                             figsize=(4.5 * len(cvals) + 1, 3.5 * len(rvals)))
    for i, rv in enumerate(rvals):
        for j, cv in enumerate(cvals):
            ax = axes[i][j]
            panel = [g for g in groups if (not row or g.get(row) == rv) and (not col or g.get(col) == cv)]
            variants = list(OrderedDict.fromkeys(g.get(variant) for g in panel)) if variant else [None]
            for k, v in enumerate(variants):
                pts = sorted((g for g in panel if not variant or g.get(variant) == v),
                             key=lambda g: g.get(x))
                xs = [g.get(x) for g in pts]
                ys = [g["AvgValue"] for g in pts]
                err = [[g["AvgValue"] - g["CI95_Lower"] if not math.isnan(g["CI95_Lower"]) else 0 for g in pts],
                       [g["CI95_Upper"] - g["AvgValue"] if not math.isnan(g["CI95_Upper"]) else 0 for g in pts]]
                label = f"{variant}={v}" if variant else metric
                if kind == "bar":
                    width = 0.8 / len(variants)
                    pos = [p + k * width for p in range(len(xs))]
                    ax.bar(pos, ys, width, yerr=err, label=label, capsize=3)
                    ax.set_xticks([p + 0.4 - width / 2 for p in range(len(xs))], [str(v) for v in xs])
                else:
                    ax.errorbar(xs, ys, yerr=err, marker="o", capsize=3, label=label)
            title = ", ".join(f"{k}={v}" for k, v in ((row, rv), (col, cv)) if k)
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
    _, _, groups = _groups(files, metric, group_by=group_by or ["Annotation"])
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
        ax.set_title(f"{label}\nRSD {g['RelativeStdDevPct']:.1f} %, {verdict}, "
                     f"CI \u00b1{(g['CI95_Upper'] - g['AvgValue']) / g['AvgValue'] * 100:.2f} %",
                     fontsize=8)
        ax.set_xlabel("run (recorded order)", fontsize=8)
        ax.set_ylabel(f"{metric} [{g['Unit']}]", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    for ax in [a for r in axes for a in r][len(groups):]:
        ax.set_visible(False)
    return _save(fig, out)


def roofline(files, out, flops=None, peak_flops=None, peak_bandwidth=None):
    """Achieved FLOP/s against arithmetic intensity, under the memory and compute roofs."""
    args = report.parser().parse_args(list(files) + ["--bound"] + (["--flops", flops] if flops else []))
    extra = [parse_derivation(f"rangeprof_flops={flops}")] if flops else []
    recs, samples = report.load(args.files, args, extra)
    groups = table.aggregate(table.long_rows(samples), ["Annotation", "Kernel", "GPU"])
    devices = {d[0].get("name"): d[0] for d in recs.devices}
    rows = [r for r in bound.analyse(report._by_kernel(groups), devices,
                                     flops_metric="rangeprof_flops" if flops else None,
                                     peak_flops=peak_flops, peak_bandwidth=peak_bandwidth)
            if r["ArithmeticIntensity"] > 0 and r["FLOPsPerSecond"] > 0]
    if not rows:
        raise SystemExit("rangeprof-plot: error: no kernel has both FLOPs and DRAM bytes "
                         "(record the roofline preset, or give --flops)")
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
    rows = compare.compare(compare._groups(a, [metric]), compare._groups(b, [metric]))
    if not rows:
        raise SystemExit("rangeprof-plot: error: nothing in both A and B")
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


def main(argv=None):
    p = argparse.ArgumentParser(prog="rangeprof-plot", description="PNG plots of rangeprof JSONL")
    add_version(p)
    sub = p.add_subparsers(dest="kind", required=True)
    s = sub.add_parser("sweep", help="a metric against a config column")
    s.add_argument("files", nargs="+")
    s.add_argument("--metric", default="gpu__time_duration.sum")
    s.add_argument("--x", required=True, help="config column on the x axis (e.g. n)")
    s.add_argument("--variant", help="config column giving one line per value (e.g. dtype)")
    s.add_argument("--row", help="config column giving one panel row per value")
    s.add_argument("--col", help="config column giving one panel column per value")
    s.add_argument("--derive", action="append", default=[])
    s.add_argument("--combine", default="sum")
    s.add_argument("--bar", action="store_true", help="bars instead of lines")
    s.add_argument("-o", "--output", required=True)
    d = sub.add_parser("distribution", help="run-to-run values with mean and CI")
    d.add_argument("files", nargs="+")
    d.add_argument("--metric", default="gpu__time_duration.sum")
    d.add_argument("--group-by", default="Annotation")
    d.add_argument("-o", "--output", required=True)
    r = sub.add_parser("roofline", help="roofline scatter of the kernels")
    r.add_argument("files", nargs="+")
    r.add_argument("--flops")
    r.add_argument("--peak-flops", type=float)
    r.add_argument("--peak-bandwidth", type=float)
    r.add_argument("-o", "--output", required=True)
    a = sub.add_parser("ab", help="A against B")
    a.add_argument("a")
    a.add_argument("b")
    a.add_argument("--metric", default="gpu__time_duration.sum")
    a.add_argument("-o", "--output", required=True)
    args = p.parse_args(argv)
    if plt is None:
        print("rangeprof-plot: error: matplotlib is not installed: pip install "
              "'rangeprof[plots]' (or pip install matplotlib)", file=sys.stderr)
        return 1
    if args.kind == "sweep":
        sweep(args.files, args.metric, args.x, args.output, args.variant, args.row, args.col,
              args.derive, args.combine, "bar" if args.bar else "line")
    elif args.kind == "distribution":
        distribution(args.files, args.metric, args.output, args.group_by.split(","))
    elif args.kind == "roofline":
        roofline(args.files, args.output, args.flops, args.peak_flops, args.peak_bandwidth)
    else:
        ab(args.a, args.b, args.output, args.metric)
    print(args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
