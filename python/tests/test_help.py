"""--help of every command documents every option and argument, and prints what it
means to (no '%%' left from argparse's escaping, which applies to option help only)."""
import argparse

import pytest

from rangeprof import compare, report
from rangeprof import compare_ncu as ncu


def _parsers():
    out = [("rangeprof-report", report.parser()), ("rangeprof-compare", compare.parser()),
           ("rangeprof-compare-ncu", ncu.parser())]
    try:
        from rangeprof import plots
    except ImportError:
        return out
    p = plots.parser()
    out.append(("rangeprof-plot", p))
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            out += [(f"rangeprof-plot {name}", sub) for name, sub in action.choices.items()]
    return out


PARSERS = _parsers()


@pytest.mark.parametrize("name,parser", PARSERS, ids=[n for n, _ in PARSERS])
def test_every_option_has_help_and_is_in_the_help(name, parser):
    text = parser.format_help()
    assert "%%" not in text and "%(" not in text, text
    squeezed = "".join(text.split())  # argparse wraps lines, also at hyphens
    assert parser.description and "".join(parser.description.split()) in squeezed
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        assert action.help and action.help is not argparse.SUPPRESS, (name, action.dest)
        for option in action.option_strings:
            assert option in text, (name, option)
        if not action.option_strings:
            assert (action.metavar or action.dest) in text, (name, action.dest)


def test_number_arguments_name_their_range_in_the_help():
    text = " ".join(compare.parser().format_help().split())
    assert "significance level (a number > 0 and < 1; default 0.05)" in text
    text = " ".join(report.parser().format_help().split())
    assert "peak FLOP/s for --bound (a number > 0;" in text
