"""rangeprof/info_collector.py - Nsight Python's custom information collectors
(nsight.info_collector): functions whose values become columns of analyze.kernel's
DataFrame, called once per analyze call (ONCE), once per config (CONFIG), once per call
of the decorated function (RUN) or as each annotation is entered (ANNOTATION). Made with
rangeprof.experimental.collect, InfoCollector(name, callback, scope) or a (name,
callback, scope) tuple. Standard library only."""
import inspect
import warnings
from dataclasses import dataclass
from enum import Enum

from rangeprof.exceptions import ProfilerException


class CollectionScope(Enum):
    """When a collector is called: ONCE per analyze call, per CONFIG, per RUN (each call
    of the decorated function: once per config where runs are replayed, 'runs' times with
    replay_runs=False), per ANNOTATION entered."""
    ONCE = "once"
    CONFIG = "config"
    RUN = "run"
    ANNOTATION = "annotation"


@dataclass
class InfoCollector:
    """A collector: its column name, the function and its scope."""
    name: str
    callback: object
    scope: CollectionScope

    def collect(self, *args):
        if self.scope == CollectionScope.ONCE:
            return self.callback()
        return self.callback(*args)


# Columns analyze.kernel makes itself: a collector of one of these names would overwrite it.
RESERVED_COLUMN_NAMES = frozenset({
    "Annotation", "Value", "Metric", "Kernel", "GPU", "Host", "ComputeClock", "MemoryClock",
    "Unit", "AvgValue", "StdDev", "MinValue", "MaxValue", "NumRuns", "CI95_Lower",
    "CI95_Upper", "RelativeStdDevPct", "StableMeasurement", "Geomean", "Normalized",
    "NormalizationValue", "MedianValue", "DriftPct", "Reasons", "SMClock", "Temperature",
    "TemperatureMax", "Power", "ThrottleReasons", "Passes", "KernelIndex", "Launches", "Run",
    "Launch", "Call"})


def canonical_scope(scope, label="collector"):
    if isinstance(scope, CollectionScope):
        return scope
    try:
        return CollectionScope(scope)
    except (TypeError, ValueError):
        valid = ", ".join(repr(s.value) for s in CollectionScope)
        raise ValueError(f"Invalid scope {scope!r} for {label}. Expected one of {valid} or a "
                         "CollectionScope.") from None


def normalize(collectors):
    """[InfoCollector] of analyze.kernel's info_collectors argument; ProfilerException,
    TypeError or ValueError naming what is wrong."""
    if collectors is None:
        return []
    if isinstance(collectors, (str, bytes)) or not hasattr(collectors, "__iter__"):
        raise TypeError(f"info_collectors={collectors!r}: expected a list of collectors")
    out = []
    for c in collectors:
        if isinstance(c, InfoCollector):
            out.append(InfoCollector(c.name, c.callback, canonical_scope(c.scope, repr(c.name))))
        elif isinstance(c, tuple):
            if len(c) != 3:
                raise ValueError("Tuple-format info collector must be (name, callback, "
                                 f"scope); got {c!r}.")
            name, callback, scope = c
            if not isinstance(name, str) or not callable(callback):
                raise TypeError("Tuple-format info collector must be (str name, callable "
                                f"callback, scope); got {c!r}.")
            out.append(InfoCollector(name, callback, canonical_scope(scope, repr(name))))
        elif callable(c):
            scope = getattr(c, "_nsight_collector_scope", None)
            if scope is None:
                raise ValueError(f"Collector function {getattr(c, '__name__', c)} is missing "
                                 "@nsight.experimental.collect(scope=...) decorator")
            name = getattr(c, "_nsight_collector_name", c.__name__)
            out.append(InfoCollector(name, c, canonical_scope(scope, repr(name))))
        else:
            raise TypeError(f"Invalid collector type: {type(c)}. Expected tuple (name, "
                            "callback, scope) or decorated function.")
    seen = set()
    for c in out:
        if c.name in seen:
            raise ProfilerException(f"Duplicate info collector name '{c.name}'. Each "
                                    "collector must have a unique name (the function name "
                                    "becomes the column name).")
        seen.add(c.name)
        if c.name in RESERVED_COLUMN_NAMES:
            raise ProfilerException(f"Info collector name '{c.name}' collides with a reserved "
                                    "profiler column. Reserved names: "
                                    f"{sorted(RESERVED_COLUMN_NAMES)}.")
    return out


def check_parameters(collectors, func, names):
    for c in collectors:
        if c.name in names:
            raise ProfilerException(f"Info collector name '{c.name}' collides with a parameter "
                                    f"of '{func.__name__}'. Rename the collector so it does "
                                    "not shadow a function argument column.")


def bind(callback, leading, config):
    """The arguments of a collector call: leading ones (the annotation's name), then the
    config's values, as many as a fixed-arity callback takes (all for *args)."""
    try:
        params = list(inspect.signature(callback).parameters.values())
    except (TypeError, ValueError):
        return list(leading) + list(config)
    if any(p.kind == inspect.Parameter.VAR_POSITIONAL for p in params):
        return list(leading) + list(config)
    positional = [p for p in params if p.kind in (inspect.Parameter.POSITIONAL_ONLY,
                                                  inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    return list(leading) + list(config[:max(0, len(positional) - len(leading))])


class Session:
    """The collectors of one analyze.kernel call; a failing collector gives None and one
    RuntimeWarning per collector and scope."""

    def __init__(self, collectors):
        self.collectors = collectors
        self.warned = set()

    def of(self, scope):
        return [c for c in self.collectors if c.scope == scope]

    def collect(self, scope, leading=(), config=()):
        out = {}
        for c in self.of(scope):
            try:
                out[c.name] = c.collect(*([] if scope == CollectionScope.ONCE
                                          else bind(c.callback, leading, config)))
            except Exception as e:  # noqa: BLE001 - a collector never stops the measurement
                out[c.name] = None
                if (scope, c.name) not in self.warned:
                    self.warned.add((scope, c.name))
                    warnings.warn(f"Info collector '{c.name}' ({scope.value} scope) raised "
                                  f"{type(e).__name__}: {e}. Its column will be None for "
                                  "failed runs.", RuntimeWarning, stacklevel=4)
        return out
