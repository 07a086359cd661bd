"""tests/gpu/check_records.py - asserts about a rangeprof JSON Lines file.

usage: check_records.py FILE [--runs N] [--kernel-path KERNEL=PATH ...] [--min-launches N]
       [--expect-warning SUBSTRING]
Checks: every line is JSON with a type; session first; each run has the expected runs and
finite metrics; each measured (kernel) has the expected nvtx_path; each launch has one
summary whose n, min, max, median and mean are those of its runs."""
import math
import statistics
import sys

import gpu_records


def main():
    args = sys.argv[1:]
    path = args.pop(0)
    runs, min_launches, paths, warnings = None, 1, {}, []
    while args:
        a = args.pop(0)
        if a == "--runs":
            runs = int(args.pop(0))
        elif a == "--min-launches":
            min_launches = int(args.pop(0))
        elif a == "--kernel-path":
            k, p = args.pop(0).split("=", 1)
            paths[k] = p
        elif a == "--expect-warning":
            warnings.append(args.pop(0))
    recs = gpu_records.read(path)
    assert recs and recs[0]["type"] == "session", "first record must be the session"
    runs_by_launch = {}
    for r in recs:
        if r["type"] == "run":
            runs_by_launch.setdefault((r["launch"], r["kernel"]), []).append(r)
            for k, v in r["metrics"].items():
                assert v is not None and math.isfinite(v), (k, r)
            assert r["sm_clock_hz"] and r["sm_clock_hz"] > 1e8, r
            if runs is not None:
                assert r["runs"] == runs, r
            for k, p in paths.items():
                if k in r["kernel"]:
                    assert r["nvtx_path"].startswith(p) or p in r["nvtx_path"], (k, p, r["nvtx_path"])
    summaries = [r for r in recs if r["type"] == "summary"]
    assert len(runs_by_launch) >= min_launches, f"{len(runs_by_launch)} launches measured"
    assert len(summaries) == len(runs_by_launch), "one summary per measured launch"
    for (launch, kernel), rs in runs_by_launch.items():
        assert sorted(r["run"] for r in rs) == list(range(len(rs))), (launch, kernel)
    # Each summary is the statistics of its own launch's runs, not merely present.
    for s in summaries:
        rs = runs_by_launch.get((s["launch"], s["kernel"]))
        assert rs, f"summary of launch {s['launch']} without runs"
        for metric, st in s["metrics"].items():
            vals = [r["metrics"][metric] for r in rs]
            assert st["n"] == len(vals), (metric, st["n"], len(vals))
            for key, want in (("min", min(vals)), ("max", max(vals)),
                              ("median", statistics.median(vals)),
                              ("mean", statistics.fmean(vals))):
                assert math.isclose(st[key], want, rel_tol=1e-9, abs_tol=1e-12), \
                    (s["launch"], metric, key, st[key], want)
    texts = " ".join(r.get("message", "") for r in recs if r["type"] in ("warning", "error"))
    for w in warnings:
        assert w in texts, f"warning '{w}' missing: {texts}"
    print(f"{path}: ok, {len(runs_by_launch)} launches, {sum(len(v) for v in runs_by_launch.values())} runs")


if __name__ == "__main__":
    main()
