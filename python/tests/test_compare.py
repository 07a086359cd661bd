"""rangeprof-compare on the recorded vector adds: the same program recorded twice is the
same, a copy with one range's times scaled is a regression past the threshold, and cache
control none against all goes the way the L2 says."""
import io
import json

import pytest

from rangeprof import compare

TIME = "gpu__time_duration.sum"
BIG = "vadd n=16777216"


def run(*argv):
    out = io.StringIO()
    code = compare.main([str(a) for a in argv] + ["--json"], out=out)
    return code, (json.loads(out.getvalue()) if out.getvalue() else [])


def scaled(damaged, name, factor, where=BIG):
    """A recorded file with the time of one range's runs multiplied: a regression that is
    real by construction."""
    def edit(lines):
        out = []
        for l in lines:
            rec = json.loads(l)
            if rec["type"] == "run" and rec["nvtx_path"] == where:
                rec["metrics"][TIME] *= factor
            out.append(json.dumps(rec) + "\n")
        return out
    return damaged(name, edit)


def test_same_program_twice_is_the_same(recorded):
    code, rows = run(recorded("vadd.jsonl"), recorded("vadd_again.jsonl"))
    assert code == 0
    assert [r["Annotation"] for r in rows] == ["vadd n=4096", "vadd n=1048576", BIG]
    for r in rows:
        assert r["RunsA"] == r["RunsB"] == 400
        assert r["Verdict"] == "same" and r["PValue"] > 0.05
        assert r["RatioCI95_Lower"] <= 1 <= r["RatioCI95_Upper"]
        assert r["RatioCI95_Lower"] <= r["Ratio"] <= r["RatioCI95_Upper"]
        assert r["Ratio"] == pytest.approx(r["MeanB"] / r["MeanA"])
    assert run(recorded("vadd.jsonl"), recorded("vadd_again.jsonl"), "--method", "bootstrap")[0] == 0


def test_significant_regression_past_threshold_exits_1(recorded, damaged):
    slower = scaled(damaged, "vadd.jsonl", 1.25)
    code, rows = run(recorded("vadd.jsonl"), slower, "--threshold", "10")
    assert code == 1
    verdicts = {r["Annotation"]: r["Verdict"] for r in rows}
    assert verdicts == {"vadd n=4096": "same", "vadd n=1048576": "same", BIG: "REGRESSION"}
    hit = next(r for r in rows if r["Annotation"] == BIG)
    assert hit["Ratio"] == pytest.approx(1.25) and hit["PValue"] < 1e-6
    assert hit["RatioCI95_Lower"] < 1.25 < hit["RatioCI95_Upper"]
    assert run(recorded("vadd.jsonl"), slower, "--threshold", "40")[0] == 0


def test_small_real_change_is_significant_but_within_threshold(recorded, damaged):
    """2 % on a kernel with 1 % RSD and 400 runs is real; under --threshold 5 it does not
    fail the job."""
    code, rows = run(recorded("vadd.jsonl"), scaled(damaged, "vadd_again.jsonl", 1.02),
                     "--threshold", "5")
    assert code == 0
    hit = next(r for r in rows if r["Annotation"] == BIG)
    assert hit["PValue"] < 0.05 and hit["Verdict"] == "slower (within threshold)"


def test_bootstrap_agrees_on_a_clear_regression(recorded, damaged):
    code, rows = run(recorded("vadd.jsonl"), scaled(damaged, "vadd.jsonl", 1.25),
                     "--method", "bootstrap", "--threshold", "10")
    assert code == 1
    hit = next(r for r in rows if r["Annotation"] == BIG)
    assert 1.2 < hit["RatioCI95_Lower"] < 1.25 < hit["RatioCI95_Upper"] < 1.3


def test_cache_control_none_against_all(recorded):
    """Without the L2 flush between runs, sizes whose three arrays fit in the 60 MiB L2 read
    (almost) nothing from DRAM and run faster; 3 x 64 MiB does not fit, so its DRAM reads
    stay the same. (Unflushed, the previous run's dirty lines are written back during the
    next one: DRAM writes go up, which compare rightly calls a regression.)"""
    l2 = next(json.loads(l)["l2_bytes"] for l in open(recorded("vadd.jsonl"))
              if '"device"' in l)
    _, rows = run(recorded("vadd.jsonl"), recorded("vadd_cache_none.jsonl"), "--metric", "all")
    by = {(r["Annotation"], r["Metric"]): r for r in rows}
    for n in (4096, 1048576, 16777216):
        time, reads = by[(f"vadd n={n}", TIME)], by[(f"vadd n={n}", "dram__bytes_read.sum")]
        if 3 * 4 * n < l2:
            assert time["Verdict"] == "improvement" and time["RatioCI95_Upper"] < 0.9
            assert reads["MeanB"] < 0.05 * reads["MeanA"]
        else:
            assert reads["Ratio"] == pytest.approx(1, abs=0.01)


def test_unstable_groups_are_flagged(recorded):
    """The tiny vector add is not stable (RSD > 2 %) on either side; the large one is."""
    _, rows = run(recorded("vadd.jsonl"), recorded("vadd_again.jsonl"))
    flags = {r["Annotation"]: r["Flags"] for r in rows}
    assert flags["vadd n=4096"] == "A unstable, B unstable"
    assert flags[BIG] == ""


def test_nothing_in_common_exits_2(recorded):
    code, _ = run(recorded("vadd.jsonl"), recorded("matmul.jsonl"))
    assert code == 2


def test_drift_is_judged_per_launch(recorded, stepped):
    """The pooled runs of 20 steady launches whose means step up (2.3 % in all) read as a
    drift in run order, yet no launch drifted: B is not flagged. One launch drifting by 6 %
    flags B, and its summary names the launch."""
    from rangeprof import stats
    code, rows = run(recorded("vadd.jsonl"), stepped())
    # (stepped() edits a copy of vadd.jsonl: the same session, which the flags also say.)
    assert next(r for r in rows if r["Annotation"] == BIG)["Flags"] == "same session in A and B"
    group = next(g for k, g in compare._groups(stepped(), [TIME]).items() if k[0] == BIG)
    assert stats.summarize(group["values"])["reasons"] == ["drifted +2.3 % over 400 runs"]
    code, rows = run(recorded("vadd.jsonl"), stepped(drift_launch=66))
    assert next(r for r in rows if r["Annotation"] == BIG)["Flags"] == \
        "B unstable, same session in A and B"
    group = next(g for k, g in compare._groups(stepped(drift_launch=66), [TIME]).items()
                 if k[0] == BIG)
    reasons = stats.summarize(group["values"], launches=group["launches"],
                              runs=group["runs"])["reasons"]
    assert len(reasons) == 1 and reasons[0].startswith("drifted +6.")
    assert reasons[0].endswith("#66")
