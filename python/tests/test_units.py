"""rangeprof/units.py parses in linear time (issue 38: a long unit took 61-308 s): a
power's digits are split off in one pass, as the regex that did it split them."""
import re
import time

import pytest

from rangeprof import units


def _by_regex(token):
    m = re.fullmatch(r"(.*?)\^?(-?\d+)?", token)
    return m.group(1), int(m.group(2) or 1)


def test_the_power_is_split_as_the_regex_split_it():
    hypothesis = pytest.importorskip("hypothesis")
    st = hypothesis.strategies

    @hypothesis.settings(max_examples=2000, deadline=None, derandomize=True)
    @hypothesis.given(st.text(alphabet="ab^-_19\u0663s", max_size=12))
    def check(token):
        assert units._split_power(token) == _by_regex(token)
    check()
    for token in ("byte^-1", "second2", "byte^", "^", "-", "a-^12", "x^-", "1/s"):
        assert units._split_power(token) == _by_regex(token)


def test_a_long_unit_parses_in_linear_time():
    """20 000 digits after a word (the regex backtracked over every split and digit
    count: about 6 s here) and 200 000 spaces."""
    start = time.perf_counter()
    u = units.parse_unit("x^" + "1" * 20000 + "y")
    units.parse_unit(" " * 200000 + "byte" + " " * 200000)
    units.parse_unit("byte" * 50000)
    assert time.perf_counter() - start < 1.0
    assert u.dims  # an unknown word: a dimension of its own
    assert units.parse_unit("nanosecond^-1").dims == {"s": -1}
