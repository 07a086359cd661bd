"""The kernels of one execution are combined by one rule (table.combine_runs), whether
rangeprof-report --combine (table.iter_combined) or analyze's combine_kernel_metrics
(_results._combine_runs) asks: on the recorded fixtures both callers give the same
numbers for every combined run."""
import math
from pathlib import Path

import pytest

from rangeprof import _results, records, stats, table

FIXTURES = Path(__file__).resolve().parent / "fixtures"
# Executions of several kernels: two kernels per range, three graph nodes per launch,
# range workloads (several ranges per execution), one kernel per range.
CASES = ["recorded/fusion.jsonl", "recorded/graph_capture.jsonl",
         "recorded_range/rm_mlp.jsonl", "recorded_range/rm_unfused.jsonl",
         "recorded/clocks.jsonl"]
# Reductions both callers can name, exact in floating point whatever the order.
REDUCTIONS = [("max", max), ("min", min)]


def _instances(path, monkeypatch):
    """The executions iter_combined makes of a file (each a list of launches, each its
    samples in run order), as it hands them to its combination, with the run records."""
    recs = records.read([str(path)], report=None)
    by_line = {run.line: run.record for run in recs.runs}
    seen = []
    real = table._combine_instance

    def spy(instance, functions):
        seen.append(instance)
        return real(instance, functions)
    monkeypatch.setattr(table, "_combine_instance", spy)
    list(table.iter_combined(table.samples(recs)))
    monkeypatch.undo()
    assert seen, f"{path}: no execution"
    return seen, by_line


def _same(a, b):
    return (a is None and b is None) or a == b or (
        isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("name,binary", REDUCTIONS)
def test_report_and_analyze_combine_an_execution_alike(case, name, binary, monkeypatch):
    instances, by_line = _instances(FIXTURES / case, monkeypatch)
    compared = 0
    for instance in instances:
        report = list(table._combine_instance(instance, {"*": name}))
        metrics = list(instance[0][0]["values"])
        per_launch = [[_results._run_sample(by_line[s["Line"]], metrics) for s in launch]
                      for launch in instance]
        analyze = _results._combine_runs(per_launch, binary, metrics)
        assert len(report) == len(analyze) == min(len(launch) for launch in instance)
        for r, a in zip(report, analyze):
            for m in metrics:
                assert _same(r["values"][m][0], a["values"][m]), (case, m)
            for key in ("SMClock", "Temperature", "ThrottleReasons", "Passes",
                        "RangeKernels", "Run"):
                assert _same(r[key], a[key]), (case, key, r[key], a[key])
            # The same kernels (or ranges' kernels) in the same order, each caller
            # spelling the join as its users read it.
            kernels = [s["Kernel"] for s in (launch[0] for launch in instance)]
            workload_range = instance[0][0]["Workload"] == "range"
            assert r["Kernel"].split(" + ") == kernels
            assert a["Kernel"].split("|") == (["range"] * len(kernels) if workload_range
                                              else kernels)
            if r["RangeKernelNames"] is not None:
                assert r["RangeKernelNames"].split(table.RANGE_NAME_SEPARATOR) == \
                    [n for x in a["RangeKernelNames"].split("|")
                     for n in x.split(table.RANGE_NAME_SEPARATOR)]
            compared += 1
    assert compared


def test_combined_context_follows_the_rule(monkeypatch):
    """What combine_runs makes of a recorded execution of two kernels: the mean of the
    known clocks, the hottest temperature, the sum of the passes, every reason."""
    instances, _ = _instances(FIXTURES / "recorded/fusion.jsonl", monkeypatch)
    instance = next(i for i in instances if len(i) == 2)
    parts = [launch[0] for launch in instance]
    (_, combined), = list(table.combine_runs([[p] for p in parts], lambda m, v: v[0]))
    assert combined["SMClock"] == math.fsum(p["SMClock"] for p in parts) / 2
    assert combined["Temperature"] == max(p["Temperature"] for p in parts)
    assert combined["Passes"] == sum(p["Passes"] for p in parts)
    # A clock or temperature unknown in one kernel's run is left out, not NaN for all,
    # whichever kernel it is.
    for unknown in (0, 1):
        hole = [dict(p) for p in parts]
        hole[unknown]["SMClock"] = hole[unknown]["Temperature"] = math.nan
        (_, c), = list(table.combine_runs([[p] for p in hole], lambda m, v: v[0]))
        assert c["SMClock"] == parts[1 - unknown]["SMClock"]
        assert c["Temperature"] == parts[1 - unknown]["Temperature"]


def test_throttle_union_keeps_every_reason_in_one_order():
    assert stats.throttle_union(["hw_slowdown,gpu_idle", None, "zz_new,sw_power_cap"]) == \
        "gpu_idle,sw_power_cap,hw_slowdown,zz_new"
    assert stats.throttle_union([None, float("nan")]) is None
    assert stats.throttle_union(["", None]) == ""
