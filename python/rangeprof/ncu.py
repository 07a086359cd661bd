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
from rangeprof.output import write
from rangeprof.units import UnitError, conversion_factor, parse_unit


def canonical_kernel(name):
    """One spelling for ncu's and the JSONL's demangled names: no parameter list or 'void',
    'at::native::' as 'at::', anonymous namespaces dropped ('(anonymous namespace)::' and
    ncu's '<unnamed>::'), integer suffixes dropped ('1ul' -> '1'), no space before '*' or
    '&', '>>' for '> >', single spaces."""
    s = name.strip()
    if s.startswith("void "):
        s = s[5:]
    # Cut the parameter list: the first '(' at template depth 0 that is not part of
    # '(anonymous namespace)'.
    s = s.replace("(anonymous namespace)::", "").replace("<unnamed>::", "")
    depth = 0
    for i, ch in enumerate(s):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0 and i > 0:
            s = s[:i]
            break
    s = s.replace("at::native::", "at::")
    s = re.sub(r"\b(\d+)(?:ull|ul|ll|u|l)\b", r"\1", s, flags=re.I)
    s = re.sub(r"\s+([*&])", r"\1", s)
    s = re.sub(r">\s+>", ">>", s)
    s = re.sub(r">\s+>", ">>", s)
    return re.sub(r"\s+", " ", s).strip()


def _grid(text):
    nums = [int(float(x)) for x in re.findall(r"[\d.]+", str(text).replace(",", " "))]
    return ",".join(str(x) for x in nums) if len(nums) == 3 else str(math.prod(nums) if nums else "")


def read_ncu_csv(path):
    """{(canonical kernel, grid 'x,y,z'): {metric: ([values], unit)}} from ncu's raw page CSV
    (lines before the header, such as '==PROF==' lines, are skipped)."""
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = [l for l in f if not l.startswith("==")]
    rows = list(csv.reader(lines))
    start = next((i for i, r in enumerate(rows) if "Kernel Name" in r), None)
    if start is None:
        raise ValueError(f"{path}: no 'Kernel Name' column: not 'ncu --csv --page raw' output")
    header, units, data = rows[start], rows[start + 1], rows[start + 2:]
    ki = header.index("Kernel Name")
    gi = header.index("Grid Size") if "Grid Size" in header else None
    out = OrderedDict()
    for row in data:
        if len(row) <= ki:
            continue
        grid = _grid(row[gi]) if gi is not None and gi < len(row) else ""
        entry = out.setdefault((canonical_kernel(row[ki]), grid), {})
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
    recs = records.read(paths)
    out = OrderedDict()
    for run in recs.runs:
        rec = run.record
        key = (canonical_kernel(rec["kernel"]), ",".join(str(x) for x in rec.get("grid") or []))
        entry = out.setdefault(key, dict(kernel=rec["kernel"], annotation=run.annotation, metrics={}))
        for metric, v in rec["metrics"].items():
            if v is not None:
                entry["metrics"].setdefault(metric, ([], (rec.get("units") or {}).get(metric, "")))[0].append(v)
    return recs, out


def compare(rp, ncu):
    rows = []
    for key, entry in rp.items():
        theirs = ncu.get(key)
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
            rows.append(dict(Annotation=entry["annotation"], Kernel=entry["kernel"], Grid=key[1],
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
    subprocess.run(argv, check=False)
    return path


def main(argv=None, out=sys.stdout):
    p = argparse.ArgumentParser(prog="rangeprof-compare-ncu", description="rangeprof against "
                                "ncu on the same program, per kernel and metric (medians).")
    p.add_argument("jsonl", help="rangeprof JSONL: file, directory or glob")
    p.add_argument("ncu_csv", nargs="?", help="output of 'ncu --csv --page raw'")
    p.add_argument("--run", nargs=argparse.REMAINDER, metavar="COMMAND",
                   help="run ncu on COMMAND (after --run) instead of reading a CSV")
    p.add_argument("--ncu", default="ncu", help="ncu executable")
    form = p.add_mutually_exclusive_group()
    form.add_argument("--csv", action="store_true")
    form.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    try:
        recs, rp = read_rangeprof(args.jsonl)
    except FileNotFoundError as e:
        raise SystemExit(f"rangeprof-compare-ncu: error: {e}")
    command = [c for c in (args.run or []) if c != "--"] if args.run is not None else None
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
    unmatched = [k for k in rp if k not in ncu]
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
              f"(grid {key[1]})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
