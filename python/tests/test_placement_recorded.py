"""Issue 36 on recorded H200 output (fixtures/recorded_scope/, never edited): the summaries
the library wrote on the GPU carry collector/placement.h's reason exactly where
rangeprof/placement.py's rule, applied to the same summaries' medians and the device's L2,
says they should, with the same text; rangeprof.summarize gives the DataFrame's rows the
reason where the summaries have it; the records say the scope they were measured with;
and tests/gpu/check_range.py's comparisons of the two scopes with ncu's first and later
occurrences, and with the program's own time, pass on these files and fail where the
scopes are swapped or the tolerance is too tight."""
import subprocess
import sys
from pathlib import Path

import pytest

import rangeprof
from rangeprof import placement, records

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent / "fixtures" / "recorded_scope"
CHECK_RANGE = ROOT / "tests" / "gpu" / "check_range.py"
# file -> (scope, whether its summaries carry the reason), as the README there says.
FILES = {"rs_kernels_memset_copy_kernel.jsonl": ("kernels", True),
         "rs_whole_memset_copy_kernel.jsonl": ("whole", False),
         "rs_whole_fused.jsonl": ("whole", True)}


def _records(name):
    out = []
    with open(HERE / name, encoding="utf-8") as f:
        for line in f:
            rec, why = records.parse_line(line)
            assert why is None, f"{name}: {why}"
            out.append(rec)
    return out


def _placement_reasons(summary):
    return [w for w in summary["metrics"][placement.WRITE_METRIC]["reasons"]
            if w.startswith("placement:")]


@pytest.mark.parametrize("name", sorted(FILES))
def test_the_c_summaries_reason_is_the_python_rules_on_their_medians(name):
    recs = _records(name)
    l2 = [r["l2_bytes"] for r in recs if r["type"] == "device"]
    assert len(l2) == 1 and l2[0] > 0
    sums = [r for r in recs if r["type"] == "summary" and r.get("workload") == "range"]
    assert len(sums) == 4
    for s in sums:
        m = s["metrics"]
        expected = placement.reason(m[placement.READ_METRIC]["median"],
                                    m[placement.WRITE_METRIC]["median"], l2[0])
        recorded = _placement_reasons(s)
        assert recorded == ([expected] if expected else []), (recorded, expected)
    assert all(bool(_placement_reasons(s)) == FILES[name][1] for s in sums)


@pytest.mark.parametrize("name", sorted(FILES))
def test_the_records_say_their_scope(name):
    recs = _records(name)
    scope = FILES[name][0]
    assert recs[0]["options"]["range_scope"] == scope
    runs = [r for r in recs if r["type"] == "run" and r.get("workload") == "range"]
    assert len(runs) == 20 and {r["range"]["scope"] for r in runs} == {scope}


@pytest.mark.parametrize("name", sorted(FILES))
def test_summarize_gives_the_write_rows_the_reason_where_the_summaries_have_it(name):
    df = rangeprof.load(str(HERE / name), report=None)
    out = rangeprof.summarize(df)
    writes = out[out["Metric"] == placement.WRITE_METRIC]
    reads = out[out["Metric"] == placement.READ_METRIC]
    assert len(writes) == 1 and len(reads) == 1
    has = "placement:" in writes["Reasons"].iloc[0]
    assert has == FILES[name][1], writes["Reasons"].iloc[0]
    assert "placement:" not in reads["Reasons"].iloc[0]


def _check_range(*args):
    return subprocess.run([sys.executable, str(CHECK_RANGE), *map(str, args)],
                          capture_output=True, text=True, timeout=120)


def test_kernels_scope_agrees_with_ncus_later_occurrences_reading_alone_where_placed():
    r = _check_range("vs-ncu", HERE / "rs_kernels_memset_copy_kernel.jsonl",
                     HERE / "rs_ncu_memset_copy_kernel.csv", "--ncu-occurrence", "later")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "dram read (judged)" in r.stdout and "depends on placement" in r.stdout
    # Against the first occurrence, which counts the memset and the copy, it does not.
    r = _check_range("vs-ncu", HERE / "rs_kernels_memset_copy_kernel.jsonl",
                     HERE / "rs_ncu_memset_copy_kernel.csv", "--ncu-occurrence", "first")
    assert r.returncode == 1 and "smsp__inst_executed.sum" in r.stdout


def test_whole_scope_agrees_with_ncus_first_occurrence_and_not_the_later_ones():
    r = _check_range("vs-ncu", HERE / "rs_whole_memset_copy_kernel.jsonl",
                     HERE / "rs_ncu_memset_copy_kernel.csv", "--ncu-occurrence", "first")
    assert r.returncode == 0, r.stdout + r.stderr
    r = _check_range("vs-ncu", HERE / "rs_whole_memset_copy_kernel.jsonl",
                     HERE / "rs_ncu_memset_copy_kernel.csv", "--ncu-occurrence", "later")
    assert r.returncode == 1


def test_a_ranges_time_against_the_programs_own():
    r = _check_range("vs-app", HERE / "rs_whole_memset_copy_kernel.jsonl",
                     HERE / "rs_time_memset_copy_kernel.txt")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "the application's events" in r.stdout
    r = _check_range("vs-app", HERE / "rs_whole_memset_copy_kernel.jsonl",
                     HERE / "rs_time_memset_copy_kernel.txt", "--tol", "0.001")
    assert r.returncode == 1 and "NOT within" in r.stdout
