"""rangeprof/dataset.py - a Parquet dataset of many JSON Lines files: every rank and host of
a job in one place, partitioned by job and host (hive: DIR/JobId=<id>/Host=<host>/), read
by rangeprof.load, DuckDB, pyarrow, polars and Spark alike. Schema in doc/records.md,
"The Parquet dataset".

    rangeprof-report --to-parquet DIR r.*.jsonl     # converts; again later: adds the new
    rangeprof.load(DIR, filters=[("Kernel", "==", "vadd")])

Each source file is converted once: the dataset's ledger (_rangeprof_sources.jsonl) keeps
a line per source converted, with a key made of its size and its first and last MiB, so
that a converted file (also moved or copied) is passed over and one that changed since
(a process appended to it) is said and passed over, never converted twice. Parts are
written under a temporary name and renamed, then the ledger line is appended: a
conversion cut short leaves at most a part that the next conversion writes again under
the same name. Needs pandas and pyarrow."""
import hashlib
import json
import os
import sys
import time
from urllib.parse import quote

from rangeprof import job, table

SCHEMA_VERSION = 1
MARKER = "_rangeprof_dataset.json"
LEDGER = "_rangeprof_sources.jsonl"
PARTITIONS = ("JobId", "Host")
# The columns of a part, as load() names them (the partition columns are in the paths),
# with their Parquet types; then one string column per config word (the key=value words of
# the range texts, listed in the part's metadata under rangeprof.config_columns).
STRING, INT, FLOAT = "string", "int64", "double"
COLUMNS = [(c, STRING if c in ("Annotation", "Kernel", "Metric", "Unit", "Launch", "Workload",
                               "RangeKernelNames", "Session", "GPU", "Grid", "Block",
                               "CacheControl", "ClockControl", "ThrottleReasons", "Time",
                               "File")
            else FLOAT if c in ("Value", "SMClock", "ComputeClock", "MemoryClock",
                                "Temperature")
            else INT)
           for c in table.ID_COLUMNS if c not in PARTITIONS]
_KEY_BYTES = 1 << 20
ROW_GROUP_MIN = 1024


class DatasetError(ValueError):
    """A directory that is not a rangeprof dataset, or one of a newer schema."""


def _pa():
    try:
        import pyarrow
        import pyarrow.dataset  # noqa: F401
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        raise ImportError("the Parquet dataset needs pyarrow: pip install pyarrow") from None
    return pyarrow


def is_dataset(path):
    """Whether path is a directory that holds a rangeprof dataset."""
    return isinstance(path, (str, os.PathLike)) and os.path.isfile(os.path.join(path, MARKER))


def _check_marker(root):
    try:
        with open(os.path.join(root, MARKER), encoding="utf-8") as f:
            marker = json.load(f)
        version = marker["schema"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise DatasetError(f"'{root}': {MARKER} cannot be read ({e})") from None
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise DatasetError(f"'{root}': dataset schema {version!r}; this reader knows "
                           f"{SCHEMA_VERSION} and older")
    return version


def source_key(path):
    """A source file's identity: its size and first and last MiB (sha256, hex). A file
    that grew has another key; a copy has the same."""
    h = hashlib.sha256()
    size = os.path.getsize(path)
    h.update(str(size).encode())
    with open(path, "rb") as f:
        h.update(f.read(_KEY_BYTES))
        if size > _KEY_BYTES:
            f.seek(max(_KEY_BYTES, size - _KEY_BYTES))
            h.update(f.read(_KEY_BYTES))
    return h.hexdigest(), size


def ledger(root):
    """The ledger's entries, one dict per converted source (oldest first)."""
    out = []
    try:
        with open(os.path.join(root, LEDGER), encoding="utf-8") as f:
            for line in f:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    continue  # a line cut short by a crash: that source is converted again
    except FileNotFoundError:
        pass
    return out


def _segment(value):
    """A hive path segment's value: '__HIVE_DEFAULT_PARTITION__' for none (read back as
    null by pyarrow and DuckDB), else URI-escaped as both decode it."""
    if value is None or (isinstance(value, float) and value != value):
        return "__HIVE_DEFAULT_PARTITION__"
    return quote(str(value), safe="") or "__HIVE_DEFAULT_PARTITION__"


def _strings(pa, col):
    """A column as a pyarrow string array (null for None and NaN), vectorised for
    categoricals (a dictionary cast) and numbers."""
    import numpy as np
    import pandas as pd
    if isinstance(col.dtype, pd.CategoricalDtype):
        codes = np.asarray(col.cat.codes, dtype=np.int32)
        cats = pa.array([None if v is None else str(v) for v in col.cat.categories], pa.string())
        arr = pa.DictionaryArray.from_arrays(pa.array(codes, mask=codes < 0), cats)
        return arr.cast(pa.string())
    values = col.to_numpy(dtype=object, na_value=None)
    return pa.array([None if v is None or (isinstance(v, float) and v != v) else str(v)
                     for v in values], pa.string())


def _arrow_table(pa, df, configs):
    """The part's table: COLUMNS typed, then the config columns as strings."""
    import numpy as np
    arrays, fields = [], []
    for name, kind in COLUMNS:
        col = df[name] if name in df.columns else None
        if col is None:
            arr = pa.nulls(len(df), pa.string() if kind == STRING else
                           pa.int64() if kind == INT else pa.float64())
        elif kind == STRING:
            arr = _strings(pa, col)
        elif kind == FLOAT:
            arr = pa.array(np.asarray(col, dtype=float), pa.float64(), from_pandas=True)
        else:
            numeric = np.asarray(_numeric(col), dtype=float)
            mask = ~np.isfinite(numeric)
            arr = pa.array(np.where(mask, 0, numeric).astype(np.int64), pa.int64(),
                           mask=mask)
        arrays.append(arr)
        fields.append(pa.field(name, arr.type))
    for name in configs:
        arrays.append(_strings(pa, df[name]))
        fields.append(pa.field(name, pa.string()))
    meta = {b"rangeprof.dataset_schema": str(SCHEMA_VERSION).encode(),
            b"rangeprof.config_columns": json.dumps(list(configs)).encode()}
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields, metadata=meta))


def _numeric(col):
    import pandas as pd
    return pd.to_numeric(col, errors="coerce")


def _write_part(pa, pq, t, path):
    """Writes a part's rows sorted by kernel (stably: a run's rows stay together and in
    order), a row group per kernel, or per run of kernels of fewer than ROW_GROUP_MIN rows:
    each row group's statistics then name its kernels, and a reader filtering on Kernel
    skips the others' row groups. read() puts the rows back in their files' order."""
    import pyarrow.compute as pc
    order = pc.sort_indices(t, sort_keys=[("Kernel", "ascending")])  # stable
    t = t.take(order)
    import numpy as np
    codes = t.column("Kernel").combine_chunks().dictionary_encode().indices
    codes = np.asarray(codes.fill_null(-1).to_numpy(zero_copy_only=False))
    bounds = list(np.flatnonzero(np.diff(codes) != 0) + 1) + [t.num_rows]
    with pq.ParquetWriter(path, t.schema, compression="zstd") as writer:
        start = 0
        for end in bounds:
            if end - start >= ROW_GROUP_MIN or end == t.num_rows:
                writer.write_table(t.slice(start, end - start), row_group_size=end - start)
                start = end


def _convert_one(root, path, key):
    """In a worker: one source's parts written, its ledger entry returned."""
    pa = _pa()
    import pyarrow.parquet as pq
    from rangeprof.frame import load
    df = load([path], report=sys.stderr)
    configs = list(df.attrs.get("config_columns", []))
    entry = dict(source=os.path.abspath(path), key=key[0], size=key[1], rows=len(df),
                 parts=[], config_columns=configs,
                 bad_lines=df.attrs.get("bad_line_count", 0),
                 converted=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    if not len(df):
        return entry
    groups = df.groupby([df["JobId"].astype(object).fillna("\0none"),
                         df["Host"].astype(object).fillna("\0none")], sort=False,
                        observed=True).indices
    for (jid, host), rows in groups.items():
        part = df.iloc[rows]
        rel = os.path.join(f"JobId={_segment(None if jid == chr(0) + 'none' else jid)}",
                           f"Host={_segment(None if host == chr(0) + 'none' else host)}",
                           f"part-{key[0][:20]}.parquet")
        target = os.path.join(root, rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        tmp = os.path.join(os.path.dirname(target), f".{os.path.basename(target)}.tmp")
        _write_part(pa, pq, _arrow_table(pa, part, configs), tmp)
        os.replace(tmp, target)
        entry["parts"].append(rel)
    return entry


def convert(sources, root, workers=None, report=sys.stderr):
    """Converts the JSON Lines files of sources (names, directories, globs) into the
    dataset at root (created when missing). Returns {"converted": [entries],
    "already": [paths], "changed": [paths]}. A source converted before (same key) is
    passed over; one converted before under the same path with another key (it grew) is
    said on report and passed over. workers: processes (default: the cores, at most 4)."""
    from rangeprof import records
    _pa()
    files = records.expand(sources)
    os.makedirs(root, exist_ok=True)
    marker = os.path.join(root, MARKER)
    if os.path.exists(marker):
        _check_marker(root)
    else:
        with open(marker, "w", encoding="utf-8") as f:
            json.dump({"format": "rangeprof-parquet", "schema": SCHEMA_VERSION,
                       "partitioning": list(PARTITIONS)}, f)
            f.write("\n")
    done = ledger(root)
    keys = {e.get("key") for e in done}
    by_path = {e.get("source"): e for e in done}
    todo, already, changed = [], [], []
    for path in files:
        key = source_key(path)
        if key[0] in keys:
            already.append(path)
        elif os.path.abspath(path) in by_path:
            changed.append(path)
            if report is not None:
                e = by_path[os.path.abspath(path)]
                print(f"rangeprof: warning: '{path}' changed since it was converted "
                      f"({e.get('size')} bytes then, {key[1]} now); not converted again: "
                      "its rows in the dataset are those of its first conversion",
                      file=report)
        else:
            keys.add(key[0])  # the same file twice on one command line: once
            todo.append((path, key))
    workers = workers or min(4, os.cpu_count() or 1)
    converted = []
    with open(os.path.join(root, LEDGER), "a", encoding="utf-8") as led:
        def note(entry):
            led.write(json.dumps(entry) + "\n")
            led.flush()
            converted.append(entry)
        if workers <= 1 or len(todo) <= 1:
            for path, key in todo:
                note(_convert_one(root, path, key))
        else:
            from concurrent.futures import ProcessPoolExecutor
            import multiprocessing
            ctx = multiprocessing.get_context("spawn")
            with ProcessPoolExecutor(workers, mp_context=ctx) as pool:
                for entry in pool.map(_convert_one, [root] * len(todo),
                                      [p for p, _ in todo], [k for _, k in todo],
                                      chunksize=1):
                    note(entry)
    return dict(converted=converted, already=already, changed=changed)


def _partitioning(pa):
    import pyarrow.dataset as ds
    # Strings, whatever the values look like: a job id "4242" is no number.
    return ds.partitioning(pa.schema([(p, pa.string()) for p in PARTITIONS]), flavor="hive")


def _parts(root):
    """The parts in the order of their sources' conversion (the ledger's), so that rows
    come in the order load() of the sources gives them."""
    parts = [os.path.join(root, p) for e in ledger(root) for p in e.get("parts", ())]
    return [p for p in dict.fromkeys(parts) if os.path.isfile(p)]


def arrow_dataset(root, dictionary_columns=()):
    """The dataset as a pyarrow.dataset.Dataset (the schema unified over its parts: config
    columns that some parts lack are null there). dictionary_columns: string columns to
    read as dictionaries (pandas categoricals without a string per row)."""
    pa = _pa()
    import pyarrow.dataset as ds
    _check_marker(root)
    parts = _parts(root)
    kw = dict(partitioning=_partitioning(pa), partition_base_dir=root)
    entries = ledger(root)
    if all("config_columns" in e for e in entries):
        # The parts' schema from the ledger: no part's footer read to learn it.
        configs = dict.fromkeys(c for e in entries for c in e["config_columns"])
        types = {STRING: pa.string(), INT: pa.int64(), FLOAT: pa.float64()}
        schema = pa.schema([(c, types[t]) for c, t in COLUMNS] +
                           [(c, pa.string()) for c in configs])
    else:
        d = ds.dataset(parts, format="parquet", **kw)
        schemas = [f.physical_schema for f in d.get_fragments()]
        if not schemas:
            return d
        schema = pa.unify_schemas(schemas)
    for p in PARTITIONS:
        schema = schema.append(pa.field(p, pa.string()))
    fmt = "parquet"
    if dictionary_columns:
        as_dict = [c for c in dictionary_columns if c in schema.names and c not in PARTITIONS
                   and schema.field(c).type == pa.string()]
        schema = pa.schema([pa.field(f.name, pa.dictionary(pa.int32(), pa.string()))
                            if f.name in as_dict else f for f in schema], schema.metadata)
        fmt = ds.ParquetFileFormat(read_options=ds.ParquetReadOptions(
            dictionary_columns=as_dict))
    return ds.dataset(parts, schema=schema, format=fmt, **kw)


def _conjunctions(filters):
    """filters as a list of lists of filters, any list all true: [(column, op, value),
    ...] is one list. ValueError naming the value and the form accepted for anything else,
    such as a string ('Kernel==x', which would be read a character at a time)."""
    from rangeprof.output import said
    seq = (list, tuple)
    if isinstance(filters, seq) and filters and isinstance(filters[0], tuple):
        filters = [filters]
    if not isinstance(filters, seq) or not all(
            isinstance(c, seq) and all(isinstance(i, tuple) for i in c) for c in filters):
        raise ValueError(f"filters={said(repr(filters), quoted=False)}: expected a list of (column, op, "
                         "value) tuples, such as [('Kernel', '==', 'vadd')], or a list of "
                         "such lists (any of them true)")
    return filters


def _expression(filters):
    """A pyarrow expression of filters: [(column, op, value), ...] all true, or a list of
    such lists, any of them true (pyarrow.parquet's form). ops: == != < <= > >= in, not in."""
    import pyarrow.dataset as ds
    if not filters:
        return None
    filters = _conjunctions(filters)
    ops = {"==": lambda f, v: f == v, "=": lambda f, v: f == v, "!=": lambda f, v: f != v,
           "<": lambda f, v: f < v, "<=": lambda f, v: f <= v, ">": lambda f, v: f > v,
           ">=": lambda f, v: f >= v, "in": lambda f, v: f.isin(list(v)),
           "not in": lambda f, v: ~f.isin(list(v))}
    anyof = None
    for conj in filters:
        allof = None
        for item in conj:
            if not (isinstance(item, tuple) and len(item) == 3 and item[1] in ops):
                raise ValueError(f"filters: {item!r}: expected (column, op, value) with op "
                                 f"one of {', '.join(ops)}")
            column, op, value = item
            e = ops[op](ds.field(column), value)
            allof = e if allof is None else allof & e
        anyof = allof if anyof is None else anyof | allof
    return anyof


def read(root, columns=None, filters=None):
    """load()'s DataFrame of the dataset's rows that filters keep (pushed down: parts of
    other jobs and hosts are not opened, row groups outside a value range not read):
    categoricals and config columns typed as load() types them, rows in the order of
    their sources' conversion. columns: as load's."""
    import pandas as pd
    from rangeprof.config import typed
    from rangeprof.frame import CATEGORICAL, _typed_column
    import numpy as np
    pa = _pa()
    # Read as strings (a dictionary read costs the row groups' statistics: slower), then
    # dictionary-encoded in arrow, so that pandas gets categoricals with no string per row.
    d = arrow_dataset(root)
    names = d.schema.names
    configs = [n for n in names if n not in table.ID_COLUMNS]
    order = ["Annotation"] + configs + [c for c in table.ID_COLUMNS if c != "Annotation"]
    if columns is not None:
        unknown = [c for c in columns if c not in order]
        if unknown:
            raise KeyError(f"rangeprof.load(columns=...): no column {', '.join(unknown)}; "
                           f"the columns are {', '.join(order)}")
        order = [c for c in order if c in columns]
    try:
        expr = _expression(filters)
        # File and Line put the rows back in their files' order (_write_part).
        read = list(dict.fromkeys([c for c in order if c in names] +
                                  [c for c in ("File", "Line") if c in names]))
        cols = _Gather(pa, d.schema, read, configs)
        for batch in d.scanner(columns=read, filter=expr).to_batches():
            cols.add(batch)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as e:
        raise ValueError(f"filters {filters!r}: {e}") from None
    data = {}
    perm = None
    files = None
    if "File" in read and "Line" in read and cols.rows:
        codes = files = cols.codes("File")
        first = pd.unique(codes)  # the files in the order their parts came
        rank = np.empty(max(int(codes.max()), 0) + 2, dtype=np.int64)
        rank[first] = np.arange(len(first))
        line_values = cols.numbers("Line")
        line = np.nan_to_num(line_values.astype(float), nan=-1.0)
        perm = np.lexsort((line, rank[codes]))  # stable: a run's rows keep their order
    for c in read:
        if c in cols.dicts and c in configs:
            values = cols.objects(c, typed)
            values = values if perm is None else values[perm]
            data[c] = _typed_column(pd.Series(values),
                                    {type(v) for v in cols.dicts[c]})
        elif c in cols.dicts:
            codes = files if c == "File" and files is not None else cols.codes(c)
            data[c] = pd.Categorical.from_codes(codes if perm is None else codes[perm],
                                                categories=list(cols.dicts[c]))
        elif c == "Line" and perm is not None:
            data[c] = line_values[perm]
        else:
            v = cols.numbers(c)
            data[c] = v if perm is None else v[perm]
        codes = v = values = None  # this column's unsorted copy, released
    df = pd.DataFrame(data, copy=False)
    for c in order:
        if c not in df.columns:
            df[c] = None
    df = df[order]
    for c in CATEGORICAL:
        if c in df.columns:
            df[c] = df[c].astype("category")
    for c in job.INTEGER_COLUMNS + ("Graph", "GraphNode", "RangeKernels"):
        if c in df.columns and df[c].isna().any():
            df[c] = df[c].astype("float64")
    df.attrs["bad_lines"] = []
    df.attrs["bad_line_count"] = 0
    df.attrs["config_columns"] = [c for c in configs if c in df.columns]
    return df


class _Gather:
    """The columns of scanned batches: strings as int32 codes into one dictionary per
    column (each batch's few distinct values mapped once: 20 M rows of strings never exist
    at once), numbers as numpy arrays (an integer batch with nulls as floats with NaN)."""

    def __init__(self, pa, schema, names, configs):
        self.pa = pa
        self.names = names
        self.dicts = {n: {} for n in names if schema.field(n).type == pa.string()}
        self.parts = {n: [] for n in names}
        self.rows = 0

    def add(self, batch):
        import numpy as np
        import pyarrow.compute as pc
        if not batch.num_rows:
            return
        self.rows += batch.num_rows
        for name in self.names:
            col = batch.column(name)
            if name in self.dicts:
                enc = pc.dictionary_encode(col)
                known = self.dicts[name]
                remap = np.array([known.setdefault(v, len(known)) if v is not None else -1
                                  for v in enc.dictionary.to_pylist()] + [-1], dtype=np.int32)
                idx = enc.indices.fill_null(len(remap) - 1).to_numpy(zero_copy_only=False)
                self.parts[name].append(remap[idx])
            else:
                self.parts[name].append(col.to_numpy(zero_copy_only=False))

    def _concat(self, name, dtype=None):
        import numpy as np
        parts = self.parts.pop(name, [])
        if not parts:
            return np.zeros(0, dtype=dtype or float)
        return np.concatenate(parts)

    def codes(self, name):
        """The whole column, once: its batches are released (20 M rows: no second copy)."""
        return self._concat(name, "int32")

    def numbers(self, name):
        return self._concat(name)

    def objects(self, name, convert):
        """The column's values as objects, each distinct text converted once."""
        import numpy as np
        values = np.empty(len(self.dicts[name]) + 1, dtype=object)
        values[:-1] = [convert(v) for v in self.dicts[name]]
        values[-1] = None
        self.dicts[name] = dict.fromkeys(values[:-1])  # their converted values, for types
        return values[self.codes(name)]


def filter_frame(df, filters):
    """The rows of a load() DataFrame that filters keep (as read()'s), for JSON Lines."""
    import numpy as np
    if not filters:
        return df
    filters = _conjunctions(filters)
    keep = np.zeros(len(df), dtype=bool)
    for conj in filters:
        rows = np.ones(len(df), dtype=bool)
        for item in conj:
            if not (isinstance(item, tuple) and len(item) == 3):
                raise ValueError(f"filters: {item!r}: expected (column, op, value)")
            column, op, value = item
            if column not in df.columns:
                raise KeyError(f"filters: no column {column!r}")
            col = df[column].astype(object)
            if op in ("==", "="):
                m = col == value
            elif op == "!=":
                m = col != value
            elif op == "in":
                m = col.isin(list(value))
            elif op == "not in":
                m = ~col.isin(list(value))
            elif op in ("<", "<=", ">", ">="):
                num = _numeric(df[column])
                m = {"<": num < value, "<=": num <= value, ">": num > value,
                     ">=": num >= value}[op]
            else:
                raise ValueError(f"filters: {item!r}: op should be one of ==, !=, <, <=, "
                                 ">, >=, in, not in")
            rows &= np.asarray(m.fillna(False), dtype=bool)
        keep |= rows
    out = df[keep].reset_index(drop=True)
    out.attrs.update(df.attrs)
    return out


def load_mixed(parts, report, columns, filters, load):
    """load() of datasets and JSON Lines files together: the datasets read with filters
    pushed down, the files read by load and filtered after, rows in the order given."""
    import pandas as pd
    frames = []
    files = []
    for p in parts + [None]:
        if p is not None and not is_dataset(p):
            files.append(p)
            continue
        if files:
            frames.append(filter_frame(load(files, report=report, columns=columns), filters))
            files = []
        if p is not None:
            frames.append(read(p, columns=columns, filters=filters))
    if len(frames) == 1:
        return frames[0]
    bad = [b for f in frames for b in f.attrs.get("bad_lines", [])]
    count = sum(f.attrs.get("bad_line_count", 0) for f in frames)
    configs = list(dict.fromkeys(c for f in frames for c in f.attrs.get("config_columns", [])))
    df = pd.concat([f.astype({c: object for c in f.columns if str(f[c].dtype) == "category"})
                    for f in frames], ignore_index=True)
    from rangeprof.frame import CATEGORICAL
    for c in CATEGORICAL:
        if c in df.columns:
            df[c] = df[c].astype("category")
    df.attrs.update(bad_lines=bad, bad_line_count=count, config_columns=configs)
    return df


def convert_main(args, out, prog):
    """rangeprof-report --to-parquet DIR FILES...: converts, then one line of what it did."""
    from rangeprof.output import brief, said
    if os.path.exists(args.to_parquet) and not os.path.isdir(args.to_parquet):
        print(f"{prog}: error: --to-parquet {said(args.to_parquet)}: not a directory",
              file=sys.stderr)
        return 2
    if (os.path.isdir(args.to_parquet) and os.listdir(args.to_parquet)
            and not is_dataset(args.to_parquet)):
        print(f"{prog}: error: --to-parquet {said(args.to_parquet)}: a directory that holds "
              f"files but no {MARKER}: give a new or empty directory, or a dataset",
              file=sys.stderr)
        return 2
    try:
        result = convert(args.files, args.to_parquet)
    except FileNotFoundError as e:
        print(f"{prog}: error: {brief(e)}", file=sys.stderr)
        return 2
    except DatasetError as e:
        print(f"{prog}: error: --to-parquet {brief(e)}", file=sys.stderr)
        return 2
    rows = sum(e["rows"] for e in result["converted"])
    parts = sum(len(e["parts"]) for e in result["converted"])
    print(f"{len(result['converted'])} file(s) converted ({rows} rows in {parts} part(s)), "
          f"{len(result['already'])} converted before, {len(result['changed'])} changed since "
          f"converted (passed over): {args.to_parquet}", file=out)
    return 0
