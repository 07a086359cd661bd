"""rangeprof.analyze.kernel and rangeprof.annotate, in process, against the stand-in control
library (tests/fake_control/): Nsight Python's columns and rows, the values of the recorded
runs the library handed back, runs replayed from one call or calls repeated, the settings
each decorated function gives the library, several kernels per annotation, combined or
not, derived metrics, normalisation, ignored kernels, and Nsight Python's rules for
configs. Every expected value is computed here from the recorded fixture files."""
import math
import statistics
import threading

import pytest

pd = pytest.importorskip("pandas")

import rangeprof  # noqa: E402
from rangeprof import analyze, stats  # noqa: E402
from rangeprof.exceptions import ConfigError, RangeprofWarning  # noqa: E402

from fake_control.harness import fake, fake_path, recorded_device, recorded_launches  # noqa: E402,F401

nsight_collect = rangeprof.experimental.collect

pytestmark = pytest.mark.filterwarnings("ignore::rangeprof.exceptions.RangeprofWarning")

TIME = "gpu__time_duration.sum"
READ = "dram__bytes_read.sum"
NSIGHT_COLUMNS = ["Annotation", "Metric", "AvgValue", "StdDev", "MinValue", "MaxValue",
                  "NumRuns", "Kernel", "GPU", "Host", "ComputeClock", "MemoryClock", "Unit",
                  "CI95_Lower", "CI95_Upper", "RelativeStdDevPct", "StableMeasurement",
                  "Normalized", "Geomean"]
OWN_COLUMNS = ["MedianValue", "DriftPct", "Reasons", "SMClock", "Temperature",
               "TemperatureMax", "Power", "ThrottleReasons", "Passes", "KernelIndex",
               "Launches", "RangeKernels", "RangeKernelNames"]
SILENT = analyze.VerbosityLevel.SILENT


def values(runs, metric=TIME):
    return [float(r["metrics"][metric]) for r in runs]


def vadd(fake, n_values, **kw):
    """An analyze.kernel function over vadd.jsonl: config n hands back the recorded launches
    of range 'vadd n=<n>'."""
    fake.use("vadd.jsonl")
    calls = []

    @rangeprof.analyze.kernel(configs=n_values, verbosity=SILENT, **kw)
    def bench(n):
        calls.append(n)
        fake.set("RANGEPROF_FAKE_RANGE", f"vadd n={n}")
        with rangeprof.annotate("vadd"):
            pass
    return bench, calls


def test_to_dataframe_has_nsight_pythons_columns_and_extra_adds_rangeprofs(fake):
    bench, _ = vadd(fake, [4096, 1048576], runs=5, metrics=[TIME, READ])
    result = bench()
    assert list(result.to_dataframe().columns) == NSIGHT_COLUMNS[:2] + ["n"] + NSIGHT_COLUMNS[2:]
    df = result.to_dataframe(extra=True)
    assert list(df.columns) == NSIGHT_COLUMNS[:2] + ["n"] + NSIGHT_COLUMNS[2:] + OWN_COLUMNS
    assert df[list(result.to_dataframe().columns)].equals(result.to_dataframe())
    assert list(df["Annotation"]) == ["vadd"] * 4
    assert list(df["Metric"]) == [TIME, READ, TIME, READ]
    assert list(df["n"]) == [4096, 4096, 1048576, 1048576]
    dev = recorded_device("vadd.jsonl")
    assert set(df["GPU"]) == {dev["name"]}
    # ncu's device attributes are in kHz: 1980000 for the H200's 1980 MHz.
    assert set(df["ComputeClock"]) == {dev["rated_sm_clock_hz"] // 1000}
    assert set(df["MemoryClock"]) == {dev["rated_memory_clock_hz"] // 1000}
    # ncu's unit names, as Nsight Python's DataFrame has them (the records say
    # 'nanosecond', CUPTI's).
    assert [r["units"] for r in recorded_launches("vadd.jsonl", "vadd n=4096")[0][:1]] == [
        {TIME: "nanosecond", READ: "byte", "dram__bytes_write.sum": "byte"}]
    assert df["Unit"].tolist() == ["ns", "byte", "ns", "byte"]
    assert df["Normalized"].eq(False).all()


def test_rows_hold_the_statistics_of_the_recorded_runs(fake):
    bench, calls = vadd(fake, [4096, 16777216], runs=5)
    df = bench().to_dataframe(extra=True)
    assert calls == [4096, 16777216]
    for n, row in zip([4096, 16777216], df.itertuples()):
        runs = recorded_launches("vadd.jsonl", f"vadd n={n}")[0][:5]
        xs = values(runs)
        assert row.NumRuns == 5
        assert row.AvgValue == pytest.approx(statistics.mean(xs))
        assert row.StdDev == pytest.approx(statistics.stdev(xs))
        assert (row.MinValue, row.MaxValue) == (min(xs), max(xs))
        assert row.MedianValue == statistics.median(xs)
        s = stats.summarize(xs, [r["sm_clock_hz"] for r in runs])
        assert (row.CI95_Lower, row.CI95_Upper) == pytest.approx((s["ci95_low"], s["ci95_high"]))
        assert row.StableMeasurement == bool(s["stable"])
        assert row.Reasons == "; ".join(s["reasons"])
        assert row.Kernel == runs[0]["kernel"]
        assert row.SMClock == pytest.approx(statistics.mean(r["sm_clock_hz"] for r in runs))
        assert row.Temperature == pytest.approx(statistics.mean(r["temperature_c"] for r in runs))
        assert row.Passes == runs[0]["passes"] and row.Launches == 1
    xs = df["AvgValue"]
    assert df["Geomean"].iloc[0] == pytest.approx(math.sqrt(xs.iloc[0] * xs.iloc[1]))


def test_runs_replay_each_kernel_from_one_call(fake):
    bench, calls = vadd(fake, [4096], runs=7)
    df = bench().to_dataframe(extra=True)
    assert calls == [4096], "the function runs once per config"
    assert ("runs", "7") in fake.options()
    assert fake.log().count("rangeprof_annotation_begin vadd -> 0") == 1
    assert df["NumRuns"].tolist() == [7] and df["Launches"].tolist() == [1]
    first = recorded_launches("vadd.jsonl", "vadd n=4096")[0]
    assert df["AvgValue"].iloc[0] == pytest.approx(statistics.mean(values(first[:7])))


def test_replay_runs_false_calls_the_function_runs_times(fake):
    bench, calls = vadd(fake, [4096], runs=4, replay_runs=False)
    df = bench().to_dataframe(extra=True)
    assert calls == [4096] * 4, "Nsight Python's way: one call per run"
    assert ("runs", "1") in fake.options() and ("runs", "4") not in fake.options()
    launches = recorded_launches("vadd.jsonl", "vadd n=4096")[:4]
    firsts = [launch[0] for launch in launches]
    assert df["NumRuns"].tolist() == [4] and df["Launches"].tolist() == [4]
    assert df["AvgValue"].iloc[0] == pytest.approx(statistics.mean(values(firsts)))


def test_drift_is_judged_per_launch_as_the_summary_records_do(fake):
    """Runs replayed from one launch have a drift (stats.drift over the run index);
    single runs of twelve launches pooled (replay_runs=False) have none: a step between
    launches is no drift of any of them."""
    bench, _ = vadd(fake, [16777216], runs=20)
    row = bench().to_dataframe(extra=True).iloc[0]
    runs = recorded_launches("vadd.jsonl", "vadd n=16777216")[0]
    assert row.DriftPct == pytest.approx(stats.drift(values(runs), statistics.mean(values(runs)))[0])
    fake.set("RANGEPROF_FAKE_EPOCH", "pooled")
    bench, _ = vadd(fake, [16777216], runs=12, replay_runs=False)
    row = bench().to_dataframe(extra=True).iloc[0]
    assert row.NumRuns == 12 and row.Launches == 12
    assert math.isnan(row.DriftPct)


def test_each_function_sets_its_own_options_before_its_calls(fake):
    fake.use("matmul.jsonl")

    @rangeprof.analyze.kernel(runs=3, metrics=[TIME, READ], cache_control="none",
                              clock_control="base", thermal_mode="manual", thermal_wait=15,
                              thermal_cont=25, thermal_timeout=60, verbosity=SILENT)
    def first():
        with rangeprof.annotate("first"):
            pass

    @rangeprof.analyze.kernel(runs=2, thermal_mode="off", verbosity=SILENT)
    def second():
        with rangeprof.annotate("second"):
            pass

    first()
    log = fake.log()
    begin = log.index("rangeprof_annotation_begin first -> 0")
    set_before = [line for line in log[:begin] if line.startswith("rangeprof_set_option")]
    wanted = {("metrics", f"{TIME},{READ}"), ("runs", "3"), ("cache-control", "none"),
              ("clock-control", "base"), ("thermal-control", "manual"), ("thermal-wait", "15"),
              ("thermal-continue", "25"), ("thermal-timeout", "60")}
    assert wanted <= {tuple(line.split()[1:3]) for line in set_before}
    fake.clear_log()
    df = second().to_dataframe(extra=True)
    log = fake.log()
    begin = log.index("rangeprof_annotation_begin second -> 0")
    now = {}
    for line in log[:begin]:
        if line.startswith("rangeprof_set_option") and line.endswith("-> 0"):
            now[line.split()[1]] = line.split()[2]
    # Nothing of first()'s settings is left over: Nsight Python's defaults (and SILENT's
    # quiet where the library has that option: tests/test_nsight_names.py).
    assert now.pop("quiet", "true") == "true"
    assert now == {"metrics": TIME, "runs": "2", "cache-control": "all", "clock-control": "none",
                   "thermal-control": "off", "thermal-wait": "10", "thermal-continue": "20",
                   "thermal-timeout": "180"}
    assert df["Metric"].tolist() == [TIME]


def test_options_go_back_to_the_process_settings_after_a_call(fake, monkeypatch):
    monkeypatch.setenv("RANGEPROF_RUNS", "9")
    bench, _ = vadd(fake, [4096], runs=3, cache_control="none")
    bench()
    log = fake.log()
    after = log[log.index("rangeprof_capture_end"):]
    restored = dict(tuple(line.split()[1:3]) for line in after
                    if line.startswith("rangeprof_set_option") and line.endswith("-> 0"))
    assert restored["runs"] == "9" and restored["cache-control"] == "all"
    assert restored["metrics"] == TIME


@pytest.mark.parametrize("kw,wait,cont", [
    (dict(thermal_wait=30), "30", "30"),      # continue moves up to the wait given alone
    (dict(thermal_cont=5), "5", "5"),         # wait moves down to the continue given alone
    (dict(thermal_wait=40, thermal_cont=60), "40", "60"),
])
def test_thermal_thresholds_reach_the_library_in_an_order_it_accepts(fake, kw, wait, cont):
    bench, _ = vadd(fake, [4096], **kw)
    bench()
    # The stand-in refuses wait > continue once both were given, as the launcher does:
    # going from 40/60 to 5/5 and back needs the right order each time.
    bench, _ = vadd(fake, [4096], thermal_wait=40, thermal_cont=60)
    bench()
    bench, _ = vadd(fake, [4096], **kw)
    bench()
    log = fake.log()
    begin = max(i for i, line in enumerate(log) if line.startswith("rangeprof_annotation_begin"))
    now = {}
    for line in log[:begin]:
        if line.startswith("rangeprof_set_option") and line.endswith("-> 0"):
            now[line.split()[1]] = line.split()[2]
    assert (now["thermal-wait"], now["thermal-continue"]) == (wait, cont)


def test_every_kernel_of_an_annotation_gets_its_rows(fake):
    fake.use("fusion.jsonl", range="fma variant=unfused n=16777216", launches=2)

    @rangeprof.analyze.kernel(runs=10, metrics=[TIME, READ], verbosity=SILENT)
    def unfused():
        with rangeprof.annotate("a*b+c"):
            pass

    df = unfused().to_dataframe(extra=True)
    mul, add = recorded_launches("fusion.jsonl", "fma variant=unfused n=16777216")[:2]
    assert "MulFunctor" in mul[0]["kernel"] and "add" in add[0]["kernel"]
    assert df["Kernel"].tolist() == [mul[0]["kernel"]] * 2 + [add[0]["kernel"]] * 2
    assert df["KernelIndex"].tolist() == [0, 0, 1, 1]
    assert df["Metric"].tolist() == [TIME, READ, TIME, READ]
    assert df["AvgValue"].tolist() == pytest.approx(
        [statistics.mean(values(mul)), statistics.mean(values(mul, READ)),
         statistics.mean(values(add)), statistics.mean(values(add, READ))])


def test_combine_kernel_metrics_reduces_an_annotations_kernels(fake):
    fake.use("fusion.jsonl", range="fma variant=unfused n=16777216", launches=2)

    @rangeprof.analyze.kernel(runs=10, metrics=[TIME, READ], verbosity=SILENT,
                              combine_kernel_metrics=lambda x, y: x + y)
    def unfused():
        with rangeprof.annotate("a*b+c"):
            pass

    df = unfused().to_dataframe(extra=True)
    mul, add = recorded_launches("fusion.jsonl", "fma variant=unfused n=16777216")[:2]
    assert df["Metric"].tolist() == [TIME, READ]
    assert df["Kernel"].tolist() == [f"{mul[0]['kernel']}|{add[0]['kernel']}"] * 2
    sums = [a + b for a, b in zip(values(mul), values(add))]
    assert df["NumRuns"].iloc[0] == 10
    assert df["AvgValue"].iloc[0] == pytest.approx(statistics.mean(sums))
    assert df["StdDev"].iloc[0] == pytest.approx(statistics.stdev(sums))
    assert df["Passes"].iloc[0] == mul[0]["passes"] + add[0]["passes"]


def test_combine_with_max_of_graph_nodes(fake):
    """The three kernel nodes of a graph launch are one annotation's kernels."""
    fake.use("graph_capture.jsonl", launches=3)

    @rangeprof.analyze.kernel(runs=5, verbosity=SILENT, combine_kernel_metrics=max)
    def graph():
        with rangeprof.annotate("g"):
            pass

    df = graph().to_dataframe(extra=True)
    nodes = recorded_launches("graph_capture.jsonl")[:3]
    assert [n[0]["graph"]["node"] for n in nodes] == [0, 1, 2]
    assert df["AvgValue"].iloc[0] == pytest.approx(
        statistics.mean(max(t) for t in zip(*(values(n) for n in nodes))))
    assert df["ThrottleReasons"].iloc[0] == "" and df["Power"].iloc[0] > 0


def test_derive_metric_adds_rows_after_the_measured_ones(fake):
    def tflops(time_ns, n):
        return 2 * n ** 3 / time_ns / 1e3, "TFLOPS"

    fake.use("matmul.jsonl")

    @rangeprof.analyze.kernel(configs=[1024, 2048], runs=10, derive_metric=tflops,
                              verbosity=SILENT)
    def matmul(n):
        fake.set("RANGEPROF_FAKE_RANGE", f"matmul n={n} dtype=fp32")
        with rangeprof.annotate("matmul"):
            pass

    df = matmul().to_dataframe(extra=True)
    assert df["Metric"].tolist() == [TIME, TIME, "tflops", "tflops"]
    assert df["Unit"].tolist() == ["ns", "ns", "TFLOPS", "TFLOPS"]
    for n, row in zip([1024, 2048], df.iloc[2:].itertuples()):
        runs = recorded_launches("matmul.jsonl", f"matmul n={n} dtype=fp32")[0]
        per_run = [2 * n ** 3 / t / 1e3 for t in values(runs)]
        assert row.n == n and row.AvgValue == pytest.approx(statistics.mean(per_run))
        assert row.NumRuns == 10


def test_derive_metric_dict_and_unitless_values(fake):
    fake.use("vadd.jsonl", range="vadd n=4096")

    def per_byte(time_ns, read, n):
        return {"ns_per_kb": (time_ns / read * 1024, "ns/KiB"), "bytes_per_elem": read / n}

    @rangeprof.analyze.kernel(configs=[4096], runs=5, metrics=[TIME, READ],
                              derive_metric=per_byte, verbosity=SILENT)
    def bench(n):
        with rangeprof.annotate("vadd"):
            pass

    with pytest.warns(UserWarning, match="'bytes_per_elem' does not have a unit"):
        df = bench().to_dataframe(extra=True)
    assert df["Metric"].tolist() == [TIME, READ, "ns_per_kb", "bytes_per_elem"]
    runs = recorded_launches("vadd.jsonl", "vadd n=4096")[0][:5]
    assert df["AvgValue"].iloc[3] == pytest.approx(statistics.mean(
        r["metrics"][READ] / 4096 for r in runs))
    assert df["Unit"].iloc[2] == "ns/KiB" and pd.isna(df["Unit"].iloc[3])


def test_derive_metric_with_the_wrong_arguments_is_refused_before_measuring(fake):
    def tflops(time_ns):
        return time_ns

    with pytest.raises(ValueError, match=r"derive_metric expects 2 parameters \(1 metric "
                       r"values \+ 1 configs\), but has 1"):
        @rangeprof.analyze.kernel(configs=[1], derive_metric=tflops)
        def bench(n):
            pass
    assert not any(line.startswith("rangeprof_annotation") for line in fake.log())


def test_normalize_against_divides_by_the_baseline_annotation(fake):
    fake.use("vadd.jsonl")

    @rangeprof.analyze.kernel(configs=[1048576, 16777216], runs=5, normalize_against="small",
                              verbosity=SILENT)
    def bench(n):
        fake.set("RANGEPROF_FAKE_RANGE", "vadd n=4096")
        with rangeprof.annotate("small"):
            pass
        fake.set("RANGEPROF_FAKE_RANGE", f"vadd n={n}")
        with rangeprof.annotate("big"):
            pass

    df = bench().to_dataframe(extra=True)
    columns = list(df.columns)
    assert columns.index("NormalizationValue") == columns.index("Normalized") + 1
    assert columns.index("Geomean") == columns.index("NormalizationValue") + 1
    assert df["Normalized"].eq("small").all()
    small = recorded_launches("vadd.jsonl", "vadd n=4096")
    for i, n in enumerate([1048576, 16777216]):
        rows = df[df["n"] == n].set_index("Annotation")
        base = statistics.mean(values(small[i][:5]))
        big = statistics.mean(values(recorded_launches("vadd.jsonl", f"vadd n={n}")[0][:5]))
        assert rows.loc["small", "AvgValue"] == pytest.approx(1.0)
        assert rows.loc["big", "AvgValue"] == pytest.approx(big / base)
        assert rows["NormalizationValue"].tolist() == pytest.approx([base, base])


def test_normalize_against_an_unknown_annotation(fake):
    bench, _ = vadd(fake, [4096], normalize_against="nonesuch")
    with pytest.raises(ValueError, match="normalize_against='nonesuch'.*measured: 'vadd'"):
        bench()
    assert fake.open_annotations() == 0


def test_ignore_kernel_list_leaves_kernels_out(fake):
    mul, add = recorded_launches("fusion.jsonl", "fma variant=unfused n=16777216")[:2]
    for name in (mul[0]["kernel"], mul[0]["mangled"]):
        fake.use("fusion.jsonl", range="fma variant=unfused n=16777216", launches=2)
        fake.set("RANGEPROF_FAKE_EPOCH", name)

        @rangeprof.analyze.kernel(runs=10, ignore_kernel_list=[name], verbosity=SILENT)
        def unfused():
            with rangeprof.annotate("a*b+c"):
                pass

        df = unfused().to_dataframe(extra=True)
        assert df["Kernel"].tolist() == [add[0]["kernel"]]
        assert df["AvgValue"].iloc[0] == pytest.approx(statistics.mean(values(add)))


def test_ignore_kernel_list_takes_ncus_short_names(fake):
    fake.use("fusion.jsonl", range="fma variant=triton n=16777216")

    @rangeprof.analyze.kernel(runs=10, ignore_kernel_list=["fma_kernel"], verbosity=SILENT)
    def triton():
        with rangeprof.annotate("triton"):
            pass
        fake.set("RANGEPROF_FAKE_RANGE", "fma variant=cupy n=16777216")
        with rangeprof.annotate("cupy"):
            pass

    df = triton().to_dataframe(extra=True)
    assert df["Annotation"].tolist() == ["cupy"]
    assert df["Kernel"].tolist() == ["tutorial_fused_fma"]


def test_nested_annotations_of_two_names_both_count(fake):
    fake.use("clocks.jsonl")

    @rangeprof.analyze.kernel(runs=5, verbosity=SILENT)
    def bench():
        with rangeprof.annotate("outer"):
            with rangeprof.annotate("inner"):
                pass

    df = bench().to_dataframe(extra=True)
    steps = recorded_launches("clocks.jsonl")
    # inner's end hands back step 0 (both open), outer's end step 1 (outer only).
    assert df["Annotation"].tolist() == ["outer", "outer", "inner"]
    assert df[df["Annotation"] == "inner"]["AvgValue"].iloc[0] == pytest.approx(
        statistics.mean(values(steps[0])))
    assert df[df["Annotation"] == "outer"]["AvgValue"].tolist() == pytest.approx(
        [statistics.mean(values(steps[0])), statistics.mean(values(steps[1]))])


def test_an_annotation_entered_twice_in_one_call_pools_its_executions(fake):
    fake.use("clocks.jsonl")

    @rangeprof.analyze.kernel(runs=5, verbosity=SILENT,
                              combine_kernel_metrics=lambda x, y: x + y)
    def bench():
        for _ in range(3):
            with rangeprof.annotate("step"):
                pass

    df = bench().to_dataframe(extra=True)
    steps = recorded_launches("clocks.jsonl")[:3]
    assert df["NumRuns"].tolist() == [15] and df["Launches"].tolist() == [3]
    assert df["AvgValue"].iloc[0] == pytest.approx(statistics.mean(sum(map(values, steps), [])))


def test_kernels_of_annotations_on_other_threads_count(fake):
    fake.use("clocks.jsonl")

    @rangeprof.analyze.kernel(runs=5, verbosity=SILENT)
    def bench():
        def work():
            with rangeprof.annotate("worker"):
                pass
        t = threading.Thread(target=work)
        t.start()
        t.join()

    df = bench().to_dataframe(extra=True)
    assert df["Annotation"].tolist() == ["worker"]
    assert df["NumRuns"].tolist() == [5]


def test_the_second_call_knows_the_gpu_without_a_device_record(fake, monkeypatch):
    """The library writes a device record once: a later call's capture has none, and the
    GPU comes from what an earlier capture held."""
    monkeypatch.setattr(analyze, "_devices", {})
    monkeypatch.setenv("RANGEPROF_OUTPUT", "")   # no file to read it from: the captures only
    bench, _ = vadd(fake, [4096])
    first = bench()
    assert [r["type"] for r in first.records].count("device") == 1
    second = bench()
    assert not any(r.get("type") == "device" for r in second.records)
    assert second.to_dataframe(extra=True)["GPU"].tolist() == [recorded_device("vadd.jsonl")["name"]]


def test_a_device_record_written_before_the_capture_is_read_from_the_output(fake, monkeypatch):
    bench, _ = vadd(fake, [4096])
    bench()
    monkeypatch.setattr(analyze, "_devices", {})    # as if written before any capture
    result = bench()
    assert not any(r.get("type") == "device" for r in result.records)
    assert result.to_dataframe(extra=True)["GPU"].tolist() == [recorded_device("vadd.jsonl")["name"]]


def test_the_output_file_keeps_every_record(fake):
    bench, _ = vadd(fake, [4096, 1048576], runs=5)
    df = bench().to_dataframe(extra=True)
    loaded = rangeprof.load(str(fake.output_file()), report=None)
    loaded = loaded[loaded["Metric"] == TIME]
    assert len(loaded) == df["NumRuns"].sum()
    assert loaded["Value"].mean() == pytest.approx(
        (df["AvgValue"] * df["NumRuns"]).sum() / df["NumRuns"].sum())
    assert set(loaded["Annotation"]) == {"vadd n=4096", "vadd n=1048576"}


def test_annotate_works_outside_analyze_and_as_a_decorator(fake):
    fake.use("clocks.jsonl")

    @rangeprof.annotate("plain")
    def work(x):
        return x * 2

    assert work(21) == 42
    with rangeprof.annotate("block"):
        pass
    log = fake.log()
    assert "rangeprof_annotation_end plain -> 0" in log and "rangeprof_annotation_end block -> 0" in log
    assert not any(line.startswith("rangeprof_capture") for line in log)
    loaded = rangeprof.load(str(fake.output_file()), report=None)
    assert len(loaded) == 2 * len(recorded_launches("clocks.jsonl")[0]) * 3


def test_ignore_failures_reports_nan(fake):
    fake.use("clocks.jsonl")

    @rangeprof.analyze.kernel(runs=5, verbosity=SILENT)
    def bench():
        with rangeprof.annotate("broken", ignore_failures=True):
            fake.set("RANGEPROF_FAKE_LAUNCHES", 0)
            raise RuntimeError("out of memory")
        fake.set("RANGEPROF_FAKE_LAUNCHES", 1)
        with rangeprof.annotate("fine"):
            pass

    with pytest.warns(RangeprofWarning, match="'broken' failed.*out of memory"):
        df = bench().to_dataframe(extra=True)
    assert df["Annotation"].tolist() == ["broken", "fine"], "in the order they were entered"
    broken = df[df["Annotation"] == "broken"].iloc[0]
    assert math.isnan(broken["AvgValue"]) and broken["NumRuns"] == 0
    assert fake.open_annotations() == 0


def test_a_returned_value_is_ignored_with_nsight_pythons_warning(fake):
    fake.use("clocks.jsonl")

    @rangeprof.analyze.kernel(verbosity=SILENT)
    def bench():
        with rangeprof.annotate("x"):
            pass
        return 42

    with pytest.warns(RuntimeWarning, match="returns a value"):
        result = bench()
    assert isinstance(result, analyze.ProfileResults)


def test_output_csv_and_prefix_write_nsight_pythons_files(fake, tmp_path):
    bench, _ = vadd(fake, [4096], runs=5, output_csv=True, output_prefix=str(tmp_path / "out" / "r1_"))
    result = bench()
    df = result.to_dataframe()
    processed = pd.read_csv(tmp_path / "out" / "r1_processed_data-bench-0.csv")
    raw = pd.read_csv(tmp_path / "out" / "r1_profiled_data-bench-0.csv")
    # Nsight Python's columns only (its example 11 prints every column naming "Value"):
    # rangeprof's own stay in the frames and the JSON Lines file.
    assert list(processed.columns) == list(df.columns)
    assert processed["AvgValue"].tolist() == pytest.approx(df["AvgValue"].tolist())
    assert list(raw.columns) == ["Annotation", "Value", "Metric", "Kernel", "GPU", "Host",
                                 "ComputeClock", "MemoryClock", "Unit", "n"]
    assert len(raw) == 5
    assert raw["Value"].tolist() == pytest.approx(result.raw_dataframe()["Value"].tolist())
    assert "MedianValue" in result.to_dataframe(extra=True).columns
    jsonl = (tmp_path / "out" / "r1_rangeprof-bench-0.jsonl").read_text().splitlines()
    assert sum('"type": "run"' in line for line in jsonl) == 5


def test_the_raw_frame_is_made_when_first_asked_for_as_it_was_at_the_call(fake):
    """raw_dataframe() is made at its first call (most scripts never ask for it): the
    frame of the call's runs whatever came after (another call, a pickle), the same
    object at every call."""
    import pickle
    bench, _ = vadd(fake, [4096, 1048576], runs=5, metrics=[TIME, READ])
    result = bench()
    kept = pickle.loads(pickle.dumps(result))
    bench()
    raw = result.raw_dataframe()
    assert raw is result.raw_dataframe()
    pd.testing.assert_frame_equal(raw, kept.raw_dataframe())
    assert len(raw) == 2 * 5 * 2 and list(raw["Metric"][:4]) == [TIME, READ, TIME, READ]
    first = recorded_launches("vadd.jsonl", "vadd n=4096")[0][:5]
    times = raw[(raw["Metric"] == TIME) & (raw["n"] == 4096)]
    assert times["Value"].tolist() == values(first) and times["Run"].tolist() == list(range(5))


# --- Nsight Python's rules for configs --------------------------------------------------

def _decorated(fake, **kw):
    fake.use("clocks.jsonl")

    @rangeprof.analyze.kernel(verbosity=SILENT, **kw)
    def bench(n, dtype="fp32", *, scale=1):
        bench.seen.append((n, dtype, scale))
        with rangeprof.annotate("x"):
            pass
    bench.seen = []
    return bench


def test_configs_pad_defaults_and_bind_keyword_only_parameters(fake):
    bench = _decorated(fake, configs=[(1,), (2,)])
    df = bench().to_dataframe(extra=True)
    assert bench.seen == [(1, "fp32", 1), (2, "fp32", 1)]
    assert df[["n", "dtype", "scale"]].values.tolist() == [[1, "fp32", 1], [2, "fp32", 1]]
    bench = _decorated(fake)
    bench(3, "fp16", 2)
    assert bench.seen == [(3, "fp16", 2)]
    bench.seen.clear()
    bench(configs=[(4, "fp16", 3)])
    assert bench.seen == [(4, "fp16", 3)]


def test_generator_configs_serve_every_call(fake):
    bench = _decorated(fake, configs=((n,) for n in (1, 2)))
    bench()
    bench()
    assert [s[0] for s in bench.seen] == [1, 2, 1, 2]


@pytest.mark.parametrize("decorator,call,message", [
    (None, {}, "You have provided no configs. Provide configs at decoration time or at runtime."),
    ([], {}, "configs cannot be empty"),
    ([(1,)], dict(configs=[(2,)]), "You have provided configs at decoration time and at runtime"),
    ([(1,), (2, "a"), (3,)], {}, r"All configs must have the same number of arguments. Found lengths: \[1, 2, 1\]"),
    ([(1, "a", 2, 3)], {}, "Configs have 4 arguments, but function expects between 1 and 3"),
])
def test_config_errors_are_nsight_pythons(fake, decorator, call, message):
    bench = _decorated(fake, configs=decorator)
    with pytest.raises(ConfigError, match=message):
        bench(**call)
    assert not any(line.startswith("rangeprof_annotation") for line in fake.log())


def test_keyword_arguments_at_the_call_are_refused(fake):
    bench = _decorated(fake)
    with pytest.raises(rangeprof.exceptions.ProfilerException,
                       match=r"Keyword arguments are not supported yet: \['dtype'\]"):
        bench(1, dtype="fp16")


def test_decorator_without_parentheses_and_no_parameters(fake):
    fake.use("clocks.jsonl")

    @rangeprof.analyze.kernel
    def bench():
        with rangeprof.annotate("x"):
            pass

    df = bench().to_dataframe(extra=True)
    assert df["NumRuns"].tolist() == [1], "Nsight Python's default: runs=1"
    assert list(df.columns[:3]) == ["Annotation", "Metric", "AvgValue"]


# --- Nsight Python's custom information collectors -----------------------------------------

def test_info_collectors_of_every_scope_become_columns(fake):
    """Nsight Python's example 13: once, config, run and annotation collectors; numeric
    ones of config, run and annotation scope aggregated as _Avg, _Std, _Min, _Max."""
    fake.use("matmul.jsonl")
    counter = {"run": 0, "annotation": 0}

    @nsight_collect(scope=rangeprof.CollectionScope.ONCE)
    def driver_version():
        return "580.159.04"

    @nsight_collect(scope="config")
    def matrix_elements(n, dtype):
        return n * n

    @nsight_collect(scope=rangeprof.CollectionScope.RUN)
    def run_counter(*config):
        counter["run"] += 1
        return counter["run"]

    @nsight_collect(scope=rangeprof.CollectionScope.ANNOTATION)
    def ann_info(annotation_name, *config):
        return f"{annotation_name}_n{config[0]}"

    def exec_order(annotation_name, n):
        counter["annotation"] += 1
        return counter["annotation"]

    @rangeprof.analyze.kernel(configs=[(1024, "fp32"), (2048, "fp32")], runs=3,
                              replay_runs=False, verbosity=SILENT,
                              info_collectors=[driver_version, matrix_elements, run_counter,
                                               ann_info, ("exec_order", exec_order, "annotation")])
    def bench(n, dtype):
        fake.set("RANGEPROF_FAKE_RANGE", f"matmul n={n} dtype={dtype}")
        with rangeprof.annotate("matmul"):
            pass

    df = bench().to_dataframe(extra=True)
    columns = list(df.columns)
    unit = columns.index("Unit")
    assert columns[unit + 1:columns.index("CI95_Lower")] == [
        "driver_version", "matrix_elements_Avg", "matrix_elements_Std", "matrix_elements_Min",
        "matrix_elements_Max", "run_counter_Avg", "run_counter_Std", "run_counter_Min",
        "run_counter_Max", "ann_info", "exec_order_Avg", "exec_order_Std", "exec_order_Min",
        "exec_order_Max"]
    assert df["driver_version"].tolist() == ["580.159.04"] * 2
    assert df["matrix_elements_Avg"].tolist() == [1024 ** 2, 2048 ** 2]
    assert df["matrix_elements_Std"].tolist() == [0, 0]
    # One run value per call: calls 1-3 for the first config, 4-6 for the second.
    assert df["run_counter_Avg"].tolist() == [2, 5]
    assert df[["run_counter_Min", "run_counter_Max"]].values.tolist() == [[1, 3], [4, 6]]
    assert df["run_counter_Std"].tolist() == pytest.approx([1, 1])
    assert df["ann_info"].tolist() == ["matmul_n1024", "matmul_n2048"]
    assert df["exec_order_Avg"].tolist() == [2, 5]


def test_a_failing_collector_gives_none_and_one_warning(fake):
    fake.use("clocks.jsonl")

    def broken(*config):
        raise OSError("nvidia-smi not found")

    @rangeprof.analyze.kernel(configs=[1, 2], runs=5, verbosity=SILENT,
                              info_collectors=[("gpu_temp_c", broken, "run")])
    def bench(n):
        with rangeprof.annotate("x"):
            pass

    with pytest.warns(RuntimeWarning, match=r"Info collector 'gpu_temp_c' \(run scope\) raised "
                      r"OSError: nvidia-smi not found") as record:
        result = bench()
    assert sum("gpu_temp_c" in str(w.message) for w in record) == 1
    df = result.to_dataframe(extra=True)
    assert df["gpu_temp_c"].isna().all() and "gpu_temp_c_Avg" not in df.columns
    assert result.raw_dataframe()["gpu_temp_c"].isna().all()


def test_collector_names_may_not_shadow_parameters(fake):
    @nsight_collect(scope="config")
    def n(n):
        return n

    with pytest.raises(rangeprof.exceptions.ProfilerException,
                       match="Info collector name 'n' collides with a parameter of 'bench'"):
        @rangeprof.analyze.kernel(configs=[1], info_collectors=[n])
        def bench(n):
            pass


def test_a_calls_runs_are_read_at_its_end_not_across_the_decorated_functions_code(fake):
    # Read at each annotation's end, the runs would live across the function's next
    # config, where Python's collector promotes them (a full collection later: 74-83 ms
    # in a process holding torch). They stay the capture's text until the call's end.
    from rangeprof import annotation

    fake.use("vadd.jsonl")
    seen = []

    @rangeprof.analyze.kernel(configs=[4096, 1048576], runs=5, verbosity=SILENT)
    def bench(n):
        m = annotation._measurement
        seen.append([kind for call in m.calls[:-1] for kind, _ in call.stream])
        fake.set("RANGEPROF_FAKE_RANGE", f"vadd n={n}")
        with rangeprof.annotate("vadd"):
            pass

    df = bench().to_dataframe()
    assert seen[0] == []
    assert "text" in seen[1] and "records" not in seen[1], seen[1]
    assert list(df["NumRuns"]) == [5, 5], "read at the end, every run is there"


def test_the_collector_is_paused_while_rangeprof_reads_and_as_the_user_left_it_after(fake):
    import gc

    states = {}

    def tflops(time_ns, n):
        states["derive_metric"] = gc.isenabled()
        return time_ns

    fake.use("vadd.jsonl")

    @rangeprof.analyze.kernel(configs=[4096], runs=5, verbosity=SILENT, derive_metric=tflops)
    def bench(n):
        states["function"] = gc.isenabled()
        fake.set("RANGEPROF_FAKE_RANGE", f"vadd n={n}")
        with rangeprof.annotate("vadd"):
            pass

    was = gc.isenabled()
    try:
        gc.enable()
        bench()
        assert states == {"function": True, "derive_metric": False}
        assert gc.isenabled(), "enabled again after the call"
        gc.disable()
        bench()
        assert not gc.isenabled(), "a collector the user turned off stays off"
    finally:
        (gc.enable if was else gc.disable)()
