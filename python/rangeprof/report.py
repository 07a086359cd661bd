"""rangeprof/report.py - rangeprof-report: statistics per NVTX range, kernel and config
from rangeprof's JSON Lines, with derived metrics, kernels combined per range,
normalisation against a baseline, metric presets, bound analysis and bytes per range.
Standard library only, so that it runs wherever the JSONL lands.

    rangeprof-report run.*.jsonl --metric gpu__time_duration.sum
    rangeprof-report sweep.jsonl --derive 'tflops=2*n**3/gpu__time_duration.sum/1e3' --metric tflops
    rangeprof-report fusion.jsonl --bytes --normalize-against variant=unfused"""
import argparse
import sys
from collections import OrderedDict

from rangeprof import bound, presets, records, table
from rangeprof.expr import ExprError, parse_derivation
from rangeprof.output import add_version, write

STAT_COLUMNS = table.AGG_COLUMNS


def _split(values):
    return [x for v in values or [] for x in v.split(",") if x]


def parser():
    p = argparse.ArgumentParser(
        prog="rangeprof-report",
        description="Statistics of rangeprof JSON Lines per NVTX range, kernel and config "
        "(mean, stddev, min, median, max, Student-t 95 %% CI, RSD %%, stable).")
    add_version(p)
    p.add_argument("files", nargs="*", help="JSONL files, directories or glob patterns")
    p.add_argument("--metric", action="append", help="metric(s) to show (repeatable, or "
                   "comma-separated; derived names too); default: all")
    p.add_argument("--group-by", help="comma-separated columns to group by (default "
                   "Annotation,Kernel; config columns such as n or dtype, GPU, Host, Launch ...)")
    form = p.add_mutually_exclusive_group()
    form.add_argument("--csv", action="store_true", help="CSV on stdout")
    form.add_argument("--json", action="store_true", help="JSON on stdout")
    p.add_argument("--derive", action="append", default=[], metavar="NAME[UNIT]=EXPR",
                   help="metric computed per run from metrics and config columns, e.g. "
                   "'tflops=2*n**3/gpu__time_duration.sum/1e3' (repeatable)")
    p.add_argument("--combine", nargs="?", const="sum", metavar="FUNC|METRIC=FUNC,...",
                   help="one row per NVTX range: combine its kernels' metrics per run with "
                   f"{'|'.join(table.COMBINE_FUNCTIONS)} (default: sum; max for rates and %%)")
    p.add_argument("--normalize-against", metavar="ANNOTATION|KEY=VALUE",
                   help="add Normalized (mean / baseline) and Speedup (baseline / mean) "
                   "against a range, or against the config value of each group's peers")
    p.add_argument("--preset", choices=sorted(presets.PRESETS),
                   help="without files: print the metric set to record; with files: show "
                   "those metrics")
    p.add_argument("--bound", action="store_true", help="bound analysis per kernel "
                   "(roofline preset's metrics)")
    p.add_argument("--flops", metavar="EXPR", help="FLOPs per run for --bound when the "
                   "counters lack them (e.g. '2*n**3' for a matmul on tensor cores)")
    p.add_argument("--peak-flops", type=float, help="peak FLOP/s for --bound")
    p.add_argument("--peak-bandwidth", type=float, help="peak DRAM bytes/s for --bound")
    p.add_argument("--bytes", action="store_true", help="DRAM bytes moved per NVTX range "
                   "execution (kernels summed), e.g. to compare fused with unfused")
    return p


def load(files, args, extra_derivations=()):
    try:
        derivations = [parse_derivation(d) for d in args.derive] + list(extra_derivations)
        combine = table.parse_combine(args.combine) if args.combine else None
    except (ExprError, ValueError) as e:
        raise SystemExit(f"rangeprof-report: error: {e}")
    try:
        recs = records.read(files)
    except FileNotFoundError as e:
        raise SystemExit(f"rangeprof-report: error: {e}")
    try:
        return recs, table.build(recs, derivations=derivations, combine=combine,
                                 report=sys.stderr)
    except ExprError as e:
        raise SystemExit(f"rangeprof-report: error: {e}")


def _normalize(groups, args):
    """Normalises groups when --normalize-against was given; True if it was."""
    if not args.normalize_against:
        return False
    try:
        table.normalize(groups, args.normalize_against)
    except ExprError as e:
        raise SystemExit(f"rangeprof-report: error: {e}")
    return True


def _form(args):
    return "csv" if args.csv else "json" if args.json else "text"


def stats_report(args, out):
    recs, samples = load(args.files, args)
    rows = table.long_rows(samples)
    wanted = _split(args.metric) or (presets.PRESETS[args.preset][0] if args.preset else None)
    if wanted:
        rows = [r for r in rows if r["Metric"] in wanted]
        absent = [m for m in wanted if m not in {r["Metric"] for r in rows}]
        if absent:
            print(f"rangeprof-report: warning: no values of {', '.join(absent)} in these "
                  "files", file=sys.stderr)
    group_by = _split([args.group_by]) if args.group_by else table.DEFAULT_GROUP_BY
    groups = table.aggregate(rows, group_by)
    extra = ["Baseline", "Normalized", "Speedup"] if _normalize(groups, args) else []
    configs = [c for c in table.config_columns(rows) if c not in group_by]
    cols = [c for c in group_by if c != "Metric"] + ["Metric", "Unit", "Launches"] + STAT_COLUMNS
    if _form(args) != "text":
        cols = cols[:len(group_by)] + configs + cols[len(group_by):] + ["Reasons"] + extra
    else:
        cols += extra
    write(groups, cols, _form(args), out, widths=dict(Kernel=48, Annotation=40))
    if _form(args) == "text":
        unstable = sum(g["StableMeasurement"] is False for g in groups)
        if unstable:
            print(f"\n{unstable} of {len(groups)} rows not stable (SPEC: n >= 5, RSD <= 2 %, drift "
                  "<= 2 %, SM clock within 5 %); --csv or --json list the reasons", file=out)
    return 0


def _by_kernel(groups):
    out = OrderedDict()
    for g in groups:
        out.setdefault((g.get("Annotation"), g.get("Kernel"), g.get("GPU")), {})[g["Metric"]] = g
    return out


def bound_report(args, out):
    extra = [parse_derivation(f"rangeprof_flops={args.flops}")] if args.flops else []
    recs, samples = load(args.files, args, extra)
    groups = table.aggregate(table.long_rows(samples), ["Annotation", "Kernel", "GPU"])
    devices = {d[0].get("name"): d[0] for d in recs.devices}
    rows = bound.analyse(_by_kernel(groups), devices,
                         flops_metric="rangeprof_flops" if args.flops else None,
                         peak_flops=args.peak_flops, peak_bandwidth=args.peak_bandwidth)
    cols = ["Annotation", "Kernel", "TimeNs", "FLOPs", "Bytes", "ArithmeticIntensity",
            "FLOPsPerSecond", "BytesPerSecond", "PctPeakFLOPs", "PctPeakBandwidth",
            "SMThroughputPct", "MemoryThroughputPct", "TensorCores", "Verdict", "Basis"]
    if _form(args) != "text":
        cols[9:9] = ["PeakFLOPsPerSecond", "PeakBytesPerSecond"]
    write(rows, cols, _form(args), out, widths=dict(Kernel=40, Annotation=32))
    uncounted = sum(r["TensorCores"] and r["FLOPs"] != r["FLOPs"] for r in rows)
    if uncounted:
        print(f"rangeprof-report: note: {uncounted} kernel(s) on tensor cores, whose FLOPs no "
              "FMA counter sees: give --flops (e.g. '2*n**3' for an n x n matmul) to place "
              "them on the roofline", file=sys.stderr)
    return 0


def bytes_report(args, out):
    if not args.combine:
        args.combine = "sum"
    recs, samples = load(args.files, args, [parse_derivation(
        f"dram_bytes[byte]={presets.DRAM_READ}+{presets.DRAM_WRITE}")])
    rows = [r for r in table.long_rows(samples)
            if r["Metric"] in ("dram_bytes", presets.DRAM_READ, presets.DRAM_WRITE, presets.TIME)]
    groups = table.aggregate(rows, ["Annotation", "Metric"])
    extra = ["Normalized"] if _normalize(groups, args) else []
    kernels = {}
    for s in samples:
        kernels.setdefault(s["Annotation"], len(s["kernels"]))
    for g in groups:
        g["Kernels"] = kernels.get(g["Annotation"])
    cols = ["Annotation", "Kernels", "Metric", "Unit", "NumRuns", "AvgValue", "CI95_Lower",
            "CI95_Upper", "RelativeStdDevPct"] + extra
    write(groups, cols, _form(args), out, widths=dict(Annotation=48))
    return 0


def main(argv=None, out=sys.stdout):
    args = parser().parse_args(argv)
    if args.preset and not args.files:
        print(presets.describe(args.preset), file=out)
        return 0
    if not args.files:
        parser().error("no JSONL files given")
    if args.bound:
        return bound_report(args, out)
    if args.bytes:
        return bytes_report(args, out)
    return stats_report(args, out)


if __name__ == "__main__":
    sys.exit(main())
