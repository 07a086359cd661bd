"""rangeprof/ncu.py - rangeprof-compare-ncu: per kernel and metric, the median of ncu's
values (from 'ncu --csv --page raw' output, or from running ncu on the same command) next to
rangeprof's, with the difference in percent. Kernel names are matched despite the two
demanglers' spellings. Standard library only.

    rangeprof-compare-ncu run.jsonl ncu.csv
    rangeprof-compare-ncu run.jsonl --run -- python3 train.py"""
import argparse
import csv
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections import OrderedDict

from rangeprof import records
from rangeprof._control import without_injection
from rangeprof.names import canonical_kernel
from rangeprof.output import add_version, write
from rangeprof.units import UnitError, conversion_factor, parse_unit


def _grid(text):
    nums = [int(float(x)) for x in re.findall(r"[\d.]+", str(text).replace(",", " "))]
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


def read_ncu_csv(path):
    """{(NVTX path or None, canonical kernel, grid 'x,y,z'): {metric: ([values], unit)}}
    from ncu's raw page CSV (lines before the header, such as '==PROF==' lines, are
    skipped). The NVTX path is None where ncu ran without --nvtx."""
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = [l for l in f if not l.startswith("==")]
    rows = list(csv.reader(lines))
    start = next((i for i, r in enumerate(rows) if "Kernel Name" in r), None)
    if start is None:
        raise ValueError(f"{path}: no 'Kernel Name' column: not 'ncu --csv --page raw' output")
    header, units, data = rows[start], rows[start + 1], rows[start + 2:]
    ki = header.index("Kernel Name")
    gi = header.index("Grid Size") if "Grid Size" in header else None
    ni = next((i for i, h in enumerate(header) if h.startswith(_NVTX_COLUMN)), None)
    out = OrderedDict()
    for row in data:
        if len(row) <= ki:
            continue
        grid = _grid(row[gi]) if gi is not None and gi < len(row) else ""
        path_ = nvtx_path(row[ni]) if ni is not None and ni < len(row) else None
        entry = out.setdefault((path_, canonical_kernel(row[ki]), grid), {})
        for i, name in enumerate(header):
            if "__" not in name or i >= len(row) or not row[i]:
                continue
            try:
                v = float(row[i].replace(",", ""))
            except ValueError:
                continue
            entry.setdefault(name, ([], units[i] if i < len(units) else ""))[0].append(v)
    return out


def read_rangeprof(paths):
    """The recording's runs as {(NVTX path, canonical kernel, grid): entry}, entry holding
    the JSONL's own kernel name and {metric: ([values], unit)}."""
    recs = records.read(paths)
    out = OrderedDict()
    for run in recs.runs:
        rec = run.record
        key = (run.annotation, canonical_kernel(rec["kernel"]),
               ",".join(str(x) for x in rec.get("grid") or []))
        entry = out.setdefault(key, dict(kernel=rec["kernel"], annotation=run.annotation, metrics={}))
        for metric, v in rec["metrics"].items():
            if v is not None:
                entry["metrics"].setdefault(metric, ([], (rec.get("units") or {}).get(metric, "")))[0].append(v)
    return recs, out


def match(key, ncu):
    """ncu's entry for a rangeprof key: same NVTX path, kernel and grid; or, where ncu ran
    without --nvtx, same kernel and grid. None if there is none."""
    return ncu.get(key) if key in ncu else ncu.get((None,) + key[1:])


def compare(rp, ncu):
    rows = []
    for key, entry in rp.items():
        theirs = match(key, ncu)
        if theirs is None:
            continue
        for metric, (values, unit) in entry["metrics"].items():
            if metric not in theirs:
                continue
            nvals, nunit = theirs[metric]
            try:
                factor = conversion_factor(parse_unit(nunit), parse_unit(unit)) if nunit and unit else 1.0
            except UnitError:
                factor = 1.0
            a = statistics.median(nvals) * factor
            b = statistics.median(values)
            diff = 100 * (b - a) / a if a else (0.0 if b == 0 else math.inf)
            rows.append(dict(Annotation=entry["annotation"], Kernel=entry["kernel"], Grid=key[2],
                             Metric=metric, Unit=unit, NcuRuns=len(nvals), NcuMedian=a,
                             RangeprofRuns=len(values), RangeprofMedian=b, DiffPct=diff))
    return rows


def run_ncu(recs, command, ncu="ncu"):
    """Runs ncu on command with the metrics and NVTX includes of the recording's session,
    never locking clocks; returns the CSV's path."""
    options = (recs.sessions[0].get("options") or {}) if recs.sessions else {}
    metrics = options.get("metrics") or "gpu__time_duration.sum"
    exe = shutil.which(ncu) or "/usr/local/cuda/bin/ncu"
    fd, path = tempfile.mkstemp(suffix=".ncu.csv")
    os.close(fd)
    argv = [exe, "--clock-control", "none", "--cache-control", "all", "--csv", "--page", "raw",
            "--metrics", metrics, "--log-file", path]
    includes = options.get("nvtx_include") or []
    if includes:
        argv.append("--nvtx")
        for inc in includes:
            argv += ["--nvtx-include", inc]
    argv += command
    print("rangeprof-compare-ncu: running " + " ".join(argv), file=sys.stderr)
    # ncu must not run the program under rangeprof too: a process that loaded
    # librangeprof.so ('import rangeprof' in a notebook) has CUDA_INJECTION64_PATH and
    # NVTX_INJECTION64_PATH pointing at it in its C environment, which a child inherits.
    subprocess.run(argv, check=False, env=without_injection())
    return path


def main(argv=None, out=sys.stdout):
    p = argparse.ArgumentParser(prog="rangeprof-compare-ncu", description="rangeprof against "
                                "ncu on the same program, per kernel and metric (medians).")
    add_version(p)
    p.add_argument("jsonl", help="rangeprof JSONL: file, directory or glob")
    p.add_argument("ncu_csv", nargs="?", help="output of 'ncu --csv --page raw'")
    p.add_argument("--run", action="store_true",
                   help="run ncu on the COMMAND that follows (everything after --run, an "
                   "optional -- first) instead of reading a CSV")
    p.add_argument("--ncu", default="ncu", help="ncu executable")
    form = p.add_mutually_exclusive_group()
    form.add_argument("--csv", action="store_true")
    form.add_argument("--json", action="store_true")
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
    try:
        recs, rp = read_rangeprof(args.jsonl)
    except FileNotFoundError as e:
        raise SystemExit(f"rangeprof-compare-ncu: error: {e}")
    if args.run and not command:
        p.error("--run needs the command to run ncu on")
    if command:
        csv_path = run_ncu(recs, command, args.ncu)
    elif args.ncu_csv:
        csv_path = args.ncu_csv
    else:
        p.error("give ncu's CSV or --run COMMAND")
    try:
        ncu = read_ncu_csv(csv_path)
    except (OSError, ValueError) as e:
        raise SystemExit(f"rangeprof-compare-ncu: error: {e}")
    rows = compare(rp, ncu)
    unmatched = [k for k in rp if match(k, ncu) is None]
    if not rows:
        print("rangeprof-compare-ncu: error: no kernel of the JSONL is in ncu's output",
              file=sys.stderr)
        return 2
    cols = ["Annotation", "Kernel", "Metric", "NcuRuns", "NcuMedian", "RangeprofRuns",
            "RangeprofMedian", "DiffPct"]
    if args.csv or args.json:
        cols = cols[:2] + ["Grid"] + cols[2:3] + ["Unit"] + cols[3:]
    write(rows, cols, "csv" if args.csv else "json" if args.json else "text", out,
          widths=dict(Kernel=48, Annotation=32))
    for key in unmatched:
        print(f"rangeprof-compare-ncu: note: not in ncu's output: {rp[key]['kernel']} "
              f"in '{key[0]}' (grid {key[2]})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
