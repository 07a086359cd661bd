"""rangeprof/report.py - rangeprof-report: statistics per NVTX range, kernel and config
from rangeprof's JSON Lines, with derived metrics, kernels combined per range,
normalisation against a baseline, metric presets, bound analysis and bytes per range.
Standard library only, so that it runs wherever the JSONL lands. The files are streamed
(rangeprof/scan.py): memory grows with the groups and the values kept for their medians,
never with whole records.

    rangeprof-report run.*.jsonl --metric gpu__time_duration.sum
    rangeprof-report sweep.jsonl --derive 'tflops=2*n**3/gpu__time_duration.sum/1e3' --metric tflops
    rangeprof-report fusion.jsonl --bytes --normalize-against variant=unfused"""
import sys

from rangeprof import bound, presets, records, scan, table
from rangeprof.expr import ExprError, parse_derivation
from rangeprof.output import Parser, add_version, brief, guarded, number, write

PROG = "rangeprof-report"
STAT_COLUMNS = table.AGG_COLUMNS
# Runs on different GPUs are never pooled unless --group-by says so: by default a group
# holds one GPU, as rangeprof.summarize's do, and the GPU column is shown where the
# files hold more than one.
DEFAULT_GROUP_BY = ["Annotation", "Kernel", "GPU", "Metric"]


class Refused(Exception):
    """An argument that the files show to be wrong (exit 2)."""
    status = 2


class NoRuns(Refused):
    """Nothing to report: no run in the files (exit 1)."""
    status = 1


def _split(values):
    return [x for v in values or [] for x in v.split(",") if x]


def parser():
    p = Parser(
        prog=PROG,
        description="Statistics of rangeprof JSON Lines per NVTX range, kernel and config "
        "(mean, stddev, min, median, max, Student-t 95 % CI, RSD %, stable), computed from "
        "the run records (summary records are not read). Bad lines are reported as "
        "FILE:LINE and skipped; big files are read by several processes.")
    add_version(p)
    p.add_argument("files", nargs="*", help="JSONL files, directories (their *.jsonl) or "
                   "glob patterns")
    p.add_argument("--metric", action="append", help="metric(s) to show (repeatable, or "
                   "comma-separated; derived names too); default: all")
    p.add_argument("--group-by", help="comma-separated columns to group by (default "
                   "Annotation,Kernel,GPU: runs on different GPUs are not pooled, and the GPU "
                   "column is shown where there are several; config columns such as n or "
                   "dtype, GPU, Host, Launch ...); a column no run has is refused")
    form = p.add_mutually_exclusive_group()
    form.add_argument("--csv", action="store_true", help="CSV on stdout (with the config "
                      "columns and the reasons a row is not stable)")
    form.add_argument("--json", action="store_true", help="JSON on stdout (as --csv; NaN "
                      "as null)")
    p.add_argument("--derive", action="append", default=[], metavar="NAME[UNIT]=EXPR",
                   help="metric computed per run from metrics and config columns, e.g. "
                   "'tflops=2*n**3/gpu__time_duration.sum/1e3' (repeatable); runs where it "
                   "is undefined (a division by zero ...) are counted on stderr and left "
                   "out; a NAME that is a measured metric is refused")
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
    positive = number(0, low_open=True)
    p.add_argument("--peak-flops", type=positive, metavar="FLOP/S",
                   help=f"peak FLOP/s for --bound ({positive.accepted}; default: the "
                   "device's, from its name, or from its SMs, clock and compute "
                   "capability where its FP32 lanes per SM are known)")
    p.add_argument("--peak-bandwidth", type=positive, metavar="BYTES/S",
                   help=f"peak DRAM bytes/s for --bound ({positive.accepted}; default: the "
                   "device's)")
    p.add_argument("--bytes", action="store_true", help="DRAM bytes moved per NVTX range "
                   "execution (kernels summed), e.g. to compare fused with unfused")
    # Many ranks and hosts (rangeprof/dataset.py, rangeprof/ranks.py; need pandas, pyarrow).
    p.add_argument("--to-parquet", metavar="DIR", help="convert the files into the Parquet "
                   "dataset DIR (partitioned by job and host; files converted before are "
                   "passed over) instead of reporting")
    p.add_argument("--by-rank", action="store_true", help="compare ranks: per kernel and "
                   "config, the spread across ranks against the spread across runs, the "
                   "ranks that stand out (Welch t against the others, Holm over ranks) and "
                   "their SM clock, temperature and throttle reasons; files may be datasets")
    p.add_argument("--alpha", type=number(0, 1, low_open=True, high_open=True), default=0.01,
                   help="--by-rank: family-wise significance level per kernel (default 0.01)")
    return p


def _derivations(args, extra=()):
    try:
        return [parse_derivation(d) for d in args.derive] + list(extra)
    except ExprError as e:
        raise Refused(str(e)) from None


def scan_files(args, group_by, metrics=None, extra_derivations=()):
    """The files of args streamed into a table.StatsJob; bad lines said on stderr."""
    derivations = _derivations(args, extra_derivations)
    try:
        combine = table.parse_combine(args.combine) if args.combine else None
        table.Deriver(derivations)  # two derivations of one name: refused before reading
    except (ExprError, ValueError) as e:
        raise Refused(str(e)) from None
    try:
        files = records.expand(args.files)
    except FileNotFoundError as e:
        raise Refused(str(e)) from None
    try:
        job, _ = scan.run(lambda: table.StatsJob(group_by, metrics, derivations, combine),
                          files, PROG, at_sessions=combine is not None)
    except ExprError as e:
        raise Refused(str(e)) from None
    job.deriver.report(sys.stderr)
    if not job.runs:
        raise NoRuns(f"no runs in {', '.join(files)}: nothing to report")
    missing = [c for c in group_by if c in job.aggregator.unseen]
    if missing:
        columns = ([c for c in table.ID_COLUMNS if c != "Value"]
                   + list(job.aggregator.configs))
        raise Refused(f"--group-by '{','.join(group_by)}': no run has a column "
                      f"{', '.join(repr(m) for m in missing)}; the columns are "
                      f"{', '.join(columns)}")
    return job


def _normalize(groups, args):
    """Normalises groups when --normalize-against was given; True if it was."""
    if not args.normalize_against:
        return False
    try:
        table.normalize(groups, args.normalize_against)
    except ExprError as e:
        raise Refused(str(e)) from None
    return True


def _form(args):
    return "csv" if args.csv else "json" if args.json else "text"


def _wanted_present(job, wanted):
    absent = [m for m in wanted if m not in job.aggregator.metric_names]
    if absent:
        print(f"{PROG}: warning: no values of {brief(', '.join(absent))} in these files",
              file=sys.stderr)
    if len(absent) == len(wanted):
        raise Refused(f"--metric: none of {', '.join(wanted)} is in these files; they have "
                      f"{', '.join(job.aggregator.metric_names)}")


def stats_report(args, out):
    wanted = _split(args.metric) or (presets.PRESETS[args.preset][0] if args.preset else None)
    group_by = _split([args.group_by]) if args.group_by else list(DEFAULT_GROUP_BY)
    job = scan_files(args, group_by, wanted)
    if wanted:
        _wanted_present(job, wanted)
    group_by = job.aggregator.group_by
    groups = job.aggregator.rows()
    if not args.group_by:
        group_by = _shown(group_by, groups)
    extra = ["Baseline", "Normalized", "Speedup"] if _normalize(groups, args) else []
    configs = [c for c in job.aggregator.configs if c not in group_by]
    if _form(args) != "text":
        configs = table.capped_configs(configs, ", ".join(args.files), sys.stderr,
                                       "group by the ones you need (--group-by)")
    cols = [c for c in group_by if c != "Metric"] + ["Metric", "Unit", "Launches"] + STAT_COLUMNS
    if _form(args) != "text":
        # The config columns after the group_by ones (Metric, always there, among them).
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


def _shown(group_by, groups):
    """The default group_by columns a table shows: GPU only where the groups hold more
    than one."""
    if len({g.get("GPU") for g in groups}) > 1:
        return group_by
    return [c for c in group_by if c != "GPU"]


def _by_kernel(groups):
    out = {}
    for g in groups:
        out.setdefault((g.get("Annotation"), g.get("Kernel"), g.get("GPU")), {})[g["Metric"]] = g
    return out


def bound_report(args, out):
    try:
        extra = [parse_derivation(f"rangeprof_flops={args.flops}")] if args.flops else []
    except ExprError as e:
        raise Refused(str(e).replace("rangeprof_flops=", "--flops ")) from None
    job = scan_files(args, ["Annotation", "Kernel", "GPU"], None, extra)
    groups = job.aggregator.rows()
    devices = {d[0].get("name"): d[0] for d in job.devices}
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
        print(f"{PROG}: note: {uncounted} kernel(s) on tensor cores, whose FLOPs no "
              "FMA counter sees: give --flops (e.g. '2*n**3' for an n x n matmul) to place "
              "them on the roofline", file=sys.stderr)
    return 0


def bytes_report(args, out):
    if not args.combine:
        args.combine = "sum"
    metrics = ("dram_bytes", presets.DRAM_READ, presets.DRAM_WRITE, presets.TIME)
    job = scan_files(args, ["Annotation", "GPU", "Metric"], metrics, [parse_derivation(
        f"dram_bytes[byte]={presets.DRAM_READ}+{presets.DRAM_WRITE}")])
    groups = job.aggregator.rows()
    extra = ["Normalized"] if _normalize(groups, args) else []
    for g in groups:
        g["Kernels"] = job.kernels.get(g["Annotation"])
    cols = ["Annotation"] + [c for c in _shown(["GPU"], groups)] + [
        "Kernels", "Metric", "Unit", "NumRuns", "AvgValue", "CI95_Lower", "CI95_Upper",
        "RelativeStdDevPct"] + extra
    write(groups, cols, _form(args), out, widths=dict(Annotation=48))
    return 0


def _main(argv, out):
    p = parser()
    args = p.parse_args(argv)
    if args.preset and not args.files:
        print(presets.describe(args.preset), file=out)
        return 0
    if not args.files:
        p.error("no JSONL files given")
    try:
        if args.to_parquet:
            from rangeprof import dataset
            return dataset.convert_main(args, out, PROG)
        if args.by_rank:
            from rangeprof import ranks
            return ranks.report_main(args, out, PROG)
        if args.bound:
            return bound_report(args, out)
        if args.bytes:
            return bytes_report(args, out)
        return stats_report(args, out)
    except Refused as e:
        print(f"{PROG}: error: {brief(e)}", file=sys.stderr)
        return e.status


def main(argv=None, out=sys.stdout):
    return guarded(PROG, _main, argv, out)


if __name__ == "__main__":
    sys.exit(main())
