"""rangeprof/runcolumns.py - the Parquet dataset's columns of a batch of JSON Lines files
straight from pyarrow's parse of their run lines: no pandas DataFrame, no Python per
line. rangeprof.dataset uses it for the files that it can take (regular(), below) and
load() for the others, so that a part holds the same rows, columns, types, nulls and
dictionary values either way (python/tests/test_dataset_columns.py compares the two).

A file is taken when it is as rangeprof writes it, and nothing in it needs load()'s
line-by-line reader: one session line first (the Python reader accepts it), device lines
before the first run line, summary and blank lines, and run lines that pyarrow reads
with load()'s schema (frame._ArrowReader) and that its checks (_acceptable) accept; no
backslash, CR, NUL, 'Infinity' or 'NaN' anywhere, no line nested over 512 deep, valid
UTF-8; every run of one device, with every metric the file's session lists (no null, no
other metric, no unit key that is no metric), one unit per metric, no pid and no
_present member; config words that name no ID column and at most MAX_CONFIG_COLUMNS.
Whatever else (damaged lines, warnings, several sessions, gzip...) declines the whole
batch: columns() returns None and the batch goes through load(), which says its bad
lines. So the fast path never has a bad line to say, and never decides what is one.

Why these rules make the same rows as load(): load() reads such a file's run lines with
pyarrow and the same schema (its _metric_names finds no name that the session does not
list: pyarrow's 'infer' shows every key here, and an unknown one declines), each run
gives a row per metric in the schema's order, every run has the one ctx of the file's
session and devices, and each column is made from the same arrays by the same rules
(_arrow_table's conversions, the categoricals' category order)."""
from collections import OrderedDict

from rangeprof import job, records, table

_RUN_PREFIX = b'{"type":"run",'
_SUMMARY_PREFIX = b'{"type":"summary",'
# The lines of a file whose bytes hold one of these go to load() (see the docstring):
# escapes could hide a key from the byte checks, CR is a line end to pyarrow, NUL is
# load()'s mark for a line over records.MAX_LINE_BYTES, Infinity and NaN are not JSON.
_DECLINE_BYTES = (b"\\", b"\r", b"\0")
# ... and in a run line (the others are read by records.parse_line, as load() reads them;
# summaries are not read): a key spaced from its colon, which the byte checks of
# _parse_runs would not see. Looked for where a byte of theirs is (one memchr each).
_DECLINE_IN_RUNS = ((b"I", b"Infinity"), (b"N", b"NaN"), (b" ", b'" :'), (b"\t", b'"\t:'))
_MAX_FILE_BYTES = 1 << 30
_NO_SESSION = "?:?:?"


class _Decline(Exception):
    """This batch goes through load() (the reason, for tests and debugging)."""


def _reader(pa):
    """A stand-in for frame._ArrowReader's self, for its schema, checks and config keys."""
    from types import SimpleNamespace
    import pyarrow.compute as pc
    return SimpleNamespace(pa=pa, pc=pc, configs={})


def _session_of(line):
    rec, problem = records.parse_line(line.decode("utf-8"), True)
    if problem or rec.get("type") != "session":
        raise _Decline("line 1 is no session record the reader accepts")
    pid = rec.get("pid")
    if pid is not None and (type(pid) is not int or abs(pid) >= 1 << 53):
        raise _Decline("session pid not a small integer")
    cols = job.columns(rec)
    for name in job.INTEGER_COLUMNS:
        v = cols[name]
        if v is not None and (type(v) is not int or abs(v) >= 1 << 53):
            raise _Decline(f"job {name} not a small integer")
    for v in (rec.get("host"), cols["JobId"]):
        if v is not None and type(v) is not str:
            raise _Decline("host or job id not a string")
    metrics = [m for m in ((rec.get("options") or {}).get("metrics") or "").split(",") if m]
    return rec, metrics


def _file(pa, path, names, reader):
    """One file's (parsed run table, session record, devices {index: record}, line numbers
    of its runs as int64 numpy); names: the batch's metric names so far (extended here
    by the session's). _Decline where load() must read it."""
    import numpy as np
    import pyarrow.json as pj
    with open(path, "rb") as f:
        head = f.read(4)
        if head.startswith(records._GZIP) or head.startswith(records.UTF8_BOM) or any(
                head.startswith(mark) for mark, _ in records._UTF16):
            raise _Decline("gzip, BOM or UTF-16")
        data = head + f.read(_MAX_FILE_BYTES)
        if f.read(1):
            raise _Decline("over _MAX_FILE_BYTES")
    if not data.endswith(b"\n"):
        raise _Decline("last line without its newline")
    for b in _DECLINE_BYTES:
        if b in data:
            raise _Decline(f"holds {b!r}")
    if not data.isascii():
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            raise _Decline("not UTF-8") from None
    lines = data.split(b"\n")
    lines.pop()
    if max(map(len, lines)) > records.MAX_LINE_BYTES:
        raise _Decline("a line over MAX_LINE_BYTES")
    session, metrics = _session_of(lines[0])
    for m in metrics:
        names.setdefault(m, None)
    devices, first_run = {}, None
    special = [i for i, line in enumerate(lines) if not line.startswith(_RUN_PREFIX)]
    if not special or special[0] != 0:
        raise _Decline("line 1 is a run line")
    for i in special[1:]:
        line = lines[i]
        if line.startswith(_SUMMARY_PREFIX) or not line.strip():
            continue  # load() does not read them (a summary not last: the file ends in \n)
        rec, problem = records.parse_line(line.decode("utf-8"), True)
        if problem or rec.get("type") not in ("device", "warning", "error", "setup"):
            raise _Decline(f"line {i + 1}: a bad line, or a record that changes the "
                           "session")
        if rec["type"] != "device":
            continue  # (load() reads them and makes nothing of them)
        if first_run is None:
            first_run = next((k for k in range(1, len(lines))
                              if lines[k].startswith(_RUN_PREFIX)), len(lines))
        if i > first_run:
            raise _Decline("a device line after a run line")
        devices = dict(devices)
        devices[rec.get("index")] = rec
    numbers = np.ones(len(lines), dtype=bool)
    numbers[special] = False
    numbers = np.flatnonzero(numbers) + 1  # the run lines' numbers, from 1
    if not len(numbers):
        raise _Decline("no run line")
    runs = [lines[k - 1] for k in numbers.tolist()]
    lines = data = None
    from rangeprof.frame import _ArrowReader
    schema = _ArrowReader._schema(reader, list(names))
    t, tails, head, index = _parse_runs(pa, pj, runs, schema)
    if not _ArrowReader._acceptable(reader, t):
        raise _Decline("a run line load()'s checks refuse")
    import pyarrow.compute as pc
    metrics_col, units = t.column("metrics"), t.column("units")
    # The metrics of this file's rows: every one of its runs has each (pyarrow gives
    # null for a missing member and a null one alike: load() makes a row of a null,
    # not of a missing one). A metric of the batch's schema that this file's session
    # does not list and none of its run lines names is absent: no row, as in load().
    present = []
    for i in range(metrics_col.type.num_fields):
        name = metrics_col.type.field(i).name
        nulls = pc.struct_field(metrics_col, [i]).null_count
        if not nulls:
            present.append(i)
        elif nulls != t.num_rows or name in metrics or \
                b'"' + name.encode() + b'":' in tails:
            raise _Decline(f"metric {name!r} missing or null in a run")
        u = pc.struct_field(units, [i])  # (the units struct: the same names in order)
        if u.null_count not in (0, len(u)) or (len(u) and pc.count_distinct(u).as_py() > 1):
            raise _Decline("a metric of several units")
    if not present:
        raise _Decline("no metric")
    if t.column("pid").null_count != t.num_rows or \
            t.column("_present").null_count != t.num_rows:
        raise _Decline("a run line with pid or _present")
    return t, session, devices, numbers, present, head, index


def _read(pa, pj, buf, schema, what):
    """pyarrow's table of buf's lines with schema, members it lacks inferred; _Decline
    where it refuses them, or where 'infer' typed a member of schema otherwise (a metric,
    unit or nested member that load()'s schema lacks) or found one of others (a member
    of the launch after "run", or one of the run before it)."""
    try:
        t = pj.read_json(pa.py_buffer(buf), read_options=pj.ReadOptions(
            block_size=max(1 << 20, len(buf) + 1), use_threads=False),
            parse_options=pj.ParseOptions(explicit_schema=schema,
                                          unexpected_field_behavior="infer"))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError,
            pa.ArrowCapacityError, pa.ArrowIndexError, pa.ArrowKeyError, OverflowError,
            ValueError):
        raise _Decline(f"pyarrow refuses a run line's {what}") from None
    for i, (field, want) in enumerate(zip(t.schema, schema)):
        if field.name != want.name:
            raise _Decline(f"{what}: {field.name} where load()'s schema has {want.name}")
        if not field.type.equals(want.type):
            t = t.set_column(i, want, _without_extra_members(pa, t.column(i), want, what))
    for field in t.schema:
        if field.name in _RUN_SCHEMA_NAMES and field.name not in schema.names:
            raise _Decline(f"{what} holds {field.name}")
    return t


# Objects of the launch whose members 'infer' may add to (a range's counts of memsets and
# copies, which load()'s schema does not read and pyarrow's 'ignore' leaves out).
_EXTENDED = ("graph", "range")


def _without_extra_members(pa, col, want, what):
    """A struct column of _EXTENDED with the members 'infer' added left out (load() reads
    it with 'ignore'), or _Decline where it is not load()'s struct with more members."""
    if want.name not in _EXTENDED or not pa.types.is_struct(col.type) or \
            col.type.num_fields < want.type.num_fields or any(
                not col.type.field(k).equals(want.type.field(k))
                for k in range(want.type.num_fields)):
        raise _Decline(f"{what} member {want.name}: {col.type} where load() reads "
                       f"{want.type}")
    chunks = []
    for chunk in col.chunks:
        chunks.append(pa.StructArray.from_arrays(
            [chunk.field(k) for k in range(want.type.num_fields)],
            fields=list(want.type), mask=chunk.is_null()))
    return pa.chunked_array(chunks, want.type)


# The members of a run line after its launch's, as rangeprof writes them (records.py's
# _RunSplitter: the runs of a launch share the text before ',"run":').
_TAIL = ("run", "metrics", "units", "sm_clock_hz", "rated_sm_clock_hz", "temperature_c",
         "throttle_reasons", "time", "pid", "_present")
_RUN_SCHEMA_NAMES = frozenset()   # set at the first _parse_runs: load()'s schema's names


def _parse_runs(pa, pj, runs, schema):
    """The table of run lines (bytes, no newline) as pyarrow reads them whole with schema
    (load()'s), read in two pieces: each line's text before ',"run":' (its launch's
    members, the same for the runs of a launch: each distinct one read once) and the
    rest. The same values: a JSON object's members are converted one by one; the same
    refusals: a line without ',"run":' at the top level, a member on both sides (pyarrow
    refuses a member given twice), a value of another type. _Decline otherwise."""
    global _RUN_SCHEMA_NAMES
    import numpy as np
    _RUN_SCHEMA_NAMES = frozenset(schema.names)
    pos = [line.find(b',"run":') for line in runs]
    if -1 in pos:
        raise _Decline("a run line without ',\"run\":'")
    heads, index, prev, k = {}, np.empty(len(runs), dtype=np.int64), None, -1
    for i, (line, p) in enumerate(zip(runs, pos)):
        h = line[:p]
        if h != prev:
            prev = h
            k = heads.setdefault(h, len(heads))
        index[i] = k
    tails = b"{" + b"\n{".join([line[p + 1:] for line, p in zip(runs, pos)]) + b"\n"
    runs = pos = None
    head_schema = pa.schema([f for f in schema if f.name not in _TAIL])
    tail_schema = pa.schema([f for f in schema if f.name in _TAIL])
    nheads, heads = len(heads), b"}\n".join(heads) + b"}\n"
    from rangeprof.frame import _deep_lines
    for buf in (heads, tails):
        for screen, word in _DECLINE_IN_RUNS:
            if screen in buf and word in buf:
                raise _Decline(f"a run line holds {word!r}")
        if _deep_lines(buf):
            raise _Decline("a run line nested too deeply")
    head = _read(pa, pj, heads, head_schema, "launch members")
    tail = _read(pa, pj, tails, tail_schema, "run members")
    if head.num_rows != nheads or tail.num_rows != len(index):
        raise _Decline("pyarrow reads another count of records")
    take = pa.array(index)
    return pa.Table.from_arrays(
        [tail.column(f.name) if f.name in _TAIL else head.column(f.name).take(take)
         for f in schema], schema=schema), tails, head, index


def _dictionary(pa, codes, values):
    """_strings' dictionary array of codes (-1: null) into values."""
    import numpy as np
    codes = np.asarray(codes, dtype=np.int32)
    return pa.DictionaryArray.from_arrays(
        pa.array(codes, mask=codes < 0),
        pa.array([None if v is None else str(v) for v in values], pa.string()))


class _Categories:
    """A categorical's categories over the batch as frame._Columns.cat adds them."""

    def __init__(self):
        self.index, self.values = {}, []

    def add(self, values):
        """Codes of values (None: -1) into the categories, values added as they come."""
        import numpy as np
        out = np.empty(len(values), dtype=np.int64)
        for i, x in enumerate(values):
            if x is None:
                out[i] = -1
                continue
            j = self.index.get(x)
            if j is None:
                j = self.index[x] = len(self.values)
                self.values.append(x)
            out[i] = j
        return out


def _via_float(pa, col):
    """An integer column as _arrow_table writes it: through float64 (NaN for null), then
    int64 with a null where not finite."""
    import numpy as np
    if isinstance(col, np.ndarray):
        numeric = np.asarray(col, dtype=float)
    else:
        numeric = np.asarray(pa.compute.cast(col, pa.float64(), safe=False).to_numpy(
            zero_copy_only=False), dtype=float)
    mask = ~np.isfinite(numeric)
    return pa.array(np.where(mask, 0, numeric).astype(np.int64), pa.int64(), mask=mask)


def columns(pa, paths):
    """(table, configs, partitions) of the files' rows as dataset._arrow_table makes them
    of load(paths), or None where load() must read them (the module's docstring).
    partitions: (JobId codes, JobId values, Host codes, Host values, File codes) per row,
    codes -1 for null, as the DataFrame's categoricals give them."""
    try:
        return _columns(pa, paths)
    except _Decline:
        return None


def decline_reason(pa, paths):
    """Why columns() declines paths (None: it takes them); for tests."""
    try:
        _columns(pa, paths)
    except _Decline as e:
        return str(e)
    return None


def _columns(pa, paths):
    import json
    import numpy as np
    import pandas as pd
    from rangeprof.frame import _ArrowReader, _dims, _typed_column
    from rangeprof import parquet_schema
    import pyarrow.compute as pc
    reader = _reader(pa)
    names = OrderedDict()
    files = []
    for path in paths:
        files.append((path,) + _file(pa, path, names, reader))
    # Categoricals whose categories come in the order first seen over the runs.
    first_seen, first_seen_head = {}, {}
    per_run = []          # per file: {column: per-run array}
    cats = {c: _Categories() for c in ("Metric", "Unit", "Session", "Host", "JobId", "GPU",
                                       "File")}
    codes = {c: [] for c in cats}
    ints, floats, strings = {}, {}, {}
    key_codes, sessions_seen = [], []
    repeat = []
    heads_before = 0   # the batch's launch rows (each file's distinct heads) before a file's
    head_index = []    # per file: each run's launch row in the batch
    for path, t, session, devices, numbers, present, head, index in files:
        n = t.num_rows
        mtype = t.column("metrics").type
        m = len(present)
        # Rows: run-major, then the metrics in the schema's order (_long's lexsort). The
        # categories: every metric of the schema, with rows or not (as _long's).
        repeat.append(m)
        metric_codes = cats["Metric"].add([mtype.field(j).name
                                           for j in range(mtype.num_fields)])
        codes["Metric"].append(np.tile(metric_codes[present], n))
        unit_of = {t.column("units").type.field(i).name: i
                   for i in range(t.column("units").type.num_fields)}
        unit_values = []
        for j in range(mtype.num_fields):
            name = mtype.field(j).name
            if name in unit_of:
                u = pc.struct_field(t.column("units"), [unit_of[name]])
                unit_values.append(u[0].as_py() if u.null_count == 0 else "")
            else:
                unit_values.append("")
        unit_codes = cats["Unit"].add(unit_values)
        codes["Unit"].append(np.tile(unit_codes[present], n))
        sid = records._session_id(session)
        sessions_seen.append(sid)
        for c, v in (("Session", sid), ("Host", session.get("host")),
                     ("JobId", job.columns(session)["JobId"])):
            got = cats[c].add([v] + [_NO_SESSION if c == "Session" else None])
            codes[c].append(np.full(n * m, got[0], dtype=np.int64))
        dev = t.column("device")
        if dev.null_count or pc.count_distinct(dev).as_py() != 1:
            raise _Decline("runs of several devices, or of none")
        device_index = dev[0].as_py()
        rec = devices.get(device_index) or {}
        gpu = rec.get("name")
        if gpu is not None and type(gpu) is not str:
            raise _Decline("a device name not a string")
        codes["GPU"].append(np.full(n * m, cats["GPU"].add([gpu])[0], dtype=np.int64))
        mem = table._num(rec.get("rated_memory_clock_hz"))
        codes["File"].append(np.full(n * m, cats["File"].add([path])[0], dtype=np.int64))
        graph, rng = t.column("graph"), t.column("range")
        # The launch's strings, of each distinct launch text (head): the same per run as
        # of its run's full line, and first seen in the same order (heads are numbered
        # as their runs come).
        hgraph = head.column("graph")
        launch = pc.fill_null(pc.cast(head.column("launch"), pa.string()), "None")
        node = pc.fill_null(pc.cast(pc.struct_field(hgraph, "node"), pa.string()), "None")
        suffix = pc.if_else(pc.is_valid(hgraph), pc.binary_join_element_wise(".node", node, ""),
                            "")
        pid = session.get("pid")
        launches = {
            "Annotation": pc.fill_null(head.column("nvtx_path"), ""),
            "Kernel": head.column("kernel"),
            "Launch": pc.binary_join_element_wise(pa.scalar(sid), "#", launch, suffix, ""),
            "Workload": pc.fill_null(head.column("workload"), "kernel"),
            "RangeKernelNames": pc.binary_join(pc.struct_field(head.column("range"), "kernel_names"),
                                               table.RANGE_NAME_SEPARATOR),
            "Grid": pa.array(_dims(pa, pc, head.column("grid")), pa.string()),
            "Block": pa.array(_dims(pa, pc, head.column("block")), pa.string()),
            "CacheControl": head.column("cache_control"),
            "ClockControl": head.column("clock_control"),
        }
        for c, arr in launches.items():
            first_seen_head.setdefault(c, []).append(arr)
        runs = {
            "ThrottleReasons": pc.binary_join(t.column("throttle_reasons"), ","),
            "Time": t.column("time"),
        }
        for c, arr in runs.items():
            first_seen.setdefault(c, []).append(arr)
        head_index.append(index + heads_before)
        per_run.append(dict(
            Run=t.column("run"), Runs=t.column("runs"),
            Graph=pc.struct_field(graph, "id"), GraphNode=pc.struct_field(graph, "node"),
            RangeKernels=pc.struct_field(rng, "kernels"), Device=dev,
            SharedMemBytes=t.column("shared_mem_bytes"), Passes=t.column("passes"),
            SMClock=t.column("sm_clock_hz"), ComputeClock=t.column("rated_sm_clock_hz"),
            Temperature=t.column("temperature_c"),
            Process=np.full(n, np.nan if pid is None else float(pid)),
            MemoryClock=np.full(n, mem, dtype=float),
            Line=numbers,
            **{c: np.full(n, np.nan if job.columns(session)[c] is None
                          else float(job.columns(session)[c]))
               for c in job.INTEGER_COLUMNS}))
        # Values: run-major, metric-minor.
        value = np.stack([np.asarray(pc.cast(pc.struct_field(t.column("metrics"), [j]),
                                             pa.float64()).to_numpy(zero_copy_only=False),
                                     dtype=float) for j in present], axis=1).reshape(-1)
        floats.setdefault("Value", []).append(value)
        kc, keys = _ArrowReader._config_keys(reader, head)
        key_codes.append((kc[index], keys))
        heads_before += head.num_rows
    reps = np.concatenate([np.full(t.num_rows, m, dtype=np.int64)
                           for (_, t, _, _, _, _, _, _), m in zip(files, repeat)])
    total = int(reps.sum())

    def long(arr):
        """Per-run values to per-row (each run's metrics count)."""
        return np.repeat(arr, reps) if total != len(reps) else arr

    # Config columns (frame._ArrowReader._frame, then parquet_schema.strings of each).
    configs_map = reader.configs
    config_names = [c for c in OrderedDict.fromkeys(
        c for cfg in configs_map.values() for c in cfg) if c not in table.ID_COLUMNS]
    if any(c in table.ID_COLUMNS for cfg in configs_map.values() for c in cfg):
        raise _Decline("a config word names an ID column")
    if len(config_names) > table.MAX_CONFIG_COLUMNS:
        raise _Decline("more config words than MAX_CONFIG_COLUMNS")
    all_keys = list(configs_map)
    key_index = {k: i for i, k in enumerate(all_keys)}
    run_keys = np.concatenate([np.asarray([key_index[k] for k in keys], dtype=np.int64)[kc]
                               for kc, keys in key_codes])
    config_arrays = []
    for name in config_names:
        kinds = {type(cfg[name]) for cfg in configs_map.values() if name in cfg}
        per_key = pd.Series([configs_map[k].get(name) for k in all_keys], dtype=object)
        # Keys whose runs lack the word: None, as load()'s rows (every key has rows).
        typed_col = _typed_column(per_key, kinds)
        values = typed_col.to_numpy(dtype=object, na_value=None)
        strings_per_key = pa.array([None if v is None or (isinstance(v, float) and v != v)
                                    else str(v) for v in values], pa.string())
        config_arrays.append(strings_per_key.take(pa.array(long(run_keys))))
    arrays = {}
    for c, parts in first_seen.items():
        col = pa.chunked_array([c for p in parts for c in (
            p.chunks if isinstance(p, pa.ChunkedArray) else [p])], pa.string()).combine_chunks()
        d = pc.dictionary_encode(col)  # (int32 codes; its values strings: str() of each)
        if total != len(reps):
            idx = np.asarray(d.indices.fill_null(-1).to_numpy(zero_copy_only=False),
                             dtype=np.int32)
            d = pa.DictionaryArray.from_arrays(pa.array(long(idx), mask=long(idx) < 0),
                                               d.dictionary)
        arrays[c] = d
    run_heads = np.concatenate(head_index)
    for c, parts in first_seen_head.items():
        col = pa.chunked_array([c for p in parts for c in (
            p.chunks if isinstance(p, pa.ChunkedArray) else [p])], pa.string()).combine_chunks()
        d = pc.dictionary_encode(col)
        idx = np.asarray(d.indices.fill_null(-1).to_numpy(zero_copy_only=False),
                         dtype=np.int32)[run_heads]
        arrays[c] = pa.DictionaryArray.from_arrays(pa.array(long(idx), mask=long(idx) < 0),
                                                   d.dictionary)
    for c, cat in cats.items():
        arrays[c] = _dictionary(pa, np.concatenate(codes[c]), cat.values)
    for c in ("Run", "Runs", "Graph", "GraphNode", "RangeKernels", "Device", "SharedMemBytes",
              "Passes", "Process", "Line") + job.INTEGER_COLUMNS:
        parts = []
        for p in per_run:
            x = p[c]
            parts.append(np.asarray(x, dtype=float) if isinstance(x, np.ndarray) else
                         np.asarray(pc.cast(x, pa.float64(), safe=False).to_numpy(
                             zero_copy_only=False), dtype=float))
        arrays[c] = _via_float(pa, long(np.concatenate(parts)))
    for c in ("SMClock", "ComputeClock", "Temperature", "MemoryClock"):
        parts = [np.asarray(p[c], dtype=float) if isinstance(p[c], np.ndarray) else
                 np.asarray(pc.cast(p[c], pa.float64()).to_numpy(zero_copy_only=False),
                            dtype=float) for p in per_run]
        arrays[c] = pa.array(long(np.concatenate(parts)), pa.float64(), from_pandas=True)
    arrays["Value"] = pa.array(np.concatenate(floats["Value"]), pa.float64(), from_pandas=True)
    out, fields = [], []
    for name, _ in parquet_schema.COLUMNS:
        out.append(arrays[name])
        fields.append(pa.field(name, arrays[name].type))
    for name, arr in zip(config_names, config_arrays):
        out.append(arr)
        fields.append(pa.field(name, pa.string()))
    meta = {b"rangeprof.dataset_schema": str(parquet_schema.SCHEMA_VERSION).encode(),
            b"rangeprof.config_columns": json.dumps(config_names).encode()}
    t = pa.Table.from_arrays(out, schema=pa.schema(fields, metadata=meta))
    partitions = (np.concatenate(codes["JobId"]), cats["JobId"].values,
                  np.concatenate(codes["Host"]), cats["Host"].values,
                  np.concatenate(codes["File"]), cats["File"].values)
    return t, config_names, partitions
