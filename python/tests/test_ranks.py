"""Ranks compared (rangeprof/ranks.py, rangeprof-report --by-rank, rangeprof-plot by-rank):
the statistics on synthetic data with a known straggler and with none, and the tools on
files bench/gen_cluster.py makes from the H200 recording (a slow GPU among 16 ranks)."""
import io
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rangeprof import ranks, report

ROOT = Path(__file__).resolve().parents[2]
GEN = ROOT / "bench" / "gen_cluster.py"


def synthetic(k=16, n=30, slow=None, slow_pct=5.0, run_sd=0.01, rank_sd=0.0, seed=0,
              groups=1):
    """A load()-like frame: groups kernels x k ranks x n runs of time ~ N(1000, run_sd),
    each rank's mean moved by N(0, rank_sd), rank slow by slow_pct % with a lower clock."""
    rng = np.random.default_rng(seed)
    rows = []
    for g in range(groups):
        for r in range(k):
            shift = 1 + rng.normal(0, rank_sd) + (slow_pct / 100 if r == slow else 0)
            v = 1000 * shift * (1 + rng.normal(0, run_sd, n))
            rows.append(pd.DataFrame(dict(
                Annotation=f"step g={g}", Kernel=f"k{g}", Metric="gpu__time_duration.sum",
                Value=v, Unit="nanosecond", Session=f"h:{r}:t", Host=f"h{r // 8}",
                JobId="j1", Rank=float(r), GPU="NVIDIA H200", Device=r % 8,
                SMClock=1.755e9 if r == slow else 1.98e9,
                Temperature=55.0 if r == slow else 40.0,
                ThrottleReasons="sw_thermal_slowdown" if r == slow else "")))
    return pd.concat(rows, ignore_index=True)


def test_holm_adjusts_as_the_step_down_procedure():
    # Sorted: 0.005*4 = 0.02, 0.01*3 = 0.03, 0.03*2 = 0.06, 0.04*1 = 0.04 -> 0.06.
    assert ranks.holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert math.isnan(ranks.holm([math.nan, 0.5])[0])


def test_f_tail_matches_scipy():
    scipy_stats = pytest.importorskip("scipy.stats")
    for f, d1, d2 in [(2.5, 15, 464), (0.7, 3, 20), (40.0, 1, 5)]:
        assert ranks.f_sf(f, d1, d2) == pytest.approx(scipy_stats.f.sf(f, d1, d2), rel=1e-9)


def test_known_straggler_is_named_with_its_clock_temperature_and_reasons():
    groups, per_rank = ranks.compare(synthetic(slow=5))
    assert [g["StandOut"] for g in groups] == ["5"]
    slow = [r for r in per_rank if r["StandsOut"]]
    assert len(slow) == 1 and slow[0]["Rank"] == 5
    assert slow[0]["DiffPct"] == pytest.approx(5, abs=0.6)
    assert slow[0]["SMClockMHz"] == pytest.approx(1755)
    assert slow[0]["OthersSMClockMHz"] == pytest.approx(1980)
    assert slow[0]["TemperatureC"] == 55 and slow[0]["OthersTemperatureC"] == 40
    assert slow[0]["ThrottledPct"] == 100 and slow[0]["OthersThrottledPct"] == 0
    assert slow[0]["ThrottleReasons"] == "sw_thermal_slowdown"
    # The ordinary ranks are compared with the others without the straggler: none of
    # them looks fast because of it.
    assert all(abs(r["DiffPct"]) < 1 for r in per_rank if not r["StandsOut"])


def test_a_fast_rank_stands_out_too():
    groups, _ = ranks.compare(synthetic(slow=2, slow_pct=-4))
    assert groups[0]["StandOut"] == "2"


def test_null_case_names_no_rank():
    groups, per_rank = ranks.compare(synthetic(slow=None, seed=3, groups=20))
    assert not any(r["StandsOut"] for r in per_rank)
    assert all(g["StandOut"] == "" for g in groups)


def test_holm_over_ranks_holds_the_family_wise_error_whatever_their_number():
    # 64 ranks without a straggler, 200 kernels, no minimum difference: unadjusted, about
    # 1 - 0.99^64 = 47 % of the kernels would name a rank at p <= 0.01; with Holm over the
    # ranks at most about 1 % may (binomial(200, 0.01): 8 or more has p < 0.001).
    groups, per_rank = ranks.compare(synthetic(k=64, n=20, seed=7, groups=200),
                                     alpha=0.01, min_diff_pct=0)
    named = sum(g["StandOut"] != "" for g in groups)
    raw = len({(r["Kernel"]) for r in per_rank if r["P"] <= 0.01})
    assert raw >= 60, raw
    assert named <= 7, named


def test_variance_components_recover_the_spread_across_ranks_and_runs():
    groups, _ = ranks.compare(synthetic(k=200, n=50, rank_sd=0.02, run_sd=0.01, seed=11),
                              min_diff_pct=100)
    g = groups[0]
    assert g["RankSDPct"] == pytest.approx(2.0, abs=0.3)
    assert g["RunSDPct"] == pytest.approx(1.0, abs=0.05)
    assert g["ICC"] == pytest.approx(0.8, abs=0.05)
    assert g["P"] < 1e-12
    null, _ = ranks.compare(synthetic(k=20, n=30, seed=5))
    assert null[0]["RankSDPct"] < 0.3 and null[0]["P"] > 0.001


def test_two_ranks_on_one_gpu_are_compared():
    # The GPU suite's case: torchrun --nproc-per-node 2 on one H200.
    groups, per_rank = ranks.compare(synthetic(k=2, n=20, seed=1))
    assert groups[0]["Ranks"] == 2 and len(per_rank) == 2
    assert {r["Rank"] for r in per_rank} == {0, 1}


def test_processes_without_a_rank_count_as_ranks_of_their_own():
    df = synthetic(k=4, n=10, seed=2)
    df["Rank"] = np.nan
    groups, per_rank = ranks.compare(df)
    assert {r["Rank"] for r in per_rank} == {"h:0:t", "h:1:t", "h:2:t", "h:3:t"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    out = tmp_path_factory.mktemp("cluster")
    subprocess.run([sys.executable, str(GEN), str(out / "slow"), "--hosts", "2",
                    "--launches", "10", "--runs", "10"], check=True)
    subprocess.run([sys.executable, str(GEN), str(out / "even"), "--hosts", "2",
                    "--launches", "10", "--runs", "10", "--slow-rank", "-1"], check=True)
    return out


def test_by_rank_report_names_the_slow_gpu_of_generated_files(cluster, capsys):
    out = io.StringIO()
    assert report.main([str(cluster / "slow"), "--by-rank", "--csv"], out) == 0
    df = pd.read_csv(io.StringIO(out.getvalue()))
    assert set(df["Rank"]) == set(range(16))
    flagged = df[df["StandsOut"]]
    assert set(flagged["Rank"]) == {3} and len(flagged) == 5  # each of its 5 kernels
    assert (flagged["Host"] == "node000").all()
    assert (flagged["SMClockMHz"] < 1760).all() and (flagged["OthersSMClockMHz"] > 1970).all()
    assert (flagged["ThrottleReasons"] == "sw_thermal_slowdown").all()


def test_by_rank_report_text_and_null_case(cluster, capsys):
    out = io.StringIO()
    assert report.main([str(cluster / "even"), "--by-rank"], out) == 0
    assert "No rank stands out" in out.getvalue() and "RankSDPct" in out.getvalue()
    out = io.StringIO()
    assert report.main([str(cluster / "slow"), "--by-rank"], out) == 0
    assert "Ranks that stand out" in out.getvalue() and "node000" in out.getvalue()


def test_by_rank_refusals(cluster, capsys):
    assert report.main([str(cluster / "slow"), "--by-rank", "--metric", "a,b"]) == 2
    assert "compares one metric" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:  # argparse's refusal, as for every option
        report.main([str(cluster / "slow"), "--by-rank", "--alpha", "2"])
    assert e.value.code == 2
    one = cluster / "slow" / "node000.r0.jsonl"
    assert report.main([str(one), "--by-rank"]) == 1
    assert "two or more ranks" in capsys.readouterr().err


def test_by_rank_plot_is_drawn(cluster, tmp_path):
    pytest.importorskip("matplotlib")
    from rangeprof import plots
    out = tmp_path / "ranks.png"
    assert plots.main(["by-rank", str(cluster / "slow"), "-o", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert plots.main(["by-rank", str(cluster / "slow" / "node000.r0.jsonl"), "-o",
                       str(tmp_path / "x.png")]) == 2


def test_two_recorded_h200_processes_are_compared_as_ranks(recorded):
    # vadd.jsonl and vadd_again.jsonl: the same program recorded twice on the H200, no
    # launcher: each process counts as a rank, and neither stands out.
    out = io.StringIO()
    assert report.main([str(recorded("vadd.jsonl")), str(recorded("vadd_again.jsonl")),
                        "--by-rank", "--csv"], out) == 0
    df = pd.read_csv(io.StringIO(out.getvalue()))
    assert df.groupby("Annotation")["Rank"].nunique().eq(2).all()
    assert len(df) == 6 and not df["StandsOut"].any()
    assert set(df["GPU"]) == {"NVIDIA H200"}
