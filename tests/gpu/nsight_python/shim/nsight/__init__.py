"""tests/gpu/nsight_python/shim/nsight - 'import nsight' is 'import rangeprof', for running
Nsight Python's own examples and tests unmodified (tests/gpu/nsight_python/run.py puts this
folder first on PYTHONPATH; nothing else does). The package replaces itself in sys.modules
with rangeprof, and each rangeprof module is also registered as nsight.<name>, so that
'import nsight', 'from nsight import annotation' and 'from nsight.utils import X' all
reach the one rangeprof (never a second copy with its own state)."""
import importlib
import pkgutil
import sys

import rangeprof

# Nsight Python's own module names that rangeprof has (the others, such as
# nsight.thermovision, raise rangeprof's NoMeaning when looked up).
for _name in ("analyze", "annotation", "exceptions", "experimental", "info_collector", "ncu",
              "tools_manager", "utils"):
    importlib.import_module(f"rangeprof.{_name}")
for _info in pkgutil.iter_modules(rangeprof.__path__):
    _module = sys.modules.get(f"rangeprof.{_info.name}")
    if _module is not None:
        sys.modules[f"nsight.{_info.name}"] = _module
sys.modules["nsight"] = rangeprof
