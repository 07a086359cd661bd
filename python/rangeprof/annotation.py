"""rangeprof/annotation.py - rangeprof.annotate, Nsight Python's nsight.annotate: a context
manager and decorator that opens a process-wide start/end range in the library
(rangeprof_annotation_begin/end, NVTX domain "rangeprof"), so that the kernels launched
from any thread while it is open are measured and their records carry its name.

Outside rangeprof.analyze.kernel an annotation measures with the options in force (the
records go to the output file only); inside, analyze's measurement is told of each
annotation's end so that it knows which records belong to which execution. When the
library is missing or measures nothing in this process, an annotation does nothing.
Standard library only."""
import functools
import threading
import warnings

from rangeprof import _control
from rangeprof.exceptions import RangeprofWarning

# The measurement of the analyze.kernel call under way, or None (set by rangeprof.analyze).
_measurement = None


class annotate:
    """Marks a region whose kernels are measured and reported under this name:

        with rangeprof.annotate("matmul"):
            c = a @ b

        @rangeprof.annotate("einsum")
        def einsum(a, b):
            return torch.einsum("ij,jk->ik", a, b)

    name: the annotation's name (a non-empty str); two annotations of one name cannot be
    open at once (ValueError). ignore_failures: an exception raised inside is swallowed
    and, within analyze.kernel, that execution is reported with NaN values (Nsight
    Python's meaning; KeyboardInterrupt and SystemExit always propagate)."""

    def __init__(self, name, ignore_failures=False):
        if not isinstance(name, str):
            raise TypeError(f"annotate(name): name must be a str, not "
                            f"{type(name).__name__} ({name!r})")
        if not name:
            raise ValueError("annotate(name): name must not be empty")
        if "\0" in name:
            raise ValueError(f"annotate(name): name {name!r} holds a NUL character")
        self.name = name
        self.ignore_failures = bool(ignore_failures)
        self._local = threading.local()

    def _stack(self):
        stack = getattr(self._local, "stack", None)
        if stack is None:
            stack = self._local.stack = []
        return stack

    def __enter__(self):
        a = _control.attach()
        lib = a.library if a.library is not None and a.unavailable is None else None
        measurement = _measurement
        opened = False
        if lib is not None:
            if measurement is not None:
                measurement.attempting(self.name)
            try:
                opened = lib.annotation_begin(self.name) == _control.OK
            except (ValueError, MemoryError):
                # Refused (one of this name is open, ...): nothing was opened.
                if measurement is not None:
                    measurement.abandoned(self.name)
                raise
            except BaseException:
                # An interrupt after the library opened it, before Python knew: the
                # measurement's cleanup closes it, or this does.
                if measurement is None:
                    lib.annotation_end(self.name)
                raise
            if not opened and measurement is not None:
                measurement.abandoned(self.name)
        self._stack().append((lib if opened else None, measurement if opened else None))
        return self

    def __exit__(self, exc_type, exc, tb):
        stack = self._stack()
        lib, measurement = stack.pop() if stack else (None, None)
        if lib is not None:
            rc = lib.annotation_end(self.name)
            if measurement is not None:
                measurement.ended(self.name, rc == _control.OK)
            if rc != _control.OK and exc_type is None:
                warnings.warn(f"rangeprof: closing annotation '{self.name}': "
                              f"{lib.last_error() or _control.CODE_NAMES.get(rc, rc)}",
                              RangeprofWarning, stacklevel=2)
        if exc_type is not None and self.ignore_failures and issubclass(exc_type, Exception):
            if measurement is not None or _measurement is not None:
                (measurement or _measurement).failed(self.name, exc)
            return True
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def wrapped(*args, **kwargs):
            with self:
                return func(*args, **kwargs)
        return wrapped

    def __repr__(self):
        return f"rangeprof.annotate({self.name!r})"
