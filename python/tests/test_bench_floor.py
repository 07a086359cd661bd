"""bench/floor.py's pairing of each config's host time with its summary (issue 35's floor
benchmark; it runs on the GPU machine only): what a config's launch spent outside
rangeprof's timers, per call, from the summaries of a recorded file."""
import json
from pathlib import Path

import pytest

from conftest import source_script

RECORDED = Path(__file__).resolve().parent / "fixtures" / "recorded"


@pytest.fixture
def floor():
    return source_script("bench/floor.py")


def _summaries(name, count):
    out = []
    for line in (RECORDED / name).read_text().splitlines():
        r = json.loads(line)
        if r["type"] == "summary":
            out.append(r)
    return out[:count]


def test_each_configs_time_outside_its_summary_pairs_by_call_and_order(floor):
    sums = _summaries("vadd.jsonl", 4)
    totals = [s["cost_ms"]["total"] for s in sums]
    # Two calls of two configs, in the order the worker records them; plain's passes and
    # the other call are left out of each pairing.
    times = [["pass1_s", 0.0, 1, 0.5],
             ["call1_s", 1.0, 1, totals[0] / 1e3 + 0.004],
             ["call1_s", 1.1, 2, totals[1] / 1e3 + 0.0015],
             ["call2_s", 2.0, 1, totals[2] / 1e3 + 0.002],
             ["call2_s", 2.1, 2, totals[3] / 1e3 + 0.0025]]
    assert floor.outside_summaries_ms(times, "call1_s", sums[:2]) == pytest.approx([4.0, 1.5])
    assert floor.outside_summaries_ms(times, "call2_s", sums[2:4]) == pytest.approx([2.0, 2.5])


def test_configs_and_summaries_that_do_not_pair_up_give_none(floor):
    sums = _summaries("vadd.jsonl", 3)
    times = [["call1_s", 1.0, 1, 0.01], ["call1_s", 1.1, 2, 0.02]]
    assert floor.outside_summaries_ms(times, "call1_s", sums) is None
    assert floor.outside_summaries_ms(None, "call1_s", sums) is None


def test_plains_same_config_in_its_same_pass_is_taken_off(floor):
    sums = _summaries("vadd.jsonl", 2)
    totals = [s["cost_ms"]["total"] for s in sums]
    times = [["call2_s", 2.0, 1, totals[0] / 1e3 + 0.003],
             ["call2_s", 2.1, 2, totals[1] / 1e3 + 0.004]]
    plain = [["pass1_s", 0.0, 1, 0.4], ["pass1_s", 0.1, 2, 0.3],
             ["pass2_s", 0.5, 1, 0.001], ["pass2_s", 0.6, 2, 0.0005]]
    assert floor.outside_summaries_ms(times, "call2_s", sums, plain, "pass2_s") == \
        pytest.approx([2.0, 3.5])
    assert floor.outside_summaries_ms(times, "call2_s", sums, plain[:3], "pass2_s") is None


@pytest.mark.parametrize("text", ["abc", "nan", "inf", "-1", "601", "1" * 1000])
def test_a_pause_that_is_not_seconds_from_0_to_600_is_refused_naming_it(floor, monkeypatch,
                                                                        text):
    monkeypatch.setenv("FLOOR_PAUSE_S", text)
    with pytest.raises(ValueError, match=r"FLOOR_PAUSE_S=.*expected seconds from 0 to 600"):
        floor.pause_s()


def test_a_pause_unset_or_empty_is_none_and_a_number_is_itself(floor, monkeypatch):
    monkeypatch.delenv("FLOOR_PAUSE_S", raising=False)
    assert floor.pause_s() == 0
    monkeypatch.setenv("FLOOR_PAUSE_S", "")
    assert floor.pause_s() == 0
    monkeypatch.setenv("FLOOR_PAUSE_S", "1.5")
    assert floor.pause_s() == 1.5


def test_each_configs_phases_and_saved_bytes_pair_with_its_size(floor):
    """floor.py's summaries_call2: read_records' summaries of a recorded file, in order."""
    sums = floor.read_records(str(RECORDED / "vadd.jsonl"))["summaries"][:3]
    assert len(sums) == 3
    rows = floor.config_phases([1024, 2048, 3072], sums)
    assert [r["n"] for r in rows] == [1024, 2048, 3072]
    for r, s in zip(rows, _summaries("vadd.jsonl", 3)):
        assert r["cost_ms"] == s["cost_ms"] and r["cost_ms"]["total"] > 0
        assert r["save_bytes"] == s["save"]["bytes"]
    assert len(floor.config_phases([1024], sums)) == 1, "only as many as pair up"
