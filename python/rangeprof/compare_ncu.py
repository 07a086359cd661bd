"""rangeprof/compare_ncu.py - rangeprof-compare-ncu: per kernel and metric, the median of ncu's
values (from 'ncu --csv --page raw' output, or from running ncu on the same command) next to
rangeprof's, with the difference in percent. Kernel names are matched despite the two
demanglers' spellings. A range workload of rangeprof (--replay-mode range, workload
"range") is matched with ncu's results for the same NVTX range under its own --replay-mode
range, by the range's NVTX path (see _range_match). Standard library only.

    rangeprof-compare-ncu run.jsonl ncu.csv
    rangeprof-compare-ncu run.jsonl --run -- python3 train.py"""
import csv
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from array import array
from collections import OrderedDict

from rangeprof import records
from rangeprof._control import without_injection
from rangeprof.names import canonical_kernel
from rangeprof.output import Parser, add_version, brief, guarded, said, write
from rangeprof.units import UnitError, conversion_factor, parse_unit

PROG = "rangeprof-compare-ncu"


def _grid(text):
    """'x,y,z' of ncu's '(x, y, z)' grid cell (the JSONL's form), else the product of the
    numbers in it; '' when it holds none."""
    nums = [int(x) for x in re.findall(r"\d{1,19}", str(text))]
    return ",".join(str(x) for x in nums) if len(nums) == 3 else str(math.prod(nums) if nums else "")


# ncu --nvtx writes a launch's push/pop stack in one column, e.g.
#   1419  "<default domain>:vadd n=4096:none:none:none:none:none:none"
# one quoted 'Domain:Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg' per open range,
# outermost first; the range text may itself hold ':'.
_NVTX_COLUMN = "thread Domain:Push/Pop_Range"
_NVTX_TRAILING_FIELDS = 6


def nvtx_path(cell):
    """The JSONL's nvtx_path ('outer/inner') of ncu's push/pop column, or None if empty."""
    texts = []
    for entry in re.findall(r'"([^"]*)"', cell or ""):
        fields = entry.split(":")
        if len(fields) >= 2 + _NVTX_TRAILING_FIELDS:
            texts.append(":".join(fields[1:len(fields) - _NVTX_TRAILING_FIELDS]))
    return "/".join(texts) if texts else None


class NcuError(Exception):
    """What stops the comparison: ncu cannot be run, its CSV cannot be used."""


class NcuRows(OrderedDict):
    """read_ncu_csv's result: {(NVTX path or None, canonical kernel, grid): {metric:
    ([values], unit)}}, with by_path {NVTX path: [keys]} of the rows without a grid (no
    launch configuration: ncu's range results) for _range_match."""

    def __init__(self):
        super().__init__()
        self.by_path = {}


# The 'Kernel Name' cell of every result row that ncu --replay-mode range wrote into the
# recorded files (python/tests/fixtures/recorded_range/): literally 'range', whatever the
# range's name.
_RANGE_RESULT = "range"


class RangeName(str):
    """The kernel part of read_rangeprof's key for a range workload: the NVTX range's
    name (its record's range.name). A str, so that the key prints and sorts as before;
    match() tells it from a kernel name by its type."""
    __slots__ = ()


def read_ncu_csv(path, bad=None):
    """{(NVTX path or None, canonical kernel, grid 'x,y,z'): {metric: ([values], unit)}}
    from ncu's raw page CSV (lines before the header, such as '==PROF==' lines, are
    skipped), read a row at a time. The NVTX path is None where ncu ran without --nvtx.
    A row the csv module cannot read (a field over its 128 KiB limit) is reported in bad
    (a list of 'FILE:LINE: reason' strings, when given) and skipped; cells that are not
    finite numbers ('n/a') are left out. OSError, or NcuError when there is no header.
    The result is an NcuRows: ncu --replay-mode range writes one row per range result
    instead of one per kernel; those rows are read as any other (their 'Kernel Name' is
    'range', they have no grid: see _range_match), and found through .by_path."""
    line_number = [0]

    def lines(f):
        for line in f:
            line_number[0] += 1
            if not line.startswith("=="):
                yield line
    out = NcuRows()
    with open(path, encoding="utf-8", errors="replace", newline="") as f:
        reader = csv.reader(lines(f))
        header = units = None
        ki = gi = ni = None
        metric_columns = []
        while True:
            try:
                row = next(reader)
            except StopIteration:
                break
            except csv.Error as e:
                if bad is not None:
                    bad.append(f"{path}:{line_number[0]}: {e}; row skipped")
                continue
            if header is None:
                if "Kernel Name" in row:
                    header = row
                    ki = header.index("Kernel Name")
                    gi = header.index("Grid Size") if "Grid Size" in header else None
                    ni = next((i for i, h in enumerate(header) if h.startswith(_NVTX_COLUMN)), None)
                    metric_columns = [(i, name) for i, name in enumerate(header) if "__" in name]
                continue
            if units is None:  # the line after the header: each column's unit
                units = row
                continue
            if len(row) <= ki:
                continue
            grid = _grid(row[gi]) if gi is not None and gi < len(row) else ""
            path_ = nvtx_path(row[ni]) if ni is not None and ni < len(row) else None
            key = (path_, canonical_kernel(row[ki]), grid)
            entry = out.get(key)
            if entry is None:
                entry = out[key] = {}
                if not grid:
                    out.by_path.setdefault(path_, []).append(key)
            for i, name in metric_columns:
                if i >= len(row) or not row[i]:
                    continue
                try:
                    v = float(row[i].replace(",", ""))
                except ValueError:
                    continue
                if not math.isfinite(v):
                    continue
                entry.setdefault(name, ([], units[i] if i < len(units) else ""))[0].append(v)
    if header is None:
        raise NcuError(f"{path}: no 'Kernel Name' column: not 'ncu --csv --page raw' output")
    return out


def read_rangeprof(paths):
    """The recording's runs as {(NVTX path, canonical kernel, grid): entry}, entry holding
    the JSONL's own kernel name and {metric: ([values], unit)}; streamed (a big file's
    records are not kept), with its sessions in a records.Records. Bad lines are said on
    stderr. A range workload's key is (NVTX path, RangeName(its range's name), '')."""
    recs = records.Records()
    out = OrderedDict()
    reader = records.Reader()
    for path in records.expand(paths):
        for kind, obj in reader.records(path):
            if kind == "session":
                recs.sessions.append(obj)
            if kind != "run":
                continue
            rec = obj.record
            rng = obj.range
            if rec.get("workload") == "range" and rng is not None \
                    and isinstance(rng.get("name"), str):
                key = (obj.annotation, RangeName(rng["name"]), "")
            else:
                key = (obj.annotation, canonical_kernel(rec["kernel"]),
                       ",".join(str(x) for x in rec.get("grid") or []))
            entry = out.get(key)
            if entry is None:
                entry = out[key] = dict(kernel=rec["kernel"], annotation=obj.annotation,
                                        metrics={})
            units = rec.get("units") or {}
            for metric, v in rec["metrics"].items():
                if v is not None:
                    entry["metrics"].setdefault(
                        metric, (array("d"), units.get(metric) or ""))[0].append(float(v))
    recs.files, recs.bad_lines, recs.bad_count = reader.files, reader.bad_lines, reader.bad_count
    reader.report_bad(sys.stderr)
    return recs, out


def match(key, ncu):
    """ncu's entry for a rangeprof key: same NVTX path, kernel and grid; or, where ncu ran
    without --nvtx, same kernel and grid; for a range workload, _range_match. None if
    there is none."""
    if isinstance(key[1], RangeName):
        return _range_match(key, ncu)
    return ncu.get(key) if key in ncu else ncu.get((None,) + key[1:])


def _range_match(key, ncu):
    """ncu's result for a rangeprof range workload (key: its NVTX path, RangeName, ''):
    the rows without a grid whose NVTX path column is the range's path, the range itself
    innermost as in rangeprof's nvtx_path, and whose 'Kernel Name' is 'range' (what ncu
    wrote) or the range's name (what its documentation suggests; no recorded file has it).
    Their values are pooled (one row per occurrence of the range); None if there is none.

    The shape is that of the files in python/tests/fixtures/recorded_range/ (their README
    says how they were made): ncu 2025.3.1 on an H200, 'ncu --replay-mode range --nvtx
    --nvtx-include "MODE/" --csv --page raw' on tests/gpu/range_replay.cu and
    tests/gpu/range_torch.py. Each occurrence of a range is one row: 'Kernel Name' holds
    'range' literally, the push/pop column the range's own entry (e.g. '1449
    "<default domain>:mlp:none:none:none:none:none:none"'), Stream 'n/a', and there is
    no Grid Size column. Those ranges were all outermost: a nested range's stack
    ('outer/chain') is taken to list the ranges around it first, as nvtx_path reads a
    kernel's, which no recorded file shows (python/tests/test_ncu_range.py checks it on
    an edited copy only). NVTX start/end ranges, which rangeprof also measures, were not
    recorded: the CSV's 'Id:Domain:Start/Stop_Range' column (empty in every recorded
    row) is not read, so a start/end range workload is not matched (nor are ncu's
    cudaProfilerStart/Stop ranges)."""
    path, name = key[0], str(key[1])
    by_path = getattr(ncu, "by_path", None)
    if by_path is None:  # a plain dict (compare() called with a hand-made ncu side)
        candidates = [k for k in ncu if k[0] == path and not k[2]]
    else:
        candidates = by_path.get(path, [])
    names = (_RANGE_RESULT, canonical_kernel(name))
    keys = [k for k in candidates if k[1] in names]
    if not keys:
        return None
    if len(keys) == 1:
        return ncu[keys[0]]
    pooled = {}
    for k in keys:
        for metric, (values, unit) in ncu[k].items():
            pooled.setdefault(metric, ([], unit))[0].extend(values)
    return pooled


def compare(rp, ncu, skipped=None):
    """One row per kernel and metric in both. A metric whose units differ in a way no
    conversion bridges (ncu's 'ns' against the JSONL's 'byte', a unit one side lacks or
    that is not known) is not compared: (key, metric, why) goes to skipped when given."""
    rows = []
    for key, entry in rp.items():
        theirs = match(key, ncu)
        if theirs is None:
            continue
        for metric, (values, unit) in entry["metrics"].items():
            if metric not in theirs:
                continue
            nvals, nunit = theirs[metric]
            why = None
            if nunit == unit:
                factor = 1.0
            elif not nunit or not unit:
                why = (f"ncu gives no unit and the JSONL '{unit}'" if not nunit else
                       f"ncu gives '{nunit}' and the JSONL no unit")
            else:
                try:
                    factor = conversion_factor(parse_unit(nunit), parse_unit(unit))
                except UnitError:
                    why = f"ncu's unit '{nunit}' cannot be converted to the JSONL's '{unit}'"
            if why is None and not math.isfinite(factor):
                why = f"no finite factor from '{nunit}' to '{unit}'"
            if why is not None:
                if skipped is not None:
                    skipped.append((entry, key, metric, why))
                continue
            a = statistics.median(nvals) * factor
            b = statistics.median(values)
            diff = 100 * (b - a) / a if a else (0.0 if b == 0 else math.inf)
            rows.append(dict(Annotation=entry["annotation"], Kernel=entry["kernel"], Grid=key[2],
                             Metric=metric, Unit=unit, NcuRuns=len(nvals), NcuMedian=a,
                             RangeprofRuns=len(values), RangeprofMedian=b, DiffPct=diff))
    return rows


def find_ncu(ncu="ncu"):
    """The ncu executable: ncu as a path or on PATH, else the CUDA toolkit's when ncu is
    the default name; NcuError names where it looked."""
    exe = shutil.which(ncu)
    if exe:
        return exe
    fallback = "/usr/local/cuda/bin/ncu"
    if ncu == "ncu" and os.access(fallback, os.X_OK):
        return fallback
    where = "on PATH nor at " + fallback if ncu == "ncu" else "(not an executable file)"
    raise NcuError(f"--ncu '{ncu}': not found {where}; install Nsight Compute or give "
                   "--ncu PATH")


def run_ncu(recs, command, ncu="ncu"):
    """Runs ncu on command with the metrics and NVTX includes of the recording's session,
    never locking clocks; returns the CSV's path (a temporary file: the caller removes
    it). NcuError, and no file left behind, where ncu cannot be found or started; ncu's
    own failure (a non-zero exit status) is said on stderr."""
    options = (recs.sessions[0].get("options") or {}) if recs.sessions else {}
    metrics = options.get("metrics") or "gpu__time_duration.sum"
    exe = find_ncu(ncu)
    fd, path = tempfile.mkstemp(suffix=".ncu.csv")
    os.close(fd)
    argv = [exe, "--clock-control", "none", "--cache-control", "all", "--csv", "--page", "raw",
            "--metrics", metrics, "--log-file", path]
    if options.get("replay_mode") == "range":
        # Each selected NVTX range as one result, as rangeprof measured it (ncu takes the
        # ranges from the same --nvtx-include expressions).
        argv += ["--replay-mode", "range"]
    includes = options.get("nvtx_include") or []
    if includes:
        argv.append("--nvtx")
        for inc in includes:
            argv += ["--nvtx-include", inc]
    argv += command
    print("rangeprof-compare-ncu: running " + " ".join(argv), file=sys.stderr)
    try:
        # ncu must not run the program under rangeprof too: a process that loaded
        # librangeprof.so ('import rangeprof' in a notebook) has CUDA_INJECTION64_PATH and
        # NVTX_INJECTION64_PATH pointing at it in its C environment, which a child inherits.
        done = subprocess.run(argv, check=False, env=without_injection())
    except OSError as e:
        os.unlink(path)
        raise NcuError(f"cannot run '{exe}': {e.strerror or e}") from None
    if done.returncode:
        print(f"rangeprof-compare-ncu: warning: ncu exited with status {done.returncode}",
              file=sys.stderr)
    return path


def parser():
    p = Parser(prog="rangeprof-compare-ncu", description="rangeprof against ncu on the same "
               "program, per kernel and metric (medians), kernels matched by NVTX path, "
               "name (despite the two demanglers' spellings) and grid, range workloads "
               "(--replay-mode range) with ncu's range results by the range's NVTX "
               "path. A metric whose units cannot be converted is not compared (said on "
               "stderr). Exit status 2 when nothing can be compared.")
    add_version(p)
    p.add_argument("jsonl", help="rangeprof JSONL: file, directory or glob")
    p.add_argument("ncu_csv", nargs="?", help="output of 'ncu --csv --page raw' (not with "
                   "--run)")
    p.add_argument("--run", action="store_true",
                   help="run ncu on the COMMAND that follows (everything after --run, an "
                   "optional -- first) instead of reading a CSV, with the recording's "
                   "metrics and --nvtx-include, clocks not locked")
    p.add_argument("--ncu", default="ncu", help="ncu executable for --run (default: ncu on "
                   "PATH, else /usr/local/cuda/bin/ncu)")
    form = p.add_mutually_exclusive_group()
    form.add_argument("--csv", action="store_true", help="CSV on stdout (with Grid and Unit)")
    form.add_argument("--json", action="store_true", help="JSON on stdout (as --csv; NaN "
                      "as null)")
    return p


def _main(argv, out):
    p = parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    # Everything after --run is the program's command line, its options included:
    # argparse's REMAINDER refuses a leading "--", so the split is done here.
    command = None
    if "--run" in argv:
        at = argv.index("--run")
        command = argv[at + 1:]
        if command[:1] == ["--"]:
            command = command[1:]
        argv = argv[:at + 1]
    args = p.parse_args(argv)
    if args.run and not command:
        p.error("--run needs the command to run ncu on")
    if args.run and args.ncu_csv:
        p.error("give ncu's CSV or --run COMMAND, not both")
    if not args.run and not args.ncu_csv:
        p.error("give ncu's CSV or --run COMMAND")
    try:
        recs, rp = read_rangeprof(args.jsonl)
    except FileNotFoundError as e:
        print(f"{PROG}: error: {brief(e)}", file=sys.stderr)
        return 2
    if not rp:
        print(f"{PROG}: error: no runs in {said(args.jsonl)}", file=sys.stderr)
        return 2
    bad = []
    try:
        csv_path = run_ncu(recs, command, args.ncu) if command else args.ncu_csv
        try:
            ncu = read_ncu_csv(csv_path, bad)
        finally:
            if command:
                os.unlink(csv_path)
    except (OSError, NcuError) as e:
        why = f"{said(e.filename)}: {e.strerror}" if isinstance(e, OSError) and e.filename \
            else brief(e)
        print(f"{PROG}: error: {why}", file=sys.stderr)
        return 2
    for line in bad[:100]:
        print(f"{PROG}: warning: {line}", file=sys.stderr)
    skipped = []
    rows = compare(rp, ncu, skipped)
    unmatched = [k for k in rp if match(k, ncu) is None]
    for entry, key, metric, why in skipped:
        print(f"{PROG}: note: {metric} of {entry['kernel']} in '{key[0]}' not compared: "
              f"{why}", file=sys.stderr)
    if not rows:
        print(f"{PROG}: error: " + ("no metric of the JSONL could be compared (see the notes "
                                    "above)" if skipped else
                                    "no kernel of the JSONL is in ncu's output"),
              file=sys.stderr)
        return 2
    cols = ["Annotation", "Kernel", "Metric", "NcuRuns", "NcuMedian", "RangeprofRuns",
            "RangeprofMedian", "DiffPct"]
    if args.csv or args.json:
        cols = cols[:2] + ["Grid"] + cols[2:3] + ["Unit"] + cols[3:]
    write(rows, cols, "csv" if args.csv else "json" if args.json else "text", out,
          widths=dict(Kernel=48, Annotation=32))
    for key in unmatched:
        if isinstance(key[1], RangeName):
            print(f"{PROG}: note: not in ncu's output: range '{key[1]}' "
                  f"({rp[key]['kernel']}) at '{key[0]}' (a range workload: ncu must have "
                  "run with --replay-mode range)", file=sys.stderr)
            continue
        print(f"{PROG}: note: not in ncu's output: {rp[key]['kernel']} "
              f"in '{key[0]}' (grid {key[2]})", file=sys.stderr)
    return 0


def main(argv=None, out=sys.stdout):
    return guarded(PROG, _main, argv, out)


if __name__ == "__main__":
    sys.exit(main())
