"""Nsight Python 1.1's public names under 'import rangeprof as nsight', against the stand-in
control library (tests/fake_control/): every name exists with its meaning (exception
classes and hierarchy, nsight.utils, VerbosityLevel, Tool/activate/deactivate/
get_active_tool), names without a meaning here say why, and to_dataframe() has exactly
Nsight Python's columns, order and dtypes, with units in ncu's names (checked against
ncu's CSV recorded on the H200 for the same metrics), StableMeasurement a nullable boolean,
the bad-metric message its tests expect, and verbosity=SILENT reaching the library."""
import csv
import json
import math
import warnings

import pytest

pd = pytest.importorskip("pandas")

import rangeprof as nsight  # noqa: E402
from rangeprof import analyze, exceptions  # noqa: E402
from rangeprof.ncu_units import ncu_unit  # noqa: E402

from conftest import RECORDED  # noqa: E402
from fake_control.harness import fake, fake_path, recorded_launches  # noqa: E402,F401

pytestmark = pytest.mark.filterwarnings("ignore::rangeprof.exceptions.RangeprofWarning")

TIME = "gpu__time_duration.sum"
READ = "dram__bytes_read.sum"
SILENT = nsight.VerbosityLevel.SILENT
# Nsight Python 1.1's columns of ProfileResults.to_dataframe() around the parameters
# (nsight/transformation.py, aggregate_data: the group keys, then its named aggregations,
# then the columns it adds).
HEAD = ["Annotation", "Metric"]
TAIL = ["AvgValue", "StdDev", "MinValue", "MaxValue", "NumRuns", "Kernel", "GPU", "Host",
        "ComputeClock", "MemoryClock", "Unit", "CI95_Lower", "CI95_Upper",
        "RelativeStdDevPct", "StableMeasurement", "Normalized", "Geomean"]


def test_the_exceptions_are_nsight_pythons_with_their_hierarchy():
    e = nsight.exceptions
    assert issubclass(e.CoolingTimeoutError, e.ThermalControlError)
    assert issubclass(e.ThermalControlError, Exception)
    assert not issubclass(e.ThermalControlError, e.ProfilerException)
    assert not issubclass(e.NCUNotAvailableError, e.ProfilerException)
    assert [m.value for m in e.MetricErrorType] == ["Invalid", "Unsupported"]
    # rangeprof's own errors are caught by 'except ProfilerException'.
    for cls in (e.ConfigError, e.Unavailable, e.MeasurementError, e.NothingMeasured,
                e.NoMeaning):
        assert issubclass(cls, e.ProfilerException)
    assert e.get_metrics_error_message(["x.sum"], e.MetricErrorType.INVALID).startswith(
        "Invalid value ['x.sum'] for 'metrics' parameter for nsight.analyze.kernel().\n")
    ctx = e.NCUErrorContext(errors=["Failed to find metric x"], log_file_path="l",
                            metrics=["x"])
    assert "Invalid value ['x']" in nsight.utils.format_ncu_error_message(ctx)


def test_the_top_level_names_are_nsight_pythons():
    for name in ["CollectionScope", "InfoCollector", "Tool", "VerbosityLevel", "activate",
                 "analyze", "annotate", "deactivate", "experimental", "get_active_tool",
                 "exceptions", "utils", "ncu", "annotation", "info_collector", "row_panel",
                 "col_panel", "__version__"]:
        assert hasattr(nsight, name), name
    assert set(nsight.__all__) >= {"Tool", "activate", "deactivate", "get_active_tool"}
    assert nsight.VerbosityLevel is nsight.utils.VerbosityLevel is analyze.VerbosityLevel
    assert [(v.name, int(v)) for v in nsight.VerbosityLevel] == [
        ("SILENT", 0), ("INFO", 3), ("DEBUG", 4)]
    for fn in (nsight.analyze.kernel, nsight.analyze.plot, nsight.analyze.ignore_failures,
               nsight.experimental.collect):
        assert callable(fn)


def test_utils_has_nsight_pythons_helpers():
    u = nsight.utils
    assert isinstance(u.CUDA_CORE_AVAILABLE, bool)
    assert u.NVTX_DOMAIN == "rangeprof"
    assert u.is_scalar(3) and u.is_scalar("ab") and not u.is_scalar((1, 2))
    assert list(u.batched(range(5), 2)) == [(0, 1), (2, 3), (4,)]
    assert u.format_time(3725) == "01:02:05"
    with pytest.raises(ValueError):
        list(u.batched([1], 0))
    combined = u.ActionData.combine(lambda x, y: x + y)(
        u.ActionData("a", 1.0, 1, 2, "g", ["ns"]), u.ActionData("b", 2.0, 1, 2, "g", ["ns"]))
    assert (combined.name, combined.values) == ("a|b", 3.0)


def test_nsight_ncu_names_have_no_meaning_and_say_why():
    assert nsight.ncu.injection_load_error is None
    for name in ("init_injection", "begin_profiling", "NCUCollector", "launch_ncu"):
        with pytest.raises(exceptions.NoMeaning, match="rangeprof does not use"):
            getattr(nsight.ncu, name)
        assert not hasattr(nsight.ncu, name)
    with pytest.raises(exceptions.NoMeaning, match="thermal guard"):
        nsight.thermovision
    with pytest.raises(AttributeError):
        nsight.no_such_name
    with pytest.raises(exceptions.NoMeaning, match="launches nothing"):
        nsight.utils.launch_dummy_kernel_module()


def test_tool_selection_means_what_it_means_in_nsight_python(fake):
    assert [(t.name, t.value) for t in nsight.Tool] == [("NCU", "ncu"), ("CUPTI", "cupti")]
    # The library attached: it is the NCU tool (ncu's metrics by ncu's names).
    assert nsight.get_active_tool() is nsight.Tool.NCU
    nsight.activate(nsight.Tool.NCU)   # already active: nothing to do
    with pytest.raises(RuntimeError, match="cannot switch to"):
        nsight.activate(nsight.Tool.CUPTI)
    with pytest.raises(ValueError, match="nsight.Tool member"):
        nsight.activate("ncu")
    with pytest.warns(RuntimeWarning, match="cannot be deactivated"):
        nsight.deactivate()
    assert nsight.get_active_tool() is nsight.Tool.NCU


def test_no_tool_is_active_without_the_library(monkeypatch):
    from rangeprof import _control
    monkeypatch.setattr(_control, "_attachment", _control.Attachment(problem="none here"))
    assert nsight.get_active_tool() is None
    with pytest.raises(exceptions.Unavailable, match="none here"):
        nsight.activate(nsight.Tool.NCU)


def _ncu_csv_units():
    """{metric: unit} of ncu's raw CSVs recorded on the H200 (ncu 2025.3.1)."""
    out = {}
    for path in sorted(RECORDED.parent.glob("recorded*/*.csv")):
        rows = list(csv.reader(line for line in open(path) if not line.startswith("==")))
        if len(rows) >= 2:
            out.update({m: u for m, u in zip(rows[0], rows[1]) if u})
    return out


def _recorded_units():
    """{metric: CUPTI unit} of rangeprof's recordings."""
    out = {}
    for path in sorted(RECORDED.parent.glob("recorded*/*.jsonl")):
        for line in open(path):
            if '"units"' in line:
                out.update(json.loads(line).get("units") or {})
    return out


def test_units_are_ncus_names_for_the_same_metrics():
    ncu, ours = _ncu_csv_units(), _recorded_units()
    both = sorted(set(ncu) & set(ours))
    assert len({ours[m] for m in both}) >= 4, both   # ns, byte, cycle, inst at least
    for m in both:
        assert ncu_unit(ours[m]) == ncu[m], m
    # ncu's percentages are '%' (its *_pct metrics), CUPTI's 'percent'.
    assert {ncu[m] for m in ncu if m.endswith("_pct")} == {ncu_unit("percent")} == {"%"}
    assert ncu_unit("byte/second") == "byte/s" and ncu_unit("TFLOP/s") == "TFLOP/s"
    # A cycle counter's rate: CUPTI's '1/second', ncu's cycles per second.
    assert _recorded_units()["sm__cycles_elapsed.avg.per_second"] == "1/second"
    assert ncu_unit("1/second", "sm__cycles_elapsed.avg.per_second") == "cycle/s"
    assert ncu_unit("1/second", "lts__t_sectors.avg.per_second") == "1/s"
    assert ncu_unit("") == "" and ncu_unit(None) is None


def _vadd(fake, configs, **kw):
    fake.use("vadd.jsonl")

    @nsight.analyze.kernel(configs=configs, verbosity=SILENT, **kw)
    def bench(n):
        fake.set("RANGEPROF_FAKE_RANGE", f"vadd n={n}")
        with nsight.annotate("vadd"):
            pass
    return bench


def test_to_dataframe_has_nsight_pythons_columns_dtypes_and_units(fake):
    df = _vadd(fake, [4096, 1048576], runs=5, metrics=[TIME, READ])().to_dataframe()
    assert list(df.columns) == HEAD + ["n"] + TAIL
    # Nsight Python's dtypes under the same pandas: strings as pandas' default string
    # dtype, counts and clocks as int64, StableMeasurement a nullable boolean.
    text = str(pd.DataFrame({"s": ["a"]})["s"].dtype)
    expected = dict(Annotation=text, Metric=text, n="int64", AvgValue="float64",
                    StdDev="float64", MinValue="float64", MaxValue="float64",
                    NumRuns="int64", Kernel=text, GPU=text, Host=text,
                    ComputeClock="int64", MemoryClock="int64", Unit=text,
                    CI95_Lower="float64", CI95_Upper="float64",
                    RelativeStdDevPct="float64", StableMeasurement="boolean",
                    Normalized="bool", Geomean="float64")
    assert {c: str(t) for c, t in df.dtypes.items()} == expected
    assert df["Unit"].tolist() == ["ns", "byte", "ns", "byte"]


def test_stable_measurement_is_na_for_a_single_run(fake):
    df = _vadd(fake, [4096], runs=1)().to_dataframe()
    assert df["NumRuns"].tolist() == [1]
    assert str(df["StableMeasurement"].dtype) == "boolean"
    assert df["StableMeasurement"].isna().all()
    assert math.isnan(df["StdDev"].iloc[0])
    df = _vadd(fake, [4096], runs=5)().to_dataframe()
    assert df["StableMeasurement"].notna().all()


def test_a_bad_metric_raises_nsight_pythons_message_then_the_librarys(fake):
    bench = _vadd(fake, [4096], metrics=["invalid_value"])
    # Nsight Python's test_parameter_metrics[invalid_single] pattern, as it matches it.
    with pytest.raises(exceptions.ProfilerException,
                       match=r"Invalid value \['invalid_value'\] for 'metrics' parameter "
                             r"for nsight.analyze.kernel()") as e:
        bench()
    assert "unknown metric 'invalid_value'" in str(e.value)


def test_silent_verbosity_quiets_the_library_and_info_restores_it(fake, capsys):
    fake.set("RANGEPROF_FAKE_ACCEPT", "quiet")
    monkey_analyze = pytest.MonkeyPatch()
    monkey_analyze.setattr(analyze, "_loud_call_seen", [False])
    try:
        _vadd(fake, [4096])()
        quiet = [v for n, v in fake.options() if n == "quiet"]
        assert quiet == ["true", "true"], "quiet during the call, and after it"
        assert capsys.readouterr().out == ""
        fake.clear_log()
        fake.use("vadd.jsonl")

        @nsight.analyze.kernel(configs=[4096], verbosity=nsight.VerbosityLevel.INFO)
        def loud(n):
            fake.set("RANGEPROF_FAKE_RANGE", f"vadd n={n}")
            with nsight.annotate("vadd"):
                pass
        loud()
        assert [v for n, v in fake.options() if n == "quiet"] == ["false", "false"]
        assert "[rangeprof] loud:" in capsys.readouterr().out
        fake.clear_log()
        _vadd(fake, [4096])()
        # Once a call printed, the library speaks again after SILENT ones (its exit table).
        assert [v for n, v in fake.options() if n == "quiet"] == ["true", "false"]
    finally:
        monkey_analyze.undo()


def test_a_library_without_the_quiet_option_still_measures(fake):
    fake.set("RANGEPROF_FAKE_REFUSE", "quiet")   # a library older than the option
    df = _vadd(fake, [4096])().to_dataframe()
    assert len(df) == 1
    assert not [n for n, _ in fake.options() if n == "quiet"]


def test_records_and_extra_columns_stay_reachable(fake):
    result = _vadd(fake, [4096], runs=5)()
    extra = result.to_dataframe(extra=True)
    assert list(extra.columns[len(HEAD) + 1 + len(TAIL):]) == [
        "MedianValue", "DriftPct", "Reasons", "SMClock", "Temperature", "TemperatureMax",
        "Power", "ThrottleReasons", "Passes", "KernelIndex", "Launches", "RangeKernels",
        "RangeKernelNames"]
    runs = recorded_launches("vadd.jsonl", "vadd n=4096")[0][:5]
    assert extra["SMClock"].iloc[0] == pytest.approx(
        sum(r["sm_clock_hz"] for r in runs) / 5)
    assert result.to_dataframe() is not result.to_dataframe()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(result.raw_dataframe()) == 5


def test_plot_print_data_shows_nsight_pythons_columns_only(fake, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    from rangeprof import _results
    fake.use("vadd.jsonl")

    @nsight.analyze.plot(str(tmp_path / "p.png"), print_data=True)
    @nsight.analyze.kernel(configs=[4096, 16777216], runs=5, verbosity=SILENT)
    def bench(n):
        fake.set("RANGEPROF_FAKE_RANGE", f"vadd n={n}")
        with nsight.annotate("vadd"):
            pass
    bench()
    out = capsys.readouterr().out
    assert "Aggregated Data" in out and "AvgValue" in out
    assert [c for c in _results.OWN_COLUMNS if c in out] == []


def test_a_parameter_holding_lists_comes_after_unit_as_in_nsight_python(fake):
    """Nsight Python groups by the parameters it can hash and aggregates one holding
    lists after its other columns: so it stands after Unit."""
    fake.use("vadd.jsonl")

    @nsight.analyze.kernel(configs=[(4096, [1, 2])], verbosity=SILENT)
    def bench(n, shape):
        fake.set("RANGEPROF_FAKE_RANGE", f"vadd n={n}")
        with nsight.annotate("vadd"):
            pass
    df = bench().to_dataframe()
    assert list(df.columns) == HEAD + ["n"] + TAIL[:11] + ["shape"] + TAIL[11:]
    assert df["shape"].tolist() == [[1, 2]]
