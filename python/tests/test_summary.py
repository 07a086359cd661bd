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
