"""rangeprof/records.py - reads rangeprof's JSON Lines (doc/records.md) from many files and
sessions, reporting each bad line with its file, line number, the field and why instead
of failing. Standard library only: the report tools use it directly.

A run or summary record belongs to the session record that precedes it in its file (each
process writes a session line first); sessions are told apart by host, pid and start time.

Every member the tools use is checked before a record is handed on: a string where a
number belongs, a list where a scalar belongs, a number that is not finite or that no
float can hold, or nesting too deep for the parser make the line bad, never an exception
further on. Members the tools do not use are not looked at.

read() gives every record in lists (small files, tests); Reader streams them, so that
rangeprof-report and rangeprof-compare hold no more than their groups (rangeprof/scan.py
runs it over pieces of big files in several processes). RunLines gives parse_line's answers
for the lines of rangeprof.analyze's capture, decoding a launch's members once."""
import glob
import json
import json.scanner
import math
import os
import sys
from dataclasses import dataclass, field

SUPPORTED_SCHEMA = 1
KNOWN_TYPES = ("session", "device", "setup", "run", "summary", "warning", "error")
# Bad lines kept per reading (each is printed; beyond this only counted), so that a file
# of millions of bad lines cannot fill memory with their descriptions.
MAX_KEPT_BAD_LINES = 1000
# An integer index or count (launch, run, grid, ...) must fit a signed 64-bit integer, as
# the collector writes it and the readers (array, pyarrow) keep it.
_INT_LIMIT = 1 << 63


@dataclass
class BadLine:
    path: str
    line: int
    reason: str

    def __str__(self):
        return f"{self.path}:{self.line}: {self.reason}; line skipped"


class Run:
    """One measured run: the fields of a 'run' record, resolved against its session and
    device, with the configuration parsed from its NVTX range texts."""
    __slots__ = ("record", "session", "device", "path", "line", "config", "session_id",
                 "config_key")

    def __init__(self, record, session, device, path, line, config=None, session_id=None,
                 config_key=None):
        self.record, self.session, self.device = record, session, device
        self.path, self.line = path, line
        self.config = {} if config is None else config
        self.session_id = session_id or _session_id(session)
        # What config was parsed from (the range texts), for caches keyed on it.
        self.config_key = config_key

    @property
    def launch_id(self):
        # The kernel nodes of one graph launch share its launch index: the node tells
        # them apart (a graph may hold the same kernel twice).
        graph = self.record.get("graph")
        node = f".node{graph.get('node')}" if isinstance(graph, dict) else ""
        return f"{self.session_id}#{self.record.get('launch')}{node}"

    @property
    def annotation(self):
        return self.record.get("nvtx_path") or ""

    @property
    def kernel(self):
        return self.record.get("kernel", "")

    @property
    def range(self):
        """The record's "range" member (a range workload, --replay-mode range), or None."""
        r = self.record.get("range")
        return r if isinstance(r, dict) else None


def _session_id(s):
    return f"{s.get('host', '?')}:{s.get('pid', '?')}:{s.get('start_time', '?')}"


@dataclass
class Records:
    runs: list = field(default_factory=list)
    summaries: list = field(default_factory=list)   # (record, session_id)
    sessions: list = field(default_factory=list)
    devices: list = field(default_factory=list)     # (record, session_id)
    setups: list = field(default_factory=list)      # (record, session_id): --setup early
    messages: list = field(default_factory=list)    # warning and error records
    bad_lines: list = field(default_factory=list)
    bad_count: int = 0                              # all of them, also those not kept
    files: list = field(default_factory=list)


def expand(paths_or_globs, notes="stderr"):
    """File names from names, glob patterns and directories (their *.jsonl), in order, once
    each; a pattern that matches nothing raises FileNotFoundError naming it. Directories a
    pattern matches are left out (a directory is read through its *.jsonl only when
    named). One file under two names ('f' and './f', a link, a pipe named twice) is read
    once, under its first name, with a note on notes ("stderr": sys.stderr at the time of
    the call; None: not said): read twice, its runs would count twice."""
    if isinstance(paths_or_globs, (str, bytes, os.PathLike)):
        paths_or_globs = [paths_or_globs]
    files, seen = [], {}
    for item in paths_or_globs:
        item = os.fsdecode(os.fspath(item))
        if os.path.isdir(item):
            matches = sorted(m for m in glob.glob(os.path.join(glob.escape(item), "*.jsonl"))
                             if not os.path.isdir(m))
            if not matches:
                raise FileNotFoundError(f"no *.jsonl file in directory '{item}'")
        elif glob.has_magic(item):
            matches = sorted(m for m in glob.glob(item) if not os.path.isdir(m))
        else:
            matches = [item] if os.path.exists(item) else []
        if not matches:
            raise FileNotFoundError(f"no JSONL file matches '{item}'")
        for m in matches:
            if m in files:
                continue
            try:
                st = os.stat(m)
                identity = (st.st_dev, st.st_ino)
            except OSError:  # said when it is read
                identity = None
            first = seen.get(identity) if identity else None
            if first is not None:
                if notes is not None:
                    print(f"rangeprof: note: '{_said(m)}' is the same file as "
                          f"'{_said(first)}': read once",
                          file=sys.stderr if notes == "stderr" else notes)
                continue
            if identity:
                seen[identity] = m
            files.append(m)
    return files


# ---------------------------------------------------------------------------------------
# One line

class _Invalid(Exception):
    """A member of a record that the tools cannot use; the message names it."""


def _no_constant(name):
    raise ValueError(f"'{name}' is not a JSON number (rangeprof writes null for values "
                     "that are not finite)")


_scan = json.scanner.c_make_scanner(json.JSONDecoder(parse_constant=_no_constant)) \
    if json.scanner.c_make_scanner else json.JSONDecoder(parse_constant=_no_constant).scan_once


def _decode(text):
    """json.loads(text), but through the scanner directly: JSONDecoder.decode's wrapper
    costs a tenth of a short line's parse, millions of times over."""
    idx = 0
    if text[:1] in " \t\r\n":
        idx = len(text) - len(text.lstrip(" \t\r\n"))
    try:
        obj, end = _scan(text, idx)
    except StopIteration as e:
        raise json.JSONDecodeError("Expecting value", text, e.value) from None
    if end != len(text) and not text[end:].isspace():
        raise json.JSONDecodeError("Extra data", text, end)
    return obj


def _shown(value):
    text = json.dumps(value) if isinstance(value, (str, int, float, bool)) or value is None \
        else type(value).__name__
    return text if len(text) <= 40 else text[:37] + "..."


_KIND = {str: "a string", int: "an integer", float: "a number", bool: "true or false",
         list: "a list", dict: "an object", type(None): "null"}


def _said(where):
    """A member's path as a message shows it: its names come from the file (a metric's, a
    unit's), so a newline or another control character in one is escaped, as JSON writes
    it, and a long one cut: a message stays one line."""
    if not where.isprintable():
        where = json.dumps(where)[1:-1]
    return where if len(where) <= 80 else where[:77] + "..."


def _fail(where, value, expected):
    got = _KIND.get(type(value), type(value).__name__)
    detail = f" ({_shown(value)})" if isinstance(value, (str, int, float)) else ""
    raise _Invalid(f"'{_said(where)}' should be {expected}, not {got}{detail}")


def _number(rec, key, where=None, null=True):
    """A finite number (JSON null where null): checks rec[key] if present. An integer is
    a number when a float can hold it (metrics are floats)."""
    v = rec.get(key)
    if v is None:
        if null or key not in rec:
            return
        _fail(where or key, v, "a number")
    t = type(v)
    if t is float:
        if v - v == 0:  # finite (inf - inf and nan - nan are nan)
            return
        raise _Invalid(f"'{_said(where or key)}' is not finite")
    if t is int:
        try:
            float(v)
            return
        except OverflowError:
            raise _Invalid(f"'{_said(where or key)}' is an integer of {len(str(abs(v)))} "
                           "digits, too large for a number") from None
    _fail(where or key, v, "a number or null" if null else "a number")


def _integer(rec, key, where=None):
    v = rec.get(key)
    if v is None:
        return
    if type(v) is not int:
        _fail(where or key, v, "an integer or null")
    if not -_INT_LIMIT < v < _INT_LIMIT:
        raise _Invalid(f"'{_said(where or key)}' is an integer of {len(str(abs(v)))} digits, "
                       "out of range")


def _string(rec, key, where=None):
    v = rec.get(key)
    if v is not None and type(v) is not str:
        _fail(where or key, v, "a string or null")


def _object(rec, key, where=None):
    v = rec.get(key)
    if v is not None and type(v) is not dict:
        _fail(where or key, v, "an object or null")
    return v


def _list(rec, key, where=None):
    v = rec.get(key)
    if v is not None and type(v) is not list:
        _fail(where or key, v, "a list or null")
    return v


def _integers(rec, key, where=""):
    v = _list(rec, key, where + key)
    for i, x in enumerate(v or ()):
        if type(x) is not int or not -_INT_LIMIT < x < _INT_LIMIT:
            _fail(f"{where}{key}[{i}]", x, "an integer")


def _strings(rec, key, where=""):
    v = _list(rec, key, where + key)
    for i, x in enumerate(v or ()):
        if type(x) is not str:
            _fail(f"{where}{key}[{i}]", x, "a string")


def _metric_values(metrics):
    for name, v in metrics.items():
        t = type(v)
        if v is None or (t is float and v - v == 0) or (t is int and -_INT_LIMIT < v < _INT_LIMIT):
            continue
        _number(metrics, name, f"metrics.{name}")


def _check_session(rec):
    schema = rec.get("schema")
    if type(schema) not in (int, float) or not schema - schema == 0:
        _fail("schema", schema, "a number")
    if schema > SUPPORTED_SCHEMA:
        return f"schema {schema!r} is newer than this reader's {SUPPORTED_SCHEMA}"
    for key in ("host", "start_time"):
        _string(rec, key)
    if type(rec.get("pid")) is not str:
        _integer(rec, "pid")
    job = _object(rec, "job")
    if job:
        for key in ("launcher", "id", "id_from", "slurm_step"):
            _string(job, key, f"job.{key}")
        for key in ("rank", "local_rank", "world_size", "local_world_size"):
            _integer(job, key, f"job.{key}")
    options = _object(rec, "options")
    if options:
        _string(options, "metrics", "options.metrics")
        for key in ("nvtx_include", "nvtx_exclude"):
            v = _list(options, key, f"options.{key}")
            for i, x in enumerate(v or ()):
                if type(x) is not str:
                    _fail(f"options.{key}[{i}]", x, "a string")
    return None


def _check_device(rec):
    _integer(rec, "index")
    _string(rec, "name")
    for key in ("sm_count", "rated_sm_clock_hz", "rated_memory_clock_hz", "l2_bytes"):
        _number(rec, key)


# ---------------------------------------------------------------------------------------
# What the members of a run record are

# The kinds of the members the tools use (doc/records.md): STRING; INTEGER, one a signed
# 64-bit integer holds; NUMBER, finite (an integer a float holds, or a float); a list of
# one kind ([INTEGER]); an object of named members ({name: kind}); METRICS and UNITS,
# objects keyed by metric names, of NUMBERs and of STRINGs. Any member may be null or
# missing, but those of REQUIRED. This is the one description of them: the checks below
# are made from it, and rangeprof.frame asks pyarrow for each of these members in the
# type its kind names (python/tests/test_frame_records.py holds the two readers to it).
STRING, INTEGER, NUMBER, METRICS, UNITS = "string", "integer", "number", "metrics", "units"
NVTX_RANGE_MEMBERS = {"domain": STRING, "text": STRING, "kind": STRING}
GRAPH_MEMBERS = {"id": INTEGER, "launch": INTEGER, "node": INTEGER, "nodes": INTEGER}
# A range workload's "range" member (--replay-mode range): its name, counts, the names
# of its kernels in launch order and its stream ids.
RANGE_MEMBERS = {"name": STRING, "kernels": INTEGER, "memsets": INTEGER, "copies": INTEGER,
                 "graph_launches": INTEGER, "event_ops": INTEGER, "syncs": INTEGER,
                 "kernel_names": [STRING], "streams": [INTEGER], "scope": STRING}
# The members run and summary records share (their launch's)...
LAUNCH_MEMBERS = {
    "kernel": STRING, "nvtx_path": STRING, "workload": STRING, "cache_control": STRING,
    "clock_control": STRING, "time": STRING,
    "launch": INTEGER, "run": INTEGER, "runs": INTEGER, "device": INTEGER,
    "shared_mem_bytes": INTEGER, "passes": INTEGER, "pid": INTEGER,
    "grid": [INTEGER], "block": [INTEGER], "nvtx": [NVTX_RANGE_MEMBERS],
    "graph": GRAPH_MEMBERS, "range": RANGE_MEMBERS}
# ... and a run record's (the metrics, its clocks and temperature, its throttle reasons).
RUN_MEMBERS = dict(LAUNCH_MEMBERS, metrics=METRICS, units=UNITS, sm_clock_hz=NUMBER,
                   rated_sm_clock_hz=NUMBER, temperature_c=NUMBER, throttle_reasons=[STRING])
# Members that may not be null or missing.
REQUIRED = {"run": ("kernel", "metrics")}


class _Groups:
    """The members of a description, by kind. ok() loops over each group with no call
    per member and no message made (it runs for each of millions of lines); check()
    says what is wrong where ok() finds something. A kind no group takes raises at
    import: a kind added to the description must be given its check here."""

    def __init__(self, members, leave=()):
        def of(kind):
            return tuple(k for k, v in members.items() if v == kind and k not in leave)
        self.strings, self.integers, self.numbers = of(STRING), of(INTEGER), of(NUMBER)
        self.integer_lists, self.string_lists = of([INTEGER]), of([STRING])
        self.objects = tuple((k, _Groups(v)) for k, v in members.items()
                             if type(v) is dict and k not in leave)
        # Lists of objects, with the names of their members where all are strings (an
        # NVTX range's): checked inline, with no call per item.
        self.object_lists = tuple((k, _Groups(v[0])) for k, v in members.items()
                                  if type(v) is list and type(v[0]) is dict and k not in leave)
        self.object_lists = tuple((k, g, g.strings if g.only_strings() else None)
                                  for k, g in self.object_lists)
        taken = (set(self.strings) | set(self.integers) | set(self.numbers)
                 | set(self.integer_lists) | set(self.string_lists)
                 | {k for k, _ in self.objects} | {k for k, _, _ in self.object_lists}
                 | set(leave))
        left = [k for k in members if k not in taken]
        if left:
            raise TypeError(f"records.py: no check for the kind of {', '.join(left)}")
        self.ok = self._ok()

    def only_strings(self):
        return not (self.integers or self.numbers or self.integer_lists or self.string_lists
                    or self.objects or self.object_lists)

    def _ok(self):
        """ok(get): whether every member (get: the record's get) is of its kind or null.
        Written out member by member from the description and compiled once, as
        dataclasses makes its methods: no loop, map or attribute lookup per line, which
        cost a tenth of a hand-written check's time (it runs for millions of lines)."""
        int_ok = "(type({0}) is int and -limit < {0} < limit)"
        number_ok = ("(({0} - {0} == 0) if type({0}) is float else "
                     "(type({0}) is int and -limit < {0} < limit))")
        lines = ["def ok(get):"]

        def member(key, test):
            lines.append(f"    v = get({key!r})")
            lines.append(f"    if v is not None and not {test.format('v')}: return False")
        for key in self.strings:
            member(key, "type({0}) is str")
        for key in self.integers:
            member(key, int_ok)
        for key in self.numbers:
            member(key, number_ok)
        for key, test in ([(k, int_ok) for k in self.integer_lists]
                          + [(k, "type({0}) is str") for k in self.string_lists]):
            lines.append(f"    v = get({key!r})")
            lines.append("    if v is not None:")
            lines.append("        if type(v) is not list: return False")
            lines.append("        for x in v:")
            lines.append(f"            if not {test.format('x')}: return False")
        scope = {"limit": _INT_LIMIT}
        for i, (key, inner) in enumerate(self.objects):
            scope[f"ok{i}"] = inner.ok
            lines.append(f"    v = get({key!r})")
            lines.append(f"    if v is not None and (type(v) is not dict or not ok{i}(v.get)):"
                         " return False")
        for i, (key, inner, names) in enumerate(self.object_lists):
            scope[f"list_ok{i}"] = inner.ok
            lines.append(f"    v = get({key!r})")
            lines.append("    if v is not None:")   # (not 'if v': {} is no list either)
            lines.append("        if type(v) is not list: return False")
            lines.append("        for r in v:")
            lines.append("            if type(r) is not dict: return False")
            if names is None:
                lines.append(f"            if not list_ok{i}(r.get): return False")
            for name in names or ():
                lines.append(f"            x = r.get({name!r})")
                lines.append("            if x is not None and type(x) is not str: return False")
        lines.append("    return True")
        exec("\n".join(lines), scope)
        return scope["ok"]

    def check(self, rec, get, where=""):
        """Raises _Invalid naming the first member not of its kind (where: the path of
        rec in the record, as messages give it)."""
        if self.ok(get):
            return
        for key in self.strings:
            _string(rec, key, where + key)
        for key in self.integers:
            _integer(rec, key, where + key)
        for key in self.numbers:
            _number(rec, key, where + key)
        for key in self.integer_lists:
            _integers(rec, key, where)
        for key in self.string_lists:
            _strings(rec, key, where)
        for key, inner in self.objects:
            v = _object(rec, key, where + key)
            if v is not None:
                inner.check(v, v.get, f"{where}{key}.")
        for key, inner, _ in self.object_lists:
            for i, r in enumerate(_list(rec, key, where + key) or ()):
                if type(r) is not dict:
                    _fail(f"{where}{key}[{i}]", r, "an object")
                inner.check(r, r.get, f"{where}{key}[{i}].")


# The launch's members of run and summary records (kernel, a required string, is checked
# first: a record without one is the commonest hand-made mistake).
_LAUNCH = _Groups(LAUNCH_MEMBERS, leave=("kernel",))
_RUN_OWN = _Groups({k: v for k, v in RUN_MEMBERS.items() if k not in LAUNCH_MEMBERS},
                   leave=("metrics", "units"))


def _check_launch(rec, get):
    """The members run and summary records share."""
    if type(get("kernel")) is not str:
        _fail("kernel", get("kernel"), "a string")
    if not _LAUNCH.ok(get):
        _LAUNCH.check(rec, get)


def _check_metric_values(metrics):
    """Each metric value a finite number an int64 or a double holds, or null."""
    for v in metrics.values():
        if v is not None:
            t = type(v)
            if t is float:
                if v - v != 0:
                    _metric_values(metrics)
            elif t is not int or not -_INT_LIMIT < v < _INT_LIMIT:
                _metric_values(metrics)


def _units_ok(units):
    """Whether a run record's units member is as _check_run takes it: null, or an object
    whose values are strings or null. One rule for _check_run and the two readers that
    decode a launch's later runs in pieces (_RunSplitter, RunLines)."""
    if units is None:
        return True
    if type(units) is not dict:
        return False
    for u in units.values():
        if u is not None and type(u) is not str:
            return False
    return True


def _check_run(rec):
    get = rec.get
    metrics = get("metrics")
    if type(metrics) is not dict:
        _fail("metrics", metrics, "an object")
    _check_launch(rec, get)
    _check_metric_values(metrics)
    units = get("units")
    if not _units_ok(units):
        _object(rec, "units")
        _check_units(units)
    if not _RUN_OWN.ok(get):
        _RUN_OWN.check(rec, get)


# The members of a run record, as rangeprof writes them, after its launch's: what
# differs from run to run (checked by _check_run_members), and units, which does not.
_PER_RUN_MEMBERS = frozenset(("run", "metrics", "units", "sm_clock_hz", "sm_clock_source",
                              "rated_sm_clock_hz", "locked_sm_clock_hz", "temperature_c",
                              "temperature_before_c", "temperature_after_c",
                              "memory_clock_hz", "power_w", "throttle_reasons", "time",
                              "pid"))


_PER_RUN = _Groups({k: v for k, v in RUN_MEMBERS.items() if k in _PER_RUN_MEMBERS},
                   leave=("metrics", "units"))


def _check_run_members(rec):
    """_check_run of the members that differ between the runs of one launch (metrics,
    run, pid, clocks, temperature, throttle reasons, time: every one of _PER_RUN_MEMBERS
    that _check_run checks), for records whose others were checked with the launch's
    first run (_RunSplitter)."""
    get = rec.get
    metrics = get("metrics")
    if type(metrics) is not dict:
        _fail("metrics", metrics, "an object")
    _check_metric_values(metrics)
    if not _PER_RUN.ok(get):
        _PER_RUN.check(rec, get)


# Members a launch's shared text (a head) may not hold: they differ from run to run. (pid
# may: every process writes its own into each record, and each run's is checked.)
_NOT_IN_HEAD = _PER_RUN_MEMBERS - {"pid"}


def _usable_head(head):
    """Whether head, the members of a run line before its "run" member, decoded as an
    object of their own, can stand for those members of every run line that starts with
    the same text and whose other members are all _PER_RUN_MEMBERS: a run record, none
    of its members differing between runs, and every member _check_run looks at among
    them of its kind (the members after them are _check_run_members's)."""
    if type(head) is not dict or head.get("type") != "run" or head.keys() & _NOT_IN_HEAD:
        return False
    get = head.get
    return type(get("kernel")) is str and _LAUNCH.ok(get)


class _RunSplitter:
    """Run lines read a launch at a time: the runs of one launch share the text up to
    their "run" member (kernel, names, NVTX ranges: half the line) and the units object.
    A line that starts with the same text as the last one has only its other members
    parsed and checked; the record is the one parse_line gives (a JSON object's members
    are read in order, a later one of a name winning: the pieces, each a whole sequence
    of members, merge the same way). Anything else (a first run, a prefix that does not
    parse as members of its own, a member of the launch given again after "run") goes
    to parse_line. A cache of one launch: the lines of a launch come together."""
    __slots__ = ("head", "head_rec", "units", "units_rec", "extra")

    def __init__(self):
        self.head = self.head_rec = self.units = self.units_rec = None
        self.extra = None   # what was derived from head_rec by the reader (its config)

    def parse(self, text):
        """The record of a run line, checked, or None (parse_line must read it)."""
        i = text.find(',"run":')
        if i < 0:
            return None
        cut = i + 1
        if self.head is None or text[:cut] != self.head:
            return self._first(text, cut)
        tail = text[cut:]
        units = self.units
        j = tail.find(',"units":{') if units is not None else -1
        noted = None   # the units of a line read whole, kept once the line is found good
        try:
            if j >= 0 and tail.startswith(units, j + 1):
                rec = dict(self.head_rec)
                middle = _decode("{" + tail[:j] + "}")
                rest = _decode("{" + tail[j + 1 + len(units):])
                # (An empty rest: the line ends '"units":{...},}', which is no JSON.)
                if type(middle) is not dict or type(rest) is not dict or not rest:
                    return None
                rec.update(middle)
                rec["units"] = self.units_rec
                rec.update(rest)
                if not (middle.keys() | rest.keys()) <= _PER_RUN_MEMBERS or \
                        "units" in middle or "units" in rest:
                    return None  # (a units member given again is checked by parse_line)
            else:
                part = _decode("{" + tail)
                if type(part) is not dict or not part.keys() <= _PER_RUN_MEMBERS:
                    return None
                rec = dict(self.head_rec)
                rec.update(part)
                if not _units_ok(rec.get("units")):
                    return None
                noted = part.get("units")
            _check_run_members(rec)
        except (ValueError, RecursionError, _Invalid):
            return None
        # Only a good line's units are kept: the units branch above hands them on
        # unchecked, so a refused line's ({"x": 5}) once passed the next runs giving them.
        if noted is not None:
            self._note_units(tail, noted)
        return rec

    def _first(self, text, cut):
        """The first run of a launch: parsed whole; its prefix kept where it is a whole
        sequence of members."""
        self.head = self.head_rec = self.extra = None
        rec, problem = parse_line(text)
        if problem or type(rec) is not dict or rec.get("type") != "run":
            return None
        try:
            head = _decode(text[:cut - 1] + "}")
        except (ValueError, RecursionError):
            return rec
        # The head itself checked, not only the first run, whose later members may give
        # one of its members again (a later one of a name winning).
        if _usable_head(head):
            self.head, self.head_rec = text[:cut], head
            self._note_units(text[cut:], rec.get("units"))
        return rec

    def _note_units(self, tail, units):
        """Keeps the units member's text ('"units":{...},') where it reads as the record's
        units object by itself."""
        if type(units) is not dict:
            return
        j = tail.find(',"units":{')
        if j < 0:
            return
        end = tail.find("}", j) + 1
        if not end or tail[end:end + 1] != ",":
            return
        text = tail[j + 1:end + 1]
        try:
            if _decode("{" + text[:-1] + "}") == {"units": units}:
                self.units, self.units_rec = text, units
        except (ValueError, RecursionError):
            pass


def _copy_flat_dicts(items):
    return [d.copy() for d in items]


def _copy_json(value):
    """A copy of a JSON value that shares no list or object with it."""
    if type(value) is dict:
        return {k: _copy_json(v) if type(v) is dict or type(v) is list else v
                for k, v in value.items()}
    return [_copy_json(v) if type(v) is dict or type(v) is list else v for v in value]


def _copier(value):
    """The quickest of the copies _copy_json makes, for a value of value's shape."""
    def flat(items):
        return not any(type(v) is dict or type(v) is list for v in items)
    if type(value) is list and flat(value):
        return list.copy
    if type(value) is dict and flat(value.values()):
        return dict.copy
    if type(value) is list and all(type(d) is dict and flat(d.values()) for d in value):
        return _copy_flat_dicts
    return _copy_json


# A launch's text nested deeper than this is not kept as a head: RunLines copies a head's
# members recursively, and such lines are read whole.
_MAX_HEAD_NESTING = 64


class RunLines:
    """parse_line for the lines of one text in which the runs of a launch come together,
    each starting with the same text up to its "run" member (the launch's members: two
    thirds of the line): rangeprof.analyze's capture, which the library hands over. Gives
    parse_line's (record, why) for every line. A run line whose start is a head (that
    text of the run line before it, its members decoded once and checked: _usable_head)
    and whose other members, decoded, are all _PER_RUN_MEMBERS, is the head's members
    copied, then those members (a JSON object's members are read in order, a later one
    of a name winning: the same record, every list and object its own), checked as
    _check_run checks them; any other line, or one that fails a check, is parse_line's.
    Unlike _RunSplitter (the file readers'), no record shares a list or an object with
    another: the records are handed to the caller's script."""
    __slots__ = ("head", "head_rec", "plan", "candidate", "refused")

    def __init__(self):
        self.head = self.head_rec = None
        self.plan = ()           # (member, copy) for each list or object of head_rec
        self.candidate = None    # the head of the last run line parse_line read
        self.refused = None      # the last head that could not be taken (not tried again)

    def parse(self, text, terminated=None):
        head = self.head
        if head is None or not text.startswith(head):
            head = self.candidate
            # A head is taken at the second line that starts with it (runs=1 launches
            # have one line each: no decode of theirs goes to waste).
            if head is None or not text.startswith(head) or not self._take(head):
                head = None
        if head is not None:
            rec = self._rest("{" + text[len(head):])
            if rec is not None:
                return rec, None
        rec, why = parse_line(text, terminated)
        if why is None and rec["type"] == "run" and text.startswith('{"type":"run",'):
            i = text.find(',"run":')
            if i > 0 and text[:i + 1] != self.head and text[:i + 1] != self.refused:
                self.candidate = text[:i + 1]
        return rec, why

    def _take(self, head):
        self.candidate = None
        try:
            rec = (_decode(head[:-1] + "}")
                   if head.count("{") + head.count("[") <= _MAX_HEAD_NESTING else None)
        except (ValueError, RecursionError):
            rec = None
        if not _usable_head(rec):
            self.refused = head
            return False
        self.head, self.head_rec = head, rec
        self.plan = tuple((k, _copier(v)) for k, v in rec.items()
                          if type(v) is dict or type(v) is list)
        return True

    def _rest(self, text):
        """The record of a line of the head and a tail, checked, or None; text: the
        tail as an object, "{" + tail."""
        try:   # (_decode, inline: text starts with its value)
            part, end = _scan(text, 0)
        except (StopIteration, ValueError, RecursionError):
            return None
        if end != len(text) and not text[end:].isspace():
            return None
        # (An empty part: the line ends '...,}', which is no JSON.)
        if not part or not part.keys() <= _PER_RUN_MEMBERS:
            return None
        rec = self.head_rec.copy()
        for key, copy in self.plan:
            rec[key] = copy(rec[key])
        rec.update(part)
        try:
            _check_run_members(rec)
        except _Invalid:
            return None
        return rec if _units_ok(rec.get("units")) else None


def _check_units(units):
    for name, u in units.items():
        if u is not None and type(u) is not str:
            _fail(f"units.{name}", u, "a string")


def _check_summary(rec):
    metrics = rec.get("metrics")
    if type(metrics) is not dict:
        _fail("metrics", metrics, "an object")
    _check_launch(rec, rec.get)
    for name, st in metrics.items():
        if type(st) is not dict:
            _fail(f"metrics.{name}", st, "an object")
        stable = st.get("stable")
        if stable is not None and type(stable) is not bool:
            _fail(f"metrics.{name}.stable", stable, "true, false or null")


def _check_message(rec):
    _string(rec, "message")
    _object(rec, "concerns")


def _check_setup(rec):
    _integer(rec, "device")
    cost = _object(rec, "cost_ms")
    for name in cost or ():
        _number(cost, name, f"cost_ms.{name}")


_CHECKS = {"session": _check_session, "device": _check_device, "run": _check_run,
           "summary": _check_summary, "warning": _check_message, "error": _check_message,
           "setup": _check_setup}


def member_name(raw):
    """The name a JSON object's key spells, from the bytes between its quotes, as
    parse_line reads it (escapes decoded); ValueError where they are no JSON string."""
    name = _decode('"' + raw.decode("utf-8") + '"')
    if type(name) is not str:
        raise ValueError(f"not a key: {raw[:40]!r}")
    return name


def parse_line(text, terminated=None):
    """(record, None) for a usable line, else (None or the parsed object, why not). The
    why names the record type and member: "run record: 'sm_clock_hz' should be a number
    or null, not a string ("fast")". terminated: whether the line had its newline (None:
    text tells, by ending with one); a line without is called truncated when it does
    not parse. Never raises for any text."""
    try:
        rec = _decode(text)
    except RecursionError:
        return None, "not JSON (nested too deeply)"
    except json.JSONDecodeError as e:
        if terminated is None:
            terminated = text.endswith("\n")
        what = "not JSON" if terminated else "truncated line"
        return None, f"{what} ({e.msg} at column {e.colno})"
    except ValueError as e:  # an integer of over 4300 digits, Infinity, NaN
        msg = str(e).split(";")[0]
        return None, f"not JSON ({msg})"
    if type(rec) is not dict:
        return None, "not a JSON object"
    kind = rec.get("type")
    check = _CHECKS.get(kind) if type(kind) is str else None
    if check is None:
        return rec, f"unknown record type {_shown(kind)}"
    try:
        newer = check(rec)
    except _Invalid as e:
        if kind == "session":
            # Its runs cannot be told from another session's: skipped with it.
            return rec, f"session record: {e}; the session's records are skipped with it"
        return None, f"{kind} record: {e}"
    return (rec, newer) if newer else (rec, None)


# ---------------------------------------------------------------------------------------
# Files

class Unreadable(Exception):
    """A file the readers cannot take as JSON Lines; the message says why, in one line."""


_GZIP = b"\x1f\x8b"
_UTF16 = ((b"\xff\xfe", "UTF-16 (little-endian, with a BOM)"),
          (b"\xfe\xff", "UTF-16 (big-endian, with a BOM)"),
          (b"{\x00", "UTF-16 (little-endian)"), (b"\x00{", "UTF-16 (big-endian)"))
UTF8_BOM = b"\xef\xbb\xbf"


def open_lines(path):
    """(binary file, gzipped) of a JSONL file to read from its start: a gzip file (by
    its magic bytes, whatever its name) is decompressed as it is read; UTF-16 text
    (rangeprof writes UTF-8; an editor or PowerShell's '>' converts) raises Unreadable,
    saying how to convert it, rather than every line being 'not JSON'. A UTF-8 BOM is
    left to the line readers (_lines), which pass over it. OSError where it cannot be
    opened. Pipes are looked at without being read (peek)."""
    f = open(path, "rb")
    try:
        head = f.peek(4)[:4]
        if head.startswith(_GZIP):
            return _Gunzip(f), True
        for mark, what in _UTF16:
            if head.startswith(mark):
                raise Unreadable(f"is {what} text, not UTF-8 as rangeprof writes it: "
                                 f"convert it (iconv -f UTF-16 -t UTF-8) and read that")
    except BaseException:
        f.close()
        raise
    return f, False


class _Gunzip:
    """A gzip stream read a block at a time, where a damaged or cut-short stream gives
    what was decompressed before the damage, and raises at the next read."""

    def __init__(self, raw):
        import gzip
        self.raw, self.gz, self.error = raw, gzip.GzipFile(fileobj=raw, mode="rb"), None

    def read(self, n):
        import zlib
        if self.error is not None:
            raise self.error
        parts, got = [], 0
        while got < n:
            try:
                part = self.gz.read1(min(n - got, 1 << 16))
            except (OSError, EOFError, zlib.error) as e:
                self.error = e
                if not parts:
                    raise
                break
            if not part:
                break
            parts.append(part)
            got += len(part)
        return b"".join(parts)

    def close(self):
        self.raw.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def is_gzip(path):
    """Whether a file starts as gzip does (such a file is not cut into pieces)."""
    try:
        with open(path, "rb") as f:
            return f.read(2) == _GZIP
    except OSError:
        return False


# ---------------------------------------------------------------------------------------
# Streams

class _ConfigCache:
    """config_from_nvtx per distinct set of range texts: a run's configuration is parsed
    once per range, not once per run (millions of runs share a few hundred ranges)."""

    def __init__(self, limit=4096):
        self.cache, self.limit = {}, limit

    def get(self, nvtx, path):
        """(key, config): the texts it was parsed from and the configuration."""
        key = (tuple([r.get("text") or "" for r in nvtx]), path) if nvtx else ((), path)
        hit = self.cache.get(key)
        if hit is None:
            # Imported here, not at the top: parse_line needs nothing but the standard
            # library, so that a checker loads this file alone (tests/gpu/gpu_records.py)
            # without 'import rangeprof', which attaches the process to the library.
            from rangeprof.config import config_from_nvtx
            if len(self.cache) >= self.limit:
                self.cache.clear()
            hit = self.cache[key] = config_from_nvtx(nvtx or [], path or "")
        return key, hit


class _Session:
    """What is in force for the records of one process: its session record, whether its
    records are skipped (a session line the reader cannot use), its device records and
    its id; last: (launch, graph node, run) of its last run read without a pid."""
    __slots__ = ("session", "skipping", "devices", "sid", "last")

    def __init__(self, session, skipping):
        self.session, self.skipping, self.devices = session, skipping, {}
        self.sid, self.last = _session_id(session), None


class Sessions:
    """The session each record of a file belongs to. A record that carries the pid of
    its writer (rangeprof writes it into every record: processes appending to one file
    without %p interleave their lines) belongs to the last session line of that pid; one
    without (files written before) to the last session line of the file."""
    __slots__ = ("current", "by_pid")

    def __init__(self):
        self.current, self.by_pid = _Session({}, False), {}

    def session_line(self, rec, usable):
        state = _Session(rec, not usable)
        pid = rec.get("pid")
        if type(pid) in (int, str):
            self.by_pid[pid] = state
        self.current = state
        return state

    def of(self, rec):
        """The _Session of a record (a dict)."""
        if self.by_pid:
            pid = rec.get("pid")
            if pid is not None:
                state = self.by_pid.get(pid) if type(pid) in (int, str) else None
                if state is not None:
                    return state
        return self.current

    def device_line(self, rec):
        state = self.of(rec)
        if not state.skipping:
            state.devices[rec.get("index")] = rec
        return state


class Reader:
    """Streams the records of files, or of byte ranges of a file (pieces, see
    rangeprof/scan.py). Bad lines go to .bad_lines (at most MAX_KEPT_BAD_LINES, all
    counted in .bad_count) and are printed by report_bad(). progress, when given, is
    called with the bytes read so far now and then."""

    def __init__(self, progress=None, unread=()):
        self.bad_lines, self.bad_count = [], 0
        self.notes = []   # what is said of a file beside its bad lines, once each
        self.files = []
        self._configs = _ConfigCache()
        self.progress = progress
        # Record types the consumer has no use for: their lines, where written as
        # rangeprof writes them ('{"type":"summary",'), are passed over unparsed (a
        # summary is a tenth of a big file's parse); a damaged one is then not said.
        self.unread = tuple('{"type":"%s",' % kind for kind in unread)

    def _bad(self, path, number, reason):
        self.bad_count += 1
        if len(self.bad_lines) < MAX_KEPT_BAD_LINES:
            self.bad_lines.append(BadLine(path, number, reason))

    def records(self, path, start=0, end=None, first_line=1, context=None):
        """Yields (kind, object) for each usable record of path, from byte start (a line
        start) to byte end (a line start; None: the file's end): ('run', Run),
        ('summary', (rec, session_id)), ('device', (rec, session_id)), ('setup', (rec,
        session_id)), ('session', rec), ('message', rec), each with the session of its
        writer (Sessions). context is the Sessions in force at start when start is not
        the file's beginning (scan.context_at). A file that cannot be read is a bad
        line 0."""
        if path not in self.files:
            self.files.append(path)
        sessions = context or Sessions()
        configs = self._configs
        split = _RunSplitter().parse
        last = (None, None, None)  # the last run's nvtx, nvtx_path and (key, config)
        interleaved = False
        try:
            f, gzipped = open_lines(path) if not start else (open(path, "rb"), False)
        except OSError as e:
            self._bad(path, 0, f"cannot be read ({e.strerror or e})")
            return
        except Unreadable as e:
            self._bad(path, 0, str(e))
            return
        number, done = first_line - 1, start
        with f:
            lines = _lines(f, start, end)
            if gzipped:
                lines = _gzip_errors(self, path, lines)
            for text, done, terminated in lines:
                number += 1
                if self.progress is not None and not number & 0x3fff and not gzipped:
                    self.progress(done - start)
                if text is None:
                    self._bad(path, number, overlong())
                    continue
                if not text or text.isspace():
                    continue
                if self.unread and text.startswith(self.unread):
                    continue
                rec = split(text) if text.startswith('{"type":"run",') else None
                if rec is not None:
                    problem = None
                else:
                    rec, problem = parse_line(text, terminated)
                if problem:
                    self._bad(path, number, problem)
                    if rec is not None and rec.get("type") == "session":
                        sessions.session_line(rec, False)
                    continue
                kind = rec["type"]
                if kind == "run":
                    state = sessions.of(rec)
                    if state.skipping:
                        continue
                    if "pid" not in rec and not interleaved and len(sessions.by_pid) > 1:
                        interleaved = self._interleaved(path, number, rec, state)
                    nvtx, nvtx_path = rec.get("nvtx"), rec.get("nvtx_path")
                    if nvtx is last[0] and nvtx_path is last[1] and nvtx is not None:
                        key, config = last[2]  # the runs of a launch share their ranges
                    else:
                        key, config = configs.get(nvtx, nvtx_path)
                        last = (nvtx, nvtx_path, (key, config))
                    yield "run", Run(rec, state.session, state.devices.get(rec.get("device"), {}),
                                     path, number, config, state.sid, key)
                    continue
                if kind == "session":
                    sessions.session_line(rec, True)
                    yield "session", rec
                    continue
                state = sessions.of(rec)
                if state.skipping:
                    continue
                if kind == "summary":
                    yield "summary", (rec, state.sid)
                elif kind == "device":
                    sessions.device_line(rec)
                    yield "device", (rec, state.sid)
                elif kind == "setup":
                    yield "setup", (rec, state.sid)
                else:
                    yield "message", rec
            if self.progress is not None and not gzipped:
                self.progress(done - start)  # (a pipe has no position to tell)

    def _interleaved(self, path, number, rec, state):
        """Whether a run without a pid shows the lines of several processes interleaved:
        a process writes its launches in increasing order and a launch's runs (of each
        graph node) in run order, so a launch below the last one of the session it is
        given to, or a run of the same launch and node that is not after the last, is
        another's. Said once per file where so."""
        launch, run = rec.get("launch"), rec.get("run")
        if type(launch) is not int or type(run) is not int:
            return False
        graph = rec.get("graph")
        node = graph.get("node") if type(graph) is dict else None
        last = state.last
        state.last = (launch, node, run)
        if last is not None and (launch < last[0] or (launch == last[0] and node == last[1]
                                                      and run <= last[2])):
            self.notes.append(
                f"{path}:{number}: runs of several processes interleave from here (launch "
                f"{launch} run {run} after launch {last[0]} run {last[2]} in one session) "
                "and carry no pid (written before rangeprof recorded it): each is given to "
                "the last session line, which is wrong for some; record with %p in -o")
            return True
        return False

    def report_bad(self, out=None):
        """Prints the bad lines and notes on out (default: sys.stderr as it is now)."""
        out = out or sys.stderr
        for note in self.notes:
            print(f"rangeprof: warning: {note}", file=out)
        for bad in self.bad_lines:
            print(f"rangeprof: warning: {bad}", file=out)
        more = self.bad_count - len(self.bad_lines)
        if more > 0:
            print(f"rangeprof: warning: {more} more bad lines not shown", file=out)


_BLOCK = 1 << 22
# A longer line is no record (the longest rangeprof writes, 1000 NVTX ranges of 4 KiB,
# is 4 MiB): it is passed over, said as one bad line, so that input without newlines
# (/dev/zero, a binary file) is read in bounded memory.
MAX_LINE_BYTES = 64 << 20


def overlong():
    """What a bad line over MAX_LINE_BYTES is said to be."""
    n = MAX_LINE_BYTES
    return f"a line of over {n >> 20} MiB: not a record" if n >= 1 << 20 else \
        f"a line of over {n} bytes: not a record"


def _gzip_errors(reader, path, lines):
    """The lines of a gzip file; where the compressed data is damaged or cut short, what
    was read is kept and one bad line says where it ended."""
    import gzip
    import zlib
    number = 0
    try:
        for item in lines:
            number += 1
            yield item
    except (OSError, EOFError, zlib.error, gzip.BadGzipFile) as e:
        reader._bad(path, number + 1, f"gzip data ends here ({e}); the rest is not read")


def _lines(f, start, end):
    """(line, bytes read so far, terminated) for each line of f from byte start to byte
    end (None: the end), decoded a block at a time (a per-line decode costs more than the
    JSON parse of a short line); the line without its newline, terminated False only for
    a last line that has none. A line over MAX_LINE_BYTES comes as None."""
    if start:
        f.seek(start)
    pos, carry, carried, overlong = start, [], 0, False
    while end is None or pos < end:
        block = f.read(_BLOCK if end is None else min(_BLOCK, end - pos))
        if not block:
            break
        if pos == 0 and block.startswith(UTF8_BOM):
            # An editor's byte order mark: the first record (the session) is read.
            block = block[len(UTF8_BOM):]
            pos += len(UTF8_BOM)
        pos += len(block)
        cut = block.rfind(b"\n") + 1
        if not cut:
            # Kept as a list of blocks: joined once, not again at every block.
            carried += len(block)
            if carried > MAX_LINE_BYTES:
                carry, overlong = [], True
            elif not overlong:
                carry.append(block)
            continue
        if carry or overlong:
            first = block.find(b"\n") + 1
            if overlong or carried + first > MAX_LINE_BYTES:
                yield None, pos, True
                text = block[first:cut]
            else:
                text = b"".join(carry) + block[:cut]
        else:
            text = block[:cut]
        carry, carried, overlong = [], 0, False
        lines = text.decode("utf-8", "replace").split("\n")
        lines.pop()
        for line in lines:
            yield line, pos, True
        rest = block[cut:]
        if rest:
            carry, carried = [rest], len(rest)
    if overlong or carried > MAX_LINE_BYTES:
        yield None, pos, False
    elif carry:
        yield b"".join(carry).decode("utf-8", "replace"), pos, False


def read(paths_or_globs, report="stderr"):
    """Every record of the given files. Bad lines (truncated, not JSON, unknown record
    type, a newer schema, members of the wrong type or out of range) are collected in
    .bad_lines and, unless report is None, printed there as 'FILE:LINE: reason; line
    skipped' (report="stderr": sys.stderr at the time of the call). Records of a session
    whose schema is newer than this reader's are skipped with it. A file that cannot be
    opened is reported as line 0 and skipped."""
    out = Records()
    reader = Reader()
    for path in expand(paths_or_globs):
        for kind, obj in reader.records(path):
            if kind == "run":
                out.runs.append(obj)
            elif kind == "summary":
                out.summaries.append(obj)
            elif kind == "session":
                out.sessions.append(obj)
            elif kind == "device":
                out.devices.append(obj)
            elif kind == "setup":
                out.setups.append(obj)
            else:
                out.messages.append(obj)
    out.files = reader.files
    out.bad_lines, out.bad_count = reader.bad_lines, reader.bad_count
    if report is not None:
        reader.report_bad(sys.stderr if report == "stderr" else report)
    return out


def number(value):
    """A metric value as float (None and JSON null become NaN)."""
    return math.nan if value is None else float(value)
