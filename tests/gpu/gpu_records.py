"""tests/gpu/gpu_records.py - how the GPU suite's checks read rangeprof's JSON Lines: every
line through rangeprof.records.parse_line, the rule the package's readers all follow, so
that a record the library wrote wrong fails the check with 'FILE:LINE: why' instead of
being skipped, or ending in a KeyError or a traceback further on.

records.py is loaded from this checkout by its path alone (its parse_line needs only the
standard library), not through 'import rangeprof': that import attaches the process to
the library, and check_control.py and check_import_effects.py drive or watch it
themselves. python/tests/test_gpu_records.py runs these functions, and each check's
reading of a recorded file, without a GPU."""
import importlib.util
import os

_RECORDS_PY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python",
                           "rangeprof", "records.py")


def _records_module():
    spec = importlib.util.spec_from_file_location("_gpu_checks_records", _RECORDS_PY)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


records = _records_module()


class BadRecord(SystemExit):
    """A line that records.parse_line refuses: the check ends, status 1, saying where and
    why (a SystemExit: no check's 'except Exception' takes it for something else)."""


def parse(lines, where, keep=None):
    """The records of lines (each with or without its newline: a last line without one is
    called truncated where it does not parse), in order. keep, when given, selects the
    lines parsed by their text (the numbering stays that of all lines). Raises BadRecord
    'where:N: why' at the first bad line; a blank line is one (rangeprof writes none, and
    the checks always refused them)."""
    out = []
    for number, line in enumerate(lines, 1):
        if keep is not None and not keep(line):
            continue
        rec, why = records.parse_line(line) if line.strip() else (None, "an empty line")
        if why is not None:
            raise BadRecord(f"{where}:{number}: {why}; a check reads every record rangeprof "
                            "wrote, so this one is a failure")
        out.append(rec)
    return out


def read(path, keep=None):
    """Every record of the file at path (see parse)."""
    with open(path, encoding="utf-8", errors="replace") as f:
        return parse(f.read().splitlines(keepends=True), path, keep)
