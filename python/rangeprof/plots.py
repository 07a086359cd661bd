"""rangeprof/plots.py - PNG plots with matplotlib (the only module that needs it), and the
rangeprof-plot command:
  sweep         a metric against a config column, lines per variant, row/column panels,
                with 95 % CI bars (like nsight.analyze.plot);
  distribution  the run-to-run values of each group with mean and 95 % CI;
  roofline      achieved FLOP/s against arithmetic intensity under the device's roofs;
  ab            A against B per kernel: both means with CIs."""
import argparse
import math
import sys
from collections import OrderedDict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from rangeprof import bound, compare, records, report, table  # noqa: E402
from rangeprof.expr import parse_derivation  # noqa: E402


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
    """Each group's run values (points), mean and 95 % CI (bar), stable or not."""
    _, _, groups = _groups(files, metric, group_by=group_by or ["Annotation"])
    fig, ax = plt.subplots(figsize=(max(5, 1.2 * len(groups) + 2), 4))
    for i, g in enumerate(groups):
        vals = g["values"]
        jitter = [i + 0.25 * ((k * 0.618) % 1 - 0.5) for k in range(len(vals))]
        ax.scatter(jitter, vals, s=8, alpha=0.5, color="tab:blue" if g["StableMeasurement"] else "tab:red")
        if not math.isnan(g["CI95_Lower"]):
            ax.errorbar([i + 0.35], [g["AvgValue"]], yerr=[[g["AvgValue"] - g["CI95_Lower"]],
                        [g["CI95_Upper"] - g["AvgValue"]]], fmt="s", color="black", capsize=4)
    ax.set_xticks(range(len(groups)), [f"{g['Annotation']}\nRSD {g['RelativeStdDevPct']:.1f} %"
                                       for g in groups], fontsize=7, rotation=20)
    ax.set_ylabel(f"{metric} [{groups[0]['Unit']}]")
    ax.set_title("runs (red: not stable), mean and 95 % CI", fontsize=9)
    ax.grid(alpha=0.3)
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
    for peak in sorted({r["PeakFLOPsPerSecond"] for r in rows}):
        ridge = peak / bw
        xs = [ridge / 1000, ridge, ridge * 1000]
        ax.plot(xs, [min(peak, x * bw) for x in xs], color="gray")
        ax.text(ridge * 30, peak * 1.08, f"{peak / 1e12:.0f} TFLOP/s", fontsize=7)
    for r in rows:
        marker = dict(compute="^", memory="o", latency="s").get(r["Verdict"].split("-")[0], "x")
        ax.scatter(r["ArithmeticIntensity"], r["FLOPsPerSecond"], marker=marker,
                   label=f"{r['Annotation']} ({r['Verdict']})")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity [FLOP/byte DRAM]")
    ax.set_ylabel("achieved FLOP/s")
    ax.set_title(f"roofline, DRAM {bw / 1e12:.2f} TB/s", fontsize=9)
    ax.legend(fontsize=6)
    ax.grid(alpha=0.3, which="both")
    return _save(fig, out)


def ab(a, b, out, metric="gpu__time_duration.sum"):
    """Per kernel, A's and B's means with 95 % CIs, side by side, ratio in the labels."""
    rows = compare.compare(compare._groups(a, [metric]), compare._groups(b, [metric]))
    if not rows:
        raise SystemExit("rangeprof-plot: error: nothing in both A and B")
    fig, ax = plt.subplots(figsize=(max(5, 1.2 * len(rows) + 2), 4))
    ga, gb = compare._groups(a, [metric]), compare._groups(b, [metric])
    for i, r in enumerate(rows):
        key = (r["Annotation"], r["Kernel"], r["Grid"], metric)
        for off, g, color in ((-0.15, ga[key], "tab:blue"), (0.15, gb[key], "tab:orange")):
            s = table.stats.summarize(g["values"])
            err = [[s["mean"] - s["ci95_low"]], [s["ci95_high"] - s["mean"]]] if s["n"] > 1 else None
            ax.errorbar([i + off], [s["mean"]], yerr=err, fmt="o", color=color, capsize=4)
    ax.set_xticks(range(len(rows)), [f"{r['Annotation']}\nB/A {r['Ratio']:.3f} {r['Verdict']}"
                                     for r in rows], fontsize=7, rotation=20)
    ax.set_ylabel(f"{metric} [{rows[0]['Unit']}]")
    ax.set_title("A (blue) against B (orange), mean and 95 % CI", fontsize=9)
    ax.grid(alpha=0.3)
    return _save(fig, out)


def main(argv=None):
    p = argparse.ArgumentParser(prog="rangeprof-plot", description="PNG plots of rangeprof JSONL")
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
