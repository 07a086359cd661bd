#!/usr/bin/env python3
"""python/tests/fuzz_readers.py [--seconds S] [--target records|ncu|args|both|all] -
Hypothesis fuzzing of the two readers of untrusted files, and of the tools' arguments, as
tests/fuzz/ does for the C code:

- records: JSON Lines made of the recorded fixtures' lines, each fuzzed line a recorded
  one with a member replaced by any JSON value (huge integers, infinities, NaN, strings,
  lists, objects, deep nesting), with bytes changed, cut short, or duplicated keys. The
  file goes through records.read, rangeprof-report (plain, --group-by, --derive, --combine),
  rangeprof-compare (Welch and bootstrap) and rangeprof.load, whose columnar reader must
  give the rows and bad lines the Python reader gives. None may raise; each bad line is
  one line of text naming its file and line.
- ncu: ncu's recorded raw-page CSV with cells replaced by any text, rows cut short or
  dropped, quotes and huge fields inserted: read_ncu_csv may only refuse the file
  (NcuError), compare and rangeprof-compare-ncu may not raise.
- args: command lines of rangeprof-report, rangeprof-compare, rangeprof-compare-ncu and
  rangeprof-plot (each subcommand) on a recorded file, their options given values of any
  text (huge numbers, NaN, expressions, names of columns and metrics, control characters,
  100 000 characters): each tool ends with a status it documents, never an internal error
  or a traceback, and says what it refuses in lines that are printable and quote a value
  shortened (output.said: no 10 000-character run of a value). Outputs go to a temporary
  directory.

Runs batches of examples until the seconds are spent (Hypothesis shrinks a failure and
prints it, and the exit status is 1). python/run_tests.sh runs it briefly; the long runs
are in tests/fuzz/NOTES.md. Needs hypothesis; load's check needs pandas and pyarrow."""
import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
FIXTURES = HERE / "fixtures" / "recorded"

from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from rangeprof import compare, records, report  # noqa: E402
from rangeprof import compare_ncu as ncu  # noqa: E402

try:
    import pandas  # noqa: F401
    import pyarrow  # noqa: F401
    from rangeprof import frame
except ImportError:
    frame = None

RECORDED = [l for name in ("vadd.jsonl", "graph_capture.jsonl", "matmul.jsonl", "clocks.jsonl")
            for l in (FIXTURES / name).read_text().splitlines()]
HEADER = (FIXTURES / "vadd.jsonl").read_text().splitlines()[:2]  # session, device
RUNS = [l for l in RECORDED if l.startswith('{"type":"run"')]
CSV = (FIXTURES / "vadd.ncu.csv").read_text().splitlines(keepends=True)
WORK = Path(tempfile.mkdtemp(prefix="rangeprof-fuzz-"))

# JSON values of every kind, including what JSON writers should not write.
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=10 ** 18, max_value=10 ** 400),
    st.floats(allow_nan=True, allow_infinity=True), st.floats(min_value=1e300, max_value=1.7e308),
    st.text(max_size=20))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) |
                      st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12)


def _paths(obj, prefix=()):
    """Every member path of a parsed record."""
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, prefix + (i,))


def _set(obj, path, value):
    if not path:
        return value
    parent = obj
    for k in path[:-1]:
        parent = parent[k]
    parent[path[-1]] = value
    return obj


@st.composite
def fuzzed_line(draw, base=None):
    """A recorded line (base, when given: the next run of the launch before it, whose
    parse starts from its "run" member) changed."""
    line = base if base is not None else draw(st.sampled_from(RECORDED))
    how = draw(st.sampled_from(["member", "member", "bytes", "cut", "nest", "duplicate",
                                "big", "as is", "splice", "config", "control", "pid"]))
    if how == "splice":  # two records on one line: a lost newline, or a CR between them
        return line + draw(st.sampled_from(["", "\r", " ", "\r\r"])) + \
            draw(st.sampled_from(RECORDED))
    if how == "config":  # a range text whose words hold integers no int64 or float holds
        digits = draw(st.sampled_from([1, 19, 20, 309, 400, 5000]))
        word = draw(st.sampled_from(["seed", "n", "step", "Kernel", "Value", "x.y"]))
        sign = draw(st.sampled_from(["", "-"]))
        return line.replace('"text":"', f'"text":"{word}={sign}{"9" * digits} ', 1)
    if how == "control":  # NVTX texts with newlines, tabs, ANSI escapes, NULs
        evil = json.dumps(draw(st.sampled_from(["\n", "\t", "\x1b[2J", "\x1b]0;t\x07",
                                                "\x00", "\u2028", "\r"])))[1:-1]
        return line.replace('"text":"', '"text":"' + evil, 1).replace(
            '"nvtx_path":"', '"nvtx_path":"' + evil, 1)
    if how == "pid":  # a writer's pid, as rangeprof writes it now, of either session
        return line[:-1] + ',"pid":' + draw(st.sampled_from(["1205", "1240", "7", "\"x\"",
                                                             "null", "9" * 30])) + "}"
    if how == "member":
        rec = json.loads(line)
        path = draw(st.sampled_from(list(_paths(rec))))
        rec = _set(rec, path, draw(values))
        compact = draw(st.booleans())  # as rangeprof writes, or with spaces
        return json.dumps(rec, separators=(",", ":") if compact else None)
    if how == "bytes":
        for _ in range(draw(st.integers(1, 4))):
            at = draw(st.integers(0, len(line)))
            line = line[:at] + draw(st.text(max_size=3)) + line[at + draw(st.integers(0, 3)):]
        return line
    if how == "cut":
        return line[:draw(st.integers(0, len(line)))]
    if how == "nest":
        depth = draw(st.sampled_from([10, 600, 5000, 200000]))
        at = line.rfind(",")
        return line[:at] + ',"x":' + "[" * depth + "]" * depth + line[at:]
    if how == "duplicate":
        return line.replace('"type":"run",', '"type":"run","type":"summary",', 1) \
            if draw(st.booleans()) else line.replace('"metrics":', '"metrics":{},"metrics":', 1)
    if how == "big":
        digits = draw(st.sampled_from([19, 20, 309, 400, 5000]))
        return line.replace('"run":', '"run":' + "9" * digits + ",\"x\":", 1) \
            if draw(st.booleans()) else line.replace("sum\":", "sum\":" + "9" * digits + "0,\"y\":", 1)
    return line


# A second process's session (vadd_again.jsonl's), for files of two sessions.
SECOND = (FIXTURES / "vadd_again.jsonl").read_text().splitlines()[:1]


@st.composite
def jsonl(draw):
    """A file's bytes: the header, recorded and fuzzed lines, maybe a second session's
    header among them (appended or interleaved), with CRLF line ends, in an encoding an
    editor or a pipe may give it (a BOM, gzip, UTF-16)."""
    lines = list(HEADER)
    for _ in range(draw(st.integers(1, 6))):
        i = draw(st.integers(0, len(RUNS) - 2))
        lines.append(RUNS[i])
        lines.append(draw(fuzzed_line(RUNS[i + 1] if draw(st.booleans()) else None)))
        if draw(st.integers(0, 9)) == 0:
            lines += SECOND
    last_newline = draw(st.booleans())
    end = draw(st.sampled_from(["\n"] * 5 + ["\r\n"]))
    data = (end.join(lines) + (end if last_newline else "")).encode("utf-8", "surrogatepass")
    encoding = draw(st.sampled_from(["plain"] * 12 + ["bom", "gzip", "utf-16", "utf-16-le"]))
    if encoding == "bom":
        data = b"\xef\xbb\xbf" + data
    elif encoding == "gzip":
        import gzip
        data = gzip.compress(data)
        if draw(st.booleans()):
            data = data[:draw(st.integers(0, len(data)))]
    elif encoding.startswith("utf-16"):
        data = data.decode("utf-8", "replace").encode(encoding)
    return data


def _write(text, name):
    path = WORK / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass"))
    return path


def _lines_of(data):
    """The lines a reader counts in a file's bytes (decompressed where gzip)."""
    if data[:2] == b"\x1f\x8b":
        import gzip
        import zlib
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error):
            return 1 << 62  # cut short: as many as were read, plus the one said
    return data.count(b"\n") + (not data.endswith(b"\n") and bool(data))


def _quiet(main, argv):
    """(status, stdout, stderr) of a tool's _main (which lets exceptions through)."""
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            code = main(argv, out)
        except SystemExit as e:  # argparse's refusals
            code = e.code
    return code, out.getvalue(), err.getvalue()


SMALL_A = None
VARIANTS = [["--json"], ["--group-by", "Annotation,Launch"],
            ["--derive", "x=gpu__time_duration.sum/dram__bytes_write.sum"],
            ["--combine", "--bytes"], ["--bound"], ["--combine", "--csv"],
            ["--group-by", "n,SMClock", "--json"]]


def check_records(text):
    global SMALL_A
    if SMALL_A is None:  # A of the comparisons: a small recorded file (fast to read)
        SMALL_A = _write("\n".join(HEADER + RUNS[:60]) + "\n", "a.jsonl")
    check_records.calls = getattr(check_records, "calls", 0) + 1
    path = _write(text, "fuzz.jsonl")
    n_lines = _lines_of(path.read_bytes())
    recs = records.read(path, report=None)
    # A launch's later runs are parsed from their "run" member on (records._RunSplitter):
    # the same records and bad lines as parse_line on every line.
    split = records._RunSplitter.parse
    records._RunSplitter.parse = lambda self, text: None
    try:
        whole = records.read(path, report=None)
    finally:
        records._RunSplitter.parse = split
    assert [str(b) for b in recs.bad_lines] == [str(b) for b in whole.bad_lines]
    assert [(r.record, r.session_id) for r in recs.runs] == \
        [(r.record, r.session_id) for r in whole.runs]
    for bad in recs.bad_lines:
        assert "\n" not in str(bad) and 0 <= bad.line <= n_lines + 1, str(bad)
        assert bad.line or len(recs.bad_lines) == 1, str(bad)  # line 0: the file as a whole
    variant = VARIANTS[check_records.calls % len(VARIANTS)]
    for argv in ([str(path)], [str(path)] + variant):
        code, out, err = _quiet(report._main, argv)
        assert code in (0, 1, 2) and "Traceback" not in err, (argv, err)
        if "--csv" not in argv and "--json" not in argv:
            # Text output: no character that could forge a row or drive the terminal.
            assert all(c.isprintable() for c in out.replace("\n", "")), repr(out)
        assert all(c.isprintable() for c in err.replace("\n", "")), repr(err)
    method = ("welch", "bootstrap")[check_records.calls % 2]
    for a, b in ((SMALL_A, path), (path, path)):
        code, _, err = _quiet(compare._main, [str(a), str(b), "--method", method])
        assert code in compare.EXIT.values() and "Traceback" not in err, (code, err)
    code, _, err = _quiet(ncu._main, [str(path), str(FIXTURES / "vadd.ncu.csv")])
    assert code in (0, 2)
    if frame is not None:
        _check_load(path, recs)


def _check_load(path, recs):
    """load()'s columnar reader against the Python reader: the same rows, the same bad
    lines (except summary lines, which load() does not read)."""
    df = frame.load(path, report=None)
    python = frame.load(path, report=None, derive=["zz_fuzz=1"])
    python = python[python["Metric"] != "zz_fuzz"]
    assert len(df) == len(python), (len(df), len(python))
    # A run's metrics come in the order first seen in the file there, in the record's
    # order here: the same rows, compared in (line, metric) order.
    df, python = (d.assign(_m=d["Metric"].astype(str)).sort_values(["Line", "_m"], kind="stable")
                  .reset_index(drop=True) for d in (df, python))
    for c in ("Annotation", "Kernel", "Metric", "Launch", "Line", "Run", "GPU", "Grid"):
        a = ["" if pandas.isna(v) else str(v) for v in df[c].astype(object)]
        b = ["" if pandas.isna(v) else str(v) for v in python[c].astype(object)]
        assert a == b, c
    a, b = df["Value"].to_numpy(), python["Value"].to_numpy()
    assert ((a == b) | (pandas.isna(a) & pandas.isna(b))).all()
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":  # the lines are those of the decompressed text
        import gzip
        import zlib
        with gzip.open(path) as f:
            data = b""
            try:
                while True:
                    part = f.read1(1 << 16)
                    if not part:
                        break
                    data += part
            except (OSError, EOFError, zlib.error):
                pass
    summaries = {i + 1 for i, l in enumerate(data.split(b"\n"))
                 if l.startswith(b'{"type":"summary",')}
    last = data.count(b"\n") + 1 if not data.endswith(b"\n") else None
    # load() does not read summary lines, except the file's last one cut short
    expected = [str(b) for b in recs.bad_lines if b.line not in summaries or b.line == last]
    assert sorted(df.attrs["bad_lines"]) == sorted(expected), (df.attrs["bad_lines"], expected)


@st.composite
def ncu_csv(draw):
    import csv
    head = [l for l in CSV if l.startswith("==")]
    rows = list(csv.reader([l for l in CSV if not l.startswith("==")]))
    for _ in range(draw(st.integers(1, 6))):
        i = draw(st.integers(0, len(rows) - 1))
        how = draw(st.sampled_from(["cell", "cell", "cut", "drop", "quote", "huge"]))
        if how == "cell" and rows[i]:
            rows[i][draw(st.integers(0, len(rows[i]) - 1))] = draw(
                st.text(max_size=12) | st.sampled_from(["nan", "inf", "-inf", "1e400", "1,2,3",
                                                        "(1, 1)", "9" * 400, "ns", "furlong"]))
        elif how == "cut":
            rows[i] = rows[i][:draw(st.integers(0, len(rows[i])))]
        elif how == "drop":
            rows.pop(i)
            if not rows:
                rows = [[]]
    text = io.StringIO()
    csv.writer(text, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    body = text.getvalue()
    if draw(st.booleans()):
        at = draw(st.integers(0, len(body)))
        body = body[:at] + draw(st.sampled_from(['"', '""', "\n", "x" * 140000, "\x00", ","])) + body[at:]
    if draw(st.booleans()):
        body = body[:draw(st.integers(0, len(body)))]
    return "".join(head) + body


# -- the tools' arguments ---------------------------------------------------------------

# Values an option may be given: any text, and the kinds of text the tools parse.
arg_values = st.one_of(
    st.text(max_size=30),
    st.sampled_from(["nan", "inf", "-inf", "-1", "0", "1", "0.5", "1e400", "1e-400",
                     "9" * 400, "x" * 100000, "", ",", "=", ",,", "a=b", "x=1/0",
                     "x[ns]=gpu__time_duration.sum*2", "tflops=2*n**3/gpu__time_duration.sum",
                     "x=" + "(" * 300 + "1" + ")" * 300, "x=" + "+".join(["1"] * 5000),
                     "sum", "max", "metric=max", "gpu__time_duration.sum=min", "n", "dtype",
                     "Annotation", "Kernel,GPU", "Launch", "SMClock", "n=4096",
                     "vadd n=4096", "gpu__time_duration.sum", "dram__bytes_read.sum", "all",
                     "2*n**3", "roofline", "timing", "unmatched,unjudged", "sessions",
                     "welch", "bootstrap", "\x1b[2J", "a\nb", "\x00", "--json", "-"]),
    st.builds(lambda a, b: a + b, st.sampled_from(["x=", "n=", "", "gpu__time_duration.sum"]),
              st.text(max_size=12)))

# tool -> (main, its options taking a value, its flags, positional arguments); a value
# of 'FILE' is the recorded file, 'OUT' an output in the temporary directory.
_TOOLS = {
    "report": (report._main, ["--metric", "--group-by", "--derive", "--combine",
                              "--normalize-against", "--preset", "--flops", "--peak-flops",
                              "--peak-bandwidth", "--alpha"],
               ["--csv", "--json", "--bound", "--bytes", "--by-rank", "--combine"],
               ["FILE"]),
    "compare": (compare._main, ["--metric", "--method", "--alpha", "--threshold",
                                "--min-runs", "--allow", "--higher-is-better",
                                "--lower-is-better"], ["--csv", "--json"], ["FILE", "FILE"]),
    "compare-ncu": (ncu._main, ["--ncu"], ["--csv", "--json"], ["FILE", "NCU"]),
}
_PLOTS = {
    "sweep": (["--metric", "--x", "--variant", "--row", "--col", "--derive", "--combine"],
              ["--bar"], ["FILE"]),
    "distribution": (["--metric", "--group-by"], [], ["FILE"]),
    "roofline": (["--flops", "--peak-flops", "--peak-bandwidth"], [], ["FILE"]),
    "ab": (["--metric"], [], ["FILE", "FILE"]),
    "by-rank": (["--metric", "--alpha"], [], ["FILE"]),
}


# Values each option is meant to take, so that most command lines get past the parser to
# the reading, grouping, deriving and plotting (where the values meet the file's).
_METRICS = ["gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum", "all",
            "gpu__time_duration.sum,dram__bytes_read.sum", "x", "smsp__issue_inst0.sum"]
_PLAUSIBLE = {
    "--metric": _METRICS, "--higher-is-better": _METRICS, "--lower-is-better": _METRICS,
    "--group-by": ["Annotation", "n", "Kernel,GPU", "Annotation,Launch", "Run", "n,SMClock",
                   "Host", "Grid"],
    "--x": ["n", "Annotation", "Run", "Launch"], "--variant": ["Kernel", "GPU", "n"],
    "--row": ["Kernel", "n"], "--col": ["GPU", "Run"],
    "--derive": ["t[us]=gpu__time_duration.sum/1e3", "f=2*n**3/gpu__time_duration.sum",
                 "bw=dram__bytes_read.sum/gpu__time_duration.sum", "z=1/(n-4096)",
                 "gpu__time_duration.sum=1", "l=log(n)", "p=n**n"],
    "--combine": ["sum", "max", "mean", "gpu__time_duration.sum=max", "first,last"],
    "--normalize-against": ["vadd n=4096", "n=4096", "n=1", "vadd"],
    "--preset": ["roofline", "compute", "memory"], "--flops": ["2*n**3", "n", "n*1e300", "0"],
    # Not 1e300 FLOP/s nor 1e-300 bytes/s yet: the roofline's known overflow
    # (test_plots.py's strict xfail, test_a_roof_no_gpu_has_is_refused_naming_it) would
    # stop every run; they come back with its fix.
    "--peak-flops": ["1e12", "1", "1e24"], "--peak-bandwidth": ["3e12", "1"],
    "--alpha": ["0.05", "0.999", "1e-300"], "--method": ["welch", "bootstrap"],
    "--threshold": ["0", "5", "1e300"], "--min-runs": ["2", "5", "1000000"],
    "--allow": ["unmatched", "unjudged,sessions", "gpus"], "--ncu": ["/bin/false", "ncu"],
}


def _value(draw, option):
    plausible = _PLAUSIBLE.get(option)
    if plausible and draw(st.integers(0, 9)) < 7:
        return draw(st.sampled_from(plausible))
    return draw(arg_values)


@st.composite
def command_line(draw):
    """(tool, argv): a tool's positional arguments, then options with fuzzed values and
    flags, maybe a fuzzed positional argument or a bare fuzzed word."""
    tool = draw(st.sampled_from(sorted(_TOOLS) + ["plot"] * 2))
    if tool == "plot":
        kind = draw(st.sampled_from(sorted(_PLOTS)))
        options, flags, positional = _PLOTS[kind]
        argv = [kind] + list(positional)
    else:
        _, options, flags, positional = _TOOLS[tool]
        argv = list(positional)
    for _ in range(draw(st.integers(0, 4))):
        if flags and draw(st.integers(0, 3)) == 0:
            argv.append(draw(st.sampled_from(flags)))
        else:
            option = draw(st.sampled_from(options))
            argv += [option, _value(draw, option)]
    if tool == "plot":
        if kind == "sweep" and "--x" not in argv:
            argv += ["--x", _value(draw, "--x")]
        argv += ["-o", draw(st.sampled_from(["OUT/p.png"] * 6 + [
            "OUT/p.svg", "OUT/p", "OUT", "OUT/none/p.png", "OUT/p.xyz"]))]
    how = draw(st.sampled_from(["as is"] * 12 + ["positional", "word", "glob"]))
    if how == "positional" and argv:
        i = draw(st.integers(0, len(argv) - 1))
        argv[i] = draw(arg_values)
    elif how == "word":
        argv.insert(draw(st.integers(0, len(argv))), draw(arg_values))
    elif how == "glob":
        argv.append(draw(st.sampled_from(["OUT/*.jsonl", "OUT/[", "OUT/**", "OUT/nothing"])))
    return tool, argv


def check_args(case):
    tool, argv = case
    out_dir = WORK / "args"
    out_dir.mkdir(exist_ok=True)
    subst = {"FILE": str(FIXTURES / "vadd.jsonl"), "NCU": str(FIXTURES / "vadd.ncu.csv")}
    argv = [subst.get(a, a.replace("OUT", str(out_dir)) if a.startswith("OUT") else a)
            for a in argv]
    cwd = os.getcwd()
    os.chdir(out_dir)  # a relative output a value names lands here
    try:
        if tool == "plot":
            from rangeprof import plots
            err = io.StringIO()
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                try:
                    code = plots._main(argv)
                except SystemExit as e:
                    code = e.code
            err = err.getvalue()
        else:
            code, _, err = _quiet(_TOOLS[tool][0], argv)
    finally:
        os.chdir(cwd)
    assert code in (0, 1, 2, 3, 4), (tool, code, err[-2000:])
    assert "internal error" not in err and "Traceback" not in err, (tool, err[-2000:])
    assert all(c.isprintable() for c in err.replace("\n", "")), repr(err[-2000:])
    # A refused value is quoted shortened (output.said), never echoed whole.
    assert "x" * 10000 not in err and "9" * 10000 not in err, (tool, err[:300])


VADD = (FIXTURES / "vadd.jsonl").read_text().splitlines()
# One run of each recorded launch: every kernel of the CSV, read fast.
SMALL_VADD = HEADER + [l for l in VADD if l.startswith('{"type":"run"') and '"run":0,' in l]


def check_ncu(text):
    global SMALL_JSONL
    if "SMALL_JSONL" not in globals():
        SMALL_JSONL = _write("\n".join(SMALL_VADD) + "\n", "small_vadd.jsonl")
    path = _write(text, "fuzz.ncu.csv")
    bad = []
    try:
        theirs = ncu.read_ncu_csv(path, bad)
    except ncu.NcuError:
        theirs = {}
    for line in bad:
        assert "\n" not in line
    if not hasattr(check_ncu, "rp"):
        with contextlib.redirect_stderr(io.StringIO()):
            check_ncu.rp = ncu.read_rangeprof(str(SMALL_JSONL))[1]
    ncu.compare(check_ncu.rp, theirs, [])
    code, _, err = _quiet(ncu._main, [str(SMALL_JSONL), str(path)])
    assert code in (0, 2) and "Traceback" not in err


def run(target, seconds, batch):
    common = dict(deadline=None, database=None, derandomize=False,
                  suppress_health_check=list(HealthCheck), max_examples=batch)
    test = {"records": settings(**common)(given(jsonl())(check_records)),
            "ncu": settings(**common)(given(ncu_csv())(check_ncu)),
            "args": settings(**common)(given(command_line())(check_args))}[target]
    end, examples, batches = time.monotonic() + seconds, 0, 0
    while time.monotonic() < end:
        test()
        examples += batch
        batches += 1
    return examples


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=20, help="per target (default 20)")
    p.add_argument("--target", choices=("records", "ncu", "args", "both", "all"),
                   default="both", help="both: records and ncu; all: the three")
    p.add_argument("--batch", type=int, default=50, help="examples per Hypothesis run")
    args = p.parse_args()
    targets = {"both": ["records", "ncu"], "all": ["records", "ncu", "args"]}.get(
        args.target, [args.target])
    status = 0
    for target in targets:
        start = time.monotonic()
        try:
            n = run(target, args.seconds, args.batch)
        except Exception:  # Hypothesis has printed the falsifying example
            import traceback
            traceback.print_exc()
            print(f"fuzz_readers {target}: FINDING", flush=True)
            status = 1
            continue
        took = time.monotonic() - start
        print(f"fuzz_readers {target}: {n} examples in {took:.0f} s ({n / took:.0f}/s), "
              "no finding", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
