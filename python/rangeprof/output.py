"""rangeprof/output.py - what the command-line tools share: tables on stdout as aligned
text, CSV or JSON; an argument parser whose errors are one line; number arguments
checked against their range; and the guard that turns what no input should cause (a
bug) into one line rather than a traceback. Standard library only."""
import argparse
import csv
import json
import math
import os
import re
import sys

from rangeprof.names import short_kernel


def fmt(value):
    """Compact text of a cell: 4 significant digits for floats, '' for NaN/None."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if value != 0 and (abs(value) >= 1e6 or abs(value) < 1e-3):
            return f"{value:.4g}"
        return f"{value:.4f}".rstrip("0").rstrip(".") if abs(value) < 10 else f"{value:.1f}" \
            if abs(value) < 1e4 else f"{value:.0f}"
    return str(value)


def printable(text):
    """text with every character that is not printable (newlines, tabs, ANSI escapes,
    other control and format characters) escaped as Python writes it ('\\n', '\\x1b'):
    a text from the file (an NVTX range's) cannot forge a table row or retitle the
    terminal. The CSV and JSON outputs escape in their own way."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
                   for c in text)


def shorten(text, width):
    text = str(text)
    return text if len(text) <= width else text[:width - 1] + "…"


# How much of a value a message quotes: enough for a long path, short enough that a value
# of any length (a 100 KB argument, a line of a file) leaves the message one short line.
VALUE_WIDTH = 120
# A run of characters without a space longer than this in a message composed elsewhere
# (argparse's 'unrecognized arguments: ...', an exception's text) is a value too.
_WORD_WIDTH = 240


def said(value, width=VALUE_WIDTH, quoted=True):
    """A bad value as a message quotes it: in quotes (unless quoted is false: a repr()
    has its own), its control characters escaped (printable), and cut after width
    characters with its length said: said('x' * 100000) == "'xxx...x…' (100000
    characters)". The one helper for echoing what a user gave (an argument, a file's
    name, an API's argument) in a message."""
    text = printable(value)
    q = "'" if quoted else ""
    if len(text) <= width:
        return f"{q}{text}{q}"
    return f"{q}{text[:width]}…{q} ({len(str(value))} characters)"


# Both match greedily from each start and never retry inside a match: linear in the
# message (a bounded repeat such as {241,} would rescan every shorter run).
_QUOTED = re.compile("'([^'\n]*)'")
_WORD = re.compile(r"[^\s']+")


def brief(message):
    """message, every value in it shortened as said() does: a quoted one longer than
    VALUE_WIDTH characters, and any other run of more than _WORD_WIDTH characters without
    a space. For messages whose values were put in elsewhere (argparse's own, an
    exception's); a message written here quotes with said()."""
    message = printable(message)
    message = _QUOTED.sub(lambda m: said(m.group(1)) if len(m.group(1)) > VALUE_WIDTH
                          else m.group(0), message)
    return _WORD.sub(lambda m: m.group(0) if len(m.group(0)) <= _WORD_WIDTH else
                     f"{m.group(0)[:VALUE_WIDTH]}… ({len(m.group(0))} characters)", message)


def _json_safe(v):
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return None
    return v


def write(rows, columns, form="text", out=sys.stdout, widths=None):
    """rows (dicts) as 'text' (aligned, long names shortened per widths; a Kernel column
    without 'void', namespaces and parameter list), 'csv' or 'json' (a list of objects,
    NaN as null; names as recorded). A closed pipe ('| head') ends the tool quietly."""
    try:
        _write(rows, columns, form, out, widths)
        out.flush()
    except BrokenPipeError:
        _closed_pipe(out)


def _write(rows, columns, form, out, widths):
    if form == "json":
        json.dump([{c: _json_safe(r.get(c)) for c in columns} for r in rows], out, indent=1)
        out.write("\n")
        return
    if form == "csv":
        w = csv.writer(out, lineterminator="\n")
        w.writerow(columns)
        for r in rows:
            w.writerow(["" if r.get(c) is None or (isinstance(r.get(c), float) and math.isnan(r[c]))
                        else repr(r[c]) if isinstance(r.get(c), float) else r[c] for c in columns])
        return
    widths = widths or {}

    def cell(r, c):
        v = r.get(c)
        return shorten(printable(short_kernel(v) if c == "Kernel" and v else fmt(v)),
                       widths.get(c, 1000))
    cells = [[cell(r, c) for c in columns] for r in rows]
    names = [printable(c) for c in columns]  # (config columns are named by the file)
    size = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(names)]
    numeric = [all(_is_number(r.get(c)) for r in rows) for c in columns]

    def line(items):
        return "  ".join(x.rjust(size[i]) if numeric[i] else x.ljust(size[i])
                         for i, x in enumerate(items)).rstrip()
    out.write(line(names) + "\n")
    for row in cells:
        out.write(line(row) + "\n")


def _is_number(v):
    return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))


def add_version(parser):
    """--version on a command-line tool: the package's version."""
    from rangeprof import __version__
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")


class Parser(argparse.ArgumentParser):
    """argparse whose refusals are one line, 'PROG: error: WHAT (see PROG --help)', exit
    status 2, rather than the usage and then the error."""

    def error(self, message):
        # argparse puts the values in (an invalid choice, unrecognized arguments): each
        # is shortened, so that a 100 KB argument gives a short line.
        self.exit(2, f"{self.prog}: error: {brief(message)} (see {self.prog} --help)\n")


def number(low=None, high=None, low_open=False, high_open=False):
    """An argparse type: a finite decimal number within the bounds (open bounds exclude
    themselves); a refusal names the accepted range."""
    parts = []
    if low is not None:
        parts.append(f"{'>' if low_open else '>='} {low:g}")
    if high is not None:
        parts.append(f"{'<' if high_open else '<='} {high:g}")
    accepted = "a number" + (" " + " and ".join(parts) if parts else "")

    def parse(text):
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value)
                and (low is None or (value > low if low_open else value >= low))
                and (high is None or (value < high if high_open else value <= high))):
            raise argparse.ArgumentTypeError(f"expected {accepted}, not {said(text)}")
        return value
    parse.accepted = accepted
    return parse


# The exit status of a tool whose output was closed ('| head'): 128 + SIGPIPE, as the
# shell gives cat; never 1, which rangeprof-compare gives for a regression.
CLOSED_PIPE_STATUS = 141


def _closed_pipe(*streams):
    """Ends the tool quietly, as cat does, not with a traceback: the closed streams (and
    stdout and stderr, which Python flushes at exit) are pointed at /dev/null."""
    for stream in streams + (sys.stdout, sys.stderr):
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
        except (OSError, ValueError, AttributeError):
            pass
    raise SystemExit(CLOSED_PIPE_STATUS)


def guarded(prog, fn, *args, **kwargs):
    """fn(*args, **kwargs), with what escapes it said in one line on stderr: an interrupt
    (exit 130), a lack of memory (1), a closed pipe on stdout or stderr ('2>&1 | head':
    141, quietly), or any other exception, which no input should cause and is therefore
    called a bug (70). python -X dev shows the traceback."""
    try:
        return fn(*args, **kwargs)
    except BrokenPipeError:
        _closed_pipe()
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except MemoryError:
        print(f"{prog}: error: out of memory", file=sys.stderr)
        return 1
    except Exception as e:  # noqa: BLE001 - the last line of defence, said as such
        if sys.flags.dev_mode:
            raise
        print(f"{prog}: internal error: {type(e).__name__}: {e} (a bug: please report it "
              "with the command line and its input)", file=sys.stderr)
        return 70


class Progress:
    """The tools' progress lines, one rule for all: on stderr (out), never on stdout where
    the tables go; a line every EVERY_S seconds once the work has taken AFTER_S, and one at
    the end if any was said. A subclass says what is done: line(pct, seconds) and
    end(seconds), from self.label, self.total and self.done."""
    AFTER_S = 3.0
    EVERY_S = 5.0

    def __init__(self, label, total, out=None):
        import time
        self.label, self.total, self.done = label, total, 0
        self.out = out if out is not None else sys.stderr
        self.clock = time.monotonic
        self.begin, self.last = self.clock(), None

    def update(self, done):
        """done: how much is done in all."""
        self.done = done
        now = self.clock()
        if now - self.begin < self.AFTER_S or (self.last is not None and
                                               now - self.last < self.EVERY_S):
            return
        self.last = now
        pct = 100 * done / self.total if self.total else 100
        print(self.line(pct, now - self.begin), file=self.out, flush=True)

    def finish(self):
        if self.last is not None:
            print(self.end(self.clock() - self.begin), file=self.out, flush=True)

