"""rangeprof-compare: matching, ratio with CI, Welch/bootstrap verdict, exit status."""
import io
import json

import pytest

from rangeprof import compare


def run(*argv):
    out = io.StringIO()
    code = compare.main([str(a) for a in argv] + ["--json"], out=out)
    return code, (json.loads(out.getvalue()) if out.getvalue() else [])


def scaled(damaged, name, factor, where="n=16777216"):
    """A recorded file with the time of one range's runs multiplied: a regression that is
    real by construction."""
    def edit(lines):
        out = []
        for l in lines:
            rec = json.loads(l)
            if rec["type"] == "run" and where in rec["nvtx_path"]:
                rec["metrics"]["gpu__time_duration.sum"] *= factor
            out.append(json.dumps(rec) + "\n")
        return out
    return damaged(name, edit)


def test_same_program_twice_matches_every_kernel(recorded):
    code, rows = run(recorded("vadd.jsonl"), recorded("vadd_again.jsonl"), "--threshold", "50")
    assert rows and code == 0
    for r in rows:
        assert r["RatioCI95_Lower"] <= r["Ratio"] <= r["RatioCI95_Upper"]
        assert r["Ratio"] == pytest.approx(r["MeanB"] / r["MeanA"])


def test_significant_regression_past_threshold_exits_1(recorded, damaged):
    slower = scaled(damaged, "vadd.jsonl", 1.25)
    code, rows = run(recorded("vadd.jsonl"), slower, "--threshold", "10")
    assert code == 1
    hit = [r for r in rows if "n=16777216" in r["Annotation"]]
    assert hit and all(r["Verdict"] == "REGRESSION" and r["PValue"] < 0.05 for r in hit)
    code, _ = run(recorded("vadd.jsonl"), slower, "--threshold", "40")
    assert code == 0


def test_bootstrap_agrees_on_a_clear_regression(recorded, damaged):
    code, rows = run(recorded("vadd.jsonl"), scaled(damaged, "vadd.jsonl", 1.25),
                     "--method", "bootstrap", "--threshold", "10")
    assert code == 1
    hit = [r for r in rows if "n=16777216" in r["Annotation"]]
    assert all(r["RatioCI95_Lower"] > 1.1 for r in hit)


def test_unstable_groups_are_flagged(recorded):
    _, rows = run(recorded("vadd.jsonl"), recorded("vadd_cache_none.jsonl"), "--threshold", "1000")
    tiny = [r for r in rows if "n=4096" in r["Annotation"]]
    assert tiny
    assert all(isinstance(r["Flags"], str) for r in rows)


def test_nothing_in_common_exits_2(recorded):
    code, _ = run(recorded("vadd.jsonl"), recorded("matmul.jsonl"))
    assert code == 2
