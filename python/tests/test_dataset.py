"""The Parquet dataset (rangeprof/dataset.py, rangeprof-report --to-parquet) and the rank
columns (rangeprof/job.py): schema, appending, filters, other readers (pyarrow's dataset
reader for Spark and polars, DuckDB running doc/records.md's queries). Files come from
the H200 recordings and from bench/gen_cluster.py, which writes them from one."""
import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest

import rangeprof
from rangeprof import dataset, job, report, table

ROOT = Path(__file__).resolve().parents[2]
GEN = ROOT / "bench" / "gen_cluster.py"
RECORDS_MD = ROOT / "doc" / "records.md"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    out = tmp_path_factory.mktemp("cluster") / "files"
    subprocess.run([sys.executable, str(GEN), str(out), "--hosts", "2", "--launches", "10",
                    "--runs", "5"], check=True)
    return out


def _same(a, b):
    """Frames equal column by column, dtypes included, NaN equal to NaN."""
    assert list(a.columns) == list(b.columns)
    for c in a.columns:
        assert str(a[c].dtype) == str(b[c].dtype), c
        x, y = a[c].astype(object), b[c].astype(object)
        same = (x == y) | (x.isna() & y.isna())
        assert same.all(), (c, x[~same].head(3).tolist(), y[~same].head(3).tolist())


def _sorted(df):
    return df.sort_values(["File", "Line", "Metric"], kind="stable").reset_index(drop=True)


# -- the rank columns ------------------------------------------------------------------

def test_rank_columns_come_from_the_session_job_member(cluster):
    df = rangeprof.load(str(cluster), report=None)
    cols = list(df.columns)
    assert cols[cols.index("Host") + 1:cols.index("Host") + 5] == list(job.COLUMNS)
    assert sorted(df["Rank"].unique()) == list(range(16))
    assert df["Rank"].dtype == np.int64 and (df["WorldSize"] == 16).all()
    assert set(df["LocalRank"]) == set(range(8))
    assert set(df["JobId"]) == {"job-4242"}
    r3 = df[df["File"].astype(str).str.endswith("node000.r3.jsonl")]
    assert (r3["Rank"] == 3).all() and (r3["Host"] == "node000").all()
    # The Python reader (derive) gives the same columns.
    py = rangeprof.load(str(cluster / "node000.r3.jsonl"), report=None,
                        derive=["t2=gpu__time_duration.sum*2"])
    assert (py["Rank"] == 3).all() and (py["JobId"] == "job-4242").all()


def test_files_without_a_job_member_have_null_ranks(recorded):
    df = rangeprof.load(str(recorded("vadd.jsonl")), report=None)
    assert df["Rank"].isna().all() and df["JobId"].isna().all()
    assert df["Rank"].dtype == np.float64


def test_a_bad_job_member_is_a_bad_line(tmp_path, recorded):
    lines = recorded("vadd.jsonl").read_text().splitlines()
    s = json.loads(lines[0])
    s["job"] = {"launcher": "torchrun", "rank": "x"}
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join([json.dumps(s)] + lines[1:]) + "\n")
    err = io.StringIO()
    df = rangeprof.load(str(path), report=err)
    assert "'job.rank' should be an integer or null" in err.getvalue()
    assert len(df) < len(rangeprof.load(str(recorded("vadd.jsonl")), report=None))


def test_job_columns_are_table_id_columns():
    for c in job.COLUMNS:
        assert c in table.ID_COLUMNS


# -- converting ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def converted_once(cluster, tmp_path_factory):
    """The cluster's dataset, converted by worker processes; not to be changed."""
    root = tmp_path_factory.mktemp("ds") / "ds"
    result = dataset.convert([str(cluster)], str(root), report=None)
    return root, result


@pytest.fixture
def converted(cluster, tmp_path):
    """A dataset of the cluster's files for a test that changes it."""
    root = tmp_path / "ds"
    result = dataset.convert([str(cluster)], str(root), workers=1, report=None)
    return root, result


def test_dataset_is_partitioned_by_job_and_host_and_loads_as_the_files(cluster, converted_once):
    root, result = converted_once
    assert len(result["converted"]) == 16
    hosts = sorted(p.name for p in (root / "JobId=job-4242").iterdir())
    assert hosts == ["Host=node000", "Host=node001"]
    # One part per job and host for one conversion: its 8 ranks' files together.
    assert len(list((root / "JobId=job-4242" / "Host=node001").glob("part-*.parquet"))) == 1
    files = rangeprof.load([str(p) for p in sorted(cluster.glob("*.jsonl"))], report=None)
    _same(_sorted(files), _sorted(rangeprof.load(str(root))))


def test_recorded_files_convert_with_their_config_columns(tmp_path, recorded):
    names = ["vadd.jsonl", "matmul.jsonl", "fusion.jsonl", "graph_capture.jsonl"]
    paths = [str(recorded(n)) for n in names]
    root = tmp_path / "ds"
    assert report.main(["--to-parquet", str(root)] + paths, io.StringIO()) == 0
    back = rangeprof.load(str(root))
    direct = pd.concat([rangeprof.load(p, report=None) for p in paths], ignore_index=True)
    assert set(back.attrs["config_columns"]) == {"n", "dtype", "variant", "step"} - (
        {"step"} - set(direct.columns))
    for c in ("n", "Value", "Kernel", "Graph", "Rank"):
        assert sorted(map(str, back[c].tolist())) == sorted(map(str, direct[c].tolist())), c
    assert back["n"].dtype == np.float64  # an int where some runs lack it, as load types it
    # Absent partition values read back as null, not as the placeholder.
    assert back["JobId"].isna().all() and set(back["Host"]) == {"vm"}
    try:
        import duckdb
    except ImportError:
        return
    # Parts with different config columns: the documented queries (fixed columns only,
    # no union_by_name) still read every part.
    rows = duckdb.sql(_documented_queries()[1].replace("DIR", str(root))).fetchall()
    assert sum(1 for _ in rows) >= 1
    n = duckdb.sql(f"SELECT count(*), count(n) FROM read_parquet('{root}/**/*.parquet', "
                   "union_by_name = true)").fetchall()[0]
    assert n == (len(back), int(back["n"].notna().sum()))


def test_converting_again_adds_new_files_and_rewrites_none(cluster, converted, tmp_path):
    root, _ = converted
    before = {p: (p.stat().st_mtime_ns, p.stat().st_ino) for p in root.rglob("*.parquet")}
    again = dataset.convert([str(cluster)], str(root), report=None)
    assert again["converted"] == [] and len(again["already"]) == 16
    # A copy of a converted file is the same source.
    copy = tmp_path / "copy.jsonl"
    shutil.copy(cluster / "node000.r0.jsonl", copy)
    assert dataset.convert([str(copy)], str(root), report=None)["already"] == [str(copy)]
    # A new rank's file: converted alone, the old parts untouched.
    new = tmp_path / "more"
    subprocess.run([sys.executable, str(GEN), str(new), "--hosts", "1", "--launches", "4",
                    "--runs", "5", "--job-id", "job-5"], check=True)
    added = dataset.convert([str(new)], str(root), report=None)
    assert len(added["converted"]) == 8
    after = {p: (p.stat().st_mtime_ns, p.stat().st_ino) for p in root.rglob("*.parquet")}
    assert {p: after[p] for p in before} == before
    assert len(after) == len(before) + 1  # the new job's host: one part
    df = rangeprof.load(str(root), filters=[("JobId", "==", "job-5")])
    assert len(df) == 8 * 4 * 5 and set(df["Host"]) == {"node000"}
    assert len(dataset.ledger(str(root))) == 24


def test_a_file_grown_since_its_conversion_is_said_and_passed_over(cluster, tmp_path):
    src = tmp_path / "r.jsonl"
    shutil.copy(cluster / "node001.r9.jsonl", src)
    root = tmp_path / "ds"
    dataset.convert([str(src)], str(root), workers=1, report=None)
    rows = len(rangeprof.load(str(root)))
    with open(src, "a") as f:
        f.write((cluster / "node001.r9.jsonl").read_text().splitlines()[2] + "\n")
    err = io.StringIO()
    result = dataset.convert([str(src)], str(root), report=err)
    assert result["changed"] == [str(src)] and result["converted"] == []
    assert "changed since it was converted" in err.getvalue()
    assert len(rangeprof.load(str(root))) == rows


def test_a_conversion_cut_short_is_completed_by_the_next(cluster, tmp_path):
    root = tmp_path / "ds"
    dataset.convert([str(cluster / "node000.r1.jsonl")], str(root), report=None)
    (root / dataset.LEDGER).write_text("")  # the part was renamed, its line not written
    again = dataset.convert([str(cluster / "node000.r1.jsonl")], str(root), report=None)
    assert len(again["converted"]) == 1
    assert len(list(root.rglob("*.parquet"))) == 1
    assert len(rangeprof.load(str(root))) == 10 * 5


def test_to_parquet_refusals(tmp_path, cluster):
    err = io.StringIO()
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "x.txt").write_text("x")
    from contextlib import redirect_stderr
    with redirect_stderr(err):
        assert report.main(["--to-parquet", str(tmp_path / "other"), str(cluster)],
                           io.StringIO()) == 2
        with pytest.raises(SystemExit) as e:  # as every report without files
            report.main(["--to-parquet", str(tmp_path / "new")], io.StringIO())
        assert e.value.code == 2
        assert report.main(["--to-parquet", str(tmp_path / "new"), str(tmp_path / "none*")],
                           io.StringIO()) == 2
    assert "holds files but no _rangeprof_dataset.json" in err.getvalue()
    assert "no JSONL files given" in err.getvalue()
    assert "no file or directory" in err.getvalue() or "none*" in err.getvalue()


def test_a_newer_schema_is_refused(converted):
    root, _ = converted
    (root / dataset.MARKER).write_text(json.dumps({"schema": dataset.SCHEMA_VERSION + 1}))
    newer = dataset.SCHEMA_VERSION + 1
    with pytest.raises(dataset.DatasetError,
                       match=f"dataset schema {newer}; this reader knows {newer - 1}"):
        rangeprof.load(str(root))


def test_parts_carry_the_schema_version_and_documented_columns(converted_once):
    root, _ = converted_once
    part = next(root.rglob("*.parquet"))
    schema = pq.read_schema(part)
    assert schema.metadata[b"rangeprof.dataset_schema"] == str(dataset.SCHEMA_VERSION).encode()
    assert json.loads(schema.metadata[b"rangeprof.config_columns"]) == ["layer"]
    assert schema.names == [c for c, _ in dataset.COLUMNS] + ["layer"]
    # doc/records.md's table lists each column with its type, in this order.
    text = RECORDS_MD.read_text()
    section = text[text.index("**Schema 2.**"):text.index("then one string column per config")]
    documented = re.findall(r"`(\w+)` \| (string|double|int64)", section)
    assert documented == [(c, t) for c, t in dataset.COLUMNS]
    for (c, t), field in zip(dataset.COLUMNS, schema):
        assert str(field.type) == t, c


# -- reading ------------------------------------------------------------------------------

def test_filters_are_pushed_down_and_give_what_filtering_the_files_gives(cluster, converted_once):
    root, _ = converted_once
    files = rangeprof.load(str(cluster), report=None)
    kernel = "reduce_kernel<512, 1>"
    filters = [("Kernel", "==", kernel), ("Rank", "in", [0, 3, 12])]
    ds_rows = rangeprof.load(str(root), filters=filters)
    js_rows = rangeprof.load(str(cluster), report=None, filters=filters)
    expect = files[(files["Kernel"] == kernel) & files["Rank"].isin([0, 3, 12])]
    assert len(ds_rows) == len(js_rows) == len(expect) == 3 * 2 * 5
    _same(_sorted(ds_rows), _sorted(js_rows))
    # Only the parts of one host are read for a Host filter (partition pruning).
    d = dataset.arrow_dataset(str(root))
    import pyarrow.dataset as ds_mod
    frags = list(d.get_fragments(filter=ds_mod.field("Host") == "node001"))
    assert [f.path.split(os.sep)[-2] for f in frags] == ["Host=node001"]
    with pytest.raises(ValueError, match="expected"):
        rangeprof.load(str(root), filters=[("Kernel", "~", "x")])



@pytest.mark.parametrize("filters", ["Kernel==x", ("Kernel", "==", "x"), [["Kernel", "==", "x"]],
                                     {"Kernel": "x"}, 5])
def test_filters_not_in_the_accepted_form_are_refused_naming_the_value(
        cluster, converted_once, filters):
    """filters='Kernel==x' was read a character at a time: 'filters: 'K': expected ...'."""
    root, _ = converted_once
    for where in (str(root), str(cluster)):  # a dataset, and JSON Lines files
        with pytest.raises(ValueError) as e:
            rangeprof.load(where, report=None, filters=filters)
        assert str(e.value) == (f"filters={filters!r}: expected a list of (column, op, "
                                "value) tuples, such as [('Kernel', '==', 'vadd')], or a "
                                "list of such lists (any of them true)")
    # The forms accepted: one list of tuples, a list of such lists, tuples for lists.
    one = rangeprof.load(str(root), filters=[("Rank", "==", 0)])
    assert len(one) and (one["Rank"] == 0).all()
    assert len(rangeprof.load(str(root), filters=[[("Rank", "==", 0)], [("Rank", "==", 1)]])) \
        == 2 * len(one)
    assert len(rangeprof.load(str(root), filters=(("Rank", "==", 0),))) == len(one)

def test_derive_on_a_dataset_is_refused(converted_once):
    root, _ = converted_once
    with pytest.raises(ValueError, match="not a Parquet dataset"):
        rangeprof.load(str(root), derive=["t=gpu__time_duration.sum*2"])


def test_load_reads_datasets_and_files_together(cluster, converted_once, recorded):
    root, _ = converted_once
    df = rangeprof.load([str(root), str(recorded("vadd.jsonl"))], report=None)
    assert len(df) == len(rangeprof.load(str(root))) + len(
        rangeprof.load(str(recorded("vadd.jsonl")), report=None))
    assert df["Kernel"].dtype == "category"


def test_pyarrow_dataset_reader_reads_it_as_spark_and_polars_would(converted_once):
    root, _ = converted_once
    # Plain pyarrow, no rangeprof code: hive partitions, the ledger and marker ignored.
    d = pads.dataset(str(root), format="parquet", partitioning="hive")
    t = d.to_table()
    assert t.num_rows == 16 * 10 * 5
    assert {"JobId", "Host", "Rank", "Kernel", "Value", "layer"} <= set(t.column_names)
    per_rank = t.group_by("Rank").aggregate([("Value", "count")])
    assert sorted(per_rank.column("Rank").to_pylist()) == list(range(16))


def _documented_queries():
    text = RECORDS_MD.read_text()
    return re.findall(r"```sql\n(.*?)```", text, flags=re.S)


def test_records_md_shows_three_queries():
    assert len(_documented_queries()) == 3


@pytest.mark.parametrize("number", [0, 1, 2])
def test_documented_duckdb_queries_answer_on_a_dataset(converted_once, number):
    duckdb = pytest.importorskip("duckdb")
    root, _ = converted_once
    sql = _documented_queries()[number].replace("DIR", str(root))
    rows = duckdb.sql(sql).fetchall()
    assert rows
    if number == 0:  # the slowest rank first: the generator's slow GPU
        assert all(r[3] == 3 for r in rows[:5]) and rows[0][6] > 10
    elif number == 1:  # the lowest clock first, hottest, throttled
        assert rows[0][1] == 3 and rows[0][4] < 1760 and rows[0][6] > 0
    else:
        assert all(r[2] == 16 for r in rows) and rows[0][3] > rows[0][4]


def test_a_numeric_job_id_stays_a_string(tmp_path):
    # A Slurm job id looks like a number: rangeprof.load and the documented queries keep
    # it the string the schema says.
    files = tmp_path / "files"
    subprocess.run([sys.executable, str(GEN), str(files), "--hosts", "1", "--ranks-per-host",
                    "2", "--launches", "2", "--runs", "3", "--job-id", "4242"], check=True)
    root = tmp_path / "ds"
    dataset.convert([str(files)], str(root), workers=1, report=None)
    df = rangeprof.load(str(root), filters=[("JobId", "==", "4242")])
    assert len(df) == 2 * 2 * 3 and set(df["JobId"]) == {"4242"}
    duckdb = pytest.importorskip("duckdb")
    rows = duckdb.sql(_documented_queries()[0].replace("DIR", str(root))).fetchall()
    assert {r[0] for r in rows} == {"4242"}


def test_load_of_many_files_while_their_batches_are_made_into_columns(tmp_path):
    # The reading thread appends each new file's session to a list that the column
    # thread read through a view of its buffer: appending then raised BufferError (an
    # internal error of load() on a directory of rank files, which a conversion batch
    # is). Thread switches made frequent, so that the two meet in every run.
    files = tmp_path / "files"
    subprocess.run([sys.executable, str(GEN), str(files), "--hosts", "4", "--launches", "40",
                    "--runs", "20"], check=True)
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        df = rangeprof.load(str(files), report=None)
    finally:
        sys.setswitchinterval(old)
    assert len(df) == 32 * 40 * 20 and sorted(df["Rank"].unique()) == list(range(32))


# -- batches, the layout, files that are not converted ------------------------------------

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _malformed(tmp_path):
    """A recorded file with bad lines of each kind the reader says: not JSON, a member of
    the wrong type, a binary line, a run with a null kernel, the last line cut short."""
    lines = (FIXTURES / "recorded" / "vadd.jsonl").read_text().splitlines()
    runs = [i for i, line in enumerate(lines) if line.startswith('{"type":"run"')]
    bad = json.loads(lines[runs[1]])
    bad["sm_clock_hz"] = "fast"
    null_kernel = json.loads(lines[runs[2]])
    null_kernel["kernel"] = None
    lines[runs[1]] = json.dumps(bad)
    lines[runs[2]] = json.dumps(null_kernel)
    lines[runs[3]] = "{not json"
    lines.insert(runs[4], "\x00\x01\x02\xff binary")
    path = tmp_path / "malformed.jsonl"
    path.write_bytes(("\n".join(lines) + "\n").encode("utf-8", "surrogateescape")[:-40])
    return path


def _warnings(text):
    return sorted(line for line in text.splitlines() if re.match(r"rangeprof: warning: .*:\d+:", line))


def test_the_dataset_holds_loads_rows_and_says_its_bad_lines(tmp_path):
    # Every recorded file and a malformed one, converted in one batch (one load() call):
    # the dataset's rows are load()'s of the files, in order, and the conversion says
    # the bad lines that load() says.
    paths = sorted(str(p) for p in FIXTURES.rglob("*.jsonl")) + [str(_malformed(tmp_path))]
    assert len(paths) >= 10
    from contextlib import redirect_stderr
    err = io.StringIO()
    with redirect_stderr(err):
        result = dataset.convert(paths, str(tmp_path / "ds"), workers=1)
    said = io.StringIO()
    direct = rangeprof.load(paths, report=said)
    assert direct.attrs["bad_line_count"] >= 5
    assert _warnings(err.getvalue()) == _warnings(said.getvalue())
    assert any("'sm_clock_hz' should be a number" in w for w in _warnings(err.getvalue()))
    assert sum(e["rows"] for e in result["converted"]) == len(direct)
    back = rangeprof.load(str(tmp_path / "ds"))
    keep = [c for c in direct.columns if c not in ("JobId", "Host")]
    _same(_sorted(back)[keep], _sorted(direct)[keep])
    assert back["Host"].astype(object).tolist() == _sorted(direct)["Host"].astype(object).tolist() \
        or sorted(map(str, back["Host"])) == sorted(map(str, direct["Host"]))


def test_one_part_per_job_and_host_a_row_group_per_kernel(cluster, tmp_path, monkeypatch):
    # (a row group per kernel of ROW_GROUP_MIN rows or more: the test's kernels have 80)
    monkeypatch.setattr(dataset, "ROW_GROUP_MIN", 50)
    root = tmp_path / "ds"
    result = dataset.convert([str(cluster)], str(root), workers=1, report=None)
    parts = sorted(root.rglob("*.parquet"))
    assert len(parts) == 2  # one job, two hosts: a part each for one conversion
    assert {len(e["parts"]) for e in result["converted"]} == {1}
    f = pq.ParquetFile(parts[0])
    assert f.metadata.metadata[b"rangeprof.dataset_schema"] == str(dataset.SCHEMA_VERSION).encode()
    kernel = f.schema_arrow.names.index("Kernel")
    seen = []
    for i in range(f.metadata.num_row_groups):
        rg = f.metadata.row_group(i)
        stats = rg.column(kernel).statistics
        assert stats.min == stats.max  # one kernel a row group: a filter skips the others
        assert "RLE_DICTIONARY" in rg.column(kernel).encodings
        seen.append(stats.min)
    assert seen == sorted(seen) and len(seen) == 5
    # The parts are read back as strings, whatever pyarrow wrote them from.
    assert pq.read_schema(parts[0]).field("Kernel").type == pa.string()


def test_a_file_that_is_not_json_lines_is_not_converted(cluster, tmp_path):
    binary = tmp_path / "core.jsonl"
    binary.write_bytes(bytes(range(256)) * 64)
    utf16 = tmp_path / "utf16.jsonl"
    utf16.write_bytes((cluster / "node000.r0.jsonl").read_text().encode("utf-16"))
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    root = tmp_path / "ds"
    out, err = io.StringIO(), io.StringIO()
    from contextlib import redirect_stderr
    with redirect_stderr(err):
        status = report.main(["--to-parquet", str(root), str(cluster / "node000.r0.jsonl"),
                              str(binary), str(utf16), str(empty)], out)
    assert status == 1
    assert "1 file(s) converted (50 rows" in out.getvalue()
    assert "3 not converted" in out.getvalue()
    text = err.getvalue()
    assert f"'{binary}': not converted: not JSON Lines: line 1: " in text
    assert f"'{utf16}': not converted: is UTF-16" in text
    assert f"'{empty}': not converted: holds no record" in text
    sources = {e["source"] for e in dataset.ledger(str(root))}
    assert sources == {str(cluster / "node000.r0.jsonl")}
    # Not in the ledger: said again the next time, not "converted before".
    again = dataset.convert([str(binary)], str(root), report=None)
    assert again["already"] == [] and [p for p, _ in again["refused"]] == [str(binary)]


def test_a_batch_cut_short_leaves_no_rows_twice(cluster, tmp_path):
    # Two files' batch: its parts written, its ledger line lost. The next conversion,
    # batching other files with them, removes the leftover part before writing its own:
    # every reader of the parts (DuckDB's glob too) sees each row once.
    root = tmp_path / "ds"
    one, two = str(cluster / "node000.r1.jsonl"), str(cluster / "node000.r2.jsonl")
    dataset.convert([one, two], str(root), workers=1, report=None)
    (root / dataset.LEDGER).write_text("")
    dataset.convert([one, two, str(cluster / "node000.r3.jsonl")], str(root), workers=1,
                    report=None)
    parts = list(root.rglob("*.parquet"))
    assert len(parts) == 1
    assert pads.dataset([str(p) for p in parts], format="parquet").count_rows() == 3 * 50
    assert len(rangeprof.load(str(root))) == 3 * 50


def test_a_schema_1_dataset_is_read_and_appended_to(cluster, tmp_path):
    # Schema 1's ledger: a line per source (the batch lines' entries, one a line).
    root = tmp_path / "ds"
    first = [str(p) for p in sorted(cluster.glob("node000.*.jsonl"))]
    dataset.convert(first, str(root), workers=1, report=None)
    entries = dataset.ledger(str(root))
    (root / dataset.LEDGER).write_text("".join(json.dumps(e) + "\n" for e in entries))
    (root / dataset.MARKER).write_text(json.dumps({"format": "rangeprof-parquet",
                                                   "schema": 1}) + "\n")
    assert len(rangeprof.load(str(root))) == 8 * 50
    result = dataset.convert([str(cluster)], str(root), workers=1, report=None)
    assert len(result["already"]) == 8 and len(result["converted"]) == 8
    assert json.loads((root / dataset.MARKER).read_text())["schema"] == dataset.SCHEMA_VERSION
    assert len(rangeprof.load(str(root))) == 16 * 50
