"""summarize() gives Nsight Python's aggregate columns, and the same numbers as the
'summary' records where it covers the same runs (one launch)."""
import math

import pytest

pd = pytest.importorskip("pandas")
import rangeprof  # noqa: E402
from rangeprof import records  # noqa: E402

FIELDS = dict(AvgValue="mean", StdDev="stddev", MinValue="min", MedianValue="median",
              MaxValue="max", NumRuns="n", CI95_Lower="ci95_low", CI95_Upper="ci95_high",
              RelativeStdDevPct="rsd_pct")


@pytest.mark.parametrize("name", ["vadd.jsonl", "matmul.jsonl", "fusion.jsonl", "clocks.jsonl"])
def test_per_launch_summary_equals_summary_records(recorded, name):
    df = rangeprof.load(recorded(name), report=None)
    ours = rangeprof.summarize(df, by=["Launch", "Metric"]).set_index(["Launch", "Metric"])
    recs = records.read(recorded(name), report=None)
    checked = 0
    for rec, sid in recs.summaries:
        launch = f"{sid}#{rec['launch']}"
        for metric, st in rec["metrics"].items():
            row = ours.loc[(launch, metric)]
            for col, field in FIELDS.items():
                want = st[field]
                if want is None:
                    assert math.isnan(row[col]), (metric, col)
                else:
                    assert row[col] == pytest.approx(want, rel=1e-9, abs=1e-9), (metric, col)
            stable = row["StableMeasurement"]
            assert (None if pd.isna(stable) else bool(stable)) == st["stable"], (metric, st)
            checked += 1
    assert checked == sum(len(rec["metrics"]) for rec, _ in recs.summaries) > 0


def test_nsight_python_columns(recorded):
    out = rangeprof.summarize(rangeprof.load(recorded("vadd.jsonl"), report=None))
    for col in ("AvgValue", "StdDev", "MinValue", "MaxValue", "NumRuns", "CI95_Lower",
                "CI95_Upper", "RelativeStdDevPct", "StableMeasurement"):
        assert col in out.columns
    assert "n" in out.columns
    assert (out["CI95_Lower"] <= out["AvgValue"]).all()
    assert str(out["StableMeasurement"].dtype) == "boolean"


def test_drift_pct_sits_next_to_the_rsd_and_fails_the_group():
    """DriftPct comes from the frame's rows in order: a 3 % step halfway through 200 runs
    (RSD 1.5 %) is a drift, the same runs shuffled into alternation are not."""
    step = [100.0] * 100 + [103.0] * 100
    alternating = [100.0, 103.0] * 100
    rows = [dict(Metric=m, Value=v, Unit="nanosecond", SMClock=1.98e9)
            for m, vs in (("step", step), ("alternating", alternating)) for v in vs]
    out = rangeprof.summarize(pd.DataFrame(rows), by=["Metric"]).set_index("Metric")
    cols = list(out.columns)
    assert cols.index("DriftPct") == cols.index("RelativeStdDevPct") + 1
    assert out.loc["step", "DriftPct"] == pytest.approx(4.41, abs=0.01)
    assert not out.loc["step", "StableMeasurement"]
    assert out.loc["step", "Reasons"] == "drifted +4.4 % over 200 runs"
    assert abs(out.loc["alternating", "DriftPct"]) < 0.1
    assert out.loc["alternating", "StableMeasurement"]
