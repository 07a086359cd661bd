"""The control API's status codes and version have one source, inject/rangeprof_control.h:
_control.py's constants and names must say what the header says (the stand-in library of
tests/fake_control/ includes the header itself). Skips outside a source checkout."""
import re
from pathlib import Path

import pytest

from rangeprof import _control

ROOT = Path(__file__).resolve().parents[2]
HEADER = ROOT / "inject" / "rangeprof_control.h"


def header_codes(text):
    """{name: value} of the header's enum rangeprof_status, and its version."""
    enum = re.search(r"enum rangeprof_status \{(.*?)\};", text, re.S)
    assert enum, "no enum rangeprof_status in the header"
    codes = {name: int(value)
             for name, value in re.findall(r"\b(RANGEPROF_\w+)\s*=\s*(\d+)", enum.group(1))}
    version = re.search(r"#define RANGEPROF_CONTROL_VERSION (\d+)", text)
    assert version, "no RANGEPROF_CONTROL_VERSION in the header"
    return codes, int(version.group(1))


def python_codes():
    """{name: value} as _control.py has them: each constant and the name it prints."""
    return {name: value for value, name in _control.CODE_NAMES.items()}


@pytest.fixture
def header():
    if not HEADER.exists():
        pytest.skip("inject/rangeprof_control.h is not here (not a source checkout)")
    return HEADER.read_text()


def test_control_py_has_every_code_of_the_header_under_its_name_and_value(header):
    codes, _ = header_codes(header)
    assert codes, "the header's enum has no codes"
    assert python_codes() == codes


def test_control_py_constants_are_the_codes_their_names_say(header):
    codes, _ = header_codes(header)
    for name, value in codes.items():
        short = name[len("RANGEPROF_"):]
        assert getattr(_control, short) == value, f"_control.{short} is not {name}"


def test_control_py_speaks_the_header_version(header):
    _, version = header_codes(header)
    assert _control.CONTROL_VERSION == version


def test_control_py_takes_the_headers_device_bound(header):
    bound = re.search(r"#define RANGEPROF_MAX_DEVICES (\d+)", header)
    assert bound, "no RANGEPROF_MAX_DEVICES in the header"
    assert _control.MAX_DEVICES == int(bound.group(1))


def test_a_code_added_to_the_header_alone_is_caught(header):
    """The check reads the header, not a copy: a new code there and not in _control.py
    fails it (how this test was shown to fail on the fault it guards against)."""
    grown = header.replace("RANGEPROF_ENOMEM = 5,",
                           "RANGEPROF_ENOMEM = 5,\n\tRANGEPROF_EBUSY = 6,")
    assert grown != header
    codes, _ = header_codes(grown)
    assert codes != python_codes()
    renumbered = header.replace("RANGEPROF_ENOTOPEN = 3", "RANGEPROF_ENOTOPEN = 7")
    assert header_codes(renumbered)[0] != python_codes()


def test_doc_control_api_tables_every_code_of_the_header(header):
    doc = ROOT / "doc" / "control-api.md"
    if not doc.exists():
        pytest.skip("doc/control-api.md is not here")
    table = {name: int(value) for value, name in
             re.findall(r"^\| (\d+) \| `(RANGEPROF_\w+)` \|", doc.read_text(), re.M)}
    assert table == header_codes(header)[0]
