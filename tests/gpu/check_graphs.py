"""tests/gpu/check_graphs.py - CUDA graph records (issue 8): node and graph times against
ncu's, and the shape of the records.

usage: check_graphs.py node RECORDS.jsonl NCU.csv [--min-us 20]
       check_graphs.py graph RECORDS.jsonl NCU.csv [--min-us 20]
       check_graphs.py records RECORDS.jsonl EXPECTED_MIN_NODE_SUMMARIES [--path g]

node     rangeprof's kernel-node measurements (records with a "graph" member) against
         ncu --graph-profiling node: per kernel (name and grid), the median of all run values
         of gpu__time_duration.sum against the median of ncu's results.
graph    rangeprof's whole-graph measurements (workload "graph") against
         ncu --graph-profiling graph: per graph, medians as above.
records  each node summary names its graph (graph.id, graph.node, graph.launch), has the
         NVTX path open at cuGraphLaunch (--path, default "g") and is the statistics of its
         own runs; graph-workload summaries are named "graph <id>"; every line is whole.

Agreement, as for plain kernels: 2 % for kernels (graphs) of at least --min-us; below that,
3 % or 0.3 us, whichever is looser. A kernel ncu measured and rangeprof did not fails. A
difference is not judged ("ncu-spread") where ncu's own results spread (median absolute
deviation over 5 % of the median) and rangeprof's median lies between ncu's min and max.

ncu's CSV is read in either layout: the default details page (columns "Kernel Name",
"Metric Name", "Metric Unit", "Metric Value", one row per result and metric) or
--page raw (a column per metric, units on the second row), as compare_ncu.py reads it.
ncu names a graph result "graph" and gives no graph id (ncu 2025.3), so graph results are
paired with rangeprof's graph launches by order: both tools select the same launches."""
import csv
import json
import math
import os
import statistics
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_ncu import short  # noqa: E402  one spelling of kernel names for the suite
import gpu_records  # noqa: E402

METRIC = "gpu__time_duration.sum"
SCALE = {"ns": 1, "nsecond": 1, "us": 1e3, "usecond": 1e3, "ms": 1e6, "msecond": 1e6,
         "s": 1e9, "second": 1e9}


def number(text):
    return float(text.replace(",", ""))


def grid_blocks(text):
    """'(1056, 1, 1)' or '1,056' -> 1056."""
    text = text.strip()
    if text.startswith("("):
        n = 1
        for part in text.strip("()").split(","):
            n *= int(part)
        return n
    return int(number(text))


def load_ncu(path):
    """[(id, kernel name, grid blocks, duration ns)] in ncu's result order."""
    rows = [r for r in csv.reader(l for l in open(path) if not l.startswith("=="))]
    if not rows:
        return []
    header = rows[0]
    ki, idi = header.index("Kernel Name"), header.index("ID")
    out = []
    if "Metric Name" in header:  # details page
        mi, ui, vi = (header.index(c) for c in ("Metric Name", "Metric Unit", "Metric Value"))
        gi = header.index("Grid Size")
        for r in rows[1:]:
            # "Duration" is the same counter where a section, not --metrics, asked for it.
            if len(r) > vi and r[mi] in (METRIC, "Duration") and r[vi]:
                out.append((int(r[idi]), r[ki], grid_blocks(r[gi]),
                            number(r[vi]) * SCALE.get(r[ui], 1)))
    else:  # --page raw
        units, ti = rows[1], header.index(METRIC)
        gi = header.index("launch__grid_size") if "launch__grid_size" in header else header.index("Grid Size")
        for r in rows[2:]:
            if len(r) > ti and r[ti]:
                out.append((int(r[idi]), r[ki], grid_blocks(r[gi]),
                            number(r[ti]) * SCALE.get(units[ti], 1)))
    out.sort()
    return out


def load_records(path):
    """Every line parsed and checked; one that is not a whole record is an error here,
    not skipped."""
    text = open(path).read()
    assert text.endswith("\n") or not text, f"{path}: last line is not whole"
    return gpu_records.read(path)


def is_graph_workload(r):
    return r.get("workload") == "graph"


def is_node(r):
    return bool(r.get("graph")) and not is_graph_workload(r)


def launch_key(r):
    """What ties a summary to its runs: the launch index alone may be shared by the nodes
    of one graph launch, so the kernel and the graph member are part of it."""
    return (r.get("launch"), r.get("kernel"), json.dumps(r.get("graph"), sort_keys=True))


def run_values(recs, select):
    """{launch key: [metric values of its runs]} for the selected summaries, from the run
    records; a summary whose runs carry no value falls back to its own median."""
    runs = defaultdict(list)
    for r in recs:
        if r.get("type") == "run" and select(r):
            v = r.get("metrics", {}).get(METRIC)
            if v is not None:
                runs[launch_key(r)].append(v)
    out = {}
    for s in recs:
        if s.get("type") == "summary" and select(s):
            k = launch_key(s)
            if runs.get(k):
                out[k] = runs[k]
            else:
                med = s.get("metrics", {}).get(METRIC, {}).get("median")
                out[k] = [med] if med is not None else []
    return out


def judge(a, b, min_us):
    """ncu median a, rangeprof median b (ns) -> (diff %, verdict)."""
    diff = 100.0 * (b - a) / a if a else (0.0 if b == 0 else float("inf"))
    if a >= min_us * 1000:
        ok = abs(diff) <= 2.0
    else:
        ok = abs(diff) <= 3.0 or abs(b - a) <= 300.0
    return diff, "ok" if ok else "FAIL"


def mad_spread(values):
    """ncu's own disagreement, robust to the one slow first launch of a graph (its upload):
    median absolute deviation in % of the median."""
    m = statistics.median(values)
    return 100.0 * statistics.median(abs(v - m) for v in values) / m if m else 0.0


def table(pairs, min_us):
    """pairs: {name: (ncu values, rangeprof values)} -> number of failures."""
    bad = 0
    print(f"{'kernel':36} {'ncu median ns':>14} {'rangeprof ns':>13} {'diff %':>8} n_ncu n_rp")
    for name in sorted(pairs):
        nv, rv = pairs[name]
        if not rv:
            print(f"{name[:36]:36} {statistics.median(nv):14.6g} {'-':>13} {'':>8} {len(nv):5} {0:4} FAIL (not measured)")
            bad += 1
            continue
        a, b = statistics.median(nv), statistics.median(rv)
        diff, flag = judge(a, b, min_us)
        # An ncu that does not agree with itself cannot judge agreement (compare_ncu.py),
        # but only while rangeprof's median lies among ncu's own values.
        spread = mad_spread(nv)
        if flag == "FAIL" and len(nv) > 2 and spread > 5.0 and min(nv) <= b <= max(nv):
            flag = f"ncu-spread-{spread:.0f}%"
        bad += flag == "FAIL"
        print(f"{name[:36]:36} {a:14.6g} {b:13.6g} {diff:8.2f} {len(nv):5} {len(rv):4} {flag}")
    return bad


def node_mode(records, ncu_csv, min_us):
    recs = load_records(records)
    rp = defaultdict(list)
    nodes = [r for r in recs if r.get("type") == "summary" and is_node(r)]
    by_key = {launch_key(s): s for s in nodes}
    for k, vals in run_values(recs, is_node).items():
        s = by_key[k]
        g = s["grid"]
        rp[f"{short(s['kernel'])}<{g[0] * g[1] * g[2]}>"] += vals
    ncu = defaultdict(list)
    for _, name, grid, v in load_ncu(ncu_csv):
        if name != "graph":  # a whole-graph result: not this mode's
            ncu[f"{short(name)}<{grid}>"].append(v)
    if not ncu or not rp:
        print(f"FAIL: nothing to compare ({len(ncu)} kernels in ncu's file, "
              f"{len(rp)} graph-node kernels in rangeprof's)")
        return 1
    pairs = {k: (v, rp.get(k, [])) for k, v in ncu.items()}
    bad = table(pairs, min_us)
    extra = sorted(set(rp) - set(ncu))
    if extra:
        print("only in rangeprof (not judged):", extra)
    return 1 if bad else 0


def graph_mode(records, ncu_csv, min_us):
    recs = load_records(records)
    summaries = [r for r in recs if r.get("type") == "summary" and is_graph_workload(r)]

    def order(s):
        g = s.get("graph") or {}
        return (g.get("launch", s.get("launch", 0)), s.get("launch", 0))

    summaries.sort(key=order)
    values = run_values(recs, is_graph_workload)
    seq = [(s["kernel"], values[launch_key(s)]) for s in summaries]
    # ncu's graph results; a plain kernel launched in the range would be measured as a
    # kernel even in graph mode, and is left out.
    ncu = [v for _, name, _, v in load_ncu(ncu_csv) if name in ("graph", "") or name.startswith("graph ")]
    if not ncu or not seq:
        print(f"FAIL: nothing to compare ({len(ncu)} graph results in ncu's file, "
              f"{len(seq)} graph workloads in rangeprof's)")
        return 1
    pairs = defaultdict(lambda: ([], []))
    if len(ncu) == len(seq):
        for v, (name, rv) in zip(ncu, seq):
            pairs[name][0].append(v)
            pairs[name][1].extend(rv)
    elif len({name for name, _ in seq}) == 1:
        name = seq[0][0]
        pairs[name][0].extend(ncu)
        for _, rv in seq:
            pairs[name][1].extend(rv)
        print(f"note: {len(ncu)} ncu graph results, {len(seq)} rangeprof graph launches; one graph, compared as a whole")
    else:
        print(f"FAIL: {len(ncu)} ncu graph results and {len(seq)} rangeprof graph launches "
              f"of {len({n for n, _ in seq})} graphs cannot be paired by order")
        return 1
    return 1 if table(dict(pairs), min_us) else 0


def records_mode(records, expected_min, path):
    recs = load_records(records)
    assert recs and recs[0].get("type") == "session", "first record must be the session"
    for r in recs:
        assert "type" in r, r
    runs = defaultdict(list)
    for r in recs:
        if r["type"] == "run" and (r.get("graph") or is_graph_workload(r)):
            runs[launch_key(r)].append(r)
    nodes = [r for r in recs if r["type"] == "summary" and is_node(r)]
    graphs = [r for r in recs if r["type"] == "summary" and is_graph_workload(r)]
    assert len(nodes) >= expected_min, f"{len(nodes)} node summaries < {expected_min}"
    seen = set()
    keys = {id(s): launch_key(s) for s in nodes + graphs}
    for s in nodes + graphs:
        g = s.get("graph")
        where = f"launch {s.get('launch')} {s.get('kernel')}"
        if g is None and is_graph_workload(s):
            # A whole-graph record may name its graph only as "graph <id>".
            name = s.get("kernel", "").split()
            assert len(name) == 2 and name[0] == "graph" and name[1].isdigit(), f"{where}: graph workload name"
            g = {"id": int(name[1]), "launch": s.get("launch")}
        assert isinstance(g, dict), f"{where}: no graph member"
        assert isinstance(g.get("id"), int), f"{where}: graph.id {g.get('id')!r}"
        assert isinstance(g.get("launch"), int), f"{where}: graph.launch {g.get('launch')!r}"
        assert s.get("nvtx_path") in path.split(","), f"{where}: nvtx_path {s.get('nvtx_path')!r} not in {path!r}"
        if is_node(s):
            assert isinstance(g.get("node"), int) and g["node"] >= 0, f"{where}: graph.node {g.get('node')!r}"
            ident = (g["id"], g["launch"], g["node"])
            assert ident not in seen, f"{where}: node {ident} measured twice in one graph launch"
            seen.add(ident)
        else:
            assert s.get("kernel") == f"graph {g['id']}", f"{where}: graph workload named {s.get('kernel')!r}"
        # The summary is the statistics of its own runs, as for plain launches.
        rs = runs.get(keys[id(s)])
        assert rs, f"{where}: summary without runs"
        assert sorted(r["run"] for r in rs) == list(range(len(rs))), f"{where}: run indices"
        for r in rs:
            assert r.get("nvtx_path") in path.split(","), f"{where}: run nvtx_path {r.get('nvtx_path')!r}"
        for metric, st in s.get("metrics", {}).items():
            vals = [r["metrics"][metric] for r in rs]
            assert all(v is not None and math.isfinite(v) for v in vals), (where, metric, vals)
            assert st["n"] == len(vals), (where, metric, st["n"], len(vals))
            for key, want in (("min", min(vals)), ("max", max(vals)),
                              ("median", statistics.median(vals))):
                assert math.isclose(st[key], want, rel_tol=1e-9, abs_tol=1e-12), (where, metric, key)
    orphans = set(runs) - set(keys.values())
    assert not orphans, f"runs without a summary: {sorted(orphans)[:3]}"
    ids = sorted({s["graph"]["id"] for s in nodes + graphs if s.get("graph")})
    print(f"{records}: ok, {len(nodes)} node summaries, {len(graphs)} graph summaries, "
          f"graphs {ids}, {sum(len(v) for v in runs.values())} runs")
    return 0


def main():
    args = sys.argv[1:]
    opts = {"--min-us": "20", "--path": "g"}
    for o in list(opts):
        if o in args:
            i = args.index(o)
            opts[o] = args[i + 1]
            del args[i:i + 2]
    if len(args) != 3 or args[0] not in ("node", "graph", "records"):
        print(__doc__)
        sys.exit(2)
    mode, records, third = args
    try:
        if mode == "node":
            sys.exit(node_mode(records, third, float(opts["--min-us"])))
        if mode == "graph":
            sys.exit(graph_mode(records, third, float(opts["--min-us"])))
        sys.exit(records_mode(records, int(third), opts["--path"]))
    except AssertionError as e:
        print(f"FAIL {records}: {e}")
        sys.exit(1)


if __name__ == "__main__":
    main()
