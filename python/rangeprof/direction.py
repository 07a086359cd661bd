"""rangeprof/direction.py - which way is better for a metric, from its definition: 'lower'
(time, cycles, bytes, instructions, requests, stalls, misses, bank conflicts), 'higher'
(throughput and % of peak, rates of work per second or per cycle such as IPC, hit rates,
achieved occupancy), or None where the definition does not say (a clock frequency, a
hardware peak, warps launched, a count of hits). rangeprof-compare judges a significant
change of a metric with no direction as 'cannot judge' unless the user names its
direction. Standard library only.

The rules read CUPTI's metric names, which follow one grammar (Nsight Compute's Profiling
Guide, "Metrics Structure"): a counter 'unit__quantity_qualifiers' with a rollup ('.sum',
'.avg', '.min', '.max') and optionally a submetric ('.per_second', '.per_cycle_active',
'.per_cycle_elapsed', '.pct_of_peak_sustained_active', '.peak_sustained', ...); a ratio
'unit__name' with '.ratio', '.pct' or '.max_rate'; a throughput 'unit__throughput' (or
'unit__..._throughput') with '.avg.pct_of_peak_sustained_elapsed'. Then the unit (a time
is lower-is-better) and the description, where one is known ('rangeprof --list-metrics'
gives CUPTI's). TABLE holds what the rules cannot infer."""
import re

from rangeprof.units import parse_unit

HIGHER, LOWER = "higher", "lower"

# Base names (the part before the first '.') whose direction no rule gives. Each entry:
# base -> (direction of its plain counts (.sum, .avg, .min, .max), direction of every
# form, or None where its other forms follow the rules, why).
TABLE = {
    # Set by the launch configuration, not by how well the kernel runs.
    "sm__ctas_launched": (None, None, "CTAs launched: set by the launch configuration"),
    "smsp__warps_launched": (None, None, "warps launched: set by the launch configuration"),
    "smsp__threads_launched": (None, None,
                               "threads launched: set by the launch configuration"),
    # Warp-cycles: more is higher occupancy, or a longer kernel. Its rates (per cycle,
    # % of peak: achieved occupancy) follow the rules: higher.
    "sm__warps_active": (None, None, "warp-cycles: higher occupancy or a longer kernel"),
    "smsp__warps_active": (None, None, "warp-cycles: higher occupancy or a longer kernel"),
    "smsp__warps_eligible": (None, None,
                             "warp-cycles: more eligible warps or a longer kernel"),
    # Cycles in which the scheduler issued nothing (ncu's "No Eligible"): waste in every
    # form, although its name has no waste word.
    "smsp__issue_inst0": (LOWER, LOWER, "cycles with no instruction issued"),
    # Cycles between two instructions of a warp (ncu's "Warp Cycles Per Issued
    # Instruction"): latency, fewer is better.
    "smsp__average_warp_latency_per_inst_issued": (LOWER, LOWER,
                                                   "cycles per issued instruction of a warp"),
    # Threads active per executed warp instruction (at most 32): more is less divergence.
    "smsp__thread_inst_executed_per_inst_executed": (HIGHER, HIGHER,
                                                     "active threads per warp instruction"),
    "smsp__thread_inst_executed_pred_on_per_inst_executed": (
        HIGHER, HIGHER, "predicated-on threads per warp instruction"),
}

# Words in a counter's name that make it waste: fewer is better in every form but a rate
# per second (which rises whenever the kernel gets faster, waste or not).
_WASTE = re.compile(r"(?:^|_)(stall|stalled|stalls|miss|misses|conflict|conflicts|replay|"
                    r"replays|throttle|throttled|excessive|idle|pred_off|spill|spills)(?:_|$)")
# A hit counter: a hit rate (a ratio) is higher-is-better; a count of hits says nothing
# alone (fewer accesses also have fewer hits).
_HIT = re.compile(r"(?:^|_)hit(?:_|$)|hit_rate")
_ROLLUPS = ("sum", "avg", "min", "max")
# Submetrics that are rates of the counter: per unit of time or cycles, or a fraction of
# the peak rate.
_RATES = ("per_second", "per_cycle_active", "per_cycle_elapsed", "per_cycle_in_region",
          "per_cycle_in_frame", "pct_of_peak_sustained_active",
          "pct_of_peak_sustained_elapsed", "pct_of_peak_sustained_region",
          "pct_of_peak_sustained_frame")


def better(metric, unit=None, description=None, overrides=None):
    """(direction, why): direction is 'higher', 'lower' or None (not known from the
    metric's definition); why says which rule decided, in a few words. overrides maps
    metric names to 'higher' or 'lower' and wins over every rule."""
    if overrides and metric in overrides:
        return overrides[metric], "given by the user"
    name = str(metric)
    parts = name.split(".")
    base, rest = parts[0], parts[1:]
    rollup = rest[0] if rest and rest[0] in _ROLLUPS else None
    sub = ".".join(rest[1:] if rollup else rest)
    counter = base.split("__", 1)[1] if "__" in base else base

    if base in TABLE:
        counts, every, why = TABLE[base]
        if every is not None:
            return every, why
        if not sub:
            return counts, why
    if "__" not in base:
        # Not a CUPTI name (a derived metric): its unit alone can tell.
        dims = parse_unit(unit).dims if unit else {}
        if dims.get("s", 0) > 0:
            return LOWER, "a time"
        if dims.get("s", 0) < 0:
            return HIGHER, "a rate (its unit is per time)"
        return None, "not a CUPTI metric name, and its unit does not say"
    if "peak_sustained" in sub and not sub.startswith("pct_of_peak"):
        return None, "a peak of the hardware, not of the kernel"
    if sub == "max_rate":
        return None, "a peak of the hardware, not of the kernel"
    dims = parse_unit(unit).dims if unit else {}
    if dims.get("s", 0) > 0 and sub not in _RATES:
        return LOWER, "a time"
    if "throughput" in counter.split("_") or counter.endswith("throughput"):
        return HIGHER, "a throughput"
    waste = _WASTE.search(counter)
    if sub in _RATES:
        if counter.startswith("cycles") and sub == "per_second":
            return None, "a clock frequency"
        if waste:
            if sub == "per_second":
                return None, "waste per second: rises whenever the kernel gets faster"
            return LOWER, f"a rate of waste ({waste.group(1)})"
        return HIGHER, "a rate of work (per second, per cycle or % of peak)"
    if sub in ("ratio", "pct") or (not rollup and not sub):
        if _HIT.search(counter):
            return HIGHER, "a hit rate"
        if waste:
            return LOWER, f"a ratio of waste ({waste.group(1)})"
        if description:
            text = description.lower()
            if "hit rate" in text:
                return HIGHER, "a hit rate (CUPTI's description)"
            if "stall" in text:
                return LOWER, "stalls (CUPTI's description)"
        return None, "a ratio whose better side its name does not say"
    if rollup and not sub:
        if waste:
            return LOWER, f"waste ({waste.group(1)})"
        if _HIT.search(counter):
            return None, "a count of hits: fewer accesses also hit less"
        return LOWER, "a count of work (time, cycles, bytes, instructions, requests)"
    return None, f"the submetric '{sub}' does not say"
