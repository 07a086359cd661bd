"""rangeprof/analyze.py - rangeprof.analyze.kernel and rangeprof.analyze.plot, Nsight
Python's nsight.analyze API on rangeprof's in-process library: a script written for
Nsight Python runs with 'import rangeprof as nsight'.

    @rangeprof.analyze.plot("sweep.png")
    @rangeprof.analyze.kernel(configs=[(1024,), (2048,)], runs=10)
    def bench(n):
        a, b = torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda")
        with rangeprof.annotate("matmul"):
            a @ b

    bench().to_dataframe()

Each call of the decorated function sets the library's options for its settings
(rangeprof_set_option: metrics, runs, cache and clock control, thermal guard), begins a
capture, calls the function once per config - the library replays every kernel launched
inside an annotation 'runs' times (replay_runs=False calls it 'runs' times instead, one
measured run each, as Nsight Python does) - and turns the captured records into Nsight
Python's DataFrame (rangeprof/_results.py) with the statistics of rangeprof/stats.py.
Standard library only until a DataFrame or a plot is made (pandas, matplotlib)."""
import collections
import contextlib
import functools
import inspect
import math
import os
import re
import socket
import tempfile
import threading
import warnings
from collections.abc import Iterable, Sequence

from rangeprof import _control, _results, annotation, exceptions, info_collector
from rangeprof.utils import VerbosityLevel, col_panel, row_panel  # noqa: F401
from rangeprof.exceptions import (ConfigError, MeasurementError, NothingMeasured,
                                  RangeprofWarning, Unavailable)

__all__ = ["kernel", "plot", "ignore_failures", "ProfileResults", "VerbosityLevel",
           "row_panel", "col_panel"]


DEFAULT_METRICS = ("gpu__time_duration.sum",)
# Nsight Python's defaults for the thermal guard: wait below 10 degrees C of headroom,
# continue at 20, give up after 180 s.
THERMAL_WAIT, THERMAL_CONT, THERMAL_TIMEOUT = 10, 20, 180
CHOICES = {"clock_control": ("none", "base"), "cache_control": ("all", "none"),
           "replay_mode": ("kernel", "range"), "thermal_mode": ("auto", "manual", "off")}
# What the options go back to after a call: the process's own setting (a RANGEPROF_
# variable, which the launcher sets too) or the library's default.
_BASELINE = collections.OrderedDict([
    ("metrics", "gpu__time_duration.sum"), ("runs", "5"), ("cache-control", "all"),
    ("clock-control", "none"), ("thermal-control", "auto"), ("thermal-wait", "10"),
    ("thermal-continue", "20"), ("thermal-timeout", "30")])

_busy = threading.Lock()
_devices = {}            # device index -> the library's device record, process-wide
_replay_mode_set = [False]


class ProfileResults:
    """What a decorated function returns: to_dataframe() gives Nsight Python's processed
    DataFrame (one row per annotation, kernel, config and metric), to_dataframe(extra=True)
    the same with rangeprof's own columns after Nsight Python's; raw_dataframe() one row
    per run, kernel and metric; records the captured JSON records."""

    def __init__(self, results, raw=None, records=()):
        self._results = results
        self._raw = raw
        self.records = list(records)

    def to_dataframe(self, extra=False):
        """The processed DataFrame, with Nsight Python 1.1's columns, in its order and with
        its dtypes: Annotation, Metric, one column per parameter of the decorated function,
        AvgValue, StdDev, MinValue, MaxValue, NumRuns, Kernel ("range" for a range
        workload, as ncu), GPU, Host, ComputeClock, MemoryClock (kHz, as ncu's device
        attributes), Unit (ncu's names: ns, byte, %, inst, cycle, ...), [the info
        collectors' columns,] CI95_Lower, CI95_Upper (Student t), RelativeStdDevPct,
        StableMeasurement (a nullable boolean, rangeprof's verdict: n >= 5, RSD <= 2 %,
        no drift, steady SM clock, no throttling; NA where n < 2), Normalized,
        [NormalizationValue,] Geomean. With extra=True rangeprof's own columns follow:
        MedianValue, DriftPct, Reasons (why not stable), SMClock (measured, Hz),
        Temperature and TemperatureMax (C), Power (W), ThrottleReasons, Passes,
        KernelIndex (the kernel's place in its annotation), Launches, RangeKernels and
        RangeKernelNames (a range workload's kernels). A new DataFrame at each call."""
        if extra:
            return self._results.copy()
        own = [c for c in _results.OWN_COLUMNS if c in self._results.columns]
        return self._results.drop(columns=own)

    def raw_dataframe(self):
        """One row per measured run, kernel and metric (what output_csv writes as
        profiled_data)."""
        with _raw_lock:   # one frame, whichever thread asks first
            if isinstance(self._raw, _RawFrame):
                self._raw = self._raw.frame()
            return self._raw

    def __repr__(self):
        return f"<rangeprof ProfileResults: {len(self._results)} rows>"


_raw_lock = threading.Lock()


class _RawFrame:
    """raw_dataframe()'s frame, made at its first call: it costs as much as the processed
    one, at every analyze.kernel call, and most scripts never ask for it. Its rows
    (_results.RawRows) make the same frame then as they would have at the call."""

    def __init__(self, rows, columns):
        self.rows, self.columns = rows, columns

    def frame(self):
        import pandas as pd
        return pd.DataFrame(self.rows.dicts(), columns=self.columns)


def _stable_column(pd, df, rows, columns):
    """Nsight Python's nullable boolean StableMeasurement (pd.NA where there is no
    verdict), made from the rows' values (True, False, None) rather than by astype of the
    column the constructor inferred: the same array, for less."""
    name = "StableMeasurement"
    if columns.count(name) == 1 and hasattr(df, "isetitem"):
        df.isetitem(columns.index(name), pd.array([r[name] for r in rows], dtype="boolean"))
    else:   # a parameter or collector of that name too: both columns, as ever
        df[name] = df[name].astype("boolean")


def _check_choice(name, value):
    if value not in CHOICES[name]:
        raise ValueError(f"{name}={value!r}: expected one of "
                         f"{', '.join(repr(c) for c in CHOICES[name])}")


def _check_degrees(name, value):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise TypeError(f"{name}={value!r}: expected degrees C as a number (or None)")
    if not 0 <= value <= 100:
        raise ValueError(f"{name}={value!r}: expected degrees C of headroom from 0 to 100")
    return value


def _fmt(value):
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _regular_params(sig):
    return [p for p in sig.parameters.values()
            if p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)]


def _is_scalar(config):
    return isinstance(config, (str, bytes)) or not isinstance(config, Sequence)


class _Settings:
    """analyze.kernel's arguments, checked."""

    def __init__(self, configs, runs, derive_metric, normalize_against, verbosity, metrics,
                 ignore_kernel_list, clock_control, cache_control, replay_mode, thermal_mode,
                 thermal_wait, thermal_cont, thermal_timeout, thermal_device,
                 combine_kernel_metrics, output_prefix, output_csv, info_collectors,
                 replay_runs):
        if not isinstance(replay_runs, bool):
            raise TypeError(f"replay_runs={replay_runs!r}: expected True (replay each kernel "
                            "'runs' times in one call) or False (call the function 'runs' "
                            "times)")
        if runs == "auto":
            if not replay_runs:
                raise ValueError("runs='auto' needs replay_runs=True: the library decides "
                                 "how many replays of each kernel to measure")
        elif isinstance(runs, bool) or not isinstance(runs, int):
            raise TypeError(f"runs={runs!r}: expected a whole number from 1 to 100000 "
                            "(or 'auto')")
        elif not 1 <= runs <= 100000:
            raise ValueError(f"runs={runs!r}: expected a whole number from 1 to 100000 "
                             "(or 'auto')")
        if isinstance(metrics, str):
            metrics = metrics.split(",")
        if not isinstance(metrics, Iterable):
            raise TypeError(f"metrics={metrics!r}: expected a list of metric names")
        metrics = list(metrics)
        for m in metrics:
            if not isinstance(m, str):
                raise TypeError(f"metrics: {m!r} is not a metric name (a str)")
        metrics = [m.strip() for m in metrics]
        if not metrics or any(not m or "," in m or any(c.isspace() for c in m) for m in metrics):
            raise ValueError(f"metrics={metrics!r}: expected one or more metric names, each "
                             "its own non-empty string without commas or spaces "
                             "(e.g. ['gpu__time_duration.sum'])")
        if len(set(metrics)) != len(metrics):
            raise ValueError(f"metrics={metrics!r}: a metric is named twice")
        if ignore_kernel_list is None:
            ignore_kernel_list = []
        elif isinstance(ignore_kernel_list, str):
            ignore_kernel_list = [ignore_kernel_list]
        elif isinstance(ignore_kernel_list, Iterable):
            ignore_kernel_list = list(ignore_kernel_list)
            if not all(isinstance(k, str) for k in ignore_kernel_list):
                raise TypeError(f"ignore_kernel_list={ignore_kernel_list!r}: expected kernel "
                                "names (str)")
        else:
            raise TypeError(f"ignore_kernel_list={ignore_kernel_list!r}: expected a list of "
                            "kernel names or None")
        for name, value in (("clock_control", clock_control), ("cache_control", cache_control),
                            ("replay_mode", replay_mode), ("thermal_mode", thermal_mode)):
            _check_choice(name, value)
        _check_degrees("thermal_wait", thermal_wait)
        _check_degrees("thermal_cont", thermal_cont)
        if thermal_wait is not None and thermal_cont is not None and thermal_cont <= thermal_wait:
            raise ValueError(
                f"Invalid thermal control parameters: thermal_cont ({thermal_cont}°C) must be "
                f"greater than thermal_wait ({thermal_wait}°C). thermal_cont is the target "
                "thermal headroom after cooling, thermal_wait is the threshold that triggers "
                "cooling.")
        if thermal_timeout is not None:
            if isinstance(thermal_timeout, bool) or not isinstance(thermal_timeout, (int, float)) \
                    or not float(thermal_timeout).is_integer():
                raise TypeError(f"thermal_timeout={thermal_timeout!r}: expected whole seconds "
                                "(or None)")
            if not 0 <= thermal_timeout <= 3600:
                raise ValueError(f"thermal_timeout={thermal_timeout!r}: expected seconds from "
                                 "0 to 3600")
        if thermal_device is not None and (isinstance(thermal_device, bool)
                                           or not isinstance(thermal_device, int)
                                           or thermal_device < 0):
            raise ValueError(f"thermal_device={thermal_device!r}: expected a CUDA device "
                             "ordinal (int >= 0) or None")
        if combine_kernel_metrics is not None:
            _results.check_combine(combine_kernel_metrics)
        if derive_metric is not None and not callable(derive_metric):
            raise TypeError(f"derive_metric must be a callable function, not "
                            f"{type(derive_metric).__name__}")
        if normalize_against is not None and not isinstance(normalize_against, str):
            raise TypeError(f"normalize_against={normalize_against!r}: expected an "
                            "annotation name (str) or None")
        try:
            verbosity = VerbosityLevel(int(verbosity))
        except (TypeError, ValueError):
            raise ValueError(f"verbosity={verbosity!r}: expected one of "
                             f"{', '.join(v.name for v in VerbosityLevel)}") from None
        if output_prefix is not None and not isinstance(output_prefix, (str, os.PathLike)):
            raise TypeError(f"output_prefix={output_prefix!r}: expected a path prefix (str)")
        self.collectors = info_collector.normalize(info_collectors)
        if configs is not None:
            if isinstance(configs, (str, bytes)) or not isinstance(configs, Iterable):
                raise TypeError(f"configs={configs!r}: expected an iterable of configurations "
                                "(e.g. [(1024,), (2048,)]) or None")
            configs = list(configs)   # a generator serves every call, not the first only
        self.configs = configs
        self.runs, self.replay_runs = runs, replay_runs
        self.derive_metric, self.normalize_against = derive_metric, normalize_against
        self.verbosity, self.metrics = verbosity, metrics
        self.ignore_kernel_list = ignore_kernel_list
        self.clock_control, self.cache_control = clock_control, cache_control
        self.replay_mode, self.thermal_mode = replay_mode, thermal_mode
        self.thermal_timeout, self.thermal_device = thermal_timeout, thermal_device
        # One threshold given alone moves the other's default, as the launcher does:
        # thermal_wait=30 alone continues at 30.
        wait = thermal_wait if thermal_wait is not None else (
            min(THERMAL_WAIT, thermal_cont) if thermal_cont is not None else THERMAL_WAIT)
        self.thermal_wait = wait
        self.thermal_cont = thermal_cont if thermal_cont is not None else max(THERMAL_CONT, wait)
        self.combine_kernel_metrics = combine_kernel_metrics
        self.output_prefix, self.output_csv = output_prefix, bool(output_csv)

    def options(self):
        """(name, value) for rangeprof_set_option, in order (the thermal thresholds are set
        by _apply, in an order the library accepts)."""
        runs = "auto" if self.runs == "auto" else str(self.runs if self.replay_runs else 1)
        timeout = THERMAL_TIMEOUT if self.thermal_timeout is None else int(self.thermal_timeout)
        return [("metrics", ",".join(self.metrics)), ("runs", runs),
                ("cache-control", self.cache_control), ("clock-control", self.clock_control),
                ("thermal-control", self.thermal_mode),
                ("thermal-wait", _fmt(self.thermal_wait)),
                ("thermal-continue", _fmt(self.thermal_cont)),
                ("thermal-timeout", str(timeout))]


def _set_all(lib, options):
    """Sets the options in order; the thermal pair in whichever order keeps wait <=
    continue at each step (the library checks the pair as it is set)."""
    pending = list(options)
    values = dict(options)
    for name, value in pending:
        if name == "thermal-continue":
            continue
        if name == "thermal-wait" and "thermal-continue" in values:
            try:
                lib.set_option("thermal-wait", value)
            except ValueError:
                lib.set_option("thermal-continue", values["thermal-continue"])
                lib.set_option("thermal-wait", value)
            else:
                lib.set_option("thermal-continue", values["thermal-continue"])
            continue
        lib.set_option(name, value)


# Whether an analyze.kernel call printing more than SILENT ran in this process: until one
# has, the library stays quiet after SILENT calls, so that a script whose calls are all
# SILENT prints nothing, the library's exit table included.
_loud_call_seen = [False]


def _set_quiet(lib, value):
    """The library's runtime 'quiet' option (its ==RANGEPROF== lines and exit table); a
    library without it (an older build) cannot be silenced, and is left as it is."""
    try:
        lib.set_option("quiet", value)
    except ValueError:
        return False
    return True


def _quiet_baseline():
    """'true' after SILENT calls only, else the process's own setting (RANGEPROF_QUIET, the
    launcher's -q) or the library's default."""
    if not _loud_call_seen[0]:
        return "true"
    return os.environ.get("RANGEPROF_QUIET") or "false"


def _baseline():
    out = []
    for name, default in _BASELINE.items():
        env = "RANGEPROF_" + name.upper().replace("-", "_")
        out.append((name, os.environ.get(env) or default))
    return out


def _cuda_driver_loadable():
    """Whether the NVIDIA driver can be loaded (rangeprof._control.cuda_driver_loadable);
    the tests put a stand-in here."""
    return _control.cuda_driver_loadable()


# The records a call reads at its end, by how the library starts their lines ("type" first).
_READ_AT_THE_END = ('{"type":"run",', '{"type":"summary",')


@contextlib.contextmanager
def _collector_paused():
    """Python's cyclic collector off while rangeprof's own code makes and drops its
    objects (the call's records, rows and frames), so that none it drops is promoted to
    the oldest generation on the way (_results.Call.keep_text says what that costs).
    Never around the decorated function; around its derive_metric and
    combine_kernel_metrics, which _results.build calls per row."""
    import gc

    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


class _Measurement:
    """One analyze.kernel call under way: the capture, the annotations its calls opened
    (closed whatever happens) and each call's stream of records and annotation ends."""

    def __init__(self, lib, collectors=None):
        self.lib = lib
        self.collectors = collectors or info_collector.Session([])
        self.config = ()
        self.lock = threading.RLock()
        self.open = collections.Counter()
        self.calls = []
        self.call = None
        self.entered = []
        self.fatal = []
        self.warned = 0

    def begin_call(self, config_index, call_index):
        with self.lock:
            self.call = _results.Call(config_index, call_index)
            self.calls.append(self.call)

    def attempting(self, name):
        with self.lock:
            self.open[name] += 1
            call = self.call
            if call is not None and name not in call.entered:
                call.entered.append(name)
            if name not in self.entered:
                self.entered.append(name)
            if call is None or not self.collectors.of(info_collector.CollectionScope.ANNOTATION):
                return
            k = sum(1 for kind, item in call.stream if kind == "end" and item == name)
        # The collectors run outside the lock: they are the user's code.
        values = self.collectors.collect(info_collector.CollectionScope.ANNOTATION, (name,),
                                         self.config)
        with self.lock:
            call.annotation_info[(name, k)] = values

    def abandoned(self, name):
        with self.lock:
            self.open[name] -= 1

    def _take(self):
        text = self.lib.capture_take()
        if not text:
            return
        if self.call is None:
            self._look(_results.parse_lines(text))
            return
        # What _look needs now (warnings, errors, devices) is read now; the runs and
        # summaries, nearly all of the text, when the call's records are asked for
        # (_results.Call.keep_text says why). A line refused here is said then.
        from rangeprof import records
        now = []
        for line in text.splitlines():
            if line and not line.startswith(_READ_AT_THE_END):
                rec, why = records.parse_line(line, terminated=True)
                if why is None:
                    now.append(rec)
        self._look(now)
        self.call.keep_text(text)

    def ended(self, name, closed):
        """An annotation's end: what the capture kept until now belongs before it."""
        with self.lock:
            if closed:
                self.open[name] -= 1
            try:
                self._take()
            except Exception as e:  # noqa: BLE001 - never mask the annotated code's own
                self.fatal.append(f"taking the records at the end of annotation '{name}': {e}")
            if self.call is not None:
                self.call.stream.append(("end", name))

    def failed(self, name, exc):
        with self.lock:
            if self.call is not None:
                ends = sum(1 for kind, item in self.call.stream if kind == "end" and item == name)
                self.call.failures.append((name, max(ends - 1, 0)))
            warnings.warn(f"rangeprof: annotation '{name}' failed and is reported as NaN "
                          f"(ignore_failures): {type(exc).__name__}: {exc}", RangeprofWarning,
                          stacklevel=4)

    def end_call(self):
        with self.lock:
            self._take()
            self.call = None

    def _look(self, records):
        """Device records remembered; warnings and kernel errors as Python warnings;
        errors about the whole measurement (a metric the GPU lacks) kept to raise."""
        for rec in records:
            kind = rec.get("type")
            if kind == "device" and isinstance(rec.get("index"), int):
                _devices[rec["index"]] = rec
            elif kind in ("warning", "error"):
                message = str(rec.get("message") or "(no message)")
                concerns = rec.get("concerns") if isinstance(rec.get("concerns"), dict) else {}
                if kind == "error" and not concerns.get("kernel"):
                    self.fatal.append(message)
                    continue
                self.warned += 1
                warnings.warn(f"rangeprof: {kind}: {message}", RangeprofWarning, stacklevel=5)

    def close_open(self):
        """Ends every annotation a call opened and did not close (an exception or
        KeyboardInterrupt went through), so that the next call starts clean."""
        with self.lock:
            for name, count in list(self.open.items()):
                for _ in range(max(count, 0)):
                    self.lib.annotation_end(name)
                self.open[name] = 0


def _sanitize_configs(func, args, kwargs, configs, decorator_configs):
    """The configs of one call as full-length tuples, by Nsight Python's rules: positional
    arguments are one config; else configs= at the call; else the decorator's; a function
    whose parameters all have defaults runs once with them."""
    sig = inspect.signature(func)
    params = _regular_params(sig)
    required = sum(1 for p in params if p.default is inspect.Parameter.empty)
    total = len(params)
    if kwargs:
        raise ConfigError(f"Keyword arguments are not supported yet: {list(kwargs)}")
    if args:
        if configs is not None or decorator_configs is not None:
            raise ConfigError("You have provided a config as arguments and configs "
                              f"{'at decoration time' if decorator_configs is not None else 'as configs='}"
                              ". Provide one of them.")
        configs = [list(args)]
    if configs is None:
        if decorator_configs is None:
            if required == 0:
                configs = [()]
            else:
                raise ConfigError("You have provided no configs. Provide configs at "
                                  "decoration time or at runtime.")
        else:
            configs = decorator_configs
    elif decorator_configs is not None:
        raise ConfigError("You have provided configs at decoration time and at runtime. "
                          "Provide configs at decoration time or at runtime.")
    if isinstance(configs, (str, bytes)) or not isinstance(configs, Iterable):
        raise TypeError(f"configs={configs!r}: expected an iterable of configurations "
                        "(e.g. [(1024,), (2048,)])")
    configs = list(configs)
    if not configs:
        raise ConfigError("configs cannot be empty")
    out = []
    for c in configs:
        if _is_scalar(c):
            if total != 1:
                raise ConfigError(f"config {c!r} is a single value, but function "
                                  f"'{func.__name__}' takes {total} parameters: give each "
                                  "config as a sequence of arguments")
            c = (c,)
        out.append(tuple(c))
    lengths = [len(c) for c in out]
    if any(n != lengths[0] for n in lengths):
        raise ConfigError(f"All configs must have the same number of arguments. Found "
                          f"lengths: {lengths}")
    if not required <= lengths[0] <= total:
        if required == total:
            raise ConfigError(f"Configs have {lengths[0]} arguments, but function expects "
                              f"{total}")
        raise ConfigError(f"Configs have {lengths[0]} arguments, but function expects between "
                          f"{required} and {total}")
    if lengths[0] < total:
        out = [c + tuple(p.default for p in params[len(c):]) for c in out]
    return out


def _bind(sig, config):
    positional, keyword = [], {}
    values = iter(config)
    for p in sig.parameters.values():
        if p.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            continue
        v = next(values)
        if p.kind == inspect.Parameter.KEYWORD_ONLY:
            keyword[p.name] = v
        else:
            positional.append(v)
    return positional, keyword


def _describe_config(names, config):
    return "(" + ", ".join(f"{n}={v!r}" for n, v in zip(names, config)) + ")"


class _Profiler:
    """The decorator analyze.kernel(...) returns."""

    def __init__(self, settings):
        self.settings = settings

    def __call__(self, func):
        if not callable(func):
            raise TypeError(f"analyze.kernel decorates a function, not {func!r}")
        settings = self.settings
        sig = inspect.signature(func)
        names = [p.name for p in _regular_params(sig)]
        if settings.derive_metric is not None:
            _results.check_derive_signature(settings.derive_metric, len(settings.metrics),
                                            len(names))
        info_collector.check_parameters(settings.collectors, func, names)
        counter = [0]
        # In a notebook the device's set-up starts now, on the library's thread, so that
        # the first call does not wait for it (doc/control-api.md, rangeprof_prepare). Not
        # in a script, where starting CUDA here would change what CUDA_VISIBLE_DEVICES set
        # later, or a fork, does (rangeprof.prepare does it on request), nor under a clock
        # lock: the library sets up at the first measurement there. Never raises.
        if settings.clock_control != "base" and _control.interactive():
            _control.prepare()

        @functools.wraps(func)
        def wrapper(*args, configs=None, **kwargs):
            configs = _sanitize_configs(func, args, kwargs, configs, settings.configs)
            tag = f"{func.__name__}-{counter[0]}"
            result = _run(func, sig, names, configs, settings, tag)
            counter[0] += 1
            return result

        return wrapper


def _run(func, sig, names, configs, s, tag):
    lib = _control.require()
    if not _cuda_driver_loadable():
        raise Unavailable("rangeprof cannot measure in this process: no NVIDIA driver "
                          "(libcuda.so.1 cannot be loaded), so there is no GPU to measure")
    if not _busy.acquire(blocking=False):
        raise RuntimeError("another rangeprof.analyze.kernel call is under way in this "
                           "process; calls cannot nest or run in parallel")
    collectors = info_collector.Session(s.collectors)
    m = _Measurement(lib, collectors)
    returned_value = False
    say = s.verbosity >= VerbosityLevel.INFO
    calls = 1 if s.replay_runs else s.runs
    try:
        options = s.options()
        if s.verbosity >= VerbosityLevel.DEBUG:
            print(f"[rangeprof] options: {', '.join(f'{n}={v}' for n, v in options)}")
        _set_all(lib, options)
        if s.verbosity == VerbosityLevel.SILENT:
            _set_quiet(lib, "true")
        else:
            _loud_call_seen[0] = True
            _set_quiet(lib, os.environ.get("RANGEPROF_QUIET") or "false")
        if s.replay_mode == "range":
            try:
                lib.set_option("replay-mode", "range")
            except ValueError as e:
                raise NotImplementedError(
                    f"replay_mode='range': this librangeprof.so does not accept it ({e}); "
                    "accepted: 'kernel' (each kernel replayed on its own)") from None
            _replay_mode_set[0] = True
        elif _replay_mode_set[0]:
            lib.set_option("replay-mode", "kernel")
            _replay_mode_set[0] = False
        if say:
            runs = f"{s.runs} replays of each kernel" if s.replay_runs else f"{s.runs} calls"
            print(f"[rangeprof] {func.__name__}: {len(configs)} configuration(s), {runs}")
        once = collectors.collect(info_collector.CollectionScope.ONCE)
        lib.capture_begin()
        annotation._measurement = m
        for ci, config in enumerate(configs):
            if s.verbosity >= VerbosityLevel.DEBUG:
                print(f"[rangeprof] config {ci + 1}/{len(configs)}: "
                      f"{_describe_config(names, config)}")
            per_config = collectors.collect(info_collector.CollectionScope.CONFIG, (), config)
            m.config = config
            for k in range(calls):
                per_run = collectors.collect(info_collector.CollectionScope.RUN, (), config)
                m.begin_call(ci, k)
                m.call.info = {**once, **per_config, **per_run}
                positional, keyword = _bind(sig, config)
                if func(*positional, **keyword) is not None:
                    returned_value = True
                m.end_call()
                if m.fatal:
                    raise _fatal_error(m.fatal)
    finally:
        annotation._measurement = None
        try:
            m.close_open()
        finally:
            try:
                lib.capture_end()
            finally:
                try:
                    _set_all(lib, _baseline())
                except (ValueError, MemoryError, RuntimeError):
                    pass
                try:
                    _set_quiet(lib, _quiet_baseline())
                except (MemoryError, RuntimeError):
                    pass
                _busy.release()
    if returned_value:
        warnings.warn(f"Function '{func.__name__}' returns a value, but the return value for "
                      "a function which is decorated with nsight.analyze.kernel is ignored "
                      "and instead the ProfileResults object is returned.", RuntimeWarning,
                      stacklevel=3)
    return _finish(func, names, configs, s, tag, m, say)


# The library's message for a metric the GPU does not know (collector/profiler.c).
_UNKNOWN_METRIC = re.compile(r"unknown metric '([^']*)'")


def _fatal_error(messages):
    """MeasurementError of the library's fatal messages; where a metric is unknown, Nsight
    Python's message (exceptions.get_metrics_error_message) comes first, naming it."""
    messages = list(dict.fromkeys(messages))
    text = "; ".join(messages)
    unknown = list(dict.fromkeys(m for msg in messages for m in _UNKNOWN_METRIC.findall(msg)))
    if unknown:
        text = (exceptions.get_metrics_error_message(unknown, exceptions.MetricErrorType.INVALID)
                + "\n" + text)
    return MeasurementError(text)


def _nothing_notes(func, names, configs, s, m):
    """Per config, the annotations that measured nothing (and configs that entered none)."""
    notes = []
    by_config = collections.OrderedDict()
    for call in m.calls:
        entry = by_config.setdefault(call.config_index, dict(entered=[], measured=set(),
                                                             failed=set()))
        for name in call.entered:
            if name not in entry["entered"]:
                entry["entered"].append(name)
        for (name, _k), launches in call.executions().items():
            if any(not _results.kernel_matches(runs[0], s.ignore_kernel_list)
                   for _key, runs in launches):
                entry["measured"].add(name)
        entry["failed"].update(name for name, _ in call.failures)
    for ci, entry in by_config.items():
        where = f"{func.__name__}{_describe_config(names, configs[ci])}"
        if not entry["entered"]:
            notes.append(f"{where} entered no rangeprof.annotate range, so nothing was "
                         "measured: wrap the kernels to measure in "
                         "'with rangeprof.annotate(\"name\"):'")
        for name in entry["entered"]:
            if name not in entry["measured"] and name not in entry["failed"]:
                extra = (" (or only kernels of ignore_kernel_list)"
                         if s.ignore_kernel_list else "")
                notes.append(f"annotation '{name}' measured no kernel in {where}: the code "
                             f"inside it launched none{extra}, or none could be measured")
    return notes


def _hints(m):
    hints = []
    try:
        info = m.lib.info()
    except Exception:  # noqa: BLE001
        info = {}
    if info.get("measuring") is False and info.get("reason"):
        hints.append(f"rangeprof measures nothing in this process: {info['reason']}")
    if info.get("nvtx_modules") == 0:
        hints.append("rangeprof sees no NVTX module in this process: NVTX copies that "
                     "initialised before 'import rangeprof' stay invisible to it (their "
                     "ranges cannot select kernels); rangeprof.annotate always works")
    if m.warned:
        hints.append("see the rangeprof warnings above")
    return hints


def _finish(func, names, configs, s, tag, m, say):
    with _collector_paused():
        return _finish_paused(func, names, configs, s, tag, m, say)


def _finish_paused(func, names, configs, s, tag, m, say):
    rows, raw, columns, raw_columns = _results.build(
        m.calls, configs, names, s.metrics, derive_metric=s.derive_metric,
        combine_kernel_metrics=s.combine_kernel_metrics,
        ignore_kernel_list=s.ignore_kernel_list, normalize_against=s.normalize_against,
        devices=_devices_for(m), host=socket.gethostname(), annotation_order=m.entered,
        collectors=s.collectors)
    notes = _nothing_notes(func, names, configs, s, m)
    if not rows:
        text = "; ".join(notes + _hints(m)) or "no kernel was measured"
        raise NothingMeasured(f"rangeprof.analyze.kernel {func.__name__}: nothing was "
                              f"measured: {text}")
    if notes:
        hints = _hints(m)
        for note in notes:
            warnings.warn(f"rangeprof: {note}" + (f" ({'; '.join(hints)})" if hints else ""),
                          RangeprofWarning, stacklevel=4)
    import pandas as pd
    df = pd.DataFrame(rows, columns=columns)
    _stable_column(pd, df, rows, columns)
    raw_df = _RawFrame(raw, raw_columns)
    if s.output_csv:
        raw_df = raw_df.frame()
    records = [r for call in m.calls for r in call.records()]
    _write_outputs(func, s, tag, df, raw_df, records, say)
    if say:
        out = (_control.current().library.info().get("output")
               if _control.current() and _control.current().library else None)
        print(f"[rangeprof] {func.__name__}: {len(df)} rows"
              + (f"; the records are in {out}" if out else ""))
    return ProfileResults(df, raw_df, records)


def _devices_for(m):
    """The device records the runs need: from the captures (this call's or an earlier
    one's), else from the output file, which the library wrote them to before."""
    needed = {r.get("device") for call in m.calls for r in call.records()
              if r.get("type") == "run"}
    missing = {d for d in needed if d not in _devices}
    if missing:
        try:
            path = m.lib.info().get("output")
        except Exception:  # noqa: BLE001
            path = None
        if path and os.path.exists(path):
            from rangeprof import records
            with open(path, encoding="utf-8", errors="replace") as f:
                for line in f:
                    if '"device"' not in line:
                        continue
                    # rangeprof.records' rule (a device record with the members it
                    # documents); the run lines of this file are read elsewhere.
                    rec, why = records.parse_line(line)
                    if rec is not None and rec.get("type") == "device" \
                            and rec.get("index") in missing:
                        _devices[rec["index"]] = rec
    return _devices


def _write_outputs(func, s, tag, df, raw_df, records, say):
    prefix = os.fspath(s.output_prefix) if s.output_prefix is not None else None
    if not s.output_csv and prefix is None:
        return
    if prefix is None:
        prefix = os.path.join(tempfile.mkdtemp(prefix="rangeprof_"), "")
    os.makedirs(os.path.dirname(prefix) or ".", exist_ok=True)
    written = []
    if s.output_prefix is not None:
        import json
        path = f"{prefix}rangeprof-{tag}.jsonl"
        with open(path, "w", encoding="utf-8") as f:
            for r in records:
                f.write(json.dumps(r) + "\n")
        written.append(("the captured records", path))
    if s.output_csv:
        # Nsight Python's two files hold its columns only, so that a script reading them
        # (its example 11 selects every column naming "Value") sees what it saw there;
        # rangeprof's own columns are in the JSON Lines records written beside them (with
        # output_prefix), in to_dataframe(extra=True) and in raw_dataframe().
        raw_path = f"{prefix}profiled_data-{tag}.csv"
        processed_path = f"{prefix}processed_data-{tag}.csv"
        raw_df.drop(columns=[c for c in _results.RAW_OWN_COLUMNS if c in raw_df.columns]
                    ).to_csv(raw_path, index=False)
        df.drop(columns=[c for c in _results.OWN_COLUMNS if c in df.columns]
                ).to_csv(processed_path, index=False)
        written += [("the raw profiling data", raw_path),
                    ("the processed profiling data", processed_path)]
    if say:
        for what, path in written:
            print(f"[rangeprof] Refer to {path} for {what}")


def kernel(_func=None, *, configs=None, runs=1, derive_metric=None, normalize_against=None,
           verbosity=VerbosityLevel.INFO, metrics=DEFAULT_METRICS, ignore_kernel_list=None,
           clock_control="none", cache_control="all", replay_mode="kernel",
           thermal_mode="auto", thermal_wait=None, thermal_cont=None, thermal_timeout=None,
           thermal_device=None, combine_kernel_metrics=None, output_prefix=None,
           output_csv=False, info_collectors=None, replay_runs=True):
    """Nsight Python's nsight.analyze.kernel: @kernel, @kernel() or @kernel(...). The
    decorated function becomes wrapper(*args, configs=None) -> ProfileResults, measuring
    the kernels launched inside rangeprof.annotate ranges for each config.

    configs: configurations, each a sequence of the function's arguments (a scalar where
        it takes one); at decoration or at the call (not both); positional arguments at
        the call are one config. runs: measured runs per config and kernel (1, Nsight
        Python's default; or 'auto'). replay_runs (rangeprof's): True replays each kernel
        'runs' times from one call of the function; False calls the function 'runs'
        times with one measured run each, as Nsight Python does.
    derive_metric(*metric values, *config) -> value, (value, unit) or {name: (value,
        unit)}: metrics computed per run. normalize_against: an annotation whose AvgValue
        divides the others' of the same config and metric. metrics: metric names
        (default gpu__time_duration.sum). ignore_kernel_list: kernel names left out of the
        results. combine_kernel_metrics(x, y): reduces the kernels of one annotation
        execution to one value per run; without it each kernel gets its own rows.
    clock_control 'none'|'base', cache_control 'all'|'none', replay_mode 'kernel' ('range'
        where the library accepts it), thermal_mode 'auto'|'manual'|'off', thermal_wait
        and thermal_cont (degrees C of headroom, 10 and 20), thermal_timeout (s, 180):
        set in the library for this function's calls only. thermal_device: accepted; the
        guard watches the GPU each kernel runs on. verbosity: VerbosityLevel.
        output_prefix: where output_csv's files (profiled_data-, processed_data-) and the
        captured records (rangeprof-<function>-<n>.jsonl) go. info_collectors:
        Nsight Python's custom collectors (rangeprof.experimental.collect): their columns
        follow Unit, numeric ones per config, run and annotation as _Avg, _Std, _Min and
        _Max."""
    if _func is not None and not callable(_func):
        raise TypeError(f"analyze.kernel takes its settings as keywords (configs=..., "
                        f"runs=...), not a positional {type(_func).__name__} ({_func!r})")
    settings = _Settings(configs, runs, derive_metric, normalize_against, verbosity, metrics,
                         ignore_kernel_list, clock_control, cache_control, replay_mode,
                         thermal_mode, thermal_wait, thermal_cont, thermal_timeout,
                         thermal_device, combine_kernel_metrics, output_prefix, output_csv,
                         info_collectors, replay_runs)
    profiler = _Profiler(settings)
    return profiler if _func is None else profiler(_func)


def plot(filename="plot.png", metric=None, *, title="Nsight Analyze Kernel Plot Results",
         ylabel=None, annotate_points=False, show_aggregate=None, plot_type="line",
         plot_width=6, plot_height=4, row_panels=None, col_panels=None, x_keys=None,
         print_data=False, variant_fields=None, variant_annotations=None,
         plot_callback=None):
    """Nsight Python's nsight.analyze.plot: decorates an analyze.kernel function so that
    each call also saves a plot of its results (matplotlib) to filename, and returns the
    results. metric: the metric to plot (needed where there are several); the x axis has
    one tick per config (x_keys: the parameters that make it), one line or bar group per
    annotation (per kernel where an annotation has several), row_panels and col_panels
    split the plot by parameters, variant_fields split the annotations of
    variant_annotations into lines, show_aggregate 'avg' or 'geomean' adds that bar,
    plot_callback(figure) customises it. Error bars are the 95 % CI."""
    from rangeprof import _plot
    _plot.require_matplotlib()
    if plot_type not in ("line", "bar"):
        raise ValueError(f"plot_type={plot_type!r}: expected 'line' or 'bar'")
    if show_aggregate not in (None, "avg", "geomean"):
        raise ValueError(f"show_aggregate={show_aggregate!r}: expected None, 'avg' or "
                         "'geomean'")

    def decorator(func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            result = func(*args, **kwargs)
            if not isinstance(result, ProfileResults):
                raise TypeError("analyze.plot decorates an analyze.kernel function; "
                                f"{getattr(func, '__name__', func)} returned "
                                f"{type(result).__name__}")
            _plot.visualize(_plot_frame(result), metric=metric, filename=filename,
                            title=title, ylabel=ylabel, annotate_points=annotate_points,
                            show_aggregate=show_aggregate, plot_type=plot_type,
                            plot_width=plot_width, plot_height=plot_height,
                            row_panels=row_panels, col_panels=col_panels, x_keys=x_keys,
                            print_data=print_data, variant_fields=variant_fields,
                            variant_annotations=variant_annotations,
                            plot_callback=plot_callback)
            return result
        return wrapper
    return decorator


def _plot_frame(result):
    """What analyze.plot draws: Nsight Python's columns, and KernelIndex where an
    annotation has several kernels for one config (a line each). print_data prints
    Nsight Python's columns only (_plot.visualize drops KernelIndex there)."""
    df = result.to_dataframe()
    keys = list(df.columns[:df.columns.get_loc("AvgValue")])
    try:
        several = df.duplicated(subset=keys).any()
    except TypeError:   # a parameter holding unhashable values (lists, dicts)
        several = df.astype({k: str for k in keys}).duplicated(subset=keys).any()
    if several:
        df["KernelIndex"] = result.to_dataframe(extra=True)["KernelIndex"]
    return df


@contextlib.contextmanager
def ignore_failures():
    """Nsight Python's nsight.analyze.ignore_failures: an Exception raised in the block is
    swallowed (for warm-up code outside the annotations)."""
    try:
        yield
    except Exception:  # noqa: BLE001 - what it is for
        pass
