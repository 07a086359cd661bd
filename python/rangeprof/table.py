"""rangeprof/table.py - from run records to tables, on the standard library alone: one
sample per measured run (its metrics, units, clocks, configuration), kernels of one range
combined into one sample per run, derived metrics added per run, samples flattened into
Nsight Python's long form, grouped and aggregated with SPEC.md section 5 statistics, and
normalised against a baseline. The report, compare and plot tools are built on these."""
import math
from array import array
from collections import OrderedDict

from rangeprof import job, placement, stats
from rangeprof.expr import ExprError
from rangeprof.output import brief
from rangeprof.units import DIMENSIONLESS, parse_unit, same_unit

# Identity and context columns of a long-form row, in the order tables show them. Config
# columns (from key=value words) go after Annotation.
ID_COLUMNS = ["Annotation", "Kernel", "Metric", "Value", "Unit", "Run", "Runs", "Launch",
              "Workload", "Graph", "GraphNode", "RangeKernels", "RangeKernelNames", "Session", "Process", "Host",
              "JobId", "Rank", "LocalRank", "WorldSize", "GPU", "Device", "Grid", "Block",
              "SharedMemBytes", "Passes", "CacheControl", "ClockControl", "SMClock",
              "ComputeClock", "MemoryClock", "Temperature", "ThrottleReasons", "Time", "File",
              "Line"]
# A range workload (--replay-mode range, workload "range") is a row like a kernel's:
# Annotation its NVTX path, Kernel the record's kernel text (its kernels' count and
# names); RangeKernels is its kernel count and RangeKernelNames the names in launch order
# joined by RANGE_NAME_SEPARATOR (no demangled name holds it). Both are empty (None, NaN)
# for other workloads.
RANGE_NAME_SEPARATOR = "; "
# Nsight Python's aggregate columns, plus the median and why a group is not stable.
AGG_COLUMNS = ["NumRuns", "AvgValue", "StdDev", "MinValue", "MedianValue", "MaxValue",
               "CI95_Lower", "CI95_Upper", "RelativeStdDevPct", "StableMeasurement"]
_FROM_SUMMARY = dict(NumRuns="n", AvgValue="mean", StdDev="stddev", MinValue="min",
                     MedianValue="median", MaxValue="max", CI95_Lower="ci95_low",
                     CI95_Upper="ci95_high", RelativeStdDevPct="rsd_pct", StableMeasurement="stable")
DEFAULT_GROUP_BY = ["Annotation", "Kernel", "Metric"]


def _dims(v):
    return ",".join(str(x) for x in v) if isinstance(v, list) else ""


def range_columns(rng):
    """(RangeKernels, RangeKernelNames) of a record's "range" member (None, None where it
    is not an object: not a range workload, or a file written before range replay)."""
    if not isinstance(rng, dict):
        return None, None
    names = rng.get("kernel_names")
    return (rng.get("kernels"),
            RANGE_NAME_SEPARATOR.join(names) if isinstance(names, list) else None)


def _l2_bytes(dev):
    """The L2 size of a device record for placement.py's rule, NaN where it has none."""
    l2 = placement.l2_of([dev])
    return math.nan if l2 is None else l2


def _kernel_count(rng):
    """Kernels a workload holds, for --bytes's Kernels: a range's count, else 1."""
    n = rng.get("kernels") if isinstance(rng, dict) else None
    return n if type(n) is int and n >= 0 else 1


class _Template:
    """The fields that the runs of one launch share (a sample's static part), once per
    launch: Aggregator caches its groups per template. Hashed by identity. refs keeps the
    session and device records whose ids are part of its key alive while it is cached,
    so that no other record can get their ids meanwhile."""
    __slots__ = ("static", "refs")

    def __init__(self, static, refs):
        self.static, self.refs = static, refs


_TEMPLATES = {}
# The run members a launch's template depends on (besides grid, block and graph).
_STATIC_KEYS = ("launch", "kernel", "nvtx_path", "workload", "runs", "device",
                "shared_mem_bytes", "passes", "cache_control", "clock_control",
                "rated_sm_clock_hz")


def _range_key(rng):
    """What a template takes from a range workload's "range" member, hashable."""
    if type(rng) is not dict:
        return None
    names = rng.get("kernel_names")
    return rng.get("kernels"), tuple(names) if isinstance(names, list) else names


def template(run):
    """The _Template of a run's launch: its static fields, built at the launch's first
    run and found again (a dict lookup on the fields they come from) for the others."""
    rec, dev, session = run.record, run.device, run.session
    get = rec.get
    given = get("graph")
    graph = given or {}
    grid, block = get("grid"), get("block")
    # (A graph member of no id and node, {}, still makes a node's Launch id: it is in
    # the key, apart from no graph member.)
    key = (id(session), id(dev), run.session_id, run.path,
           run.config_key if run.config_key is not None else id(run.config),
           tuple(map(get, _STATIC_KEYS)), type(given) is dict, graph.get("id"), graph.get("node"),
           _range_key(get("range")),
           tuple(grid) if isinstance(grid, list) else grid,
           tuple(block) if isinstance(block, list) else block)
    tmpl = _TEMPLATES.get(key)
    if tmpl is None or (run.config_key is None and tmpl.static["config"] is not run.config):
        if len(_TEMPLATES) > 4096:
            _TEMPLATES.clear()
        grid, block = _dims(grid), _dims(block)
        rng = get("range")
        range_kernels, range_names = range_columns(rng)
        tmpl = _TEMPLATES[key] = _Template(dict(
            Annotation=get("nvtx_path") or "", Kernel=get("kernel", ""),
            # null or missing: "kernel" (doc/records.md), as the columnar readers fill it.
            Workload="kernel" if get("workload") is None else get("workload"),
            Graph=graph.get("id"), GraphNode=graph.get("node"),
            RangeKernels=range_kernels, RangeKernelNames=range_names,
            Runs=get("runs"), Launch=run.launch_id,
            Session=run.session_id, Process=session.get("pid"),
            Host=session.get("host"), **job.columns(session),
            GPU=dev.get("name"), Device=get("device"),
            Grid=grid, Block=block,
            SharedMemBytes=get("shared_mem_bytes"), Passes=get("passes"),
            CacheControl=get("cache_control"), ClockControl=get("clock_control"),
            ComputeClock=_num(get("rated_sm_clock_hz")),
            MemoryClock=_num(dev.get("rated_memory_clock_hz")),
            File=run.path, config=run.config,
            kernels=[(get("kernel", ""), grid, block)],
            _kernel_count=_kernel_count(rng), _l2_bytes=_l2_bytes(dev)),
            (session, dev, run.config))
    return tmpl


def sample(run):
    """One measured run as a sample: identity fields, 'config' (shared with the run: not to
    be changed) and 'values' {metric: (value, Unit, unit text)}. The fields a launch's
    runs share are built once per launch (template())."""
    tmpl = template(run)
    rec = run.record
    get = rec.get
    units = get("units") or {}
    values = {}
    for name, value in rec["metrics"].items():
        unit_text = units.get(name) or ""
        values[name] = (math.nan if value is None else float(value), _unit(unit_text),
                        unit_text)
    s = dict(tmpl.static)
    s["Run"] = get("run")
    s["SMClock"] = _num(get("sm_clock_hz"))
    s["Temperature"] = _num(get("temperature_c"))
    s["ThrottleReasons"] = _reasons(get("throttle_reasons"))
    s["Time"] = get("time")
    s["Line"] = run.line
    s["values"] = values
    s["_template"] = tmpl
    return s


_UNITS = {}


def _unit(text):
    """parse_unit, once per distinct unit text."""
    unit = _UNITS.get(text)
    if unit is None:
        if len(_UNITS) > 4096:
            _UNITS.clear()
        unit = _UNITS[text] = parse_unit(text)
    return unit


def samples(records):
    """One dict per measured run (see sample()), in file order."""
    return [sample(run) for run in records.runs]


def _num(v):
    return math.nan if v is None else float(v)


def _reasons(v):
    """A run's throttle_reasons as one cell: 'a,b', '' when none, None when unknown (also
    for records written before rangeprof read them)."""
    return ",".join(v) if isinstance(v, list) else None


# ---------------------------------------------------------------------------------------
# Combining the kernels of one range

COMBINE_FUNCTIONS = {
    "sum": math.fsum, "mean": lambda xs: math.fsum(xs) / len(xs), "max": max, "min": min,
    "first": lambda xs: xs[0], "last": lambda xs: xs[-1],
}


def default_combine(unit):
    """sum for additive units (time, bytes, counts); max for rates and percentages, whose
    sum over kernels means nothing."""
    if "%" in unit.dims or unit.dims.get("s", 0) < 0:
        return "max"
    return "sum"


def iter_combined(samples_iter, functions=None):
    """combine_kernels over a stream of samples, holding one range execution at a time.
    An execution is the consecutive launches of one session with the same NVTX path,
    until a kernel (name, grid, block) comes back, which starts the next one; the records
    carry no range-instance id, so a range that launches the same kernel twice in a row
    counts as two executions. The runs of one launch are those of its Launch id within
    the execution."""
    functions = functions or {}
    launches, seen, first = {}, set(), None
    for s in samples_iter:
        runs = launches.get(s["Launch"])
        if runs is None:
            key = s["kernels"][0]
            if first is not None and (s["Session"] != first["Session"]
                                      or s["Annotation"] != first["Annotation"] or key in seen):
                yield from _combine_instance(list(launches.values()), functions)
                launches, seen = {}, set()
            if not launches:
                first = s
            launches[s["Launch"]] = runs = []
            seen.add(key)
        runs.append(s)
    if launches:
        yield from _combine_instance(list(launches.values()), functions)


def combine_runs(launches, reduce, joiner=" + ", names_joiner=RANGE_NAME_SEPARATOR):
    """The one rule by which the kernels of an execution become one: for each run index
    below the fewest runs of a launch (launches: each launch's samples in run order), the
    first launch's sample with its runs' values and context taken together. Both callers
    use it: rangeprof-report's --combine (iter_combined) and analyze's
    combine_kernel_metrics (rangeprof/_results.py), each with its own per-metric reduce
    and the spelling of its joined names.
    - values: {metric: reduce(metric, [each launch's value])}, for the metrics every
      launch has (in the first's order);
    - Kernel joined by joiner; RangeKernelNames, the non-empty ones, by names_joiner
      (None where no launch has them); RangeKernels summed (None where none has it);
    - SMClock the mean of the known clocks; Temperature, and TemperatureMax and Power
      where the samples have them, the highest known (NaN where none is);
    - ThrottleReasons: every reason of any of them (stats.throttle_union);
    - Passes summed (a launch without a count adds 0)."""
    for parts in zip(*launches):
        combined = dict(parts[0])
        values = OrderedDict()
        for metric in parts[0]["values"]:
            if all(metric in p["values"] for p in parts):
                values[metric] = reduce(metric, [p["values"][metric] for p in parts])
        combined["values"] = values
        combined["Kernel"] = joiner.join(p["Kernel"] for p in parts)
        named = [p["RangeKernelNames"] for p in parts if p.get("RangeKernelNames") is not None]
        combined["RangeKernelNames"] = names_joiner.join(n for n in named if n) \
            if named else None
        ranges = [p["RangeKernels"] for p in parts if p.get("RangeKernels") is not None]
        combined["RangeKernels"] = sum(ranges) if ranges else None
        clocks = [p["SMClock"] for p in parts if not math.isnan(p["SMClock"])]
        combined["SMClock"] = math.fsum(clocks) / len(clocks) if clocks else math.nan
        for key in ("Temperature", "TemperatureMax", "Power"):
            if key in combined:
                known = [p[key] for p in parts if not math.isnan(p[key])]
                combined[key] = max(known) if known else math.nan
        combined["ThrottleReasons"] = stats.throttle_union(p["ThrottleReasons"] for p in parts)
        combined["Passes"] = sum(p["Passes"] or 0 for p in parts)
        yield parts, combined


def _reducer(functions):
    """combine_runs' reduce for the report's samples, whose values are (value, Unit, unit
    text): functions as combine_kernels takes them, default_combine for the others."""
    def reduce(metric, values):
        unit, unit_text = values[0][1:]
        fn = functions.get(metric, functions.get("*", default_combine(unit)))
        fn = COMBINE_FUNCTIONS[fn] if isinstance(fn, str) else fn
        try:
            value = fn([v[0] for v in values])
        except (OverflowError, ValueError):  # fsum of values near 1e308
            value = math.nan
        return (value, unit, unit_text)
    return reduce


def _combine_instance(instance, functions):
    for parts, combined in combine_runs(instance, _reducer(functions)):
        combined.pop("_template", None)  # the first kernel's, not the combination's
        combined["kernels"] = [k for p in parts for k in p["kernels"]]
        if len(parts) > 1:
            combined["Launch"] = " + ".join(str(p["Launch"]) for p in parts)
        combined["_kernel_count"] = sum(p.get("_kernel_count", 1) for p in parts)
        combined["Grid"] = " + ".join(p["Grid"] for p in parts)
        combined["Block"] = " + ".join(p["Block"] for p in parts)
        yield combined


def combine_kernels(samples_list, functions=None):
    """One sample per run of each range execution (see iter_combined), each metric
    combined over the range's kernels: functions maps a metric to a name in
    COMBINE_FUNCTIONS or a callable on a list of values; '*' sets the default (otherwise
    default_combine). Kernel becomes the kernels' names joined by ' + '."""
    return list(iter_combined(samples_list, functions))


def parse_combine(text):
    """'sum', or 'gpu__time_duration.sum=sum,sm__throughput.avg.pct_of_peak_sustained_elapsed=max'
    as a functions dict for combine_kernels; ValueError names a bad function."""
    out = {}
    for item in filter(None, (p.strip() for p in (text or "sum").split(","))):
        metric, _, fn = item.rpartition("=")
        if fn not in COMBINE_FUNCTIONS:
            raise ValueError(f"--combine '{item}': function should be one of "
                             f"{', '.join(COMBINE_FUNCTIONS)}")
        out[metric or "*"] = fn
    return out


# ---------------------------------------------------------------------------------------
# Derived metrics

class Deriver:
    """Adds derived metrics to samples one at a time, counting what it could not do: runs
    missing an input (a metric or numeric config column), and runs where the expression
    is undefined (a division by zero, the square root of a negative number, an overflow):
    those runs get no value, and report() says how many of how many. A derivation whose
    name is a metric measured in the files would hide it: ExprError, as for two
    derivations of one name."""

    def __init__(self, derivations):
        self.derivations = list(derivations)
        names = [d.name for d in self.derivations]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ExprError(f"--derive {twice[0]}: the name is given more than once")
        # name -> [runs without an input, missing names, example]; [undefined, example]
        self.missing = {d.name: [0, set(), None] for d in self.derivations}
        self.undefined = {d.name: [0, None] for d in self.derivations}
        self.evaluated = {d.name: 0 for d in self.derivations}

    def apply(self, s):
        values = s["values"]
        for d in self.derivations:
            if d.name in values:
                raise ExprError(
                    f"--derive '{d.name}={d.text}': '{d.name}' is a metric measured in "
                    f"these files ({s['File']}:{s['Line']}); give the derived metric "
                    "another name")
            env = {}
            for name in d.inputs:
                if name in values:
                    env[name] = values[name][:2]
                elif name in s["config"] and isinstance(s["config"][name], (int, float)) \
                        and not isinstance(s["config"][name], bool):
                    env[name] = (_float(s["config"][name]), DIMENSIONLESS)
                elif name in s and isinstance(s[name], (int, float)) and not isinstance(s[name], bool):
                    env[name] = (float(s[name]), _unit(_FIELD_UNITS.get(name, "")))
            if len(env) < len(d.inputs):
                m = self.missing[d.name]
                m[0] += 1
                m[1].update(d.inputs - set(env))
                if m[2] is None:
                    m[2] = _where(s)
                continue
            try:
                value, unit_text = d.evaluate(env)
                value = float(value)
            except (ArithmeticError, TypeError):
                value, unit_text = math.nan, d.unit_text or ""
            self.evaluated[d.name] += 1
            if not math.isfinite(value):
                u = self.undefined[d.name]
                u[0] += 1
                if u[1] is None:
                    u[1] = _where(s)
                continue
            values[d.name] = (value, _unit(unit_text), unit_text)
        return s

    def merge(self, other):
        for name, (count, absent, example) in other.missing.items():
            m = self.missing[name]
            m[0] += count
            m[1] |= absent
            m[2] = m[2] or example
        for name, (count, example) in other.undefined.items():
            u = self.undefined[name]
            u[0] += count
            u[1] = u[1] or example
        for name, count in other.evaluated.items():
            self.evaluated[name] += count

    def report(self, out):
        for d in self.derivations:
            count, absent, example = self.missing[d.name]
            if count:
                print(brief(f"rangeprof: warning: --derive {d.name}: no numeric "
                            f"{', '.join(sorted(absent))} in {count} runs (e.g. {example}); "
                            f"those runs get no {d.name}"), file=out)
            count, example = self.undefined[d.name]
            if count:
                print(f"rangeprof: warning: --derive {d.name}: undefined in {count} of "
                      f"{self.evaluated[d.name]} runs (e.g. {example}: a division by zero, "
                      "the root or logarithm of a negative number, or an overflow); those "
                      f"runs are left out of {d.name}'s statistics", file=out)


def derive(samples_list, derivations, report=None):
    """Adds each Derivation as a metric of every sample that has its inputs (metrics of the
    sample or config columns) and where it is defined; what it could not do is said on
    report (see Deriver)."""
    deriver = Deriver(derivations)
    for s in samples_list:
        deriver.apply(s)
    if report is not None:
        deriver.report(report)
    return samples_list


def _where(s):
    """A sample's range and line, as a message names them: one line, not too long."""
    from rangeprof.output import printable, shorten
    return f"'{printable(shorten(s['Annotation'], 80))}' at {printable(s['File'])}:{s['Line']}"


def _float(v):
    """A config number as a float; an integer no float holds (a seed= of 400 digits) is
    infinite, so that what is derived from it is undefined, said as such, rather than an
    OverflowError."""
    try:
        return float(v)
    except OverflowError:
        return math.inf if v > 0 else -math.inf


_FIELD_UNITS = {"SMClock": "hz", "ComputeClock": "hz", "MemoryClock": "hz", "Temperature": "C"}


# ---------------------------------------------------------------------------------------
# Long form and aggregation

def long_rows(samples_list):
    """Nsight Python's long form: one row per sample and metric, config columns included."""
    rows = []
    for s in samples_list:
        base = {k: v for k, v in s.items() if k not in _NESTED}
        for metric, (value, _unit, unit_text) in s["values"].items():
            row = dict(base)
            row.update(s["config"])
            row.update(Metric=metric, Value=value, Unit=unit_text)
            rows.append(row)
    return rows


# Config columns a table shows at most: range texts that hold a word of their own per
# iteration ('step1234=1') would otherwise make a column each (5 000 of them made a frame
# of 5 032 columns; 20 000 ran out of 12 GB). The first ones seen are kept.
MAX_CONFIG_COLUMNS = 100


def capped_configs(names, where, out, how):
    """The config column names a table gets: the first MAX_CONFIG_COLUMNS; the others
    are said once on out (None: not said), with how to get them."""
    names = list(names)
    if len(names) <= MAX_CONFIG_COLUMNS:
        return names
    from rangeprof.output import printable
    left = names[MAX_CONFIG_COLUMNS:]
    if out is not None:
        examples = ", ".join(repr(printable(c[:40])) for c in left[:3])
        print(f"rangeprof: warning: {len(names)} distinct config keys in the range texts of "
              f"{printable(where)}; the first {MAX_CONFIG_COLUMNS} are columns, the other "
              f"{len(left)} (e.g. {examples}) are not: {how}", file=out)
    return names[:MAX_CONFIG_COLUMNS]


def config_columns(rows):
    """Config column names in first-seen order."""
    names = OrderedDict()
    known = set(ID_COLUMNS)
    for r in rows:
        for k in r:
            if k not in known:
                names[k] = None
    return list(names)


_NESTED = ("config", "values", "kernels", "_template", "_kernel_count", "_l2_bytes")
# The columns a run's session, device record, file, launch (and graph node), kernel,
# range path and config decide (Aggregator.add_run's light key); config columns are
# decided by config.
_LIGHT_COLUMNS = frozenset(("Annotation", "Kernel", "Metric", "Launch", "Session",
                            "Process", "Host", "File", "GPU") + job.COLUMNS)
# Columns that differ between the runs of one launch: grouping by one of them turns off
# the per-launch group cache.
_PER_RUN = frozenset(("Value", "Unit", "Run", "SMClock", "Temperature", "ThrottleReasons",
                      "Time", "Line"))
_NO_RUN = -(1 << 63)  # a run index that is not known, in the array of run indexes
_EMPTY = frozenset()
_ABSENT = object()


class _Group:
    """What an Aggregator keeps of one group: its values and run indexes (for the median
    and comparisons), its launches as segments (consecutive values of one launch: the
    launch and where it starts), the drift of each segment judged as it closes (so that
    the work is done where the reading is, in the processes of scan.run), the clocks'
    range, the throttle reasons' tally and which config values it holds constant."""
    __slots__ = ("unit", "values", "runs", "seg_launch", "seg_start", "seg_done", "open",
                 "clock_low", "clock_high", "hits", "seen", "consts", "varied", "last_config",
                 "other_units", "l2")

    def __init__(self, unit, config):
        self.unit = unit
        # The run indexes one byte each while they fit (runs are numbered from 0, a few
        # to a few hundred a launch), eight once one does not (_wide_run): two thirds of
        # the memory of a big file's report were these, the drifts and the values.
        self.values, self.runs = array("d"), array("b")
        # seg_done[i]: (finite samples, drift_pct or None, drifted) of closed segment i;
        # the last segment is open (its launch may have more runs to come) until close().
        self.seg_launch, self.seg_start, self.seg_done = array("q"), array("q"), []
        self.open = -1
        self.clock_low = self.clock_high = None
        # The sets are frozensets, the empty one shared until a value comes (an empty set
        # is 216 bytes: three a group were half of a group's memory beside its values,
        # with a group per launch as table.MAX_GROUPS's texts make them).
        self.hits, self.seen = 0, _EMPTY
        self.consts, self.varied, self.last_config = dict(config), _EMPTY, config
        # Unit texts of values that are not in the group's unit (another scale or
        # dimension): such a group's values are not averaged (Aggregator.rows).
        self.other_units = _EMPTY
        # The L2 size of the devices of its runs (placement.py's rule): 0.0 before the
        # first, NaN where one is unknown or they differ. A float, not a sentinel object:
        # groups travel between processes (scan.run), where identity is lost.
        self.l2 = 0.0

    def wide_run(self, run):
        """Appends a run index that a byte does not hold: the indexes become int64."""
        self.runs = array("q", self.runs)
        self.runs.append(run)

    def note_unit(self, text):
        """A value in unit text joined the group (called where text != self.unit)."""
        if text not in self.other_units and not same_unit(text, self.unit):
            self.other_units = self.other_units | {text}

    def new_segment(self, launch):
        """Before the first value of a launch other than the open segment's."""
        if self.open != -1:
            self.seg_done.append(_segment_drift(self.values[self.seg_start[-1]:],
                                                self.runs[self.seg_start[-1]:]))
        self.seg_launch.append(launch)
        self.seg_start.append(len(self.values))
        self.open = launch

    def close(self):
        """Judges the open segment: every segment then has its drift."""
        if len(self.seg_done) < len(self.seg_launch):
            a = self.seg_start[-1]
            self.seg_done.append(_segment_drift(self.values[a:], self.runs[a:]))

    def extend(self, other, remap):
        """Appends another piece's group of the same key (its launches as indexes of
        remap); a launch that goes on across the two is one segment."""
        launches = [remap[i] for i in other.seg_launch]
        if launches and launches[0] != self.open:
            # The open segment ends here: judged before other's values join the array,
            # where close() would take them for the rest of its launch.
            self.close()
        offset = len(self.values)
        self.values.extend(other.values)
        if other.runs.typecode == self.runs.typecode:
            self.runs.extend(other.runs)
        else:
            self.runs = array("q", self.runs)
            self.runs.extend(array("q", other.runs))
        starts, done = list(other.seg_start), list(other.seg_done)
        if launches and launches[0] == self.open:
            # The open segment goes on: other's first segment joins it.
            launches.pop(0)
            starts.pop(0)
            if done:
                done.pop(0)
                a = self.seg_start[-1]
                b = offset + other.seg_start[1] if len(other.seg_start) > 1 else len(self.values)
                self.seg_done.append(_segment_drift(self.values[a:b], self.runs[a:b]))
        self.seg_launch.extend(launches)
        self.seg_start.extend(x + offset for x in starts)
        self.seg_done += done
        if launches:
            self.open = launches[-1]
        for clock in (other.clock_low, other.clock_high):
            self.note_clock(clock)
        for text in other.other_units | {other.unit}:
            if text != self.unit:
                self.note_unit(text)
        self.hits += other.hits
        self.seen |= other.seen
        if other.l2 != 0.0:
            self.note_l2(other.l2)
        self.last_config = None
        self.note_config(other.consts)
        self.varied |= other.varied
        for c in other.varied:
            self.consts.pop(c, None)

    def launches(self):
        """The launch index of every value."""
        out = array("q")
        bounds = list(self.seg_start) + [len(self.values)]
        for i, launch in enumerate(self.seg_launch):
            out.extend([launch] * (bounds[i + 1] - bounds[i]))
        return out

    def note_config(self, config):
        if config is self.last_config:
            return
        self.last_config = config
        consts = self.consts
        for c, v in list(consts.items()):
            w = config.get(c, _ABSENT)
            # As repr() tells values apart: 1, 1.0 and True are three values.
            if w is _ABSENT or (w is not v and repr(w) != repr(v)):
                del consts[c]
                self.varied = self.varied | {c}
        for c in config:
            if c not in consts and c not in self.varied:
                self.varied = self.varied | {c}

    def note_l2(self, l2):
        """A launch on a device of L2 size l2 (NaN: unknown) joined the group. (Its
        other runs go to the same groups by the launch's cache: same device.)"""
        if self.l2 == 0.0:
            self.l2 = l2
        elif self.l2 != l2:  # (NaN stays NaN)
            self.l2 = math.nan

    def note_clock(self, clock):
        if clock is not None and math.isfinite(clock):  # known
            if self.clock_low is None:
                self.clock_low = self.clock_high = clock
            elif clock < self.clock_low:
                self.clock_low = clock
            elif clock > self.clock_high:
                self.clock_high = clock


def _note_units(by_metric, units):
    """Notes in each group of by_metric a unit of units (a run's) that is not its own."""
    units = units if type(units) is dict else {}
    for metric, g in by_metric.items():
        if g is not None:
            text = units.get(metric) or ""
            if text != g.unit:
                g.note_unit(text)


def _short_segment(n):
    """(n, None, False), one tuple per n shared by every segment of n values (a big file
    has millions of launches of 5 runs: their drifts took more memory than their
    values)."""
    got = _SHORT_SEGMENTS.get(n)
    if got is None:
        got = _SHORT_SEGMENTS[n] = (n, None, False)
    return got


_SHORT_SEGMENTS = {}


def _segment_drift(values, runs):
    """(finite samples, drift_pct or None, drifted) of one launch's values and run
    indexes, as stats.summarize judges a launch: NaN left out, in run order where every
    run index is known."""
    if len(values) < stats.STABLE_MIN_DRIFT_RUNS:
        # Too few runs for a drift (stats.launch_drift): only the finite ones counted,
        # without the lists (a segment per launch, of 5 runs in many jobs).
        total = sum(values)  # finite only where every value is (else counted one by one)
        return _short_segment(len(values) if total - total == 0 else
                              sum(v - v == 0 for v in values))
    vals, rs = values.tolist(), runs.tolist()
    if not all(map(math.isfinite, vals)):
        keep = [i for i, v in enumerate(vals) if math.isfinite(v)]
        vals, rs = [vals[i] for i in keep], [rs[i] for i in keep]
    if _NO_RUN not in rs and rs != sorted(rs):
        order = sorted(range(len(vals)), key=rs.__getitem__)  # stable: ties keep order
        vals = [vals[i] for i in order]
    return (len(vals),) + stats.launch_drift(vals)


# Groups an aggregation holds at most (a group costs about a kilobyte besides its values):
# range texts that hold the iteration ('step 17/layer0') make a group of every launch,
# millions of them, which ran a 2 M-line report out of memory. Beyond it the reading
# stops with TooManyGroups, in bounded time and memory.
MAX_GROUPS = 250_000


class TooManyGroups(ExprError):
    """More groups than MAX_GROUPS; the message says why it may be and what to do. (An
    ExprError: the tools refuse it as they refuse a bad expression, exit status 2.)"""

    def __init__(self, group_by, count, example):
        from rangeprof.output import printable, shorten
        where = printable(shorten(example.get("Annotation") or "", 80))
        super().__init__(
            f"more than {count} groups of {','.join(group_by)}: too many to hold and to "
            f"read (at most {MAX_GROUPS}). Do the range texts hold a number that differs "
            f"per iteration (e.g. '{where}')? Group by fewer columns (--group-by "
            "Kernel,Metric), or write the number as a key=value word (step=17) and group "
            "by the others")

    def __reduce__(self):  # raised in a worker process: sent back as its message
        return (ExprError, (str(self),))


class Aggregator:
    """aggregate() over a stream: add(sample) (or add_row(row)) one at a time, merge()
    the aggregator of another piece of the input (in input order), rows() at the end.
    Memory: per group its config values, and 24 bytes per value for the exact median,
    the drift per launch and the comparisons; no row is kept. metrics, when given,
    restricts it to those metrics."""

    def __init__(self, group_by=None, metrics=None):
        group_by = list(group_by or DEFAULT_GROUP_BY)
        if "Metric" not in group_by:
            group_by.append("Metric")
        self.group_by = group_by
        self.metrics = set(metrics) if metrics else None
        self.groups = OrderedDict()
        self.launch_ids, self.launch_names = {}, []
        self.configs = OrderedDict()        # config column names, first seen first
        self.metric_names = OrderedDict()   # every metric seen, also those left out
        self.unseen = set(group_by)         # group_by columns no row has had yet
        self._throttle = {}
        # template -> (launch index, {metric: group or None}): the runs of one launch go
        # to the same groups unless a column that differs per run is grouped by.
        self._by_launch = not _PER_RUN & set(group_by)
        self._cache = {}
        # Grouped by columns a run's launch, session, path, kernel, range path and config
        # decide alone (the default, and compare's but for Grid): add_run finds a
        # launch's groups by those few members instead of the whole template.
        self._light = self._by_launch and all(c in _LIGHT_COLUMNS or c not in _ID_SET
                                              for c in group_by)
        self._light_cache = {}
        self._units_entry = self._units_seen = None
        # Grouped by no column a launch decides alone (Launch): a launch's groups are
        # those of the kernel's earlier launches in the same range, session, device,
        # file and config (key: the light key without the launch).
        self._launch_free = {} if self._light and "Launch" not in group_by else None

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_cache"] = {}  # templates are per process: not sent between them
        state["_light_cache"] = {}
        state["_units_entry"] = state["_units_seen"] = None
        state["_launch_free"] = {} if self._launch_free is not None else None
        return state

    def _launch(self, launch):
        try:
            i = self.launch_ids.get(launch)
        except TypeError:  # not hashable (a row given by hand)
            launch = str(launch)
            i = self.launch_ids.get(launch)
        if i is None:
            i = self.launch_ids[launch] = len(self.launch_names)
            self.launch_names.append(launch)
        return i

    def _throttle_of(self, text):
        """(known, disturbing reasons) of a ThrottleReasons cell, once per distinct cell."""
        try:
            hit = self._throttle.get(text)
        except TypeError:
            hit = None
            text = str(text)
        if hit is None:
            names = stats.throttle_names(text)
            hit = self._throttle[text] = (names is not None,
                                          frozenset(names or ()) & stats.THROTTLE_DISTURBING)
        return hit

    def add(self, s):
        """Adds a sample's metrics (one row each, as long_rows() would make them)."""
        tmpl = s.get("_template") if self._by_launch else None
        if tmpl is not None:
            entry = self._cache.get(tmpl)
            if entry is not None and self._add_cached(s, entry):
                return
        config = s["config"]
        view = dict(s)
        for name in _NESTED:
            if name not in config:
                view.pop(name, None)
        if config:
            view.update(config)
            for c in config:
                if c not in self.configs and c not in _ID_SET:
                    self.configs[c] = None
        chosen = self._add_view(view, s["values"].items(), config,
                                s.get("_l2_bytes", math.nan))
        if tmpl is not None:
            if len(self._cache) > 4096:
                self._cache.clear()
            entry = self._cache.setdefault(tmpl, (chosen[0], {}))
            entry[1].update(chosen[1])

    def add_run(self, run):
        """add(sample(run)) for a run as read (records.Run); where its launch's groups are
        known, without making the sample (most of the time of a big file)."""
        if self._by_launch:
            rec = run.record
            if self._light:
                get = rec.get
                graph = get("graph")
                # (free: the key without the launch, for _launch_free)
                free = (id(run.session), id(run.device), run.path,
                        graph.get("node") if type(graph) is dict else None, get("kernel"),
                        get("nvtx_path"),
                        run.config_key if run.config_key is not None else id(run.config))
                key = (get("launch"),) + free
                hit = self._light_cache.get(key)
                if hit is None and self._launch_free is not None:
                    # A later launch of a kernel seen in the same range, session, device,
                    # file and config: the same groups, under its own launch.
                    known = self._launch_free.get(free)
                    if known is not None:
                        if len(self._light_cache) > 4096:
                            self._light_cache.clear()
                        hit = self._light_cache[key] = (
                            (self._launch(run.launch_id), known[0]), run.session,
                            run.device, run.config)
                entry = hit[0] if hit is not None else None
            else:
                entry = self._cache.get(template(run))
            if entry is not None:
                launch, by_metric = entry
                metrics = rec["metrics"]
                for metric in metrics:
                    if metric not in by_metric:
                        break
                else:
                    units = rec.get("units")
                    # Checked at each launch's first run here and wherever the units
                    # change: a comparison per run, not a lookup per metric.
                    if entry is not self._units_entry or units != self._units_seen:
                        self._units_entry, self._units_seen = entry, units
                        _note_units(by_metric, units)
                    r = rec.get("run")
                    r = r if type(r) is int and -_NO_RUN > r > _NO_RUN else _NO_RUN
                    clock = rec.get("sm_clock_hz")
                    clock = float(clock) if clock is not None else None
                    reasons = rec.get("throttle_reasons")
                    hit = self._throttle_of(",".join(reasons) if isinstance(reasons, list)
                                            else None)[1] if reasons is not None else None
                    if clock is not None and clock - clock != 0:
                        clock = None  # (note_clock's test, once per run)
                    for metric, value in metrics.items():
                        g = by_metric[metric]
                        if g is None:
                            continue
                        if launch != g.open:
                            g.new_segment(launch)
                        g.values.append(math.nan if value is None else float(value))
                        try:
                            g.runs.append(r)
                        except OverflowError:
                            g.wide_run(r)
                        if clock is not None:
                            # note_clock inline: ten groups per run
                            low = g.clock_low
                            if low is None:
                                g.clock_low = g.clock_high = clock
                            elif clock < low:
                                g.clock_low = clock
                            elif clock > g.clock_high:
                                g.clock_high = clock
                        if hit:
                            g.hits += 1
                            g.seen |= hit
                    return
            s = sample(run)
            self.add(s)
            if self._light:
                if len(self._light_cache) > 4096:
                    self._light_cache.clear()
                # The records whose ids are in the key stay alive while it is cached.
                entry = self._cache[s["_template"]]
                self._light_cache[key] = (entry, run.session, run.device, run.config)
                if self._launch_free is not None:
                    if len(self._launch_free) > 4096:
                        self._launch_free.clear()
                    self._launch_free[free] = (entry[1], run.session, run.device,
                                               run.config)
            return
        self.add(sample(run))

    def _add_cached(self, s, entry):
        """The runs of a launch after its first: the groups are known. False (nothing
        added) when a metric is new to the launch."""
        launch, by_metric = entry
        values = s["values"]
        for metric in values:
            if metric not in by_metric:
                return False
        run = s["Run"]
        run = run if type(run) is int and -_NO_RUN > run > _NO_RUN else _NO_RUN
        clock = s["SMClock"]
        clock = float(clock) if stats._is_finite(clock) else None
        hit = self._throttle_of(s["ThrottleReasons"])[1]
        for metric, item in values.items():
            g = by_metric[metric]
            if g is None:
                continue
            if item[2] != g.unit:
                g.note_unit(item[2])
            if launch != g.open:
                g.new_segment(launch)
            g.values.append(item[0])
            try:
                g.runs.append(run)
            except OverflowError:
                g.wide_run(run)
            if clock is not None:
                g.note_clock(clock)
            if hit:
                g.hits += 1
                g.seen |= hit
        return True

    def add_row(self, row):
        """Adds one long-form row (a dict with Metric, Value and Unit)."""
        config = {k: v for k, v in row.items() if k not in _ID_SET}
        for c in config:
            if c not in self.configs:
                self.configs[c] = None
        value = row.get("Value")
        try:
            value = math.nan if value is None else float(value)
        except (TypeError, ValueError, OverflowError):
            value = math.nan
        self._add_view(dict(row), [(row.get("Metric"), (value, None, row.get("Unit")))],
                       config)

    def _add_view(self, view, metric_items, config, l2=math.nan):
        """Adds the rows, of runs on a device of L2 size l2 (NaN: unknown); returns
        (launch index, {metric: group, or None where left out})."""
        group_by, groups = self.group_by, self.groups
        chosen = {}
        launch = self._launch(view.get("Launch"))
        run = view.get("Run")
        run = run if type(run) is int and -_NO_RUN > run > _NO_RUN else _NO_RUN
        clock = view.get("SMClock")
        clock = float(clock) if stats._is_finite(clock) else None
        known, hit = self._throttle_of(view.get("ThrottleReasons"))
        if self.unseen:
            self.unseen.difference_update(view.keys())
            self.unseen.difference_update(("Metric", "Value", "Unit"))
        for metric, (value, _unit, unit_text) in metric_items:
            self.metric_names[metric] = None
            if self.metrics is not None and metric not in self.metrics:
                chosen[metric] = None
                continue
            view["Metric"], view["Value"], view["Unit"] = metric, value, unit_text
            try:
                key = tuple(view.get(k) for k in group_by)
                g = groups.get(key)
            except TypeError:  # an unhashable cell (a row given by hand)
                key = tuple(repr(view.get(k)) for k in group_by)
                g = groups.get(key)
            if g is None:
                if len(groups) >= MAX_GROUPS:
                    raise TooManyGroups(self.group_by, len(groups), view)
                g = groups[key] = _Group(unit_text, config)
            else:
                g.note_config(config)
                if unit_text != g.unit:
                    g.note_unit(unit_text)
            if launch != g.open:
                g.new_segment(launch)
            g.values.append(value)
            try:
                g.runs.append(run)
            except OverflowError:
                g.wide_run(run)
            g.note_clock(clock)
            g.note_l2(l2)
            if hit:
                g.hits += 1
                g.seen |= hit
            chosen[metric] = g
        return launch, chosen

    def merge(self, other):
        """Adds another aggregator's groups (of the input that follows this one's)."""
        remap = [self._launch(name) for name in other.launch_names]
        for c in other.configs:
            self.configs.setdefault(c, None)
        for m in other.metric_names:
            self.metric_names.setdefault(m, None)
        self.unseen &= other.unseen
        self._cache.clear()
        for key, og in other.groups.items():
            g = self.groups.get(key)
            if g is None:
                if len(self.groups) >= MAX_GROUPS:
                    raise TooManyGroups(self.group_by, len(self.groups),
                                        dict(zip(self.group_by, key)))
                g = self.groups[key] = _Group(og.unit, og.consts)
            g.extend(og, remap)

    def group_stats(self, g):
        """stats.summarize of a group, from the drifts judged per launch segment; where a
        launch's values are not consecutive in the group (lines of processes
        interleaved), from the values and launches as stats.launch_series takes them."""
        names = self.launch_names
        clocks = (g.clock_low, g.clock_high) if g.clock_low is not None else None
        tally = (g.hits, len(g.values), g.seen)
        if len(set(g.seg_launch)) == len(g.seg_launch):
            g.close()
            drifts = [(names[lid], m, pct, drifted)
                      for lid, (m, pct, drifted) in zip(g.seg_launch, g.seg_done) if m]
            return stats.summarize(g.values, clock_range=clocks, throttle_tally=tally,
                                   drifts=drifts)
        return stats.summarize(g.values, launches=[names[i] for i in g.launches()],
                               runs=[None if r == _NO_RUN else r for r in g.runs],
                               clock_range=clocks, throttle_tally=tally)

    def rows(self):
        """One dict per group, in first-seen order: the group_by columns, the config
        columns constant in the group, Unit, Launches, AGG_COLUMNS, Reasons (a DRAM
        write's with placement.py's reason where its rule holds: _placement_reason) and
        values."""
        out = []
        for key, g in self.groups.items():
            s = self.group_stats(g) if not g.other_units else _unaveraged(g)
            row = OrderedDict(zip(self.group_by, key))
            # The group's constant config columns only (row.get() of another is None):
            # not every config column of the files in every row, which made thousands of
            # groups times thousands of config keys.
            for c, v in g.consts.items():
                if c not in row:
                    row[c] = v
            row["Unit"] = g.unit
            row["Launches"] = len(set(g.seg_launch))
            for col, fld in _FROM_SUMMARY.items():
                row[col] = s[fld]
            row["Reasons"] = placement.add_to("; ".join(s["reasons"]),
                                              self._placement_reason(key, g))
            row["values"] = g.values
            out.append(row)
        return out

    def _placement_reason(self, key, g):
        """placement.py's reason for a group of DRAM write values: on the medians of its
        values and of the group that differs from it by its Metric alone (the same runs'
        reads), on the L2 of their devices; None for another metric, where the reads are
        not aggregated (--metrics left them out), either is in several units, or the L2
        is unknown or differs between their runs."""
        at = self.group_by.index("Metric")
        if key[at] != placement.WRITE_METRIC or g.other_units:
            return None
        read = self.groups.get(key[:at] + (placement.READ_METRIC,) + key[at + 1:])
        if read is None or read.other_units or not g.l2 > 0 or read.l2 != g.l2:
            return None
        return placement.reason_of_runs(read.values, g.values, g.l2)


_ID_SET = frozenset(ID_COLUMNS)


def _unaveraged(g):
    return unaveraged(g.values, g.other_units | {g.unit})


def unaveraged(values, units):
    """The statistics (stats.summarize's keys) of values in more than one unit: none (NaN),
    n the finite values, and the reason naming the units; numbers in different units are
    not averaged."""
    s = stats.summarize([])
    s["n"] = sum(1 for v in values if stats._is_finite(v))
    shown = ", ".join(repr(u) for u in sorted(units, key=str))
    s["reasons"] = [f"units differ between runs ({shown}): not averaged (group by Unit to "
                    "keep them apart)"]
    return s


def mixed_units(units):
    """Whether unit texts name more than one unit ('ns' and 'nanosecond' are one)."""
    units = list(units)
    return any(not same_unit(units[0], u) for u in units[1:])


def aggregate(rows, group_by=None):
    """One dict per group of long-form rows (by group_by columns plus Metric): the group's
    columns, the config columns that are constant in it, Unit, Launches and AGG_COLUMNS
    (see Aggregator, which does the same over a stream of samples)."""
    agg = Aggregator(group_by)
    for r in rows:
        agg.add_row(r)
    return agg.rows()


def build(records, metrics=None, derivations=(), combine=None, report=None):
    """Samples of the records, combined per range when combine is a functions dict
    (see combine_kernels), with derived metrics added, restricted to the named metrics."""
    ss = samples(records)
    if combine is not None:
        ss = combine_kernels(ss, combine)
    derive(ss, derivations, report=report)
    if metrics:
        for s in ss:
            s["values"] = OrderedDict((k, v) for k, v in s["values"].items() if k in metrics)
    return ss


# ---------------------------------------------------------------------------------------
# Normalisation

def _selector(text):
    """('config', {key: value}) for 'dtype=fp32 ...' words, else ('annotation', text)."""
    from rangeprof.config import parse
    words = text.split()
    parsed = parse(text)
    if words and len(parsed) == len(words):
        return "config", parsed
    return "annotation", text


# Columns a group and its baseline need not share (for key=value words).
_NOT_COMPARED = frozenset(AGG_COLUMNS) | {"Annotation", "Kernel", "Metric", "Unit", "Launches",
                                          "Reasons", "values", "GPU", "Baseline",
                                          "Normalized", "Speedup"}


def normalize(groups, against):
    """Adds Baseline, Normalized (mean / baseline mean) and Speedup (baseline / mean) to each
    aggregated group, the baseline being the group of the same Metric (and GPU) whose
    Annotation is 'against', or, for 'key=value' words, whose config has those values and
    agrees with the group on every other config column. Where several groups qualify,
    the one of the same Kernel is taken; otherwise the values stay NaN (combine the kernels
    of each range with --combine to compare ranges that run different kernels)."""
    kind, want = _selector(against)
    if kind == "annotation":
        pool = [b for b in groups if b.get("Annotation") == want]
    else:
        pool = [b for b in groups if all(b.get(k) == v for k, v in want.items())]
    # The baselines indexed by what a group must share with its own (Metric, GPU and,
    # for key=value words, every other config column it has), once per set of such
    # columns: linear in the groups, where a scan of every group for each was quadratic.
    indexes = {}

    def candidates_of(g):
        """The baselines of g: those of its Kernel where it has several."""
        others = tuple(k for k in g if k not in want and k not in _NOT_COMPARED) \
            if kind == "config" else ()
        try:
            index = indexes.get(others)
            if index is None:
                index = indexes[others] = {}
                for b in pool:
                    key = (b["Metric"], b.get("GPU")) + tuple(b.get(k) for k in others)
                    entry = index.setdefault(key, ([], {}))
                    entry[0].append(b)
                    entry[1].setdefault(b.get("Kernel"), []).append(b)
            entry = index.get((g["Metric"], g.get("GPU")) + tuple(g.get(k) for k in others))
            if entry is None:
                return []
            return entry[0] if len(entry[0]) <= 1 else entry[1].get(g.get("Kernel"), [])
        except TypeError:  # a value that cannot be a key (rows given by hand)
            indexes.pop(others, None)
            matched = [b for b in pool if b["Metric"] == g["Metric"]
                       and b.get("GPU") == g.get("GPU")
                       and all(b.get(k) == g.get(k) for k in others)]
            return matched if len(matched) <= 1 else \
                [b for b in matched if b.get("Kernel") == g.get("Kernel")]

    found = 0
    for g in groups:
        candidates = candidates_of(g)
        base = candidates[0]["AvgValue"] if len(candidates) == 1 else math.nan
        found += len(candidates) == 1
        g["Baseline"] = candidates[0].get("Annotation") if len(candidates) == 1 else None
        g["Normalized"] = g["AvgValue"] / base if base else math.nan
        g["Speedup"] = base / g["AvgValue"] if g["AvgValue"] else math.nan
    if not found:
        raise ExprError(f"--normalize-against '{against}': no group matches it")
    return groups
# ---------------------------------------------------------------------------------------
# A job for rangeprof/scan.py: samples, combined, derived and aggregated as they stream by

class StatsJob:
    """Aggregates the runs of a stream (scan.run calls consume once per piece of the
    input and merges the pieces' jobs in order): samples combined per range execution
    when combine is a functions dict, derived metrics added (Deriver), rows aggregated by
    group_by, restricted to metrics when given. Also keeps the device records (for
    --bound), the kernels per range execution of each annotation (for --bytes) and how
    many runs it read."""

    # Its statistics come from the runs alone: summary lines are not parsed.
    unread = ("summary",)

    def __init__(self, group_by=None, metrics=None, derivations=(), combine=None):
        self.aggregator = Aggregator(group_by, metrics)
        self.deriver = Deriver(derivations)
        self.combine = combine
        self.devices = []
        self.kernels = OrderedDict()
        self.runs = 0

    def _samples(self, stream):
        for kind, obj in stream:
            if kind == "run":
                self.runs += 1
                yield sample(obj)
            elif kind == "device":
                self.devices.append(obj)

    def consume(self, reader, stream):
        if self.combine is None and not self.deriver.derivations:
            # Runs straight to the aggregator, one kernel each: no sample to make.
            add_run, kernels = self.aggregator.add_run, self.kernels
            for kind, obj in stream:
                if kind == "run":
                    self.runs += 1
                    add_run(obj)
                    annotation = obj.record.get("nvtx_path") or ""
                    if annotation not in kernels:
                        kernels[annotation] = 1
                elif kind == "device":
                    self.devices.append(obj)
            return
        ss = self._samples(stream)
        if self.combine is not None:
            ss = iter_combined(ss, self.combine)
        apply, add, kernels = self.deriver.apply, self.aggregator.add, self.kernels
        for s in ss:
            apply(s)
            if s["Annotation"] not in kernels:
                kernels[s["Annotation"]] = s.get("_kernel_count", len(s["kernels"]))
            add(s)

    def merge(self, other):
        self.aggregator.merge(other.aggregator)
        self.deriver.merge(other.deriver)
        self.devices += other.devices
        for k, v in other.kernels.items():
            self.kernels.setdefault(k, v)
        self.runs += other.runs
