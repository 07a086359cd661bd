"""Shared fixtures: the JSONL and ncu CSV files recorded on the H200, most of them by
examples/tutorial/record.sh (fixtures/recorded/, whose README says how each was made).
Tests that need them skip, saying so, where they are absent; none of them uses
hand-typed measurements."""
import os
import shutil
from pathlib import Path

import pytest

RECORDED = Path(os.environ.get("RANGEPROF_FIXTURES", Path(__file__).parent / "fixtures" / "recorded"))


def fixture_path(folder, name):
    """folder/name; the test fails where that recorded file is absent: the fixtures are
    part of the repository, and one that went missing (as the range recordings did once,
    left out by .gitignore) must not pass as a skip."""
    path = Path(folder) / name
    if not path.exists():
        pytest.fail(f"recorded fixture {name} is not in {folder} "
                    f"(fixtures/{Path(folder).name}/README.md says how each was recorded)")
    return path


def source_script(relative):
    """The repository's script at relative (e.g. "scripts/check_citations.py"), imported
    as a module; the test skips, saying so, where it is absent (an installed package's
    tests have no source tree around them)."""
    import importlib.util
    root = Path(__file__).resolve().parents[2]
    path = root / relative
    if not path.is_file():
        pytest.skip(f"{path} is not here (not a source checkout)")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def recorded_path(name):
    return fixture_path(RECORDED, name)


@pytest.fixture
def recorded():
    return recorded_path


@pytest.fixture
def damaged(tmp_path):
    """damaged(name, edit) -> a copy of a recorded file whose lines list went through edit."""
    def make(name, edit):
        src = recorded_path(name)
        lines = src.read_text().splitlines(keepends=True)
        out = tmp_path / f"damaged_{name}"
        out.write_text("".join(edit(lines)))
        return out
    return make


@pytest.fixture
def copy(tmp_path):
    def make(name, as_name=None):
        dst = tmp_path / (as_name or name)
        shutil.copy(recorded_path(name), dst)
        return dst
    return make


@pytest.fixture
def stepped(damaged):
    """stepped(drift_launch=None) -> vadd.jsonl with the times of the n=16777216 range
    (20 launches of 20 runs, stable) multiplied by 1 + 0.0012 j in its j-th launch: steady
    launches whose means step up by 2.3 % in all. With drift_launch (a 'launch' number,
    57..76), that launch's runs also drift linearly by 6 % of its mean, first to last."""
    import json

    def make(drift_launch=None):
        def edit(lines):
            out = []
            for line in lines:
                rec = json.loads(line)
                if rec["type"] == "run" and rec["nvtx_path"] == "vadd n=16777216":
                    factor = 1 + 0.0012 * (rec["launch"] - 57)
                    if rec["launch"] == drift_launch:
                        factor *= 1 + 0.06 * (rec["run"] / 19 - 0.5)
                    rec["metrics"]["gpu__time_duration.sum"] *= factor
                out.append(json.dumps(rec) + "\n")
            return out
        return damaged("vadd.jsonl", edit)
    return make


@pytest.fixture
def stand_in_ncu(tmp_path):
    """stand_in_ncu(csv) -> (path of a stand-in ncu, path of its argv log): it logs its
    argv as JSON and copies csv (a CSV ncu wrote on the H200) to its --log-file, for
    rangeprof-compare-ncu --run on this machine, which has no GPU."""
    def make(csv_path):
        argv_log = tmp_path / "argv.json"
        fake = tmp_path / "ncu"
        fake.write_text(
            "#!/usr/bin/env python3\n"
            "import json, shutil, sys\n"
            f"json.dump(sys.argv[1:], open({str(argv_log)!r}, 'w'))\n"
            "log = sys.argv[sys.argv.index('--log-file') + 1]\n"
            f"shutil.copy({str(csv_path)!r}, log)\n")
        fake.chmod(0o755)
        return fake, argv_log
    return make
