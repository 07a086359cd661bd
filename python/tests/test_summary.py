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


def _launch_rows(means, drifting=None):
    """Rows of five launches of 10 steady runs (+-0.2) at the given means, plus a sixth
    whose runs drift linearly by 6 % of its mean (100) where drifting."""
    rows = []
    series = [[m + (0.2 if i % 2 else -0.2) for i in range(10)] for m in means]
    if drifting:
        series.append([97 + 6 * i / 9 + (0.2 if i % 2 else -0.2) for i in range(10)])
    for j, values in enumerate(series):
        for i, v in enumerate(values):
            rows.append(dict(Annotation="k", Kernel="f", Metric="t", Value=v,
                             Unit="nanosecond", SMClock=1.98e9, Launch=f"s#{j + 1}", Run=i))
    return rows


def test_drift_is_judged_per_launch():
    """A group pools its launches; DriftPct and the verdict are each launch's (its rows in
    Run order), as in the summary records: five steady launches whose means step up
    100 -> 102.4 are no drift, a sixth drifting by 6 % fails the group, named."""
    means = [100.0, 100.6, 101.2, 101.8, 102.4]
    by = ["Annotation", "Kernel", "Metric"]
    df = pd.DataFrame(_launch_rows(means))
    out = rangeprof.summarize(df, by=by).iloc[0]
    assert out["NumRuns"] == 50 and out["StableMeasurement"] and out["Reasons"] == ""
    assert abs(out["DriftPct"]) < 0.2
    pooled = rangeprof.summarize(df.drop(columns=["Launch", "Run"]), by=by).iloc[0]
    assert pooled["Reasons"] == "drifted +2.8 % over 50 runs", "as one launch it drifts"
    # Shuffled rows: Run puts each launch back in order.
    df = pd.DataFrame(_launch_rows(means, drifting=True)).sample(frac=1, random_state=1)
    out = rangeprof.summarize(df, by=by).iloc[0]
    assert not out["StableMeasurement"]
    assert out["DriftPct"] == pytest.approx(6.11, abs=0.01)
    assert out["Reasons"] == "drifted +6.1 % over 10 runs in launch s#6"
    per_launch = rangeprof.summarize(df, by=["Launch", "Metric"]).set_index("Launch")
    assert per_launch.loc["s#6", "Reasons"].endswith("; drifted +6.1 % over 10 runs")
    assert per_launch["StableMeasurement"].sum() == 5


def test_recorded_launches_stepping_up_are_no_drift(stepped):
    """The same on a recording: 20 stable launches of vadd n=16777216 stepping up by 2.3 %
    in all, then one of them drifting by 6 %."""
    def big(path):
        out = rangeprof.summarize(rangeprof.load(path, report=None))
        return out[(out["Annotation"] == "vadd n=16777216")
                   & (out["Metric"] == "gpu__time_duration.sum")].iloc[0]
    assert big(stepped())["StableMeasurement"]
    row = big(stepped(drift_launch=66))
    assert not row["StableMeasurement"] and row["Reasons"].startswith("drifted +6.")
    assert row["Reasons"].endswith("#66")
