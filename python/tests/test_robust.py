"""Hostile and mistaken input, as issue 21 found it, on copies of the recorded fixtures:
one wrong member in one line of 1263 is reported as FILE:LINE with the member and the
reason, and skipped, by every tool and by rangeprof.load, never a traceback; arguments
that would make a table silently wrong are refused in one line with exit status 2."""
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from rangeprof import compare, records, report
from rangeprof import compare_ncu as ncu

TIME = "gpu__time_duration.sum"
RUN_LINE = 3                     # vadd.jsonl's first run record (1-based line number)
VADD_RUNS = 1200


def mutated(damaged, edit, line=RUN_LINE, name="vadd.jsonl"):
    """A copy of a recording whose line `line` went through edit: a function of the parsed
    record (returning a record) or of the text (when it takes and returns a str)."""
    def change(lines):
        out = list(lines)
        text = out[line - 1]
        try:
            result = edit(json.loads(text))
            # As rangeprof writes lines (no spaces): load() gives such run lines to pyarrow.
            out[line - 1] = (result if isinstance(result, str) else
                             json.dumps(result, separators=(",", ":"))) + "\n"
        except TypeError:
            out[line - 1] = edit(text)
        return out
    return damaged(name, change)


def text_edit(old, new):
    def edit(text):
        if not isinstance(text, str):
            raise TypeError
        assert old in text, old
        return text.replace(old, new, 1)
    return edit


def set_member(path, value):
    """An edit setting a member (path 'a/b', list indexes as numbers) of the record."""
    def edit(rec):
        if isinstance(rec, str):
            raise TypeError
        obj = rec
        keys = path.split("/")
        for k in keys[:-1]:
            obj = obj[k] if not isinstance(obj, list) else obj[int(k)]
        if isinstance(obj, list):
            obj[int(keys[-1])] = value
        else:
            obj[keys[-1]] = value
        return rec
    return edit


# (id, edit, line, words the bad-line message holds)
BAD_LINES = [
    ("clock string", set_member("sm_clock_hz", "fast"), RUN_LINE, ["'sm_clock_hz'", "a string"]),
    ("metric string", set_member(f"metrics/{TIME}", "x"), RUN_LINE, [f"'metrics.{TIME}'", "a string"]),
    ("metric object", set_member(f"metrics/{TIME}", {"a": 1}), RUN_LINE, [f"'metrics.{TIME}'", "an object"]),
    ("device list", set_member("device", [0]), RUN_LINE, ["'device'", "a list"]),
    ("units list", set_member("units", [1]), RUN_LINE, ["'units'", "a list"]),
    ("device record index list", set_member("index", [0]), 2, ["device record", "'index'", "a list"]),
    ("nvtx text number", set_member("nvtx/0/text", 5), RUN_LINE, ["'nvtx[0].text'", "an integer"]),
    ("metric of 400 digits", text_edit('"gpu__time_duration.sum":2304', '"gpu__time_duration.sum":' + "9" * 400),
     RUN_LINE, [f"'metrics.{TIME}'", "400 digits"]),
    ("launch of 400 digits", text_edit('"launch":4,', '"launch":' + "9" * 400 + ","), RUN_LINE,
     ["'launch'", "400 digits"]),
    ("integer of 5000 digits", text_edit('"gpu__time_duration.sum":2304', '"gpu__time_duration.sum":' + "9" * 5000),
     RUN_LINE, ["not JSON", "4300"]),
    ("100000 nested brackets", text_edit('"passes":1,', '"passes":1,"deep":' + "[" * 100000 + "]" * 100000 + ","),
     RUN_LINE, ["nested too deeply"]),
    ("Infinity", text_edit('"gpu__time_duration.sum":2304', '"gpu__time_duration.sum":Infinity'),
     RUN_LINE, ["'Infinity' is not a JSON number"]),
    ("-Infinity", text_edit('"sm_clock_hz":1936414930.5555556', '"sm_clock_hz":-Infinity'),
     RUN_LINE, ["'-Infinity' is not a JSON number"]),
    ("1e400", text_edit('"gpu__time_duration.sum":2304', '"gpu__time_duration.sum":1e400'),
     RUN_LINE, [f"'metrics.{TIME}' is not finite"]),
    ("NaN", text_edit('"temperature_c":36', '"temperature_c":NaN'), RUN_LINE,
     ["'NaN' is not a JSON number"]),
    ("kernel number", set_member("kernel", 5), RUN_LINE, ["'kernel'", "a string"]),
    ("grid strings", set_member("grid", ["4", 1, 1]), RUN_LINE, ["'grid[0]'"]),
    ("throttle number", set_member("throttle_reasons", [7]), RUN_LINE, ["'throttle_reasons[0]'"]),
    # A name from the file is said escaped and cut: the message stays one line (a finding
    # of tests/fuzz_readers.py: a metric named "\n" split the bad-line message in two).
    ("metric named with a newline", text_edit('"gpu__time_duration.sum":2304',
                                              '"gpu__time_duration.sum":2304,"a\\nb":false'),
     RUN_LINE, ["'metrics.a\\nb'", "true or false"]),
    ("metric of a 300-character name", text_edit('"gpu__time_duration.sum":2304',
                                                 '"gpu__time_duration.sum":2304,"' + "m" * 300 + '":"x"'),
     RUN_LINE, ["mmm...' should be", "a string"]),
    ("summary stable string", set_member(f"metrics/{TIME}/stable", "yes"), 23,
     ["summary record", f"'metrics.{TIME}.stable'"]),
]


def _no_traceback(err):
    assert "Traceback" not in err and "internal error" not in err, err


def _bad_line_said(err, path, line, words):
    said = [l for l in err.splitlines() if f"{path}:{line}:" in l]
    assert len(said) == 1, err
    for w in words:
        assert w in said[0], (w, said[0])
    assert said[0].endswith("; line skipped")


def _rows(text):
    return json.loads(text) if text.strip() else []


@pytest.mark.parametrize("case", BAD_LINES, ids=[c[0] for c in BAD_LINES])
def test_one_bad_line_is_said_and_skipped_by_every_tool(damaged, recorded, capsys, case):
    _, edit, line, words = case
    path = mutated(damaged, edit, line)
    if line == 23:  # the edit is of a summary record: the runs are all there
        assert json.loads(open(recorded("vadd.jsonl")).readlines()[22])["type"] == "summary"
    lost = 1 if line == RUN_LINE else 0

    out = io.StringIO()
    assert report.main([str(path), "--metric", TIME, "--json"], out=out) == 0
    err = capsys.readouterr().err
    _no_traceback(err)
    if line == 23:
        # rangeprof-report takes its statistics from the runs: summary lines are not
        # read (a tenth of a big file's time), so a damaged one is compare's to say.
        assert err == ""
    else:
        _bad_line_said(err, path, line, words)
    rows = _rows(out.getvalue())
    # A bad device record leaves its session's runs without a GPU name, nothing more.
    assert sum(r["NumRuns"] for r in rows) == VADD_RUNS - lost

    out = io.StringIO()
    assert compare.main([str(recorded("vadd.jsonl")), str(path), "--json"], out=out) == 0
    err = capsys.readouterr().err
    _no_traceback(err)
    _bad_line_said(err, path, line, words)
    assert sum(r["RunsB"] for r in _rows(out.getvalue())) == VADD_RUNS - lost

    out = io.StringIO()
    assert ncu.main([str(path), str(recorded("vadd.ncu.csv")), "--json"], out=out) == 0
    err = capsys.readouterr().err
    _no_traceback(err)
    _bad_line_said(err, path, line, words)

    recs = records.read(path, report=None)
    assert len(recs.runs) == VADD_RUNS - lost and len(recs.bad_lines) == 1


@pytest.mark.parametrize("case", BAD_LINES, ids=[c[0] for c in BAD_LINES])
def test_load_says_and_skips_the_same_bad_line(damaged, capsys, case):
    pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    import rangeprof
    _, edit, line, words = case
    path = mutated(damaged, edit, line)
    df = rangeprof.load(path)
    err = capsys.readouterr().err
    _no_traceback(err)
    if line == 23:
        # load() does not read summary lines (rangeprof/frame.py says why)
        assert df.attrs["bad_lines"] == [] and err == ""
        return
    _bad_line_said(err, path, line, words)
    assert df.attrs["bad_lines"] == [l.split("warning: ", 1)[1] for l in err.splitlines()]
    assert df.groupby(["Launch", "Run"], observed=True).ngroups == VADD_RUNS - (line == RUN_LINE)


@pytest.mark.parametrize("plot", ["distribution", "sweep"])
def test_plots_skip_the_bad_line_too(damaged, tmp_path, capsys, plot):
    pytest.importorskip("matplotlib")
    from rangeprof import plots
    path = mutated(damaged, set_member("sm_clock_hz", "fast"))
    argv = [plot, str(path), "-o", str(tmp_path / "p.png")] + (["--x", "n"] if plot == "sweep" else [])
    assert plots.main(argv) == 0
    err = capsys.readouterr().err
    _no_traceback(err)
    _bad_line_said(err, path, RUN_LINE, ["'sm_clock_hz'"])


def _scaled_runs(damaged, factor=None, value=None, where="vadd n=16777216"):
    def edit(lines):
        out = []
        for l in lines:
            rec = json.loads(l)
            if rec["type"] == "run" and rec["nvtx_path"] == where:
                v = rec["metrics"][TIME]
                rec["metrics"][TIME] = value(rec) if value else v * factor
            out.append(json.dumps(rec) + "\n")
        return out
    return damaged("vadd.jsonl", edit)


def test_values_near_the_float_limit_are_summarised(damaged, capsys):
    """Runs of 1.7e308 +- the recorded spread: their sum and squares overflow a float,
    yet the mean, median and spread come out (scaled by a power of two inside)."""
    path = _scaled_runs(damaged, value=lambda rec: 1.7e308 * (rec["metrics"][TIME] / 45000) / 1.1)
    out = io.StringIO()
    assert report.main([str(path), "--metric", TIME, "--json"], out=out) == 0
    _no_traceback(capsys.readouterr().err)
    big = next(r for r in json.loads(out.getvalue()) if r["Annotation"] == "vadd n=16777216")
    assert big["NumRuns"] == 400 and 1e308 < big["AvgValue"] < 1.7e308
    assert big["MinValue"] <= big["MedianValue"] <= big["MaxValue"]
    assert 0 < big["RelativeStdDevPct"] < 2


def test_opposite_values_near_the_limit_and_compare(damaged, recorded, capsys):
    """Alternating +-1.7e308 (their differences are infinite) in B: compare's ratio,
    Welch's t and the t quantile of its interval meet infinities and NaN, and say so in
    blank cells, not a traceback; the other kernels are compared as usual."""
    path = _scaled_runs(damaged, value=lambda rec: 1.7e308 * (1 if rec["run"] % 2 else -1))
    for method in ("welch", "bootstrap"):
        out = io.StringIO()
        code = compare.main([str(recorded("vadd.jsonl")), str(path), "--json", "--method", method],
                            out=out)
        assert code in (0, 1)
        _no_traceback(capsys.readouterr().err)
        rows = {r["Annotation"]: r for r in json.loads(out.getvalue())}
        assert rows["vadd n=4096"]["Verdict"] == "same"
        assert rows["vadd n=16777216"]["RunsB"] == 400


def test_huge_finite_values_in_b_make_an_infinite_df(damaged, recorded, capsys):
    """B's values 1e300 times A's: the Welch degrees of freedom and the t quantile meet
    an infinity (variances that overflow or underflow), which compare survives."""
    path = _scaled_runs(damaged, factor=1e300)
    out = io.StringIO()
    assert compare.main([str(recorded("vadd.jsonl")), str(path), "--json"], out=out) == 1
    _no_traceback(capsys.readouterr().err)
    big = next(r for r in json.loads(out.getvalue()) if r["Annotation"] == "vadd n=16777216")
    assert big["Verdict"] == "REGRESSION" and big["Ratio"] == pytest.approx(1e300, rel=1e-9)


def test_a_directory_where_a_file_belongs(recorded, tmp_path, capsys):
    """A directory named like a JSONL inside the directory given, a directory given as
    ncu's CSV, a directory given as the plot's output: each one line, no traceback."""
    (tmp_path / "sub.jsonl").mkdir()
    (tmp_path / "vadd.jsonl").write_bytes(recorded("vadd.jsonl").read_bytes())
    out = io.StringIO()
    assert report.main([str(tmp_path), "--metric", TIME, "--json"], out=out) == 0
    assert report.main([str(tmp_path / "*.jsonl"), "--metric", TIME, "--json"], out=io.StringIO()) == 0
    _no_traceback(capsys.readouterr().err)
    assert sum(r["NumRuns"] for r in json.loads(out.getvalue())) == VADD_RUNS
    assert ncu.main([str(recorded("vadd.jsonl")), str(tmp_path)], out=io.StringIO()) == 2
    err = capsys.readouterr().err
    _no_traceback(err)
    assert err.count("\n") == 1 and "Is a directory" in err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert report.main([str(empty)], out=io.StringIO()) == 2
    err = capsys.readouterr().err
    assert err == f"rangeprof-report: error: no *.jsonl file in directory '{empty}'\n"


def _as_nobody(call):
    """(call's return value, what it wrote to sys.stderr), run in a forked child that
    has become the user nobody: root reads any file, nobody does not (CI runs as root)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never back into pytest
        code = 99
        try:
            os.close(r)
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            sys.stderr = os.fdopen(w, "w")
            code = call()
            sys.stderr.flush()
        finally:
            os._exit(code)
    os.close(w)
    with os.fdopen(r) as f:
        err = f.read()
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), err


def test_unreadable_file_is_said_and_the_others_read(recorded, tmp_path, capsys):
    # In a folder anyone may enter (pytest's own is root's alone), the file itself locked.
    folder = Path(tempfile.mkdtemp(prefix="rangeprof-locked-"))
    try:
        folder.chmod(0o755)
        path = folder / "locked.jsonl"
        path.write_bytes(recorded("vadd.jsonl").read_bytes())
        path.chmod(0)
        args = [str(path), str(recorded("vadd_again.jsonl")), "--json"]
        if os.geteuid() == 0:
            rc, err = _as_nobody(lambda: report.main(args, out=io.StringIO()))
        else:
            rc, err = report.main(args, out=io.StringIO()), capsys.readouterr().err
    finally:
        shutil.rmtree(folder)
    assert rc == 0, err
    assert f"{path}:0: cannot be read (Permission denied)" in err


# -- ncu's CSV --------------------------------------------------------------------------

def test_truncated_ncu_csv(damaged, recorded, capsys):
    """Cut in the middle of a data row (its last kernel half written), or after the
    header: the rows that are there are compared, or the error says there is nothing."""
    half = damaged("vadd.ncu.csv", lambda ls: ls[:-1] + [ls[-1][: len(ls[-1]) // 2]])
    out = io.StringIO()
    assert ncu.main([str(recorded("vadd.jsonl")), str(half), "--json"], out=out) == 0
    _no_traceback(capsys.readouterr().err)
    assert json.loads(out.getvalue())
    header_only = damaged("vadd.ncu.csv", lambda ls: ls[:4])
    assert ncu.main([str(recorded("vadd.jsonl")), str(header_only)], out=io.StringIO()) == 2
    err = capsys.readouterr().err
    _no_traceback(err)
    assert err == "rangeprof-compare-ncu: error: no kernel of the JSONL is in ncu's output\n"
    no_header = damaged("vadd.ncu.csv", lambda ls: ls[:3])
    assert ncu.main([str(recorded("vadd.jsonl")), str(no_header)], out=io.StringIO()) == 2
    assert "no 'Kernel Name' column" in capsys.readouterr().err


def test_oversized_ncu_csv_field(damaged, recorded, capsys):
    """A field over the csv module's 128 KiB limit in one kernel row: that row is said
    with its line and skipped; the other 14 kernels are compared."""
    def huge(lines):
        out = list(lines)
        assert ":vadd n=4096:" in out[6]
        out[6] = out[6].replace(":vadd n=4096:", ":vadd n=4096" + "x" * 200000 + ":", 1)
        return out
    path = damaged("vadd.ncu.csv", huge)
    out = io.StringIO()
    assert ncu.main([str(recorded("vadd.jsonl")), str(path), "--json"], out=out) == 0
    err = capsys.readouterr().err
    _no_traceback(err)
    assert f"{path}:7: field larger than field limit" in err
    times = [r for r in json.loads(out.getvalue()) if r["Metric"] == TIME]
    assert sum(r["NcuRuns"] for r in times) == 14


def test_missing_ncu_binary_leaves_no_file(recorded, tmp_path, capsys, monkeypatch):
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    code = ncu.main([str(recorded("vadd.jsonl")), "--ncu", str(tmp_path / "no-ncu"), "--run",
                     "--", "python3", "x.py"], out=io.StringIO())
    err = capsys.readouterr().err
    assert code == 2
    _no_traceback(err)
    assert err == (f"rangeprof-compare-ncu: error: --ncu '{tmp_path / 'no-ncu'}': not found "
                   "(not an executable file); install Nsight Compute or give --ncu PATH\n")
    assert list(tmp_path.iterdir()) == []


def test_ncu_that_cannot_start_leaves_no_file(recorded, tmp_path, capsys, monkeypatch):
    """An 'ncu' that exists but cannot be executed (no interpreter for its #! line)."""
    import tempfile
    work = tmp_path / "tmp"
    work.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(work))
    fake = tmp_path / "ncu"
    fake.write_text("#!/nonexistent/interpreter\n")
    fake.chmod(0o755)
    code = ncu.main([str(recorded("vadd.jsonl")), "--ncu", str(fake), "--run", "true"],
                    out=io.StringIO())
    err = capsys.readouterr().err
    assert code == 2 and "cannot run" in err
    _no_traceback(err)
    assert list(work.iterdir()) == []


def test_ncu_unknown_units_stop_that_metric_and_say_why(damaged, recorded, capsys):
    """ncu's unit of the time column made 'furlong': the time is not compared (it was,
    as if in nanoseconds), the byte counts still are, and a note says why."""
    def furlong(lines):
        out = list(lines)
        import csv
        rows = list(csv.reader([l for l in out if not l.startswith("==")]))
        col = rows[0].index(TIME)
        rows[1][col] = "furlong"
        text = io.StringIO()
        csv.writer(text, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
        return [l for l in out if l.startswith("==")] + [text.getvalue()]
    out = io.StringIO()
    assert ncu.main([str(recorded("vadd.jsonl")), str(damaged("vadd.ncu.csv", furlong)), "--json"],
                    out=out) == 0
    err = capsys.readouterr().err
    rows = json.loads(out.getvalue())
    assert rows and not any(r["Metric"] == TIME for r in rows)
    notes = [l for l in err.splitlines() if "not compared" in l]
    assert len(notes) == 3 and all("'furlong' cannot be converted" in n and "nanosecond" in n
                                   for n in notes)


# -- arguments ---------------------------------------------------------------------------

def _refused(main, argv, capsys, words, code=2):
    assert main(argv, out=io.StringIO()) == code if main is not _plot_main else main(argv) == code
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    for w in words:
        assert w in err, (w, err)


def _plot_main(argv):
    from rangeprof import plots
    return plots.main(argv)


@pytest.mark.parametrize("alpha", ["nan", "-1", "0", "1", "inf", "x"])
def test_invalid_alpha_is_refused(recorded, capsys, alpha):
    with pytest.raises(SystemExit) as e:
        compare.main([str(recorded("vadd.jsonl")), str(recorded("vadd_again.jsonl")),
                      "--alpha", alpha])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"argument --alpha: expected a number > 0 and < 1, not '{alpha}'" in err


def test_negative_threshold_is_refused(recorded, capsys):
    with pytest.raises(SystemExit) as e:
        compare.main([str(recorded("vadd.jsonl")), str(recorded("vadd.jsonl")), "--threshold", "-5"])
    assert e.value.code == 2 and "expected a number >= 0" in capsys.readouterr().err


def test_unknown_group_by_column_is_refused(recorded, capsys):
    """It pooled every kernel into one row."""
    assert report.main([str(recorded("vadd.jsonl")), "--group-by", "Anotation"],
                       out=io.StringIO()) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'Anotation'" in err and "Annotation" in err


def test_a_derived_metric_undefined_for_some_runs_is_counted(recorded, capsys):
    """Time per byte written: vadd n=4096 writes 0 bytes in most runs. Those runs are
    counted and said; the rows have the others."""
    runs = [json.loads(l) for l in open(recorded("vadd.jsonl"))]
    zero = sum(1 for r in runs if r["type"] == "run" and r["metrics"]["dram__bytes_write.sum"] == 0)
    assert 0 < zero < VADD_RUNS
    out = io.StringIO()
    assert report.main([str(recorded("vadd.jsonl")), "--derive",
                        f"per_byte={TIME}/dram__bytes_write.sum", "--metric", "per_byte",
                        "--json"], out=out) == 0
    err = capsys.readouterr().err
    assert f"--derive per_byte: undefined in {zero} of {VADD_RUNS} runs" in err
    assert sum(r["NumRuns"] for r in json.loads(out.getvalue())) == VADD_RUNS - zero


def test_a_derived_name_that_shadows_a_metric_is_refused(recorded, capsys):
    _refused(report.main, [str(recorded("vadd.jsonl")), "--derive", f"{TIME}={TIME}*2"],
             capsys, [f"'{TIME}' is a metric measured in these files"])
    _refused(report.main, [str(recorded("vadd.jsonl")), "--derive", "x=1", "--derive", "x=2"],
             capsys, ["--derive x: the name is given more than once"])


@pytest.mark.parametrize("value", ["-1", "0", "nan", "inf"])
@pytest.mark.parametrize("option", ["--peak-flops", "--peak-bandwidth"])
def test_non_positive_peaks_are_refused(recorded, capsys, option, value):
    with pytest.raises(SystemExit) as e:
        report.main([str(recorded("matmul.jsonl")), "--bound", option, value])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"argument {option}: expected a number > 0, not '{value}'" in err


def test_plot_with_an_unknown_x_column_is_refused(recorded, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    out = tmp_path / "x.png"
    _refused(_plot_main, ["sweep", str(recorded("matmul.jsonl")), "--x", "size", "-o", str(out)],
             capsys, ["--x 'size': no run has that column", "n, dtype"])
    assert not out.exists()


@pytest.mark.parametrize("output,words", [
    ("missing/x.png", ["directory", "does not exist"]),
    ("x.unknown", ["extension .unknown", ".png"]),
    ("x", ["no extension"]),
])
def test_plot_output_path_is_checked_before_reading(recorded, tmp_path, capsys, output, words):
    pytest.importorskip("matplotlib")
    _refused(_plot_main, ["distribution", str(recorded("vadd.jsonl")), "-o",
                          str(tmp_path / output)], capsys, words)


def test_plot_output_that_is_a_directory(recorded, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    (tmp_path / "d.png").mkdir()
    _refused(_plot_main, ["distribution", str(recorded("vadd.jsonl")), "-o",
                          str(tmp_path / "d.png")], capsys, ["is a directory"])


def test_empty_input_says_no_runs(tmp_path, recorded, capsys):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert report.main([str(empty)], out=io.StringIO()) == 1
    assert capsys.readouterr().err == f"rangeprof-report: error: no runs in {empty}: nothing to report\n"
    assert compare.main([str(empty), str(recorded("vadd.jsonl"))], out=io.StringIO()) == 2
    assert capsys.readouterr().err == f"rangeprof-compare: error: A ('{empty}') has no runs\n"
    assert ncu.main([str(empty), str(recorded("vadd.ncu.csv"))], out=io.StringIO()) == 2
    assert capsys.readouterr().err == f"rangeprof-compare-ncu: error: no runs in '{empty}'\n"


def test_empty_input_load_says_no_runs(tmp_path, capsys):
    pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    import rangeprof
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    df = rangeprof.load(empty)
    assert len(df) == 0 and "Annotation" in df.columns
    assert capsys.readouterr().err == f"rangeprof: warning: no runs in {empty}\n"


# -- missing optional dependencies --------------------------------------------------------

@pytest.mark.parametrize("module,words", [
    ("pandas", "need pandas: pip install pandas"),
    ("pyarrow", "needs pyarrow (its JSON reader parses the run records): pip install pyarrow"),
])
def test_load_without_its_dependency_says_what_to_install(recorded, module, words):
    """In a child interpreter where the module cannot be imported."""
    code = (f"import sys; sys.modules[{module!r}] = None\n"
            "import rangeprof\n"
            "try:\n"
            f"    rangeprof.load({str(recorded('vadd.jsonl'))!r})\n"
            "except ImportError as e:\n"
            "    print('IMPORTERROR', e)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(Path(__file__).parents[1])))
    assert "Traceback" not in done.stderr, done.stderr
    assert done.stdout.startswith("IMPORTERROR") and words in done.stdout
    assert done.stdout.count("\n") == 1


def test_plot_without_matplotlib_says_what_to_install(recorded, tmp_path):
    code = ("import sys; sys.modules['matplotlib'] = None\n"
            "from rangeprof import plots\n"
            f"sys.exit(plots.main(['distribution', {str(recorded('vadd.jsonl'))!r}, '-o', "
            f"{str(tmp_path / 'x.png')!r}]))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(Path(__file__).parents[1])))
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and "matplotlib is not installed" in done.stderr


# -- no traceback from the commands themselves ---------------------------------------------

@pytest.mark.parametrize("module,argv", [
    ("report", ["{bad}"]),
    ("report", ["{bad}", "--group-by", "Nope"]),
    ("compare", ["{good}", "{bad}", "--alpha", "nan"]),
    ("ncu", ["{bad}", "{dir}"]),
    ("report", ["{nofile}"]),
])
def test_commands_end_in_one_line_not_a_traceback(damaged, recorded, tmp_path, module, argv):
    bad = mutated(damaged, text_edit('"launch":4,', '"launch":' + "9" * 5000 + ","))
    subs = dict(bad=str(bad), good=str(recorded("vadd.jsonl")), dir=str(tmp_path),
                nofile=str(tmp_path / "none.jsonl"))
    done = subprocess.run([sys.executable, "-m", f"rangeprof.{module}"] +
                          [a.format(**subs) for a in argv], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(Path(__file__).parents[1])))
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
    assert done.returncode in (0, 1, 2)


# -- issue 38: the same answer however the file is read -----------------------------------

def _tool(module, argv, **kw):
    """A tool run as the shell runs it (bash, for <(...)): (status, stdout, stderr)."""
    import shlex
    line = f"{shlex.quote(sys.executable)} -m rangeprof.{module} " + " ".join(argv)
    done = subprocess.run(["bash", "-c", line], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(Path(__file__).parents[1])), **kw)
    return done.returncode, done.stdout, done.stderr


def test_the_same_file_given_twice_is_read_once_with_a_note(recorded, tmp_path, capsys):
    """Finding 8: 'report f ./f' doubled NumRuns and narrowed the CI. One file under two
    names (a relative path, a link) is read once, and the note says which was left out."""
    path = recorded("vadd.jsonl")
    link = tmp_path / "link.jsonl"
    link.symlink_to(path)
    once = io.StringIO()
    assert report.main([str(path), "--json", "--metric", TIME], out=once) == 0
    capsys.readouterr()
    twice = io.StringIO()
    assert report.main([str(path), os.path.relpath(path), str(link), "--json", "--metric",
                        TIME], out=twice) == 0
    err = capsys.readouterr().err
    assert json.loads(twice.getvalue()) == json.loads(once.getvalue())
    assert err.count("is the same file as") == 2 and err.count("\n") == 2, err
    assert f"'{link}' is the same file as '{path}': read once" in err
    assert len(records.read([path, link], report=None).runs) == VADD_RUNS


def test_load_reads_the_same_file_once(recorded, capsys):
    pytest.importorskip("pyarrow")
    import rangeprof
    path = recorded("vadd.jsonl")
    assert len(rangeprof.load([path, os.path.relpath(path)])) == len(rangeprof.load(path))
    assert "read once" in capsys.readouterr().err


@pytest.mark.parametrize("module,piped,plain", [
    ("report", ["<(cat {f})"], ["{f}"]),
    ("report", ["/dev/stdin", "< {f}"], ["{f}"]),
    ("report", ["/dev/stdin", "< <(cat {f})"], ["{f}"]),
    ("compare", ["<(cat {f})", "<(cat {f})"], ["{f}", "{f}"]),
])
def test_a_pipe_reads_as_the_file_does(recorded, module, piped, plain):
    """'report <(zcat f.gz)' and /dev/stdin said 'Illegal seek' (an internal error)."""
    f = str(recorded("vadd.jsonl"))
    status, out, err = _tool(module, [a.format(f=f) for a in piped] + ["--json"])
    plain_status, plain_out, plain_err = _tool(module, [a.format(f=f) for a in plain]
                                               + ["--json"])
    # (compare notes that both sides hold one session, as it does of the file)
    assert status == plain_status == 0 and err == plain_err, err
    assert json.loads(out) == json.loads(plain_out)


def test_load_reads_a_pipe(recorded):
    pytest.importorskip("pyarrow")
    code = ("import rangeprof, sys; df = rangeprof.load(sys.argv[1]); "
            "print(len(df), df.attrs['bad_line_count'])")
    done = subprocess.run(["bash", "-c", f"{sys.executable} -c \"{code}\" <(cat "
                           f"{recorded('vadd.jsonl')})"], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(Path(__file__).parents[1])))
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout.split() == [str(VADD_RUNS * 3), "0"]


def test_an_unreadable_big_file_is_said_in_one_line(recorded, tmp_path, monkeypatch, capsys):
    """A file that cannot be opened, big enough to be read in pieces, got an internal
    error (a small one got the proper line)."""
    import builtins
    from rangeprof import scan
    path = tmp_path / "big.jsonl"
    path.write_bytes(recorded("vadd.jsonl").read_bytes() * 3)
    monkeypatch.setattr(scan, "PIECE_BYTES", 100_000)
    real_open = builtins.open

    def refusing(name, *args, **kw):
        if str(name) == str(path):
            raise PermissionError(13, "Permission denied", str(name))
        return real_open(name, *args, **kw)
    monkeypatch.setattr(builtins, "open", refusing)
    assert report.main([str(path)], out=io.StringIO()) == 1
    err = capsys.readouterr().err
    assert f"{path}:0: cannot be read (Permission denied); line skipped" in err
    _no_traceback(err)


@pytest.mark.parametrize("reader", ["report", "load"])
def test_input_without_newlines_is_one_bad_line_in_bounded_memory(recorded, tmp_path,
                                                                  monkeypatch, capsys, reader):
    """/dev/zero grew without bound: the line was joined again at every block. A line
    over MAX_LINE_BYTES is passed over and said once; the records after it are read."""
    from rangeprof import frame
    monkeypatch.setattr(records, "MAX_LINE_BYTES", 50_000)
    monkeypatch.setattr(records, "_BLOCK", 4096)
    monkeypatch.setattr(frame, "_READ_BYTES", 4096)
    path = tmp_path / "zeros.jsonl"
    path.write_bytes(b"\0" * 200_000 + b"\n" + recorded("vadd.jsonl").read_bytes()
                     + b"x" * 100_000)
    if reader == "load":
        pytest.importorskip("pyarrow")
        import rangeprof
        assert len(rangeprof.load(path)) == VADD_RUNS * 3
    else:
        out = io.StringIO()
        assert report.main([str(path), "--json", "--metric", TIME], out=out) == 0
        assert sum(r["NumRuns"] for r in json.loads(out.getvalue())) == VADD_RUNS
    err = capsys.readouterr().err
    last = len(recorded("vadd.jsonl").read_bytes().splitlines()) + 2
    assert err == (f"rangeprof: warning: {path}:1: a line of over 50000 bytes: not a record; "
                   f"line skipped\nrangeprof: warning: {path}:{last}: a line of over 50000 bytes: "
                   "not a record; line skipped\n")


# -- issue 38: crashes and internal errors -------------------------------------------------

def _two_on_one_line(separator):
    def edit(lines):
        out = list(lines)
        out[RUN_LINE - 1] = out[RUN_LINE - 1].rstrip("\n") + separator + out[RUN_LINE]
        del out[RUN_LINE]
        return out
    return edit


@pytest.mark.parametrize("separator", ["", "\r"], ids=["lost newline", "CR"])
def test_two_records_on_one_line_are_one_bad_line_for_load_and_report(damaged, capsys,
                                                                      separator):
    """load() raised ArrowInvalid: pyarrow reads the two objects as two rows."""
    pytest.importorskip("pyarrow")
    import rangeprof
    path = damaged("vadd.jsonl", _two_on_one_line(separator))
    df = rangeprof.load(path)
    err = capsys.readouterr().err
    _bad_line_said(err, path, RUN_LINE, ["not JSON", "Extra data"])
    assert df.groupby(["Launch", "Run"], observed=True).ngroups == VADD_RUNS - 2
    out = io.StringIO()
    assert report.main([str(path), "--json", "--metric", TIME], out=out) == 0
    assert sum(r["NumRuns"] for r in json.loads(out.getvalue())) == VADD_RUNS - 2
    _bad_line_said(capsys.readouterr().err, path, RUN_LINE, ["not JSON", "Extra data"])


def _with_seed(digits):
    """vadd.jsonl whose runs' innermost range text ends in 'seed=' and that many nines."""
    def edit(lines):
        out = []
        for line in lines:
            rec = json.loads(line)
            if rec["type"] == "run":
                rec["nvtx"][-1]["text"] += " seed=" + "9" * digits
                rec["nvtx_path"] += " seed=" + "9" * digits
            out.append(json.dumps(rec, separators=(",", ":")) + "\n")
        return out
    return edit


@pytest.mark.parametrize("digits", [20, 400])
def test_load_keeps_a_config_integer_beyond_int64_exactly(damaged, capsys, digits):
    """A seed= above int64 in a range text raised OverflowError."""
    pytest.importorskip("pyarrow")
    import rangeprof
    path = damaged("vadd.jsonl", _with_seed(digits))
    df = rangeprof.load(path)
    assert capsys.readouterr().err == ""
    assert len(df) == VADD_RUNS * 3 and set(df["seed"]) == {int("9" * digits)}
    summary = rangeprof.summarize(df)
    assert len(summary) == 9 and set(summary["seed"]) == {int("9" * digits)}


@pytest.mark.parametrize("argv", [
    ["--derive", "x=seed*2", "--derive", "y=1/seed"],
    ["--bound", "--flops", "seed*2"],
])
def test_a_config_integer_of_400_digits_is_no_internal_error(damaged, capsys, argv):
    """--derive and --bound --flops gave an internal error, exit 70: the integer is too
    large for a float. What is derived from it is undefined (said), or ~0 (1/seed)."""
    path = damaged("vadd.jsonl", _with_seed(400))
    out = io.StringIO()
    assert report.main([str(path), "--json"] + argv, out=out) == 0
    err = capsys.readouterr().err
    _no_traceback(err)
    rows = json.loads(out.getvalue())
    if "--derive" in argv:
        assert "--derive x: undefined in 1200 of 1200 runs" in err
        assert {r["AvgValue"] for r in rows if r["Metric"] == "y"} == {0.0}
    else:
        assert len(rows) == 3


def test_the_sweep_plot_takes_a_400_digit_config_as_a_category(damaged, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    from rangeprof import plots
    path = damaged("vadd.jsonl", _with_seed(400))
    assert plots.main(["sweep", str(path), "--x", "seed", "-o", str(tmp_path / "p.png")]) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("command", [
    "report --preset roofline | head -1",
    "report {f} | head -1",
    "report {bad} 2>&1 | head -1",
    "compare {f} {bad} 2>&1 | head -1",
    "compare {f} {f} --metric all | head -1",
])
def test_a_closed_pipe_ends_the_tool_quietly_never_with_the_regression_status(
        recorded, tmp_path, command):
    """'report --preset roofline | head' gave an internal error; 'compare a b 2>&1 | head
    -1' with bad lines exited 1, rangeprof-compare's status for a regression."""
    bad = tmp_path / "bad.jsonl"
    bad.write_text(recorded("vadd.jsonl").read_text() + "not json\n" * 3000)
    module, rest = command.split(" ", 1)
    status, out, err = _tool(module, [rest.format(f=recorded("vadd.jsonl"), bad=bad)
                                      + "; exit ${PIPESTATUS[0]}"])
    assert status in (0, 141), (status, err)
    # (compare notes that A and B hold one session: its only line on stderr)
    assert all(": note: " in line for line in err.splitlines()), err
    assert out.count("\n") == 1, out


def test_load_takes_its_options_as_the_report_does(recorded):
    """load(f, combine='sum') raised AttributeError; derive='x=...' as one string was read
    a character at a time; load(columns=[]) said 'no runs'."""
    pytest.importorskip("pyarrow")
    import rangeprof
    f = recorded("fusion.jsonl")
    assert rangeprof.load(f, combine="sum", report=None).equals(
        rangeprof.load(f, combine={"*": "sum"}, report=None))
    one = rangeprof.load(f, derive="x=gpu__time_duration.sum*2", report=None)
    assert one.equals(rangeprof.load(f, derive=["x=gpu__time_duration.sum*2"], report=None))
    assert "x" in set(one["Metric"])
    with pytest.raises(ValueError, match="--combine 'median': function should be one of"):
        rangeprof.load(f, combine="median")
    with pytest.raises(ValueError, match=r"columns=\[\]\): no column asked for"):
        rangeprof.load(f, columns=[])


def test_summarize_of_a_frame_with_some_columns(recorded):
    """summarize(load(f, columns=[...])) raised KeyError 'SMClock'."""
    pytest.importorskip("pyarrow")
    import rangeprof
    f = recorded("vadd.jsonl")
    full = rangeprof.summarize(rangeprof.load(f, columns=["Annotation", "Metric", "Value",
                                                          "Launch", "Run"]))
    assert list(full["Annotation"]) == ["vadd n=4096"] * 3 + ["vadd n=1048576"] * 3 + \
        ["vadd n=16777216"] * 3
    assert set(full["NumRuns"]) == {400}
    with pytest.raises(KeyError, match="no Metric column"):
        rangeprof.summarize(rangeprof.load(f, columns=["Value"]))


def test_plot_to_a_directory_says_so(recorded, tmp_path, capsys):
    """'plot -o DIR' said 'no extension'."""
    pytest.importorskip("matplotlib")
    from rangeprof import plots
    assert plots.main(["distribution", str(recorded("vadd.jsonl")), "-o", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (f"rangeprof-plot: error: -o '{tmp_path}' is a "
                                       "directory; expected a file name such as plot.png\n")


def test_a_plot_of_more_panels_than_a_figure_shows_is_refused(recorded, tmp_path, capsys,
                                                              monkeypatch):
    """Thousands of panels took 270 s and 5.5 GB for a PNG 352 000 px tall."""
    pytest.importorskip("matplotlib")
    from rangeprof import plots
    monkeypatch.setattr(plots, "MAX_PANELS", 2)
    out = tmp_path / "p.png"
    assert plots.main(["distribution", str(recorded("vadd.jsonl")), "-o", str(out)]) == 2
    assert capsys.readouterr().err == (
        "rangeprof-plot: error: 3 panels (one per group of Annotation), more than the 2 a "
        "figure shows readably; choose fewer with --group-by, --row or --col, or select "
        "ranges when recording\n")
    assert not out.exists()


# -- issue 38: messages ---------------------------------------------------------------------

def _retitled(lines):
    """vadd.jsonl whose first range is named with a newline, a tab and ANSI escapes (a
    forged row, a terminal title)."""
    evil = "vadd\n9999 forged row\t\x1b]0;owned\x07\x1b[2J n=4096"
    out = []
    for line in lines:
        rec = json.loads(line)
        if rec["type"] == "run" and rec["nvtx_path"] == "vadd n=4096":
            rec["nvtx"][-1]["text"] = rec["nvtx_path"] = evil
        out.append(json.dumps(rec, separators=(",", ":")) + "\n")
    return out


@pytest.mark.parametrize("argv", [[], ["--bound"]])
def test_text_tables_escape_control_characters(damaged, argv):
    """NVTX texts were printed raw: newlines, tabs and ANSI escapes could forge rows or
    retitle the terminal."""
    path = damaged("vadd.jsonl", _retitled)
    out = io.StringIO()
    assert report.main([str(path), "--metric", TIME] + argv, out=out) == 0
    text = out.getvalue()
    assert "\x1b" not in text and "\t" not in text and "\x07" not in text
    assert not any(l.startswith("9999") for l in text.splitlines())
    assert "vadd\\n9999 forged row\\t\\x1b]0;" in text  # (cut to the column's width)
    rows = [l for l in text.splitlines() if l.strip() and "rows not stable" not in l]
    assert len(rows) == 1 + 3 or "--bound" in argv


def test_a_refusal_escapes_what_it_quotes(recorded, capsys):
    assert report.main([str(recorded("vadd.jsonl")), "--group-by", "k\x1b]0;x\x07"],
                       out=io.StringIO()) == 2
    err = capsys.readouterr().err
    assert "'k\\x1b]0;x\\x07'" in err and err.count("\n") == 1


def test_compare_text_escapes_control_characters(damaged):
    path = damaged("vadd.jsonl", _retitled)
    out = io.StringIO()
    compare.main([str(path), str(path)], out=out)
    assert "\x1b" not in out.getvalue() and "\t" not in out.getvalue()
    assert not any(l.startswith("9999") for l in out.getvalue().splitlines())


def test_a_byte_order_mark_keeps_the_session(recorded, tmp_path, capsys):
    """A UTF-8 BOM made the session line 'not JSON': its runs lost their session."""
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + recorded("vadd.jsonl").read_bytes())
    recs = records.read(path, report=None)
    assert recs.bad_count == 0 and len(recs.sessions) == 1 and len(recs.runs) == VADD_RUNS
    assert recs.runs[0].session_id == records.read(recorded("vadd.jsonl")).runs[0].session_id
    out = io.StringIO()
    assert report.main([str(path), "--json", "--group-by", "Session"], out=out) == 0
    assert capsys.readouterr().err == ""
    assert {r["Session"] for r in json.loads(out.getvalue())} == {recs.runs[0].session_id}
    pytest.importorskip("pyarrow")
    import rangeprof
    df = rangeprof.load(path)
    assert capsys.readouterr().err == "" and set(df["Process"]) == {1205}


def test_gzip_is_read_as_the_file_it_holds(recorded, tmp_path, capsys):
    """gzip input got 'not JSON' on every line."""
    import gzip
    plain = recorded("vadd.jsonl")
    path = tmp_path / "vadd.jsonl.gz"
    path.write_bytes(gzip.compress(plain.read_bytes()))
    outs = []
    for f in (plain, path):
        out = io.StringIO()
        assert report.main([str(f), "--json"], out=out) == 0
        outs.append(json.loads(out.getvalue()))
    assert outs[0] == outs[1] and capsys.readouterr().err == ""
    # Cut short: what was decompressed is read, and one line says where the data ends.
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(path.read_bytes()[:len(path.read_bytes()) // 2])
    recs = records.read(cut, report=None)
    assert 0 < len(recs.runs) < VADD_RUNS and recs.bad_count == 1
    assert "gzip data ends here" in recs.bad_lines[0].reason
    pytest.importorskip("pyarrow")
    import rangeprof
    assert rangeprof.load(path).equals(rangeprof.load(plain).assign(
        File=lambda d: d["File"].cat.rename_categories([str(path)])))
    df = rangeprof.load(cut)
    assert df.attrs["bad_line_count"] == 1 and len(df) == 3 * len(recs.runs)


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be"])
def test_utf16_is_said_in_one_line(recorded, tmp_path, capsys, encoding):
    """UTF-16 input got 'not JSON' on every line."""
    path = tmp_path / "u16.jsonl"
    path.write_bytes(recorded("vadd.jsonl").read_text().encode(encoding))
    assert report.main([str(path)], out=io.StringIO()) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 2 and "UTF-16" in err and "iconv -f UTF-16 -t UTF-8" in err
    assert f"{path}:0: is UTF-16" in err


# -- issue 38: time and memory ---------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "a" + " " * 200_000 + "b", ">" + " " * 200_000 + "x", "f<int" + " " * 200_000 + "*>",
])
def test_kernel_names_are_canonical_in_linear_time(text):
    """A name with 100 000 spaces took 61-308 s: '\\s+([*&])' retried at every space."""
    import time
    from rangeprof.names import canonical_kernel, short_kernel
    begin = time.process_time()
    canonical_kernel(text)
    short_kernel(text + " + " + text)
    assert time.process_time() - begin < 2.0


@pytest.mark.parametrize("text", ["1" * 200_000 + "x", "byte" + "1" * 200_000 + "/s",
                                  "s" + "^" * 200_000])
def test_units_parse_in_linear_time(text):
    """units.parse_unit's '(.*?)\\^?(-?\\d+)?' was quadratic in a run of digits."""
    import time
    from rangeprof.units import parse_unit
    begin = time.process_time()
    parse_unit(text)
    assert time.process_time() - begin < 2.0


def test_a_long_derive_expression_parses_in_linear_time():
    import time
    from rangeprof.expr import ExprError, parse_derivation
    begin = time.process_time()
    with pytest.raises(ExprError, match="nested more than"):
        parse_derivation("x=" + "1+" * 100_000 + "1")  # refused: nested too deep
    assert time.process_time() - begin < 5.0


# -- issue 38: records of several sessions in one file ---------------------------------------

def _interleaved(recorded, tmp_path, with_pid=True):
    """vadd.jsonl and vadd_again.jsonl as two processes appending to one file without %p
    write it: both session and device lines first, then their other lines alternating.
    with_pid: each record carries its writer's pid, as rangeprof writes records now."""
    sides = []
    for name in ("vadd.jsonl", "vadd_again.jsonl"):
        lines = recorded(name).read_text().splitlines()
        pid = json.loads(lines[0])["pid"]
        out = []
        for line in lines:
            rec = json.loads(line)
            if with_pid and rec["type"] != "session":
                rec["pid"] = pid
            out.append(json.dumps(rec, separators=(",", ":")) + "\n")
        sides.append(out)
    (a, b) = sides
    head = a[:2] + b[:2]
    body = [line for pair in zip(a[2:], b[2:]) for line in pair]
    body += a[2 + len(b) - 2:] + b[2 + len(a) - 2:]
    path = tmp_path / "two_processes.jsonl"
    path.write_text("".join(head + body))
    return path


def _by_session(path, argv=()):
    out = io.StringIO()
    assert report.main([str(path), "--json", "--metric", TIME, "--group-by",
                        "Session,Annotation"] + list(argv), out=out) == 0
    return {(r["Session"], r["Annotation"]): (r["NumRuns"], r["AvgValue"], r["Launches"])
            for r in json.loads(out.getvalue())}


def test_two_processes_in_one_file_are_told_apart_by_pid(recorded, tmp_path, capsys,
                                                          monkeypatch):
    """Finding 10: every run was given to the last session line, so launch ids collided
    and pids and GPUs were wrong. Each record names its writer's pid: the tables are
    those of the two files read apart, whole or in pieces."""
    from rangeprof import scan
    path = _interleaved(recorded, tmp_path)
    apart = {}
    for name in ("vadd.jsonl", "vadd_again.jsonl"):
        apart.update(_by_session(recorded(name)))
    assert _by_session(path) == apart and len(apart) == 6
    monkeypatch.setattr(scan, "PIECE_BYTES", 100_000)
    assert len(scan.pieces([str(path)], 4)) > 1
    assert _by_session(path) == apart
    assert capsys.readouterr().err == ""
    recs = records.read(path)
    assert {r.session["pid"] for r in recs.runs} == {1205, 1240}
    assert all(r.session["pid"] == r.record["pid"] for r in recs.runs)
    assert len({r.launch_id for r in recs.runs}) == 120


def test_load_tells_two_processes_in_one_file_apart(recorded, tmp_path):
    pytest.importorskip("pyarrow")
    import rangeprof
    path = _interleaved(recorded, tmp_path)
    df = rangeprof.load(path)
    runs = df[df["Metric"] == TIME]
    assert runs.groupby("Process").size().to_dict() == {1205: VADD_RUNS, 1240: VADD_RUNS}
    assert runs["Launch"].nunique() == 120 and set(runs["GPU"]) == {"NVIDIA H200"}
    sessions = {r.record["launch"]: r.session_id for r in records.read(path, report=None).runs
                if r.session["pid"] == 1240}
    mine = runs[runs["Process"] == 1240]
    assert set(mine["Session"]) == set(sessions.values())


def test_interleaved_runs_without_a_pid_are_said(recorded, tmp_path, capsys):
    """A file written before records carried the pid cannot be told apart: said once."""
    path = _interleaved(recorded, tmp_path, with_pid=False)
    report.main([str(path), "--json"], out=io.StringIO())
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "runs of several processes interleave from here" in err
    assert "record with %p in -o" in err


SECOND_RUN_EDITS = [c[1] for c in BAD_LINES if c[2] == RUN_LINE and
                    c[1].__qualname__.startswith("set_member")] + [
    text_edit('"run":1,', '"run":1,"deep":' + "[" * 100000 + "]" * 100000 + ","),
    text_edit('"temperature_c":36', '"temperature_c":NaN'),
    text_edit('"time":', '"sm_clock_hz":1e400,"time":'),
    set_member("pid", "x"), set_member("pid", 9 ** 40), set_member("pid", 1205),
    set_member("kernel", "other"), text_edit('"run":1,', '"run":1,"kernel":5,'),
    text_edit('"run":1,', '"run":1,"nvtx":[1],'), text_edit('"run":1,', '"run":"1",'),
    text_edit('"units":{', '"units":{"x":[],'), text_edit('"time":', '"units":7,"time":'),
    text_edit('"time":', '"metrics":{"a":"b"},"time":'),
    set_member("time", []), set_member("throttle_reasons", "hot"),
] + [set_member(member, value) for member in sorted(records._PER_RUN_MEMBERS)
     for value in ([], "x", {"a": 1}, 9 ** 40, -1.5, None)]


@pytest.mark.parametrize("edit", SECOND_RUN_EDITS)
def test_a_launch_read_a_run_at_a_time_gives_what_a_whole_parse_gives(damaged, monkeypatch,
                                                                        edit):
    """records._RunSplitter parses a launch's later runs from their 'run' member on; the
    records and bad lines are those of parse_line on every line (the fuzzer's finding: a
    pid member that is no integer passed unchecked)."""
    path = mutated(damaged, edit, RUN_LINE + 1)
    fast = records.read(path, report=None)
    monkeypatch.setattr(records._RunSplitter, "parse", lambda self, text: None)
    whole = records.read(path, report=None)
    assert [str(b) for b in fast.bad_lines] == [str(b) for b in whole.bad_lines]
    assert [r.record for r in fast.runs] == [r.record for r in whole.runs]
    assert [list(r.record) for r in fast.runs] == [list(r.record) for r in whole.runs]


def _containers(value):
    """The ids of the lists and objects in a JSON value."""
    if isinstance(value, dict):
        return [id(value)] + [i for v in value.values() for i in _containers(v)]
    if isinstance(value, list):
        return [id(value)] + [i for v in value for i in _containers(v)]
    return []


def _capture_reads_as_parse_line(lines, monkeypatch):
    """records.RunLines on lines, as analyze reads its capture: every line gives
    parse_line's (record, why), members in the same order, and no record shares a list
    or an object with another. The lines parse_line was asked for."""
    whole = [records.parse_line(line, True) for line in lines]
    asked = []
    real = records.parse_line

    def spy(text, terminated=None):
        asked.append(text)
        return real(text, terminated)
    monkeypatch.setattr(records, "parse_line", spy)
    reader = records.RunLines()
    got = [reader.parse(line, True) for line in lines]
    monkeypatch.undo()
    for n, ((rec, why), (want, want_why)) in enumerate(zip(got, whole), 1):
        assert why == want_why, n
        # (json.dumps: the same members, in order, of the same types: 1, 1.0 and true)
        assert json.dumps(rec) == json.dumps(want), n
    ids = [i for rec, _ in got for i in _containers(rec)]
    assert len(ids) == len(set(ids)), "records share a list or an object"
    return asked


@pytest.mark.parametrize("edit,line", [(e, RUN_LINE + 1) for e in SECOND_RUN_EDITS] + [
    (e, RUN_LINE) for e in SECOND_RUN_EDITS if e.__qualname__.startswith("set_member")])
def test_the_capture_reader_gives_what_parse_line_gives(damaged, monkeypatch, edit, line):
    """analyze reads its capture with records.RunLines, which decodes a launch's later
    runs from their 'run' member on (the members before it decoded once, and copied):
    the records and reasons are parse_line's, whichever run line is damaged."""
    path = mutated(damaged, edit, line)
    lines = path.read_text().splitlines()[:RUN_LINE + 45]   # two launches and a half
    _capture_reads_as_parse_line(lines, monkeypatch)


def test_the_capture_reader_decodes_a_launchs_later_runs_from_their_run_member(
        recorded, monkeypatch):
    """Not a test of nothing: of the runs of a launch, parse_line reads the first."""
    lines = recorded("vadd.jsonl").read_text().splitlines()[:RUN_LINE + 62]
    asked = _capture_reads_as_parse_line(lines, monkeypatch)
    runs = [line for line in lines if line.startswith('{"type":"run"')]
    assert len(runs) == 60 and sum(line in runs for line in asked) == 3


def test_a_launch_member_given_again_after_run_does_not_pass_the_next_run(damaged,
                                                                          monkeypatch):
    """A run line whose kernel is no string, given again as a string after its "run"
    member, is good (the later member of a name wins); the next run line, the same up
    to its "run" member but without the second kernel, is not, for the file readers
    (records._RunSplitter once let it through) and analyze's capture reader alike."""
    def edit(lines):
        out = list(lines)
        for i in (RUN_LINE - 1, RUN_LINE):
            out[i] = out[i].replace('"kernel":"', '"kernel":5,"was":"', 1)
        out[RUN_LINE - 1] = out[RUN_LINE - 1].replace('"run":0,', '"run":0,"kernel":"k",', 1)
        return out
    path = damaged("vadd.jsonl", edit)
    read = records.read(path, report=None)
    assert [(b.line, b.reason) for b in read.bad_lines] == [
        (RUN_LINE + 1, "run record: 'kernel' should be a string, not an integer (5)")]
    assert read.runs[0].record["kernel"] == "k"
    lines = path.read_text().splitlines()[:RUN_LINE + 21]
    _capture_reads_as_parse_line(lines, monkeypatch)
    assert records.RunLines().parse(lines[RUN_LINE])[0] is None


def _units_given_a_number(text):
    return text.replace('"units":{', '"units":{"x":5,', 1)


def _cut_after_the_units(text):
    """The line up to its units member, then ',}': no JSON, though the text before the
    units and what follows them ('}') each read as an object."""
    end = text.index("}", text.index('"units":{')) + 1
    return text[:end] + ",}"


@pytest.mark.parametrize("edit", [_units_given_a_number, _cut_after_the_units])
def test_two_runs_of_a_launch_edited_alike_give_what_a_whole_parse_gives(damaged,
                                                                         monkeypatch, edit):
    """The launch's second and third runs edited alike, each refused by parse_line: the
    file readers once kept the units of the second ({"x": 5}, refused) and passed the
    third, which gave them again; and passed a run ending '"units":{...},}' whose units
    were the first run's (records._RunSplitter). analyze's capture reader agrees too."""
    def change(lines):
        return [edit(line.rstrip("\n")) + "\n" if i in (RUN_LINE, RUN_LINE + 1) else line
                for i, line in enumerate(lines)]   # (i: 0-based)
    path = damaged("vadd.jsonl", change)
    fast = records.read(path, report=None)
    monkeypatch.setattr(records._RunSplitter, "parse", lambda self, text: None)
    whole = records.read(path, report=None)
    monkeypatch.undo()
    assert [b.line for b in whole.bad_lines] == [RUN_LINE + 1, RUN_LINE + 2]
    assert [str(b) for b in fast.bad_lines] == [str(b) for b in whole.bad_lines]
    assert [r.record for r in fast.runs] == [r.record for r in whole.runs]
    _capture_reads_as_parse_line(path.read_text().splitlines()[:RUN_LINE + 45], monkeypatch)


@pytest.mark.parametrize("value", [[], {"a": 1}, 5])
def test_a_refused_session_line_among_two_leaves_load_the_other(recorded, tmp_path, capsys,
                                                                 value):
    """The fuzzer's finding at f8e332c: a session line refused for its host (a list) gave
    load() an unhashable category. Its runs are skipped, as the report skips them, and
    the other session's are read."""
    pytest.importorskip("pyarrow")
    import rangeprof
    first = recorded("vadd.jsonl").read_text().splitlines()
    session = json.loads(first[0])
    session["host"] = value
    second = recorded("vadd_again.jsonl").read_text().splitlines()
    path = tmp_path / "two.jsonl"
    path.write_text("\n".join([json.dumps(session)] + first[1:] + second) + "\n")
    df = rangeprof.load(path)
    err = capsys.readouterr().err
    _no_traceback(err)
    assert f"{path}:1: session record: 'host' should be a string or null" in err
    assert set(df["Process"]) == {1240} and len(df) == VADD_RUNS * 3
    out = io.StringIO()
    assert report.main([str(path), "--json", "--metric", TIME], out=out) == 0
    assert sum(r["NumRuns"] for r in json.loads(out.getvalue())) == VADD_RUNS


@pytest.mark.parametrize("member", ["runs", "run", "passes"])
def test_load_takes_a_count_beyond_a_floats_integers(damaged, capsys, member):
    """The fuzzer's finding at d9bfb58: 'runs': 2**53 + 1, a valid int64 that no float
    holds, made pyarrow's checked cast to float raise (an internal error of load())."""
    pytest.importorskip("pyarrow")
    import rangeprof
    path = mutated(damaged, set_member(member, 2 ** 53 + 1))
    df = rangeprof.load(path)
    _no_traceback(capsys.readouterr().err)
    assert len(df) == VADD_RUNS * 3
    column = {"runs": "Runs", "run": "Run", "passes": "Passes"}[member]
    assert (df[df["Line"] == RUN_LINE][column] == 2 ** 53 + 1).all()


@pytest.mark.parametrize("constant", ["Infinity", "-Infinity", "NaN"])
def test_load_refuses_a_constant_that_is_not_json_in_any_member(damaged, capsys, constant):
    """The last fuzz run's finding: pyarrow read 'mangled':[Infinity] (a member load()
    does not ask it for), where the reader refuses the line as not JSON."""
    pytest.importorskip("pyarrow")
    import rangeprof
    path = mutated(damaged, text_edit('"mangled":"', f'"mangled":[{constant}],"x":"'))
    df = rangeprof.load(path)
    _bad_line_said(capsys.readouterr().err, path, RUN_LINE, ["not JSON", constant.lstrip("-")])
    assert df.groupby(["Launch", "Run"], observed=True).ngroups == VADD_RUNS - 1


@pytest.mark.parametrize("edit", [
    text_edit('"units":{', '"units":{"}":false,'),                  # the fuzz run's
    text_edit('"units":{', '"units":{"a}b":"x","c":1,'),
    text_edit('"metrics":{', '"metrics":{"a}":"fast",'),
])
def test_load_refuses_what_the_reader_refuses_in_an_object_whose_strings_hold_a_brace(
        damaged, capsys, edit):
    """The fuzz run at 478c20a (issue 38): load()'s columnar reader took a units object
    to end at the '}' inside its key "}", so the key's value (false, no unit) went
    unchecked, where the Python reader refuses the line."""
    pytest.importorskip("pyarrow")
    import rangeprof
    path = mutated(damaged, edit)
    df = rangeprof.load(path)
    _bad_line_said(capsys.readouterr().err, path, RUN_LINE, ["should be"])
    assert df.groupby(["Launch", "Run"], observed=True).ngroups == VADD_RUNS - 1
