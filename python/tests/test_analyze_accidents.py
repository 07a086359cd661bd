"""Bad input and accidents in rangeprof.analyze.kernel and rangeprof.annotate, against the
stand-in control library: each gives a clear exception or warning, closes every
annotation and the capture, and leaves the process ready for the next call - which is
made, and checked, after each one."""
import os
import re
import statistics

import pytest

pytest.importorskip("pandas")

import rangeprof  # noqa: E402
from rangeprof import analyze  # noqa: E402
from rangeprof.exceptions import (MeasurementError, NestedAnnotationError,  # noqa: E402
                                  NothingMeasured, RangeprofWarning, Unavailable)

from fake_control.harness import fake, fake_path, recorded_launches  # noqa: E402,F401

pytestmark = pytest.mark.filterwarnings("ignore::rangeprof.exceptions.RangeprofWarning")

SILENT = analyze.VerbosityLevel.SILENT
TIME = "gpu__time_duration.sum"


def assert_clean(fake):
    """Nothing left open, the capture ended after the last begin, and a next call works."""
    log = fake.log()
    assert fake.open_annotations() == 0
    begins = [i for i, line in enumerate(log) if line.startswith("rangeprof_capture_begin")]
    if begins:
        assert "rangeprof_capture_end" in log[begins[-1]:]
    fake.use("clocks.jsonl")
    fake.set("RANGEPROF_FAKE_EPOCH", os.environ["RANGEPROF_FAKE_EPOCH"] + " (after)")

    @rangeprof.analyze.kernel(runs=5, verbosity=SILENT)
    def next_call():
        with rangeprof.annotate("next"):
            pass

    df = next_call().to_dataframe(extra=True)
    assert df["NumRuns"].tolist() == [5]
    assert df["AvgValue"].iloc[0] == pytest.approx(statistics.mean(
        r["metrics"][TIME] for r in recorded_launches("clocks.jsonl")[0]))


def test_a_metric_the_gpu_lacks_raises_the_librarys_message(fake):
    fake.use("vadd.jsonl")

    @rangeprof.analyze.kernel(configs=[1, 2], metrics=[TIME, "sm__no_such_metric.sum"],
                              verbosity=SILENT)
    def bench(n):
        bench.calls += 1
        with rangeprof.annotate("vadd"):
            pass
    bench.calls = 0

    with pytest.raises(MeasurementError, match=r"unknown metric 'sm__no_such_metric.sum' for "
                       r"this device .*measuring nothing on device 0 \(NVIDIA H200\)"):
        bench()
    assert bench.calls == 1, "the measurement stops at the config that failed"
    assert_clean(fake)


def test_an_annotation_nested_in_itself_is_a_value_error(fake):
    fake.use("clocks.jsonl")

    @rangeprof.analyze.kernel(verbosity=SILENT)
    def bench():
        with rangeprof.annotate("loop"):
            with rangeprof.annotate("loop"):
                pass

    with pytest.raises(NestedAnnotationError, match="annotation 'loop' is already open") as e:
        bench()
    assert isinstance(e.value, ValueError)
    assert_clean(fake)


def test_nesting_in_an_annotation_opened_outside_leaves_that_one_open(fake):
    fake.use("clocks.jsonl")

    @rangeprof.analyze.kernel(verbosity=SILENT)
    def bench():
        with rangeprof.annotate("outer"):
            pass

    with rangeprof.annotate("outer"):
        with pytest.raises(ValueError, match="'outer' is already open"):
            bench()
        assert fake.open_annotations() == 1, "the caller's annotation stays open"
    assert_clean(fake)


def test_a_function_that_launches_no_kernel(fake):
    fake.use("clocks.jsonl")

    @rangeprof.analyze.kernel(configs=[1, 2], verbosity=SILENT)
    def bench(n):
        with rangeprof.annotate("busy"):
            pass
        fake.set("RANGEPROF_FAKE_LAUNCHES", 0 if n == 2 else 1)
        with rangeprof.annotate("idle"):
            pass
        fake.set("RANGEPROF_FAKE_LAUNCHES", None)

    with pytest.warns(RangeprofWarning, match=r"annotation 'idle' measured no kernel in "
                      r"bench\(n=2\)") as record:
        df = bench().to_dataframe(extra=True)
    assert not any("bench(n=1)" in str(w.message) for w in record)
    assert df[["Annotation", "n"]].values.tolist() == [["busy", 1], ["busy", 2], ["idle", 1]]
    assert_clean(fake)


def test_nothing_measured_at_all_raises_with_the_nvtx_hint(fake):
    fake.use("clocks.jsonl", launches=0)
    fake.set("RANGEPROF_FAKE_NVTX_MODULES", 0)

    @rangeprof.analyze.kernel(configs=[7], verbosity=SILENT)
    def bench(n):
        with rangeprof.annotate("idle"):
            pass

    with pytest.raises(NothingMeasured, match=r"annotation 'idle' measured no kernel in "
                       r"bench\(n=7\).*NVTX copies that initialised before 'import rangeprof' "
                       r"stay invisible.*rangeprof.annotate always works"):
        bench()
    fake.set("RANGEPROF_FAKE_NVTX_MODULES", 1)
    with pytest.raises(NothingMeasured) as e:
        bench()
    assert "NVTX" not in str(e.value), "the hint only where the library sees no NVTX module"
    fake.set("RANGEPROF_FAKE_LAUNCHES", None)
    assert_clean(fake)


def test_a_function_that_enters_no_annotation(fake):
    fake.use("clocks.jsonl")

    @rangeprof.analyze.kernel(verbosity=SILENT)
    def bench():
        pass

    with pytest.raises(NothingMeasured, match=r"bench\(\) entered no rangeprof.annotate range"):
        bench()
    assert_clean(fake)


def test_a_kernel_that_cannot_be_replayed_is_a_warning_naming_it(fake):
    fake.use("clocks.jsonl")
    kernel = recorded_launches("clocks.jsonl")[0][0]["kernel"]

    @rangeprof.analyze.kernel(verbosity=SILENT)
    def bench():
        with rangeprof.annotate("fine"):
            pass
        fake.set("RANGEPROF_FAKE_NOT_REPLAYED", 1)
        with rangeprof.annotate("outside"):
            pass
        fake.set("RANGEPROF_FAKE_NOT_REPLAYED", None)

    with pytest.warns(RangeprofWarning) as record:
        df = bench().to_dataframe(extra=True)
    messages = [str(w.message) for w in record]
    assert any(m.startswith(f"rangeprof: warning: {kernel} wrote outside the memory")
               and "is not measured" in m for m in messages), messages
    assert any("annotation 'outside' measured no kernel" in m for m in messages), messages
    assert df["Annotation"].tolist() == ["fine"]
    assert_clean(fake)


def test_a_recorded_warning_reaches_python_naming_its_kernel(fake):
    fake.use("fusion.jsonl", range="fma variant=unfused n=16777216")
    mul = recorded_launches("fusion.jsonl", "fma variant=unfused n=16777216")[0][0]["kernel"]

    @rangeprof.analyze.kernel(verbosity=SILENT)
    def bench():
        with rangeprof.annotate("mul"):
            pass

    with pytest.warns(RangeprofWarning, match="full checkpoint") as record:
        bench()
    assert any(mul in str(w.message) for w in record)


class Boom(Exception):
    pass


@pytest.mark.parametrize("exc", [Boom("inside"), KeyboardInterrupt()])
def test_an_exception_inside_propagates_and_everything_closes(fake, exc):
    fake.use("clocks.jsonl")

    @rangeprof.analyze.kernel(configs=[1, 2, 3], verbosity=SILENT)
    def bench(n):
        with rangeprof.annotate("a"):
            if n == 2:
                with rangeprof.annotate("b"):
                    raise exc

    with pytest.raises(type(exc)) as e:
        bench()
    assert e.value is exc, "the very exception, unchanged"
    log = fake.log()
    assert "rangeprof_annotation_end b -> 0" in log and log.count("rangeprof_annotation_end a -> 0") == 2
    assert_clean(fake)


def test_a_keyboard_interrupt_between_annotations_calls_closes_what_is_open(fake, monkeypatch):
    """The interrupt lands right after the library opened an annotation, before Python
    knew: the measurement's cleanup closes it."""
    fake.use("clocks.jsonl")
    lib = rangeprof._control.current().library
    real = lib.annotation_begin

    def interrupted(name):
        real(name)
        raise KeyboardInterrupt

    @rangeprof.analyze.kernel(verbosity=SILENT)
    def bench():
        with rangeprof.annotate("a"):
            pass

    monkeypatch.setattr(lib, "annotation_begin", interrupted)
    with pytest.raises(KeyboardInterrupt):
        bench()
    monkeypatch.setattr(lib, "annotation_begin", real)
    assert "rangeprof_annotation_end a -> 0" in fake.log()
    assert_clean(fake)


def test_a_keyboard_interrupt_as_an_annotation_opens_outside_analyze(fake, monkeypatch):
    fake.use("clocks.jsonl")
    lib = rangeprof._control.current().library
    real = lib.annotation_begin

    def interrupted(name):
        real(name)
        raise KeyboardInterrupt

    monkeypatch.setattr(lib, "annotation_begin", interrupted)
    with pytest.raises(KeyboardInterrupt):
        with rangeprof.annotate("plain"):
            pass
    monkeypatch.setattr(lib, "annotation_begin", real)
    assert fake.open_annotations() == 0
    with rangeprof.annotate("plain"):
        pass
    assert_clean(fake)


def test_without_a_gpu_driver_analyze_says_so(fake, monkeypatch):
    monkeypatch.setattr(analyze, "_cuda_driver_loadable", lambda: False)
    fake.use("clocks.jsonl")

    @rangeprof.analyze.kernel(verbosity=SILENT)
    def bench():
        bench.called = True
    bench.called = False

    with pytest.raises(Unavailable, match=r"no NVIDIA driver \(libcuda.so.1 cannot be loaded\)"):
        bench()
    assert not bench.called


def test_analyze_calls_cannot_nest(fake):
    fake.use("clocks.jsonl")

    @rangeprof.analyze.kernel(verbosity=SILENT)
    def inner():
        with rangeprof.annotate("i"):
            pass

    @rangeprof.analyze.kernel(verbosity=SILENT)
    def outer():
        inner()

    with pytest.raises(RuntimeError, match="another rangeprof.analyze.kernel call is under way"):
        outer()
    assert_clean(fake)


def test_replay_mode_range_where_the_library_refuses_it(fake):
    fake.use("clocks.jsonl")
    fake.set("RANGEPROF_FAKE_REFUSE", "replay-mode")  # a library older than the option

    @rangeprof.analyze.kernel(replay_mode="range", verbosity=SILENT)
    def bench():
        with rangeprof.annotate("r"):
            pass

    with pytest.raises(NotImplementedError, match=r"replay_mode='range'.*option 'replay-mode' "
                       r"is unknown.*accepted: 'kernel'"):
        bench()
    assert_clean(fake)


def test_replay_mode_range_where_the_library_accepts_it(fake):
    fake.use("clocks.jsonl")
    fake.set("RANGEPROF_FAKE_ACCEPT", "replay-mode")

    @rangeprof.analyze.kernel(replay_mode="range", verbosity=SILENT)
    def ranged():
        with rangeprof.annotate("r"):
            pass

    @rangeprof.analyze.kernel(verbosity=SILENT)
    def kernels():
        with rangeprof.annotate("k"):
            pass

    assert len(ranged().to_dataframe(extra=True)) == 1
    assert ("replay-mode", "range") in fake.options()
    kernels()
    assert fake.options().count(("replay-mode", "kernel")) == 1, "set back for the next call"


@pytest.mark.parametrize("kw,error,message", [
    (dict(runs=0), ValueError, r"runs=0: expected a whole number from 1 to 100000"),
    (dict(runs=-3), ValueError, r"runs=-3"),
    (dict(runs=2.5), TypeError, r"runs=2.5: expected a whole number"),
    (dict(runs=True), TypeError, r"runs=True"),
    (dict(runs="auto", replay_runs=False), ValueError, r"runs='auto' needs replay_runs=True"),
    (dict(replay_runs="yes"), TypeError, r"replay_runs='yes'"),
    (dict(cache_control="some"), ValueError, r"cache_control='some': expected one of 'all', 'none'"),
    (dict(clock_control="boost"), ValueError, r"clock_control='boost': expected one of 'none', 'base'"),
    (dict(thermal_mode="on"), ValueError, r"thermal_mode='on': expected one of 'auto', 'manual', 'off'"),
    (dict(replay_mode="app"), ValueError, r"replay_mode='app': expected one of 'kernel', 'range'"),
    (dict(metrics=[]), ValueError, r"metrics=\[\]: expected one or more metric names"),
    (dict(metrics=["a,b"]), ValueError, r"without commas"),
    (dict(metrics=[TIME, TIME]), ValueError, r"named twice"),
    (dict(metrics=[3]), TypeError, r"3 is not a metric name"),
    (dict(configs=5), TypeError, r"configs=5: expected an iterable of configurations"),
    (dict(configs="abc"), TypeError, r"configs='abc'"),
    (dict(thermal_wait=20, thermal_cont=20), ValueError, r"thermal_cont \(20°C\) must be greater "
                                                         r"than thermal_wait \(20°C\)"),
    (dict(thermal_wait=200), ValueError, r"thermal_wait=200: expected degrees C of headroom from 0 to 100"),
    (dict(thermal_cont="hot"), TypeError, r"thermal_cont='hot'"),
    (dict(thermal_timeout=-1), ValueError, r"thermal_timeout=-1: expected seconds from 0 to 3600"),
    (dict(thermal_device=-1), ValueError, r"thermal_device=-1"),
    (dict(combine_kernel_metrics=lambda x: x), TypeError, r"combine_kernel_metrics must take two values"),
    (dict(combine_kernel_metrics="sum"), TypeError, r"combine_kernel_metrics must be a function"),
    (dict(derive_metric=3), TypeError, r"derive_metric must be a callable"),
    (dict(ignore_kernel_list=5), TypeError, r"ignore_kernel_list=5"),
    (dict(normalize_against=1), TypeError, r"normalize_against=1"),
    (dict(verbosity="loud"), ValueError, r"verbosity='loud': expected one of SILENT, INFO, DEBUG"),
    (dict(info_collectors=[lambda: 1]), ValueError, r"missing @nsight.experimental.collect"),
    (dict(info_collectors=[("x", len, "sometimes")]), ValueError, r"Invalid scope 'sometimes' for 'x'"),
    (dict(info_collectors=[("GPU", len, "once")]), rangeprof.exceptions.ProfilerException,
     r"'GPU' collides with a reserved profiler column"),
])
def test_bad_arguments_name_the_value_and_what_is_accepted(fake, kw, error, message):
    with pytest.raises(error, match=message):
        @rangeprof.analyze.kernel(**kw)
        def bench(n):
            pass
    assert not any(line.startswith("rangeprof_set_option") for line in fake.log())


def test_a_positional_argument_to_the_decorator_factory(fake):
    with pytest.raises(TypeError, match=r"takes its settings as keywords"):
        rangeprof.analyze.kernel([(1,), (2,)])


@pytest.mark.parametrize("name,error", [(3, TypeError), ("", ValueError), ("a\0b", ValueError)])
def test_bad_annotation_names(fake, name, error):
    with pytest.raises(error, match="annotate"):
        rangeprof.annotate(name)


def test_a_capture_line_the_reader_refuses_is_named_not_skipped_silently():
    """The capture is read by rangeprof.records, the reader load() and the report use: a
    run record with a string for its number is refused with the same reason there, and
    analyze says so (it used to drop any line json.loads could not read, and keep one it
    could, whatever its members held)."""
    from rangeprof import _results, records
    from rangeprof.exceptions import RangeprofWarning
    good = [line for line in open(os.path.join(os.path.dirname(__file__), "fixtures",
                                               "recorded", "vadd.jsonl"))
            if line.startswith('{"type":"run"')][0]
    bad = good.replace('"runs":20', '"runs":"twenty"', 1)
    assert records.parse_line(bad)[0] is None
    why = records.parse_line(bad)[1]
    with pytest.warns(RangeprofWarning, match=r"line 2 was skipped: " + re.escape(why)):
        got = _results.parse_lines(good + bad)
    assert [r["type"] for r in got] == ["run"]


@pytest.mark.parametrize("edit", [
    lambda rec: rec.update(pid=[rec["pid"]]),        # a session the reader refuses
    lambda rec: rec.update(schema=99),               # written by a newer rangeprof
    lambda rec: rec.update(type="sessoin"),          # no record type the reader knows
])
def test_a_capture_line_returned_with_a_reason_is_named_not_kept(edit):
    """records.parse_line gives some lines back with a reason (a session it cannot use, a
    newer schema, an unknown type): records.Reader leaves them out as bad lines, and so
    does analyze's capture reader, saying so (it used to keep them without a word)."""
    import json
    from rangeprof import _results, records
    from rangeprof.exceptions import RangeprofWarning
    lines = open(os.path.join(os.path.dirname(__file__), "fixtures", "recorded",
                              "vadd.jsonl")).read().splitlines(keepends=True)
    rec = json.loads(lines[0])
    assert rec["type"] == "session"
    edit(rec)
    bad = json.dumps(rec) + "\n"
    got, why = records.parse_line(bad)
    assert got is not None and why is not None
    with pytest.warns(RangeprofWarning, match=r"line 1 was skipped: " + re.escape(why)):
        kept = _results.parse_lines(bad + lines[1])
    assert [r["type"] for r in kept] == ["device"]


def test_the_geomean_column_and_the_plots_bar_are_one_rule():
    """Nsight Python's exp(mean(log)): a zero gives 0, a negative NaN, NaN values are
    dropped - the Geomean column and analyze.plot's bar (which used to call a zero NaN and
    leave the bar out) both come from _results.geomean."""
    import math
    from rangeprof import _plot, _results
    assert _plot.geomean is _results.geomean
    assert _results.geomean([2.0, 8.0]) == pytest.approx(4.0)
    assert _results.geomean([0.0, 8.0]) == 0.0
    assert math.isnan(_results.geomean([-1.0, 8.0]))
    assert _results.geomean([float("nan"), 4.0, None]) == pytest.approx(4.0)
    assert math.isnan(_results.geomean([]))
