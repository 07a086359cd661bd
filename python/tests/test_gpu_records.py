"""The GPU suite's checks read records through rangeprof.records (tests/gpu/gpu_records.py),
so that a record the library wrote wrong fails the check with FILE:LINE and the reason,
not a KeyError, a traceback or a silent skip. Run here without a GPU: the reader on the
recorded files, and each check's reading of a damaged copy of one."""
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rangeprof import records

ROOT = Path(__file__).resolve().parents[2]
GPU = ROOT / "tests" / "gpu"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
JSONL = sorted(FIXTURES.glob("recorded*/*.jsonl"))


def _gpu_records():
    path = GPU / "gpu_records.py"
    if not path.is_file():
        pytest.skip(f"{path} is not here (not a source checkout)")
    spec = importlib.util.spec_from_file_location("gpu_records", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_checks_reader_is_records_py_of_this_checkout():
    gr = _gpu_records()
    assert Path(gr.records.__file__).resolve() == Path(records.__file__).resolve()
    # Loaded alone: the checker process is not attached to the library by it.
    assert gr.records is not records


@pytest.mark.parametrize("path", JSONL, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_recorded_files_read_as_parse_line_reads_them(path):
    gr = _gpu_records()
    expected = [records.parse_line(line) for line in path.read_text().splitlines(True)]
    assert all(why is None for _, why in expected)
    assert gr.read(str(path)) == [rec for rec, _ in expected]


def _damaged(tmp_path, how):
    """vadd.jsonl, recorded, with its line 5 (a run) damaged how: (file, line 5's reason
    as parse_line gives it)."""
    lines = (FIXTURES / "recorded" / "vadd.jsonl").read_text().splitlines(True)
    rec = json.loads(lines[4])
    assert rec["type"] == "run"
    if how == "type":
        rec["launch"] = "4"
        lines[4] = json.dumps(rec) + "\n"
    elif how == "cut":
        lines[4] = lines[4][:80] + "\n"
    elif how == "empty":
        lines[4] = "\n"
    path = tmp_path / "damaged.jsonl"
    path.write_text("".join(lines))
    why = records.parse_line(lines[4])[1] if how != "empty" else "an empty line"
    assert why
    return path, why


@pytest.mark.parametrize("how", ["type", "cut", "empty"])
def test_a_bad_line_ends_the_check_naming_file_line_and_why(tmp_path, how):
    gr = _gpu_records()
    path, why = _damaged(tmp_path, how)
    with pytest.raises(gr.BadRecord) as e:
        gr.read(str(path))
    assert str(e.value).startswith(f"{path}:5: {why}")
    assert e.value.code == str(e.value)  # SystemExit: printed, status 1


# Each check that reads a file, with arguments that get it to its reading without a GPU
# (the reading comes first in each): FILE is the damaged file, OTHER a file it reads after.
CHECKS = [
    ["check_records.py", "FILE", "--runs", "20"],
    ["check_procs.py", "whole", "FILE"],
    ["check_procs.py", "runs", "1", "FILE"],
    ["check_procs.py", "no-runs", "x", "FILE"],
    ["check_memory.py", "FILE"],
    ["check_auto.py", "FILE", "OTHER"],
    ["check_drift.py", "FILE"],
    ["check_graph_metrics.py", "FILE", "OTHER"],
    ["check_ranks.py", "records", "--world", "1", "FILE"],
    ["check_launch_metrics.py", "FILE", "OTHER"],
    ["check_range.py", "runs", "5", "FILE"],
    ["check_graphs.py", "records", "FILE", "1"],
]


@pytest.mark.parametrize("argv", CHECKS, ids=lambda a: " ".join(a[:2]))
def test_each_check_fails_clearly_on_a_bad_record(tmp_path, argv):
    _gpu_records()
    path, why = _damaged(tmp_path, "type")
    other = tmp_path / "other.csv"
    other.write_text("")
    args = [str(path) if a == "FILE" else str(other) if a == "OTHER" else a for a in argv]
    r = subprocess.run([sys.executable, str(GPU / args[0])] + args[1:], capture_output=True,
                       text=True, timeout=120, cwd=tmp_path,
                       env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert f"{path}:5: {why}" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_check_import_effects_counts_runs_through_the_reader(tmp_path, monkeypatch):
    """Its reading of the files the measured child left (the child itself needs a GPU:
    here it is a stand-in that leaves a recorded file, then a damaged one)."""
    monkeypatch.syspath_prepend(str(GPU))
    spec = importlib.util.spec_from_file_location("check_import_effects",
                                                  GPU / "check_import_effects.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    recorded = FIXTURES / "recorded" / "vadd.jsonl"
    damaged, why = _damaged(tmp_path, "type")
    made = []

    def mkdtemp(**kw):  # under the test's directory, not left in /tmp
        made.append(tmp_path / f"out{len(made)}")
        made[-1].mkdir()
        return str(made[-1])
    monkeypatch.setattr(module.tempfile, "mkdtemp", mkdtemp)
    for source in (recorded, damaged):
        def child(argv, env, **kw):
            Path(env["RANGEPROF_OUTPUT"].replace("%p", "1")).write_bytes(source.read_bytes())
            return subprocess.CompletedProcess(argv, 0, "", "")
        monkeypatch.setattr(module.subprocess, "run", child)
        if source is recorded:
            _, runs = module.run("lib.so", True, True, False)
            expected = sum(1 for line in recorded.read_text().splitlines()
                           if records.parse_line(line)[0]["type"] == "run")
            assert list(runs.values()) == [expected]
        else:
            with pytest.raises(SystemExit, match=re.escape(f":5: {why}")):
                module.run("lib.so", True, True, False)
