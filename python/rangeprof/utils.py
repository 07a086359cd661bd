"""rangeprof/utils.py - Nsight Python 1.1's nsight.utils under 'import rangeprof as nsight':
VerbosityLevel, the panel markers, the printing helpers, CUDA_CORE_AVAILABLE and the small
functions scripts import from it, with the same meanings. NVTX_DOMAIN is the domain of
rangeprof's annotations ('rangeprof'; Nsight Python's is 'nsight-python'). The helpers of
ncu's log (NCULogParser, format_ncu_error_message) read ncu logs as there; rangeprof
writes none. Standard library only; cuda.core is imported only where a name needs it."""
import enum
import inspect
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any

from rangeprof.exceptions import (CUDA_CORE_UNAVAILABLE_MSG, MetricErrorType,
                                  get_metrics_error_message)

NVTX_DOMAIN = "rangeprof"
# The kernel Nsight Python launches in place of an annotation that failed under
# ignore_failures; rangeprof launches none (it reports such an execution as NaN from the
# records), but a script may compare kernel names with it.
DUMMY_KERNEL_NAME = "dummy_kernel_failure"


class VerbosityLevel(enum.IntEnum):
    """How much analyze.kernel prints; a level shows everything of the levels below it.
    SILENT prints nothing at all (the library's ==RANGEPROF== lines and exit table
    included), INFO a line per call and the files written, DEBUG also the options set
    and each config."""
    SILENT = 0
    INFO = 3
    DEBUG = 4


class row_panel:
    """Nsight Python's marker class, kept so that scripts naming it run."""


class col_panel:
    """Nsight Python's marker class, kept so that scripts naming it run."""


class Colors:
    """ANSI escapes for coloured printing."""
    HEADER = "\033[95m"
    BLUE = "\033[0;34m"
    CYAN = "\033[0;36m"
    GREEN = "\033[0;32m"
    ORANGE = "\033[0;33m"
    RED = "\033[0;31m"
    PURPLE = "\033[0;35m"
    ENDC = "\033[0m"
    BOLD = "\033[1m"
    UNDERLINE = "\033[4m"


def purple(msg: str) -> str:
    """msg between the purple escape and the reset."""
    return f"{Colors.PURPLE}{msg}{Colors.ENDC}"


def format_time(seconds: float) -> str:
    """seconds as HH:MM:SS."""
    total = int(seconds)
    return f"{total // 3600:02}:{total % 3600 // 60:02}:{total % 60:02}"


def print_header(*lines: str) -> None:
    """lines centred in a framed block of at least 80 columns."""
    width = max([80] + [len(line) + 4 for line in lines])
    rule = purple("[NSIGHT-PYTHON] +" + "=" * (width - 2) + "+")
    print(rule)
    for line in lines:
        print(purple(f"[NSIGHT-PYTHON] | {line.center(width - 4)} |"))
    print(rule)


def print_progress_bar(total_runs: int, curr_run: int, bar_length: int,
                       avg_time_per_run: float, overwrite_output: bool) -> None:
    """A progress bar with the estimated time left (in place with overwrite_output)."""
    progress = curr_run / total_runs
    filled = int(bar_length * progress)
    text = (f"[NSIGHT-PYTHON] Progress: [{'#' * filled}{'-' * (bar_length - filled)}] "
            f"{progress * 100:.2f}% | Estimated time remaining: "
            f"{format_time(avg_time_per_run * (total_runs - curr_run))}")
    if overwrite_output:
        sys.stdout.write("\033[1A\033[2K\r" + text + "\n")
        sys.stdout.flush()
    else:
        print(text)


def print_config(total_configs, curr_config: int, c: Any, overwrite_output: bool) -> None:
    """The config being measured ('Config 2/5: [...]')."""
    where = f"{curr_config}/{total_configs}" if total_configs is not None else f"{curr_config}"
    text = f"Config {where}: {list(map(str, c))}"
    if overwrite_output:
        sys.stdout.write("\033[2F\033[2K\r[NSIGHT-PYTHON] " + text + "\n\n")
        sys.stdout.flush()
    else:
        print_header(text)


def batched(iterable, n: int):
    """Tuples of n items of iterable (the last one shorter), as itertools.batched."""
    if n < 1:
        raise ValueError("n must be atleast 1")
    it = iter(iterable)
    while batch := tuple(islice(it, n)):
        yield batch


def is_scalar(config: Any) -> bool:
    """Whether a config is one value rather than a sequence of them (a str is one)."""
    return isinstance(config, str) or not isinstance(config, Sequence)


def find_external_stacklevel() -> int:
    """The warnings stacklevel of the first frame outside this package."""
    here = os.path.dirname(os.path.abspath(__file__))
    for level, frame in enumerate(inspect.stack(), start=1):
        if not os.path.abspath(frame.filename).startswith(here):
            return level
    return 1


@dataclass
class ActionData:
    """One measured kernel as Nsight Python keeps it: name, metric values, the rated
    clocks (kHz), the GPU's name and the metrics' units."""
    name: str
    values: Any
    compute_clock: int
    memory_clock: int
    gpu: str
    units: list

    @staticmethod
    def combine(value_reduce_op):
        """A function of two ActionData that joins their names with '|' and reduces their
        values with value_reduce_op."""
        def _combine(lhs, rhs):
            if (lhs.compute_clock, lhs.memory_clock, lhs.gpu, lhs.units) != \
                    (rhs.compute_clock, rhs.memory_clock, rhs.gpu, rhs.units):
                raise ValueError("ActionData.combine: the two kernels differ in clocks, GPU "
                                 "or units")
            return ActionData(f"{lhs.name}|{rhs.name}",
                              value_reduce_op(lhs.values, rhs.values), lhs.compute_clock,
                              lhs.memory_clock, lhs.gpu, lhs.units)
        return _combine


class LogParser:
    """A log file's entries by category (none in the base class)."""

    def parse_logs(self, log_file_path: str) -> dict:
        return {}


class NCULogParser(LogParser):
    """ncu's log: its ==ERROR==, ==PROF== and ==WARNING== lines by category."""
    _LINE = re.compile(r"^==(ERROR|PROF|WARNING)==\s+(.*)$")

    def parse_logs(self, log_file_path: str) -> dict:
        out = {"ERROR": [], "PROF": [], "WARNING": []}
        with open(log_file_path) as f:
            for line in f:
                m = self._LINE.match(line.strip())
                if m:
                    out[m.group(1)].append(m.group(2))
        return out

    def get_logs(self, log_file_path: str, category: str) -> list:
        return self.parse_logs(log_file_path).get(category, [])


def format_ncu_error_message(context) -> str:
    """Nsight Python's message for an ncu failure (an NCUErrorContext)."""
    parts = ["PROFILING FAILED \nErrors:"]
    if context.errors and "Failed to find metric" in context.errors[0]:
        parts.append(get_metrics_error_message(context.metrics, MetricErrorType.INVALID))
    else:
        parts.append("\n".join(f"- {e}" for e in context.errors))
    parts.append(f"\nRefer Nsight Compute CLI log file: {context.log_file_path} for more "
                 "details.")
    return "\n".join(parts)


def _cuda_core():
    try:
        from cuda import core
    except ImportError:
        return None
    return core


def get_device_properties():
    """(name, SM clock in kHz, memory clock in kHz) of the current device (cuda.core)."""
    core = _cuda_core()
    if core is None:
        raise ImportError(CUDA_CORE_UNAVAILABLE_MSG)
    device = core.Device()
    return device.name, device.properties.clock_rate, device.properties.memory_clock_rate


def launch_dummy_kernel_module() -> None:
    """Nsight Python launches an empty kernel where an annotation failed under
    ignore_failures, to keep its count of kernels per run; rangeprof counts from its
    records and needs none, so this is refused rather than run for nothing."""
    from rangeprof.exceptions import NoMeaning
    raise NoMeaning("utils.launch_dummy_kernel_module: Nsight Python launches an empty kernel "
                    "in place of a failed annotation so that ncu's report keeps one kernel per "
                    "run; rangeprof reports the failed execution as NaN from its records and "
                    "launches nothing")


get_dummy_kernel_module = launch_dummy_kernel_module


def __getattr__(name):
    # Whether cuda.core imports, as Nsight Python sets it at import; computed at the first
    # look so that 'import rangeprof' does not import cuda.core.
    if name == "CUDA_CORE_AVAILABLE":
        value = _cuda_core() is not None
        globals()[name] = value
        return value
    raise AttributeError(f"module 'rangeprof.utils' has no attribute '{name}'")
