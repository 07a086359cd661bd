"""rangeprof/ncu.py - the name of Nsight Python 1.1's nsight.ncu (its nsight.collection.ncu:
the driver of ncu's injection library, init_injection, begin_profiling, NCUCollector, ...).
rangeprof runs no ncu, so those names have no meaning here: each raises
rangeprof.exceptions.NoMeaning (an AttributeError) saying so. injection_load_error is
None, as in Nsight Python when its injection loaded; why rangeprof cannot measure is
rangeprof.info()'s "reason". rangeprof-compare-ncu, which compares rangeprof with ncu, is
rangeprof.compare_ncu. Standard library only."""
from rangeprof.exceptions import NoMeaning

injection_load_error = None

# Nsight Python 1.1's names in nsight.collection.ncu.
NSIGHT_NAMES = frozenset({
    "BEGIN_SYMBOL", "STOP_SYMBOL", "MIN_NCU_VERSION", "ProfilingParams", "PROFILING_PARAMS",
    "NvInjResult", "get_ncu_version", "check_ncu_version", "get_ncu_report_version",
    "check_ncu_report_version", "format_injection_error_message",
    "get_injection_library_path", "load_library", "init_injection", "launch_ncu",
    "begin_profiling", "end_profiling", "NCUCollector", "begin_profiling_symbol",
    "end_profiling_symbol"})


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    if name in NSIGHT_NAMES:
        raise NoMeaning(f"nsight.ncu.{name} drives Nsight Compute's injection library, which "
                        "rangeprof does not use: rangeprof measures with its own library "
                        "(loaded at import; rangeprof.info() says its state). To compare "
                        "with ncu, see rangeprof.compare_ncu (rangeprof-compare-ncu).")
    raise AttributeError(f"module 'rangeprof.ncu' has no attribute '{name}'")
