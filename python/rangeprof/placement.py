"""rangeprof/placement.py - collector/placement.h's rule, for the DataFrames' Reasons: a
kernel or range whose reads fit the L2 and only some of whose written lines leave it
writes back a number of bytes that follows where its arrays lie in memory (BANDS: the
spreads an H200 showed over places 2 MB apart, bench/placement_sweep.sh), so the rows of
its DRAM write say so, as its 'summary' record does. One rule in two languages:
python/tests/test_placement.py reads placement.h and placement.c and fails where the
constants, the bands or the text differ from these. Standard library only."""
import math
import numbers

from rangeprof import stats

# The rule, on the medians of a workload's runs: reads R, writes W, the device's L2.
READ_MIN_L2 = 0.25          # R >= this share of the L2
READ_MAX_L2 = 1.0           # R <= the L2
WRITE_MIN_BYTES = 1024.0    # W at least 1 KB: none left is none moved
WRITE_MAX_READ = 0.3        # W <= this share of R: few lines left
PLACES = 12                 # places the spreads were measured over

# (W / R up to, the largest spread over places measured in %), as placement.h's
# COLLECTOR_PLACEMENT_BANDS: a GPU measurement, not a choice.
BANDS = ((0.01, 287.0), (0.1, 63.0), (WRITE_MAX_READ, 22.0))

READ_METRIC = "dram__bytes_read.sum"
WRITE_METRIC = "dram__bytes_write.sum"

# The C reason's buffer (records.c), its NUL included: the text is cut to one byte less.
REASON_SIZE = 128
_FORMAT = ("placement: moves up to {spread:.0f} % with where memory lies (reads "
           "{read:.1f} MB fit the {l2:.1f} MB L2, writes {write:.2f} MB)")


def _float(v):
    """v as a float, NaN where it is no number (None, text, a bool, an integer no float
    holds): a text that reads as a number is still no measurement."""
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        return math.nan
    try:
        return float(v)
    except OverflowError:
        return math.nan


def reason(read_bytes, write_bytes, l2_bytes):
    """The reason for the DRAM write's summary of a workload whose median reads are
    read_bytes and median writes write_bytes on a device of l2_bytes of L2, or None where
    the rule does not hold or a value is unknown (None, NaN, infinite, l2_bytes <= 0).
    The text is collector_placement_reason's, byte for byte: ASCII, no ';' (Reasons are
    joined with '; '), at most REASON_SIZE - 1 characters."""
    r, w, l2 = _float(read_bytes), _float(write_bytes), _float(l2_bytes)
    if not (l2 > 0) or not math.isfinite(r) or not math.isfinite(w) \
            or r < READ_MIN_L2 * l2 or r > READ_MAX_L2 * l2 \
            or w < WRITE_MIN_BYTES or w > WRITE_MAX_READ * r:
        return None
    spread = BANDS[-1][1]
    for top, pct in BANDS:
        if w <= top * r:
            spread = pct
            break
    text = _FORMAT.format(spread=spread, read=r / 1e6, l2=l2 / 1e6, write=w / 1e6)
    return text[:REASON_SIZE - 1]


def median(values):
    """The median of the runs that have a value (None, NaN and infinities left out, as the
    summaries leave them out), NaN where none has."""
    xs = stats._finite(values)
    return stats._median(xs) if xs else math.nan


def reason_of_runs(read_values, write_values, l2_bytes):
    """reason() on the medians of a workload's runs: the values of its read and write
    metrics (the same runs, in any order)."""
    return reason(median(read_values), median(write_values), l2_bytes)


def l2_of(devices):
    """The L2 size the device records of a group's runs agree on, or None: no record, a
    record without l2_bytes, or runs on devices of different L2 sizes (no one rule)."""
    sizes = set()
    for dev in devices:
        l2 = _float(dev.get("l2_bytes")) if isinstance(dev, dict) else math.nan
        if not l2 > 0 or math.isinf(l2):
            return None
        sizes.add(l2)
    return sizes.pop() if len(sizes) == 1 else None


def l2_by_name(device_records):
    """{GPU name: the L2 size of every device record of that name}, the name's value None
    where they differ (a MIG slice is named as its GPU and holds part of its L2) or one
    lacks it: what a table whose rows name their GPU only (rangeprof.load's GPU column)
    can know of a row's L2."""
    out = {}
    for dev in device_records:
        if not isinstance(dev, dict) or not isinstance(dev.get("name"), str):
            continue
        l2 = l2_of([dev])
        name = dev["name"]
        if name not in out:
            out[name] = l2
        elif out[name] != l2:
            out[name] = None
    return out


def add_to(reasons, text):
    """A Reasons cell with text added as the summaries add theirs ('; ' between), or the
    cell unchanged where text is None."""
    if text is None:
        return reasons
    return f"{reasons}; {text}" if reasons else text
