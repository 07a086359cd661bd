"""rangeprof-compare-ncu: demangler differences and the recorded ncu CSV."""
import io
import json

import pytest

from rangeprof import ncu


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


def test_recorded_ncu_csv_matches_the_recording(recorded):
    out = io.StringIO()
    assert ncu.main([str(recorded("vadd.jsonl")), str(recorded("vadd.ncu.csv")), "--json"], out=out) == 0
    rows = json.loads(out.getvalue())
    assert {r["Metric"] for r in rows} >= {"gpu__time_duration.sum"}
    for r in rows:
        assert r["NcuRuns"] >= 1 and r["RangeprofRuns"] >= 1
        assert r["DiffPct"] == pytest.approx(100 * (r["RangeprofMedian"] - r["NcuMedian"]) / r["NcuMedian"])
    big = [r for r in rows if r["Metric"] == "gpu__time_duration.sum" and "16777216" in r["Annotation"]]
    assert big and all(abs(r["DiffPct"]) < 10 for r in big)


def test_fused_kernels_match_too(recorded):
    out = io.StringIO()
    assert ncu.main([str(recorded("fusion.jsonl")), str(recorded("fusion.ncu.csv")), "--json"], out=out) == 0
    assert len({r["Kernel"] for r in json.loads(out.getvalue())}) >= 2
