"""rangeprof-compare gives a verdict only where one can be judged (issue 38): kernels found
on one side only are listed and fail the gate, and too few runs, units that differ, other
GPUs, a zero baseline and sessions mixed in one file each say 'cannot judge' and why,
with exit statuses of their own. Every B here is a recorded file edited in one known way,
so that what the verdict should be is known by construction."""
import io
import json

import pytest

from rangeprof import compare

TIME = "gpu__time_duration.sum"
SMALL, MID, BIG = "vadd n=4096", "vadd n=1048576", "vadd n=16777216"


def run(*argv):
    out = io.StringIO()
    code = compare.main([str(a) for a in argv] + ["--json"], out=out)
    return code, (json.loads(out.getvalue()) if out.getvalue() else [])


def edited(damaged, name, fn, as_name=None):
    """A copy of a recorded file with fn(rec) applied to each record (fn returns the
    record, a list of records, or None to drop it), named as_name (default: damaged_NAME)
    beside damaged's copies."""
    def edit(lines):
        out = []
        for line in lines:
            got = fn(json.loads(line))
            for rec in ([] if got is None else got if isinstance(got, list) else [got]):
                out.append(json.dumps(rec) + "\n")
        return out
    path = damaged(name, edit)
    if as_name:
        path = path.rename(path.with_name(as_name))
    return path


def row(rows, annotation, metric=TIME, verdict=None):
    hits = [r for r in rows if r["Annotation"] == annotation and r["Metric"] == metric
            and (verdict is None or r["Verdict"] == verdict)]
    assert len(hits) == 1, (annotation, metric, verdict, rows)
    return hits[0]


# ---------------------------------------------------------------------------------------
# Finding 2: kernels on one side only

def test_a_kernel_whose_grid_changed_and_a_new_kernel_are_named_and_fail_the_gate(
        recorded, damaged, capsys):
    """B: the middle range's kernel runs with another grid and 3x slower, and a new kernel
    appears in the small range. Before, both vanished and compare exited 0."""
    def fn(rec):
        if rec["type"] != "run":
            return rec
        if rec["nvtx_path"] == MID:
            rec["grid"] = [rec["grid"][0] * 2, 1, 1]
            rec["metrics"][TIME] *= 3
        if rec["nvtx_path"] == SMALL:
            new = json.loads(json.dumps(rec))
            new["kernel"] = "void extra_kernel(float*)"
            new["launch"] += 100000
            return [rec, new]
        return rec
    b = edited(damaged, "vadd_again.jsonl", fn)
    code, rows = run(recorded("vadd.jsonl"), b)
    assert code == compare.EXIT["unmatched"] == 3
    err = capsys.readouterr().err
    assert "1 row(s) only in A, 2 only in B" in err
    gone = row(rows, MID, verdict="only in A")
    came = row(rows, MID, verdict="only in B")
    assert gone["Grid"] != came["Grid"] and came["Reason"] == f"A has it with grid {gone['Grid']}"
    assert came["MeanB"] == pytest.approx(3 * gone["MeanA"], rel=0.05)
    extra = [r for r in rows if r["Kernel"] == "void extra_kernel(float*)"]
    assert [r["Verdict"] for r in extra] == ["only in B"]
    assert extra[0]["Reason"] == "A runs other kernels in this range"
    # The matched rows are still judged.
    assert row(rows, BIG)["Verdict"] == "same"
    # --allow unmatched lists them and passes.
    code, rows2 = run(recorded("vadd.jsonl"), b, "--allow", "unmatched")
    assert code == 0 and rows2 == rows


def test_text_output_names_the_grid_of_unmatched_rows(recorded, damaged):
    def fn(rec):
        if rec["type"] == "run" and rec["nvtx_path"] == MID:
            rec["grid"] = [rec["grid"][0] * 2, 1, 1]
        return rec
    out = io.StringIO()
    code = compare.main([str(recorded("vadd.jsonl")), str(edited(damaged, "vadd.jsonl", fn))],
                        out=out)
    assert code == 3
    head, *lines = out.getvalue().splitlines()
    assert head.split()[:4] == ["Annotation", "Kernel", "Grid", "Metric"]
    assert sum("only in A" in l for l in lines) == 1 and sum("only in B" in l for l in lines) == 1
    assert "Reason" in head.split()


# ---------------------------------------------------------------------------------------
# Finding 3: a zero baseline

def test_a_zero_baseline_that_grew_cannot_be_judged(recorded, damaged):
    """A writes no DRAM bytes in the small range, B 1 MB a run: before, the NaN ratio made
    that an 'improvement' and exit 0."""
    def zero(rec):
        if rec["type"] == "run" and rec["nvtx_path"] == SMALL:
            rec["metrics"]["dram__bytes_write.sum"] = 0
        return rec

    def grown(rec):
        if rec["type"] == "run" and rec["nvtx_path"] == SMALL:
            rec["metrics"]["dram__bytes_write.sum"] = 1e6 + rec["metrics"]["dram__bytes_write.sum"]
        return rec
    a = edited(damaged, "vadd.jsonl", zero, "a.jsonl")
    b = edited(damaged, "vadd_again.jsonl", grown, "b.jsonl")
    code, rows = run(a, b, "--metric", "dram__bytes_write.sum")
    r = row(rows, SMALL, "dram__bytes_write.sum")
    assert r["Verdict"] == "cannot judge" and "baseline (A) mean is 0" in r["Reason"]
    assert code == compare.EXIT["unjudged"] == 4
    # Zero on both sides is no change.
    code, rows = run(a, a, "--metric", "dram__bytes_write.sum")
    assert row(rows, SMALL, "dram__bytes_write.sum")["Verdict"] == "same" and code == 0


# ---------------------------------------------------------------------------------------
# Finding 4: which way is better

def renamed(damaged, name, metric, unit, scale, as_name):
    """The recorded times of a file as another metric, scaled to level * t / mean-ish:
    the recorded run-to-run spread around a chosen level (scale per range)."""
    def fn(rec):
        if rec["type"] == "run":
            t = rec["metrics"].pop(TIME)
            rec["metrics"] = {metric: t * scale[rec["nvtx_path"]]}
            rec["units"] = {metric: unit}
        elif rec["type"] == "summary":
            return None
        return rec
    return edited(damaged, name, fn, as_name)


# Mean times of the three ranges in vadd.jsonl (ns, from its runs) set each level.
_MEANS = {SMALL: 2321.3, MID: 5323.0, BIG: 45058.0}


@pytest.mark.parametrize("metric,unit,low,high", [
    ("lts__t_sector_hit_rate.pct", "percent", 50, 90),          # L2 hit rate
    ("smsp__inst_executed.avg.per_cycle_active", "inst/cycle", 1, 2),   # IPC
    ("sm__warps_active.avg.per_cycle_active", "warp/cycle", 12.8, 25.6),  # occupancy
])
def test_higher_is_better_metrics_that_rose_are_improvements(recorded, damaged, metric, unit,
                                                           low, high):
    """Before, each was judged as time is: a REGRESSION, exit 1."""
    a = renamed(damaged, "vadd.jsonl", metric, unit, {k: low / m for k, m in _MEANS.items()},
                "a.jsonl")
    b = renamed(damaged, "vadd_again.jsonl", metric, unit,
                {k: high / m for k, m in _MEANS.items()}, "b.jsonl")
    code, rows = run(a, b, "--metric", metric)
    assert {r["Verdict"] for r in rows} == {"improvement"} and code == 0
    assert {r["Better"] for r in rows} == {"higher"}
    code, rows = run(b, a, "--metric", metric)
    assert {r["Verdict"] for r in rows} == {"REGRESSION"} and code == 1


def test_a_stall_that_rose_is_a_regression_and_an_unknown_direction_cannot_be_judged(
        recorded, damaged):
    stall = "smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct"
    scale = {k: 10 / m for k, m in _MEANS.items()}
    a = renamed(damaged, "vadd.jsonl", stall, "percent", scale, "a.jsonl")
    b = renamed(damaged, "vadd_again.jsonl", stall, "percent",
                {k: 2 * v for k, v in scale.items()}, "b.jsonl")
    code, rows = run(a, b, "--metric", stall)
    assert {r["Verdict"] for r in rows} == {"REGRESSION"} and code == 1
    # Warps launched are set by the launch: a change is named, not judged...
    launched = "smsp__warps_launched.sum"
    a = renamed(damaged, "vadd.jsonl", launched, "warp", scale, "a2.jsonl")
    b = renamed(damaged, "vadd_again.jsonl", launched, "warp",
                {k: 2 * v for k, v in scale.items()}, "b2.jsonl")
    code, rows = run(a, b, "--metric", launched)
    assert {r["Verdict"] for r in rows} == {"cannot judge"} and code == 4
    assert all("which way is better is not known" in r["Reason"] for r in rows)
    assert {r["Better"] for r in rows} == {None}
    # ... unless the user says which way is better.
    code, rows = run(a, b, "--metric", launched, "--lower-is-better", launched)
    assert {r["Verdict"] for r in rows} == {"REGRESSION"} and code == 1
    code, rows = run(a, b, "--metric", launched, "--higher-is-better", launched)
    assert {r["Verdict"] for r in rows} == {"improvement"} and code == 0


def test_one_metric_named_both_ways_is_refused(recorded, capsys):
    f = recorded("vadd.jsonl")
    with pytest.raises(SystemExit) as e:
        compare.main([str(f), str(f), "--higher-is-better", TIME, "--lower-is-better", TIME])
    assert e.value.code == 2
    assert "both name 'gpu__time_duration.sum'" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------
# Finding 5: too few runs

@pytest.mark.parametrize("method", ["welch", "bootstrap"])
def test_one_run_against_twenty_cannot_be_judged(recorded, damaged, method):
    """B keeps one run of the large range, 10 % slower. Before: Welch 'same', bootstrap
    p = 0, 'REGRESSION'."""
    kept = []

    def fn(rec):
        if rec["type"] == "run" and rec["nvtx_path"] == BIG:
            if kept:
                return None
            kept.append(rec)
            rec["metrics"][TIME] *= 1.1
        return rec
    b = edited(damaged, "vadd_again.jsonl", fn)
    code, rows = run(recorded("vadd.jsonl"), b, "--method", method)
    r = row(rows, BIG)
    assert r["RunsB"] == 1 and r["Verdict"] == "cannot judge"
    assert r["Reason"] == "B has 1 run < 5 (--min-runs)"
    assert code == 4
    code, rows = run(recorded("vadd.jsonl"), b, "--method", method, "--allow", "unjudged")
    assert code == 0 and row(rows, BIG)["Verdict"] == "cannot judge"


def test_min_runs_is_an_integer_of_at_least_2(recorded, capsys):
    f = recorded("vadd.jsonl")
    for bad in ("1", "2.5", "x"):
        with pytest.raises(SystemExit) as e:
            compare.main([str(f), str(f), "--min-runs", bad])
        assert e.value.code == 2
        assert f"--min-runs: expected an integer >= 2, not '{bad}'" in capsys.readouterr().err
    with pytest.raises(ValueError):
        compare.compare({}, {}, min_runs=1)


# ---------------------------------------------------------------------------------------
# Finding 6: units

def test_times_in_other_units_are_not_compared_as_numbers(recorded, damaged):
    """B's times in microseconds: before, 'improvement -99.88 %'."""
    def fn(rec):
        if rec["type"] == "run":
            rec["metrics"][TIME] /= 1000
            rec["units"][TIME] = "usecond"
        return rec
    b = edited(damaged, "vadd_again.jsonl", fn)
    code, rows = run(recorded("vadd.jsonl"), b)
    assert {r["Verdict"] for r in rows} == {"cannot judge"} and code == 4
    assert all("units differ (A 'nanosecond', B 'usecond')" in r["Reason"] for r in rows)


def test_the_same_unit_spelled_otherwise_is_compared(recorded, damaged):
    def fn(rec):
        if rec["type"] == "run":
            rec["units"][TIME] = "ns"
        return rec
    code, rows = run(recorded("vadd.jsonl"), edited(damaged, "vadd_again.jsonl", fn))
    assert {r["Verdict"] for r in rows} == {"same"} and code == 0


def test_a_side_that_mixes_units_cannot_be_judged(recorded, damaged):
    """Half of B's launches of each range in microseconds: their raw mean is meaningless."""
    def fn(rec):
        if rec["type"] == "run" and rec["launch"] % 2:
            rec["metrics"][TIME] /= 1000
            rec["units"][TIME] = "usecond"
        return rec
    code, rows = run(recorded("vadd.jsonl"), edited(damaged, "vadd_again.jsonl", fn))
    assert code == 4
    for r in rows:
        assert r["Verdict"] == "cannot judge"
        assert "B mixes units ('nanosecond', 'usecond')" in r["Reason"]


# ---------------------------------------------------------------------------------------
# GPUs

def test_recordings_on_different_gpus_cannot_be_judged_unless_allowed(recorded, damaged):
    def fn(rec):
        if rec["type"] == "device":
            rec["name"] = "NVIDIA H100 80GB HBM3"
        return rec
    b = edited(damaged, "vadd_again.jsonl", fn)
    code, rows = run(recorded("vadd.jsonl"), b)
    assert code == 4 and {r["Verdict"] for r in rows} == {"cannot judge"}
    assert all("GPUs differ (A NVIDIA H200, B NVIDIA H100 80GB HBM3; --allow gpus)"
               in r["Reason"] for r in rows)
    code, rows = run(recorded("vadd.jsonl"), b, "--allow", "gpus")
    assert code == 0 and {r["Verdict"] for r in rows} == {"same"}


# ---------------------------------------------------------------------------------------
# Finding 7: sessions appended to one file

def test_a_second_recording_appended_to_the_baseline_file_is_not_pooled(recorded, damaged,
                                                                       tmp_path, capsys):
    """rangeprof -o run.jsonl twice: the file holds the baseline's session and the new
    one, 8.35 % slower on the large add. Pooled, that read as +4.2 %, within a 5 %
    threshold, exit 0."""
    slower = edited(damaged, "vadd_again.jsonl", lambda rec: (
        rec["metrics"].__setitem__(TIME, rec["metrics"][TIME] * 1.0835)
        if rec["type"] == "run" and rec["nvtx_path"] == BIG else None) or rec)
    both = tmp_path / "run.jsonl"
    both.write_text(recorded("vadd.jsonl").read_text() + slower.read_text())
    code, rows = run(recorded("vadd.jsonl"), both, "--threshold", "5")
    assert code == 4
    r = row(rows, BIG)
    assert r["Verdict"] == "cannot judge"
    assert f"B's {both} holds 2 sessions of it" in r["Reason"]
    assert "same session in A and B" in r["Flags"]
    # The new session alone is the comparison that was meant: a regression.
    code, rows = run(recorded("vadd.jsonl"), slower, "--threshold", "5")
    assert code == 1 and row(rows, BIG)["Verdict"] == "REGRESSION"
    # --allow sessions pools them, as before, and says so in the flags.
    code, rows = run(recorded("vadd.jsonl"), both, "--threshold", "5", "--allow", "sessions")
    assert row(rows, BIG)["ChangePct"] == pytest.approx(4.2, abs=0.2)


def test_a_file_compared_with_itself_is_the_same_and_says_so(recorded, capsys):
    """What held up: the same file on both sides is 'same', p = 1, exit 0, with nothing
    on stderr; now each row's flags also say both sides are one session."""
    f = recorded("vadd.jsonl")
    code, rows = run(f, f)
    assert code == 0
    for r in rows:
        assert r["Verdict"] == "same" and r["PValue"] == 1
        assert r["Flags"].endswith("same session in A and B")
    assert capsys.readouterr().err == ""


def test_one_recording_twice_in_a_side_is_not_pooled(recorded, tmp_path):
    """A directory holding a recording and a copy of it: pooled, every run would count
    twice (issue 38, finding 8, compare's side)."""
    import shutil
    side = tmp_path / "b"
    side.mkdir()
    shutil.copy(recorded("vadd_again.jsonl"), side / "one.jsonl")
    shutil.copy(recorded("vadd_again.jsonl"), side / "copy.jsonl")
    code, rows = run(recorded("vadd.jsonl"), side)
    assert code == 4
    for r in rows:
        assert r["Verdict"] == "cannot judge" and r["RunsB"] == 800
        assert "in 2 files" in r["Reason"] and "one recording read twice" in r["Reason"]


def test_two_processes_interleaved_in_one_file_cannot_be_judged(recorded, tmp_path):
    """Finding 10's verdict side: two recordings written into one file by two processes at
    once (no %p), their lines interleaved, records without a pid (as rangeprof wrote
    them before): every run went to the last session line, and the pooled runs - each
    launch's run indexes twice - were judged as one recording."""
    a = recorded("vadd.jsonl").read_text().splitlines()
    b = recorded("vadd_again.jsonl").read_text().splitlines()
    head = lambda lines: [l for l in lines if '"type":"session"' in l or '"type":"device"' in l]
    body = lambda lines: [l for l in lines if l not in head(lines)]
    both = interleaved(tmp_path, head(a) + head(b), body(a), body(b))
    code, rows = run(recorded("vadd.jsonl"), both)
    assert code == 4
    for r in rows:
        assert r["Verdict"] == "cannot judge"
        assert "B holds run 0 of launch" in r["Reason"] and "twice" in r["Reason"]


def interleaved(tmp_path, head, xs, ys):
    """both.jsonl: head's lines, then the lines of xs and ys in turns, as two processes
    writing one file leave them."""
    lines = list(head)
    for x, y in zip(xs, ys):
        lines += [x, y]
    both = tmp_path / "both.jsonl"
    both.write_text("\n".join(lines) + "\n")
    return both


def test_two_processes_interleaved_with_their_pids_are_told_apart(recorded, tmp_path):
    """As rangeprof now writes them, every record carries its writer's pid: the reader
    gives each run to its own session, and compare says B's file holds two sessions of
    each kernel (issue 38, what must be true 3) rather than pooling them."""
    def with_pid(path):
        lines = path.read_text().splitlines()
        pid = json.loads(lines[0])["pid"]
        return [l if '"type":"session"' in l else
                json.dumps(dict(json.loads(l), pid=pid)) for l in lines]
    a, b = with_pid(recorded("vadd.jsonl")), with_pid(recorded("vadd_again.jsonl"))
    assert json.loads(a[0])["pid"] != json.loads(b[0])["pid"]
    both = interleaved(tmp_path, [a[0], b[0]], a[1:], b[1:])
    code, rows = run(recorded("vadd.jsonl"), both)
    assert code == 4
    for r in rows:
        assert r["Verdict"] == "cannot judge" and r["RunsB"] == 800
        assert f"B's {both} holds 2 sessions of it" in r["Reason"]
        assert "twice" not in r["Reason"]  # each launch's runs are its own process's
        assert r["Flags"].endswith("same session in A and B")
    code, rows = run(recorded("vadd.jsonl"), both, "--allow", "sessions")
    assert code == 0 and {r["Verdict"] for r in rows} == {"same"}
