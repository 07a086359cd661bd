"""rangeprof.load: Nsight Python's long form from recorded files, many files and sessions,
config columns typed, bad lines reported with file and line and skipped."""
import json

import pytest

pd = pytest.importorskip("pandas")
import rangeprof  # noqa: E402


def test_long_form_has_nsight_python_columns(recorded):
    df = rangeprof.load(recorded("matmul.jsonl"))
    for col in ("Annotation", "Kernel", "Metric", "Value", "Unit", "GPU", "Host", "Run",
                "SMClock", "ComputeClock", "MemoryClock", "Temperature", "Session", "Process",
                "Launch", "Grid", "Block"):
        assert col in df.columns, col
    runs = [json.loads(l) for l in open(recorded("matmul.jsonl")) if '"run"' in l]
    runs = [r for r in runs if r["type"] == "run"]
    assert len(df) == sum(len(r["metrics"]) for r in runs)
    assert set(df["GPU"]) and not df["GPU"].isna().any()


ALL = ["matmul.jsonl", "vadd.jsonl", "vadd_again.jsonl", "vadd_cache_none.jsonl", "fusion.jsonl",
       "clocks.jsonl"]


@pytest.mark.parametrize("name", ALL)
def test_every_recorded_line_is_read(recorded, name, capsys):
    """The recordings, with their session 'memory_save' and summary 'cost_ms' and 'save'
    objects, load without a bad line; every run record becomes rows, its clock and
    temperature included."""
    df = rangeprof.load(recorded(name))
    assert df.attrs["bad_lines"] == [] and capsys.readouterr().err == ""
    runs = [r for r in map(json.loads, open(recorded(name))) if r["type"] == "run"]
    assert len(df) == sum(len(r["metrics"]) for r in runs)
    assert df.groupby(["Launch", "Run"]).ngroups == len(runs)
    assert df["SMClock"].notna().all() and df["Temperature"].notna().all()
    assert set(df["Unit"]) <= {"nanosecond", "byte", "instruction", "percent", "1/second"}


def test_config_columns_are_typed(recorded):
    df = rangeprof.load(recorded("matmul.jsonl"))
    assert df["n"].dtype.kind == "i"
    assert set(df["dtype"]) <= {"fp32", "fp16"}
    assert (df["Annotation"].str.contains("n=") ).all()
    row = df.iloc[0]
    assert f"n={row['n']}" in row["Annotation"] and f"dtype={row['dtype']}" in row["Annotation"]


def test_many_files_and_sessions_load_together(recorded):
    df = rangeprof.load([recorded("vadd.jsonl"), recorded("vadd_again.jsonl"), recorded("fusion.jsonl")])
    assert df["Session"].nunique() >= 3
    assert {"n", "variant"} <= set(df.columns)


def test_globs_and_directories(recorded, copy, tmp_path):
    copy("vadd.jsonl", "a.jsonl")
    copy("vadd_again.jsonl", "b.jsonl")
    by_glob = rangeprof.load(str(tmp_path / "*.jsonl"))
    by_dir = rangeprof.load(tmp_path)
    assert len(by_glob) == len(by_dir) > 0


@pytest.mark.parametrize("damage,reason", [
    (lambda ls: ls[:-1] + [ls[-1][: len(ls[-1]) // 2]], "truncated"),
    (lambda ls: ls[:3] + ["this is not json\n"] + ls[3:], "not JSON"),
    (lambda ls: ls[:3] + [json.dumps({"type": "mystery"}) + "\n"] + ls[3:], "unknown record type"),
    (lambda ls: ls[:3] + ["[1, 2]\n"] + ls[3:], "not a JSON object"),
])
def test_bad_lines_are_reported_with_file_and_line_and_skipped(damaged, recorded, capsys, damage, reason):
    path = damaged("vadd.jsonl", damage)
    df = rangeprof.load(path)
    err = capsys.readouterr().err
    assert reason in err and f"{path}:" in err
    bad = df.attrs["bad_lines"]
    assert len(bad) == 1 and str(path) in bad[0]
    line_no = int(bad[0].split(":")[1])
    assert line_no >= 1
    full = rangeprof.load(recorded("vadd.jsonl"), report=None)
    assert len(full) - len(df) <= len(json.loads([l for l in open(recorded("vadd.jsonl")) if '"run"' in l][-1])["metrics"])


def test_newer_schema_session_is_skipped_with_its_records(damaged, capsys):
    def newer(lines):
        out = []
        for l in lines:
            rec = json.loads(l)
            if rec["type"] == "session":
                rec["schema"] = 999
            out.append(json.dumps(rec) + "\n")
        return out
    path = damaged("vadd.jsonl", newer)
    df = rangeprof.load(path)
    assert len(df) == 0
    assert "schema 999 is newer" in capsys.readouterr().err


def test_only_the_columns_asked_for(recorded):
    """columns= builds those columns alone (the others are not computed), config
    columns included; an unknown one is refused naming the columns there are."""
    pytest.importorskip("pyarrow")
    full = rangeprof.load(recorded("matmul.jsonl"), report=None)
    part = rangeprof.load(recorded("matmul.jsonl"), report=None,
                          columns=["Kernel", "n", "Metric", "Value"])
    assert list(part.columns) == ["Kernel", "n", "Metric", "Value"]
    assert part["Value"].tolist() == full["Value"].tolist()
    assert part["n"].tolist() == full["n"].tolist()
    with pytest.raises(KeyError) as e:
        rangeprof.load(recorded("matmul.jsonl"), report=None, columns=["Kernal"])
    assert "no column Kernal" in str(e.value) and "dtype" in str(e.value)


def _with_keys(recorded, tmp_path, count):
    """vadd.jsonl whose run lines are repeated each with a range word of its own,
    'keyI=1', until there are count distinct config keys (a word per iteration)."""
    out, i = [], 0
    for line in recorded("vadd.jsonl").read_text().splitlines():
        rec = json.loads(line)
        if rec["type"] == "run" and i < count:
            rec["nvtx"][-1]["text"] += f" key{i}=1"
            rec["nvtx_path"] += f" key{i}=1"
            i += 1
        out.append(json.dumps(rec, separators=(",", ":")) + "\n")
    path = tmp_path / "keys.jsonl"
    path.write_text("".join(out))
    return path


@pytest.mark.parametrize("how", ["columnar", "derive"])
def test_thousands_of_config_keys_make_a_readable_frame(recorded, tmp_path, capsys, how):
    """Issue 38: 5 000 distinct config keys made a 5 032-column frame, 20 000 ran out of
    12 GB. The first table.MAX_CONFIG_COLUMNS are columns; the rest are said, and a key
    asked for by name is still read."""
    import rangeprof
    from rangeprof import table
    path = _with_keys(recorded, tmp_path, 1000)
    extra = dict(derive="x=gpu__time_duration.sum*2") if how == "derive" else {}
    df = rangeprof.load(path, **extra)
    configs = df.attrs["config_columns"]
    assert len(configs) == table.MAX_CONFIG_COLUMNS and configs[:2] == ["n", "key0"]
    assert len(df.columns) == table.MAX_CONFIG_COLUMNS + len(table.ID_COLUMNS)
    err = capsys.readouterr().err
    assert err == (f"rangeprof: warning: 1001 distinct config keys in the range texts of "
                   f"{path}; the first 100 are columns, the other 901 (e.g. 'key99', "
                   "'key100', 'key101') are not: name the ones you need in "
                   "load(columns=[...])\n")
    if how == "columnar":
        picked = rangeprof.load(path, columns=["key999", "Value"])
        assert picked["key999"].notna().sum() == 3 and capsys.readouterr().err == ""


def _training_file(path, lines, *extra):
    """tests/bigfile/gen_training.py's file of that many lines (a training job's shape)."""
    import subprocess
    import sys
    from pathlib import Path
    gen = Path(__file__).resolve().parents[2] / "tests" / "bigfile" / "gen_training.py"
    subprocess.run([sys.executable, str(gen), str(lines), str(path)] + list(extra),
                   check=True)
    return path


def test_reading_holds_little_more_than_the_frame(tmp_path, monkeypatch):
    """Issue 38: load() of the 2 M-line training file took 7.4 GiB for a frame of 2.6 GB.
    The batches read are the frame in pieces until it is made: they must be as compact as
    it (a categorical's codes one byte a row, not eight) and be let go column by column.
    Small batches here, so that the pieces, not one batch's working memory, are most of
    what tracemalloc sees (numpy's arrays are traced; pyarrow's memory is not): the peak
    was 1.8 times the frame's size, it is 1.3 times."""
    import tracemalloc
    from rangeprof import frame
    path = _training_file(tmp_path / "train.jsonl", 20000)
    monkeypatch.setattr(frame, "_BATCH_BYTES", 1 << 18)
    monkeypatch.setattr(frame, "_READ_BYTES", 1 << 18)
    rangeprof.load(str(path), report=None)  # (imports and caches made before tracing)
    tracemalloc.start()
    try:
        df = rangeprof.load(str(path), report=None)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    size = df.memory_usage(deep=True).sum()
    assert len(df) == 16665 * 10 and peak < 1.5 * size, (peak >> 20, size >> 20)


def test_blocks_are_the_bytes_read_not_copies(monkeypatch):
    """load() reads a file in blocks of 16 MB cut at a newline; each cut was a copy of the
    block (two where a line went on from the previous block): a few thousand page faults
    a copy, a tenth of the training file's load. A block is now handed on as read, its
    bytes after the last newline ignored (the next block holds that line whole); where a
    line goes on from the previous block, one join. The lines are those of the file."""
    import io
    from rangeprof import frame
    monkeypatch.setattr(frame, "_READ_BYTES", 64)
    data = b"".join(b'{"n":%d,"pad":"%s"}\n' % (i, b"x" * (i % 50)) for i in range(200))
    read = []

    class Recorded(io.BytesIO):
        def read(self, n=-1):
            got = super().read(n)
            read.append(got)
            return got
    blocks = list(frame._blocks(Recorded(data)))
    assert blocks[0][0] is read[0]
    lines = []
    for block, complete in blocks:
        got = block.split(b"\n")
        if complete:
            got.pop()
        lines += got
    assert lines == data.split(b"\n")[:-1]


def test_runs_ctxs_are_looked_up_while_the_reading_thread_adds_more():
    """load()'s column thread looked up each batch's ctxs through a view of the array that
    the reading thread appends to at each file's and session's start: an append while a
    view existed raised BufferError (seen once in the unit suite, loading many files).
    Here both at once for a while: the lookups never hold the array."""
    import threading
    from array import array
    import numpy as np
    pa = pytest.importorskip("pyarrow")
    from rangeprof import frame
    reader = frame._ArrowReader(pa, [])
    reader.current_at = array("q", range(1000))
    table = pa.table({"x": [1, 2, 3]})
    last = np.array([0, 5, 999], dtype=np.int64)
    stop, failed = threading.Event(), []

    def lookups():
        try:
            while not stop.is_set():
                reader._writers(table, last)
        except BufferError as e:
            failed.append(e)
    thread = threading.Thread(target=lookups)
    thread.start()
    try:
        for i in range(300000):
            reader.current_at.append(i)
    except BufferError as e:
        failed.append(e)
    finally:
        stop.set()
        thread.join()
    assert not failed
