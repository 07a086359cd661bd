#!/usr/bin/env python3
"""bench/gen_runs.py N OUT [--seed S] - writes a rangeprof JSONL file with N run records by
replaying the H200 recordings of python/tests/fixtures/recorded/ (vadd, matmul, fusion,
clocks, graph_capture, setup_early, vadd_cache_none), each replay a new process: its own
pid, start time and launch numbers, every metric value and the per-run clock and temperature jittered
by a few per cent (a log-normal factor per launch and one per run), the summary,
setup, device and warning records kept in their places. The file is what a long job
of many processes writing into one file (no %p) looks like: realistic lines of
realistic sizes (~900 bytes), a few hundred groups, millions of runs.

Used for bench/NOTES.md's "Post-processing big files" figures (doc/measurements.md, same
title), on which python/README.md's "a 2-million-run file in under a minute and a few GB"
rests:

    python3 bench/gen_runs.py 2000000 /tmp/big2m.jsonl
    /usr/bin/time -v rangeprof-report /tmp/big2m.jsonl > /dev/null

Standard library only; deterministic for a given seed."""
import argparse
import json
import math
import random
import sys
import time
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "python" / "tests" / "fixtures" / "recorded"
SOURCES = ["vadd.jsonl", "matmul.jsonl", "fusion.jsonl", "clocks.jsonl", "graph_capture.jsonl",
           "setup_early.jsonl", "vadd_cache_none.jsonl"]


def _sessions(path):
    """The file's processes: lists of parsed records, each starting with its session."""
    out = []
    for line in open(path, encoding="utf-8"):
        rec = json.loads(line)
        if rec["type"] == "session" or not out:
            out.append([])
        out[-1].append(rec)
    return out


def _jitter(value, factor):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return value
    v = value * factor
    return round(v) if isinstance(value, int) else v


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("n", type=int, help="run records to write")
    p.add_argument("out", help="output file (overwritten)")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    rng = random.Random(args.seed)
    templates = [s for name in SOURCES for s in _sessions(FIXTURES / name)]
    written = lines = 0
    replay = 0
    with open(args.out, "w", encoding="utf-8") as out:
        while written < args.n:
            template = templates[replay % len(templates)]
            replay += 1
            pid = 10000 + replay
            start = 1796000000.0 + 7.5 * replay  # 2026-11-30, a replay every 7.5 s
            stamp = (time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(start))
                     + f".{int(start * 1000) % 1000:03d}Z")
            launch_factor = {}
            for rec in template:
                rec = dict(rec)  # a copy to change: the members changed below are replaced
                kind = rec["type"]
                if kind == "session":
                    rec["pid"], rec["start_time"] = pid, stamp
                elif kind in ("run", "summary"):
                    if kind == "run" and written >= args.n:
                        continue
                    launch = rec.get("launch")
                    f = launch_factor.setdefault(launch, math.exp(rng.gauss(0, 0.01)))
                    if kind == "run":
                        run_f = f * math.exp(rng.gauss(0, 0.01))
                        rec["metrics"] = {k: _jitter(v, run_f) for k, v in rec["metrics"].items()}
                        for key in ("sm_clock_hz", "temperature_c"):
                            if isinstance(rec.get(key), (int, float)):
                                rec[key] = _jitter(rec[key], math.exp(rng.gauss(0, 0.003)))
                        written += 1
                out.write(json.dumps(rec, separators=(",", ":")) + "\n")
                lines += 1
    size = Path(args.out).stat().st_size
    print(f"{args.out}: {written} run records, {lines} lines, {size / 1e6:.0f} MB, "
          f"{replay} processes", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
