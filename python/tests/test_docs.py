"""doc/records.md against the code it describes, where a list can be checked: the
summary's cost_ms phases are collector/cost.c's. Skips outside a source checkout."""
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
