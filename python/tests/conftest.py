"""Shared fixtures: the JSONL and ncu CSV files recorded on the H200 by
examples/tutorial/record.sh (fixtures/recorded/, see its README). Tests that need them
skip, saying so, where they are absent; none of them uses hand-typed measurements."""
import os
import shutil
from pathlib import Path

import pytest

RECORDED = Path(os.environ.get("RANGEPROF_FIXTURES", Path(__file__).parent / "fixtures" / "recorded"))


def recorded_path(name):
    path = RECORDED / name
    if not path.exists():
        pytest.skip(f"recorded fixture {name} is not in {RECORDED} (examples/tutorial/record.sh)")
    return path


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
