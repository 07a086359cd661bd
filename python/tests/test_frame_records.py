"""rangeprof.load's columnar reader (frame.py: pyarrow's JSON reader over the run lines)
and records.py's reader agree: on which lines are bad, saying it in the same words, and
on every value of the good ones. records.py owns what a record is (RUN_MEMBERS, the kinds
of its members); frame.py asks pyarrow for those members in those kinds and sends every
line it cannot take to records.parse_line. Compared here: the recorded files; a line per
member records.RUN_MEMBERS names and per value of every kind (so that a rule changed on
one side only, a type in pyarrow's schema or a check in records.py, shows); and lines
changed at random (Hypothesis)."""
import json
import math
from pathlib import Path

import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from rangeprof import frame, records  # noqa: E402

FIXTURES = Path(__file__).resolve().parent / "fixtures"
JSONL = sorted(FIXTURES.glob("recorded*/*.jsonl"))
VADD = (FIXTURES / "recorded" / "vadd.jsonl").read_text().splitlines()
HEADER = VADD[:2]   # session, device
RUNS = [line for line in VADD if line.startswith('{"type":"run",')]
# A run of a graph's kernel node and of a range workload, for their objects' members.
GRAPH_RUN = next(line for line in (FIXTURES / "recorded" / "graph_capture.jsonl")
                 .read_text().splitlines() if '"graph":{' in line and '"type":"run"' in line)
RANGE_RUN = next(line for line in (FIXTURES / "recorded_range" / "rm_mlp.jsonl")
                 .read_text().splitlines() if '"range":{' in line and '"type":"run"' in line)

# Values of every JSON kind and the edges of each: what a member may be given.
EDGES = [None, True, "x", "", 0, -1, 1.5, 1e308, 2 ** 53 + 1, 2 ** 63 - 1, 2 ** 63,
         -(2 ** 63) + 1, -(2 ** 63), 10 ** 400, [], [1], ["a"], [None], [1.5], {}, {"a": 1},
         [{"text": "t"}], math.inf]


def _member_paths(members, prefix=()):
    """Every member path records.RUN_MEMBERS describes: objects' members, a list's first
    item, a metric and a unit."""
    for key, kind in members.items():
        path = prefix + (key,)
        yield path
        if type(kind) is dict:
            yield from _member_paths(kind, path)
        elif type(kind) is list:
            yield path + (0,)
            if type(kind[0]) is dict:
                yield from _member_paths(kind[0], path + (0,))
        elif kind in (records.METRICS, records.UNITS):
            yield path + ("gpu__time_duration.sum",)


PATHS = list(_member_paths(records.RUN_MEMBERS))


def _with(line, path, value):
    """The run line with the member at path set to value (objects and lists on the way
    made where the line has none)."""
    rec = json.loads(line)
    parent = rec
    for key, nxt in zip(path[:-1], path[1:]):
        holder = parent.get(key) if isinstance(parent, dict) else (
            parent[key] if isinstance(parent, list) and len(parent) > key else None)
        if not isinstance(holder, (dict, list)) or (isinstance(holder, list) and not holder
                                                    and nxt != 0):
            holder = [] if isinstance(nxt, int) else {}
            if isinstance(parent, list):
                parent.append(holder)
            else:
                parent[key] = holder
        parent = holder
    last = path[-1]
    if isinstance(parent, list):
        if parent:
            parent[0] = value
        else:
            parent.append(value)
    else:
        parent[last] = value
    return json.dumps(rec, separators=(",", ":"))


def _normal(v):
    """A cell as both readers' frames can be compared: missing as None, numbers as float
    (one reader's int64 column is the other's float64 where some rows lack the member)."""
    if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA:
        return None
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, float)):
        return float(v)
    return str(v)


def _agree(path):
    """Asserts that load()'s columnar reader and records.py's give the same bad lines and
    the same rows, in every column."""
    fast = frame.load(str(path), report=None)
    # With a derivation, load() reads the runs with records.Reader (parse_line) and
    # makes its rows with rangeprof.table: the Python reader's frame.
    python = frame.load(str(path), report=None, derive=["zz_agree=1"])
    python = python[python["Metric"] != "zz_agree"]
    recs = records.read([str(path)], report=None)
    summaries = {n for n, line in enumerate(path.read_text("utf-8", "replace").split("\n"), 1)
                 if line.startswith('{"type":"summary",')}
    expected = [str(b) for b in recs.bad_lines if b.line not in summaries]
    assert fast.attrs["bad_lines"] == expected
    assert python.attrs["bad_lines"] == [str(b) for b in recs.bad_lines]
    assert sorted(fast.columns) == sorted(python.columns)
    assert len(fast) == len(python)
    key = ["Line", "Metric"]
    fast, python = (d.assign(Metric=d["Metric"].astype(str)).sort_values(key, kind="stable")
                    .reset_index(drop=True) for d in (fast, python))
    for c in fast.columns:
        a = [_normal(v) for v in fast[c].astype(object)]
        b = [_normal(v) for v in python[c].astype(object)]
        assert a == b, (path.name, c, [(x, y) for x, y in zip(a, b) if x != y][:3])
    return recs


@pytest.mark.parametrize("path", JSONL, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_recorded_files_read_alike(path):
    recs = _agree(path)
    assert recs.runs and not recs.bad_lines


def _given_to_pyarrow(line):
    """Whether load()'s columnar reader gives the line to pyarrow: a run line as rangeprof
    writes it whose metrics it can list, with no Infinity or NaN (not JSON, which pyarrow
    reads); the others are records.py's alone."""
    data = line.encode("utf-8", "surrogatepass")
    return data.startswith(b'{"type":"run",') and b"Infinity" not in data and \
        b"NaN" not in data and frame._metric_names([data], []) is not None


def _verdicts_agree(line):
    """Asserts that pyarrow, with the schema made of records.RUN_MEMBERS and the checks of
    frame._fits, takes the line, alone in its batch, exactly where records.parse_line
    does (a batch pyarrow refuses goes to records.py whole); whether it does."""
    pyarrow = frame._pyarrow()   # with pyarrow.json, as load() takes it (alone in a run too)
    why = records.parse_line(line, True)[1]
    if _given_to_pyarrow(line):
        data = line.encode("utf-8", "surrogatepass")
        table = frame._ArrowReader(pyarrow, [])._parse(
            [data], frame._metric_names([data], [])[0])
        assert (why is None) == (table is not None), (line[:300], why)
    return why is None


@pytest.mark.parametrize("member", PATHS, ids=lambda p: ".".join(map(str, p)))
def test_each_member_given_each_kind_of_value_reads_alike(member, tmp_path):
    base = GRAPH_RUN if member[0] == "graph" else RANGE_RUN if member[0] == "range" \
        else RUNS[0]
    lines = [_with(base, member, value) for value in EDGES]
    # Line by line, pyarrow's verdict (with the schema made of records.RUN_MEMBERS and
    # frame._fits) is records.py's: a value of the member's kind taken, others refused.
    good = [line for line in lines if _verdicts_agree(line)]
    assert good and len(good) < len(lines), member
    # The values taken, read together (pyarrow reads the batch), give records.py's rows;
    # all of them together, the same bad lines.
    for name, body in (("good", good), ("all", lines)):
        path = tmp_path / f"{name}.jsonl"
        path.write_text("\n".join(list(HEADER) + [RUNS[1]] + body) + "\n")
        _agree(path)


def test_a_null_workload_reads_as_kernel_in_both_readers(tmp_path):
    """A run whose "workload" is null reads as "kernel", as one without the member does
    (doc/records.md), in both readers. The Python reader gave None where the launch's
    first run had the null (its template was made from it), and "kernel" where an earlier
    run of the launch lacked the member: Hypothesis found a range run, alone in its launch,
    reading None against the columnar reader's "kernel" (session 23's CI of branch image)."""
    path = tmp_path / "null_workload.jsonl"
    path.write_text("\n".join(list(HEADER) + [_with(RANGE_RUN, ("workload",), None)]) + "\n")
    _agree(path)
    assert list(frame.load(str(path), report=None)["Workload"].astype(str).unique()) == \
        ["kernel"]


# Hypothesis: a recorded run line with any member (anywhere in it) replaced by any JSON
# value, or its text changed, among unchanged recorded runs.
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(),
                    st.integers(min_value=2 ** 62, max_value=2 ** 64),
                    st.integers(max_value=-(2 ** 62), min_value=-(2 ** 64)),
                    st.floats(allow_nan=False), st.text(max_size=8))
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) |
                      st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=8)


def _paths_of(obj, prefix=()):
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths_of(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths_of(v, prefix + (i,))


@st.composite
def changed_line(draw):
    line = draw(st.sampled_from(RUNS[:40] + [GRAPH_RUN, RANGE_RUN]))
    how = draw(st.sampled_from(["member", "member", "member", "text", "cut"]))
    if how == "cut":
        return line[:draw(st.integers(1, len(line) - 1))]
    if how == "text":
        at = draw(st.integers(0, len(line)))
        return line[:at] + draw(st.text(max_size=3)) + line[at + draw(st.integers(0, 3)):]
    rec = json.loads(line)
    path = draw(st.sampled_from([p for p in _paths_of(rec) if p]))
    parent = rec
    for k in path[:-1]:
        parent = parent[k]
    parent[path[-1]] = draw(VALUES)
    return json.dumps(rec, separators=(",", ":"))


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(changed_line(), min_size=1, max_size=6))
def test_changed_lines_read_alike(tmp_path_factory, lines):
    for line in lines:
        _verdicts_agree(line)
    path = tmp_path_factory.mktemp("changed") / "changed.jsonl"
    body = []
    for i, line in enumerate(lines):
        body += [RUNS[i % len(RUNS)], line.replace("\n", " ")]
    path.write_text("\n".join(HEADER + body) + "\n", "utf-8", "surrogatepass")
    _agree(path)
