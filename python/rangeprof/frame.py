"""rangeprof/frame.py - pandas views: load() gives Nsight Python's long-form DataFrame (one
row per run and metric, config columns from key=value words), summarize() its aggregate
columns with SPEC.md section 5 statistics. The only module that needs pandas; load() also
needs pyarrow, whose JSON reader parses the run lines (millions of them: a Python dict
per record would take ten times the memory and time).

How load() reads a file: each line that starts as rangeprof writes run records
('{"type":"run",') goes to pyarrow in batches, with an explicit schema made of
records.RUN_MEMBERS (every member records.py checks, in the type of its kind: records.py
says what a record is, not this module); every other line (sessions, devices, summaries,
hand-written records) is parsed and checked in Python (rangeprof/records.py), which also
gives the session and device each run belongs to. A batch that pyarrow refuses, or that
holds a value records.py would refuse and pyarrow's types let through (_fits: an infinite
number, a null kernel, a null in a list, -2**63), is read again line by line with
records.parse_line: its bad lines are reported as FILE:LINE and skipped, as every reader
reports them, the others go to pyarrow in the form records.py checked. Lines nested more deeply than
any record (over 512 brackets) never reach pyarrow, whose parser crashes on deep nesting.
So load() takes the run lines the report tools take, and gives the rows they would make.
Summary lines written as rangeprof writes them ('{"type":"summary",') are not parsed at
all (load() has no use for them; there is one per launch, and their parse would cost a
tenth of the time): a damaged one is reported by rangeprof-report, not by load(), except
the file's last line cut short (a process that died while writing it), which is."""
import re
import sys
from array import array
from collections import OrderedDict

try:
    import pandas as pd
except ImportError:  # a wheel installed with --no-deps: one line that says what to do
    raise ImportError("rangeprof.load and rangeprof.summarize need pandas: pip install "
                      "pandas") from None

from rangeprof import job, placement, records, stats, table
from rangeprof.config import config_from_nvtx

# Columns of few distinct values, given as pandas categoricals (a kernel name repeated
# on millions of rows is kept once).
CATEGORICAL = ("Annotation", "Kernel", "Metric", "Unit", "Launch", "Workload",
               "RangeKernelNames", "Session",
               "Host", "JobId", "GPU", "Grid", "Block", "CacheControl", "ClockControl",
               "ThrottleReasons", "Time", "File")
_RUN_PREFIX = b'{"type":"run",'
_SUMMARY_PREFIX = b'{"type":"summary",'
_MAX_BRACKETS = 512        # lines with more '[' and '{' go to the Python reader
# Every byte but the brackets and the newline (_deep_lines).
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[{\n")
_BATCH_BYTES = 16 << 20    # run lines per pyarrow call
_READ_BYTES = 1 << 24      # bytes per read of a file


def _pyarrow():
    try:
        import pyarrow
        import pyarrow.compute  # noqa: F401
        import pyarrow.json  # noqa: F401
    except ImportError:
        raise ImportError("rangeprof.load needs pyarrow (its JSON reader parses the run "
                          "records): pip install pyarrow") from None
    return pyarrow


_HOW_CONFIGS = "name the ones you need in load(columns=[...])"


def load(paths_or_globs, report="stderr", combine=None, derive=(), columns=None):
    """Long-form DataFrame of every run record in the JSON Lines files (names, directories, globs;
    many processes and sessions together): one row per run and metric, with the columns
    of rangeprof.table.ID_COLUMNS and a column per config word (key=value in the NVTX
    range texts). String columns of few distinct values are categoricals (CATEGORICAL).
    columns, when given, keeps only those columns (and reads only what they need).
    Bad lines are printed on report (default stderr; None: not printed) as
    'FILE:LINE: reason; line skipped' and listed in df.attrs['bad_lines'] (the first
    1000; df.attrs['bad_line_count'] counts them all); df.attrs['l2_bytes'] maps each GPU
    name to its L2 size (placement.l2_by_name, for summarize()). combine and derive are as in
    rangeprof.table.build, or as the report's options take them (combine='sum' or
    'metric=max,...', derive one 'name=expr' string or a list of them); with them the
    runs are read by the Python reader. A combine or derive it cannot use raises
    ValueError naming it, an unknown column KeyError. Needs pandas and pyarrow.
    rangeprof.load (rangeprof.sources) is this reader for JSON Lines files, and also reads
    Parquet datasets and takes filters; this module knows nothing of datasets."""
    pa = _pyarrow()
    from rangeprof.expr import parse_derivation
    if report == "stderr":
        report = sys.stderr  # looked up per call, so that redirections are honoured
    if isinstance(derive, str):  # one derivation, as --derive takes it
        derive = [derive]
    if isinstance(combine, str):  # 'sum', 'metric=max,...', as --combine takes it
        combine = table.parse_combine(combine)
    elif combine is True:
        combine = {}
    elif combine is False:
        combine = None
    derivations = [parse_derivation(d) for d in derive]
    if columns is not None:
        columns = [columns] if isinstance(columns, str) else list(columns)
        if not columns:
            raise ValueError("rangeprof.load(columns=[]): no column asked for; give at "
                             "least one, e.g. columns=['Annotation', 'Metric', 'Value'] "
                             "(None: all of them)")
    files = records.expand(paths_or_globs, notes=report)
    if combine is not None or derive:
        recs = records.read(files, report=report)
        samples = table.build(recs, derivations=derivations,
                              combine=combine, report=report)
        rows = table.long_rows(samples)
        configs = table.config_columns(rows)
        if columns is None:
            configs = table.capped_configs(configs, ", ".join(files), report, _HOW_CONFIGS)
        order = ["Annotation"] + configs + [c for c in table.ID_COLUMNS if c != "Annotation"]
        df = pd.DataFrame(rows, columns=order)
        for c in CATEGORICAL:
            df[c] = df[c].astype("category")
        for c in _INT_COLUMNS:  # as the columnar reader gives them: NaN, not None
            if df[c].isna().all():
                df[c] = df[c].astype("float64")
        bad, count = recs.bad_lines, recs.bad_count
        device_records = [rec for rec, _ in recs.devices]
    else:
        reader = _ArrowReader(pa, files, columns)
        df, configs = reader.frame()
        bad, count = reader.bad.bad_lines, reader.bad.bad_count
        device_records = [rec for devices in reader.ctx_devices for rec in devices.values()]
        if report is not None:
            reader.bad.report_bad(report)
            if reader.configs_left:
                table.capped_configs(list(reader.config_columns) + list(reader.configs_left),
                                     ", ".join(files), report, _HOW_CONFIGS)
    if not len(df) and report is not None:
        print(f"rangeprof: warning: no runs in {', '.join(files)}", file=report)
    if columns is not None:
        known = list(table.ID_COLUMNS) + list(getattr(reader, "all_configs", ()) if not
                                              (combine or derive) else configs)
        unknown = [c for c in columns if c not in known and c not in df.columns]
        if unknown:
            raise KeyError(f"rangeprof.load(columns=...): no column {', '.join(unknown)}; "
                           f"the columns are {', '.join(known)}")
        df = df[[c for c in columns if c in df.columns]]
        configs = [c for c in configs if c in columns]
    df.attrs["bad_lines"] = [str(b) for b in bad]
    df.attrs["bad_line_count"] = count
    df.attrs["config_columns"] = configs
    # summarize()'s placement reason needs each row's L2, which its GPU names.
    df.attrs["l2_bytes"] = placement.l2_by_name(device_records)
    return df


class _ArrowReader:
    """The run records of files as one long-form DataFrame (see the module's docstring)."""

    def __init__(self, pa, files, columns=None):
        self.pa, self.pc = pa, pa.compute
        # The columns to build (load's columns=); the others are not computed at all.
        wanted = set(columns) if columns is not None else None
        self.want = (lambda name: True) if wanted is None else wanted.__contains__
        self.columns = columns
        # Config names made columns (first seen first, table.MAX_CONFIG_COLUMNS of them
        # unless columns names them) and those left out.
        self.config_columns, self.configs_left = OrderedDict(), OrderedDict()
        self.files = files
        self.bad = records.Reader()
        # ctx: a session and the device records in force, one per change of either;
        # each run row carries the ctx it was read in.
        self.ctx_session, self.ctx_devices = [], []
        self.current_at, self.pid_ctx = array("q"), {}
        self.sessions = []        # (session id, pid, host)
        self.metric_names = OrderedDict()
        self.configs = {}         # config key -> config dict

    # -- reading ----------------------------------------------------------------------

    def frame(self):
        """Reads the files: this thread splits them into lines and reads what is not a
        run line; other threads have pyarrow parse the run lines and turn each batch
        into columns (pyarrow and numpy release the interpreter lock), so that both
        cores work."""
        from concurrent.futures import ThreadPoolExecutor
        import threading
        self._lock = threading.Lock()
        self._found = []        # metric names the worker found, for later schemas
        self._bad_worker = records.Reader()
        self.cols = _Columns()
        self._pending = []
        # Two threads parse (pyarrow's reader, no interpreter lock), one makes columns
        # of the batches in their order, and this one reads lines and the other records.
        with ThreadPoolExecutor(2) as parsing, ThreadPoolExecutor(1) as columns:
            self._parsing, self._columns = parsing, columns
            try:
                for path in self.files:
                    self._read_file(path)
            finally:
                for future in self._pending:
                    future.result()
        bad = self.bad.bad_lines + self._bad_worker.bad_lines
        order = {path: i for i, path in enumerate(self.files)}
        bad.sort(key=lambda b: (order.get(b.path, -1), b.line))
        self.bad.bad_lines = bad[:records.MAX_KEPT_BAD_LINES]
        self.bad.bad_count += self._bad_worker.bad_count
        return self._frame()

    def _submit(self, path, lines, numbers, ctxs):
        """Hands a batch of run lines to the parsing threads, at most three waiting, with
        what _metric_names found in their metrics objects: the metric names (pyarrow then
        reads those and ignores the members it is not asked for) and the keys of the
        objects that hold a null; or None where it cannot be sure of them (the batch is
        then read by the Python reader first)."""
        with self._lock:
            for name in self._found:
                self.metric_names.setdefault(name, None)
            self._found = []
            names = list(self.metric_names)
        found = _metric_names(lines, names)
        while len(self._pending) >= 3:
            self._pending.pop(0).result()
        parsed = self._parsing.submit(self._work, path, lines, numbers, ctxs, found)
        self._pending.append(self._columns.submit(self._columns_of, path, parsed))

    def _read_file(self, path):
        try:
            f, gzipped = records.open_lines(path)
        except OSError as e:
            self.bad._bad(path, 0, f"cannot be read ({e.strerror or e})")
            return
        except records.Unreadable as e:
            self.bad._bad(path, 0, str(e))
            return
        self.bad.files.append(path)
        # The session in force per writer (records.Sessions' rules): "current", the last
        # session line's, for records without a pid; "by_pid" for those with one.
        state = dict(current=dict(session=-1, skipping=False, devices={}, pid=None),
                     by_pid={})
        state["current"]["ctx"] = self._new_ctx(-1, {}, state)
        batch, numbers, ctxs = [], array("q"), array("q")
        size, base = 0, 0
        with f:
            blocks = _blocks(f)
            if gzipped:
                blocks = _gzip_blocks(self.bad, path, blocks, lambda: base)
            for block, complete in blocks:
                lines = block.split(b"\n")
                if complete:
                    lines.pop()  # after the block's last newline: the next block holds it
                # The lines pyarrow does not get: not run lines as rangeprof writes them,
                # lines with many brackets, the file's last line without its newline.
                # pyarrow reads Infinity and NaN, which are not JSON, in members it is not
                # asked for: such lines go to the Python reader, which refuses them.
                odd = b"Infinity" in block or b"NaN" in block
                deep = _deep_lines(block)
                special = [i for i, line in enumerate(lines)
                           if not line.startswith(_RUN_PREFIX) or i in deep or
                           (odd and (b"Infinity" in line or b"NaN" in line))]
                if not complete and lines and (not special or special[-1] != len(lines) - 1):
                    special.append(len(lines) - 1)
                start = 0
                for i in special + [len(lines)]:
                    if i > start and not state["current"]["skipping"]:
                        batch += lines[start:i]
                        numbers.extend(range(base + start + 1, base + i + 1))
                        ctxs.extend([len(self.ctx_session) - 1] * (i - start))
                    elif i > start:
                        # A skipped session's run lines: not read, but a bad one is said,
                        # as the Python reader says it.
                        for k in range(start, i):
                            self._special(path, base + k + 1, lines[k], state, False)
                    if i < len(lines):
                        last = not complete and i == len(lines) - 1
                        run = self._special(path, base + i + 1, lines[i], state, last)
                        if run is not None:
                            batch.append(run)
                            numbers.append(base + i + 1)
                            ctxs.append(len(self.ctx_session) - 1)
                    start = i + 1
                base += len(lines)
                size += len(block)
                if size >= _BATCH_BYTES and batch:
                    self._submit(path, batch, numbers, ctxs)
                    batch, numbers, ctxs, size = [], array("q"), array("q"), 0
        if batch:
            self._submit(path, batch, numbers, ctxs)

    def _special(self, path, number, line, state, last):
        """A line for the Python reader: updates the session state; returns a run record
        in the form pyarrow gets, or None."""
        if line.startswith(_SUMMARY_PREFIX) and not last:
            return None  # not read: load() has no use for summaries (see the docstring)
        if line == _OVERLONG:
            self.bad._bad(path, number, records.overlong())
            return None
        text = line.decode("utf-8", "replace")
        if text.isspace() or not text:
            return None
        rec, problem = records.parse_line(text, not last)
        if problem:
            self.bad._bad(path, number, problem)
            if rec is not None and rec.get("type") == "session":
                self._session_line(rec, state, skipping=True)
            return None
        kind = rec["type"]
        if kind == "session":
            self._session_line(rec, state, skipping=False)
            self._note_metrics(rec)
            return None
        pid = rec.get("pid")
        writer = state["by_pid"].get(pid) if type(pid) in (int, str) else None
        writer = writer or state["current"]
        if writer["skipping"]:
            return None
        if kind == "device":
            writer["devices"] = dict(writer["devices"])
            writer["devices"][rec.get("index")] = rec
            writer["ctx"] = self._new_ctx(writer["session"], writer["devices"], state,
                                          writer["pid"])
        elif kind == "run":
            return _canonical(rec)
        return None

    def _session_line(self, rec, state, skipping):
        """A session line: the state of its writer, which becomes the current one."""
        pid = rec.get("pid")
        if skipping:  # a session line refused: none of its members reaches a row
            self.sessions.append(("?:?:?", None, None, job.columns(None)))
        else:
            self.sessions.append((records._session_id(rec), pid, rec.get("host"),
                                  job.columns(rec)))
        keyed = type(pid) in (int, str)
        writer = dict(session=len(self.sessions) - 1, skipping=skipping, devices={},
                      pid=pid if keyed else None)
        state["current"] = writer
        if keyed:
            state["by_pid"][pid] = writer
        writer["ctx"] = self._new_ctx(writer["session"], writer["devices"], state,
                                      writer["pid"])

    def _new_ctx(self, session, devices, state, pid=None):
        """A new ctx (a session line or a device line), its index: the one of the runs
        that follow whose writer is pid's (or the current session's). current_at[i] is
        the current session's ctx when i was the last made, for runs without a pid;
        pid_ctx[pid] the ctxs of that writer, in order, for runs with one."""
        self.ctx_session.append(session)
        self.ctx_devices.append(devices)
        index = len(self.ctx_session) - 1
        if pid is not None:
            self.pid_ctx.setdefault(pid, []).append(index)
        current = state["current"].get("ctx", index)
        self.current_at.append(index if state["current"]["session"] == session and
                               state["current"]["devices"] is devices else current)
        return index

    def _note_metrics(self, session_rec):
        names = ((session_rec.get("options") or {}).get("metrics") or "").split(",")
        for name in names:
            if name:
                self.metric_names.setdefault(name, None)

    def _schema(self, names):
        """pyarrow's schema of run lines: every member records.RUN_MEMBERS describes, in
        the type of its kind (names: the metrics), and _canonical's _present."""
        pa = self.pa
        return pa.schema([("type", pa.string())]
                         + [(k, _arrow_type(pa, kind, names))
                            for k, kind in records.RUN_MEMBERS.items()]
                         + [("_present", pa.list_(pa.string()))])

    def _parse(self, lines, names):
        """pyarrow's table of run lines (names: every metric they hold), or None where it
        refuses them or the Python reader would refuse one of them."""
        pa, pj = self.pa, self.pa.json
        try:
            t = pj.read_json(pa.py_buffer(b"\n".join(lines) + b"\n"),
                             read_options=pj.ReadOptions(block_size=1 << 20),
                             parse_options=pj.ParseOptions(
                                 explicit_schema=self._schema(names),
                                 unexpected_field_behavior="ignore"))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError,
                pa.ArrowCapacityError, pa.ArrowIndexError, pa.ArrowKeyError,
                OverflowError, ValueError):
            return None
        if t.num_rows != len(lines):
            # Two records on one line (a lost newline; a CR between them, which pyarrow
            # takes for one): the Python reader says which line.
            return None
        return t if self._acceptable(t) else None

    def _acceptable(self, t):
        """Whether records.py takes every line pyarrow read: what pyarrow lets through and
        records.py refuses, member by member as records.RUN_MEMBERS describes them (a
        wrong type pyarrow refuses itself)."""
        for name in records.REQUIRED["run"]:
            if t.column(name).null_count:
                return False
        return all(_fits(self.pa, self.pc, t.column(name), kind)
                   for name, kind in records.RUN_MEMBERS.items())

    def _work(self, path, lines, numbers, ctxs, found):
        """In a parsing thread: (table, line numbers, ctxs, nulls) of a batch, or None."""
        names, nulls = found if found is not None else (None, {})
        t = self._parse(lines, names) if names is not None else None
        if t is None:
            # Line by line in Python: bad lines reported, the others in checked form.
            kept, kept_numbers, kept_ctxs = [], array("q"), array("q")
            names = OrderedDict.fromkeys(names or ())
            for line, number, ctx in zip(lines, numbers, ctxs):
                rec, problem = records.parse_line(line.decode("utf-8", "replace"), True)
                if problem:
                    with self._lock:  # two parsing threads
                        self._bad_worker._bad(path, number, problem)
                    continue
                if rec["type"] != "run":  # a duplicate "type" member: the last one counts
                    continue
                kept.append(_canonical(rec))
                kept_numbers.append(number)
                kept_ctxs.append(ctx)
                for name in rec["metrics"]:
                    names.setdefault(name, None)
            lines, numbers, ctxs, nulls = kept, kept_numbers, kept_ctxs, {}
            if not lines:
                return None
            t = self._parse(lines, list(names))
            if t is None:
                # What the Python reader accepted pyarrow should read (the fuzzer checks
                # it); where it does not, the lines it refuses are said, not a traceback.
                t, numbers, ctxs = self._line_by_line(path, lines, numbers, ctxs, list(names))
                if t is None:
                    return None
        metrics = t.column("metrics").type
        with self._lock:
            self._found += [metrics.field(i).name for i in range(metrics.num_fields)]
        return t, numbers, ctxs, nulls

    def _columns_of(self, path, parsed):
        """In the column thread, batch after batch in file order: the rows of a parsed
        batch into self.cols."""
        result = parsed.result()
        if result is not None:
            self._long(self.cols, path, *result)

    def _line_by_line(self, path, lines, numbers, ctxs, names):
        """pyarrow on each line alone: the table of those it reads, the others said as bad
        lines."""
        pa = self.pa
        kept, kept_numbers, kept_ctxs = [], array("q"), array("q")
        for line, number, ctx in zip(lines, numbers, ctxs):
            if self._parse([line], names) is None:
                with self._lock:
                    self._bad_worker._bad(path, number, "run record: pyarrow cannot read it "
                                          "(though the Python reader can: please report it)")
                continue
            kept.append(line)
            kept_numbers.append(number)
            kept_ctxs.append(ctx)
        if not kept:
            return None, kept_numbers, kept_ctxs
        return self._parse(kept, names), kept_numbers, kept_ctxs

    # -- the frame --------------------------------------------------------------------

    def _frame(self):
        import numpy as np
        cols = self.cols
        configs = [c for c in OrderedDict.fromkeys(
            c for cfg in self.configs.values() for c in cfg) if c not in table.ID_COLUMNS]
        self.all_configs = configs
        if self.columns is None:
            configs = [c for c in configs if c in self.config_columns]
        order = ["Annotation"] + configs + [c for c in table.ID_COLUMNS if c != "Annotation"]
        order = [c for c in order if self.want(c)]
        configs = [c for c in configs if self.want(c)]
        data = {}
        for c in order:
            data[c] = cols.column(c) if cols.rows else np.zeros(0, dtype=object)
            cols.drop(c)  # the batches' pieces of it: not kept beside the whole column
            if cols.rows > _RELEASE_ROWS:
                _release()
        df = pd.DataFrame(data, copy=False)
        for c in configs:
            # Their values are those of self.configs: their types are known from there.
            kinds = {type(cfg[c]) for cfg in self.configs.values() if c in cfg}
            df[c] = _typed_column(df[c], kinds)
        if self.want("Process"):
            df["Process"] = _typed_column(df["Process"],
                                          {type(x[1]) for x in self.sessions if x[1] is not None})
        return df, configs

    def _writers(self, t, last):
        """The ctx of each run of a batch, from the last ctx made before its line (last):
        the current session's for a run without a pid (current_at), the last ctx of its
        writer's before the line for a run with one (pid_ctx)."""
        import numpy as np
        # A copy (one C call, under the interpreter lock): a view of the array would
        # export its buffer while the reading thread appends to it at the next file's
        # start ("cannot resize an array that is exporting buffers").
        current_at = np.frombuffer(self.current_at[:int(last.max()) + 1], dtype=np.int64) \
            if len(last) else np.zeros(0, dtype=np.int64)
        ctx = current_at[last]
        if not self.pid_ctx or "pid" not in t.column_names:
            return ctx
        pids = t.column("pid")
        if pids.null_count == len(pids):
            return ctx
        pid = self.pc.fill_null(pids, -(1 << 63)).to_numpy(zero_copy_only=False)
        for p in np.unique(pid):
            history = self.pid_ctx.get(int(p))
            if history is None:
                continue
            history = np.array(history, dtype=np.int64)
            rows = np.nonzero(pid == p)[0]
            at = np.searchsorted(history, last[rows], side="right") - 1
            found = at >= 0
            ctx[rows[found]] = history[at[found]]
        return ctx

    def _long(self, cols, path, t, numbers, ctxs, nulls):
        """Adds one batch's long-form rows, run by run, each run's metrics in the order
        first seen. A run has a row for each member of its metrics object: one with a
        value, or one that is null where nulls ({row: keys}) or the _present member of a
        line written by _canonical names it (pyarrow gives both missing and null as
        null)."""
        import numpy as np
        pa, pc = self.pa, self.pc
        want = self.want
        n = t.num_rows
        ctx = self._writers(t, np.frombuffer(ctxs, dtype=np.int64))
        sess = np.array(self.ctx_session, dtype=np.int64)[ctx]  # -1: before any session
        sessions = self.sessions + [("?:?:?", None, None, job.columns(None))]
        # Long rows: (run row, metric) pairs present in the records, in that order.
        metrics, units = t.column("metrics"), t.column("units")
        unit_of = {units.type.field(i).name: i for i in range(units.type.num_fields)}
        listed = dict(nulls)
        given = t.column("_present")
        if given.null_count < len(given):
            for i in np.flatnonzero(pc.is_valid(given).to_numpy(zero_copy_only=False)):
                listed[int(i)] = given[int(i)].as_py()
        names, rows, position, values, unit_codes, unit_cats = [], [], [], [], [], []
        for j in range(metrics.type.num_fields):
            name = metrics.type.field(j).name
            v = pc.struct_field(metrics, [j])
            present = np.asarray(pc.is_valid(v).to_numpy(zero_copy_only=False), dtype=bool)
            for i, keys in listed.items():
                if name in keys:
                    present[i] = True
            if name in unit_of:
                u = pc.fill_null(pc.cast(pc.struct_field(units, [unit_of[name]]), pa.string()), "")
            else:
                u = pa.nulls(n, pa.string()).fill_null("")
            r = np.flatnonzero(present)
            names.append(name)
            rows.append(r)
            position.append(np.full(len(r), j, dtype=np.int32))
            values.append(np.asarray(pc.cast(v, pa.float64()).to_numpy(zero_copy_only=False),
                                     dtype=float)[r])
            codes, cats = _encode(pc, u)
            unit_codes.append(codes[r] + len(unit_cats))
            unit_cats += cats
        if not names:
            return
        rows = np.concatenate(rows)
        position = np.concatenate(position)
        order = np.lexsort((position, rows))
        rr = rows[order]
        long_n = len(rr)
        if not long_n:
            return
        cols.rows += long_n
        cols.cat("Metric", position[order], names)
        cols.num("Value", np.concatenate(values)[order])
        if want("Unit"):
            cols.cat("Unit", np.concatenate(unit_codes)[order], unit_cats)

        def cat_of(arr):
            codes, cats = _encode(pc, arr)
            cols_codes = codes[rr]
            return cols_codes, cats
        if want("Annotation"):
            cols.cat("Annotation", *cat_of(pc.fill_null(t.column("nvtx_path"), "")))
        if want("Kernel"):
            cols.cat("Kernel", *cat_of(t.column("kernel")))
        if want("Run"):
            cols.num("Run", _numbers(t.column("run"))[rr])
        if want("Runs"):
            cols.num("Runs", _numbers(t.column("runs"))[rr])
        graph = t.column("graph")
        launch = pc.fill_null(pc.cast(t.column("launch"), pa.string()), "None")
        node = pc.fill_null(pc.cast(pc.struct_field(graph, "node"), pa.string()), "None")
        suffix = pc.if_else(pc.is_valid(graph), pc.binary_join_element_wise(".node", node, ""), "")
        sid_codes = np.where(sess < 0, len(sessions) - 1, sess)
        sid = pa.array([x[0] for x in sessions], pa.string()).take(pa.array(sid_codes))
        if want("Launch"):
            cols.cat("Launch", *cat_of(pc.binary_join_element_wise(sid, "#", launch, suffix, "")))
        if want("Workload"):
            cols.cat("Workload", *cat_of(pc.fill_null(t.column("workload"), "kernel")))
        if want("Graph"):
            cols.num("Graph", _numbers(pc.struct_field(graph, "id"))[rr])
        if want("GraphNode"):
            cols.num("GraphNode", _numbers(pc.struct_field(graph, "node"))[rr])
        rng = t.column("range")
        if want("RangeKernels"):
            cols.num("RangeKernels", _numbers(pc.struct_field(rng, "kernels"))[rr])
        if want("RangeKernelNames"):
            cols.cat("RangeKernelNames", *cat_of(pc.binary_join(
                pc.struct_field(rng, "kernel_names"), table.RANGE_NAME_SEPARATOR)))
        if want("Session"):
            cols.cat("Session", sid_codes[rr], [x[0] for x in sessions])
        if want("Process"):
            cols.obj("Process", np.array([x[1] for x in sessions], dtype=object)[sid_codes][rr])
        if want("Host"):
            cols.cat("Host", sid_codes[rr], [x[2] for x in sessions])
        if want("JobId"):
            cols.cat("JobId", sid_codes[rr], [x[3]["JobId"] for x in sessions])
        for name in job.INTEGER_COLUMNS:
            if want(name):
                per_session = np.array([x[3][name] for x in sessions], dtype=float)
                cols.num(name, per_session[sid_codes][rr])
        device = _numbers(t.column("device"))
        gpu_codes, gpu_names, mem_clock = self._devices(ctx, device)
        if want("GPU"):
            cols.cat("GPU", gpu_codes[rr], gpu_names)
        if want("Device"):
            cols.num("Device", device[rr])
        if want("Grid"):
            cols.cat("Grid", *cat_of(_dims(pa, pc, t.column("grid"))))
        if want("Block"):
            cols.cat("Block", *cat_of(_dims(pa, pc, t.column("block"))))
        if want("SharedMemBytes"):
            cols.num("SharedMemBytes", _numbers(t.column("shared_mem_bytes"))[rr])
        if want("Passes"):
            cols.num("Passes", _numbers(t.column("passes"))[rr])
        if want("CacheControl"):
            cols.cat("CacheControl", *cat_of(t.column("cache_control")))
        if want("ClockControl"):
            cols.cat("ClockControl", *cat_of(t.column("clock_control")))
        if want("SMClock"):
            cols.num("SMClock", _numbers(t.column("sm_clock_hz"))[rr])
        if want("ComputeClock"):
            cols.num("ComputeClock", _numbers(t.column("rated_sm_clock_hz"))[rr])
        if want("MemoryClock"):
            cols.num("MemoryClock", mem_clock[rr])
        if want("Temperature"):
            cols.num("Temperature", _numbers(t.column("temperature_c"))[rr])
        if want("ThrottleReasons"):
            cols.cat("ThrottleReasons", *cat_of(pc.binary_join(t.column("throttle_reasons"), ",")))
        if want("Time"):
            cols.cat("Time", *cat_of(t.column("time")))
        if want("File"):
            cols.cat("File", np.zeros(long_n, dtype=np.int64), [path])
        if want("Line"):
            cols.num("Line", np.frombuffer(numbers, dtype=np.int64)[rr])
        key_codes, keys = self._config_keys(t)
        for name in OrderedDict.fromkeys(c for k in keys for c in self.configs[k]):
            if not want(name):
                continue
            if self.columns is None and name not in table.ID_COLUMNS and \
                    name not in self.config_columns:
                if len(self.config_columns) >= table.MAX_CONFIG_COLUMNS:
                    self.configs_left[name] = None
                    continue
                self.config_columns[name] = None
            per_key = np.empty(len(keys), dtype=object)
            per_key[:] = [self.configs[k].get(name, _MISSING) for k in keys]
            values = per_key[key_codes[rr]]
            if name in ("Metric", "Value", "Unit"):
                continue  # long_rows sets these after the config words
            if name in table.ID_COLUMNS:
                # A config word that names a column replaces that column's value, as in
                # table.long_rows; the column stays of its kind where the word is absent.
                cols.override(name, values)
            else:
                cols.obj(name, values)
        cols.end_batch()

    def _devices(self, ctx, device):
        """(GPU codes, names, rated memory clock) per run from its ctx and device index."""
        import numpy as np
        # A run without a device member looks up None, as records.Sessions does (not -1,
        # a device index); one beyond what a float column holds exactly, no device.
        absent, beyond = _INT64_MIN, _INT64_MIN + 1
        if device.dtype.kind == "f":
            exact = np.abs(device) < 2.0 ** 53   # (False for NaN)
            dev = np.where(exact, device, 0).astype(np.int64)
            dev[~exact] = beyond
            dev[np.isnan(device)] = absent
        else:
            dev = device.astype(np.int64)
        pairs = np.stack([ctx, dev], axis=1)
        unique, inverse = np.unique(pairs, axis=0, return_inverse=True)
        names, clocks = [], []
        for c, d in unique.tolist():
            rec = {} if d == beyond else self.ctx_devices[c].get(None if d == absent else d) or {}
            names.append(rec.get("name"))
            clocks.append(table._num(rec.get("rated_memory_clock_hz")))
        inverse = inverse.reshape(-1)
        return inverse, names, np.array(clocks, dtype=float)[inverse]

    def _config_keys(self, t):
        """(code per run, keys): a key per distinct set of texts its config comes from
        (as records._ConfigCache), each parsed once into self.configs."""
        import json
        import numpy as np
        pa, pc = self.pa, self.pc
        nvtx = t.column("nvtx").combine_chunks()
        path = pc.fill_null(t.column("nvtx_path"), "").combine_chunks()
        flat = pc.list_flatten(nvtx)
        texts = (pc.fill_null(pc.struct_field(flat, "text"), "") if len(flat)
                 else pa.array([], pa.string()))
        count = pc.fill_null(pc.list_value_length(nvtx), 0)
        # Texts or a path holding a separator: their keys are made in Python.
        odd = pc.any(pc.match_substring_regex(path, "[\x1e\x1f]")).as_py() or (
            len(texts) and pc.any(pc.match_substring_regex(texts, "[\x1e\x1f]")).as_py())
        if odd:  # texts that hold the separators: keys made in Python
            key = pa.array([json.dumps([[r.get("text") or "" for r in (x or []) if r], p])
                            for x, p in zip(nvtx.to_pylist(), path.to_pylist())], pa.string())
        else:
            lengths = count.to_numpy(zero_copy_only=False)
            offsets = pa.array(np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32))
            joined = pc.binary_join(pa.ListArray.from_arrays(offsets, texts), "\x1f")
            key = pc.binary_join_element_wise(path, pc.cast(count, pa.string()),
                                              pc.fill_null(joined, ""), "\x1e")
        codes, keys = _encode(pc, key)
        for k in keys:
            if k in self.configs:
                continue
            if odd:
                texts_list, p = json.loads(k)
            else:
                p, c, joined_texts = k.split("\x1e")
                texts_list = joined_texts.split("\x1f") if int(c) else []
            self.configs[k] = config_from_nvtx([{"text": x} for x in texts_list], p)
        return codes, keys


_MISSING = None


class _Columns:
    """The long-form columns, batch by batch: numbers, categoricals and object columns
    (config values). A categorical's codes are turned into codes of its one list of
    categories as each batch comes (the batches are the whole frame before it is made:
    one byte a row and column where the categories are few, not eight), in the smallest
    integer type that holds them."""

    def __init__(self):
        self.rows = 0
        self.batches = []   # rows per batch
        self.nums, self.cats, self.objs, self.overrides = {}, {}, {}, {}
        self.categories = {}   # name -> ({value: code}, [values])
        self._batch_rows = 0

    def num(self, name, values):
        self._batch_rows = len(values)
        self.nums.setdefault(name, []).append((len(self.batches), values))

    def cat(self, name, codes, categories):
        """codes (-1: null) into this batch's categories (None: null)."""
        import numpy as np
        index, values = self.categories.setdefault(name, ({}, []))
        remap = np.empty(len(categories) + 1, dtype=np.int64)
        for i, x in enumerate(categories):
            if x is None:
                remap[i] = -1
            else:
                j = index.get(x)
                if j is None:
                    j = index[x] = len(values)
                    values.append(x)
                remap[i] = j
        remap[len(categories)] = -1  # code -1 (the last entry): null
        remap = remap.astype(_code_type(len(values)))
        self.cats.setdefault(name, []).append((len(self.batches), remap[codes]))

    def obj(self, name, values):
        self.objs.setdefault(name, []).append((len(self.batches), values))

    def override(self, name, values):
        self.overrides.setdefault(name, []).append((len(self.batches), values))

    def end_batch(self):
        self.batches.append(self._batch_rows)

    def drop(self, name):
        for kind in (self.nums, self.cats, self.objs, self.overrides):
            kind.pop(name, None)
        self.categories.pop(name, None)

    def column(self, name):
        import numpy as np
        bounds = np.concatenate([[0], np.cumsum(self.batches)]).astype(np.int64)
        total = int(bounds[-1])
        if name in self.nums:
            col = np.concatenate([v for _, v in self.nums[name]])
            if name in _INT_COLUMNS and col.dtype == float and not np.isnan(col).any():
                col = col.astype(np.int64)
        elif name in self.cats:
            categories = self.categories[name][1]
            parts = self.cats[name]
            if len(parts) == len(self.batches):  # every batch has it: no gap to fill
                codes = np.concatenate([c for _, c in parts]).astype(
                    _code_type(len(categories)), copy=False)
            else:
                codes = np.full(total, -1, dtype=_code_type(len(categories)))
                for b, c in parts:
                    codes[bounds[b]:bounds[b] + len(c)] = c
            col = pd.Categorical.from_codes(codes, categories=categories)
        else:
            col = np.empty(total, dtype=object)
            col[:] = None
            for b, v in self.objs.get(name, []):
                col[bounds[b]:bounds[b] + len(v)] = v
        if name in self.overrides:
            col = np.asarray(col, dtype=object).copy()
            for b, v in self.overrides[name]:
                part = col[bounds[b]:bounds[b] + len(v)]
                given = np.array([x is not _MISSING for x in v], dtype=bool)
                part[given] = v[given]
            if name not in self.cats:
                col = _typed_column(pd.Series(col)).to_numpy()
        return col


def _code_type(n):
    """The smallest integer type of codes into n categories (and -1), as pandas makes
    them."""
    import numpy as np
    for t in (np.int8, np.int16, np.int32):
        if n < np.iinfo(t).max:
            return t
    return np.int64


def _release():
    """Gives the memory freed so far back to the system (glibc's malloc keeps freed
    blocks for reuse otherwise: the batches' pieces of the columns made so far would
    still count in the process's memory beside the frame)."""
    global _TRIM
    if _TRIM is None:
        try:
            import ctypes
            _TRIM = ctypes.CDLL("libc.so.6").malloc_trim
        except (OSError, AttributeError):
            _TRIM = False
    if _TRIM:
        _TRIM(0)


_TRIM = None
# Frames of fewer rows free too little for a malloc_trim (a walk of the heap) to be worth
# it at each column: rangeprof.dataset loads thousands of small files.
_RELEASE_ROWS = 1 << 20


# Integer columns: int64 where every run has them, float64 with NaN otherwise.
_INT_COLUMNS = ("Run", "Runs", "Graph", "GraphNode", "RangeKernels", "Device",
                "SharedMemBytes", "Passes", "Line") + job.INTEGER_COLUMNS


def _encode(pc, arr):
    """(codes, categories) of a string array: numpy codes (-1 for null) into the list of
    its distinct values."""
    import numpy as np
    d = pc.dictionary_encode(arr)
    if hasattr(d, "combine_chunks"):
        d = d.combine_chunks()
    codes = np.asarray(pc.fill_null(d.indices, -1).to_numpy(zero_copy_only=False),
                       dtype=np.int64)
    return codes, d.dictionary.to_pylist()


def _numbers(col):
    """A numeric column as float64 (NaN for null), or int64 where it is of integers
    without a null."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    if len(col) == 0:
        return np.zeros(0)
    if pa.types.is_integer(col.type) and col.null_count == 0:
        # int64 as it is: a count above 2**53 ('runs': 9007199254740993) has no float
        # (pyarrow's checked cast refused it: the fuzzer's finding at d9bfb58)
        return np.asarray(col.to_numpy(zero_copy_only=False), dtype=np.int64)
    return np.asarray(pc.cast(col, pa.float64(), safe=False).to_numpy(zero_copy_only=False),
                      dtype=float)


# What _blocks puts in place of a line over records.MAX_LINE_BYTES (no line holds NUL
# bytes that is a record).
_OVERLONG = b"\0overlong"


def _gzip_blocks(bad, path, blocks, lines_so_far):
    """_blocks of a gzip file; where its data is damaged or cut short, what was read is
    kept and one bad line says where it ended (as records._gzip_errors)."""
    import gzip
    import zlib
    try:
        yield from blocks
    except (OSError, EOFError, zlib.error, gzip.BadGzipFile) as e:
        bad._bad(path, lines_so_far() + 1, f"gzip data ends here ({e}); the rest is not read")


def _deep_lines(block):
    """The indexes of the block's lines that hold more than _MAX_BRACKETS '[' and '{'
    (the block's newlines and brackets alone, a bytes a tenth of its size: one pass in C
    where a count per line took a fifth of load()'s time)."""
    brackets = block.translate(None, _NOT_BRACKETS)
    if len(brackets) - brackets.count(b"\n") <= _MAX_BRACKETS:
        return ()
    per_line = brackets.split(b"\n")
    if max(map(len, per_line)) <= _MAX_BRACKETS:
        return ()
    return {i for i, b in enumerate(per_line) if len(b) > _MAX_BRACKETS}


def _blocks(f):
    """(block, complete) of the file: blocks of whole lines (complete: ending with a
    newline; only the file's last block may not), where a complete block's bytes after
    its last newline are to be ignored: the start of a line that the next block holds
    whole (so that a block is the bytes read, not a copy of them cut at the newline:
    each copy of 16 MB cost a few thousand page faults, a tenth of load()'s time). A
    line over records.MAX_LINE_BYTES (input without newlines) is passed over, _OVERLONG
    in its place, in bounded memory."""
    carry, carried, overlong, first = [], 0, False, True
    while True:
        block = f.read(_READ_BYTES)
        if not block:
            break
        if first:
            first = False
            if block.startswith(records.UTF8_BOM):  # (as records._lines)
                block = block[len(records.UTF8_BOM):]
        cut = block.rfind(b"\n") + 1
        if not cut:
            carried += len(block)  # the blocks kept in a list: joined once
            if carried > records.MAX_LINE_BYTES:
                carry, overlong = [], True
            elif not overlong:
                carry.append(block)
            continue
        if carry or overlong:
            head = block.find(b"\n") + 1
            if overlong or carried + head > records.MAX_LINE_BYTES:
                yield _OVERLONG + b"\n" + block[head:], True
            else:
                carry.append(block)
                yield b"".join(carry), True
        else:
            yield block, True
        rest = block[cut:]
        carry, carried, overlong = ([rest] if rest else []), len(rest), False
    if overlong or carried > records.MAX_LINE_BYTES:
        yield _OVERLONG, False
    elif carry:
        yield b"".join(carry), False


def _arrow_type(pa, kind, names):
    """The pyarrow type of a member of a kind of records.py's (names: the metrics)."""
    if kind == records.STRING:
        return pa.string()
    if kind == records.INTEGER:
        return pa.int64()
    if kind == records.NUMBER:
        return pa.float64()
    if kind == records.METRICS:
        return pa.struct([(m, pa.float64()) for m in names])
    if kind == records.UNITS:
        return pa.struct([(m, pa.string()) for m in names])
    if type(kind) is list:
        return pa.list_(_arrow_type(pa, kind[0], names))
    if type(kind) is dict:
        return pa.struct([(k, _arrow_type(pa, v, names)) for k, v in kind.items()])
    raise TypeError(f"rangeprof.frame: no pyarrow type for records.py's kind {kind!r}")


# records.py's integers lie strictly within int64's range (as the collector writes them);
# pyarrow's int64 also holds its least value.
_INT64_MIN = -(1 << 63)


def _fits(pa, pc, col, kind):
    """Whether each value of a column pyarrow read is one records.py takes for a member of
    that kind."""
    if col.null_count == len(col):
        return True
    if kind == records.STRING:
        return True
    if kind == records.INTEGER:
        return pc.min(col).as_py() != _INT64_MIN
    if kind == records.NUMBER:
        # (all() of nothing but nulls is null, not False)
        return not pa.types.is_floating(col.type) or \
            pc.all(pc.is_finite(col)).as_py() is not False
    if kind in (records.METRICS, records.UNITS):
        for i in range(col.type.num_fields):
            field = col.type.field(i)
            if kind == records.UNITS:
                if not (pa.types.is_string(field.type) or pa.types.is_null(field.type)):
                    return False
            elif not (pa.types.is_floating(field.type) or pa.types.is_integer(field.type)
                      or pa.types.is_null(field.type)) or \
                    not _fits(pa, pc, pc.struct_field(col, [i]), records.NUMBER):
                return False
        return True
    if type(kind) is list:
        # A null in a list is no value of its kind.
        flat = pc.list_flatten(col)
        return not flat.null_count and _fits(pa, pc, flat, kind[0])
    if type(kind) is dict:
        return all(_fits(pa, pc, pc.struct_field(col, name), k) for name, k in kind.items())
    raise TypeError(f"rangeprof.frame: no check of records.py's kind {kind!r}")


def _canonical(rec):
    """A run record the Python reader accepted, as one JSON line (no newline) that
    pyarrow reads with the schema (members it does not read left out)."""
    import json
    keep = {k: rec[k] for k in _CANONICAL if k in rec}
    keep["_present"] = list(rec["metrics"])  # a null metric has a row, a missing one not
    return json.dumps(keep, allow_nan=False, separators=(",", ":")).encode()


# The members pyarrow reads (records.RUN_MEMBERS): the others are left out.
_CANONICAL = ("type",) + tuple(records.RUN_MEMBERS)


_KEY = re.compile(rb'"((?:[^"\\]|\\.)*)"\s*:')
# A key of an object with no backslash in it (_metric_names checks that first): much
# faster than _KEY's alternation, a character at a time.
_PLAIN_KEY = re.compile(rb'"([^"]*)"\s*:')


def _metric_names(lines, known):
    """(metric names, {line index: keys}) of the lines' metrics and units objects: the
    names, known ones first, and the keys of each metrics object that holds a null
    (pyarrow cannot tell a null member from a missing one); None unless each line has one
    flat metrics object, and at most one flat units object, with no escape in them (a key
    could be missed then). pyarrow is then asked for every key of both objects and
    ignores the rest of the line: a units key missing from the schema would be ignored,
    where the Python reader checks its value. Per line: a regex pass over each object
    for its keys, looked up as a whole (a launch's runs share them; a units object is
    the same for every run of a session, and is looked up whole)."""
    names = OrderedDict.fromkeys(known)
    decoded = {}       # tuple of raw keys -> their names
    units_seen = set()
    nulls = {}

    def keys_of(content):
        """The names of a flat object's keys, or None (not flat, or escaped)."""
        if b"\\" in content or content.find(b"{", 1) >= 0:
            return None
        raw = tuple(_PLAIN_KEY.findall(content))
        got = decoded.get(raw)
        if got is None:
            # A key ends with '":', and a number or an unescaped string holds none.
            if len(raw) != content.count(b'":'):
                return None
            try:
                got = [records.member_name(k) for k in raw]
            except ValueError:
                return None
            for name in got:
                names.setdefault(name, None)
            if len(decoded) > 4096:
                decoded.clear()
            decoded[raw] = got
        return got

    for i, line in enumerate(lines):
        at = line.find(b'"metrics":{')
        end = _flat_end(line, at)
        if at < 0 or end < 0:
            return None
        content = line[at + 10:end + 1]
        found = keys_of(content)
        if found is None:
            return None
        if b"null" in content:
            nulls[i] = found
        at = line.find(b'"units":{')
        if at >= 0:
            end = _flat_end(line, at)
            if end < 0:
                return None
            units = line[at + 8:end + 1]
            if units not in units_seen:
                if keys_of(units) is None:
                    return None
                if len(units_seen) > 4096:
                    units_seen.clear()
                units_seen.add(units)
    return list(names), nulls


def _flat_end(line, at):
    """The index of the '}' that ends the flat object whose member starts at line[at],
    outside its strings (a key or a unit such as "}" holds one), or -1. A quote escaped
    before it leaves a backslash in the object, which keys_of refuses."""
    quotes, pos = 0, at
    end = line.find(b"}", at)
    while end >= 0:
        quotes += line.count(b'"', pos, end)
        if quotes % 2 == 0:
            return end
        pos = end
        end = line.find(b"}", end + 1)
    return -1


def _dims(pa, pc, col):
    """'x,y,z' per run ('' where the member is missing), as table._dims."""
    return pc.fill_null(pc.binary_join(pc.cast(col, pa.list_(pa.string())), ","),
                        "").to_numpy(zero_copy_only=False)


def _typed_column(col, kinds=None):
    """A config column typed as pandas types a list of dicts' values: int64 (float64
    where some runs lack it), float64, bool, or object for mixed or text. kinds: the
    types its values can have, when known without looking at every row."""
    values = col.dropna()
    if kinds is None:
        kinds = {type(v) for v in values}
    try:
        if kinds == {int}:
            return col.astype("int64") if len(values) == len(col) else col.astype("float64")
        if kinds <= {int, float} and kinds:
            return col.astype("float64")
    except OverflowError:
        # An integer that int64 (or float64) cannot hold, a seed= of 20 digits: the
        # values stay Python's integers, exact.
        return col
    if kinds == {bool} and len(values) == len(col):
        return col.astype("bool")
    return col


def summarize(df, by=None):
    """One row per group (default: Annotation, config columns, Kernel, GPU, Metric) with
    Nsight Python's columns AvgValue, StdDev, MinValue, MaxValue, NumRuns, CI95_Lower,
    CI95_Upper, RelativeStdDevPct, StableMeasurement (SPEC.md: Student-t interval; stable
    needs n >= 5, RSD <= 2 %, no launch that drifted - from 10 runs, a significant trend of
    more than 2 % that moved the bulk of the runs (stats.drift) -, the known SM clocks
    within 5 % and no thermal, power or slowdown throttle reason in any run), plus MedianValue,
    DriftPct, Unit and Reasons. Drift is judged per launch, as in the 'summary' records:
    DriftPct is the least-squares trend of a launch's runs (the rows of one Launch in Run
    order; without those columns, the group's rows in the frame's order), first to last,
    in % of its mean - where a group holds several launches, the one of largest magnitude -
    and a group is not stable when any of its launches drifted. A trend across launches
    (steady launches whose means step up) is not a drift.
    A dram__bytes_write.sum row whose group also has dram__bytes_read.sum rows gets
    rangeprof/placement.py's reason in Reasons (StableMeasurement unchanged) where the
    medians and the L2 meet its rule; the L2 is that of the row's GPU, as load() read it
    from the files' device records (df.attrs['l2_bytes']): a frame without it (a Parquet
    dataset's, one made by hand) or without a GPU column gets no such reason."""
    needed = [c for c in ("Metric", "Value") if c not in df.columns]
    if needed:
        raise KeyError(f"rangeprof.summarize: the frame has no {' or '.join(needed)} column "
                       f"(load(columns=...) left it out); its columns are "
                       f"{', '.join(map(str, df.columns)) or 'none'}")
    if by is None:
        # Those of the default columns the frame has (load(columns=...) may leave some out).
        by = [c for c in ["Annotation"] + list(df.attrs.get("config_columns", []))
              + ["Kernel", "GPU"] if c in df.columns] + ["Metric"]
    by = [by] if isinstance(by, str) else list(by)
    if "Metric" not in by:
        by.append("Metric")
    unknown = [c for c in by if c not in df.columns]
    if unknown:
        raise KeyError(f"rangeprof.summarize(by=...): no column {', '.join(unknown)}; the "
                       f"columns are {', '.join(df.columns)}")
    out = []
    # The placement reason of a DRAM write row needs the same group's reads: the reads'
    # values by the group's other columns, the write rows' places in out (patched after
    # the loop, whichever of the two came first).
    metric_at = by.index("Metric")
    reads, writes = {}, []
    # observed=True: categorical columns group by the values present, not every
    # combination of their categories.
    for key, g in df.groupby(by, sort=False, dropna=False, observed=True):
        key = key if isinstance(key, tuple) else (key,)
        s = stats.summarize(g["Value"].tolist(),
                            g["SMClock"].tolist() if "SMClock" in g else None,
                            g["ThrottleReasons"].tolist() if "ThrottleReasons" in g else None,
                            launches=g["Launch"].tolist() if "Launch" in g else None,
                            runs=g["Run"].tolist() if "Run" in g else None)
        units = g["Unit"].unique().tolist() if "Unit" in g else []
        mixed = table.mixed_units(units)
        if mixed:  # numbers in different units are not averaged
            s = table.unaveraged(g["Value"].tolist(), units)
        if key[metric_at] == placement.READ_METRIC:
            reads[_other_columns(key, metric_at)] = None if mixed else g["Value"].tolist()
        elif key[metric_at] == placement.WRITE_METRIC and not mixed:
            writes.append((len(out), _other_columns(key, metric_at), g["Value"].tolist(),
                           g["GPU"].unique().tolist() if "GPU" in g else []))
        row = dict(zip(by, key))
        row["Unit"] = g["Unit"].iloc[0] if "Unit" in g else None
        row.update(AvgValue=s["mean"], StdDev=s["stddev"], MinValue=s["min"],
                   MedianValue=s["median"], MaxValue=s["max"], NumRuns=s["n"],
                   CI95_Lower=s["ci95_low"], CI95_Upper=s["ci95_high"],
                   RelativeStdDevPct=s["rsd_pct"], DriftPct=s["drift_pct"],
                   StableMeasurement=s["stable"],
                   Reasons="; ".join(s["reasons"]))
        out.append(row)
    l2_by_name = df.attrs.get("l2_bytes") or {}
    for at, others, written, gpus in writes:
        read = reads.get(others)
        if read is None:
            continue
        # The L2 its GPUs agree on (a name the files' device records did not give, or
        # gave with different sizes, is none).
        l2 = placement.l2_of({"l2_bytes": l2_by_name.get(name)} for name in gpus)
        out[at]["Reasons"] = placement.add_to(out[at]["Reasons"],
                                              placement.reason_of_runs(read, written, l2))
    result = pd.DataFrame(out)
    if len(result):
        result["StableMeasurement"] = result["StableMeasurement"].astype("boolean")
    return result


def _other_columns(key, metric_at):
    """A group's key without its Metric, missing values made one (NaN is not equal to
    itself, so a key holding one would find no other)."""
    return tuple(None if _missing(v) else v for i, v in enumerate(key) if i != metric_at)


def _missing(v):
    return v is None or v is pd.NA or v is pd.NaT or (isinstance(v, float) and v != v)
