"""examples/tutorial/README.md against the tools: every '$ rangeprof-...' block there is
run on the committed fixtures (the directory the README says its commands run in), and
what it prints must be what the README shows, line for line (a '... (N more lines)'
line stands for exactly N lines; 'exit N' for the exit status). So is the
rangeprof.load() example. Skips outside a source checkout."""
import contextlib
import io
import os
import re
import shlex
from pathlib import Path

import pytest

from rangeprof import compare, report
from rangeprof import compare_ncu as ncu

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "examples" / "tutorial" / "README.md"
TOOLS = {"rangeprof-report": report.main, "rangeprof-compare": compare.main,
         "rangeprof-compare-ncu": ncu.main}


def _blocks():
    """(first line number, command, expected lines) of each '$ rangeprof-' block."""
    if not README.exists():
        return []
    lines = README.read_text().splitlines()
    out, i = [], 0
    while i < len(lines):
        if lines[i].startswith("```") and i + 1 < len(lines) and lines[i + 1].startswith("$ rangeprof-"):
            j = i + 2
            while not lines[j].startswith("```"):
                j += 1
            out.append((i + 2, lines[i + 1][2:], lines[i + 2:j]))
            i = j
        i += 1
    return out


BLOCKS = _blocks()


def _run(command):
    """(stdout lines, stderr lines, exit status, which stream the block shows)."""
    words = shlex.split(command)
    shown = "both"
    if words[-2:] == ["2>&1", ">/dev/null"]:
        words, shown = words[:-2], "stderr"
    elif words[-2:] == [">", "/dev/null"]:
        words, shown = words[:-2], "stderr"
    tool = TOOLS[words[0]]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err):
        code = tool(words[1:], out=out)
    return out.getvalue().splitlines(), err.getvalue().splitlines(), code, shown


def _expected(lines):
    """(shown lines, lines left out, exit status or None)."""
    code, more, shown = None, 0, []
    for line in lines:
        m = re.fullmatch(r"\(?exit (\d+)\)?", line.strip())
        if m:
            code = int(m.group(1))
            continue
        m = re.fullmatch(r"\.\.\. \((\d+) more lines\)", line.strip())
        if m:
            more = int(m.group(1))
            continue
        shown.append(line)
    return shown, more, code


@pytest.mark.skipif(not BLOCKS, reason="examples/tutorial/README.md is not here (not a source checkout)")
@pytest.mark.parametrize("block", BLOCKS, ids=[f"README.md:{b[0]}" for b in BLOCKS])
def test_the_tutorial_shows_what_the_tools_print(recorded, monkeypatch, block):
    line, command, lines = block
    monkeypatch.chdir(recorded("vadd.jsonl").parent)
    stdout, stderr, code, shown_stream = _run(command)
    printed = stderr if shown_stream == "stderr" else stdout + stderr
    shown, more, want_code = _expected(lines)
    if more:
        assert len(printed) == len(shown) + more, (command, len(printed))
        printed = printed[:len(shown)]
    assert printed == shown, f"README.md:{line}: {command}\n" + "\n".join(printed)
    if want_code is not None:
        assert code == want_code, command


def test_the_tutorial_load_example(recorded, monkeypatch):
    pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    if not README.exists():
        pytest.skip("examples/tutorial/README.md is not here")
    text = README.read_text()
    m = re.search(r"```python\n(.*?)```\n```\n(.*?)```", text, re.S)
    assert m, "the rangeprof.load example and its output"
    code, output = m.group(1), m.group(2).splitlines()
    monkeypatch.chdir(recorded("clocks.jsonl").parent)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})
    printed = out.getvalue().splitlines()
    shown, more, _ = _expected(output)
    assert len(printed) == len(shown) + more
    assert printed[:len(shown)] == shown
