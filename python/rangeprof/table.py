"""rangeprof/table.py - from run records to tables, on the standard library alone: one
sample per measured run (its metrics, units, clocks, configuration), kernels of one range
combined into one sample per run, derived metrics added per run, samples flattened into
Nsight Python's long form, grouped and aggregated with SPEC.md section 5 statistics, and
normalised against a baseline. The report, compare and plot tools are built on these."""
import math
from collections import OrderedDict

from rangeprof import stats
from rangeprof.expr import ExprError
from rangeprof.units import DIMENSIONLESS, parse_unit

# Identity and context columns of a long-form row, in the order tables show them. Config
# columns (from key=value words) go after Annotation.
ID_COLUMNS = ["Annotation", "Kernel", "Metric", "Value", "Unit", "Run", "Runs", "Launch",
              "Workload", "Graph", "GraphNode", "Session", "Process", "Host", "GPU", "Device", "Grid", "Block",
              "SharedMemBytes", "Passes", "CacheControl", "ClockControl", "SMClock",
              "ComputeClock", "MemoryClock", "Temperature", "ThrottleReasons", "Time", "File",
              "Line"]
# Nsight Python's aggregate columns, plus the median and why a group is not stable.
AGG_COLUMNS = ["NumRuns", "AvgValue", "StdDev", "MinValue", "MedianValue", "MaxValue",
               "CI95_Lower", "CI95_Upper", "RelativeStdDevPct", "StableMeasurement"]
_FROM_SUMMARY = dict(NumRuns="n", AvgValue="mean", StdDev="stddev", MinValue="min",
                     MedianValue="median", MaxValue="max", CI95_Lower="ci95_low",
                     CI95_Upper="ci95_high", RelativeStdDevPct="rsd_pct", StableMeasurement="stable")
DEFAULT_GROUP_BY = ["Annotation", "Kernel", "Metric"]


def _dims(v):
    return ",".join(str(x) for x in v) if isinstance(v, list) else ""


def samples(records):
    """One dict per measured run: identity fields, 'config' and 'values' {metric: (value,
    Unit)}, in file order."""
    out = []
    for run in records.runs:
        rec, dev = run.record, run.device
        units = rec.get("units") or {}
        values = OrderedDict()
        for name, value in rec["metrics"].items():
            values[name] = (math.nan if value is None else float(value),
                            parse_unit(units.get(name, "")), units.get(name, ""))
        out.append(dict(
            Annotation=rec.get("nvtx_path", ""), Kernel=rec.get("kernel", ""),
            Workload=rec.get("workload", "kernel"),
            Graph=(rec.get("graph") or {}).get("id"), GraphNode=(rec.get("graph") or {}).get("node"),
            Run=rec.get("run"), Runs=rec.get("runs"), Launch=run.launch_id,
            Session=run.session_id, Process=run.session.get("pid"),
            Host=run.session.get("host"), GPU=dev.get("name"), Device=rec.get("device"),
            Grid=_dims(rec.get("grid")), Block=_dims(rec.get("block")),
            SharedMemBytes=rec.get("shared_mem_bytes"), Passes=rec.get("passes"),
            CacheControl=rec.get("cache_control"), ClockControl=rec.get("clock_control"),
            SMClock=_num(rec.get("sm_clock_hz")), ComputeClock=_num(rec.get("rated_sm_clock_hz")),
            MemoryClock=_num(dev.get("rated_memory_clock_hz")),
            Temperature=_num(rec.get("temperature_c")),
            ThrottleReasons=_reasons(rec.get("throttle_reasons")), Time=rec.get("time"),
            File=run.path, Line=run.line, config=dict(run.config), values=values,
            kernels=[(rec.get("kernel", ""), _dims(rec.get("grid")), _dims(rec.get("block")))]))
    return out


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


def range_instances(samples_list):
    """Groups the samples' launches into executions of one NVTX range: consecutive launches
    of one session with the same NVTX path, until a kernel (name, grid, block) comes back,
    which starts the next execution. The records carry no range-instance id, so a range
    that launches the same kernel twice in a row counts as two executions."""
    launches = OrderedDict()
    for s in samples_list:
        launches.setdefault(s["Launch"], []).append(s)
    instances, current, seen = [], [], set()
    for runs in launches.values():
        first = runs[0]
        key = first["kernels"][0]
        if current and (first["Session"] != current[0][0]["Session"]
                        or first["Annotation"] != current[0][0]["Annotation"] or key in seen):
            instances.append(current)
            current, seen = [], set()
        current.append(runs)
        seen.add(key)
    if current:
        instances.append(current)
    return instances


def combine_kernels(samples_list, functions=None):
    """One sample per run of each range execution, each metric combined over the range's
    kernels: functions maps a metric to a name in COMBINE_FUNCTIONS or a callable on a list
    of values; '*' sets the default (otherwise default_combine). Kernel becomes the
    kernels' names joined by ' + '."""
    functions = functions or {}
    out = []
    for instance in range_instances(samples_list):
        runs = min(len(r) for r in instance)
        for i in range(runs):
            parts = [r[i] for r in instance]
            first = dict(parts[0])
            first["Kernel"] = " + ".join(p["Kernel"] for p in parts)
            first["kernels"] = [k for p in parts for k in p["kernels"]]
            first["Launch"] = " + ".join(str(p["Launch"]) for p in parts) if len(parts) > 1 else first["Launch"]
            clocks = [p["SMClock"] for p in parts if not math.isnan(p["SMClock"])]
            first["SMClock"] = math.fsum(clocks) / len(clocks) if clocks else math.nan
            first["Temperature"] = max((p["Temperature"] for p in parts), default=math.nan)
            known = [stats.throttle_names(p["ThrottleReasons"]) for p in parts]
            known = [k for k in known if k is not None]
            first["ThrottleReasons"] = (",".join(r for r in stats.THROTTLE_REASONS
                                                 if any(r in k for k in known))
                                        if known else None)
            first["Passes"] = sum(p["Passes"] or 0 for p in parts)
            first["Grid"] = " + ".join(p["Grid"] for p in parts)
            first["Block"] = " + ".join(p["Block"] for p in parts)
            values = OrderedDict()
            for metric in parts[0]["values"]:
                if not all(metric in p["values"] for p in parts):
                    continue
                unit, unit_text = parts[0]["values"][metric][1:]
                fn = functions.get(metric, functions.get("*", default_combine(unit)))
                fn = COMBINE_FUNCTIONS[fn] if isinstance(fn, str) else fn
                values[metric] = (fn([p["values"][metric][0] for p in parts]), unit, unit_text)
            first["values"] = values
            out.append(first)
    return out


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

def derive(samples_list, derivations, report=None):
    """Adds each Derivation as a metric of every sample that has its inputs (metrics of the
    sample or config columns). A sample missing an input gets no value, said once per
    derivation on report."""
    missing_said = set()
    for s in samples_list:
        for d in derivations:
            env = {}
            for name in d.inputs:
                if name in s["values"]:
                    env[name] = s["values"][name][:2]
                elif name in s["config"] and isinstance(s["config"][name], (int, float)):
                    env[name] = (float(s["config"][name]), DIMENSIONLESS)
                elif name in s and isinstance(s[name], (int, float)):
                    env[name] = (float(s[name]), parse_unit(_FIELD_UNITS.get(name, "")))
            absent = d.inputs - set(env)
            if absent:
                if report is not None and d.name not in missing_said:
                    missing_said.add(d.name)
                    print(f"rangeprof: warning: --derive {d.name}: no numeric "
                          f"{', '.join(sorted(absent))} in some runs (e.g. "
                          f"'{s['Annotation']}'); those runs get no {d.name}", file=report)
                continue
            value, unit_text = d.evaluate(env)
            s["values"][d.name] = (value, parse_unit(unit_text), unit_text)
    return samples_list


_FIELD_UNITS = {"SMClock": "hz", "ComputeClock": "hz", "MemoryClock": "hz", "Temperature": "C"}


# ---------------------------------------------------------------------------------------
# Long form and aggregation

def long_rows(samples_list):
    """Nsight Python's long form: one row per sample and metric, config columns included."""
    rows = []
    for s in samples_list:
        base = {k: v for k, v in s.items() if k not in ("config", "values", "kernels")}
        for metric, (value, _unit, unit_text) in s["values"].items():
            row = dict(base)
            row.update(s["config"])
            row.update(Metric=metric, Value=value, Unit=unit_text)
            rows.append(row)
    return rows


def config_columns(rows):
    """Config column names in first-seen order."""
    names = OrderedDict()
    known = set(ID_COLUMNS)
    for r in rows:
        for k in r:
            if k not in known:
                names[k] = None
    return list(names)


def aggregate(rows, group_by=None):
    """One dict per group of rows (by group_by columns plus Metric): the group's columns,
    the config columns that are constant in it, Unit, Launches and AGG_COLUMNS."""
    group_by = list(group_by or DEFAULT_GROUP_BY)
    if "Metric" not in group_by:
        group_by.append("Metric")
    groups = OrderedDict()
    for r in rows:
        groups.setdefault(tuple(r.get(k) for k in group_by), []).append(r)
    configs = config_columns(rows)
    out = []
    for key, members in groups.items():
        # Drift per launch (in Run order), as the summary records judge it: a group pools
        # launches, and a step between steady launches is no drift of any of them.
        s = stats.summarize([m["Value"] for m in members], [m["SMClock"] for m in members],
                            [m.get("ThrottleReasons") for m in members],
                            launches=[m.get("Launch") for m in members],
                            runs=[m.get("Run") for m in members])
        row = OrderedDict(zip(group_by, key))
        for c in configs:
            vals = {repr(m.get(c)) for m in members}
            if c not in row and len(vals) == 1:
                row[c] = members[0].get(c)
        row["Unit"] = members[0]["Unit"]
        row["Launches"] = len({m["Launch"] for m in members})
        for col, field in _FROM_SUMMARY.items():
            row[col] = s[field]
        row["Reasons"] = "; ".join(s["reasons"])
        row["values"] = [m["Value"] for m in members]
        out.append(row)
    return out


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


def normalize(groups, against):
    """Adds Baseline, Normalized (mean / baseline mean) and Speedup (baseline / mean) to each
    aggregated group, the baseline being the group of the same Metric (and GPU) whose
    Annotation is 'against', or, for 'key=value' words, whose config has those values and
    agrees with the group on every other config column. Where several groups qualify,
    the one of the same Kernel is taken; otherwise the values stay NaN (combine the kernels
    of each range with --combine to compare ranges that run different kernels)."""
    kind, want = _selector(against)
    found = 0
    for g in groups:
        candidates = []
        for b in groups:
            if b["Metric"] != g["Metric"] or b.get("GPU") != g.get("GPU"):
                continue
            if kind == "annotation":
                ok = b.get("Annotation") == want
            else:
                ok = all(b.get(k) == v for k, v in want.items())
                others = [k for k in g if k not in want and k not in AGG_COLUMNS
                          and k not in ("Annotation", "Kernel", "Metric", "Unit", "Launches",
                                        "Reasons", "values", "GPU")]
                ok = ok and all(b.get(k) == g.get(k) for k in others)
            if ok:
                candidates.append(b)
        if len(candidates) > 1:
            candidates = [b for b in candidates if b.get("Kernel") == g.get("Kernel")]
        base = candidates[0]["AvgValue"] if len(candidates) == 1 else math.nan
        found += len(candidates) == 1
        g["Baseline"] = candidates[0].get("Annotation") if len(candidates) == 1 else None
        g["Normalized"] = g["AvgValue"] / base if base else math.nan
        g["Speedup"] = base / g["AvgValue"] if g["AvgValue"] else math.nan
    if not found:
        raise ExprError(f"--normalize-against '{against}': no group matches it")
    return groups
