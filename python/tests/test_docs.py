"""doc/records.md against the code it describes, where a list can be checked: the
summary's cost_ms phases are collector/cost.c's, the session's options and a range
workload's "range" members collector/records.c's. Skips outside a source checkout."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _source(rel):
    path = ROOT / rel
    if not path.exists():
        pytest.skip(f"{rel} is not here (not a source checkout)")
    return path.read_text()


def test_the_summary_cost_ms_paragraph_names_every_phase():
    names = re.findall(r'\[COST_\w+\] = "(\w+)"', _source("collector/cost.c"))
    assert "setup_context" in names and "total" in names
    doc = _source("doc/records.md")
    paragraph = doc[doc.index("`cost_ms` is where the launch's time went"):]
    paragraph = paragraph[:paragraph.index("\n\n")]
    missing = [n for n in names if f"`{n}`" not in paragraph]
    assert not missing, f"cost_ms phases not in doc/records.md: {missing}"


def test_the_session_options_row_names_every_option_records_c_writes():
    """Each member collector/records.c writes into the session's "options" (replay_mode
    among them since range replay) is listed in doc/records.md's options row."""
    written = re.findall(r'\(options, "(\w+)"', _source("collector/records.c"))
    assert "replay_mode" in written and "graph_profiling" in written
    doc = _source("doc/records.md")
    row = next(line for line in doc.splitlines() if line.startswith("| `options` |"))
    missing = [n for n in written if f"`{n}`" not in row]
    assert not missing, f"session options not in doc/records.md: {missing}"


def test_the_range_member_lists_what_records_c_writes():
    """doc/records.md's "range" row names every member of a range workload's "range"
    object (collector/records.c, range_object)."""
    source = _source("collector/records.c")
    body = source[source.index("static cJSON *range_object"):]
    body = body[:body.index("\n}\n")]
    written = re.findall(r'\(o, "(\w+)"', body)
    assert "kernel_names" in written and "streams" in written
    doc = _source("doc/records.md")
    row = next(line for line in doc.splitlines() if line.startswith("| `range` |"))
    missing = [n for n in written if f"`{n}`" not in row]
    assert not missing, f"range members not in doc/records.md: {missing}"
