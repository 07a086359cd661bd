"""rangeprof/ncu_units.py - the unit of a metric as ncu names it, from the unit CUPTI's range
profiler gives (the 'units' of rangeprof's run records): 'nanosecond' is ncu's 'ns',
'instruction' its 'inst', 'percent' its '%', a cycle of any clock ('gpc_cycle',
'sm_cycle', 'dram_cycle') its 'cycle'; 'byte', 'warp', 'thread', 'sector' and the other
counts are spelt alike. Rates keep their dimensions: 'byte/second' is 'byte/s'. ncu's
spellings are those of its raw CSV (ncu 2025.3, tests/fixtures/recorded*/*.csv), which
Nsight Python's DataFrame shows (ncu_report's unit()). analyze.kernel's Unit column
uses them so that a script comparing Unit with 'ns' works as under Nsight Python; the
records and rangeprof's own tools keep CUPTI's spelling. Standard library only."""
import re

# CUPTI's word -> ncu's, for the words that differ.
_WORDS = {"nanosecond": "ns", "microsecond": "us", "millisecond": "ms", "second": "s",
          "instruction": "inst", "percent": "%"}


def _word(word):
    if re.fullmatch(r"[a-z][a-z0-9]*_cycle", word):
        return "cycle"
    return _WORDS.get(word, word)


def ncu_unit(unit, metric=None):
    """ncu's name of a CUPTI unit string; '' stays '', None stays None, and a unit that
    is already ncu's (or a user's, such as a derived metric's) comes back unchanged.
    CUPTI gives a cycle counter's rate as '1/second' (sm__cycles_elapsed.avg.per_second),
    where ncu counts cycles: with the metric named, that is 'cycle/s'. (The per-second
    spellings follow ncu's 'ns'; no recorded ncu CSV holds a rate to confirm them.)"""
    if not isinstance(unit, str) or not unit:
        return unit
    out = re.sub(r"[A-Za-z_][A-Za-z0-9_]*", lambda m: _word(m.group(0)), unit)
    if out.startswith("1/") and metric and "cycles" in metric.split(".", 1)[0]:
        out = "cycle" + out[1:]
    return out
