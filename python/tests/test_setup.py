"""The early set-up's record in a real recording (fixtures/recorded/setup_early.jsonl, see
its README): read as its own kind, and the first measured launch after it paid no set-up."""
import os

from rangeprof import records

HERE = os.path.dirname(os.path.abspath(__file__))
EARLY = os.path.join(HERE, "fixtures", "recorded", "setup_early.jsonl")


def test_setup_records_are_read_not_reported_as_bad_lines():
    recs = records.read(EARLY, report=None)
    assert recs.bad_lines == []
    assert len(recs.sessions) == 2
    assert len(recs.setups) == 2
    for rec, _sid in recs.setups:
        cost = rec["cost_ms"]
        assert rec["device"] == 0
        # The set-up's parts, and the range profiler's first pass ("start"), within its total.
        for part in ("setup", "start", "total"):
            assert part in cost
        assert cost["total"] >= cost["setup"] + cost["start"]


def test_the_first_measured_launch_after_it_paid_no_set_up():
    recs = records.read(EARLY, report=None)
    firsts = {}
    for rec, sid in recs.summaries:
        firsts.setdefault(sid, rec)
    assert len(firsts) == 2
    for rec in firsts.values():
        assert rec["cost_ms"]["setup"] == 0
        assert "start" in rec["cost_ms"] and rec["cost_ms"]["start"] < 1.0  # ms: no first pass
    assert len(recs.runs) == 240
