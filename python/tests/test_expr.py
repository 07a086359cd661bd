"""The --derive language: arithmetic, units carried, errors named, nothing evaluated by
Python's eval."""
import math

import pytest

from rangeprof.expr import ExprError, parse_derivation
from rangeprof.units import DIMENSIONLESS, conversion_factor, format_unit, parse_unit

NS = parse_unit("nsecond")
BYTE = parse_unit("byte")


def env(**kw):
    return {k.replace("__dot__", "."): v for k, v in kw.items()}


def test_tutorial_tflops_expression_gives_tera_per_second():
    d = parse_derivation("tflops=2*n**3/gpu__time_duration.sum/1e3")
    value, unit = d.evaluate({"n": (4096.0, DIMENSIONLESS), "gpu__time_duration.sum": (2.5e6, NS)})
    assert value == pytest.approx(2 * 4096 ** 3 / 2.5e6 / 1e3)
    assert unit == "T/second"


def test_unit_in_brackets_converts_the_value():
    d = parse_derivation("tflops[TFLOP/s]=2*n**3/gpu__time_duration.sum")
    value, unit = d.evaluate({"n": (1024.0, DIMENSIONLESS), "gpu__time_duration.sum": (1e5, NS)})
    assert value == pytest.approx(2 * 1024 ** 3 / 1e5 * 1e9 / 1e12)
    assert unit == "TFLOP/s"


def test_bandwidth_carries_bytes_per_time():
    d = parse_derivation("bw=(dram__bytes_read.sum+dram__bytes_write.sum)/gpu__time_duration.sum")
    value, unit = d.evaluate({"dram__bytes_read.sum": (3e6, BYTE), "dram__bytes_write.sum": (1e6, BYTE),
                              "gpu__time_duration.sum": (2e3, NS)})
    assert value == 2e3 and unit == "Gbyte/second"


def test_precedence_unary_minus_and_functions():
    d = parse_derivation("x=-2**2+max(1,3)*sqrt(16)-abs(-1)/2")
    assert d.evaluate({})[0] == -(2 ** 2) + 3 * 4 - 0.5


def test_adding_different_dimensions_is_an_error():
    d = parse_derivation("x=gpu__time_duration.sum+dram__bytes_read.sum")
    with pytest.raises(ExprError, match="different units"):
        d.evaluate({"gpu__time_duration.sum": (1.0, NS), "dram__bytes_read.sum": (1.0, BYTE)})


def test_division_by_zero_is_nan_not_an_exception():
    d = parse_derivation("x=dram__bytes_read.sum/gpu__time_duration.sum")
    assert math.isnan(d.evaluate({"dram__bytes_read.sum": (1.0, BYTE), "gpu__time_duration.sum": (0.0, NS)})[0])


@pytest.mark.parametrize("text", ["x=__import__('os').system('true')",
                                  "x=(1).real", "x=[1]", "x=lambda: 1", "x=open('f')",
                                  "x=1;2", "x=", "=1", "x=1+", "x=min(1)"])
def test_anything_outside_the_grammar_is_rejected(text):
    with pytest.raises(ExprError):
        parse_derivation(text).evaluate({})


def test_dotted_names_are_only_looked_up():
    """Metric names keep their dots; a name is a key of the run's values, never an attribute."""
    d = parse_derivation("x=a.__class__*2")
    assert d.evaluate({"a.__class__": (1.5, DIMENSIONLESS)})[0] == 3.0
    with pytest.raises(ExprError, match="unknown name"):
        d.evaluate({})


def test_unknown_name_is_named():
    with pytest.raises(ExprError, match="unknown name 'nope'"):
        parse_derivation("x=nope*2").evaluate({})


def test_profiler_unit_strings_parse():
    assert format_unit(parse_unit("nsecond")) == "nsecond"
    assert conversion_factor(parse_unit("usecond"), NS) == pytest.approx(1e3)
    assert conversion_factor(parse_unit("Mbyte"), BYTE) == pytest.approx(1e6)
    assert parse_unit("%").dims == {"%": 1}


def test_every_recorded_unit_is_understood(recorded):
    """The unit strings the collector writes (CUPTI's: 'nanosecond', 'instruction',
    'percent', '1/second') are known units, not words taken as dimensions of their own."""
    import json
    seen = set()
    for name in ("matmul.jsonl", "clocks.jsonl", "fusion.jsonl"):
        for line in open(recorded(name)):
            rec = json.loads(line)
            if rec["type"] == "run":
                seen.update(rec["units"].values())
    assert {"nanosecond", "byte", "instruction", "percent", "1/second"} <= seen
    for text in seen:
        assert set(parse_unit(text).dims) <= {"s", "B", "inst", "%"}, text
    assert conversion_factor(parse_unit("nanosecond"), parse_unit("ns")) == 1.0
    assert conversion_factor(parse_unit("percent"), parse_unit("%")) == 1.0
    # so that --combine sums times and bytes but takes the max of rates and percentages
    from rangeprof.table import default_combine
    assert [default_combine(parse_unit(u)) for u in ("nanosecond", "byte", "percent", "1/second")] \
        == ["sum", "sum", "max", "max"]


def test_a_cycle_of_a_named_clock_is_a_cycle():
    """CUPTI writes a cycle counter's unit with its clock ('gpc_cycle', 'sm_cycle'), ncu's
    CSV the same metric's as 'cycle' (recorded_range/ncu_chain.csv against rm_chain.jsonl):
    they convert 1:1, and stay apart from other dimensions."""
    cycle = parse_unit("cycle")
    assert conversion_factor(parse_unit("gpc_cycle"), cycle) == 1.0
    assert conversion_factor(parse_unit("sm_cycle"), parse_unit("gpc_cycle")) == 1.0
    assert conversion_factor(parse_unit("gpc_cycle/nsecond"), parse_unit("cycle/second")) \
        == pytest.approx(1e9)
    assert parse_unit("gpc_cycle").dims == {"cycle": 1}
    assert parse_unit("byte_count").dims == {"byte_count": 1}


def test_a_literal_count_is_a_number_as_a_config_count_is():
    """Issue 38, finding 9: '1000/gpu__time_duration.sum' gave a rate 1000 times smaller
    than 'items/gpu__time_duration.sum' with items = 1000: a literal power of 1000 was
    taken for a change of prefix wherever it stood."""
    t = {"gpu__time_duration.sum": (1000.0, NS)}
    per_s = parse_unit("1/second")

    def rate(text, **more):
        value, unit = parse_derivation(text).evaluate(dict(t, **more))
        return value * conversion_factor(parse_unit(unit), per_s)
    literal = rate("x=1000/gpu__time_duration.sum")
    config = rate("x=items/gpu__time_duration.sum", items=(1000.0, DIMENSIONLESS))
    assert literal == pytest.approx(config) == pytest.approx(1e9)
    assert rate("x=1e3*items/gpu__time_duration.sum", items=(1.0, DIMENSIONLESS)) == \
        pytest.approx(1e9)
    # A scaling of the whole expression at its end stays a change of prefix.
    assert rate("x=items/gpu__time_duration.sum/1e3", items=(1000.0, DIMENSIONLESS)) == \
        pytest.approx(1e9)
    assert rate("x=items/gpu__time_duration.sum*1e-3/1e3", items=(1000.0, DIMENSIONLESS)) \
        == pytest.approx(1e9)
