"""rangeprof-report on recorded files: groups, CSV/JSON, derive, combine, normalise,
presets, bound analysis and bytes per range. Standard library only."""
import csv
import io
import json
import math
import statistics

import pytest

from rangeprof import report


def run(*argv):
    out = io.StringIO()
    assert report.main([str(a) for a in argv], out=out) == 0
    return out.getvalue()


def test_text_table_has_the_statistics(recorded):
    text = run(recorded("vadd.jsonl"), "--metric", "gpu__time_duration.sum")
    header = text.splitlines()[0].split()
    for col in ("Annotation", "Kernel", "NumRuns", "AvgValue", "StdDev", "MinValue",
                "MedianValue", "MaxValue", "CI95_Lower", "CI95_Upper", "RelativeStdDevPct",
                "StableMeasurement"):
        assert col in header


def test_json_groups_match_an_independent_computation(recorded):
    rows = json.loads(run(recorded("vadd.jsonl"), "--metric", "gpu__time_duration.sum", "--json"))
    by_path = {}
    for line in open(recorded("vadd.jsonl")):
        rec = json.loads(line)
        if rec["type"] == "run":
            by_path.setdefault((rec["nvtx_path"], rec["kernel"]), []).append(rec["metrics"]["gpu__time_duration.sum"])
    assert len(rows) == len(by_path)
    for r in rows:
        values = by_path[(r["Annotation"], r["Kernel"])]
        assert r["NumRuns"] == len(values)
        assert r["AvgValue"] == pytest.approx(statistics.fmean(values), rel=1e-12)
        assert r["StdDev"] == pytest.approx(statistics.stdev(values), rel=1e-9)
        assert r["MedianValue"] == statistics.median(values)
        assert isinstance(r["n"], int)


def test_csv_and_group_by_config_column(recorded):
    rows = list(csv.DictReader(io.StringIO(run(recorded("matmul.jsonl"), "--group-by", "dtype",
                                               "--metric", "gpu__time_duration.sum", "--csv"))))
    assert {r["dtype"] for r in rows} == {"fp32", "fp16"}


def test_derived_tflops_per_run(recorded):
    rows = json.loads(run(recorded("matmul.jsonl"), "--combine", "--derive",
                          "tflops=2*n**3/gpu__time_duration.sum/1e3", "--metric", "tflops", "--json"))
    assert rows and all(r["Unit"] == "T/second" for r in rows)
    times = json.loads(run(recorded("matmul.jsonl"), "--combine", "--metric",
                           "gpu__time_duration.sum", "--json"))
    t = {r["Annotation"]: r for r in times}
    for r in rows:
        # mean of per-run ratios, bounded by the ratio at the extreme times
        n = r["n"]
        assert 2 * n ** 3 / t[r["Annotation"]]["MaxValue"] / 1e3 <= r["AvgValue"] * (1 + 1e-9)
        assert r["AvgValue"] <= 2 * n ** 3 / t[r["Annotation"]]["MinValue"] / 1e3 * (1 + 1e-9)


def test_normalize_fp16_against_fp32(recorded):
    rows = json.loads(run(recorded("matmul.jsonl"), "--combine", "--metric", "gpu__time_duration.sum",
                          "--normalize-against", "dtype=fp32", "--json"))
    base = {r["n"]: r["AvgValue"] for r in rows if r["dtype"] == "fp32"}
    for r in rows:
        assert r["Normalized"] == pytest.approx(r["AvgValue"] / base[r["n"]])
        assert r["Speedup"] == pytest.approx(base[r["n"]] / r["AvgValue"])


def test_combine_sums_the_kernels_of_a_range(recorded):
    combined = json.loads(run(recorded("fusion.jsonl"), "--combine", "--metric",
                              "gpu__time_duration.sum", "--json"))
    split = json.loads(run(recorded("fusion.jsonl"), "--metric", "gpu__time_duration.sum", "--json"))
    unfused = [r for r in split if "variant=unfused" in r["Annotation"]]
    assert len(unfused) >= 2, "the unfused range runs several kernels"
    c = next(r for r in combined if "variant=unfused" in r["Annotation"])
    assert " + " in c["Kernel"]
    assert c["AvgValue"] == pytest.approx(sum(r["AvgValue"] for r in unfused), rel=1e-9)


def test_bytes_per_range_show_what_fusion_saves(recorded):
    rows = json.loads(run(recorded("fusion.jsonl"), "--bytes", "--normalize-against",
                          "variant=unfused", "--json"))
    moved = {r["Annotation"]: r for r in rows if r["Metric"] == "dram_bytes"}
    unfused = next(v for k, v in moved.items() if "unfused" in k)
    fused = [v for k, v in moved.items() if "unfused" not in k]
    assert fused and all(f["AvgValue"] < unfused["AvgValue"] for f in fused)
    assert all(f["Normalized"] < 1 for f in fused)


def test_bound_analysis_gives_a_verdict_per_kernel(recorded):
    rows = json.loads(run(recorded("matmul.jsonl"), "--bound", "--json"))
    assert rows
    for r in rows:
        assert r["Verdict"] in ("compute-bound", "memory-bound", "latency-bound")
    vadd = json.loads(run(recorded("vadd.jsonl"), "--bound", "--json"))
    big = [r for r in vadd if "n=16777216" in r["Annotation"]]
    assert big and all(r["Verdict"] == "memory-bound" for r in big)


def test_preset_names_the_metrics():
    text = run("--preset", "roofline")
    assert "rangeprof --metrics gpu__time_duration.sum,dram__bytes_read.sum" in text


def test_bad_derive_is_one_clear_error(recorded, capsys):
    with pytest.raises(SystemExit) as e:
        report.main([str(recorded("vadd.jsonl")), "--derive", "x=os.system("])
    assert "rangeprof-report: error: --derive" in str(e.value)
