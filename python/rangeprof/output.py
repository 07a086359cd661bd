"""rangeprof/output.py - tables on stdout as aligned text, CSV or JSON, shared by the
command-line tools. Standard library only."""
import csv
import json
import math
import os
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


def shorten(text, width):
    text = str(text)
    return text if len(text) <= width else text[:width - 1] + "…"


def _json_safe(v):
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return None
    return v


def write(rows, columns, form="text", out=sys.stdout, widths=None):
    """rows (dicts) as 'text' (aligned, long names shortened per widths; a Kernel column
    without 'void', namespaces and parameter list), 'csv' or 'json' (a list of objects,
    NaN as null; names as recorded)."""
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
        return shorten(short_kernel(v) if c == "Kernel" and v else fmt(v), widths.get(c, 1000))
    cells = [[cell(r, c) for c in columns] for r in rows]
    size = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
    numeric = [all(_is_number(r.get(c)) for r in rows) for c in columns]
    def line(items):
        return "  ".join(x.rjust(size[i]) if numeric[i] else x.ljust(size[i])
                         for i, x in enumerate(items)).rstrip()
    try:
        out.write(line(columns) + "\n")
        for row in cells:
            out.write(line(row) + "\n")
        out.flush()
    except BrokenPipeError:
        # '| head' closed the pipe: stop quietly, as cat does, not with a traceback.
        os.dup2(os.open(os.devnull, os.O_WRONLY), out.fileno())
        raise SystemExit(141)


def _is_number(v):
    return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))


def add_version(parser):
    """--version on a command-line tool: the package's version."""
    from rangeprof import __version__
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
