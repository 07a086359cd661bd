"""The same verdict however the files are read (issue 38, what must be true 2): a big
file is read in pieces by several processes, and where the pieces are cut must not
change a single row of rangeprof-compare; nor must reading a side through a pipe."""
import json
import os
import threading

import pytest

from rangeprof import compare, scan

TIME = "gpu__time_duration.sum"
BIG = "vadd n=16777216"


@pytest.fixture
def steps(damaged):
    """vadd_again.jsonl with the launches of the large range cut to their first 5 runs
    (too few for a launch's drift to be judged), each run 1 % slower than the one before:
    read whole no launch drifted, so B is not flagged; a launch judged with the next
    piece's runs would have drifted."""
    def edit(lines):
        out = []
        for line in lines:
            rec = json.loads(line)
            if rec["type"] == "run" and rec["nvtx_path"] == BIG:
                if rec["run"] >= 5:
                    continue
                rec["metrics"][TIME] *= 1 + 0.01 * rec["run"]
            out.append(json.dumps(rec, separators=(",", ":")) + "\n")
        return out
    return damaged("vadd_again.jsonl", edit)


def _groups(path, cuts):
    """One side's groups read in pieces cut at the given line starts, each piece by its
    own job as a worker reads it, merged in order."""
    import gc
    bounds = [0] + sorted(cuts) + [None]
    job = None
    try:
        for i in range(len(bounds) - 1):
            part = scan._read_piece(compare.CompareJob(None), scan.Piece(
                str(path), bounds[i], bounds[i + 1]), i)[0]
            job = part if job is None else (job.merge(part) or job)
    finally:
        gc.enable()  # _read_piece turns the collector off, as in a worker
    return compare.groups_of(job)


def _line_starts(path):
    data = path.read_bytes()
    return [i + 1 for i, b in enumerate(data) if b == 0x0A][:-1]


def _rows(a, b, **kw):
    return json.dumps(compare.compare(a, b, **kw), sort_keys=True, default=str)


def test_the_verdict_does_not_change_with_where_the_pieces_are_cut(recorded, steps):
    """A property over the cuts of both sides: every row (verdict, ratio, p, flags, reason)
    is the one of reading each file whole."""
    hypothesis = pytest.importorskip("hypothesis")
    st = hypothesis.strategies
    a_path = recorded("vadd.jsonl")
    a_starts, b_starts = _line_starts(a_path), _line_starts(steps)
    whole_a, whole_b = _groups(a_path, []), _groups(steps, [])
    whole = _rows(whole_a, whole_b)
    big = next(r for r in json.loads(whole) if r["Annotation"] == BIG and r["Metric"] == TIME)
    assert "B unstable" not in big["Flags"]

    @hypothesis.settings(max_examples=30, deadline=None, derandomize=True)
    @hypothesis.given(st.lists(st.sampled_from(a_starts), max_size=4, unique=True),
                      st.lists(st.sampled_from(b_starts), max_size=6, unique=True))
    def check(a_cuts, b_cuts):
        assert _rows(_groups(a_path, a_cuts), _groups(steps, b_cuts)) == whole
    check()


def test_a_cut_at_every_launch_of_the_stepped_range(recorded, steps):
    """The worst case of the property, always run: B cut where each of its large range's
    launches begins."""
    data = steps.read_bytes()
    cuts, last = [], None
    for at in _line_starts(steps):
        rec = json.loads(data[at:data.index(b"\n", at)])
        if rec["type"] == "run" and rec["nvtx_path"] == BIG and rec["launch"] != last:
            cuts.append(at)
            last = rec["launch"]
    a = _groups(recorded("vadd.jsonl"), [])
    assert _rows(a, _groups(steps, cuts[1:])) == _rows(a, _groups(steps, []))


def test_a_side_through_a_pipe_is_judged_as_the_file(recorded, steps, tmp_path, capsys):
    """compare A <(cat B): a FIFO, read as a stream, gives the rows of the file."""
    fifo = tmp_path / "b.fifo"
    os.mkfifo(fifo)
    data = steps.read_bytes()

    def feed():
        with open(fifo, "wb") as f:
            f.write(data)
    writer = threading.Thread(target=feed)
    writer.start()
    try:
        piped = compare._side(str(fifo), [TIME])[0]
    finally:
        writer.join()
    filed = compare._side(str(steps), [TIME])[0]
    a = compare._side(str(recorded("vadd.jsonl")), [TIME])[0]
    # The rows name the file they read: the FIFO's name stands in for the file's.
    assert _rows(a, piped).replace(str(fifo), "B") == _rows(a, filed).replace(str(steps), "B")
