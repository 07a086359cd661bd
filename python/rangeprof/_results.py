"""rangeprof/_results.py - from the records an analyze.kernel call captured to Nsight
Python's DataFrame: the run records of each annotation execution, per kernel (or combined
with combine_kernel_metrics), derived metrics, one row per group and metric with the
statistics of rangeprof/stats.py, normalisation and the geometric mean. Pure functions on
parsed records (no library), so that the tests can drive them too; pandas only where the
DataFrame is made.

A call's stream is what the capture handed over, in order, with a marker at each end of
an annotation: ("records", [record, ...]) and ("end", name). The k-th execution of
annotation A in a call holds A's run records (nvtx ranges of domain "rangeprof" with text
A) between A's (k-1)-th and k-th end; records after A's last end belong to its last."""
import inspect
import math
import socket
import warnings
from collections import OrderedDict

from rangeprof import placement, stats
from rangeprof.ncu_units import ncu_unit

DOMAIN = "rangeprof"

NSIGHT_HEAD = ["Annotation", "Metric"]
NSIGHT_STATS = ["AvgValue", "StdDev", "MinValue", "MaxValue", "NumRuns"]
NSIGHT_CONTEXT = ["Kernel", "GPU", "Host", "ComputeClock", "MemoryClock", "Unit"]
NSIGHT_TAIL = ["CI95_Lower", "CI95_Upper", "RelativeStdDevPct", "StableMeasurement",
               "Normalized"]
# rangeprof's own columns, after Nsight Python's (Geomean is its last): only in
# ProfileResults.to_dataframe(extra=True) and raw_dataframe(). RangeKernels and
# RangeKernelNames are a range workload's (replay_mode="range", whose Kernel is "range" as
# in ncu): its kernel count and names in launch order.
OWN_COLUMNS = ["MedianValue", "DriftPct", "Reasons", "SMClock", "Temperature",
               "TemperatureMax", "Power", "ThrottleReasons", "Passes", "KernelIndex",
               "Launches", "RangeKernels", "RangeKernelNames"]
RAW_OWN_COLUMNS = ["Run", "Launch", "KernelIndex", "Call", "SMClock", "Temperature",
                   "ThrottleReasons", "Passes", "RangeKernels", "RangeKernelNames"]
# ncu's Kernel of a range workload (its "Kernel Name" under --replay-mode range).
RANGE_KERNEL = "range"

DERIVED_UNIT_WARNING = ("Derived metric '{}' does not have a unit specified. Return a tuple "
                        "(value, unit) instead of just the value. np.nan will be added to the "
                        "'Unit' column in the dataframe.")


def parse_lines(text):
    """The records of a capture's JSON Lines text, read by rangeprof.records (the reader
    that rangeprof.load and the report tools use, so one rule decides what a record is).
    The library writes whole, valid lines, so none should be refused; one that is is
    skipped with a RangeprofWarning that says which and why, not silently."""
    from rangeprof import records
    from rangeprof.exceptions import RangeprofWarning
    # (records.RunLines: parse_line's answer for each line, quicker on a launch's runs)
    parse_line = records.RunLines().parse
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        # (not line.strip(): the same test without copying a line of a kilobyte)
        if not line or line.isspace():
            continue
        rec, why = parse_line(line, terminated=True)
        # A reason with a record (a session the reader cannot use, an unknown type, a
        # newer schema) is a line records.Reader leaves out too: said, not kept.
        if why is not None:
            warnings.warn(f"rangeprof: the capture's line {n} was skipped: {why}",
                          RangeprofWarning, stacklevel=2)
        else:
            out.append(rec)
    return out


def annotations_of(record):
    """The texts of the record's rangeprof ranges (the annotations open at its launch),
    in start order, once each."""
    out = []
    for r in record.get("nvtx") or []:
        if isinstance(r, dict) and r.get("domain") == DOMAIN and isinstance(r.get("text"), str):
            if r["text"] not in out:
                out.append(r["text"])
    return out


def _launch_key(record):
    graph = record.get("graph")
    node = graph.get("node") if isinstance(graph, dict) else None
    return (record.get("launch"), node)


class Call:
    """One call of the decorated function: its config's index, which call of it this is,
    the captured stream and the executions that failed under ignore_failures."""

    def __init__(self, config_index, call_index):
        self.config_index, self.call_index = config_index, call_index
        self.stream = []
        self.failures = []        # (annotation, execution index)
        self.entered = []         # annotation names, first entry order
        self.info = {}            # the info collectors' once, config and run values
        self.annotation_info = {}  # (annotation, execution index) -> annotation values
        # (length of the stream, executions()): build and analyze's notes both ask for
        # them, and the stream only grows.
        self._executions = None

    def keep_text(self, text):
        """A capture's JSON Lines text, kept as it came until the call's records are
        asked for. Read at once, its records would live on across the decorated
        function's own code, and Python's collector, running there, would promote them
        to its oldest generation: that is what sets off the full collections that cost a
        process holding torch and pandas 74-83 ms each (doc/measurements.md, "Cost at the
        physical floor")."""
        self.stream.append(("text", text))

    def _read_texts(self):
        if any(kind == "text" for kind, _ in self.stream):
            self.stream = [("records", parse_lines(item)) if kind == "text" else (kind, item)
                           for kind, item in self.stream]
            self._executions = None

    def records(self):
        self._read_texts()
        return [r for kind, item in self.stream if kind == "records" for r in item]

    def executions(self):
        """OrderedDict {(annotation, execution): [(launch key, [run records])]}, in the
        order of their first run record. Made once per state of the stream: callers read
        it and must not change it."""
        self._read_texts()
        cached = self._executions
        if cached is not None and cached[0] == len(self.stream):
            return cached[1]
        out = self._make_executions()
        self._executions = (len(self.stream), out)
        return out

    def _make_executions(self):
        ends_total = {}
        for kind, item in self.stream:
            if kind == "end":
                ends_total[item] = ends_total.get(item, 0) + 1
        ends_seen = {}
        out = OrderedDict()
        for kind, item in self.stream:
            if kind == "end":
                ends_seen[item] = ends_seen.get(item, 0) + 1
                continue
            last, names = None, ()
            for rec in item:
                if rec.get("type") != "run":
                    continue
                # annotations_of once per stretch of equal nvtx lists: a launch's runs come
                # together with equal ranges, and equal lists give equal annotations.
                nvtx = rec.get("nvtx")
                if nvtx is None or nvtx != last:
                    names, last = annotations_of(rec), nvtx
                key = _launch_key(rec)
                for name in names:
                    k = ends_seen.get(name, 0)
                    if ends_total.get(name, 0):
                        k = min(k, ends_total[name] - 1)
                    launches = out.get((name, k))
                    if launches is None:
                        launches = out[(name, k)] = OrderedDict()
                    runs = launches.get(key)
                    if runs is None:
                        launches[key] = [rec]
                    else:
                        runs.append(rec)
        return OrderedDict((key, list(v.items())) for key, v in out.items())


def kernel_matches(record, names):
    """Whether a run record's kernel is one of names: its demangled or mangled name, or
    the name without namespaces, template arguments' spelling or parameters that ncu
    shows (rangeprof.names.canonical_kernel)."""
    if not names:
        return False
    from rangeprof.names import canonical_kernel
    kernel, mangled = record.get("kernel") or "", record.get("mangled") or ""
    short = canonical_kernel(kernel)
    base = short.split("<", 1)[0]
    for n in names:
        if n in (kernel, mangled, short, base) or canonical_kernel(n) == short:
            return True
    return False


def _num(v):
    try:
        return math.nan if v is None else float(v)
    except (TypeError, ValueError):
        return math.nan


# ncu_unit of (CUPTI unit, metric): the same few pairs for every run of a call, so each
# is worked out once (ncu_unit is a pure function of the two strings).
_NCU_UNITS = {}
_NCU_UNITS_MAX = 4096


def _ncu_unit(unit, metric):
    if type(unit) is not str or type(metric) is not str:
        return ncu_unit(unit, metric)
    key = (unit, metric)
    out = _NCU_UNITS.get(key)
    if out is None:
        if len(_NCU_UNITS) >= _NCU_UNITS_MAX:
            _NCU_UNITS.clear()
        out = _NCU_UNITS[key] = ncu_unit(unit, metric)
    return out


_table = []   # rangeprof.table, imported at the first sample (not at 'import rangeprof')


def _run_sample(rec, metrics):
    """One run record as a sample, its context under the report's sample keys (table.py),
    so that one rule (table.combine_runs) combines the kernels of both."""
    if not _table:
        from rangeprof import table
        _table.append(table)
    table = _table[0]
    get = rec.get
    values = get("metrics") or {}
    units = get("units") or {}
    # (x if type(x) is float else _num(x): _num(x) without its call, float(x) being x)
    temperature = get("temperature_c")
    temperature = temperature if type(temperature) is float else _num(temperature)
    before, after = get("temperature_before_c"), get("temperature_after_c")
    if before is None and after is None:   # NaN both: the hottest known is the one read
        hottest = temperature if not math.isnan(temperature) else math.nan
    else:
        temps = [t for t in (temperature, _num(before), _num(after)) if not math.isnan(t)]
        hottest = max(temps) if temps else math.nan
    in_range = get("workload") == "range"
    range_kernels, range_names = (table.range_columns(get("range")) if in_range
                                  else (None, None))
    vget, uget = values.get, units.get
    by_metric, unit_of = {}, {}
    for m in metrics:
        by_metric[m] = _num(vget(m))
        unit_of[m] = _ncu_unit(uget(m, ""), m)
    clock, power = get("sm_clock_hz"), get("power_w")
    return {"values": by_metric, "units": unit_of,
            "Kernel": RANGE_KERNEL if in_range else get("kernel", ""),
            "RangeKernels": range_kernels, "RangeKernelNames": range_names,
            "device": get("device"),
            "rated_sm_clock_hz": get("rated_sm_clock_hz"),
            "SMClock": clock if type(clock) is float else _num(clock),
            "Temperature": temperature,
            "TemperatureMax": hottest,
            "Power": power if type(power) is float else _num(power),
            "ThrottleReasons": table._reasons(get("throttle_reasons")),
            "Passes": get("passes"), "Run": get("run")}


def _combine_runs(parts, combine, metrics):
    """One sample per run index of an execution's launches (each a list of run samples),
    every metric reduced with the binary function combine, left to right (Nsight Python's
    combine_kernel_metrics), the rest as table.combine_runs takes it for the report."""
    from rangeprof.table import combine_runs

    def reduce(metric, xs):
        acc = xs[0]
        for x in xs[1:]:
            acc = combine(acc, x)
        return _num(acc)
    return [combined for _, combined in combine_runs(parts, reduce, "|", "|")]


def call_derive(derive_metric, values, config):
    """[(name, value, unit)] of derive_metric on one sample (values in metrics order, then
    the config's arguments), with Nsight Python's conventions for its return value."""
    result = derive_metric(*values, *config)
    if isinstance(result, dict) or (hasattr(result, "items") and hasattr(result, "keys")):
        out = []
        for name, v in result.items():
            if isinstance(v, tuple) and len(v) >= 2:
                out.append((str(name), _num(v[0]), v[1]))
            else:
                warnings.warn(DERIVED_UNIT_WARNING.format(name), stacklevel=4)
                out.append((str(name), _num(v), math.nan))
        return out
    name = getattr(derive_metric, "__name__", "derived")
    if isinstance(result, tuple) and len(result) >= 2:
        return [(name, _num(result[0]), result[1])]
    warnings.warn(DERIVED_UNIT_WARNING.format(name), stacklevel=4)
    return [(name, _num(result), math.nan)]


def _config_key(config):
    out = []
    for v in config:
        try:
            hash(v)
            out.append(("v", v))
        except TypeError:
            out.append(("r", repr(v)))
    return tuple(out)


def build(calls, configs, param_names, metrics, derive_metric=None,
          combine_kernel_metrics=None, ignore_kernel_list=None, normalize_against=None,
          devices=None, host=None, annotation_order=(), collectors=()):
    """(processed rows, raw rows, column names, raw column names) of an analyze.kernel
    call, the processed rows as a list of dicts, the raw ones as RawRows (its dicts()):
    see rangeprof.analyze.kernel for their meaning."""
    devices = devices or {}
    host = host or socket.gethostname()
    # Samples: one per measured run of a kernel (or of an execution's kernels combined).
    samples = []
    failed = []          # (annotation, config index): executions ignore_failures swallowed
    order = list(annotation_order)
    for call in calls:
        config = configs[call.config_index]
        for (name, k), launches in call.executions().items():
            if name not in order:
                order.append(name)
            launches = [(key, runs) for key, runs in launches
                        if not kernel_matches(runs[0], ignore_kernel_list)]
            if not launches:
                continue
            per_launch = [[_run_sample(r, metrics) for r in runs] for _, runs in launches]
            if combine_kernel_metrics is not None:
                parts = _combine_runs(per_launch, combine_kernel_metrics, metrics)
                group = [(None, s, "+".join(str(key) for key, _ in launches)) for s in parts]
            else:
                group = [(p, s, str(key)) for p, ((key, _), runs) in enumerate(zip(launches, per_launch))
                         for s in runs]
            info = {c.name: None for c in collectors}
            info.update(call.info)
            info.update(call.annotation_info.get((name, k), {}))
            ci, call_index = call.config_index, call.call_index
            for position, s, launch in group:
                # (s.update(annotation=..., ...), without a dict of keywords per sample)
                s["annotation"], s["config_index"], s["config"] = name, ci, config
                s["position"], s["call"], s["launch"], s["info"] = (position, call_index,
                                                                   launch, info)
                samples.append(s)
        for name, _k in call.failures:
            if name not in order:
                order.append(name)
            failed.append((name, call.config_index))
    rank = {name: i for i, name in enumerate(order)}
    samples.sort(key=lambda s: rank[s["annotation"]])   # stable: chronological within

    # Derived metrics, per sample.
    derived = []
    if derive_metric is not None:
        for s in samples:
            for name, value, unit in call_derive(derive_metric, list(s["values"].values()),
                                                 s["config"]):
                derived.append((s, name, value, unit))

    # Raw rows in Nsight Python's order (measured metrics, then derived ones), grouped by
    # first appearance. A raw row is made when asked for (RawRows): only the first of each
    # group is needed here.
    groups = OrderedDict()
    raw = RawRows(host, [c.name for c in collectors], param_names)
    specs = raw.specs
    config_keys = {}     # config index -> _config_key of its config
    last = [None, None]  # the sample add() was last given, and its part of the group key

    def add(s, metric, value, unit, block):
        # A sample's rows come one after another (its metrics, then its derived ones).
        if last[0] is not s:
            raw.resolve(s, devices)
            ci = s["config_index"]
            ck = config_keys.get(ci)
            if ck is None:
                ck = config_keys[ci] = _config_key(s["config"])
            if combine_kernel_metrics is not None:
                last[1] = (ck, "combined", None)
            else:
                last[1] = (ck, s["position"], s["Kernel"])
            last[0] = s
        ck, position, kernel_key = last[1]
        key = (s["annotation"], metric, ck, position, kernel_key)
        g = groups.get(key)
        if g is None:
            g = groups[key] = dict(row=len(specs), sample=s, members=[], block=block)
        specs.append((s, metric, value, unit))
        g["members"].append((value, s))

    for s in samples:
        for m in metrics:
            add(s, m, s["values"][m], s["units"][m], 0)
    for s, name, value, unit in derived:
        add(s, name, value, unit, 1)
    made = raw.dicts() if collectors else None   # (every row's collector values needed)
    for g in groups.values():
        g["row"] = made[g["row"]] if made is not None else raw.row(*specs[g["row"]])

    # Nsight Python's aggregation of the collectors' columns: a numeric column of config,
    # run or annotation scope becomes _Avg, _Std, _Min and _Max; others keep one value.
    numeric = {c.name for c in collectors if c.scope.value != "once"
               and _numeric([r[c.name] for r in made])}
    collector_columns = []
    for c in collectors:
        collector_columns += ([f"{c.name}_{x}" for x in ("Avg", "Std", "Min", "Max")]
                              if c.name in numeric else [c.name])
    rows = []
    for (annotation, metric, _ck, position, _kk), g in groups.items():
        row = _aggregate(annotation, metric, g, param_names,
                         None if position == "combined" else position)
        if metric == placement.WRITE_METRIC and g["block"] == 0:
            row["Reasons"] = placement.add_to(row["Reasons"], _placement_reason(g, devices))
        _collector_values(row, g, collectors, numeric)
        row["_order"] = (g["block"], rank[annotation], g["sample"]["config_index"])
        rows.append(row)
    # An annotation whose executions all failed under ignore_failures: NaN rows, as Nsight
    # Python reports a failed run.
    have = {(r["Annotation"], _config_key(r["_config"])) for r in rows}
    for name, ci in OrderedDict.fromkeys(failed):
        if (name, _config_key(configs[ci])) in have:
            continue
        for m in metrics:
            row = dict(Annotation=name, Metric=m)
            for p, v in zip(param_names, configs[ci]):
                row[p] = v
            row.update(AvgValue=math.nan, StdDev=math.nan, MinValue=math.nan,
                       MaxValue=math.nan, NumRuns=0, Kernel=None, GPU=None, Host=host,
                       ComputeClock=None, MemoryClock=None, Unit=None,
                       CI95_Lower=math.nan, CI95_Upper=math.nan, RelativeStdDevPct=math.nan,
                       StableMeasurement=None, Normalized=False, MedianValue=math.nan,
                       DriftPct=math.nan, Reasons="every execution failed (ignore_failures)",
                       SMClock=math.nan, Temperature=math.nan, TemperatureMax=math.nan,
                       Power=math.nan, ThrottleReasons=None, Passes=None, KernelIndex=None,
                       Launches=0, RangeKernels=None, RangeKernelNames=None,
                       _config=configs[ci], _order=(0, rank[name], ci))
            rows.append(row)
    # Nsight Python's order: measured metrics before derived ones, annotations in the order
    # they were first entered, configs in order (the sort is stable within those).
    rows.sort(key=lambda r: r["_order"])

    # Nsight Python groups by the parameters that it can hash; one holding a list or a
    # dict is aggregated after the other columns instead, and comes after the collectors'.
    unhashable = [p for i, p in enumerate(param_names) if not _hashable(c[i] for c in configs)]
    columns = (NSIGHT_HEAD + [p for p in param_names if p not in unhashable] + NSIGHT_STATS
               + NSIGHT_CONTEXT + collector_columns + unhashable + NSIGHT_TAIL)
    if normalize_against is not None:
        _normalize(rows, normalize_against, param_names)
        columns.append("NormalizationValue")
    _geomean(rows)
    columns += ["Geomean"] + OWN_COLUMNS
    raw_columns = (["Annotation", "Value", "Metric"] + NSIGHT_CONTEXT
                   + [c.name for c in collectors] + list(param_names) + RAW_OWN_COLUMNS)
    for r in rows:
        r.pop("_config", None)
        r.pop("_order", None)
    return rows, raw, columns, raw_columns


class RawRows:
    """The raw rows of build(), one per sample and metric, made as dicts when asked for
    (raw_dataframe(); most callers never ask): from the samples, which nothing changes
    after build, and what the devices said at build, taken then."""

    def __init__(self, host, collector_names, param_names):
        self.specs = []        # (sample, metric, value, unit) of each row, in order
        self.devices = {}      # device index -> (name, rated SM clock, rated memory clock)
        self.host, self.collector_names = host, collector_names
        self.param_names = list(param_names)
        self._made = None

    def resolve(self, s, devices):
        """Takes what the device record of sample s says now."""
        key = s["device"]
        if key not in self.devices:
            dev = devices.get(key, {})
            self.devices[key] = (dev.get("name"), dev.get("rated_sm_clock_hz"),
                                 dev.get("rated_memory_clock_hz"))

    def row(self, s, metric, value, unit):
        gpu, dev_rated, mem = self.devices[s["device"]]
        rated = s["rated_sm_clock_hz"] or dev_rated
        row = {"Annotation": s["annotation"], "Value": value, "Metric": metric,
               "Kernel": s["Kernel"], "GPU": gpu, "Host": self.host,
               "ComputeClock": int(rated // 1000) if rated else None,
               "MemoryClock": int(mem // 1000) if mem else None, "Unit": unit}
        # Assigned in this order, so that a parameter named as a collector, or as one of
        # the columns before or after, holds what it always held.
        info = s["info"]
        for name in self.collector_names:
            row[name] = info.get(name)
        for p, v in zip(self.param_names, s["config"]):
            row[p] = v
        row.update(Run=s["Run"], Launch=s["launch"], KernelIndex=s["position"],
                   Call=s["call"], SMClock=s["SMClock"], Temperature=s["Temperature"],
                   ThrottleReasons=s["ThrottleReasons"], Passes=s["Passes"],
                   RangeKernels=s["RangeKernels"], RangeKernelNames=s["RangeKernelNames"])
        return row

    def dicts(self):
        """The rows (plain dicts: pandas copies any other mapping into one), made once."""
        if self._made is None:
            self._made = [self.row(*spec) for spec in self.specs]
        return self._made


def _hashable(values):
    try:
        set(v for v in values if v is not None)
    except TypeError:
        return False
    return True


def _numeric(values):
    known = [v for v in values if v is not None]
    return bool(known) and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                               for v in known)


def _collector_values(row, g, collectors, numeric):
    values = {c.name: [s["info"].get(c.name) for _, s in g["members"]] for c in collectors}
    for c in collectors:
        vs = values[c.name]
        if c.name not in numeric:
            row[c.name] = vs[0] if vs else None
            continue
        xs = [float(v) for v in vs if v is not None and not math.isnan(float(v))]
        mean = math.fsum(xs) / len(xs) if xs else math.nan
        std = (math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (len(xs) - 1))
               if len(xs) > 1 else math.nan)
        row.update({f"{c.name}_Avg": mean, f"{c.name}_Std": std,
                    f"{c.name}_Min": min(xs) if xs else math.nan,
                    f"{c.name}_Max": max(xs) if xs else math.nan})


def _placement_reason(g, devices):
    """placement.py's reason for a group of DRAM write values: on the medians of its runs'
    reads and writes (each member's sample holds every metric of its run, or of its
    kernels combined) and the L2 of the devices they ran on; None where the runs lack the
    read metric or the device records their L2."""
    ss = [s for _, s in g["members"]]
    if not all(placement.READ_METRIC in s["values"] for s in ss):
        return None
    l2 = placement.l2_of(devices.get(s["device"]) if isinstance(s["device"], int) else None
                         for s in ss)
    return placement.reason_of_runs([s["values"][placement.READ_METRIC] for s in ss],
                                    [v for v, _ in g["members"]], l2)


def _aggregate(annotation, metric, g, param_names, position):
    members = g["members"]
    first = g["row"]
    values = [v for v, _ in members]
    ss = [s for _, s in members]
    sm_clocks = [s["SMClock"] for s in ss]
    throttle = [s["ThrottleReasons"] for s in ss]
    launches = [s["launch"] for s in ss]
    st = stats.summarize(values, sm_clocks, throttle, launches=launches,
                         runs=[s["Run"] for s in ss])
    row = dict(Annotation=annotation, Metric=metric)
    for p in param_names:
        row[p] = first[p]
    clocks = [c for c in sm_clocks if not math.isnan(c)]
    temps = [s["Temperature"] for s in ss if not math.isnan(s["Temperature"])]
    tmax = [s["TemperatureMax"] for s in ss if not math.isnan(s["TemperatureMax"])]
    power = [s["Power"] for s in ss if not math.isnan(s["Power"])]
    passes = [s["Passes"] for s in ss if isinstance(s["Passes"], (int, float))]
    row.update(
        AvgValue=st["mean"], StdDev=st["stddev"], MinValue=st["min"], MaxValue=st["max"],
        NumRuns=st["n"], Kernel=first["Kernel"], GPU=first["GPU"], Host=first["Host"],
        ComputeClock=first["ComputeClock"], MemoryClock=first["MemoryClock"],
        Unit=first["Unit"], CI95_Lower=st["ci95_low"], CI95_Upper=st["ci95_high"],
        RelativeStdDevPct=st["rsd_pct"],
        # Nsight Python's nullable boolean: NA where no verdict can be made (n < 2).
        StableMeasurement=None if st["stable"] is None else bool(st["stable"]),
        Normalized=False, MedianValue=st["median"], DriftPct=st["drift_pct"],
        Reasons="; ".join(st["reasons"]) if st["reasons"] else
        ("" if st["stable"] else f"n = {st['n']} < 2" if st["n"] < 2 else ""),
        SMClock=math.fsum(clocks) / len(clocks) if clocks else math.nan,
        Temperature=math.fsum(temps) / len(temps) if temps else math.nan,
        TemperatureMax=max(tmax) if tmax else math.nan,
        Power=math.fsum(power) / len(power) if power else math.nan,
        ThrottleReasons=stats.throttle_union(throttle),
        Passes=max(passes) if passes else None, KernelIndex=position,
        Launches=len(set(launches)), RangeKernels=first["RangeKernels"],
        RangeKernelNames=first["RangeKernelNames"], _config=g["sample"]["config"])
    return row


def _normalize(rows, against, param_names):
    """Nsight Python's normalize_against: AvgValue divided by that of the annotation named
    against for the same config and Metric (in NormalizationValue); rows without such a
    baseline are dropped, as its merge drops them."""
    if not any(r["Annotation"] == against for r in rows):
        names = list(OrderedDict.fromkeys(r["Annotation"] for r in rows))
        raise ValueError(f"normalize_against={against!r}: no annotation of that name was "
                         f"measured; measured: {', '.join(map(repr, names)) or 'none'}")
    base = {}
    for r in rows:
        if r["Annotation"] != against:
            continue
        key = (_config_key(r["_config"]), r["Metric"])
        if key in base:
            raise ValueError(f"normalize_against={against!r}: that annotation has several "
                             f"kernels for {r['Metric']} in one config; give "
                             "combine_kernel_metrics to combine them into one value")
        base[key] = r["AvgValue"]
    kept = []
    for r in rows:
        key = (_config_key(r["_config"]), r["Metric"])
        if key not in base:
            continue
        value = base[key]
        r["AvgValue"] = r["AvgValue"] / value if value else math.nan
        r["Normalized"] = against
        r["NormalizationValue"] = value
        kept.append(r)
    rows[:] = kept


def geomean(values):
    """The geometric mean of values as Nsight Python takes it (exp of the mean log, NaN
    and None dropped): 0 where a value is 0, NaN where one is negative or none is left.
    The Geomean column and analyze.plot's geomean bar both come from here."""
    xs = [x for x in values if x is not None and not math.isnan(x)]
    if not xs or any(x < 0 for x in xs):
        return math.nan
    if any(x == 0 for x in xs):
        return 0.0
    return math.exp(math.fsum(math.log(x) for x in xs) / len(xs))


def _geomean(rows):
    """Geomean: per Annotation and Metric, the geometric mean of AvgValue over the rows."""
    groups = OrderedDict()
    for r in rows:
        groups.setdefault((r["Annotation"], r["Metric"]), []).append(r)
    for members in groups.values():
        g = geomean(r["AvgValue"] for r in members)
        for r in members:
            r["Geomean"] = g


def check_derive_signature(derive_metric, n_metrics, n_params):
    """Nsight Python's check, made before measuring: a derive_metric without *args takes
    one argument per metric and one per parameter of the decorated function."""
    if not callable(derive_metric):
        raise TypeError(f"derive_metric must be a callable function, not "
                        f"{type(derive_metric).__name__}")
    try:
        params = inspect.signature(derive_metric).parameters
    except (TypeError, ValueError):
        return
    if any(p.kind == inspect.Parameter.VAR_POSITIONAL for p in params.values()):
        return
    expected = n_metrics + n_params
    if len(params) != expected:
        raise ValueError(f"derive_metric expects {expected} parameters ({n_metrics} metric "
                         f"values + {n_params} configs), but has {len(params)} parameters")


def check_combine(combine):
    """combine_kernel_metrics must be a function of two values."""
    if not callable(combine):
        raise TypeError(f"combine_kernel_metrics must be a function of two values, not "
                        f"{type(combine).__name__} ({combine!r})")
    try:
        sig = inspect.signature(combine)
    except (TypeError, ValueError):
        return
    try:
        sig.bind(0.0, 0.0)
    except TypeError:
        raise TypeError(f"combine_kernel_metrics must take two values (e.g. lambda x, y: "
                        f"x + y); {getattr(combine, '__name__', combine)}{sig} does not")
