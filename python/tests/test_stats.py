"""Statistics checked against independent computations: the statistics module, a printed
t-table, and scipy where installed, on the recorded runs."""
import json
import math
import statistics

import pytest

from rangeprof import records, stats

# t(0.975, df) from a printed table (e.g. NIST/SEMATECH e-Handbook, 1.3.6.7.2).
PRINTED_T975 = {1: 12.706, 2: 4.303, 4: 2.776, 9: 2.262, 19: 2.093, 29: 2.045, 40: 2.021,
                60: 2.000, 100: 1.984}


@pytest.mark.parametrize("df,t", sorted(PRINTED_T975.items()))
def test_t975_matches_printed_table(df, t):
    assert stats.t975(df) == pytest.approx(t, abs=6e-4)


def test_t_distribution_matches_scipy():
    scipy_stats = pytest.importorskip("scipy.stats")
    for df in (1, 3, 7.5, 19, 45.2, 200):
        assert stats.t_quantile(0.975, df) == pytest.approx(scipy_stats.t.ppf(0.975, df), rel=1e-4)
        for t in (0.3, 1.7, 2.5, 6.0):
            assert stats.t_sf_two_sided(t, df) == pytest.approx(2 * scipy_stats.t.sf(t, df), rel=1e-6)


def _recorded_groups(path):
    recs = records.read(path, report=None)
    groups = {}
    for run in recs.runs:
        for metric, v in run.record["metrics"].items():
            if v is not None:
                groups.setdefault((run.launch_id, metric), []).append(v)
    return groups


def test_summary_statistics_match_the_statistics_module(recorded):
    for values in _recorded_groups(recorded("vadd.jsonl")).values():
        s = stats.summarize(values)
        assert s["n"] == len(values)
        assert s["mean"] == pytest.approx(statistics.fmean(values), rel=1e-12)
        assert s["median"] == statistics.median(values)
        if len(values) > 1:
            sd = statistics.stdev(values)
            assert s["stddev"] == pytest.approx(sd, rel=1e-9, abs=1e-12)
            half = PRINTED_T975.get(len(values) - 1, stats.t975(len(values) - 1)) * sd / math.sqrt(len(values))
            assert s["ci95_high"] - s["mean"] == pytest.approx(half, rel=1e-3, abs=1e-9)


def test_welch_matches_scipy_on_recorded_runs(recorded):
    scipy_stats = pytest.importorskip("scipy.stats")
    a, b = _recorded_groups(recorded("vadd.jsonl")), _recorded_groups(recorded("vadd_cache_none.jsonl"))
    a_by = {}
    for (_, metric), v in a.items():
        a_by.setdefault(metric, []).extend(v)
    b_by = {}
    for (_, metric), v in b.items():
        b_by.setdefault(metric, []).extend(v)
    checked = 0
    for metric in set(a_by) & set(b_by):
        x, y = a_by[metric], b_by[metric]
        if statistics.pvariance(x) == 0 or statistics.pvariance(y) == 0:
            continue
        ours = stats.welch(x, y)
        ref = scipy_stats.ttest_ind(y, x, equal_var=False)
        assert ours["t"] == pytest.approx(ref.statistic, rel=1e-9)
        assert ours["p"] == pytest.approx(ref.pvalue, rel=1e-5, abs=1e-300)
        checked += 1
    assert checked


def test_stable_requires_five_runs_low_rsd_and_steady_clock(recorded):
    recs = records.read(recorded("vadd.jsonl"), report=None)
    runs = [r for r in recs.runs][:5]
    values = [r.record["metrics"]["gpu__time_duration.sum"] for r in runs]
    clocks = [r.record["sm_clock_hz"] for r in runs]
    assert stats.summarize(values[:4], clocks[:4])["stable"] is False
    assert stats.summarize(values[:1])["stable"] is None
    spread = [c * (1 + 0.06 * i) for i, c in enumerate(clocks)]
    assert any("sm clock" in r for r in stats.summarize(values, spread)["reasons"])


def test_an_unknown_clock_is_not_a_failure_as_in_the_summary_record():
    """As collector/stats.c: clocks NVML could not give (MIG, no libnvidia-ml) are
    unknown, not a reason; the spread is checked over the known ones."""
    values = [100, 100.5, 99.5, 100.2, 99.8]
    s = stats.summarize(values, [None, float("nan"), None, None, None])
    assert s["stable"] is True and s["reasons"] == []
    s = stats.summarize(values, [1.98e9, None, 1.5e9, float("nan"), 1.98e9])
    assert s["stable"] is False
    assert s["reasons"] == ["sm clock varied 32.0 % > 5 %"]
    assert stats.summarize(values, [1.98e9, None, 1.97e9, None, 1.98e9])["stable"] is True


def test_throttle_reasons_make_a_group_unstable_as_the_summary_record_says():
    """The same rule and text as collector/stats.c's stats_check_throttle."""
    values = [100, 100.5, 99.5, 100.2, 99.8]
    clocks = [1.98e9] * 5
    calm = [["gpu_idle"], [], None, ["applications_clocks_setting"], []]
    assert stats.summarize(values, clocks, calm)["stable"] is True
    hot = [[], "gpu_idle,sw_thermal_slowdown", [], "sw_power_cap", ["sw_thermal_slowdown"]]
    s = stats.summarize(values, clocks, hot)
    assert s["stable"] is False
    assert s["reasons"] == ["throttled in 3 of 5 runs: sw_power_cap, sw_thermal_slowdown"]
    assert stats.throttle_names(None) is None and stats.throttle_names(float("nan")) is None
    assert stats.throttle_names("") == []


# The drift condition, on the series of tests/unit/collector/stats_test.c: the same
# deterministic noise (a linear congruential generator, uniform in [-1.5, 1.5] around 100:
# RSD ~0.9 %), so that the verdicts agree with the C code's and do not depend on luck.
def _noisy_series(n, per_run):
    x, out = 1, []
    for i in range(n):
        x = (1664525 * x + 1013904223) % 2 ** 32
        out.append(100 + per_run * i + 1.5 * (x / 2147483648.0 - 1))
    return out


def test_steady_noise_is_not_drift():
    s = stats.summarize(_noisy_series(200, 0))
    assert 0.5 < s["rsd_pct"] < 1.5
    assert abs(s["drift_pct"]) < 0.5
    assert s["stable"] is True and s["reasons"] == []


def test_a_linear_drift_under_the_rsd_bound_is_not_stable():
    values = _noisy_series(200, 0.03)  # 5.97 over the runs, 5.80 % of the mean
    total_pct = 100 * 0.03 * 199 / (100 + 0.03 * 199 / 2)
    s = stats.summarize(values)
    assert s["rsd_pct"] < 2, "the RSD condition alone would pass it"
    assert s["drift_pct"] == pytest.approx(total_pct, abs=0.5)
    # The least-squares figure as before the thirds' condition was added.
    assert s["drift_pct"] == pytest.approx(5.801589394247308, rel=1e-12)
    assert s["stable"] is False
    assert s["reasons"] == ["drifted +5.8 % over 200 runs"]
    down = stats.summarize(values[::-1])
    assert down["drift_pct"] == pytest.approx(-total_pct, abs=0.5)
    assert down["reasons"] == ["drifted -5.8 % over 200 runs"]


def test_a_step_halfway_is_drift():
    s = stats.summarize([100.0] * 100 + [103.0] * 100)
    slope = 3 * 5000 / (200 * (200 ** 2 - 1) / 12)
    assert s["rsd_pct"] < 2
    assert s["drift_pct"] == pytest.approx(100 * slope * 199 / 101.5, rel=1e-12)
    assert s["stable"] is False
    assert s["reasons"] == ["drifted +4.4 % over 200 runs"]


def _steady(n, level=100.0):
    """n runs at level with a deterministic +-0.2 alternation (the C test's noise)."""
    return [level + (0.2 if i % 2 else -0.2) for i in range(n)]


@pytest.mark.parametrize("first", [(105.0, 105.0), (105.0, 104.0)])
def test_two_slow_first_runs_are_not_drift(first):
    """Two slow first runs of 20 (+5 %; 105, 104 is the series of stats_test.c), then 18
    steady ones: the least-squares slope alone is significant and below -2 %, but the
    first and last thirds' medians (k = 6) agree, so it is no drift."""
    values = list(first) + _steady(20)[2:]
    mean = math.fsum(values) / 20
    pct, significant = stats.trend(values, mean)
    assert significant and pct < -2, "the slope alone would call it drift"
    assert stats.drift(values, mean) == (pct, False)
    s = stats.summarize(values)
    assert s["drift_pct"] == pct
    assert s["stable"] is True and s["reasons"] == []


def test_a_warm_up_over_a_third_of_the_runs_is_drift():
    """8 % above, decaying with a time constant of 2 runs (stats_test.c): over 10 runs the
    first third's median is 104.9 against the last third's 100.1 - a drift."""
    values = [100 * (1 + 0.08 * math.exp(-i / 2)) for i in range(10)]
    s = stats.summarize(values)
    assert s["drift_pct"] == pytest.approx(-6.535, abs=1e-3)
    assert "drifted -6.5 % over 10 runs" in s["reasons"]


def test_a_warm_up_in_the_first_third_of_40_runs_is_not_drift():
    """The same warm-up over 40 runs: the slope is still significant (-2.66 %), but the
    first 13 runs' median is the 7th run's 100.40, 0.40 above the last 13's 100.00, under
    1 % of the mean, so the verdict is stable; the mean keeps the warm-up's 0.5 %."""
    values = [100 * (1 + 0.08 * math.exp(-i / 2)) for i in range(40)]
    mean = math.fsum(values) / 40
    pct, significant = stats.trend(values, mean)
    assert significant and pct == pytest.approx(-2.658, abs=1e-3)
    assert stats.drift(values, mean) == (pct, False)
    assert statistics.median(values[:13]) == pytest.approx(100.398, abs=1e-3)
    assert statistics.median(values[-13:]) == pytest.approx(100.0, abs=1e-5)
    s = stats.summarize(values)
    assert s["drift_pct"] == pct
    assert s["stable"] is True and s["reasons"] == []
    assert s["mean"] == pytest.approx(100.51, abs=0.01)


def test_the_thirds_must_move_the_way_the_slope_goes():
    """Three runs at 110 pull the slope down (-4.0 %, significant) while the medians of the
    thirds rise by 1.5 (98.5 -> 100): the two disagree, so it is no drift."""
    values = [110.0] * 3 + [98.5] * 7 + [100.0] * 20
    mean = math.fsum(values) / 30
    pct, significant = stats.trend(values, mean)
    assert significant and pct < -2
    assert statistics.median(values[-10:]) - statistics.median(values[:10]) > 0.01 * mean
    assert stats.drift(values, mean) == (pct, False)
    assert not any("drifted" in r for r in stats.summarize(values)["reasons"])


def test_a_negative_series_drifts_as_its_mirror_does():
    """The direction is the slope's, not drift_pct's: negated, the linear drift has b < 0,
    a negative mean and drift_pct > 0, and is still a drift."""
    values = [-v for v in _noisy_series(200, 0.03)]
    s = stats.summarize(values)
    assert s["drift_pct"] == pytest.approx(5.801589394247308, rel=1e-12)
    assert s["reasons"] == ["drifted +5.8 % over 200 runs"]


def test_drift_needs_ten_runs():
    line = [100 + 0.5 * i for i in range(10)]  # 4.4 % of the mean; residuals exactly 0
    short = stats.summarize(line[:9])
    assert math.isnan(short["drift_pct"])
    assert short["stable"] is True and short["reasons"] == []
    s = stats.summarize(line)
    assert s["drift_pct"] == pytest.approx(100 * 4.5 / 102.25, rel=1e-12)
    assert s["reasons"] == ["drifted +4.4 % over 10 runs"]


def test_a_constant_series_has_no_drift():
    s = stats.summarize([0.1] * 200)
    assert s["drift_pct"] == 0
    assert s["stable"] is True and s["reasons"] == []


def test_drift_is_nan_where_it_means_nothing():
    s = stats.summarize([-1, 1, -2, 2, -3, 3, -4, 4, -5, 5, -6, 6])  # mean 0
    assert math.isnan(s["drift_pct"])
    assert not any("drifted" in r for r in s["reasons"])


def test_runs_without_a_value_are_left_out_and_the_others_summarised_in_run_order():
    """A NaN, None or infinite sample (a run whose metric was not produced, null in its run
    record, or a derived value undefined for it) is left out: n counts the others, which
    are summarised in their run order, so a missing run neither spoils the statistics nor
    the verdict. collector/stats.c's summary leaves the same runs out (stats_test.c's
    a_run_without_a_value_is_left_out_of_the_summary and infinite_runs_are_left_out_like_nan
    assert the same figures; test_stats_c_agree.py compares the two on such run sets), so
    a table from run records agrees with the summary record here too."""
    # 11 runs rising by 1 on a mean of 6, and a NaN: n 11 and the drift of the 11, as if
    # the NaN were not there (10 from the first to the last, on a mean of 6).
    s = stats.summarize([1, 2, 3, 4, 5, 6, float("nan"), 7, 8, 9, 10, 11])
    assert s["n"] == 11 and s["mean"] == 6 and s["median"] == 6
    assert s["drift_pct"] == pytest.approx(100 * 10 / 6, rel=1e-12)
    assert s["reasons"][-1] == "drifted +166.7 % over 11 runs"
    # Steady runs and one missing: n 9, stable, nothing NaN.
    s = stats.summarize([5.0] * 9 + [None])
    assert s["n"] == 9 and s["mean"] == 5.0 and s["rsd_pct"] == 0
    assert s["stable"] is True and s["reasons"] == []
    # Infinite runs likewise.
    s = stats.summarize([math.inf] + [5.0] * 9 + [-math.inf])
    assert s["n"] == 9 and s["min"] == s["max"] == 5.0 and s["stable"] is True


def test_the_drift_agrees_with_numpy_polyfit():
    """An independent fit: numpy's least squares gives the same slope."""
    np = pytest.importorskip("numpy")
    values = _noisy_series(200, 0.03)
    slope = np.polyfit(np.arange(200), np.array(values), 1)[0]
    s = stats.summarize(values)
    assert s["drift_pct"] == pytest.approx(100 * slope * 199 / np.mean(values), rel=1e-9)


def test_the_trend_is_significant_where_scipy_linregress_says_so():
    """se(b) and the t threshold checked against scipy: on short noisy series with a
    slope, significant exactly when linregress's two-sided p < 0.05."""
    scipy_stats = pytest.importorskip("scipy.stats")
    checked = {True: 0, False: 0}
    for n in (10, 12, 20, 40):
        for per_run in (0.0, 0.05, 0.1, 0.2, 0.4):
            values = _noisy_series(n, per_run)
            mean = math.fsum(values) / n
            _, significant = stats.trend(values, mean)
            p = scipy_stats.linregress(range(n), values).pvalue
            if abs(p - 0.05) > 1e-3:
                assert significant == (p < 0.05), (n, per_run, p)
                checked[significant] += 1
    assert checked[True] and checked[False]


# Groups that pool launches (a table row of an Annotation and Kernel): the drift condition
# is each launch's, as in its 'summary' record, not the pooled samples'.
MEANS = [100.0, 100.6, 101.2, 101.8, 102.4]


def _launches(means, runs=10):
    values, launches, run = [], [], []
    for j, m in enumerate(means):
        values += _steady(runs, m)
        launches += [f"s#{j + 1}"] * runs
        run += list(range(runs))
    return values, launches, run


def _with_drifting_launch():
    values, launches, run = _launches(MEANS)
    drifting = [97 + 6 * i / 9 + d - 100 for i, d in enumerate(_steady(10))]  # +6 %, mean 100
    return values + drifting, launches + ["s#6"] * 10, run + list(range(10)), drifting


def test_steady_launches_whose_means_step_up_are_no_drift():
    values, launches, run = _launches(MEANS)
    pooled = stats.summarize(values)
    assert pooled["reasons"] == ["drifted +2.8 % over 50 runs"], "as one launch it drifts"
    s = stats.summarize(values, launches=launches, runs=run)
    assert s["stable"] is True and s["reasons"] == []
    # Each launch's figure (the +-0.2 alternation: 0.11 % of its mean), the largest one.
    assert s["drift_pct"] == pytest.approx(100 * (1 / 82.5) * 9 / 100, rel=1e-9)
    assert {k: s[k] for k in ("n", "mean", "rsd_pct")} == \
        {k: pooled[k] for k in ("n", "mean", "rsd_pct")}


def test_a_drifting_launch_fails_the_group_and_is_named():
    values, launches, run, drifting = _with_drifting_launch()
    pct, drifted = stats.drift(drifting, math.fsum(drifting) / 10)
    assert drifted and pct == pytest.approx(6.11, abs=0.01)
    s = stats.summarize(values, launches=launches, runs=run)
    assert s["stable"] is False
    assert s["drift_pct"] == pct
    assert s["reasons"] == ["drifted +6.1 % over 10 runs in launch s#6"]


def test_each_launch_in_run_order():
    """The samples of interleaved launches, given backwards: the run indexes put each
    launch back in order (without them the drift would read -6.1 %)."""
    values, launches, run, _ = _with_drifting_launch()
    order = list(range(len(values)))[::-1]
    order = order[0::2] + order[1::2]
    s = stats.summarize([values[i] for i in order], launches=[launches[i] for i in order],
                        runs=[run[i] for i in order])
    assert s["reasons"] == ["drifted +6.1 % over 10 runs in launch s#6"]
    backwards = stats.summarize(values[::-1], launches=launches[::-1])
    assert backwards["reasons"] == ["drifted -6.1 % over 10 runs in launch s#6"]


def test_one_launch_id_or_none_is_the_old_verdict():
    values = _noisy_series(200, 0.03)
    plain = stats.summarize(values)
    for ids in (["s#1"] * 200, [None] * 200, [float("nan")] * 200):
        assert stats.summarize(values, launches=ids) == plain
    with pytest.raises(ValueError):
        stats.summarize(values, launches=["s#1"] * 199)


def test_several_drifting_launches_name_the_largest():
    values, launches, run, drifting = _with_drifting_launch()
    values += [2 * v - 100 for v in drifting]  # +12 %
    launches += ["s#7"] * 10
    run += list(range(10))
    s = stats.summarize(values, launches=launches, runs=run)
    assert s["reasons"][-1] == \
        "drifted +12.2 % over 10 runs in launch s#7 (2 of 7 launches drifted)"


def test_bootstrap_gives_no_p_from_one_value():
    """One run against twenty (issue 38, finding 5): a single value resamples to itself,
    which made p = 0 for any difference; like Welch's test, no p below two values a side."""
    a = [100.0 + (i % 5) for i in range(20)]
    bs = stats.bootstrap_ratio(a, [110.0])
    assert bs["ratio"] == pytest.approx(110 / 102) and bs["p"] != bs["p"]
    assert bs["low"] != bs["low"] and bs["high"] != bs["high"]
    assert stats.welch(a, [110.0])["p"] != stats.welch(a, [110.0])["p"]
    assert stats.bootstrap_ratio(a, [110.0, 111.0])["p"] == stats.bootstrap_ratio(a, [110.0, 111.0])["p"]


def test_bootstrap_of_many_runs_is_fast():
    """Issue 38: --method bootstrap took 93 s on 200 000 runs (Python's random drew each
    of the 2000 resamples' values one by one). 2000 resamples of 20 000 values a side
    took 9 s of CPU; numpy draws them in a fraction of a second."""
    import random
    import time
    rnd = random.Random(1)
    a = [rnd.gauss(100, 5) for _ in range(20000)]
    b = [rnd.gauss(101, 5) for _ in range(20000)]
    begin = time.process_time()
    bs = stats.bootstrap_ratio(a, b)
    assert time.process_time() - begin < 3
    assert bs["low"] < bs["ratio"] < bs["high"] and bs["p"] < 0.01


def test_bootstrap_interval_is_the_resampling_distributions():
    """The percentile interval of resampling with replacement: on samples this size the
    mean's distribution is nearly normal, so the interval is the delta method's to a few
    per cent of its width (a resampling without replacement gives a zero width, one of
    a single side half the width); a null difference gets a large p, a clear one a
    small p; the same seed gives the same answer, another seed another one."""
    import random
    rnd = random.Random(7)
    a = [rnd.gauss(100, 5) for _ in range(400)]
    b = [rnd.gauss(100, 5) for _ in range(400)]
    bs = stats.bootstrap_ratio(a, b)
    r, low, high = stats.ratio_ci(a, b)
    assert bs["ratio"] == pytest.approx(r, rel=1e-12)
    width = high - low
    assert abs(bs["low"] - low) < 0.1 * width and abs(bs["high"] - high) < 0.1 * width
    assert bs["p"] == pytest.approx(stats.welch(a, b)["p"], abs=0.1)
    assert stats.bootstrap_ratio(a, b) == bs
    assert stats.bootstrap_ratio(a, b, seed=1)["low"] != bs["low"]
    slower = stats.bootstrap_ratio(a, [x * 1.05 for x in b])
    assert slower["p"] < 0.001 and slower["low"] > 1.03


def test_bootstrap_progress_goes_to_stderr_only_when_it_takes_long():
    """Progress lines every few seconds once resampling has taken AFTER_S (a clock
    stepped by hand here), the total at the end; nothing when it was quick."""
    import io
    out = io.StringIO()
    now = [0.0]
    p = stats.BootstrapProgress("rangeprof-compare", 4000, out=out)
    p.clock, p.begin = (lambda: now[0]), 0.0
    stats.bootstrap_ratio([1.0, 2.0, 3.0], [2.0, 3.0, 4.0], resamples=1000, progress=p)
    p.finish()
    assert out.getvalue() == "" and p.done == 6000
    p = stats.BootstrapProgress("rangeprof-compare", 12000, out=out)
    p.clock, p.begin = (lambda: now[0]), 0.0
    for step in range(4):
        now[0] = 1.5 * step
        p(3000)
    p.finish()
    assert out.getvalue().splitlines() == [
        "rangeprof-compare: bootstrap: 75 % of 1.2e+04 draws in 3 s",
        "rangeprof-compare: bootstrap: 1.2e+04 draws in 4 s"]


def test_compare_bootstrap_progress_is_on_stderr_not_in_the_json(recorded, monkeypatch, capsys):
    """rangeprof-compare --method bootstrap says its progress on stderr (here from the
    start: AFTER_S and EVERY_S 0); stdout holds the JSON alone."""
    import io
    import json
    from rangeprof import compare
    monkeypatch.setattr(stats.BootstrapProgress, "AFTER_S", 0.0)
    monkeypatch.setattr(stats.BootstrapProgress, "EVERY_S", 0.0)
    out = io.StringIO()
    compare.main([str(recorded("vadd.jsonl")), str(recorded("vadd_again.jsonl")), "--method",
                  "bootstrap", "--json"], out=out)
    rows = json.loads(out.getvalue())
    err = capsys.readouterr().err.splitlines()
    assert rows and all(r["Verdict"] for r in rows)
    said = [l for l in err if l.startswith("rangeprof-compare: bootstrap: ")]
    assert len(said) >= 2 and said[-1].endswith(" s") and "%" not in said[-1]
