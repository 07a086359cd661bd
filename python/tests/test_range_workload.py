"""Range workloads (issue 20, --replay-mode range): a whole NVTX range measured as one
workload, workload "range", read by every tool like a kernel: Annotation is the range's
NVTX path, Kernel the record's kernel text (its kernels' count and names), RangeKernels and
RangeKernelNames the range's kernel count and names; files without the member (all of
fixtures/recorded) read as before.

The range records here are SCHEMA TRANSFORMATIONS of recorded kernel records, not
measurements: a recorded launch's run and summary records get the members
collector/records.c writes for a range (workload "range", graph null, grid, block and
shared_mem_bytes null, and the "range" object of doc/records.md, in the writer's member
order; tests/unit/collector/records_test.c checks the writer itself), while their metric
values stay those the recording measured for that one launch. They were made before any
range was recorded on a GPU; recorded range runs and ncu --replay-mode range output are in
fixtures/recorded_range, where test_ncu_range.py matches them (ncu.py's _range_match)."""
import io
import json
import re
import statistics

import pytest

from rangeprof import compare, records, report, stats, table
from rangeprof import compare_ncu as ncu
from rangeprof.names import short_kernel

from fake_control.harness import fake, fake_path  # noqa: F401 (fixtures)

TIME = "gpu__time_duration.sum"
UNFUSED = "fma variant=unfused n=16777216"
# The members a per-launch record begins with, as collector/records.c's add_launch writes
# them for a range workload; the recorded files predate "workload" and "graph".
LAUNCH_ORDER = ["type", "launch", "runs", "kernel", "mangled", "device", "context", "stream",
                "grid", "block", "shared_mem_bytes", "nvtx", "nvtx_omitted", "nvtx_path",
                "workload", "graph", "range", "cache_control", "clock_control", "passes"]


def as_range(rec, kernel_names, text):
    """The recorded run or summary record rec as collector/records.c writes a range
    workload's (see the module's docstring: a schema transformation, its values are the
    recorded launch's own)."""
    new = dict(rec, kernel=text, grid=None, block=None, shared_mem_bytes=None,
               workload="range", graph=None,
               range=dict(name=rec["nvtx"][-1]["text"], kernels=len(kernel_names),
                          kernel_names=list(kernel_names), memsets=0, copies=0,
                          graph_launches=0, event_ops=0, syncs=0, streams=[rec["stream"]]))
    keys = [k for k in LAUNCH_ORDER if k in new] + [k for k in rec if k not in LAUNCH_ORDER]
    return {k: new[k] for k in keys}


def _line(rec):
    return json.dumps(rec, separators=(",", ":")) + "\n"  # as the writer: no spaces


def _with_replay_mode(rec):
    """A session record whose options say --replay-mode range (collector/records.c writes
    replay_mode after graph_profiling, before clock_control; the recording has neither)."""
    options = {}
    for k, v in rec["options"].items():
        if k == "clock_control":
            options["replay_mode"] = "range"
        options[k] = v
    return dict(rec, options=options)


@pytest.fixture
def fusion_ranges(recorded, damaged):
    """fusion.jsonl with each execution of the unfused range (two PyTorch kernels: launches
    13 and 14, 15 and 16, ... 21 and 22) turned into one range workload named after the
    range, holding the first launch's recorded runs (its values: see the docstring); the
    Triton and CuPy ranges stay kernel records, as recorded (without "workload")."""
    src = [json.loads(l) for l in open(recorded("fusion.jsonl"))]
    names = {}
    for r in src:
        if r["type"] == "run":
            names.setdefault(r["launch"], r["kernel"])

    def edit(lines):
        out = []
        for line in lines:
            rec = json.loads(line)
            if rec["type"] in ("run", "summary") and rec["nvtx_path"] == UNFUSED:
                if (rec["launch"] - 13) % 2:
                    continue  # the range's second kernel: in the range's record now
                kernels = [names[rec["launch"]], names[rec["launch"] + 1]]
                rec = as_range(rec, kernels, "2 kernels: " + ", ".join(kernels))
            elif rec["type"] == "session":
                rec = _with_replay_mode(rec)
            out.append(_line(rec))
        return out
    path = damaged("fusion.jsonl", edit)
    return path, names


def test_the_transformed_records_are_what_the_reader_accepts(fusion_ranges):
    path, _ = fusion_ranges
    recs = records.read(path, report=None)
    assert not recs.bad_lines
    ranges = [r for r in recs.runs if r.record.get("workload") == "range"]
    assert len(ranges) == 50 and len(recs.runs) == 150
    assert all(r.range["kernels"] == 2 and r.annotation == UNFUSED for r in ranges)
    assert all(r.range is None for r in recs.runs if r.record.get("workload") != "range")


def test_a_range_has_dataframe_rows_like_a_kernel(fusion_ranges):
    pytest.importorskip("pandas")
    from rangeprof import frame
    path, names = fusion_ranges
    text = "2 kernels: " + ", ".join([names[13], names[14]])
    for df in (frame.load(path), frame.load(path, derive=["x=2*" + TIME])):  # both readers
        df = df[df["Metric"] != "x"]
        rng = df[df["Workload"] == "range"]
        assert len(rng) == 5 * 10 * 3  # 5 range executions, 10 runs, 3 metrics
        assert set(rng["Annotation"]) == {UNFUSED}
        assert set(rng["Kernel"]) == {text}
        assert set(rng["RangeKernels"]) == {2}
        assert set(rng["RangeKernelNames"]) == {names[13] + "; " + names[14]}
        assert set(rng["Grid"]) == {""} and rng["SharedMemBytes"].isna().all()
        assert rng["Launch"].nunique() == 5
        assert set(rng["variant"]) == {"unfused"}
        # The mixed file's kernel records, written before "workload": as they were.
        kern = df[df["Workload"] != "range"]
        assert set(kern["Workload"]) == {"kernel"} and len(kern) == 300
        assert kern["RangeKernels"].isna().all() and kern["RangeKernelNames"].isna().all()
        assert set(kern["Kernel"]) == {"fma_kernel", "tutorial_fused_fma"}
        # The values are the records' (launch 13's first run first).
        first = rng[(rng["Metric"] == TIME)].sort_values("Line").iloc[0]
        rec = next(json.loads(l) for l in open(path) if '"workload":"range"' in l
                   and l.startswith('{"type":"run"'))
        assert first["Value"] == rec["metrics"][TIME] and first["Run"] == 0


def test_files_without_range_records_read_as_before(recorded):
    pytest.importorskip("pandas")
    from rangeprof import frame
    df = frame.load(recorded("fusion.jsonl"))
    assert set(df["Workload"]) == {"kernel"}
    assert df["RangeKernels"].isna().all() and df["RangeKernelNames"].isna().all()
    assert df["RangeKernels"].dtype == "float64"
    assert df["Grid"].ne("").all()


def _report(argv):
    out = io.StringIO()
    assert report.main(argv, out=out) == 0
    return out.getvalue()


def test_the_report_groups_a_ranges_runs_like_a_kernels(fusion_ranges):
    path, names = fusion_ranges
    rows = json.loads(_report([str(path), "--metric", TIME, "--json"]))
    mine = [r for r in rows if r["Annotation"] == UNFUSED]
    assert len(mine) == 1
    row = mine[0]
    assert row["Kernel"] == "2 kernels: " + ", ".join([names[13], names[14]])
    assert row["Launches"] == 5 and row["NumRuns"] == 50
    values = [json.loads(l)["metrics"][TIME] for l in open(path)
              if '"workload":"range"' in l and l.startswith('{"type":"run"')]
    s = stats.summarize(values)
    assert row["AvgValue"] == pytest.approx(s["mean"]) and row["MedianValue"] == s["median"]
    # The text table: one line for the range, its kernel names shortened.
    line = next(l for l in _report([str(path), "--metric", TIME]).splitlines()
                if l.startswith(UNFUSED))
    cells = re.split(r"\s{2,}", line)
    assert cells[1].startswith("2 kernels: vectorized_elementwise_kernel<4, ")  # shortened
    assert cells[2:6] == [TIME, "nanosecond", "5", "50"]
    # Range columns can be grouped by; other workloads have none.
    rows = json.loads(_report([str(path), "--metric", TIME, "--json",
                               "--group-by", "Annotation,Workload,RangeKernels"]))
    assert {(r["Annotation"], r["Workload"], r["RangeKernels"]) for r in rows} == {
        (UNFUSED, "range", 2), ("fma variant=triton n=16777216", "kernel", None),
        ("fma variant=cupy n=16777216", "kernel", None)}


def test_bytes_per_range_counts_the_ranges_kernels(fusion_ranges):
    path, _ = fusion_ranges
    rows = json.loads(_report([str(path), "--bytes", "--json"]))
    kernels = {r["Annotation"]: r["Kernels"] for r in rows}
    assert kernels[UNFUSED] == 2
    assert kernels["fma variant=triton n=16777216"] == 1


def test_compare_matches_a_range_with_itself(fusion_ranges):
    path, _ = fusion_ranges
    out = io.StringIO()
    assert compare.main([str(path), str(path), "--json"], out=out) == 0
    rows = [r for r in json.loads(out.getvalue()) if r["Annotation"] == UNFUSED]
    assert [(r["Metric"], r["RunsA"], r["RunsB"], r["Verdict"]) for r in rows] == [
        (TIME, 50, 50, "same")]


def test_a_damaged_range_member_is_a_bad_line(fusion_ranges, tmp_path):
    path, _ = fusion_ranges
    lines = open(path).read().splitlines(keepends=True)
    at = next(i for i, l in enumerate(lines) if '"workload":"range"' in l
              and l.startswith('{"type":"run"'))
    rec = json.loads(lines[at])
    rec["range"]["kernel_names"][1] = 7
    lines[at] = _line(rec)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(lines))
    recs = records.read(bad, report=None)
    assert [str(b) for b in recs.bad_lines] == [
        f"{bad}:{at + 1}: run record: 'range.kernel_names[1]' should be a string, not an "
        "integer (7); line skipped"]
    assert len(recs.runs) == 149


def test_short_kernel_shortens_each_name_of_a_range_text():
    assert short_kernel("2 kernels: void at::native::f<4, std::array<char*, 3ul> >(int, "
                        "float), void g(float*, int)") == "2 kernels: f<4, array<char*, 3>>, g"
    assert short_kernel("1 kernel: k(int)") == "1 kernel: k"
    # A list inject/range/range_workload.c cut: the count of the others stays.
    assert short_kernel("90 kernels: void a<1ul>(int), b(float)... (88 more)") == \
        "90 kernels: a<1>, b... (88 more)"
    assert short_kernel("0 kernels") == "0 kernels"
    assert short_kernel("void k<1ul>(int)") == "k<1>"


# ----------------------------------------------------------------------------------------
# rangeprof-compare-ncu

@pytest.fixture
def vadd_ranges(damaged):
    """vadd.jsonl with every launch made a range workload of its one kernel (named after
    its range: 'vadd n=4096', ...); values as recorded (see the docstring)."""
    def edit(lines):
        out = []
        for line in lines:
            rec = json.loads(line)
            if rec["type"] in ("run", "summary"):
                rec = as_range(rec, [rec["kernel"]], "1 kernel: " + rec["kernel"])
            elif rec["type"] == "session":
                rec = _with_replay_mode(rec)
            out.append(_line(rec))
        return out
    return damaged("vadd.jsonl", edit)


def test_a_range_ncu_did_not_measure_as_a_range_is_named(damaged, recorded, vadd_ranges,
                                                         capsys):
    """ncu's kernel rows (kernel replay) hold no range result: nothing to compare, and the
    note says ncu must run with --replay-mode range."""
    assert ncu.main([str(vadd_ranges), str(recorded("vadd.ncu.csv"))], out=io.StringIO()) == 2
    err = capsys.readouterr().err
    assert "no kernel of the JSONL is in ncu's output" in err


def test_run_passes_replay_mode_range_from_the_session(vadd_ranges, recorded, stand_in_ncu,
                                                      capsys):
    """--run asks ncu for range replay when the file's session measured ranges. The stand-in
    ncu hands back the recorded kernel-replay CSV: no range rows, so nothing is compared
    and the note says so (test_ncu_range.py has --run on a recorded range CSV)."""
    stand_in, argv_log = stand_in_ncu(recorded("vadd.ncu.csv"))
    assert ncu.main([str(vadd_ranges), "--ncu", str(stand_in), "--json", "--run", "--",
                     "python3", "vector_add.py"], out=io.StringIO()) == 2
    argv = json.load(open(argv_log))
    assert argv[argv.index("--replay-mode") + 1] == "range"
    assert argv[argv.index("--nvtx-include") + 1] == "regex:^vadd /"
    assert "no kernel of the JSONL is in ncu's output" in capsys.readouterr().err


# ----------------------------------------------------------------------------------------
# rangeprof.analyze.kernel (the stand-in library hands back the transformed records)

@pytest.mark.filterwarnings("ignore::rangeprof.exceptions.RangeprofWarning")  # recorded ones
def test_analyze_kernel_in_range_mode_reports_the_range_as_its_kernel(fake, fusion_ranges):
    pytest.importorskip("pandas")
    import rangeprof
    from rangeprof import analyze
    path, names = fusion_ranges
    fake.set("RANGEPROF_FAKE_FIXTURE", path)
    fake.set("RANGEPROF_FAKE_RANGE", UNFUSED)
    fake.set("RANGEPROF_FAKE_ACCEPT", "replay-mode")

    @rangeprof.analyze.kernel(replay_mode="range", runs=10,
                              verbosity=analyze.VerbosityLevel.SILENT)
    def fma():
        with rangeprof.annotate("fma"):
            pass

    df = fma().to_dataframe(extra=True)
    row = df[df["Metric"] == TIME].iloc[0]
    assert len(df[df["Metric"] == TIME]) == 1
    assert row["Annotation"] == "fma" and row["NumRuns"] == 10
    # ncu's Kernel of a range (its "Kernel Name" under --replay-mode range); the range's
    # kernels in rangeprof's own columns.
    assert row["Kernel"] == "range"
    assert row["RangeKernels"] == 2
    assert row["RangeKernelNames"] == table.RANGE_NAME_SEPARATOR.join([names[13], names[14]])
    assert fma().to_dataframe()["Kernel"].tolist() == ["range"] * len(df)
    first = [json.loads(l)["metrics"][TIME] for l in open(path)
             if l.startswith('{"type":"run","launch":13,')]
    assert row["AvgValue"] == pytest.approx(statistics.fmean(first))
