"""rangeprof-compare-ncu on the recorded ncu CSVs: every kernel ncu profiled is matched with
the JSONL's despite the two demanglers' spellings, by NVTX path, name and grid, and the
differences are those of two profilers measuring the same kernels."""
import csv
import io
import json
import re

import pytest

from rangeprof import compare_ncu as ncu


@pytest.mark.parametrize("ours,theirs", [
    ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
     "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)",
     "void at::vectorized_elementwise_kernel<4, at::FillFunctor<float>, std::array<char *, 1>>(int, T2, T3)"),
    ("void (anonymous namespace)::softmax_warp_forward<float, 4>(float*, float const*)",
     "void <unnamed>::softmax_warp_forward<float, 4>(float *, const float *)"),
    ("fma_kernel", "fma_kernel"),
])
def test_names_match_across_demanglers(ours, theirs):
    assert ncu.canonical_kernel(ours) == ncu.canonical_kernel(theirs)


def _ncu_rows(path):
    """(NVTX column, kernel name, grid) of each kernel row of ncu's raw CSV, read with the
    csv module alone."""
    rows = list(csv.reader(l for l in open(path) if not l.startswith("==")))
    head = rows[0]
    nvtx = next(i for i, h in enumerate(head) if h.startswith("thread Domain:Push/Pop_Range"))
    return [(r[nvtx], r[head.index("Kernel Name")], r[head.index("Grid Size")]) for r in rows[2:]]


def _jsonl_kernels(path):
    return {json.loads(l)["kernel"] for l in open(path) if json.loads(l)["type"] == "run"}


@pytest.mark.parametrize("name", ["vadd", "fusion"])
def test_every_ncu_kernel_matches_a_recorded_one(recorded, name):
    """The recorded spellings differ (vadd.ncu.csv drops every namespace, fusion.ncu.csv
    writes at:: for at::native::), yet each of ncu's names is one of the JSONL's."""
    ours = {ncu.canonical_kernel(k): k for k in _jsonl_kernels(recorded(f"{name}.jsonl"))}
    theirs = _ncu_rows(recorded(f"{name}.ncu.csv"))
    assert theirs
    assert any(k not in ours.values() for _, k, _ in theirs), "the spellings do differ"
    for _, kernel, _ in theirs:
        assert ncu.canonical_kernel(kernel) in ours, kernel


@pytest.mark.parametrize("name", ["vadd", "fusion"])
def test_compare_covers_every_ncu_row_with_sane_differences(recorded, name):
    out = io.StringIO()
    assert ncu.main([str(recorded(f"{name}.jsonl")), str(recorded(f"{name}.ncu.csv")), "--json"],
                    out=out) == 0
    rows = json.loads(out.getvalue())
    theirs = _ncu_rows(recorded(f"{name}.ncu.csv"))
    # Every ncu kernel row is counted in exactly one compared group, under its NVTX range.
    times = [r for r in rows if r["Metric"] == "gpu__time_duration.sum"]
    assert sum(r["NcuRuns"] for r in times) == len(theirs)
    for r in times:
        same = [t for t in theirs if f":{r['Annotation']}:" in t[0]
                and ncu.canonical_kernel(t[1]) == ncu.canonical_kernel(r["Kernel"])]
        assert len(same) == r["NcuRuns"]
    runs = {}
    for l in open(recorded(f"{name}.jsonl")):
        rec = json.loads(l)
        if rec["type"] == "run":
            key = (rec["nvtx_path"], rec["kernel"])
            runs[key] = runs.get(key, 0) + 1
    for r in rows:
        assert r["RangeprofRuns"] == runs[(r["Annotation"], r["Kernel"])]
        assert r["Unit"] in ("nanosecond", "byte")
        if r["NcuMedian"]:
            assert r["DiffPct"] == pytest.approx(
                100 * (r["RangeprofMedian"] - r["NcuMedian"]) / r["NcuMedian"])
    # Same kernels, same clocks policy, flushed caches: the times of kernels long enough
    # to hide launch jitter (> 10 us) agree within 3 %, every time within 10 %, and the
    # DRAM reads of the large arrays (> 1 MB) within 1 %.
    for r in times:
        assert abs(r["DiffPct"]) < (3 if r["NcuMedian"] > 10e3 else 10), r
    reads = [r for r in rows if r["Metric"] == "dram__bytes_read.sum" and r["NcuMedian"] > 1e6]
    assert reads and all(abs(r["DiffPct"]) < 1 for r in reads)


def test_units_are_converted(recorded, damaged):
    """A CSV whose times are in microseconds (ncu writes its units per column, here 'ns')
    is converted to the JSONL's nanoseconds before the difference is taken."""
    def to_us(lines):
        head = [l for l in lines if l.startswith("==")]
        rows = list(csv.reader(l for l in lines if not l.startswith("==")))
        col = rows[0].index("gpu__time_duration.sum")
        rows[1][col] = "us"
        for r in rows[2:]:
            r[col] = repr(float(r[col].replace(",", "")) / 1000)
        text = io.StringIO()
        csv.writer(text, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
        return head + [text.getvalue()]
    out_ns, out_us = io.StringIO(), io.StringIO()
    jsonl = str(recorded("vadd.jsonl"))
    ncu.main([jsonl, str(recorded("vadd.ncu.csv")), "--json"], out=out_ns)
    ncu.main([jsonl, str(damaged("vadd.ncu.csv", to_us)), "--json"], out=out_us)
    ns = [r for r in json.loads(out_ns.getvalue()) if r["Metric"] == "gpu__time_duration.sum"]
    us = [r for r in json.loads(out_us.getvalue()) if r["Metric"] == "gpu__time_duration.sum"]
    assert len(ns) == len(us) == 3
    for a, b in zip(ns, us):
        assert b["NcuMedian"] == pytest.approx(a["NcuMedian"], rel=1e-12)


def test_text_table_tells_the_two_unfused_kernels_apart(recorded, capsys):
    out = io.StringIO()
    ncu.main([str(recorded("fusion.jsonl")), str(recorded("fusion.ncu.csv"))], out=out)
    kernels = {re.split(r"\s{2,}", line)[1] for line in out.getvalue().splitlines()[1:]
               if line.startswith("fma variant=unfused")}
    assert len(kernels) == 2, kernels


def test_run_calls_ncu_as_the_recording_was_made(recorded, stand_in_ncu):
    """--run starts ncu itself: never locking clocks, with the session's metrics and NVTX
    includes, the user's command last, and compares its CSV. A stand-in ncu on this
    machine (no GPU) logs its argv and writes the CSV ncu wrote for the same program on
    the H200 into --log-file."""
    fake, argv_log = stand_in_ncu(recorded("vadd.ncu.csv"))
    out = io.StringIO()
    rc = ncu.main([str(recorded("vadd.jsonl")), "--ncu", str(fake), "--json", "--run", "--",
                   "python3", "vector_add.py", "--launches", "5"], out=out)
    assert rc == 0
    argv = json.load(open(argv_log))
    session = json.loads(open(recorded("vadd.jsonl")).readline())
    assert argv[argv.index("--clock-control") + 1] == "none"
    assert argv[argv.index("--cache-control") + 1] == "all"
    assert argv[argv.index("--page") + 1] == "raw" and "--csv" in argv
    assert argv[argv.index("--metrics") + 1] == session["options"]["metrics"]
    includes = [argv[i + 1] for i, a in enumerate(argv) if a == "--nvtx-include"]
    assert "--nvtx" in argv and includes == session["options"]["nvtx_include"]
    assert argv[-4:] == ["python3", "vector_add.py", "--launches", "5"]
    rows = json.loads(out.getvalue())
    assert rows and {r["Metric"] for r in rows} >= {"gpu__time_duration.sum"}
