"""rangeprof/tools_manager.py - Nsight Python 1.1's tool selection (nsight.Tool, activate,
deactivate, get_active_tool) with the same meanings. Nsight Python measures through one of
two tools: Tool.NCU (ncu's injection library, every ncu metric; activated at import) or
Tool.CUPTI (CUPTI activity records, kernel time only). rangeprof's library is the tool
that 'import rangeprof' loads: it measures ncu's metrics, by ncu's names, with CUPTI's
range profiler, so it is Tool.NCU, active from the import wherever the library attached.
As in Nsight Python, the active tool cannot be switched (activate(Tool.CUPTI) raises
RuntimeError) nor unloaded (deactivate() warns). Standard library only."""
import enum
import warnings

from rangeprof import _control

__all__ = ["Tool", "activate", "deactivate", "get_active_tool"]


class Tool(str, enum.Enum):
    """The tools Nsight Python can measure with."""
    NCU = "ncu"
    CUPTI = "cupti"


def _attached():
    a = _control.current()
    return a is not None and a.library is not None and a.unavailable is None


def activate(tool: Tool) -> None:
    """Makes tool the active one. Tool.NCU is rangeprof's library: a no-op once it is
    attached (the import attaches it), else it attaches now and raises
    rangeprof.exceptions.Unavailable (a ProfilerException) naming why it cannot.
    Tool.CUPTI raises RuntimeError: the library is active and cannot be switched, as in
    Nsight Python after its import activated ncu. ValueError for anything but a Tool."""
    if not isinstance(tool, Tool):
        raise ValueError(f"tool must be a nsight.Tool member (one of "
                         f"{[t.name for t in Tool]}), got {tool!r}")
    if tool == Tool.CUPTI:
        raise RuntimeError(f"{Tool.NCU!r} is already active; cannot switch to {tool!r}: "
                           "rangeprof's library (loaded at import) measures ncu's metrics, "
                           "gpu__time_duration.sum among them, with CUPTI's range profiler, "
                           "and is the only tool in this process")
    _control.require()


def deactivate() -> None:
    """The library cannot be unloaded once loaded: warns (RuntimeWarning) and keeps it
    active, as Nsight Python does for ncu. A no-op when none is active."""
    if _attached():
        warnings.warn("rangeprof's library cannot be deactivated once loaded; it stays the "
                      "active tool for the lifetime of the process.", RuntimeWarning,
                      stacklevel=2)


def get_active_tool():
    """Tool.NCU while rangeprof's library is attached and can measure in this process,
    else None (no library, no driver-side profiler: rangeprof.info() says why)."""
    return Tool.NCU if _attached() else None

