"""bench/per_run.py's arithmetic and record reading (issue 35 item 7's benchmark; it runs
on the GPU machine only): the slope of cost against runs, the steady summaries of a
recorded file, and the floor of one run."""
import json

import pytest

from conftest import source_script

RECORDED = "python/tests/fixtures/recorded"


@pytest.fixture
def per_run():
    return source_script("bench/per_run.py")


def test_the_slope_of_a_line_is_its_cost_per_run(per_run):
    assert per_run.fit_slope([(2, 1.2), (5, 1.5), (20, 3.0)]) == pytest.approx((0.1, 1.0))
    with pytest.raises(ValueError, match=r"two distinct x values, got \[5\]"):
        per_run.fit_slope([(5, 1.0), (5, 2.0)])


def _records(name):
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    return [json.loads(line) for line in (root / RECORDED / name).read_text().splitlines()]


def _write(tmp_path, recs):
    out = tmp_path / "recs.jsonl"
    out.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return str(out)


def test_steady_summaries_leave_out_each_kernels_first_launch(per_run, tmp_path):
    # vadd.jsonl's launches saved by reach (its last configuration fell back to the
    # checkpoint: left out here, refused below).
    recs = [r for r in _records("vadd.jsonl") if r.get("type") != "summary" or
            r["save"]["strategy"] == "reach"]
    summaries = [r for r in recs if r.get("type") == "summary"]
    steady = per_run.steady_summaries(_write(tmp_path, recs), 20)
    assert [r["launch"] for r in steady] == [r["launch"] for r in summaries[1:]]


def test_a_launch_saved_otherwise_than_by_reach_is_refused(per_run, tmp_path):
    recs = _records("vadd.jsonl")
    first_checkpoint = next(r for r in recs if r.get("type") == "summary" and
                            r["save"]["strategy"] == "checkpoint")
    with pytest.raises(ValueError, match=rf"launch {first_checkpoint['launch']} saved by "
                       r"'checkpoint'"):
        per_run.steady_summaries(_write(tmp_path, recs), 20)


def test_the_main_kernel_is_the_longest_and_the_others_are_named(per_run):
    summaries = [r for r in _records("matmul.jsonl") if r.get("type") == "summary"]
    by = {}
    for r in summaries:
        by.setdefault(r["mangled"], []).append(r["metrics"][per_run.TIME]["median"])
    longest = max(by, key=lambda k: sorted(by[k])[len(by[k]) // 2])
    main, others = per_run.main_kernel(summaries)
    assert {r["mangled"] for r in main} == {longest}
    assert others == sorted(set(by) - {longest})


def test_a_summary_with_fewer_runs_than_asked_is_refused_by_launch(per_run, tmp_path):
    recs = _records("vadd.jsonl")
    second = [r for r in recs if r.get("type") == "summary"][1]
    second["runs"] = 1  # as a launch that kept run 0 alone (session 18's defect)
    with pytest.raises(ValueError, match=rf"launch {second['launch']} kept 1 runs of 20 asked"):
        per_run.steady_summaries(_write(tmp_path, recs), 20)


def test_per_run_slopes_follow_each_part(per_run):
    costs = {R: [{"total": 1.0 + 0.1 * R, "runs": 0.02 * R, "stop": 0.5}] * 3
             for R in (2, 5, 20)}
    med, slopes = per_run.per_run(costs)
    assert med[20]["total"] == pytest.approx(3.0)
    assert slopes["total"] == pytest.approx(0.1)
    assert slopes["runs"] == pytest.approx(0.02)
    assert slopes["stop"] == pytest.approx(0.0)


def test_the_floor_of_a_run_is_kernel_restore_and_flush(per_run):
    rates = {"copy_bytes_per_s": 2e12, "flush_s": 30e-6}
    total, parts = per_run.floor_per_run_s(40_000, 64 << 20, rates)
    assert parts == pytest.approx({"kernel_s": 40e-6, "restore_s": (64 << 20) / 2e12,
                                   "flush_s": 30e-6})
    assert total == pytest.approx(sum(parts.values()))
