"""The conversion's fast path (rangeprof/runcolumns.py): the Arrow columns it makes of a
batch's run lines are those that load()'s DataFrame gives through dataset._arrow_table -
row for row, column for column, types, nulls, dictionary values - and a batch it cannot
take goes through load(), whose bad lines and warnings are said as before. Checked on the
H200 recordings (python/tests/fixtures), on bench/gen_cluster.py's files (made from one),
and on recorded lines mixed with damaged and unusual ones (hypothesis)."""
import io
import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import rangeprof
from rangeprof import dataset, report, runcolumns

FIXTURES = Path(__file__).resolve().parent / "fixtures"
GEN = Path(__file__).resolve().parents[2] / "bench" / "gen_cluster.py"
# The recordings that the fast path takes (each alone): all but setup_early.jsonl, which
# holds two sessions (its second run of the program appended).
TAKEN = ["recorded/clocks.jsonl", "recorded/fusion.jsonl", "recorded/graph_capture.jsonl",
         "recorded/matmul.jsonl", "recorded/vadd.jsonl", "recorded/vadd_again.jsonl",
         "recorded/vadd_cache_none.jsonl", "recorded_l2/rp_small.jsonl",
         "recorded_range/rm_chain.jsonl", "recorded_range/rm_fused.jsonl",
         "recorded_range/rm_mlp.jsonl", "recorded_range/rm_unfused.jsonl"]
NO_SESSION = "?:?:?"


def _batch(paths, fast):
    """_batch_rows of paths, fast path or load(): (configs, rows, bad, [(job id, host,
    row indexes, file codes, files, table)], what was said)."""
    err = io.StringIO()
    configs, rows, bad, partitions, table_of = dataset._batch_rows(
        pa, [str(p) for p in paths], err, fast=fast)
    parts = [(j, h, None if idx is None else idx.tolist(), list(codes), list(files),
              table_of(idx)) for j, h, idx, codes, files in partitions]
    return configs, rows, bad, parts, err.getvalue()


def _same_tables(a, b):
    """Equal schemas (with the metadata), columns equal row for row with their nulls, and
    dictionary columns with the same dictionary values in the same order - but for the
    place of the '?:?:?' session among the Session values, which load() sets by which of
    its threads comes first (frame._ArrowReader._long takes the sessions read so far)."""
    assert a.schema.equals(b.schema, check_metadata=True), (a.schema, b.schema)
    assert a.num_rows == b.num_rows
    for name in a.column_names:
        x, y = a.column(name), b.column(name)
        if pa.types.is_dictionary(x.type):
            assert x.cast(pa.string()).equals(y.cast(pa.string())), name
            dx = x.combine_chunks().dictionary.to_pylist() if x.num_chunks else []
            dy = y.combine_chunks().dictionary.to_pylist() if y.num_chunks else []
            if name == "Session":
                assert (NO_SESSION in dx) == (NO_SESSION in dy)
                dx = [v for v in dx if v != NO_SESSION]
                dy = [v for v in dy if v != NO_SESSION]
            assert dx == dy, (name, dx[:5], dy[:5])
        else:
            assert x.equals(y), (name, x.slice(0, 3), y.slice(0, 3))


def _same_batches(paths):
    """The fast path's batch and load()'s equal; returns whether the fast path took it."""
    fast, exact = _batch(paths, True), _batch(paths, False)
    assert fast[:3] == exact[:3]
    assert fast[4] == exact[4]   # what was said: the same lines
    assert len(fast[3]) == len(exact[3])
    for f, e in zip(fast[3], exact[3]):
        assert f[:5] == e[:5]
        _same_tables(f[5], e[5])
    took = runcolumns.columns(pa, [str(p) for p in paths]) is not None
    if took:
        assert exact[4] == ""    # (so a batch with a bad line is never the fast path's)
    return took


@pytest.mark.parametrize("name", TAKEN)
def test_the_fast_path_takes_each_recording_and_gives_loads_columns(name):
    path = FIXTURES / name
    assert runcolumns.decline_reason(pa, [str(path)]) is None
    assert _same_batches([path])


def test_the_fast_path_takes_the_recordings_together_as_one_batch():
    # Several sessions, devices, metrics (a metric of one file absent from another),
    # config words and units in one batch: the categories' order over files.
    paths = [FIXTURES / n for n in TAKEN]
    assert _same_batches(paths)


def test_a_recording_of_two_sessions_goes_through_load():
    path = FIXTURES / "recorded" / "setup_early.jsonl"
    assert "a bad line, or a record that changes the session" in \
        runcolumns.decline_reason(pa, [str(path)])
    assert not _same_batches([path])


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    out = tmp_path_factory.mktemp("cluster") / "files"
    subprocess.run([sys.executable, str(GEN), str(out), "--hosts", "2", "--launches", "30",
                    "--runs", "5", "--kernels", "4"], check=True)
    return sorted(out.glob("*.jsonl"))


def test_the_benchmarks_files_take_the_fast_path(cluster):
    # bench/cluster_scale.sh's files: hosts, ranks, a straggler's clocks, config words.
    assert len(cluster) == 16
    assert _same_batches(cluster)
    assert _same_batches(cluster[:3])


def _convert(paths, root, fast, monkeypatch, capfd):
    """rangeprof-report --to-parquet root paths...: (exit status, stdout, stderr). Its
    workers are processes: RANGEPROF_CONVERT_FAST=0 reaches them."""
    with monkeypatch.context() as m:
        m.setenv("RANGEPROF_CONVERT_FAST", "1" if fast else "0")
        capfd.readouterr()
        out = io.StringIO()
        status = report.main(["--to-parquet", str(root)] + [str(p) for p in paths], out=out)
        err = capfd.readouterr().err
    return status, out.getvalue(), err


def _parts(root):
    """{part's path under root: its table}, read as a reader reads it."""
    return {str(p.relative_to(root)): pq.read_table(p) for p in sorted(root.rglob("*.parquet"))}


def _malformed(tmp_path):
    """vadd.jsonl with bad lines: not JSON, a wrong type, cut short; its session's host
    another (its batch, of its own, is load()'s)."""
    lines = (FIXTURES / "recorded" / "vadd.jsonl").read_text().splitlines()
    session = json.loads(lines[0])
    session["host"] = "another-host"
    lines[0] = json.dumps(session)
    runs = [i for i, line in enumerate(lines) if line.startswith('{"type":"run"')]
    bad = json.loads(lines[runs[1]])
    bad["sm_clock_hz"] = "fast"
    lines[runs[1]] = json.dumps(bad)
    lines[runs[3]] = "{not json"
    path = tmp_path / "malformed.jsonl"
    path.write_text("\n".join(lines)[:-40])
    return path


def test_the_dataset_written_is_the_same_with_and_without_the_fast_path(
        cluster, tmp_path, monkeypatch, capfd):
    # The whole command: its exit status, what it prints, the parts' contents (as
    # pyarrow reads them back: the Parquet dictionaries hold the same strings), the
    # ledger, and rangeprof.load of the dataset. A malformed file's batch goes through
    # load(), which says its bad lines in both.
    # The recordings' batch and the benchmark's files' are the fast path's, the malformed
    # file's (another host) load()'s.
    paths = [FIXTURES / n for n in TAKEN] + cluster + [_malformed(tmp_path)]
    got = {}
    for fast in (True, False):
        root = tmp_path / f"ds_{fast}"
        status, out, err = _convert(paths, root, fast, monkeypatch, capfd)
        ledger = [{k: v for k, v in e.items() if k != "converted"}
                  for e in dataset.ledger(str(root))]
        got[fast] = (status, out.replace(str(root), "DS"), err, _parts(root), ledger,
                     rangeprof.load(str(root), report=None))
    assert got[True][0] == got[False][0] == 0
    assert "part(s)" in got[True][1]
    assert got[True][1] == got[False][1]
    assert "should be a number or null, not a string" in got[True][2]
    assert got[True][2] == got[False][2]
    assert got[True][3].keys() == got[False][3].keys() and len(got[True][3]) == 4
    for name, t in got[True][3].items():
        assert t.equals(got[False][3][name]), name
    assert got[True][4] == got[False][4]
    a, b = got[True][5], got[False][5]
    assert list(a.columns) == list(b.columns) and len(a) > 15000
    for c in a.columns:
        assert str(a[c].dtype) == str(b[c].dtype), c
        assert a[c].astype(object).fillna(-1).tolist() == b[c].astype(object).fillna(-1).tolist(), c


# -- recorded lines mixed with odd ones ---------------------------------------------------

def _recorded_lines():
    lines = (FIXTURES / "recorded" / "vadd.jsonl").read_text().splitlines()
    session, device = lines[0], lines[1]
    runs = [line for line in lines if line.startswith('{"type":"run"')]
    others = {json.loads(line)["type"]: line for line in lines
              if not line.startswith('{"type":"run"') and line.startswith("{")}
    setup = next(line for line in (FIXTURES / "recorded" / "setup_early.jsonl").read_text()
                 .splitlines() if '"type":"setup"' in line)
    return session, device, runs, dict(others, setup=setup)


SESSION, DEVICE, RUNS, OTHERS = _recorded_lines()
VALUES = ['"x"', "null", '[1,"a"]', "{}", "1.5", "true", "-9223372036854775808", "12",
          "[]", '{"a":1}', "1e400"]
NAMES = ["ü", "日本", "\U0001F680", "a b", "x=1", "n=4096 dtype=fp16", "Kernel=k", "Value=3",
         "flag=true", "r=1.5", "big=123456789012345678901234", "s='a b'", "", "}", "{",
         '"', "\\", "nan=nan", "layer=2"]


def _edit(lines, edit, at):
    """One edit of the run lines (a list of texts) at index at (mod their count)."""
    kind, *arg = edit
    if not lines:
        return lines
    i = at % len(lines)
    rec = None
    try:
        rec = json.loads(lines[i])
    except ValueError:  # a line an earlier edit damaged: only edits of its text
        if kind not in ("truncate", "record", "text"):
            return lines
    if not isinstance(rec, dict) or not isinstance(rec.get("metrics"), dict) or \
            not rec["metrics"]:
        if kind not in ("truncate", "record", "text"):
            return lines
    ascii_ = at % 2 == 0

    def put(r):
        lines[i] = json.dumps(r, separators=(",", ":"), ensure_ascii=ascii_)
    if kind == "truncate":
        lines[i] = lines[i][:arg[0] % max(1, len(lines[i]))]
    elif kind == "type":
        rec[arg[0]] = json.loads(arg[1])
        put(rec)
    elif kind == "extra":
        where, value = arg[0], json.loads(arg[1])
        if where == "top":
            rec["extra_member"] = value
        elif where in ("graph", "range"):
            rec[where] = dict(rec.get(where) or {"id": 1, "name": "r"}, extra=value)
        elif where == "nvtx_item" and rec.get("nvtx"):
            rec["nvtx"][0] = dict(rec["nvtx"][0], color=value)
        elif where == "metric":
            rec["metrics"]["other__metric.sum"] = value
        elif where == "unit":
            rec["units"]["other__metric.sum"] = value
        put(rec)
    elif kind == "record":
        lines.insert(i, arg[0])
    elif kind == "name":
        field, text = arg
        if field == "kernel":
            rec["kernel"] = text
        elif field == "nvtx_path":
            rec["nvtx_path"] = text
        elif rec.get("nvtx"):
            rec["nvtx"][-1] = dict(rec["nvtx"][-1], text=text)
        else:
            rec["nvtx"] = [{"domain": "", "text": text, "kind": "push_pop"}]
        put(rec)
    elif kind == "metric":
        name = next(iter(rec["metrics"]))
        if arg[0] == "null":
            rec["metrics"][name] = None
        elif arg[0] == "missing":
            del rec["metrics"][name]
        else:
            rec["metrics"]["renamed__" + name] = rec["metrics"].pop(name)
        put(rec)
    elif kind == "text":
        old, new = arg
        lines[i] = lines[i].replace(old, new, 1)
    elif kind == "all":   # to every run line from i on: a launch's text, say
        for k in range(i, len(lines)):
            try:
                r = json.loads(lines[k])
            except ValueError:
                continue
            if isinstance(r, dict):
                r[arg[0]] = json.loads(arg[1])
                lines[k] = json.dumps(r, separators=(",", ":"), ensure_ascii=ascii_)
    return lines


def _edits():
    from hypothesis import strategies as st
    member = st.sampled_from(["run", "sm_clock_hz", "kernel", "grid", "block", "metrics",
                              "launch", "runs", "time", "throttle_reasons", "nvtx", "graph",
                              "range", "device", "units", "passes", "temperature_c",
                              "workload", "pid", "_present", "type"])
    # Edits that leave a file as rangeprof could write it (the fast path's), weighted
    # so that about half of the examples are the fast path's and half load()'s.
    usual = st.one_of(
        st.tuples(st.just("name"), st.sampled_from(["kernel", "nvtx", "nvtx_path"]),
                  st.sampled_from(["\u00fc", "\u65e5\u672c", "a b", "x=1", "n=4096 dtype=fp16",
                                   "flag=true", "r=1.5", "layer=2", ""])),
        st.tuples(st.just("record"), st.sampled_from([OTHERS["warning"], OTHERS["summary"],
                                                      "", "   "])),
        st.tuples(st.just("all"), st.sampled_from(["nvtx_path", "extra_member"]),
                  st.sampled_from(['"layer=3 n=8"', '"x"', "7"])))
    return st.one_of(
        usual, usual, usual, usual,
        st.tuples(st.just("truncate"), st.integers(1, 2000)),
        st.tuples(st.just("type"), member, st.sampled_from(VALUES)),
        st.tuples(st.just("extra"), st.sampled_from(["top", "graph", "range", "nvtx_item",
                                                     "metric", "unit"]),
                  st.sampled_from(VALUES)),
        st.tuples(st.just("record"), st.sampled_from(
            [OTHERS[k] for k in sorted(OTHERS)] + [SESSION, DEVICE, "", "   ", "{not json",
                                                  '{"type":"mystery"}', "[1,2]",
                                                  '{"type":"warning","message":1}'])),
        st.tuples(st.just("name"), st.sampled_from(["kernel", "nvtx", "nvtx_path"]),
                  st.one_of(st.sampled_from(NAMES), st.text(max_size=6))),
        st.tuples(st.just("metric"), st.sampled_from(["null", "missing", "rename"])),
        st.tuples(st.just("text"), st.sampled_from([
            ('"kernel":', '"kernel":"dup","kernel":'), ('"run":', '"run":1,"run":'),
            ('"metrics":{', '"metrics": {'), ('"time":', '"time" :'),
            ('"units":{', '"units":{"x":"y",'), ('}', '}\r'), ('"sm_clock_hz":', '"sm_clock_hz":Infinity,"a":'),
            (',"run":', ',"graph":{"id":1,"run":2},"run":'), ("[", "[" * 600),
            ('"time":', '"kernel":null,"time":'), ('"passes":', '"time":"t0","passes":')]),
            st.sampled_from(["", ""])).map(lambda t: ("text",) + t[1]),
        st.tuples(st.just("all"), st.sampled_from(["nvtx_path", "workload", "kernel",
                                                   "extra_member", "cache_control"]),
                  st.sampled_from(['"layer=3 n=8"', '"x"', "null", "7", '"日本 k=v"'])))


def test_recorded_lines_mixed_with_odd_ones_give_loads_rows(tmp_path_factory):
    hypothesis = pytest.importorskip("hypothesis")
    st = hypothesis.strategies
    taken = []

    @hypothesis.settings(max_examples=80, deadline=None, derandomize=True,
                         suppress_health_check=list(hypothesis.HealthCheck))
    @hypothesis.given(start=st.integers(0, len(RUNS) - 40), count=st.integers(1, 40),
                      edits=st.lists(st.tuples(_edits(), st.integers(0, 10 ** 6)),
                                     max_size=2),
                      second=st.booleans(), bom=st.sampled_from([False, False, False, True]),
                      end=st.sampled_from([True, True, True, False]))
    def check(start, count, edits, second, bom, end):
        lines = RUNS[start:start + count]
        for edit, at in edits:
            lines = _edit(list(lines), edit, at)
        text = "\n".join([SESSION, DEVICE] + lines) + ("\n" if end else "")
        d = tmp_path_factory.mktemp("mixed")
        path = d / "a.jsonl"
        path.write_bytes(("\ufeff" if bom else "").encode() + text.encode("utf-8", "replace"))
        paths = [path]
        if second:
            paths.append(FIXTURES / "recorded" / "matmul.jsonl")
        took = _same_batches(paths)
        taken.append(took)
        hypothesis.event(f"fast path: {took}")
    check()
    # Most of the examples hold an edit that load() says or that the fast path leaves
    # to it; a share of them must be the fast path's, or it is not being compared.
    print(f"the fast path's: {sum(taken)} of {len(taken)}")
    assert sum(taken) >= 30, sum(taken)


def _nvtx(text):
    return json.dumps([{"domain": "", "text": "outer", "kind": "push_pop"},
                       {"domain": "", "text": text, "kind": "push_pop"}])


# Each edit alone, on 30 recorded run lines: whether the fast path takes the file, and
# that it gives load()'s rows either way.
ONE_EDIT = [
    ("unchanged", [], True),
    ("a metric null in one run", [(("metric", "null"), 3)], False),
    ("a metric missing in one run", [(("metric", "missing"), 3)], False),
    ("a metric renamed in one run", [(("metric", "rename"), 3)], False),
    ("a member of the wrong type", [(("type", "sm_clock_hz", '"fast"'), 3)], False),
    ("a null kernel", [(("type", "kernel", "null"), 3)], False),
    ("a line cut short", [(("truncate", 100), 3)], False),
    ("an unknown member", [(("extra", "top", "12"), 3)], True),
    ("a range member after run", [(("extra", "range", '"x"'), 3)], False),
    ("an unknown member of an NVTX range", [(("extra", "nvtx_item", "1"), 3)], False),
    ("a metric not in the session", [(("extra", "metric", "1.5"), 3)], False),
    ("a warning line", [(("record", OTHERS["warning"]), 3)], True),
    ("a summary line", [(("record", OTHERS["summary"]), 3)], True),
    ("a blank line", [(("record", "   "), 3)], True),
    ("a second session", [(("record", SESSION), 3)], False),
    ("a device line after runs", [(("record", DEVICE), 3)], False),
    ("an unknown record type", [(("record", '{"type":"mystery"}'), 3)], False),
    ("a unicode kernel name", [(("name", "kernel", "kü日🚀"), 3)], True),
    ("a unicode kernel name escaped", [(("name", "kernel", "kü"), 4)], False),
    ("config words", [(("all", "nvtx", _nvtx("layer=3 n=8 f=1.5 t=true s=x")), 0)], True),
    ("config words in some runs", [(("all", "nvtx", _nvtx("layer=3 n=8 t=true")), 15)],
     True),
    ("a config word of two types", [(("all", "nvtx", _nvtx("n=8")), 10),
                                    (("all", "nvtx", _nvtx("n=x")), 20)], True),
    ("a config word naming a column", [(("all", "nvtx", _nvtx("Kernel=k")), 0)], False),
    ("a member given twice", [(("text", '"run":', '"run":1,"run":'), 3)], False),
    ("a launch's member after run", [(("text", '"time":', '"kernel":null,"time":'), 3)],
     False),
    ("a run's member before run", [(("text", '"passes":', '"time":"t0","passes":'), 3)],
     False),
    ("a key spaced from its colon", [(("text", '"time":', '"time" :'), 3)], False),
    ("Infinity", [(("text", '"sm_clock_hz":', '"sm_clock_hz":Infinity,"a":'), 3)], False),
    ("a pid member", [(("type", "pid", "7"), 3)], False),
    ("a line that is not JSON", [(("record", "{not json"), 3)], False),
    ("a warning of the wrong form", [(("record", '{"type":"warning","message":1}'), 3)],
     False),
    ("another unit in one run", [(("type", "units", json.dumps(
        {"gpu__time_duration.sum": "usecond", "dram__bytes_read.sum": "byte",
         "dram__bytes_write.sum": "byte"})), 3)], False),
    ("no units in one run", [(("type", "units", "null"), 3)], False),
    ("a member nested 600 deep", [(("type", "extra_member", "[" * 600 + "]" * 600), 3)],
     False),
]


@pytest.mark.parametrize("what,edits,taken", ONE_EDIT, ids=[e[0] for e in ONE_EDIT])
def test_each_odd_line_alone_gives_loads_rows(tmp_path, what, edits, taken):
    lines = list(RUNS[:30])
    for edit, at in edits:
        lines = _edit(lines, edit, at)
    path = tmp_path / "a.jsonl"
    path.write_text("\n".join([SESSION, DEVICE] + lines) + "\n", encoding="utf-8")
    assert _same_batches([path]) == taken, runcolumns.decline_reason(pa, [str(path)])
