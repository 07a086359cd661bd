"""rangeprof - post-processing of rangeprof's JSON Lines: load() gives Nsight Python's
long-form DataFrame, summarize() its aggregate columns. The command-line tools
(rangeprof-report, rangeprof-compare, rangeprof-compare-ncu, rangeprof-plot) and everything
but load(), summarize() and the plots run on the standard library alone."""
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
