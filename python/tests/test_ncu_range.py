"""rangeprof-compare-ncu on range workloads (--replay-mode range), with the files recorded on
the H200 in fixtures/recorded_range/ (its README says how): rangeprof's range records
against the rows that 'ncu --replay-mode range' wrote for the same NVTX ranges, matched by
the range's NVTX path (ncu names every such row 'range'). The recorded files are read as
they are; the tests that need another name or a nested range edit a copy in tmp_path."""
import contextlib
import csv
import io
import json
import statistics
from pathlib import Path

import pytest

from conftest import fixture_path
from rangeprof import compare_ncu as ncu

RECORDED_RANGE = Path(__file__).parent / "fixtures" / "recorded_range"
MODES = ["chain", "fused", "unfused", "mlp"]
NVTX_COLUMN = "thread Domain:Push/Pop_Range"


@pytest.fixture
def range_file():
    return lambda name: fixture_path(RECORDED_RANGE, name)


@pytest.fixture
def derived(tmp_path, range_file):
    """derived(name, edit) -> a copy of a recorded file whose lines list went through edit
    (a DERIVED file: not a recording)."""
    def make(name, edit):
        lines = range_file(name).read_text().splitlines(keepends=True)
        out = tmp_path / f"derived_{name}"
        out.write_text("".join(edit(lines)))
        return out
    return make


def _ncu_results(path):
    """The result rows of ncu's raw CSV as {column: cell}, read with the csv module alone."""
    rows = list(csv.reader(l for l in open(path) if not l.startswith("==")))
    return [dict(zip(rows[0], r)) for r in rows[2:]]


def _range_runs(path):
    return [r for r in map(json.loads, open(path))
            if r["type"] == "run" and r.get("workload") == "range"]


def _compare(jsonl, csv_path):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = ncu.main([str(jsonl), str(csv_path), "--json"], out=out)
    return rc, (json.loads(out.getvalue()) if rc == 0 else []), err.getvalue()


# Occurrences of each range in the recorded programs (tests/gpu/run.sh section 6: 4 of
# range_replay.cu's, 8 of range_torch.py's mlp), one ncu result each.
OCCURRENCES = {"chain": 4, "fused": 4, "unfused": 4, "mlp": 8}


@pytest.mark.parametrize("mode", MODES)
def test_the_recorded_ncu_rows_name_the_range_range(range_file, mode):
    """The shape _range_match relies on, as ncu wrote it: one row per occurrence of the
    range, 'Kernel Name' 'range', the range itself in the push/pop stack, no grid."""
    rows = _ncu_results(range_file(f"ncu_{mode}.csv"))
    assert len(rows) == OCCURRENCES[mode]
    nvtx = next(h for h in rows[0] if h.startswith(NVTX_COLUMN))
    assert "Grid Size" not in rows[0]
    for r in rows:
        assert r["Kernel Name"] == "range"
        assert ncu.nvtx_path(r[nvtx]) == mode
        assert r["Stream"] == "n/a"


@pytest.mark.parametrize("mode", MODES)
def test_a_range_matches_ncus_range_results(range_file, mode):
    """Each metric of the range is compared with ncu's results, the cycle counters too
    (CUPTI's 'gpc_cycle' against ncu's 'cycle'); the instructions are the same count and
    the DRAM reads within 3 % (tests/gpu/check_range.py's tables of the same files in
    suite-section6.log), every median the one of the files' own values."""
    jsonl, csv_path = range_file(f"rm_{mode}.jsonl"), range_file(f"ncu_{mode}.csv")
    rc, rows, _ = _compare(jsonl, csv_path)
    assert rc == 0
    runs = _range_runs(jsonl)
    theirs = _ncu_results(csv_path)
    metrics = runs[0]["metrics"].keys()
    by_metric = {r["Metric"]: r for r in rows}
    assert set(by_metric) == set(metrics) and len(rows) == len(metrics)
    assert {"sm__cycles_active.max", "gpc__cycles_elapsed.max"} <= set(by_metric)
    for metric, r in by_metric.items():
        assert r["Annotation"] == mode and r["Kernel"] == runs[0]["kernel"]
        assert r["NcuRuns"] == OCCURRENCES[mode]
        assert r["RangeprofRuns"] == len(runs)
        assert r["NcuMedian"] == statistics.median(
            float(t[metric].replace(",", "")) for t in theirs)
        assert r["RangeprofMedian"] == statistics.median(x["metrics"][metric] for x in runs)
    inst = by_metric["smsp__inst_executed.sum"]
    assert inst["NcuMedian"] == inst["RangeprofMedian"] and inst["DiffPct"] == 0
    read = by_metric["dram__bytes_read.sum"]
    assert abs(read["DiffPct"]) < 3
    assert read["DiffPct"] == pytest.approx(
        100 * (read["RangeprofMedian"] - read["NcuMedian"]) / read["NcuMedian"])


def _rename_range(old, new, wrap=None):
    """An edit of a JSONL's lines: range old's records renamed new (name, nvtx, nvtx_path,
    mangled), or with wrap, put inside a push/pop range of that name (the path
    'wrap/old')."""
    def edit(lines):
        out = []
        for line in lines:
            rec = json.loads(line)
            if rec.get("nvtx_path") == old:
                if wrap:
                    rec["nvtx"] = [dict(domain="", text=wrap, kind="push_pop")] + rec["nvtx"]
                    rec["nvtx_path"] = f"{wrap}/{old}"
                else:
                    rec["nvtx"] = [dict(e, text=new) if e["text"] == old else e
                                   for e in rec["nvtx"]]
                    rec["nvtx_path"] = new
                    rec["range"]["name"] = rec["mangled"] = new
            out.append(json.dumps(rec) + "\n")
        return out
    return edit


def test_a_range_ncu_did_not_profile_is_not_matched(range_file, derived):
    """rm_chain.jsonl's range renamed 'other' (a DERIVED copy) against the recorded
    ncu_chain.csv: no key of it has ncu rows, nothing is compared, and the CLI says so
    (exit status 2)."""
    jsonl = derived("rm_chain.jsonl", _rename_range("chain", "other"))
    assert {r["nvtx_path"] for r in _range_runs(jsonl)} == {"other"}
    rc, rows, err = _compare(jsonl, range_file("ncu_chain.csv"))
    assert rc == 2 and rows == []
    assert "no kernel of the JSONL is in ncu's output" in err
    _, rp = ncu.read_rangeprof([str(jsonl)])
    theirs = ncu.read_ncu_csv(range_file("ncu_chain.csv"))
    assert [k[:2] for k in rp] == [("other", "other")]
    assert all(ncu.match(k, theirs) is None for k in rp)
    assert ncu.compare(rp, theirs) == []


def _nest_in_outer(lines):
    """ncu_chain.csv with an 'outer' range around 'chain' in every push/pop cell: the
    stack outermost first, one quoted entry per range, as ncu writes a kernel's (no nested
    range result was recorded; this is a DERIVED copy, the text edited in place)."""
    entry = '""<default domain>:{}:none:none:none:none:none:none""'
    return [l.replace(entry.format("chain"), entry.format("outer") + " " + entry.format("chain"))
            for l in lines]


def test_a_nested_range_matches_by_its_whole_path(range_file, derived):
    """ncu's stack 'outer/chain' matches rangeprof's path 'outer/chain' (both DERIVED
    copies of the recorded chain files); neither matches the other file's plain 'chain'."""
    nested_csv = derived("ncu_chain.csv", _nest_in_outer)
    assert {ncu.nvtx_path(r[next(h for h in r if h.startswith(NVTX_COLUMN))])
            for r in _ncu_results(nested_csv)} == {"outer/chain"}
    nested_jsonl = derived("rm_chain.jsonl", _rename_range("chain", None, wrap="outer"))
    rc, rows, _ = _compare(nested_jsonl, nested_csv)
    assert rc == 0
    assert {r["Annotation"] for r in rows} == {"outer/chain"}
    assert all(r["NcuRuns"] == 4 for r in rows) and len(rows) == 6
    plain_rc, plain_rows, _ = _compare(range_file("rm_chain.jsonl"), range_file("ncu_chain.csv"))
    assert plain_rc == 0
    assert [(r["Metric"], r["NcuMedian"]) for r in rows] == \
        [(r["Metric"], r["NcuMedian"]) for r in plain_rows]
    assert _compare(range_file("rm_chain.jsonl"), nested_csv)[0] == 2
    assert _compare(nested_jsonl, range_file("ncu_chain.csv"))[0] == 2


@pytest.mark.parametrize("mode,kernels", [("chain", 3), ("fused", 1), ("unfused", 2), ("mlp", 5)])
def test_recorded_range_runs_read_like_kernels_in_the_dataframe(range_file, mode, kernels):
    """The recorded range runs, as the DataFrame reads them: Annotation the range, Kernel
    the record's 'N kernels: ...' text, RangeKernels N, one row per run and metric, the
    values the records hold."""
    pytest.importorskip("pandas")
    from rangeprof import frame
    path = range_file(f"rm_{mode}.jsonl")
    runs = [r for r in map(json.loads, path.read_text().splitlines())
            if r.get("type") == "run" and r.get("workload") == "range"]
    df = frame.load(str(path))
    rng = df[df["Workload"] == "range"]
    assert set(rng["Annotation"]) == {mode}
    assert set(rng["RangeKernels"]) == {kernels}
    assert set(rng["Kernel"]) == {r["kernel"] for r in runs}
    assert all(k.startswith(f"{kernels} kernel") for k in rng["Kernel"])
    assert len(rng) == sum(len(r["metrics"]) for r in runs)
    time = rng[rng["Metric"] == "gpu__time_duration.sum"]
    assert sorted(time["Value"]) == sorted(r["metrics"]["gpu__time_duration.sum"] for r in runs)


def test_run_compares_a_range_with_the_range_ncu_wrote(range_file, stand_in_ncu):
    """--run on a range file asks ncu for range replay of the session's ranges, and
    compares the range CSV ncu wrote for the same program on the H200 (a stand-in ncu
    hands back the recorded ncu_chain.csv): every metric matched, 4 ncu values each."""
    fake, argv_log = stand_in_ncu(range_file("ncu_chain.csv"))
    out = io.StringIO()
    rc = ncu.main([str(range_file("rm_chain.jsonl")), "--ncu", str(fake), "--json", "--run",
                   "--", "./range_replay", "chain", "4"], out=out)
    assert rc == 0
    argv = json.load(open(argv_log))
    assert argv[argv.index("--replay-mode") + 1] == "range"
    assert argv[argv.index("--nvtx-include") + 1] == "chain/"
    assert argv[argv.index("--clock-control") + 1] == "none"
    rows = json.loads(out.getvalue())
    assert {r["Metric"] for r in rows} == {"gpu__time_duration.sum", "dram__bytes_read.sum",
                                           "dram__bytes_write.sum", "smsp__inst_executed.sum",
                                           "sm__cycles_active.max", "gpc__cycles_elapsed.max"}
    assert {r["NcuRuns"] for r in rows} == {4} and {r["Annotation"] for r in rows} == {"chain"}
