"""collector/placement.h's rule has one text in two languages: rangeprof/placement.py's
constants and bands are the header's (read from it here), its reason is placement.c's
format on the same numbers (the format read from placement.c, and placement.c itself
compiled with tests/unit/collector/placement_print.c), at each bound of the rule on
both sides. Then the three places that aggregate run records into Reasons give the DRAM
write's rows that reason from the medians of the same group's reads and writes and the
device's L2, leave StableMeasurement as it was, and give none without the L2 or the
reads: table.Aggregator (rangeprof-report), frame.summarize (rangeprof.summarize) and
_results (analyze.kernel's DataFrame). The cases where the rule holds are the GPU's:
matmul.jsonl's n=2048 fp32 range and recorded_l2/rp_small.jsonl's gathers; every
expected value is computed here from those files. The C side skips outside a source
checkout."""
import json
import math
import random
import re
import shutil
import statistics
import subprocess
from pathlib import Path

import pytest

from rangeprof import placement, records, stats, table

# (fake and fake_path: the stand-in control library's fixtures, for analyze.kernel)
from fake_control.harness import (fake, fake_path, recorded_device,  # noqa: F401
                                  recorded_launches)

ROOT = Path(__file__).resolve().parents[2]
HEADER = ROOT / "collector" / "placement.h"
SOURCE = ROOT / "collector" / "placement.c"
RECORDS_C = ROOT / "collector" / "records.c"
PRINTER = ROOT / "tests" / "unit" / "collector" / "placement_print.c"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
# Recordings in which some workloads meet the rule and others do not.
CASES = [FIXTURES / "recorded" / "matmul.jsonl", FIXTURES / "recorded_l2" / "rp_small.jsonl"]
READ, WRITE = placement.READ_METRIC, placement.WRITE_METRIC
TIME = "gpu__time_duration.sum"
L2 = 62914560.0   # any size: the rule is relative (an H200's)


def _source(path):
    if not path.exists():
        pytest.skip(f"{path.relative_to(ROOT)} is not here (not a source checkout)")
    return path.read_text(encoding="utf-8")


@pytest.fixture
def header():
    return _source(HEADER)


@pytest.fixture
def c_format():
    """c_format(read, write, l2, spread) -> placement.c's text for those numbers, from its
    snprintf's format and arguments read from the source, cut to records.c's buffer."""
    text = _source(SOURCE)
    call = re.search(r"snprintf\(why, size,\s*((?:\"(?:[^\"\\]|\\.)*\"\s*)+),(.*?)\);", text,
                     re.S)
    assert call, "no snprintf(why, size, ...) in placement.c"
    fmt = "".join(re.findall(r"\"((?:[^\"\\]|\\.)*)\"", call.group(1)))
    args = []
    for arg in call.group(2).split(","):
        m = re.fullmatch(r"\s*(spread|read_bytes|write_bytes|l2_bytes)(?:\s*/\s*([0-9.e]+))?\s*",
                         arg)
        assert m, f"placement.c's argument '{arg.strip()}' is not one this test reads"
        args.append((m.group(1), float(m.group(2) or 1)))
    size = re.search(r"char placement\[(\d+)\];", _source(RECORDS_C))
    assert size, "no char placement[N] buffer in records.c"

    def make(read, write, l2, spread):
        env = dict(spread=spread, read_bytes=read, write_bytes=write, l2_bytes=l2)
        return (fmt % tuple(env[name] / div for name, div in args))[:int(size.group(1)) - 1]
    make.size = int(size.group(1))
    return make


# ---------------------------------------------------------------------------------------
# The header's constants and bands

def header_values(text):
    """{name after COLLECTOR_PLACEMENT_: value} of the header's #defines: numbers as
    floats, strings as str, the bands as ((bound, spread), ...)."""
    text = re.sub(r"\\\n", " ", text)
    defines = dict(re.findall(r"^#define COLLECTOR_PLACEMENT_(\w+)[ \t]+(.*?)[ \t]*(?:/\*.*)?$",
                              text, re.M))
    assert defines, "no COLLECTOR_PLACEMENT_ define in the header"

    def value(token):
        token = token.strip()
        if token.startswith("COLLECTOR_PLACEMENT_"):
            return value(defines[token[len("COLLECTOR_PLACEMENT_"):]])
        if token.startswith('"'):
            return token.strip('"')
        return float(token)
    out = {}
    for name, token in defines.items():
        if token.lstrip().startswith("{"):
            pairs = re.findall(r"\{\s*([^{},]+?)\s*,\s*([^{},]+?)\s*\}", token)
            assert pairs, f"COLLECTOR_PLACEMENT_{name}: no {{ bound, spread }} pair"
            out[name] = tuple((value(a), value(b)) for a, b in pairs)
        else:
            out[name] = value(token)
    return out


def differences(text):
    """What placement.py says otherwise than the header text: [(name, header, python)]."""
    out = []
    for name, want in header_values(text).items():
        got = getattr(placement, name, "(absent)")
        if got != want:
            out.append((name, want, got))
    return out


def test_placement_py_has_every_constant_and_band_of_the_header(header):
    values = header_values(header)
    assert {"READ_MIN_L2", "READ_MAX_L2", "WRITE_MIN_BYTES", "WRITE_MAX_READ", "BANDS",
            "READ_METRIC", "WRITE_METRIC"} <= set(values), "the test read the header"
    assert differences(header) == []


def _edit(pattern, change):
    """An edit of the header: the first match of pattern, its group 1 (a number) changed
    by change."""
    def edit(text):
        m = re.search(pattern, text)
        assert m, f"the header no longer matches {pattern!r}: update this test"
        return text[:m.start(1)] + repr(change(float(m.group(1)))) + text[m.end(1):]
    return edit


@pytest.mark.parametrize("edit", [
    _edit(r"BANDS[^{]*\{\s*\{\s*[0-9.]+\s*,\s*([0-9.]+)", lambda x: x + 1),  # a spread
    _edit(r"BANDS[^{]*\{\s*\{[^}]*\}\s*,\s*\{\s*([0-9.]+)", lambda x: 2 * x),  # a bound
    _edit(r"#define COLLECTOR_PLACEMENT_READ_MIN_L2\s+([0-9.]+)", lambda x: x / 2),
    _edit(r"#define COLLECTOR_PLACEMENT_WRITE_MIN_BYTES\s+([0-9.]+)", lambda x: x + 1),
    lambda text: text.replace('"dram__bytes_write.sum"', '"dram__bytes_write.max"'),
    lambda text: text.replace("#endif", "#define COLLECTOR_PLACEMENT_NEW 1.5\n#endif"),
])
def test_a_header_changed_alone_is_caught(header, edit):
    """The check reads the header, not a copy: each change there and not in
    placement.py fails it."""
    changed = edit(header)
    assert changed != header
    assert differences(changed) != []


def test_the_buffer_is_the_one_records_c_gives(c_format):
    assert placement.REASON_SIZE == c_format.size


# ---------------------------------------------------------------------------------------
# The rule at its bounds and the text, as the C test (placement_test.c) checks them

def _band(read, write):
    """The spread placement.BANDS gives W / R (the header's, checked above)."""
    return next(pct for top, pct in placement.BANDS if write <= top * read)


def test_reads_from_a_quarter_of_the_l2_to_all_of_it():
    low, high = placement.READ_MIN_L2 * L2, placement.READ_MAX_L2 * L2
    w = 0.05 * low
    assert placement.reason(math.nextafter(low, 0), w, L2) is None
    assert placement.reason(low, w, L2) is not None
    assert placement.reason(high, w, L2) is not None
    assert placement.reason(math.nextafter(high, math.inf), w, L2) is None


def test_writes_from_one_kilobyte_to_a_share_of_the_reads():
    r = 0.5 * L2
    most = placement.WRITE_MAX_READ * r
    assert placement.reason(r, math.nextafter(placement.WRITE_MIN_BYTES, 0), L2) is None
    assert placement.reason(r, placement.WRITE_MIN_BYTES, L2) is not None
    assert placement.reason(r, most, L2) is not None
    assert placement.reason(r, math.nextafter(most, math.inf), L2) is None


def test_each_band_states_its_spread_up_to_its_bound(c_format):
    r = 0.5 * L2
    bands = placement.BANDS
    assert bands[-1][0] == placement.WRITE_MAX_READ, "the last band ends where the rule does"
    for i, (top, pct) in enumerate(bands):
        w = top * r
        assert placement.reason(r, w, L2) == c_format(r, w, L2, pct)
        if i + 1 < len(bands):
            over = math.nextafter(w, math.inf)
            assert placement.reason(r, over, L2) == c_format(r, over, L2, bands[i + 1][1])
        if i:
            assert pct != bands[i - 1][1], "neighbouring bands state different spreads"


@pytest.mark.parametrize("l2", [math.nan, 0, -L2, -math.inf, math.inf, None, "62914560"])
def test_an_unknown_l2_gives_no_reason(l2):
    assert placement.reason(0.5 * L2, 0.025 * L2, L2) is not None, "the case itself holds"
    assert placement.reason(0.5 * L2, 0.025 * L2, l2) is None


@pytest.mark.parametrize("read,write", [(math.nan, 1e6), (3e7, math.nan), (math.inf, 1e6),
                                        (3e7, math.inf), (None, 1e6), (3e7, None)])
def test_an_unknown_value_gives_no_reason(read, write):
    assert placement.reason(read, write, L2) is None


def test_the_text_is_the_c_format_and_fits_its_buffer(c_format):
    for r, w, l2 in [(31.5e6, 2.0e6, L2), (0.5 * L2, 27264.0, L2), (5e299, 1e297, 1e300)]:
        got = placement.reason(r, w, l2)
        assert got == c_format(r, w, l2, _band(r, w))
        assert ";" not in got and len(got.encode()) <= placement.REASON_SIZE - 1
    assert len(placement.reason(5e299, 1e297, 1e300)) == placement.REASON_SIZE - 1, \
        "an L2 of 1e300 bytes makes a text the buffer cuts"


def test_the_medians_of_the_runs_decide():
    """reason_of_runs takes the medians of the runs that have a value: one run's read
    over the L2 moves the mean out of the rule, not the median."""
    reads = [25e6, 25e6, 300e6, 25e6, 25e6, math.nan, None]
    writes = [1e6, 1.001e6, 0.999e6, 1e6, 1e6]
    assert placement.reason(statistics.mean(reads[:5]), statistics.mean(writes), L2) is None
    assert placement.reason_of_runs(reads, writes, L2) == placement.reason(25e6, 1e6, L2)
    assert placement.reason_of_runs([math.nan], writes, L2) is None


# ---------------------------------------------------------------------------------------
# placement.c itself, compiled, on the same cases as placement.py

@pytest.fixture(scope="module")
def c_reasons(tmp_path_factory):
    """c_reasons([(read, write, l2), ...]) -> placement.c's reasons (None for none)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    for path in (SOURCE, HEADER, PRINTER):
        if not path.exists():
            pytest.skip(f"{path.relative_to(ROOT)} is not here (not a source checkout)")
    if not cc:
        pytest.skip("no C compiler to build collector/placement.c with placement_print.c")
    exe = tmp_path_factory.mktemp("placement_c") / "placement_print"
    r = subprocess.run([cc, "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-I", str(ROOT),
                        "-o", str(exe), str(PRINTER), str(SOURCE), "-lm"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr

    def run(cases):
        text = "".join(" ".join(float(v).hex() for v in case) + "\n" for case in cases)
        out = subprocess.run([str(exe)], input=text, capture_output=True, text=True,
                             check=True).stdout.splitlines()
        assert len(out) == len(cases)
        return [None if line == "-" else line for line in out]
    return run


def _cases():
    """The bounds on both sides, each band's, unknown values, huge ones, and random
    workloads around the rule (log-uniform reads and write shares, seeded)."""
    r = 0.5 * L2
    low, high = placement.READ_MIN_L2 * L2, placement.READ_MAX_L2 * L2
    cases = []
    for x in (low, high):
        cases += [(math.nextafter(x, 0), 0.01 * low, L2), (x, 0.01 * low, L2),
                  (math.nextafter(x, math.inf), 0.01 * low, L2)]
    for w in [placement.WRITE_MIN_BYTES] + [top * r for top, _ in placement.BANDS]:
        cases += [(r, math.nextafter(w, 0), L2), (r, w, L2), (r, math.nextafter(w, math.inf), L2)]
    cases += [(r, 1e6, v) for v in (math.nan, 0.0, -L2, math.inf, -math.inf)]
    cases += [(math.nan, 1e6, L2), (r, math.nan, L2), (math.inf, 1e6, L2), (r, -1e6, L2)]
    cases += [(5e299, 1e297, 1e300), (0.9e308, 1e305, 1.7e308), (5e-300, 1e-302, 1e-299)]
    rng = random.Random(36)
    for _ in range(2000):
        l2 = 2.0 ** rng.uniform(20, 30)
        read = l2 * 2.0 ** rng.uniform(-3, 0.5)
        cases.append((read, read * 2.0 ** rng.uniform(-9, 0), l2))
    return cases


def test_placement_py_gives_placement_c_s_reason_on_every_case(c_reasons):
    cases = _cases()
    got = c_reasons(cases)
    held = sum(g is not None for g in got)
    assert 100 < held < len(cases) - 100, "the cases hold the rule and miss it, both often"
    for case, want in zip(cases, got):
        assert placement.reason(*case) == want, case


# ---------------------------------------------------------------------------------------
# The places that aggregate runs into Reasons

def _fixture(path):
    if not path.exists():
        pytest.fail(f"recorded fixture {path.name} is not in {path.parent} (its README.md "
                    "says how it was recorded)")
    return path


def expected_reasons(paths):
    """{(annotation, kernel): placement.py's reason or None} for each workload of the
    recordings, from the medians of its runs' reads and writes, read straight from the
    run records, and its device's L2."""
    recs = records.read([str(_fixture(p)) for p in paths], report=None)
    groups = {}
    for run in recs.runs:
        rec = run.record
        g = groups.setdefault((rec.get("nvtx_path") or "", rec.get("kernel", "")),
                              ([], [], set()))
        g[0].append(rec["metrics"].get(READ))
        g[1].append(rec["metrics"].get(WRITE))
        g[2].add(run.device.get("l2_bytes"))
    out = {}
    for key, (reads, writes, l2s) in groups.items():
        assert len(l2s) == 1, key
        medians = [statistics.median(v for v in xs if v is not None) for xs in (reads, writes)]
        out[key] = placement.reason(*medians, l2s.pop())
    assert any(out.values()) and not all(out.values()), \
        "the recordings hold workloads in the rule and out of it"
    return out


def without_l2(tmp_path, paths):
    """Copies of the recordings whose device records have no l2_bytes."""
    out = []
    for p in paths:
        text = _fixture(p).read_text(encoding="utf-8")
        stripped = re.sub(r'"l2_bytes":\d+,', "", text)
        assert stripped != text
        (tmp_path / p.name).write_text(stripped, encoding="utf-8")
        out.append(tmp_path / p.name)
    return out


MATMUL = "matmul n=2048 dtype=fp32"


def steadied(tmp_path):
    """matmul.jsonl with every run of MATMUL writing its recorded median: the one range of
    the recordings in the rule has a write of RSD 88 % (the spread the rule warns of),
    not stable anyway; steadied, it is stable, so that a reason that made it unstable
    would show (as conftest's stepped edits recorded times)."""
    path = _fixture(CASES[0])
    runs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    median = statistics.median(r["metrics"][WRITE] for r in runs
                               if r["type"] == "run" and r["nvtx_path"] == MATMUL)
    for r in runs:
        if r["type"] == "run" and r["nvtx_path"] == MATMUL:
            r["metrics"][WRITE] = median
    out = tmp_path / "steadied" / path.name
    out.parent.mkdir()
    out.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in runs),
                   encoding="utf-8")
    return out


@pytest.fixture(params=["recorded", "steadied"])
def recordings(request, tmp_path):
    """The recordings, or the same with MATMUL's writes steadied (steadied())."""
    if request.param == "recorded":
        return CASES
    return [steadied(tmp_path)] + CASES[1:]


def _stable_with_reason(rows, paths):
    """Whether the steadied recordings' MATMUL write row is there, stable with its reason:
    a check of the verdict can fail only on such a row."""
    if paths == CASES:
        return
    row = next(r for r in rows if r["Annotation"] == MATMUL and r["Metric"] == WRITE)
    assert row["StableMeasurement"] and "placement" in row["Reasons"], row


def report_rows(paths, metrics=None):
    agg = table.Aggregator(metrics=metrics)
    for run in records.read([str(p) for p in paths], report=None).runs:
        agg.add_run(run)
    return agg.rows()


def _strip(reasons, reason):
    """A Reasons cell without reason, as it was before it was added."""
    if reason is None:
        return reasons
    assert reasons.endswith(reason), (reasons, reason)
    return reasons[:-len(reason)].removesuffix("; ")


def test_the_report_s_write_rows_carry_the_reason_and_keep_their_verdict(tmp_path,
                                                                         recordings):
    want = expected_reasons(recordings)
    rows = report_rows(recordings)
    _stable_with_reason(rows, recordings)
    plain = {(r["Annotation"], r["Kernel"], r["Metric"]): r for r in report_rows(
        without_l2(tmp_path, recordings))}
    seen = 0
    for row in rows:
        reason = want[(row["Annotation"], row["Kernel"])]
        before = plain[(row["Annotation"], row["Kernel"], row["Metric"])]
        if row["Metric"] != WRITE:
            assert row["Reasons"] == before["Reasons"]
            continue
        seen += reason is not None
        assert _strip(row["Reasons"], reason) == before["Reasons"], "no L2: no reason"
        assert "placement" not in before["Reasons"]
        assert row["StableMeasurement"] == before["StableMeasurement"]
        assert row["StableMeasurement"] == stats.summarize(row["values"])["stable"]
    assert seen == sum(r is not None for r in want.values())


def test_the_report_s_pieces_merged_give_the_same_reasons():
    """scan.run reads a big input in pieces and merges their aggregators: the L2 each
    group noted goes with it."""
    runs = records.read([str(_fixture(p)) for p in CASES], report=None).runs
    whole, first, second = table.Aggregator(), table.Aggregator(), table.Aggregator()
    for run in runs:
        whole.add_run(run)
    for i, run in enumerate(runs):
        (first if i < len(runs) // 2 else second).add_run(run)
    first.merge(second)
    assert [r["Reasons"] for r in first.rows()] == [r["Reasons"] for r in whole.rows()]


def test_the_report_gives_no_reason_without_the_reads():
    rows = report_rows(CASES, metrics=[WRITE])
    assert rows and all("placement" not in r["Reasons"] for r in rows)


def test_summarize_s_write_rows_carry_the_reason_and_keep_their_verdict(tmp_path,
                                                                        recordings):
    pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    from rangeprof import frame
    want = expected_reasons(recordings)
    paths = [str(p) for p in recordings]
    df = frame.load(paths, report=None)
    assert df.attrs["l2_bytes"] == {records.read(paths, report=None).runs[0].device["name"]: L2}
    out = frame.summarize(df)
    _stable_with_reason(out.to_dict("records"), recordings)
    plain = frame.summarize(frame.load([str(p) for p in without_l2(tmp_path, recordings)],
                                       report=None))
    assert len(out) == len(plain)
    seen = 0
    for row, before in zip(out.to_dict("records"), plain.to_dict("records")):
        assert (row["Annotation"], row["Metric"]) == (before["Annotation"], before["Metric"])
        reason = want[(row["Annotation"], row["Kernel"])] if row["Metric"] == WRITE else None
        seen += reason is not None
        assert _strip(row["Reasons"], reason) == before["Reasons"]
        assert row["StableMeasurement"] == before["StableMeasurement"]
    assert seen == sum(r is not None for r in want.values())
    # Read by the Python reader (combine=), the frame knows the same L2.
    assert frame.load(paths, report=None, combine="sum").attrs["l2_bytes"] == \
        df.attrs["l2_bytes"]
    # Without the GPU column, or without the reads, no row can know.
    for part in (df.drop(columns=["GPU"]), df[df["Metric"] != READ]):
        assert not frame.summarize(part)["Reasons"].str.contains("placement").any()


@pytest.mark.filterwarnings("ignore::rangeprof.exceptions.RangeprofWarning")
@pytest.mark.parametrize("steady", [False, True])
def test_analyze_s_write_row_carries_the_reason_and_keeps_its_verdict(fake, tmp_path, steady):
    pytest.importorskip("pandas")
    import rangeprof
    from rangeprof import analyze
    path = steadied(tmp_path) if steady else _fixture(CASES[0])

    def measure(metrics):
        fake.use(str(path), range=MATMUL)

        @rangeprof.analyze.kernel(configs=[2048], runs=10, metrics=metrics,
                                  verbosity=analyze.VerbosityLevel.SILENT)
        def matmul(n):
            with rangeprof.annotate("matmul"):
                pass
        df = matmul().to_dataframe(extra=True)
        return df.set_index("Metric")

    runs = recorded_launches(str(path), MATMUL)[0][:10]
    reads = [r["metrics"][READ] for r in runs]
    writes = [r["metrics"][WRITE] for r in runs]
    reason = placement.reason(statistics.median(reads), statistics.median(writes),
                              recorded_device("matmul.jsonl")["l2_bytes"])
    assert reason, "matmul n=2048 fp32 is in the rule (its recording says so)"
    both = measure([TIME, READ, WRITE])
    row = both.loc[WRITE]
    for other in (TIME, READ):
        assert "placement" not in both.loc[other]["Reasons"], "it speaks of the write only"
    s = stats.summarize(writes, [r["sm_clock_hz"] for r in runs])
    assert row["Reasons"] == "; ".join(s["reasons"] + [reason])
    assert row["StableMeasurement"] == bool(s["stable"])
    assert row["StableMeasurement"] == steady, "steadied, the write is stable"
    alone = measure([WRITE]).loc[WRITE]
    assert alone["Reasons"] == "; ".join(s["reasons"]), "without the reads, no reason"
    assert alone["StableMeasurement"] == row["StableMeasurement"]
