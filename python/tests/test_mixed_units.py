"""Values in different units are never averaged as raw numbers (issue 38, finding 6): a
group of the report whose runs give its metric in nanoseconds and in microseconds has no
mean, and says why; the same unit spelled two ways ('nanosecond', 'ns') is one unit.
(rangeprof-compare's side is in test_compare_verdicts.py.)"""
import io
import json

import pytest

from rangeprof import report, table

TIME = "gpu__time_duration.sum"


def _edited(damaged, fn):
    return damaged("vadd.jsonl",
                   lambda lines: [json.dumps(fn(json.loads(l))) + "\n" for l in lines])


def _rows(path, *extra):
    out = io.StringIO()
    assert report.main([str(path), "--metric", TIME, "--json", *extra], out=out) == 0
    return {r["Annotation"]: r for r in json.loads(out.getvalue())}


@pytest.mark.parametrize("which", ["odd launches", "one run"])
def test_a_group_in_two_units_has_no_mean(damaged, which):
    """Odd launches in microseconds (each launch's first run says so), or a single run
    in the middle of a launch (the fast path of the launch's later runs)."""
    def fn(rec):
        if rec["type"] == "run" and (rec["launch"] % 2 if which == "odd launches"
                                     else rec["launch"] == 60 and rec["run"] == 7):
            rec["metrics"][TIME] /= 1000
            rec["units"][TIME] = "usecond"
        return rec
    rows = _rows(_edited(damaged, fn))
    big = rows["vadd n=16777216"]
    assert big["AvgValue"] is None and big["StableMeasurement"] is None
    assert big["NumRuns"] == 400
    assert big["Reasons"].startswith("units differ between runs ('nanosecond', 'usecond')")
    if which == "one run":
        assert rows["vadd n=4096"]["AvgValue"] is not None
    # Grouped by unit, each part has its statistics.
    parts = json.loads(_out(_edited(damaged, fn), "--group-by", "Annotation,Unit"))
    assert {r["Unit"] for r in parts if r["Annotation"] == "vadd n=16777216"} == \
        {"nanosecond", "usecond"}
    assert all(r["AvgValue"] is not None for r in parts)


def _out(path, *extra):
    out = io.StringIO()
    assert report.main([str(path), "--metric", TIME, "--json", *extra], out=out) == 0
    return out.getvalue()


def test_one_unit_spelled_two_ways_is_averaged(damaged, recorded):
    def fn(rec):
        if rec["type"] == "run" and rec["launch"] % 2:
            rec["units"][TIME] = "ns"
        return rec
    rows = _rows(_edited(damaged, fn))
    whole = _rows(recorded("vadd.jsonl"))
    assert rows["vadd n=16777216"]["AvgValue"] == whole["vadd n=16777216"]["AvgValue"]


def test_pieces_merged_keep_the_other_unit(damaged):
    """A piece whose group is in another unit than the one before it: the merged group
    is not averaged either."""
    a, b = table._Group("nanosecond", {}), table._Group("usecond", {})
    a.extend(b, [])
    assert a.other_units == {"usecond"}


def test_summarize_does_not_average_two_units(damaged):
    """rangeprof.summarize, as the report: a group in nanoseconds and microseconds has no
    mean and says why."""
    pytest.importorskip("pyarrow")
    import rangeprof

    def fn(rec):
        if rec["type"] == "run" and rec["launch"] % 2:
            rec["metrics"][TIME] /= 1000
            rec["units"][TIME] = "usecond"
        return rec
    df = rangeprof.load(_edited(damaged, fn))
    rows = rangeprof.summarize(df[df["Metric"] == TIME])
    big = rows[rows["Annotation"] == "vadd n=16777216"].iloc[0]
    assert big["AvgValue"] != big["AvgValue"] and big["NumRuns"] == 400
    assert big["Reasons"].startswith("units differ between runs ('nanosecond', 'usecond')")
    assert rangeprof.summarize(df[df["Metric"] == TIME], by=["Annotation", "Unit"])[
        "AvgValue"].notna().all()
