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


def test_steady_summaries_leave_out_each_kernels_first_launch(per_run, tmp_path):
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    path = root / RECORDED / "matmul.jsonl"
    summaries = [json.loads(line) for line in path.read_text().splitlines()]
    summaries = [r for r in summaries if r.get("type") == "summary"]
    kernels = {r["mangled"] for r in summaries}
    steady = per_run.steady_summaries(str(path), 10)
    assert len(steady) == len(summaries) - len(kernels)
    assert [r["launch"] for r in steady] == [r["launch"] for r in summaries
                                             if r is not _first(summaries, r["mangled"])]


def _first(summaries, mangled):
    return next(r for r in summaries if r["mangled"] == mangled)


def test_a_summary_with_fewer_runs_than_asked_is_refused_by_launch(per_run, tmp_path):
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    lines = (root / RECORDED / "vadd.jsonl").read_text().splitlines()
    recs = [json.loads(line) for line in lines]
    second = [r for r in recs if r.get("type") == "summary"][1]
    second["runs"] = 1  # as a launch that kept run 0 alone (session 18's defect)
    out = tmp_path / "short.jsonl"
    out.write_text("".join(json.dumps(r) + "\n" for r in recs))
    with pytest.raises(ValueError, match=rf"launch {second['launch']} kept 1 runs of 20 asked"):
        per_run.steady_summaries(str(out), 20)


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
