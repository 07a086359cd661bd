"""The early set-up's record in a real recording (fixtures/recorded/setup_early.jsonl, see
its README: two sessions of --setup early, each with one setup record): read as its own
kind, belonging to its session, with the summaries and runs of that session around it.

What the collector wrote into these frozen files (that the first measured launch after
the early set-up paid no set-up, cost_ms.setup 0 and no first pass in cost_ms.start) is
no property of the Python code and no change can break it here; the GPU suite checks it
live (tests/gpu/run.sh, the 'early-setup' checks)."""
import json

from rangeprof import records


def _raw(path, kind):
    """The records of one type as the file holds them, each with the start_time of the
    session record before it."""
    out, start = [], None
    with open(path) as f:
        for line in f:
            rec = json.loads(line)
            if rec["type"] == "session":
                start = rec["start_time"]
            elif rec["type"] == kind:
                out.append((rec, start))
    return out


def test_setup_records_are_read_not_reported_as_bad_lines(recorded):
    path = recorded("setup_early.jsonl")
    recs = records.read(path, report=None)
    assert recs.bad_lines == []
    assert len(recs.sessions) == 2
    # Each setup record as written, under the session it follows.
    raw = _raw(path, "setup")
    assert len(raw) == 2
    assert [rec for rec, _sid in recs.setups] == [rec for rec, _start in raw]
    assert all(sid.endswith(start) for (_rec, sid), (_r, start) in zip(recs.setups, raw))
    assert len({sid for _rec, sid in recs.setups}) == 2
    # Not taken for a run, summary or message.
    assert not any(r.record["type"] == "setup" for r in recs.runs)
    assert not any(rec["type"] == "setup" for rec, _sid in recs.summaries)
    assert not any(rec["type"] == "setup" for rec in recs.messages)


def test_summaries_and_runs_stay_with_their_session(recorded):
    path = recorded("setup_early.jsonl")
    recs = records.read(path, report=None)
    raw = _raw(path, "summary")
    assert [rec for rec, _sid in recs.summaries] == [rec for rec, _start in raw]
    assert all(sid.endswith(start) for (_rec, sid), (_r, start) in zip(recs.summaries, raw))
    # Six measured launches of 20 runs in each session.
    by_session = {}
    for run in recs.runs:
        by_session.setdefault(run.session_id, []).append(run)
    assert sorted(len(v) for v in by_session.values()) == [120, 120]
    assert set(by_session) == {sid for _rec, sid in recs.setups}
