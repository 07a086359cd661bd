"""--bound's peaks (rangeprof/bound.py) for GPUs missing from its table (issue 38, finding
12): the FP32 peak comes from the device record only where the compute capability's FP32
lanes per SM are known, never from an assumed 128; where no peak is known, the verdict is
'unknown' and says which option gives it, not a guess."""
import io
import json

import pytest

from rangeprof import bound, report

# A V100 SXM2 as its device record would give it: 80 SMs, 1530 MHz boost, compute
# capability 7.0, whose SMs have 64 FP32 lanes (15.7 TFLOP/s on its data sheet).
V100 = dict(name="Tesla V100-SXM2-32GB", compute_capability="7.0", sm_count=80,
            rated_sm_clock_hz=1530000000)


def test_a_v100_gets_64_fp32_lanes_per_sm_not_128():
    fp32, tensor, bw = bound.device_peaks(V100)
    assert fp32 == 80 * 64 * 2 * 1.53e9 == pytest.approx(15.67e12, rel=1e-3)
    assert tensor != tensor and bw != bw  # not known: NaN


def test_an_unknown_compute_capability_gets_no_fp32_peak():
    fp32, _, _ = bound.device_peaks(dict(V100, name="NVIDIA B999", compute_capability="99.0"))
    assert fp32 != fp32
    assert bound.device_peaks(dict(V100, compute_capability="99.0"), peak_flops=1e12)[0] == 1e12


def _device_as(rec, **fields):
    if rec["type"] == "device":
        rec.update(fields)
    return rec


def _bound(path, *extra):
    out = io.StringIO()
    assert report.main([str(path), "--bound", "--json", *extra], out=out) == 0
    return {r["Annotation"]: r for r in json.loads(out.getvalue())}


def _edited(damaged, name, fn):
    return damaged(name, lambda lines: [json.dumps(fn(json.loads(l))) + "\n" for l in lines])


def test_the_percent_of_peak_of_a_gpu_outside_the_table_is_not_halved(recorded, damaged):
    """The recorded fp32 matmuls as if run on a V100 (its device record): their FP32 peak
    is 80 x 64 x 2 x 1.53 GHz. Before, 128 lanes doubled it and halved the % of peak."""
    path = _edited(damaged, "matmul.jsonl", lambda r: _device_as(r, **V100))
    rows = _bound(path, "--peak-bandwidth", "900e9")
    for n in (1024, 2048, 4096, 8192):
        r = rows[f"matmul n={n} dtype=fp32"]
        assert r["PeakFLOPsPerSecond"] == 80 * 64 * 2 * 1.53e9
        assert r["PctPeakFLOPs"] == pytest.approx(100 * r["FLOPsPerSecond"] / 15.6672e12)


def test_no_peak_known_is_an_unknown_verdict_naming_the_option(recorded, damaged):
    """A GPU of an unknown compute capability, its throughput counters left out: the
    FLOPs are known, the FP32 peak is not, so no verdict (bandwidth alone would have
    called the compute-bound matmul latency-bound)."""
    def fn(rec):
        _device_as(rec, name="NVIDIA B999", compute_capability="99.0")
        if rec["type"] == "run":
            for m in ("sm__throughput.avg.pct_of_peak_sustained_elapsed",
                      "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"):
                rec["metrics"].pop(m, None)
        return rec
    path = _edited(damaged, "matmul.jsonl", fn)
    rows = _bound(path, "--peak-bandwidth", "4.8e12")
    r = rows["matmul n=8192 dtype=fp32"]
    assert r["Verdict"] == "unknown"
    assert r["Basis"] == ("no FLOP/s peak known for NVIDIA B999 (compute capability 99.0): "
                          "give --peak-flops")
    # Given, the roofline judges it.
    rows = _bound(path, "--peak-bandwidth", "4.8e12", "--peak-flops", "67e12")
    assert rows["matmul n=8192 dtype=fp32"]["Basis"] == "roofline"
    assert rows["matmul n=8192 dtype=fp32"]["Verdict"] == "compute-bound"


def test_no_bandwidth_peak_known_is_said(recorded, damaged):
    path = _edited(damaged, "vadd.jsonl",
                   lambda r: _device_as(r, name="NVIDIA B999", compute_capability="99.0"))
    r = _bound(path)["vadd n=16777216"]
    assert r["Verdict"] == "unknown" and r["Basis"].endswith("give --peak-bandwidth")
