"""rangeprof/direction.py - which way is better for a metric, from its definition: 'lower'
(time, cycles, bytes, instructions, requests, stalls, misses, bank conflicts), 'higher'
(throughput and % of peak, rates of work per second or per cycle such as IPC, hit rates,
achieved occupancy, bytes used per sector), or None where the definition does not say:
a clock frequency, a capacity of the hardware (a peak_sustained, a device attribute), a
value set by the launch (launch__*, warps launched, registers allocated), a timestamp, a
count of hits. rangeprof-compare judges a significant change of a metric with no
direction as 'cannot judge', with the reason given here, unless the user names its
direction. Standard library only.

The rules read CUPTI's metric names, which follow one grammar (Nsight Compute's Profiling
Guide, "Metrics Structure"): a counter 'unit__quantity_qualifiers' with a rollup ('.sum',
'.avg', '.min', '.max') and optionally a submetric ('.per_second', '.per_cycle_active',
'.per_cycle_elapsed', '.pct_of_peak_sustained_active', '.peak_sustained', ...); a ratio
'unit__name' with '.ratio', '.pct' or '.max_rate'; a throughput 'unit__throughput' (or
'unit__..._throughput') with '.avg.pct_of_peak_sustained_elapsed'. A name may follow a
metric group's alias ('SM_C.TriageCompute.smsp__warps_issue_stalled_long_scoreboard.sum'
is that counter as the TriageCompute group collects it): the rules read the name after
the alias. Then the unit (a time is lower-is-better) and, where the name does not say,
the words that CUPTI's descriptions use ('rangeprof --list-metrics' prints them): the
rules were written from the H200's list (tests/fixtures/recorded/list-metrics.txt) so
that the name alone gives the answer, since compare has only names and units. TABLE holds
what no rule can infer."""
import re

from rangeprof.units import parse_unit

HIGHER, LOWER = "higher", "lower"

# Base names (the CUPTI name before its rollup) whose direction no rule gives. Each entry:
# base -> (direction of its plain counts (.sum, .avg, .min, .max) or of the ratio,
# direction of every form, or None where its other forms follow the rules, why).
TABLE = {
    # Cycles in which the scheduler issued nothing (ncu's "No Eligible"): waste in every
    # form, although its name has no waste word.
    "smsp__issue_inst0": (LOWER, LOWER, "cycles with no instruction issued"),
    # Cycles between two instructions of a warp (ncu's "Warp Cycles Per Issued
    # Instruction", "... Per Executed Instruction"): latency, fewer is better.
    "smsp__average_warp_latency_per_inst_issued": (LOWER, LOWER,
                                                   "cycles per issued instruction of a warp"),
    "smsp__average_warp_latency_per_inst_executed": (
        LOWER, LOWER, "cycles per executed instruction of a warp"),
    "smsp__average_warps_active_per_inst_executed": (
        LOWER, LOWER, "cycles each warp was resident per executed instruction"),
    # Warps resident per issue cycle: more warps to pick from, or more of them waiting.
    "smsp__average_warps_active_per_issue_active": (
        None, None, "warps resident per issue cycle: more choice or more waiting"),
    # Warp instructions issued per cycle that issued one: IPC of the issuing cycles.
    "smsp__inst_issued_per_issue_active": (HIGHER, HIGHER,
                                           "instructions per issue cycle"),
    # Threads active per executed warp instruction (at most 32): more is less divergence.
    "smsp__thread_inst_executed_per_inst_executed": (HIGHER, HIGHER,
                                                     "active threads per warp instruction"),
    "smsp__thread_inst_executed_pred_on_per_inst_executed": (
        HIGHER, HIGHER, "predicated-on threads per warp instruction"),
    # The CUDA-graph/driver dispatches of the workload: one per grid, not the kernel's.
    "gr__dispatch_count": (None, None, "grids dispatched: set by the workload"),
}

# Prefixes of names that are not counters of the kernel's work: every form has no
# better side.
_NOT_MEASURED = (
    ("launch__", "set by the launch and the compiler, not measured: not a performance "
                 "metric"),
    ("device__attribute", "a device attribute: a constant of the GPU, not a performance "
                          "metric"),
)

# Words in a counter's name that make it waste: fewer is better in every form but a rate
# per second (which rises whenever the kernel gets faster, waste or not).
_WASTE = re.compile(r"(?:^|_)(stall|stalled|stalls|miss|misses|conflict|conflicts|replay|"
                    r"replays|replayed|throttle|throttled|excessive|idle|inactive|pred_off|"
                    r"spill|spills|divergent|unavailable|coalescing_none)(?:_|$)")
# Stall reasons that are no waste: 'selected' is the warp issuing (one cycle per
# instruction), 'not_selected' an eligible warp another one beat to the issue slot, which
# ncu reads as enough warps, not as a problem.
_ISSUE = re.compile(r"(?:^|_)(not_selected|selected)(?:_|$)")
# A hit counter: a hit rate (a ratio) is higher-is-better; a count of hits says nothing
# alone (fewer accesses also have fewer hits).
_HIT = re.compile(r"(?:^|_)hit(?:_|$)|hit_rate")
# Branches without divergence: their share is higher-is-better, their count says nothing
# alone (as hits).
_UNIFORM = re.compile(r"(?:^|_)threads_uniform(?:_|$)")
# Counters set by the launch: warps, CTAs, clusters launched or completed (and preemption
# restores, which the driver does): more or fewer of them is the workload, not its speed.
_LAUNCHED = re.compile(r"(?:^|_)(?:warps|ctas|cgas|threads)_(?:launched|completed|restored)"
                       r"(?:_|$)")
# Things in flight, summed over cycles (warp-cycles): a higher count is more occupancy or
# a longer kernel; per cycle it is occupancy, higher is better.
_IN_FLIGHT = re.compile(r"(?:^|_)(?:warps|ctas|cgas)_(?:active|eligible)(?:_|$)")
# Resources allocated or configured, and limits: set by the launch, the compiler or the
# carveout, in every form.
_RESOURCE = re.compile(r"(?:^|_)(?:allocated|configured|maximum|registers|sharedmem|"
                       r"inst_pending)(?:_|$)")
# The clock itself: elapsed cycles are a duration in cycles; any rate of them is the
# clock (per second: its frequency; per cycle or % of peak: 1 or 100 %).
_CLOCK = re.compile(r"(?:^|_)cycles_(?:elapsed|in_region|in_frame)(?:_|$)")
# Timestamps: when the kernel started or ended, not how long it ran.
_TIMESTAMP = re.compile(r"(?:^|_)time_(?:start|end)(?:_|$)")
# Ratios whose name says which way is better, first match wins: (pattern, direction, why).
_RATIO_RULES = (
    (re.compile(r"hit_rate"), HIGHER, "a hit rate"),
    (re.compile(r"(?:compression|success)(?:_achieved)?_rate|coalescing_achieved|"
                r"xbar2gpc_sectors_op_read$"), HIGHER,
     "a compression or coalescing rate achieved"),
    (re.compile(r"bytes_per_(?:sector|wavefront)"), HIGHER,
     "bytes used per sector or wavefront: the share of each access that is used"),
    (_UNIFORM, HIGHER, "branches without divergence"),
    (re.compile(r"thread_inst_executed(?:_pred_on)?_per_inst_executed"), HIGHER,
     "active threads per warp instruction"),
    (re.compile(r"inst_latency"), LOWER, "cycles from issue to retirement"),
    (re.compile(r"inst_executed(?:_pipe_\w+)?_per_warp$"), LOWER,
     "instructions per warp: the work of each warp"),
    (re.compile(r"sectors_per_request"), None,
     "sectors per request: rises with wider accesses as well as with uncoalesced ones"),
    (re.compile(r"(?:aperture|srcnode|srcunit)"), None,
     "a share of the traffic by source or target: a mix, not a speed"),
    (re.compile(r"threads_launched_per_warp"), None, "set by the launch configuration"),
    (re.compile(r"(?:warp|cta)_latency(?:_shader_cs)?(?:_realtime)?$"), None,
     "a warp's or CTA's duration: follows the work given to each"),
    (re.compile(r"data_valid"), HIGHER, "the share of bytes read that were used"),
)
_ROLLUPS = ("sum", "avg", "min", "max")
# Submetrics that are rates of the counter: per unit of time or cycles, or a fraction of
# the peak rate.
_RATES = ("per_second", "per_cycle_active", "per_cycle_elapsed", "per_cycle_in_region",
          "per_cycle_in_frame", "pct_of_peak_sustained_active",
          "pct_of_peak_sustained_elapsed", "pct_of_peak_sustained_region",
          "pct_of_peak_sustained_frame")
_CAPACITY = ("a capacity of the hardware (ncu's peak_sustained: the most the unit can do "
             "per cycle, or over the cycles), not what the kernel did: not a performance "
             "metric")


def split(metric):
    """(base, rollup, submetric) of a CUPTI metric name: 'smsp__inst_executed',
    'sum', 'per_second' for 'smsp__inst_executed.sum.per_second'; a group's alias before
    the name ('SM_C.TriageCompute.') is dropped. rollup and submetric are '' where the
    name has none; base is None where no part of the name is a CUPTI name (no '__')."""
    parts = str(metric).split(".")
    for i, part in enumerate(parts):
        if "__" in part:
            rest = parts[i + 1:]
            rollup = rest[0] if rest and rest[0] in _ROLLUPS else ""
            return part, rollup, ".".join(rest[1:] if rollup else rest)
    return None, "", ""


def better(metric, unit=None, description=None, overrides=None):
    """(direction, why): direction is 'higher', 'lower' or None (not known from the
    metric's definition, or not a performance metric); why says which rule decided, in a
    few words. overrides maps metric names to 'higher' or 'lower' and wins over every
    rule. Never raises for a string metric, whatever its unit or description."""
    if overrides and metric in overrides:
        return overrides[metric], "given by the user"
    base, rollup, sub = split(metric)
    dims = _dims(unit)
    if base is None:
        # Not a CUPTI name (a derived metric): its unit alone can tell.
        if dims.get("s", 0) > 0:
            return LOWER, "a time"
        if dims.get("s", 0) < 0:
            return HIGHER, "a rate (its unit is per time)"
        return None, "not a CUPTI metric name, and its unit does not say"
    for prefix, why in _NOT_MEASURED:
        if base.startswith(prefix):
            return None, why
    # Before the table: a capacity is no performance metric whatever its counter is.
    if ("peak_sustained" in sub and "pct_of_peak" not in sub) or sub == "max_rate":
        return None, _CAPACITY
    counter = base.split("__", 1)[1]
    ratio = sub in ("ratio", "pct") or (not rollup and not sub)
    counts = rollup and not sub
    if base in TABLE:
        plain, every, why = TABLE[base]
        if every is not None or ratio or counts:
            return (every if every is not None else plain), why
    if _TIMESTAMP.search(counter):
        return None, "a timestamp, not a duration"
    if dims.get("s", 0) > 0:
        if counts or ratio:
            return LOWER, "a time"
        return None, "a time per second or per cycle: no better side"
    if "throughput" in counter.split("_") or counter.endswith("throughput"):
        return HIGHER, "a throughput"
    if _RESOURCE.search(counter):
        return None, "a resource allocated or a limit: set by the launch, the compiler " \
                     "or the hardware"
    if _CLOCK.search(counter):
        if counts:
            return LOWER, "a duration in cycles"
        return None, "a rate of the clock itself: its frequency, or 1 per cycle"
    issue = _ISSUE.search(counter)
    waste = None if issue else _WASTE.search(counter)
    if sub in _RATES:
        if sub == "per_second" and (counter.startswith("cycles") or dims == {"cycle": 1}):
            return None, "cycles per second: a clock frequency (times the share of " \
                         "time active)"
        if issue:
            return None, f"issue slots ('{issue.group(1)}'): not a stall that wastes time"
        if waste:
            if sub == "per_second":
                return None, "waste per second: rises whenever the kernel gets faster"
            return LOWER, f"a rate of waste ({waste.group(1)})"
        return HIGHER, "a rate of work (per second, per cycle or % of peak)"
    if counts:
        if _LAUNCHED.search(counter):
            return None, "launched or completed: set by the launch configuration"
        if _IN_FLIGHT.search(counter):
            return None, "in flight, summed over cycles: higher occupancy or a longer kernel"
        if issue and issue.group(1) == "not_selected":
            return None, "eligible warps another one beat to the issue slot: ncu reads " \
                         "many as enough warps, not as waste"
        if waste:
            return LOWER, f"waste ({waste.group(1)})"
        if _HIT.search(counter):
            return None, "a count of hits: fewer accesses also hit less"
        if _UNIFORM.search(counter):
            return None, "a count of uniform branches: fewer branches also have fewer"
        return LOWER, "a count of work (time, cycles, bytes, instructions, requests)"
    if ratio:
        if issue:
            return None, f"issue slots ('{issue.group(1)}'): not a stall that wastes time"
        for pattern, direction, why in _RATIO_RULES:
            if pattern.search(counter):
                return direction, why
        if waste:
            return LOWER, f"a ratio of waste ({waste.group(1)})"
        if _HIT.search(counter):
            return HIGHER, "a hit rate"
        if description:
            text = str(description).lower()
            if "hit rate" in text or "that hit" in text:
                return HIGHER, "a hit rate (CUPTI's description)"
            if "stall" in text:
                return LOWER, "stalls (CUPTI's description)"
        return None, "a ratio whose better side its name does not say"
    return None, f"the submetric '{sub}' does not say"


def _dims(unit):
    """The dimensions of a unit string; none where it is missing or not one."""
    if not unit or not isinstance(unit, str):
        return {}
    try:
        return parse_unit(unit).dims
    except ValueError:
        return {}
