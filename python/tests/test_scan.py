"""A big file is read in pieces by several processes (rangeprof/scan.py); the tables must
be those of reading it in one go. Checked on recorded files cut into pieces far smaller
than real ones (PIECE_BYTES lowered), two recordings in one file so that a piece starts
inside the second session, and against the one-process reading."""
import io
import json

import pytest

from rangeprof import compare, report, scan


def _joined(recorded, tmp_path, names):
    path = tmp_path / "joined.jsonl"
    path.write_bytes(b"".join(recorded(n).read_bytes() for n in names))
    return path


def _report(argv, monkeypatch, piece_bytes, workers):
    monkeypatch.setattr(scan, "PIECE_BYTES", piece_bytes)
    real = scan.pieces
    monkeypatch.setattr(scan, "pieces", lambda files, w=None, s=False: real(files, workers, s))
    out = io.StringIO()
    assert report.main([str(a) for a in argv] + ["--json"], out=out) == 0
    return json.loads(out.getvalue())


@pytest.mark.parametrize("extra", [
    [], ["--group-by", "Annotation,Launch"], ["--combine"], ["--group-by", "Session,GPU"],
    ["--derive", "per_byte=gpu__time_duration.sum/dram__bytes_read.sum"],
])
def test_pieces_give_the_one_reading_tables(recorded, tmp_path, monkeypatch, extra):
    path = _joined(recorded, tmp_path, ["vadd.jsonl", "fusion.jsonl", "vadd_again.jsonl",
                                        "graph_capture.jsonl"])
    whole = _report([path] + extra, monkeypatch, 1 << 40, 1)
    monkeypatch.undo()
    split = _report([path] + extra, monkeypatch, 100_000, 4)
    assert split == whole
    monkeypatch.undo()
    monkeypatch.setattr(scan, "PIECE_BYTES", 100_000)
    pieces = scan.pieces([str(path)], 4, at_sessions="--combine" in extra)
    assert len(pieces) > 1, "the file was cut"


def test_a_piece_starting_inside_a_session_knows_it(recorded, tmp_path, monkeypatch):
    """The second piece of vadd.jsonl starts among its runs: its session and device come
    from the search back to the session line, and its line numbers are the file's."""
    path = recorded("vadd.jsonl")
    monkeypatch.setattr(scan, "PIECE_BYTES", 200_000)
    pieces = scan.pieces([str(path)], 2)
    assert len(pieces) == 2 and pieces[1].start > 0
    sessions, first = scan.context_at(str(path), pieces[1].start)
    lines = path.read_bytes()[:pieces[1].start].count(b"\n")
    state = sessions.current
    assert first == lines + 1 and not state.skipping
    assert state.session["type"] == "session" and state.session["pid"] == 1205
    assert state.devices[0]["name"] == "NVIDIA H200"
    assert sessions.by_pid == {1205: state}


def test_compare_in_pieces(recorded, tmp_path, monkeypatch):
    a = _joined(recorded, tmp_path, ["vadd.jsonl", "vadd_again.jsonl"])
    out1, out2 = io.StringIO(), io.StringIO()
    compare.main([str(a), str(recorded("vadd_cache_none.jsonl")), "--json", "--metric", "all"],
                 out=out1)
    monkeypatch.setattr(scan, "PIECE_BYTES", 150_000)
    compare.main([str(a), str(recorded("vadd_cache_none.jsonl")), "--json", "--metric", "all"],
                 out=out2)
    assert json.loads(out1.getvalue()) == json.loads(out2.getvalue())


def test_pieces_pass_over_summaries_as_the_one_reading_does(damaged, monkeypatch, capsys):
    """rangeprof-report does not read summary lines, in pieces as in one reading: a damaged
    one is not said (a damaged run line is, with its line number in the file)."""
    def damage(lines):
        out = list(lines)
        summary = max(i for i, l in enumerate(out) if l.startswith('{"type":"summary",'))
        out[summary] = out[summary].replace('"metrics":{', '"metrics":[', 1)
        run = max(i for i, l in enumerate(out) if l.startswith('{"type":"run",'))
        out[run] = out[run].replace('"sm_clock_hz":', '"sm_clock_hz":"x","y":', 1)
        return out
    path = damaged("vadd.jsonl", damage)
    run_line = max(i for i, l in enumerate(open(path)) if l.startswith('{"type":"run",')) + 1
    monkeypatch.setattr(scan, "PIECE_BYTES", 200_000)
    assert len(scan.pieces([str(path)], 2)) == 2
    assert report.main([str(path), "--json"], out=io.StringIO()) == 0
    err = capsys.readouterr().err
    assert err.count("line skipped") == 1 and f"{path}:{run_line}: run record" in err


def _rows_in_pieces(path, cuts, group_by=None):
    """The report's rows of path read as pieces cut at the given line starts (byte
    offsets), each piece by its own job as a worker would read it, merged in order."""
    import gc
    from rangeprof import table
    bounds = [0] + list(cuts) + [None]
    job = None
    try:
        for i in range(len(bounds) - 1):
            part, _, _, _ = scan._read_piece(table.StatsJob(group_by), scan.Piece(
                str(path), bounds[i], bounds[i + 1]), i)
            if job is None:
                job = part
            else:
                job.merge(part)
    finally:
        gc.enable()  # _read_piece turns the collector off, as in a worker
    return [{k: v for k, v in r.items() if k != "values"} for r in job.aggregator.rows()]


@pytest.fixture
def steps(damaged):
    """vadd.jsonl with the launches of the n=16777216 range cut to their first 5 runs
    (too few for a drift to be judged, as in a job of 5 runs per launch), each run 1 %
    slower than the one before: read whole, no launch drifted; a launch judged together
    with the next ones' runs (sorted by run index) would be a drift of 4 %."""
    def edit(lines):
        out = []
        for line in lines:
            rec = json.loads(line)
            if rec["type"] == "run" and rec["nvtx_path"] == "vadd n=16777216":
                if rec["run"] >= 5:
                    continue
                rec["metrics"]["gpu__time_duration.sum"] *= 1 + 0.01 * rec["run"]
            out.append(json.dumps(rec, separators=(",", ":")) + "\n")
        return out
    return damaged("vadd.jsonl", edit)


def test_a_launch_that_ends_a_piece_is_judged_on_its_own_runs(steps):
    """Issue 38, finding 1: merging the next piece's group closed the open launch after
    the next piece's values had joined it, so a launch at a piece's end was judged
    'drifted' over its runs and the next piece's. Cut at every launch boundary of the
    stepped range, the rows are the one reading's."""
    data = steps.read_bytes()
    starts = [i + 1 for i, b in enumerate(data) if b == 0x0A][:-1]
    launch_starts = []
    last = None
    for at in starts:
        rec = json.loads(data[at:data.index(b"\n", at)])
        if rec["type"] == "run" and rec["nvtx_path"] == "vadd n=16777216" \
                and rec["launch"] != last:
            launch_starts.append(at)
            last = rec["launch"]
    whole = _rows_in_pieces(steps, [])
    assert _rows_in_pieces(steps, launch_starts[1:]) == whole


def test_the_verdict_does_not_change_with_the_piece_size(steps):
    """What must be true 2: pieces or whole, the same table (a property over where the
    pieces are cut)."""
    hypothesis = pytest.importorskip("hypothesis")
    st = hypothesis.strategies
    data = steps.read_bytes()
    starts = [i + 1 for i, b in enumerate(data) if b == 0x0A][:-1]
    whole = _rows_in_pieces(steps, [])

    @hypothesis.settings(max_examples=25, deadline=None, derandomize=True)
    @hypothesis.given(st.lists(st.sampled_from(starts), max_size=6, unique=True))
    def check(cuts):
        assert _rows_in_pieces(steps, sorted(cuts)) == whole
    check()
