"""rangeprof/exceptions.py - what rangeprof.annotate and rangeprof.analyze raise and warn.
ProfilerException is Nsight Python's name (nsight.exceptions.ProfilerException), so that a
script catching it catches ours; the others say what went wrong and also derive from the
builtin class a caller would expect (ValueError, RuntimeError). Standard library only."""


class ProfilerException(Exception):
    """An error of the profiler, as Nsight Python names it."""


class ConfigError(ProfilerException, ValueError):
    """The configs given to an analyze.kernel function cannot be used (Nsight Python's
    messages: no configs, empty, given twice, lengths that differ)."""


class Unavailable(ProfilerException, RuntimeError):
    """rangeprof cannot measure in this process: librangeprof.so is not installed or not
    loadable, speaks another control API version, or another CUPTI client (ncu, nsys,
    torch.profiler) holds the GPU's profiler. The message says which."""


class MeasurementError(ProfilerException, RuntimeError):
    """The library reported an error that stops the measurement, such as a metric this GPU
    does not have; the message is the library's."""


class NothingMeasured(ProfilerException, RuntimeError):
    """An analyze.kernel call measured no kernel at all."""


class NestedAnnotationError(ValueError):
    """An annotation was opened while one of the same name is open."""


class RangeprofWarning(UserWarning):
    """A warning record of the library (a kernel not replayed, a thermal wait that timed
    out, NVML missing), or an annotation that measured nothing."""
