"""rangeprof/exceptions.py - what rangeprof.annotate and rangeprof.analyze raise and warn,
under Nsight Python 1.1's names (nsight.exceptions) so that a script's except clauses
catch ours: ProfilerException, MetricErrorType and get_metrics_error_message (the message
for a metric the GPU does not have), NCUNotAvailableError, ThermalControlError and
CoolingTimeoutError, with their hierarchy. rangeprof's own classes derive from
ProfilerException and from the builtin class a caller would expect (ValueError,
RuntimeError). Standard library only."""
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum


class MetricErrorType(Enum):
    """Why a metric was refused, as Nsight Python says it."""
    INVALID = "Invalid"
    UNSUPPORTED = "Unsupported"


class ProfilerException(Exception):
    """An error of the profiler, as Nsight Python names it."""


class NCUNotAvailableError(Exception):
    """Nsight Python's error for an ncu it cannot run. rangeprof never runs ncu, so it never
    raises this; the class exists so that scripts catching it run (a missing library or
    GPU is rangeprof.exceptions.Unavailable)."""


class ThermalControlError(Exception):
    """Nsight Python's base of thermal control errors."""


class CoolingTimeoutError(ThermalControlError):
    """The GPU did not cool to the threshold within thermal_timeout. rangeprof's thermal
    guard runs in its library, which measures anyway after the timeout and says so in a
    warning (a RangeprofWarning), so rangeprof does not raise this."""


CUDA_CORE_UNAVAILABLE_MSG = (
    "cuda-core is required for ignore_failures functionality.\n Install it with:\n"
    "  - pip install nsight-python[cu12]  (if you have CUDA 12.x)\n"
    "  - pip install nsight-python[cu13]  (if you have CUDA 13.x)")
CUPTI_UNAVAILABLE_MSG = ("cupti-python is required for cupti tool functionality.\n "
                         "Install it with:\n  - pip install nsight-python[cupti]")


def get_metrics_error_message(metrics: Sequence[str], error_type: MetricErrorType) -> str:
    """Nsight Python's message for metrics that cannot be collected: 'Invalid value
    ['x'] for 'metrics' parameter for nsight.analyze.kernel(). ...'."""
    return (f"{error_type.value} value {metrics} for 'metrics' parameter for "
            "nsight.analyze.kernel().\nPlease refer ncu --query-metrics for list of "
            "supported metrics.")


@dataclass
class NCUErrorContext:
    """Nsight Python's context of an ncu failure (its log's errors, the log's path, the
    metrics); rangeprof has no ncu log and makes none."""
    errors: list
    log_file_path: str
    metrics: Sequence[str]


class ConfigError(ProfilerException, ValueError):
    """The configs given to an analyze.kernel function cannot be used (Nsight Python's
    messages: no configs, empty, given twice, lengths that differ)."""


class Unavailable(ProfilerException, RuntimeError):
    """rangeprof cannot measure in this process: librangeprof.so is not installed or not
    loadable, speaks another control API version, or another CUPTI client (ncu, nsys,
    torch.profiler) holds the GPU's profiler. The message says which."""


class MeasurementError(ProfilerException, RuntimeError):
    """The library reported an error that stops the measurement. A metric this GPU does
    not have gives Nsight Python's message (get_metrics_error_message, INVALID) followed
    by the library's."""


class NothingMeasured(ProfilerException, RuntimeError):
    """An analyze.kernel call measured no kernel at all."""


class NestedAnnotationError(ValueError):
    """An annotation was opened while one of the same name is open."""


class NoMeaning(ProfilerException, AttributeError):
    """A name of Nsight Python that has no meaning in rangeprof (it drives ncu, which
    rangeprof does not run); the message says why and what to use instead."""


class RangeprofWarning(UserWarning):
    """A warning record of the library (a kernel not replayed, a thermal wait that timed
    out, NVML missing), or an annotation that measured nothing."""
