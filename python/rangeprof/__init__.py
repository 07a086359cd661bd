"""rangeprof - post-processing of rangeprof's JSON Lines: load() gives Nsight Python's
long-form DataFrame, summarize() its aggregate columns. The command-line tools
(rangeprof-report, rangeprof-compare, rangeprof-compare-ncu, rangeprof-plot) and everything
but load(), summarize() and the plots run on the standard library alone.

Importing it also makes the running interpreter measurable (a notebook, a script: no
launcher, no restart): it loads the installed librangeprof.so, or uses the copy already
in the process, and attaches to it (rangeprof/_control.py). Then annotate() and
analyze.kernel/analyze.plot are Nsight Python's API ('import rangeprof as nsight'),
with every public name of Nsight Python 1.1 (exceptions, utils, Tool, activate, ...; a
name that has no meaning here, such as nsight.ncu's, raises exceptions.NoMeaning saying
why). A missing library or GPU never breaks the import: analyze.kernel says what is
missing. The import leaves nothing behind and changes nothing child processes see
(attach(children=True) asks for that)."""
from rangeprof.records import read  # noqa: F401

from ._version import __version__  # noqa: F401


def load(paths_or_globs, report="stderr", **options):
    """pandas DataFrame, one row per run and metric, from JSON Lines files and Parquet
    datasets (see rangeprof.sources.load); bad lines are printed on stderr unless report
    is None or another stream."""
    from rangeprof.sources import load as _load
    return _load(paths_or_globs, report=report, **options)


def summarize(df, by=None):
    """Nsight Python's aggregate columns per group (see rangeprof.frame.summarize)."""
    from rangeprof.frame import summarize as _summarize
    return _summarize(df, by=by)


from rangeprof import _control, analyze, annotation, exceptions, experimental  # noqa: E402,F401
from rangeprof import info_collector, ncu, tools_manager, utils  # noqa: E402,F401
from rangeprof.annotation import annotate  # noqa: E402,F401
from rangeprof.info_collector import CollectionScope, InfoCollector  # noqa: E402,F401
from rangeprof.tools_manager import Tool, activate, deactivate, get_active_tool  # noqa: E402,F401
from rangeprof.utils import VerbosityLevel, col_panel, row_panel  # noqa: E402,F401

# Nsight Python 1.1's __all__, then rangeprof's own.
__all__ = ["CollectionScope", "InfoCollector", "Tool", "VerbosityLevel", "activate",
           "analyze", "annotate", "deactivate", "experimental", "get_active_tool",
           "load", "summarize", "read", "attach", "info", "prepare"]

# Modules of Nsight Python that are its machinery around ncu: no meaning here.
_NO_MEANING = {
    "collection": "Nsight Python's collectors (ncu, CUPTI activity records); rangeprof "
                  "measures with its own library, loaded at import",
    "thermovision": "Nsight Python's thermal guard in Python; rangeprof's runs in its "
                    "library (analyze.kernel's thermal_mode, thermal_wait, thermal_cont, "
                    "thermal_timeout)",
    "transformation": "Nsight Python's aggregation of ncu's results; rangeprof's is "
                      "rangeprof.summarize and ProfileResults.to_dataframe()",
    "extraction": "Nsight Python's reader of .ncu-rep reports; rangeprof writes JSON Lines "
                  "(rangeprof.load)",
    "visualization": "Nsight Python's plotting; rangeprof's is analyze.plot",
}


def __getattr__(name):
    if name in _NO_MEANING:
        from rangeprof.exceptions import NoMeaning
        raise NoMeaning(f"nsight.{name} has no meaning in rangeprof: it is "
                        f"{_NO_MEANING[name]}")
    raise AttributeError(f"module 'rangeprof' has no attribute '{name}'")


def attach(library=None, children=False):
    """Attaches this process to librangeprof.so (import does it already, except in the
    command-line tools); library: a path to load instead of the installed one. Child
    processes are not measured (nothing of rangeprof's is in their environment) unless
    children=True: then the processes this one starts from now on measure as under the
    launcher, with the options of their environment (RANGEPROF_*), each into its own
    rangeprof.<pid>.jsonl beside this process's. Returns info(). TypeError, before
    anything is done, for a children that is not True or False (children='no' would be
    true) or a library that is not a path."""
    import os
    from rangeprof.output import said
    if not isinstance(children, bool):
        raise TypeError(f"attach(children={said(children)}): expected True or False, "
                        f"not {type(children).__name__}")
    if library is not None and not isinstance(library, (str, bytes, os.PathLike)):
        raise TypeError(f"attach(library={said(library)}): expected the path of "
                        f"librangeprof.so (str or os.PathLike) or None, not "
                        f"{type(library).__name__}")
    a = _control.attach(library) if library is not None else _control.attach()
    if children:
        _control.measure_children(a)
    return info()


def prepare(device=None):
    """Starts the GPU's set-up now, on a thread of the library's, so that the first
    measured call does not wait for CUPTI's one-time work (the range profiler and its
    first pass, the flush and hash kernels: ~0.3 s on an H200). In a notebook or an
    interactive session analyze.kernel does this when it decorates a function; a script
    calls it where it may start CUDA. Where CUDA was not started, this starts it and makes
    the device's primary context, which PyTorch and CuPy then use: CUDA_VISIBLE_DEVICES
    set afterwards has no effect, and a child forked afterwards cannot use CUDA.
    RANGEPROF_SETUP=lazy turns it off. device: a CUDA device ordinal as this process
    numbers it (0 to 63: rangeprof_control.h's RANGEPROF_MAX_DEVICES - 1), or None: the
    current context's device, else device 0 (a device the driver does not have is said in
    info()['prepare'], the list of the devices asked for and what each thread met). Returns info(). TypeError for a device that is not an
    int or None, ValueError for one out of range, Unavailable where rangeprof measures
    nothing in this process, MemoryError when no thread could be started."""
    import operator
    from rangeprof.exceptions import Unavailable
    from rangeprof.output import said
    if device is not None:
        if isinstance(device, bool):
            raise TypeError(f"prepare(device={said(device)}): expected a device ordinal "
                            "(int) or None, not bool")
        try:
            device = operator.index(device)
        except TypeError:
            raise TypeError(f"prepare(device={said(device)}): expected a device ordinal "
                            f"(int) or None, not {type(device).__name__}") from None
        if not 0 <= device < _control.MAX_DEVICES:
            raise ValueError(f"prepare(device={device}): expected a device ordinal from 0 "
                             f"to {_control.MAX_DEVICES - 1}, or None for the current device")
    rc, msg = _control.prepare(-1 if device is None else device)
    if rc == _control.EUNAVAILABLE:
        raise Unavailable(f"rangeprof cannot measure in this process: {msg}")
    if rc == _control.ENOMEM:
        raise MemoryError(msg)
    if rc != _control.OK:
        raise ValueError(msg or f"rangeprof_prepare: {_control.CODE_NAMES.get(rc, rc)}")
    return info()


def info():
    """What the library says of this process (rangeprof_info: attached, measuring and
    why not, the output file, the NVTX modules it sees, ...) and which library it is;
    attached False with the reason when there is none."""
    return _control.info()


_control.attach_at_import()
