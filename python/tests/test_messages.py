"""A bad value is named in a message, shortened, with what is accepted (issue 38's review:
`rangeprof-report --by-rank --alpha <a 100 KB value>` echoed the whole value): every
tool's refusal of an argument of any length is one line of a few hundred characters at
most, quoting the value's start and its length (rangeprof.output.said and brief)."""
import io
import time

import pytest

from rangeprof import compare, compare_ncu, plots, report
from rangeprof.output import VALUE_WIDTH, brief, said

BIG = "x" * 100000
NOTE = "(100000 characters)"


def test_said_quotes_a_value_whole_or_its_start_with_its_length():
    assert said("0.5") == "'0.5'"
    assert said("a\nb\x1b[2J") == "'a\\nb\\x1b[2J'"  # one line, no terminal escape
    assert said(BIG) == "'" + "x" * VALUE_WIDTH + "…' " + NOTE
    assert said("y" * VALUE_WIDTH) == "'" + "y" * VALUE_WIDTH + "'"


def test_brief_shortens_the_values_argparse_and_exceptions_put_in_messages():
    assert brief(f"invalid choice: '{BIG}' (choose from 'a', 'b')") == \
        f"invalid choice: {said(BIG)} (choose from 'a', 'b')"
    assert brief(f"unrecognized arguments: --{BIG} b") == \
        f"unrecognized arguments: --{'x' * (VALUE_WIDTH - 2)}… (100002 characters) b"
    short = "no JSONL file matches '/home/me/runs/*.jsonl'; it's a pattern"
    assert brief(short) == short
    # Linear: quotes and long words of every length, 1 MB in all.
    start = time.process_time()
    brief("'" * 300000 + ("z" * 239 + " ") * 1000 + ("a" * 119 + "'") * 5000)
    assert time.process_time() - start < 2


def _stderr(main, argv, capsys):
    try:
        code = main(argv) if main is plots.main else main(argv, out=io.StringIO())
    except SystemExit as e:
        code = e.code
    return code, capsys.readouterr().err


ALPHA = "expected a number > 0 and < 1"


@pytest.mark.parametrize("tool,args,words", [
    # The review's case, and every argument type the tools share (output.number).
    (report.main, ["--by-rank", "--alpha", BIG], ["--alpha", ALPHA]),
    (report.main, ["--peak-flops", BIG], ["--peak-flops", "expected a number > 0"]),
    (plots.main, ["by-rank", "F", "-o", "x.png", "--alpha", BIG], ["--alpha", ALPHA]),
    (compare.main, ["F", "F", "--alpha", BIG], ["--alpha", ALPHA]),
    (compare.main, ["F", "F", "--threshold", BIG], ["--threshold", "expected a number >= 0"]),
    (compare.main, ["F", "F", "--min-runs", BIG], ["--min-runs", "an integer >= 2"]),
    (compare.main, ["F", "F", "--allow", BIG], ["--allow", "unmatched, unjudged"]),
    (compare.main, ["F", "F", "--higher-is-better", BIG, "--lower-is-better", BIG],
     ["both name"]),
    # argparse's own messages: an invalid choice, unrecognized arguments.
    (report.main, ["--preset", BIG], ["--preset", "invalid choice", "choose from"]),
    (compare.main, ["F", "F", "--method", BIG], ["--method", "'welch', 'bootstrap'"]),
    (report.main, ["F", "--" + BIG], ["unrecognized arguments"]),
    (compare_ncu.main, ["F", "F", "--" + BIG], ["unrecognized arguments"]),
])
def test_a_100_kb_argument_is_refused_in_one_short_line(recorded, capsys, tool, args, words):
    f = str(recorded("vadd.jsonl"))
    code, err = _stderr(tool, [f if a == "F" else a for a in args], capsys)
    assert code == 2
    assert err.count("\n") == 1 and len(err) < 400, err[:500]
    assert ("(100000 characters)" in err or "(100002 characters)" in err), err
    for w in words:
        assert w in err, (w, err)


def test_compare_names_a_side_of_a_long_name_shortened(recorded, capsys):
    code, err = _stderr(compare.main, [str(recorded("vadd.jsonl")), BIG], capsys)
    assert code == 2 and err.count("\n") == 1 and len(err) < 400, err[:500]
    assert err.startswith("rangeprof-compare: error: B: no JSONL file matches 'xxx")
    assert NOTE in err


@pytest.mark.parametrize("tool,args,words", [
    # Refusals composed in the tools, printed by their one error line.
    (report.main, ["--group-by", BIG, "F"], ["--group-by", "no run has a column"]),
    (report.main, ["--derive", BIG, "F"], ["--derive", "expected NAME=EXPRESSION"]),
    (report.main, ["--combine", BIG, "F"], ["--combine", "should be one of sum"]),
    (report.main, ["--normalize-against", BIG, "F"], ["--normalize-against"]),
    (report.main, ["--metric", BIG, "F"], ["--metric: none of", "no values of"]),
    (report.main, [BIG], ["no JSONL file matches"]),
    (report.main, ["--to-parquet", "DIR", BIG], ["no JSONL file matches"]),
    (report.main, ["--by-rank", BIG], ["no JSONL file matches"]),
    (report.main, ["--by-rank", "--metric", BIG + "," + BIG, "F"], ["compares one metric"]),
    (report.main, ["--by-rank", "--metric", BIG, "F"], ["no kernel of metric"]),
    (compare_ncu.main, ["F", BIG], ["File name too long"]),
    (compare_ncu.main, [BIG, "F"], ["no JSONL file matches"]),
    (plots.main, ["sweep", "F", "--x", BIG, "-o", "OUT"], ["--x", "no run has that column"]),
    (plots.main, ["sweep", "F", "--x", "n", "-o", "/tmp/" + BIG + ".png"], ["-o"]),
    (plots.main, ["sweep", "F", "--x", "n", "--metric", BIG, "-o", "OUT"], ["no values of"]),
])
def test_a_100_kb_value_a_tool_refuses_is_quoted_shortened(recorded, tmp_path, capsys, tool,
                                                           args, words):
    f = recorded("vadd.jsonl")
    subst = {"F": str(f), "DIR": str(tmp_path / "ds"), "OUT": str(tmp_path / "p.png")}
    code, err = _stderr(tool, [subst.get(a, a) for a in args], capsys)
    assert code in (1, 2), err[:500]
    # The value's start at most (the message may list what is accepted at length).
    assert "x" * (VALUE_WIDTH + 1) not in err and len(err) < 2000, err[:1000]
    assert "characters)" in err, err[:500]
    for w in words:
        assert w in err, (w, err[:500])
