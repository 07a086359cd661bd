"""Which way is better for a metric (rangeprof/direction.py), from its CUPTI name, unit and
description: on the metrics of Nsight Compute's own sections (named with the section's
label), on every metric of the recorded files, on every metric the H200 lists
(fixtures/recorded/list-metrics.txt, `rangeprof --list-metrics` on the H200) in every
rollup and submetric, family by family, and as rangeprof-compare's verdict."""
import io
import json
import re
from pathlib import Path

import pytest

from rangeprof import compare
from rangeprof.direction import HIGHER, LOWER, TABLE, better, split
from rangeprof.units import parse_unit

FIXTURES = Path(__file__).parent / "fixtures"
LIST = FIXTURES / "recorded" / "list-metrics.txt"

# Metrics of Nsight Compute's sections, by the label ncu shows, and which way is better
# for each as ncu's guidance reads it.
SECTIONS = [
    ("gpu__time_duration.sum", "nanosecond", LOWER),                         # Duration
    ("gpc__cycles_elapsed.max", "cycle", LOWER),                             # Elapsed Cycles
    ("sm__cycles_active.avg", "cycle", LOWER),                               # SM Active Cycles
    ("gpc__cycles_elapsed.avg.per_second", "cycle/second", None),            # SM Frequency
    ("dram__cycles_elapsed.avg.per_second", "cycle/second", None),           # DRAM Frequency
    ("sm__throughput.avg.pct_of_peak_sustained_elapsed", "%", HIGHER),       # Compute (SM) Throughput
    ("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", "%", HIGHER),  # Memory Throughput
    ("l1tex__throughput.avg.pct_of_peak_sustained_active", "%", HIGHER),     # L1/TEX Cache Throughput
    ("lts__throughput.avg.pct_of_peak_sustained_elapsed", "%", HIGHER),      # L2 Cache Throughput
    ("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", "%", HIGHER),  # DRAM Throughput
    ("dram__bytes.sum.per_second", "byte/second", HIGHER),                   # Memory Throughput (bytes/s)
    ("lts__t_sector_hit_rate.pct", "%", HIGHER),                             # L2 Hit Rate
    ("l1tex__t_sector_hit_rate.pct", "%", HIGHER),                           # L1/TEX Hit Rate
    ("sm__warps_active.avg.pct_of_peak_sustained_active", "%", HIGHER),      # Achieved Occupancy
    ("sm__warps_active.avg.per_cycle_active", "warp", HIGHER),               # Achieved Active Warps Per SM
    ("smsp__inst_executed.avg.per_cycle_active", "inst/cycle", HIGHER),      # Executed Ipc Active
    ("sm__inst_executed.avg.per_cycle_elapsed", "inst/cycle", HIGHER),       # Executed Ipc Elapsed
    ("smsp__issue_active.avg.per_cycle_active", "", HIGHER),                 # Issued Warp Per Scheduler
    ("smsp__issue_inst0.avg.pct_of_peak_sustained_active", "%", LOWER),      # No Eligible
    ("smsp__warps_active.avg.per_cycle_active", "warp", HIGHER),             # Active Warps Per Scheduler
    ("smsp__warps_eligible.avg.per_cycle_active", "warp", HIGHER),           # Eligible Warps Per Scheduler
    ("smsp__average_warp_latency_per_inst_issued.ratio", "", LOWER),         # Warp Cycles Per Issued Instruction
    ("smsp__thread_inst_executed_per_inst_executed.ratio", "", HIGHER),      # Avg. Active Threads Per Warp
    ("smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio", "", LOWER),  # Stall Long Scoreboard
    ("smsp__warp_issue_stalled_barrier_per_warp_active.pct", "%", LOWER),     # stall reason share
    ("smsp__inst_executed.sum", "inst", LOWER),                              # Executed Instructions
    ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum", "", LOWER),       # Shared Memory bank conflicts
    ("lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum", "sector", LOWER),  # L2 misses from L1
    ("lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum.per_second", "sector/second", None),
    ("lts__t_sectors_lookup_hit.sum", "sector", None),                       # hits: fewer accesses, fewer hits
    ("sm__ctas_launched.sum", "block", None),                                # set by the launch
    ("dram__bytes.sum.peak_sustained", "byte/cycle", None),                  # a peak of the hardware
]


@pytest.mark.parametrize("metric,unit,expected", SECTIONS, ids=[m for m, _, _ in SECTIONS])
def test_nsight_compute_section_metrics_are_judged_as_ncu_reads_them(metric, unit, expected):
    direction, why = better(metric, unit)
    assert direction == expected, why
    assert why


def _recorded_metrics():
    """(metric, unit) of every run metric in the recorded files."""
    seen = {}
    for path in sorted(FIXTURES.glob("recorded*/*.jsonl")):
        for line in path.open():
            if '"type":"run"' in line:
                rec = json.loads(line)
                for m in rec["metrics"]:
                    seen.setdefault(m, (rec.get("units") or {}).get(m, ""))
    return seen


def test_every_metric_of_the_recorded_files_has_its_direction():
    got = {m: better(m, u)[0] for m, u in _recorded_metrics().items()}
    assert got == {
        "gpu__time_duration.sum": LOWER, "dram__bytes_read.sum": LOWER,
        "dram__bytes_write.sum": LOWER,
        "sm__sass_thread_inst_executed_op_ffma_pred_on.sum": LOWER,
        "sm__sass_thread_inst_executed_op_hfma_pred_on.sum": LOWER,
        "sm__inst_executed_pipe_tensor.sum": LOWER,
        "sm__throughput.avg.pct_of_peak_sustained_elapsed": HIGHER,
        "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": HIGHER,
        "dram__throughput.avg.pct_of_peak_sustained_elapsed": HIGHER,
        "sm__cycles_elapsed.avg.per_second": None, "dram__cycles_elapsed.avg.per_second": None,
        "smsp__inst_executed.sum": LOWER, "sm__cycles_active.max": LOWER,
        "gpc__cycles_elapsed.max": LOWER}


def test_the_users_word_wins_and_derived_metrics_go_by_their_unit():
    assert better("sm__ctas_launched.sum", overrides={"sm__ctas_launched.sum": LOWER}) == \
        (LOWER, "given by the user")
    assert better("tflops", "T/second")[0] == HIGHER
    assert better("latency", "usecond")[0] == LOWER
    assert better("ratio_of_things", "")[0] is None


# ---------------------------------------------------------------------------------------
# Family by family: a metric of each kind, as the H200 lists it (its unit from the list),
# and which way is better for it, with the reason. Each row marked 'old' was answered
# wrongly before the TriageCompute aliases, capacities, timestamps, clocks and the ratio
# rules were read (the row's comment says what it got).

FAMILIES = [
    # time: a duration is lower-is-better; a timestamp and a time per time are neither.
    ("gpu__time_duration.sum", "nanosecond", LOWER, "a time"),
    ("gpu__time_active.max", "nanosecond", LOWER, "a time"),
    ("gpu__time_start.sum", "nanosecond", None, "timestamp"),              # old: lower
    ("gpu__time_end.max", "nanosecond", None, "timestamp"),                # old: lower
    ("gpu__time_duration.sum.per_second", "nanosecond", None, "a time per"),  # old: higher
    ("gpu__time_duration.sum.peak_sustained", "nanosecond", None, "capacity"),
    # cycles: elapsed cycles are a duration, their rates the clock; active cycles per
    # elapsed cycle are utilisation.
    ("gpc__cycles_elapsed.max", "gpc_cycle", LOWER, "duration in cycles"),
    ("sm__cycles_elapsed.avg.per_cycle_elapsed", "gpc_cycle", None, "clock"),  # old: higher
    ("dram__cycles_elapsed.avg.pct_of_peak_sustained_elapsed", "dram_cycle", None,
     "clock"),                                                             # old: higher
    ("FBSP.TriageCompute.dramc__cycles_elapsed.avg.per_second", "dram_cycle", None,
     "clock"),
    ("sm__cycles_active.avg.per_cycle_elapsed", "gpc_cycle", HIGHER, "rate of work"),
    ("l1tex__lsu_writeback_active.sum.per_second", "gpc_cycle", None,
     "clock frequency"),                                                   # old: higher
    # bytes: moved bytes are work, their rate a bandwidth; bytes used per sector or per
    # wavefront are efficiency.
    ("dram__bytes_read.sum", "byte", LOWER, "count of work"),
    ("dram__bytes_read.sum.per_second", "byte", HIGHER, "rate of work"),
    ("CTC.TriageCompute.ctc__rx_bytes.sum", "byte", LOWER, "count of work"),  # old: None
    ("smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct", "byte/l2_sector",
     HIGHER, "bytes used per sector"),                                     # old: None
    ("smsp__sass_average_data_bytes_per_wavefront_mem_shared.ratio", "byte/l1tex_wavefront",
     HIGHER, "bytes used per sector or wavefront"),                        # old: None
    ("tpc__l1tex_mem_shared_data_compute_bytes_allocated_realtime.sum", "bytegpc_cycle",
     None, "allocated"),                                                   # old: lower
    # throughput, also a group's alias of it.
    ("dram__throughput.avg.pct_of_peak_sustained_elapsed", "percent", HIGHER, "throughput"),
    ("TriageCompute.sm__throughput.avg.pct_of_peak_sustained_elapsed", "percent", HIGHER,
     "throughput"),                                                        # old: None
    ("LTS.TriageCompute.lts__t_sector_throughput_srcunit_tex.avg."
     "pct_of_peak_sustained_elapsed", "percent", HIGHER, "throughput"),    # old: None
    # hit rates; a count of hits says nothing alone; a miss covered by a pending miss is
    # still a miss.
    ("lts__t_sector_hit_rate.pct", "lts", HIGHER, "hit rate"),
    ("sm__icc_request_hit_rate.ratio", "sm", HIGHER, "hit rate"),
    ("LTS.TriageCompute.lts__average_t_sector_hit_rate_realtime.pct", "lts", HIGHER,
     "hit rate"),                                                          # old: None
    ("lts__t_sectors_lookup_hit.sum", "l2_sector", None, "count of hits"),
    ("idc__requests_lookup_miss_tag_hit.sum", "idc_request", LOWER, "miss"),
    ("lts__average_t_sector_aperture_device.pct", "lts", None, "share of the traffic"),
    # occupancy: warps, CTAs and CGAs in flight; summed over cycles they are also the
    # kernel's length, per cycle (or % of peak) they are occupancy.
    ("sm__warps_active.avg.pct_of_peak_sustained_active", "gpc_cyclewarp", HIGHER,
     "rate of work"),
    ("tpc__warps_active_realtime.sum", "gpc_cyclewarp", None, "in flight"),  # old: lower
    ("sm__ctas_active.sum", "ctagpc_cycle", None, "in flight"),             # old: lower
    ("GPC_B.TriageCompute.gpc__cgas_active_realtime.avg.per_cycle_active", "cgagpc_cycle",
     HIGHER, "rate of work"),                                              # old: None
    ("tpc__warps_inactive_sm_active_realtime.avg.per_cycle_active", "gpc_cyclewarp", LOWER,
     "waste (inactive)"),                                                  # old: higher
    ("tpc__average_registers_per_thread_shader_cs_realtime.ratio", "register/thread", None,
     "allocated"),
    # IPC and issue.
    ("smsp__inst_executed.avg.per_cycle_active", "instruction", HIGHER, "rate of work"),
    ("sm__inst_executed.avg.per_cycle_elapsed", "instruction", HIGHER, "rate of work"),
    ("smsp__inst_issued_per_issue_active.ratio", "instruction/gpc_cycle", HIGHER,
     "per issue cycle"),                                                   # old: None
    ("smsp__issue_inst0.avg.pct_of_peak_sustained_active", "gpc_cycle", LOWER,
     "no instruction issued"),
    ("smsp__average_warp_latency_per_inst_executed.ratio", "gpc_cycle", LOWER,
     "per executed instruction"),                                          # old: None
    ("smsp__average_warp_latency.ratio", "gpc_cycle", None, "duration"),
    # stalls: waste in every form but per second; 'selected' is issuing, 'not selected'
    # is ncu's sign of enough warps.
    ("smsp__warps_issue_stalled_long_scoreboard.sum", "gpc_cyclewarp", LOWER, "stalled"),
    ("SM_C.TriageCompute.smsp__warps_issue_stalled_long_scoreboard.avg", "gpc_cyclewarp",
     LOWER, "stalled"),                                                    # old: None
    ("smsp__average_warp_latency_issue_stalled_barrier.ratio", "gpc_cycleinstruction/warp",
     LOWER, "stalled"),
    ("smsp__warps_issue_stalled_wait.sum.per_second", "gpc_cyclewarp", None, "per second"),
    ("smsp__warp_issue_stalled_selected_per_warp_active.pct", "smsp", None,
     "issue slots"),                                                       # old: lower
    ("smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio", "instruction",
     None, "issue slots"),                                                 # old: lower
    ("tpc__warp_launch_cycles_stalled_shader_cs_reason_cta_allocation.sum", "gpc_cycle",
     LOWER, "stalled"),
    ("fe__cycles_stalled_cmd_wfi.avg.per_cycle_elapsed", "sys_cycle", LOWER, "stalled"),
    # instructions: executed instructions are work, per warp too; divergent ones and
    # replays are waste.
    ("smsp__inst_executed.sum", "instruction", LOWER, "count of work"),
    ("smsp__average_inst_executed_per_warp.ratio", "instruction/warp", LOWER,
     "instructions per warp"),                                             # old: None
    ("sm__idc_divergent_instructions.avg.per_cycle_active", "instruction", LOWER,
     "divergent"),                                                         # old: higher
    ("lrc__lrc2xbar_sectors_op_read_replayed.sum", "lrc_sector", LOWER, "replayed"),
    ("sm__inst_pending_pipe_lsu_mem_lg_cmd_read.sum", "instruction", None,
     "resource"),                                                          # old: lower
    ("sm__average_inst_latency_pipe_lsu_mem_lg_cmd_read.ratio", "sm", LOWER,
     "issue to retirement"),                                               # old: None
    # instructions per operation (inst_executed_op_*, thread_inst_executed_op_*).
    ("sm__sass_thread_inst_executed_op_ffma_pred_on.sum", "instruction", LOWER,
     "count of work"),
    ("sm__sass_thread_inst_executed_op_ffma_pred_on.sum.per_second", "instruction", HIGHER,
     "rate of work"),
    ("smsp__inst_executed_op_global_ld_pred_off_all.sum", "instruction", LOWER, "pred_off"),
    ("SM_A.TriageCompute.sm__thread_inst_executed_pred_on_realtime.sum", "instruction",
     LOWER, "count of work"),                                              # old: None
    ("sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained", "instruction",
     None, "capacity"),
    ("smsp__inst_executed_op_global_ld.avg.peak_sustained_elapsed", "instruction", None,
     "capacity"),
    # capacities: ncu's peak_sustained forms and a ratio's max_rate, whatever the counter.
    ("smsp__issue_inst0.sum.peak_sustained", "gpc_cycle", None, "capacity"),  # old: lower
    ("smsp__issue_inst0.avg.peak_sustained_active.per_second", "gpc_cycle", None,
     "capacity"),                                                          # old: lower
    ("lts__t_sector_hit_rate.max_rate", "lts", None, "capacity"),
    # launch__ metrics: set by the launch and the compiler (ncu's Launch Statistics).
    ("launch__registers_per_thread", "register/thread", None, "set by the launch"),
    ("launch__waves_per_multiprocessor", "", None, "set by the launch"),
    ("launch__occupancy_limit_warps", "block", None, "set by the launch"),
    ("launch__grid_size", "", None, "set by the launch"),
    # launched and completed: set by the launch.
    ("sm__ctas_launched.sum", "cta", None, "launched"),
    ("FE_B.TriageCompute.gr__ctas_launched_realtime.sum", "cta", None, "launched"),
    ("smsp__warps_restored.sum", "warp", None, "launched"),
    # device__attribute_ metrics (ncu's Device Attributes, by ncu's names): constants.
    ("device__attribute_max_threads_per_block", "", None, "device attribute"),
    ("device__attribute_l2_cache_size", "byte", None, "device attribute"),
    ("device__attribute_clock_rate", "kilohertz", None, "device attribute"),
]

_NOT_PERFORMANCE = ("capacity", "set by the launch", "device attribute")


@pytest.mark.parametrize("metric,unit,expected,why_has", FAMILIES,
                         ids=[m for m, _, _, _ in FAMILIES])
def test_each_family_of_metrics_is_judged_by_its_definition(metric, unit, expected, why_has):
    direction, why = better(metric, unit)
    assert (direction, why_has in why) == (expected, True), why
    if why_has in _NOT_PERFORMANCE:
        assert "not a performance metric" in why


def test_a_groups_alias_is_judged_as_the_metric_it_names():
    """'SM_C.TriageCompute.X.sum' is X as the TriageCompute group collects it."""
    assert split("SM_C.TriageCompute.smsp__warps_issue_stalled_wait.sum.per_second") == \
        ("smsp__warps_issue_stalled_wait", "sum", "per_second")
    assert split("TriageCompute.tpc__average_cta_latency_realtime.ratio") == \
        ("tpc__average_cta_latency_realtime", "", "ratio")
    assert split("launch__grid_size") == ("launch__grid_size", "", "")
    assert split("tflops") == (None, "", "")


@pytest.mark.parametrize("unit", ["(", "byte^99999999999999999999999", "\x00", 12, None,
                                  "x" * 100000])
def test_a_unit_that_is_no_unit_gives_an_answer_not_an_exception(unit):
    """compare passes the records' units, which a damaged file may hold anything as."""
    assert better("dram__bytes_read.sum", unit)[0] == LOWER
    assert better("some_derived", unit)[0] is None


def _compare(damaged, metric, unit, low, high):
    """compare's rows for the recorded vadd files with their times renamed to metric and
    scaled to level low (A) and high (B) (A and B differ by the runs' spread alone at
    the same level)."""
    means = {"vadd n=4096": 2321.3, "vadd n=1048576": 5323.0, "vadd n=16777216": 45058.0}

    def renamed(name, level):
        def edit(lines):
            out = []
            for line in lines:
                rec = json.loads(line)
                if rec["type"] == "summary":
                    continue
                if rec["type"] == "run":
                    t = rec["metrics"].pop("gpu__time_duration.sum")
                    rec["metrics"] = {metric: t * level / means[rec["nvtx_path"]]}
                    rec["units"] = {metric: unit}
                out.append(json.dumps(rec) + "\n")
            return out
        return damaged(name, edit)
    a, b = renamed("vadd.jsonl", low), renamed("vadd_again.jsonl", high)
    out = io.StringIO()
    code = compare.main([str(a), str(b), "--metric", metric, "--json"], out=out)
    return code, json.loads(out.getvalue())


def test_compare_judges_a_stall_of_a_groups_alias_that_rose_as_a_regression(damaged):
    """Before, the alias had no direction: 'cannot judge', exit 4."""
    code, rows = _compare(damaged, "SM_C.TriageCompute.smsp__warps_issue_stalled_wait.sum",
                          "gpc_cyclewarp", 1000, 2000)
    assert {r["Verdict"] for r in rows} == {"REGRESSION"} and code == 1
    assert {r["Better"] for r in rows} == {LOWER}


def test_compare_cannot_judge_a_capacity_that_changed_and_says_it_is_no_performance_metric(
        damaged):
    """A peak_sustained is the hardware's: before, 'lower' made a rise a REGRESSION."""
    code, rows = _compare(damaged, "smsp__issue_inst0.sum.peak_sustained", "gpc_cycle",
                          1000, 2000)
    assert {r["Verdict"] for r in rows} == {"cannot judge"} and code == 4
    assert all("not a performance metric" in r["Reason"] for r in rows), rows
    assert {r["Better"] for r in rows} == {None}


# ---------------------------------------------------------------------------------------
# Every metric the H200 lists

def _listed():
    """(name, unit, forms, description) of each line of `rangeprof --list-metrics`: a
    name, the unit (empty where CUPTI gives none, then the rollups follow at once; '-'
    where the lister says there is none), the forms (words starting with '.'; a
    launch__ metric's '-' is the bare name) and the description."""
    out = []
    for line in LIST.read_text().splitlines()[1:]:
        words = line.split()
        if not words or "__" not in words[0]:
            continue
        name, rest = words[0], words[1:]
        unit = rest.pop(0) if rest and not rest[0].startswith(".") else ""
        forms = []
        while rest and rest[0].startswith("."):
            forms.append(rest.pop(0))
        if not forms and rest and rest[0] == "-":
            rest.pop(0)
            forms = [""]
        out.append((name, "" if unit == "-" else unit, forms, " ".join(rest)))
    return out


# The forms of each base metric the test judges: its rollups as listed, and for counters
# the submetrics every counter has.
_COUNTER_FORMS = (".sum", ".avg", ".min", ".max", ".sum.per_second", ".avg.per_cycle_active",
                  ".avg.per_cycle_elapsed", ".avg.pct_of_peak_sustained_active",
                  ".avg.pct_of_peak_sustained_elapsed", ".sum.peak_sustained",
                  ".avg.peak_sustained_active", ".sum.peak_sustained_elapsed.per_second")


@pytest.mark.skipif(not LIST.exists(), reason="fixtures/recorded/list-metrics.txt is not "
                    "recorded yet: on the H200, `rangeprof --list-metrics > "
                    "python/tests/fixtures/recorded/list-metrics.txt`")
def test_every_metric_the_h200_lists_gets_a_direction_consistent_with_its_definition():
    listed = _listed()
    assert len(listed) > 3000  # the H200 lists 3 676 base metrics
    # Every line was read, the launch__ metrics with their bare name among them.
    assert sum(1 for n, _, f, _ in listed if n.startswith("launch__") and f == [""]) == 26
    assert all(forms for _, _, forms, _ in listed)
    bases = {split(n)[0] for n, _, _, _ in listed}
    # The table names real metrics (a misspelt entry would never apply).
    assert set(TABLE) <= bases, sorted(set(TABLE) - bases)
    unknown = judged = 0
    for name, unit, forms, description in listed:
        counter = split(name)[0].split("__", 1)[1]
        for form in _COUNTER_FORMS if ".sum" in forms else forms:
            metric = name + form
            direction, why = better(metric, unit, description)
            judged += 1
            assert direction in (HIGHER, LOWER, None) and why, metric
            # compare has no descriptions: the name and unit alone give the same answer.
            assert better(metric, unit)[0] == direction, metric
            # A group's alias is judged as the metric it names.
            assert better(metric.split(".TriageCompute.")[-1], unit) == (direction, why)
            unknown += direction is None
            if ("peak_sustained" in form and "pct_of_peak" not in form) \
                    or name.startswith("launch__"):
                assert direction is None and "not a performance metric" in why, metric
            elif split(name)[0] in TABLE:
                # The table's word holds for the forms it covers.
                plain, every, _ = TABLE[split(name)[0]]
                assert direction == (every if every is not None else plain) \
                    or (every is None and "." in form[1:]), (metric, why)
            elif re.search(r"time_(start|end)", name):
                assert direction is None, (metric, why)
            elif "throughput" in counter:
                assert direction == HIGHER, (metric, why)
            elif parse_unit(unit).dims.get("s", 0) > 0:
                assert direction == (LOWER if form in (".sum", ".avg", ".max", ".min")
                                     else None), (metric, why)
            elif re.search(r"cycles_(elapsed|in_region|in_frame)", counter):
                assert direction == (LOWER if form in (".sum", ".avg", ".max", ".min")
                                     else None), (metric, why)
            elif form == ".sum.per_second" and parse_unit(unit).dims == {"cycle": 1}:
                assert direction is None, (metric, why)
            elif re.search(r"hit_rate", counter) and form in (".ratio", ".pct"):
                assert direction == HIGHER, (metric, why)
            elif re.search(r"(^|_)hit(_|$)", counter) and "miss" not in counter \
                    and form in (".sum", ".avg", ".max", ".min"):
                assert direction is None, (metric, why)
            elif re.search(r"(^|_)selected(_|$)", counter):
                assert direction is None or (form in (".sum", ".avg", ".max", ".min")
                                             and "not_selected" not in counter), metric
            elif re.search(r"stall|(^|_)miss(_|$)|conflicts|divergent|replayed|pred_off|idle|"
                           r"inactive|unavailable|coalescing_none", counter) \
                    and form != ".sum.per_second":
                assert direction == LOWER, (metric, why)
            elif re.search(r"_launched|_restored|_completed", counter) \
                    and form in (".sum", ".avg", ".max", ".min"):
                assert direction is None, (metric, why)
            elif form in (".sum", ".avg", ".max", ".min") and not re.search(
                    r"active|eligible|allocated|configured|pending|uniform|dispatch", counter):
                # Any other count of events is work, fewer is better...
                assert direction == LOWER, (metric, why)
            elif form in (".avg.per_cycle_active", ".avg.per_cycle_elapsed") \
                    and not re.search(r"allocated|configured|pending", counter):
                # ... and its rate per cycle is the work done per cycle (IPC, occupancy).
                assert direction == HIGHER, (metric, why)
    print(f"{len(listed)} base metrics, {judged} forms; {unknown} have no known better side")
