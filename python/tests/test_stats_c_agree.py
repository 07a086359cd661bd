"""collector/stats.c and rangeprof/stats.py give the same summary of the same runs (issue
19): runs without a value (NaN, None, infinite) are left out by both, min, median and max
are the same values with the same sign of zero, and the verdicts - stable or not, and the
reasons word for word - are equal. The C side is stats.c itself, compiled here with
tests/unit/collector/stats_print.c (libc and libm only), which prints stats_summarize and
stats_check_throttle of run sets read from stdin; the values go to it as float.hex(), so
both sides read the same bits. The other numbers agree to rounding (fsum here, a plain
sum in C)."""
import json
import math
import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from rangeprof import stats

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [ROOT / "tests" / "unit" / "collector" / "stats_print.c",
           ROOT / "collector" / "stats.c"]
RECORDED = Path(os.environ.get("RANGEPROF_FIXTURES",
                               Path(__file__).parent / "fixtures" / "recorded"))
FIELDS = ["n", "mean", "stddev", "min", "median", "max", "ci95_low", "ci95_high", "rsd_pct",
          "drift_pct"]
NAN, INF = math.nan, math.inf


@pytest.fixture(scope="module")
def c_summaries(tmp_path_factory):
    """c_summaries([(values, clocks or None, masks or None), ...]) -> stats.c's summaries,
    dicts with summarize()'s keys."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if not all(p.exists() for p in SOURCES):
        pytest.skip("collector/stats.c is not in this tree (a source checkout has it)")
    if not cc:
        pytest.skip("no C compiler to build collector/stats.c with stats_print.c")
    exe = tmp_path_factory.mktemp("stats_c") / "stats_print"
    r = subprocess.run([cc, "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror",
                        "-I", str(ROOT), "-o", str(exe), *map(str, SOURCES), "-lm"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr

    def run(sets):
        lines = []
        for values, clocks, masks in sets:
            parts = [" ".join(_hex(v) for v in values)]
            parts.append("-" if clocks is None else " ".join(_hex(c) for c in clocks))
            parts.append("-" if masks is None else
                         " ".join("u" if m is None else hex(m) for m in masks))
            lines.append("|".join(parts) + "\n")
        out = subprocess.run([str(exe)], input="".join(lines), capture_output=True,
                             text=True, check=True).stdout.splitlines()
        assert len(out) == len(sets)
        summaries = []
        for line in out:
            cols = line.split("\t")
            s = {"n": int(cols[0])}
            s.update((k, float.fromhex(v)) for k, v in zip(FIELDS[1:], cols[1:10]))
            s["stable"] = {"null": None, "true": True, "false": False}[cols[10]]
            s["reasons"] = [r for r in cols[11].split("; ") if r]
            summaries.append(s)
        return summaries
    return run


def _hex(v):
    return "nan" if v is None else float(v).hex()


def _names(mask):
    """A throttle mask as summarize() takes it: the reason names, None when unknown."""
    if mask is None:
        return None
    return [name for bit, name in enumerate(stats.THROTTLE_REASONS) if mask >> bit & 1]


def python_summary(values, clocks, masks):
    return stats.summarize(values, clocks,
                           None if masks is None else [_names(m) for m in masks])


def assert_same(c, py, what):
    assert c["n"] == py["n"], what
    assert c["stable"] is py["stable"], (what, c["reasons"], py["reasons"])
    assert c["reasons"] == py["reasons"], what
    # The values of runs, chosen by the same total order: the same bits, sign included.
    for key in ("min", "median", "max"):
        a, b = c[key], py[key]
        assert (math.isnan(a) and math.isnan(b)) or (
            a == b and math.copysign(1, a) == math.copysign(1, b)), (what, key, a, b)
    scale = max([abs(c[k]) for k in ("min", "max") if math.isfinite(c[k])], default=1.0)
    for key in ("mean", "stddev", "ci95_low", "ci95_high", "rsd_pct", "drift_pct"):
        a, b = c[key], py[key]
        if math.isnan(a) or math.isnan(b):
            assert math.isnan(a) and math.isnan(b), (what, key, a, b)
            continue
        tol = 1e-9 if key in ("rsd_pct", "drift_pct") else 1e-12 * max(scale, 1.0)
        assert math.isclose(a, b, rel_tol=1e-9, abs_tol=tol), (what, key, a, b)


def _noisy_series(n, per_run, seed=1):
    """stats_test.c's series: 100 + per_run i + uniform noise in [-1.5, 1.5] (its LCG)."""
    x, out = seed, []
    for i in range(n):
        x = (1664525 * x + 1013904223) % 2 ** 32
        out.append(100 + per_run * i + 1.5 * (x / 2147483648.0 - 1))
    return out


STEADY = [100, 100.5, 99.5, 100.2, 99.8]
CLOCKS = [1.98e9] * 5
NAMED_SETS = {
    "steady": (STEADY, CLOCKS, None),
    "a NaN in the middle": (STEADY[:2] + [NAN] + STEADY[2:], CLOCKS + [1.98e9], None),
    "NaN first and last": ([NAN] + STEADY + [NAN], None, None),
    "None as a run whose metric was not produced": ([5.0] * 9 + [None], None, None),
    "+inf and -inf": ([INF] + STEADY + [-INF], None, None),
    "all NaN": ([NAN] * 6, [1.98e9] * 6, None),
    "all infinite": ([INF, -INF, INF], None, None),
    "no run": ([], None, None),
    "one value": ([7.5], None, None),
    "one value among NaN": ([NAN, 7.5, NAN], [1.5e9, 1.98e9, 1.98e9], None),
    "two values": ([3.0, 4.0], None, None),
    "four values": (STEADY[:4], None, None),
    "noisy": ([100, 110, 90, 105, 95], None, None),
    "zeros of both signs": ([0.0, -0.0, 0.0, -0.0, 0.0], None, None),
    "minus zeros": ([-0.0, -0.0, -0.0], None, None),
    "minus zero and plus zero, even count": ([0.0, -0.0], None, None),
    "minus zero beside numbers": ([1.0, -0.0, 2.0, 0.0, -1.0], None, None),
    "mean zero": ([-1, 1, -2, 2, -3, 3, -4, 4, -5, 5, -6, 6], None, None),
    "rising with a NaN": ([1, 2, 3, 4, 5, 6, NAN, 7, 8, 9, 10, 11], None, None),
    "nine and a NaN: too few for a trend": ([1, 2, 3, 4, 5, 6, 7, 8, 9, NAN], None, None),
    "linear drift": (_noisy_series(200, 0.03), None, None),
    "linear drift, NaN every 7th": (
        [NAN if i % 7 == 3 else v for i, v in enumerate(_noisy_series(200, 0.03))], None, None),
    "downward drift": (_noisy_series(200, 0.03)[::-1], None, None),
    "negative drift": ([-v for v in _noisy_series(200, 0.03)], None, None),
    "steady noise with infinities": (
        [INF if i % 13 == 0 else v for i, v in enumerate(_noisy_series(200, 0))], None, None),
    "step halfway": ([100.0] * 100 + [103.0] * 100, None, None),
    "slow first runs": ([105, 104] + [100 + (0.2 if i % 2 else -0.2) for i in range(2, 20)],
                        None, None),
    "constant 0.1": ([0.1] * 200, None, None),
    "clock of a run without a value": (
        [100, NAN, 100.5, 99.5, 100.2, 99.8], [1.98e9, 1.5e9, 1.98e9, 1.98e9, INF, 1.98e9], None),
    "unknown clocks": (STEADY, [NAN] * 5, None),
    "a zero clock": (STEADY, [0.0, 1.98e9, 1.98e9, 1.98e9, 1.98e9], None),
    "throttled, unknown and idle": (STEADY, CLOCKS, [0, 0x20 | 0x1, None, 0x4, 0x2]),
    "throttled in a run without a value": (
        [100, NAN, 100.5, 99.5, 100.2, 99.8], None, [0, 0x8, 0, 0, 0, 0]),
}


@pytest.fixture(scope="module")
def named_c(c_summaries):
    return dict(zip(NAMED_SETS, c_summaries(list(NAMED_SETS.values()))))


@pytest.mark.parametrize("name", list(NAMED_SETS))
def test_the_named_run_sets_have_the_same_summary(named_c, name):
    assert_same(named_c[name], python_summary(*NAMED_SETS[name]), name)


def test_runs_without_a_value_are_left_out_by_both(named_c):
    """What the agreement means, spelt out on two sets."""
    s = named_c["None as a run whose metric was not produced"]
    assert s["n"] == 9 and s["mean"] == 5.0 and s["stable"] is True and s["reasons"] == []
    s = named_c["all NaN"]
    assert s["n"] == 0 and s["stable"] is None and math.isnan(s["mean"])
    s = named_c["zeros of both signs"]
    assert math.copysign(1, s["min"]) == -1 and math.copysign(1, s["max"]) == 1


def _random_set(rng):
    n = rng.choice([0, 1, 2, 3, 4, 5, 6, 9, 10, 11, 12, 15, 20, 30, 40])
    base = rng.choice([1.0, 100.0, 2.5e4, -50.0, 0.0])
    spread = rng.choice([0.0, 0.001, 0.01, 0.05, 0.5])
    slope = rng.choice([0.0, 0.0, 0.001, -0.002, 0.01])
    values = []
    for i in range(n):
        # Halves of small integers times a power of two: sums are exact on both sides,
        # so a verdict cannot sit on a rounding difference.
        step = round((rng.uniform(-1, 1) * spread + slope * i) * 64) / 64
        values.append(base + step * max(abs(base), 1.0))
        special = rng.random()
        if special < 0.08:
            values[-1] = NAN
        elif special < 0.10:
            values[-1] = None
        elif special < 0.12:
            values[-1] = rng.choice([INF, -INF])
        elif special < 0.15:
            values[-1] = rng.choice([0.0, -0.0])
    clocks = None
    if rng.random() < 0.5:
        clocks = [rng.choice([1.98e9, 1.98e9, 1.9e9, 1.7e9, NAN, INF]) for _ in range(n)]
    masks = None
    if rng.random() < 0.3:
        masks = [rng.choice([0, 0, 0x1, 0x2, 0x4, 0x20, 0x8 | 0x40, None]) for _ in range(n)]
    return values, clocks, masks


def test_random_run_sets_with_nan_infinities_and_zeros_have_the_same_summary(c_summaries):
    """3000 run sets from a fixed seed (the same every run): NaN, None, +-inf, +-0 among
    the values, unknown and infinite clocks, unknown throttle reasons."""
    rng = random.Random(19)
    sets = [_random_set(rng) for _ in range(3000)]
    verdicts = set()
    for i, (c, s) in enumerate(zip(c_summaries(sets), sets)):
        py = python_summary(*s)
        assert_same(c, py, f"set {i}: {s}")
        verdicts.add((py["stable"], tuple(r.split()[0] for r in py["reasons"])))
    # The sets reach every verdict, not only the easy ones.
    reached = {r for _, rs in verdicts for r in rs}
    assert {None, True, False} <= {v for v, _ in verdicts}
    assert {"n", "rsd", "drifted", "sm", "throttled"} <= reached, reached


def _recorded_sets(name, drop_every=0):
    path = RECORDED / name
    if not path.exists():
        pytest.skip(f"recorded fixture {name} is not in {RECORDED}")
    launches = {}
    for line in open(path, encoding="utf-8"):
        r = json.loads(line)
        if r["type"] == "run":
            key = (r["launch"], (r.get("graph") or {}).get("node"))
            launches.setdefault(key, []).append(r)
    sets = []
    for runs in launches.values():
        runs.sort(key=lambda r: r["run"])
        clocks = [NAN if r.get("sm_clock_hz") is None else r["sm_clock_hz"] for r in runs]
        masks = []
        for r in runs:
            names = r.get("throttle_reasons")
            masks.append(None if names is None else
                         sum(1 << stats.THROTTLE_REASONS.index(n) for n in names))
        for metric in runs[0]["metrics"]:
            values = [r["metrics"].get(metric) for r in runs]
            if drop_every:
                values = [None if i % drop_every == 1 else v for i, v in enumerate(values)]
            sets.append((values, clocks, masks))
    return sets


@pytest.mark.parametrize("name", ["vadd.jsonl", "matmul.jsonl", "clocks.jsonl",
                                  "graph_capture.jsonl"])
@pytest.mark.parametrize("drop_every", [0, 3])
def test_recorded_runs_have_the_same_summary(c_summaries, name, drop_every):
    """The launches recorded on the H200, whole and with every third run's value taken
    away (a metric not produced)."""
    sets = _recorded_sets(name, drop_every)
    assert sets
    for c, s in zip(c_summaries(sets), sets):
        assert_same(c, python_summary(*s), f"{name}: {s[0][:5]}...")
