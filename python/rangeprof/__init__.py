"""rangeprof - post-processing of rangeprof's JSON Lines: load() gives Nsight Python's
long-form DataFrame, summarize() its aggregate columns. The command-line tools
(rangeprof-report, rangeprof-compare, rangeprof-compare-ncu, rangeprof-plot) and everything
but load(), summarize() and the plots run on the standard library alone.

Importing it also makes the running interpreter measurable (a notebook, a script: no
launcher, no restart): it loads the installed librangeprof.so, or uses the copy already
in the process, and attaches to it (rangeprof/_control.py). Then annotate() and
analyze.kernel/analyze.plot are Nsight Python's API ('import rangeprof as nsight'). A
missing library or GPU never breaks the import: analyze.kernel says what is missing."""
from rangeprof.records import read  # noqa: F401

from ._version import __version__  # noqa: F401


def load(paths_or_globs, report="stderr", **options):
    """pandas DataFrame, one row per run and metric (see rangeprof.frame.load); bad lines
    are printed on stderr unless report is None or another stream."""
    from rangeprof.frame import load as _load
    return _load(paths_or_globs, report=report, **options)


def summarize(df, by=None):
    """Nsight Python's aggregate columns per group (see rangeprof.frame.summarize)."""
    from rangeprof.frame import summarize as _summarize
    return _summarize(df, by=by)


from rangeprof import _control, analyze, exceptions, experimental  # noqa: E402,F401
from rangeprof.analyze import VerbosityLevel, col_panel, row_panel  # noqa: E402,F401
from rangeprof.annotation import annotate  # noqa: E402,F401
from rangeprof.info_collector import CollectionScope, InfoCollector  # noqa: E402,F401


def attach(library=None):
    """Attaches this process to librangeprof.so (import does it already, except in the
    command-line tools); library: a path to load
    instead of the installed one. Returns info()."""
    if library is not None:
        _control.attach(library)
    return info()


def info():
    """What the library says of this process (rangeprof_info: attached, measuring and
    why not, the output file, the NVTX modules it sees, ...) and which library it is;
    attached False with the reason when there is none."""
    return _control.info()


_control.attach_at_import()
