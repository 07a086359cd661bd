"""tests/gpu/check_graph_metrics.py RECORDS.jsonl NCU_RAW.csv METRICS - whole-graph counters (issue 8,
--graph-profiling graph with --metrics) against ncu --graph-profiling graph --page raw on the
same program: per metric, the median of rangeprof's run values against the median of ncu's
graph results.

Judged: every counter metric both measured, within 2 % (dram__bytes_write.sum: 5 %, since a
read-modify-write graph's write-backs depend on what the L2 held, as for plain kernels:
tests/gpu/l2_rmw.cu, doc/measurements.md "Agreement with ncu"). Not judged, shown:
gpu__time_duration.sum, which in ncu's graph mode holds idle time (its own
sm__cycles_active.max gives the busiest SM ~150 us of a 337-356 us graph: doc/measurements.md,
"Graph mode: time and counters"); rangeprof's time is judged against the
application's own events elsewhere in the suite. Also shown: ncu's busiest-SM active time
(sm__cycles_active.max over its clock), where both are in its CSV.
METRICS is the comma-separated list both tools were given: every one of them must have
values on both sides (a record set that lacks a counter, or an ncu CSV that lacks it, fails
rather than leaving it unjudged)."""
import csv
import statistics
import sys

import gpu_records

TIME = "gpu__time_duration.sum"
TOLERANCE = {"dram__bytes_write.sum": 5.0}


def number(text):
    return float(text.replace(",", ""))


def load_ncu(path):
    """{metric: [values]} over ncu's graph results (--page raw: a column per metric)."""
    rows = [r for r in csv.reader(l for l in open(path) if not l.startswith("=="))]
    header, out = rows[0], {}
    names = [h for h in header if "__" in h and not h.startswith("device__")]
    for r in rows[2:]:
        if r[header.index("Kernel Name")] != "graph":
            continue
        for n in names:
            try:
                out.setdefault(n, []).append(number(r[header.index(n)]))
            except ValueError:
                pass  # not a number: an attribute, or a metric not collected
    return out


records = gpu_records.read(sys.argv[1])
runs = [r for r in records if r["type"] == "run" and r.get("workload") == "graph"]
summaries = [r for r in records if r["type"] == "summary" and r.get("workload") == "graph"]
assert runs and summaries, "no graph-workload records"
ncu = load_ncu(sys.argv[2])
assert ncu, "no graph results in ncu's CSV"
asked = sys.argv[3].split(",")
failed = []
print(f"{'metric':28} {'ncu median':>16} {'rangeprof':>16} {'diff %':>8}  n_ncu n_rp")
for metric in asked:
    mine = [r["metrics"][metric] for r in runs if r["metrics"].get(metric) is not None]
    theirs = ncu.get(metric, [])
    if not theirs or len(mine) != len(runs):
        failed.append(f"{metric}: {len(theirs)} ncu values, {len(mine)} of {len(runs)} "
                      "rangeprof runs with a value")
        continue
    a, b = statistics.median(theirs), statistics.median(mine)
    diff = 100.0 * (b - a) / a if a else 0.0
    judged = metric != TIME
    ok = abs(diff) <= TOLERANCE.get(metric, 2.0)
    verdict = ("ok" if ok else "FAIL") if judged else "(not judged)"
    print(f"{metric:28} {a:16.1f} {b:16.1f} {diff:+8.2f}  {len(theirs):5} {len(mine):4} {verdict}")
    if judged and not ok:
        failed.append(f"{metric}: {diff:+.2f} %")
if "sm__cycles_active.max" in ncu and TIME in ncu:
    clocks = [r["sm_clock_hz"] for r in runs if r.get("sm_clock_hz")]
    assert clocks, "no run has an SM clock"
    clock = statistics.median(clocks)
    busy = statistics.median(ncu["sm__cycles_active.max"]) / clock * 1e9
    print(f"ncu: busiest SM active {busy / 1e3:.1f} us at rangeprof's median clock "
          f"{clock / 1e6:.0f} MHz, against its gpu__time_duration {statistics.median(ncu[TIME]) / 1e3:.1f} us")
for s in summaries:
    missing = [m for m in asked if m not in s["metrics"]]
    if missing:
        failed.append(f"summary of launch {s['launch']} lacks {missing}")
assert not failed, failed
print("ok")
