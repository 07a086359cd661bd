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

from rangeprof.parquet_schema import (  # noqa: F401 - the dataset's names for them
    COLUMNS, FLOAT, INT, LEDGER, MARKER, PARTITIONS, SCHEMA_VERSION, STRING, strings as _strings)

_KEY_BYTES = 1 << 20
ROW_GROUP_MIN = 1024
# Input per batch of files read by one load() and written as one part per job and host.
BATCH_BYTES = 256 << 20
# Below this, a partition's files are not split between workers (a part each: not worth it).
BATCH_MIN_BYTES = 32 << 20


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
    """The ledger's entries, one dict per converted source (oldest first). A ledger line
    is a batch's ({"batch", "parts", "sources": [entries]}) or, as schema 1's first
    conversions wrote it, one source's entry."""
    # The ledger is the dataset's own JSON Lines, not rangeprof's records: records.py's
    # reader and rules do not apply to it.
    out = []
    try:
        with open(os.path.join(root, LEDGER), encoding="utf-8") as f:
            for line in f:
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue  # a line cut short by a crash: that batch is converted again
                if isinstance(rec, dict) and isinstance(rec.get("sources"), list):
                    out.extend(e for e in rec["sources"] if isinstance(e, dict))
                elif isinstance(rec, dict):
                    out.append(rec)
    except FileNotFoundError:
        pass
    return out


def _segment(value):
    """A hive path segment's value: '__HIVE_DEFAULT_PARTITION__' for none (read back as
    null by pyarrow and DuckDB), else URI-escaped as both decode it."""
    if value is None or (isinstance(value, float) and value != value):
        return "__HIVE_DEFAULT_PARTITION__"
    return quote(str(value), safe="") or "__HIVE_DEFAULT_PARTITION__"


def _arrow_table(pa, df, configs):
    """The part's table: COLUMNS typed, then the config columns as strings (string
    columns as dictionary arrays where df has categoricals: _strings)."""
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
        fields.append(pa.field(name, arrays[-1].type))
    meta = {b"rangeprof.dataset_schema": str(SCHEMA_VERSION).encode(),
            b"rangeprof.config_columns": json.dumps(list(configs)).encode()}
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields, metadata=meta))


def _numeric(col):
    import pandas as pd
    return pd.to_numeric(col, errors="coerce")


# Columns written with Parquet's dictionary encoding: the strings, and the integers of
# few values a part (a rank, a device); not the measured values, clocks and times, whose
# dictionary would be as long as the column (the writer's try at one costs time).
_DICTIONARY_INTS = ("Runs", "Graph", "GraphNode", "RangeKernels", "Process", "Rank",
                    "LocalRank", "WorldSize", "Device", "SharedMemBytes", "Passes")


def _write_part(pa, pq, t, path):
    """Writes a part's rows sorted by kernel (stably: a run's rows stay together and in
    order), a row group per kernel, or per run of kernels of fewer than ROW_GROUP_MIN rows:
    each row group's statistics then name its kernels, and a reader filtering on Kernel
    skips the others' row groups. read() puts the rows back in their files' order.
    Dictionary arrays are written as Parquet's dictionary-encoded strings, and the Arrow
    schema is not stored: every reader sees the documented string columns."""
    import numpy as np
    import pyarrow.compute as pc
    kernel = t.column("Kernel").combine_chunks()
    if not pa.types.is_dictionary(kernel.type):
        kernel = kernel.dictionary_encode()
    # Each kernel's rank among the names (nulls last), then the rows in that order.
    names = kernel.dictionary
    rank = np.empty(len(names) + 1, dtype=np.int64)
    rank[np.asarray(pc.sort_indices(names))] = np.arange(len(names))
    rank[len(names)] = len(names)
    codes = rank[np.asarray(kernel.indices.fill_null(len(names)).to_numpy(
        zero_copy_only=False))]
    order = np.argsort(codes, kind="stable")
    t = t.take(pa.array(order))
    codes = codes[order]
    bounds = list(np.flatnonzero(np.diff(codes) != 0) + 1) + [t.num_rows]
    dictionary = [f.name for f in t.schema if f.name in _DICTIONARY_INTS or
                  pa.types.is_dictionary(f.type) or pa.types.is_string(f.type)]
    with pq.ParquetWriter(path, t.schema, compression="zstd", store_schema=False,
                          use_dictionary=dictionary) as writer:
        start = 0
        for end in bounds:
            if end - start >= ROW_GROUP_MIN or end == t.num_rows:
                writer.write_table(t.slice(start, end - start), row_group_size=end - start)
                start = end
        # The schema's metadata (the dataset schema's version, the config columns), which
        # store_schema=False would leave out, as the file's key-value metadata.
        writer.add_key_value_metadata(t.schema.metadata or {})


def _first_record(path):
    """(record or None, why not or None) of a file's first line, read in at most
    _KEY_BYTES: the session (job id, host) that groups files into batches, and, for a
    file that gave no row, the reason it is not converted (not JSON Lines)."""
    from rangeprof import records
    try:
        f, _ = records.open_lines(path)
    except OSError as e:
        return None, f"cannot be read ({e.strerror or e})"
    except records.Unreadable as e:
        return None, str(e)
    with f:
        head = f.read(_KEY_BYTES)
    if head.startswith(records.UTF8_BOM):
        head = head[len(records.UTF8_BOM):]
    if not head.strip():
        return None, "holds no record (empty)"
    end = head.find(b"\n")
    if end < 0 and len(head) >= _KEY_BYTES:
        return None, (f"not JSON Lines: no line end in its first {_KEY_BYTES >> 20} MiB "
                      "(a binary file?)")
    line = head if end < 0 else head[:end]
    rec, problem = records.parse_line(line.decode("utf-8", "replace"), end >= 0)
    if problem:
        return None, f"not JSON Lines: line 1: {problem}"
    return rec, None


def _group_of(path):
    """The (job id, host) of a file's first session, as a sort key that puts the files of
    one partition together ('' where the first line is no session)."""
    rec, _ = _first_record(path)
    if not isinstance(rec, dict) or rec.get("type") != "session":
        return ("", "")
    jid, host = job.columns(rec)["JobId"], rec.get("host")
    return (str(jid) if jid is not None else "", str(host) if host is not None else "")


def _batches(todo, workers):
    """The files to convert grouped into batches, each read by one load() and written as
    one part per job and host it holds: the files of one partition (by their first
    session line) together, in their given order, at most BATCH_BYTES of input a batch,
    and a partition split between workers only where each gets BATCH_MIN_BYTES."""
    groups = {}
    for path, key in todo:
        groups.setdefault(_group_of(path), []).append((path, key))
    total = sum(key[1] for _, key in todo)
    cap = max(BATCH_MIN_BYTES, min(BATCH_BYTES, -(-total // max(1, workers))))
    out = []
    for files in groups.values():
        batch, size = [], 0
        for path, key in files:
            if batch and size + key[1] > cap:
                out.append(batch)
                batch, size = [], 0
            batch.append((path, key))
            size += key[1]
        if batch:
            out.append(batch)
    return out


def _batch_id(batch):
    """A batch's part name: from its sources' keys, so that a batch converted again after
    a conversion cut short writes the same parts."""
    return hashlib.sha256("\n".join(key[0] for _, key in batch).encode()).hexdigest()[:20]


def _batch_rows(pa, paths, report, fast=True):
    """A batch's rows as the parts take them: (configs, rows per file {path: n}, bad lines
    shown per file {path: n}, partitions [(job id, host, row indexes or None for all,
    file codes of those rows, file names)], table(indexes) -> the part's Arrow table).
    From rangeprof.runcolumns where it takes the files (fast: not asked when False),
    else from load()'s DataFrame, which says the bad lines on report."""
    import numpy as np
    from rangeprof import runcolumns
    got = runcolumns.columns(pa, paths) if fast else None
    if got is not None:
        t, configs, (jc, jobs, hc, hosts, file_codes, files) = got
        bad = {}

        def table_of(idx):
            return t if idx is None else t.take(pa.array(idx))
    else:
        from rangeprof.frame import load
        df = load(paths, report=report)
        configs = list(df.attrs.get("config_columns", []))
        bad = {}
        for b in df.attrs.get("bad_lines", ()):
            for path in paths:
                if b.startswith(path + ":"):
                    bad[path] = bad.get(path, 0) + 1
                    break
        if not len(df):
            return configs, {}, bad, [], None
        # The partitions, from the categoricals' codes (-1: null): no string per row.
        jc = np.asarray(df["JobId"].cat.codes, dtype=np.int64)
        hc = np.asarray(df["Host"].cat.codes, dtype=np.int64)
        jobs, hosts = list(df["JobId"].cat.categories), list(df["Host"].cat.categories)
        files = list(df["File"].cat.categories)
        file_codes = np.asarray(df["File"].cat.codes)

        def table_of(idx):
            return _arrow_table(pa, df if idx is None else df.iloc[idx], configs)
    rows = dict(zip(files, np.bincount(file_codes, minlength=len(files)).tolist()))
    pairs, inverse = np.unique((jc + 1) * (len(hosts) + 1) + hc + 1, return_inverse=True)
    inverse = inverse.reshape(-1)
    partitions = []
    for g, pair in enumerate(pairs.tolist()):
        j, h = divmod(pair, len(hosts) + 1)
        idx = None if len(pairs) == 1 else np.flatnonzero(inverse == g)
        partitions.append((None if j == 0 else jobs[j - 1], None if h == 0 else hosts[h - 1],
                           idx, file_codes if idx is None else file_codes[idx], files))
    return configs, rows, bad, partitions, table_of


def _convert_batch(root, batch, report=True):
    """In a worker: one batch's parts written (one per job and host); returns its ledger
    line: {"batch", "parts", "sources": [an entry per source converted]} and the
    sources not converted, [(path, why)]. report: where load() says bad lines (True:
    this process's stderr; None: not said)."""
    pa = _pa()
    import numpy as np
    import pyarrow.parquet as pq
    paths = [p for p, _ in batch]
    configs, rows, bad, partitions, table_of = _batch_rows(
        pa, paths, sys.stderr if report is True else report,
        fast=os.environ.get("RANGEPROF_CONVERT_FAST", "1") != "0")
    bid = _batch_id(batch)
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    entries, refused, part_of = [], [], {}
    for j, h, idx, file_codes, files in partitions:
        rel = os.path.join(f"JobId={_segment(j)}", f"Host={_segment(h)}",
                           f"part-{bid}.parquet")
        target = os.path.join(root, rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        tmp = os.path.join(os.path.dirname(target), f".{os.path.basename(target)}.tmp")
        _write_part(pa, pq, table_of(idx), tmp)
        os.replace(tmp, target)
        for code in np.unique(file_codes).tolist():
            part_of.setdefault(files[code], []).append(rel)
    for path, key in batch:
        n = rows.get(path, 0)
        if not n:
            _, why = _first_record(path)
            if why is not None:
                refused.append((path, why))
                continue
        entries.append(dict(source=os.path.abspath(path), file=path, key=key[0],
                            size=key[1], rows=n, parts=part_of.get(path, []),
                            config_columns=configs, bad_lines_shown=bad.get(path, 0),
                            converted=now))
    return dict(batch=bid, parts=sorted(set(r for e in entries for r in e["parts"])),
                sources=entries), refused


def _remove_leftovers(root, listed):
    """Parts that no ledger line names: a conversion cut short between writing them and
    its ledger line. Removed, so that DuckDB's glob does not read their rows twice when
    their sources are converted again."""
    for dirpath, _, names in os.walk(root):
        for name in names:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            if (name.startswith("part-") and name.endswith(".parquet") and rel not in listed) \
                    or (name.startswith(".part-") and name.endswith(".parquet.tmp")):
                os.remove(path)


def convert(sources, root, workers=None, report="stderr"):
    """Converts the JSON Lines files of sources (names, directories, globs) into the
    dataset at root (created when missing). Returns {"converted": [entries],
    "already": [paths], "changed": [paths], "refused": [(path, why)]}. A source
    converted before (same key) is passed over; one converted before under the same path
    with another key (it grew) is said on report and passed over; one that gives no row
    and whose first line is no record (a binary file, UTF-16 text, unreadable) is not
    converted: said on report, in "refused", not in the ledger. The files are read in
    batches (_batches), one part per job and host each. workers: processes (default:
    the cores, at most 4); report: where warnings go ("stderr": sys.stderr at the
    call; None: not said). One conversion at a time into a dataset (a lock on its
    marker makes a second one wait)."""
    import fcntl
    from rangeprof import records
    _pa()
    if report == "stderr":
        report = sys.stderr  # looked up per call, so that redirections are honoured
    files = records.expand(sources)
    os.makedirs(root, exist_ok=True)
    marker = os.path.join(root, MARKER)
    if not os.path.exists(marker) or _check_marker(root) < SCHEMA_VERSION:
        # New, or of an older schema that this conversion's ledger lines would break
        # for its readers: marked as of this one (its parts stay as they are).
        tmp = os.path.join(root, f".{MARKER}.tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({"format": "rangeprof-parquet", "schema": SCHEMA_VERSION,
                       "partitioning": list(PARTITIONS)}, f)
            f.write("\n")
        os.replace(tmp, marker)
    with open(marker, "rb") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _convert_locked(files, root, workers, report)


def _convert_locked(files, root, workers, report):
    from rangeprof.output import said
    done = ledger(root)
    _remove_leftovers(root, {p for e in done for p in e.get("parts", ())})
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
    batches = _batches(todo, workers)
    converted, refused = [], []
    with open(os.path.join(root, LEDGER), "a", encoding="utf-8") as led:
        def note(result):
            line, no = result
            if line["sources"]:
                # One line per batch, written at once: its parts are its sources'
                # together, in the ledger or not at all.
                led.write(json.dumps(line) + "\n")
                led.flush()
            converted.extend(line["sources"])
            for path, why in no:
                refused.append((path, why))
                if report is not None:
                    print(f"rangeprof: error: {said(path)}: not converted: {why}", file=report)
        if workers <= 1 or len(batches) <= 1:
            for batch in batches:
                note(_convert_batch(root, batch, report))
        else:
            from concurrent.futures import ProcessPoolExecutor
            import multiprocessing
            ctx = multiprocessing.get_context("spawn")
            with ProcessPoolExecutor(min(workers, len(batches)), mp_context=ctx) as pool:
                say = None if report is None else True  # (a worker has its own stderr)
                for result in pool.map(_convert_batch, [root] * len(batches), batches,
                                       [say] * len(batches), chunksize=1):
                    note(result)
    return dict(converted=converted, already=already, changed=changed, refused=refused)


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
    # String columns read as Parquet stores them, dictionaries (codes into each row
    # group's few values: no string hashed per row), except those the filters name: a
    # dictionary column's row-group statistics are not used by pyarrow's filter, which
    # then reads every row group. Those are read as strings and dictionary-encoded here.
    filtered = {item[0] for conj in (_conjunctions(filters) if filters else ())
                for item in conj if item}
    d = arrow_dataset(root, dictionary_columns=[c for c in CATEGORICAL
                                                if c not in filtered])
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
        t = d.scanner(columns=read, filter=expr).to_table()
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as e:
        raise ValueError(f"filters {filters!r}: {e}") from None
    import pyarrow.compute as pc
    # Every string column one dictionary (pyarrow unifies the row groups' own): pandas
    # then gets categoricals, and no string per row exists.
    for i, field in enumerate(t.schema):
        if pa.types.is_string(field.type):
            t = t.set_column(i, field.name, pc.dictionary_encode(t.column(i)))
    t = t.unify_dictionaries()
    # Codes in the smallest integer type (as pandas makes a categorical's): Parquet gives
    # int32, which to_pandas keeps: 20 M rows of 18 columns are 1.4 GB in int32, 0.4 in int8.
    for i, field in enumerate(t.schema):
        if pa.types.is_dictionary(field.type) and t.column(i).num_chunks:
            n = len(t.column(i).chunk(0).dictionary)
            small = pa.int8() if n < 127 else pa.int16() if n < 32767 else None
            if small is not None and field.type.index_type.bit_width > small.bit_width:
                t = t.set_column(i, field.name, t.column(i).cast(
                    pa.dictionary(small, field.type.value_type)))

    def codes_of(name):
        """(codes with -1 for null, values) of a unified dictionary column."""
        col = t.column(name)
        if not col.num_chunks:
            return np.zeros(0, dtype=np.int32), []
        codes = np.concatenate([c.indices.fill_null(-1).to_numpy(zero_copy_only=False)
                                for c in col.chunks]).astype(np.int32, copy=False)
        return codes, col.chunk(0).dictionary.to_pylist()
    if "File" in read and "Line" in read and t.num_rows:
        codes, files = codes_of("File")
        # The files in the ledger's order (a part holds a batch's files, sorted by
        # kernel), then any it does not name in the order their rows came.
        known = {}
        for i, e in enumerate(ledger(root)):
            known.setdefault(e.get("file", e.get("source")), i)
        first = pd.unique(codes[codes >= 0])
        appear = np.zeros(len(files) + 1, dtype=np.int64)
        appear[first] = np.arange(len(first))
        rank = np.array([known.get(n, len(known) + appear[i]) for i, n in enumerate(files)]
                        + [len(known) + len(files) + 1], dtype=np.int64)
        line = np.nan_to_num(np.asarray(t.column("Line").to_numpy(), dtype=float), nan=-1.0)
        key = rank[codes]
        if len(key) > 1 and not np.all((key[1:] > key[:-1]) |
                                       ((key[1:] == key[:-1]) & (line[1:] >= line[:-1]))):
            t = t.take(pa.array(np.lexsort((line, key))))  # stable: a run's rows in order
        codes = key = line = None
    data = {}
    for c in configs:
        if c not in read:
            continue
        codes, values = codes_of(c)
        converted = np.empty(len(values) + 1, dtype=object)
        converted[:-1] = [typed(v) for v in values]
        converted[-1] = None
        data[c] = _typed_column(pd.Series(converted[codes]),
                                {type(v) for v in converted[:-1]})
        t = t.drop_columns([c])
    df = t.to_pandas(split_blocks=True, self_destruct=True)
    t = None
    for c, col in data.items():
        df[c] = col
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


def load_mixed(parts, report, columns, filters):
    """rangeprof.load of datasets and JSON Lines files together: the datasets read with
    filters pushed down, the files read by frame.load and filtered after, rows in the
    order given."""
    import pandas as pd
    from rangeprof.frame import load
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
    parts = len({p for e in result["converted"] for p in e["parts"]})
    refused = result["refused"]
    print(f"{len(result['converted'])} file(s) converted ({rows} rows in {parts} part(s)), "
          f"{len(result['already'])} converted before, {len(result['changed'])} changed since "
          f"converted (passed over)"
          + (f", {len(refused)} not converted (no record in them: said above)" if refused
             else "") + f": {args.to_parquet}", file=out)
    # 1: a file given was not converted (the others were); as a report's bad arguments
    # are 2, a conversion that did not take every file it was given is not 0.
    return 1 if refused else 0
