#!/usr/bin/env python3
"""tests/gpu/check_launch_metrics.py RP_JSONL NCU_CSV [--min-launches N] - every launch__
metric of rangeprof's run records equals ncu's for the same launch: the launches of both
files in order (each has every launch its filters selected, once per launch in ncu's, once
per run in rangeprof's), paired by order and checked to have the same grid and block;
whole numbers exactly, launch__waves_per_multiprocessor as ncu prints it (two decimals,
printf's rounding). Prints one line per launch; exits 1 on any difference, or when fewer
than N launches (default 1) were compared. Standard library only."""
import argparse
import csv
import sys

import gpu_records


def ncu_rows(path):
    lines = [line for line in open(path, encoding="utf-8", errors="replace")
             if line.startswith('"')]
    rows = list(csv.reader(lines))
    if len(rows) < 3:
        sys.exit(f"{path}: no result rows")
    header, units = rows[0], rows[1]
    out = []
    for r in rows[2:]:
        rec = dict(zip(header, r))
        if not rec.get("launch__grid_size"):
            continue
        out.append(rec)
    return out, dict(zip(header, units))


def dims(text):
    return [int(x) for x in text.strip("()").split(",")]


def number(text):
    return float(text.replace(",", ""))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("rp")
    ap.add_argument("ncu")
    ap.add_argument("--min-launches", type=int, default=1)
    a = ap.parse_args()
    launches = {}
    for rec in gpu_records.read(a.rp):
        if rec["type"] == "run":
            launches.setdefault(rec["launch"], rec)
    ours = [launches[k] for k in sorted(launches)]
    theirs, units = ncu_rows(a.ncu)
    if len(ours) != len(theirs):
        print(f"rangeprof measured {len(ours)} launches, ncu {len(theirs)}")
        return 1
    bad = compared = 0
    for rp, ncu in zip(ours, theirs):
        where = f"{rp['kernel'][:40]} <<<{rp['grid']}, {rp['block']}>>>"
        if rp["grid"] != dims(ncu["Grid Size"]) or rp["block"] != dims(ncu["Block Size"]):
            print(f"FAIL {where}: ncu's launch is <<<{ncu['Grid Size']}, {ncu['Block Size']}>>>")
            bad += 1
            continue
        diffs = []
        names = [m for m in rp["metrics"] if m.startswith("launch__")]
        for m in names:
            v = rp["metrics"][m]
            if m not in ncu:
                diffs.append(f"{m}: ncu has no such column")
                continue
            want = number(ncu[m])
            got = v if v is None or m != "launch__waves_per_multiprocessor" else \
                float(f"{v:.2f}")
            if got != want:
                diffs.append(f"{m} {v} vs ncu {ncu[m]}")
            if rp["units"].get(m, "") != units.get(m, ""):
                diffs.append(f"{m} unit '{rp['units'].get(m)}' vs ncu '{units.get(m)}'")
            compared += 1
        print(("FAIL " if diffs else "ok   ") + where + f": {len(names)} launch__ metrics"
              + ("; " + "; ".join(diffs) if diffs else ""))
        bad += bool(diffs)
    print(f"{len(ours)} launches, {compared} values compared, {bad} launches differ")
    return 1 if bad or len(ours) < a.min_launches or not compared else 0


if __name__ == "__main__":
    sys.exit(main())
