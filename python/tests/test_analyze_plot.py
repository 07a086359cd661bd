"""Scripts written for Nsight Python, run with 'import rangeprof as nsight': the tutorial
examples' uses of nsight.annotate, nsight.analyze.kernel and nsight.analyze.plot
(Nsight Python's examples/00-10, their torch code replaced by the stand-in library's
recorded launches), and analyze.plot's errors, including a missing matplotlib."""
import itertools
import statistics
import textwrap

import pytest

pytest.importorskip("pandas")
pytest.importorskip("matplotlib")

import rangeprof as nsight  # noqa: E402

from fake_control.harness import (fake, fake_path, recorded_launches,  # noqa: E402,F401
                                  run_python)

pytestmark = pytest.mark.filterwarnings("ignore::rangeprof.exceptions.RangeprofWarning")
TIME = "gpu__time_duration.sum"


def matmul_range(fake, n, dtype="fp32"):
    fake.set("RANGEPROF_FAKE_RANGE", f"matmul n={n} dtype={dtype}")


def png(path):
    data = path.read_bytes()
    return data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 1000


def test_minimal_and_compare_throughput_examples(fake, tmp_path):
    fake.use("matmul.jsonl")

    @nsight.analyze.kernel
    def benchmark_matmul(n: int) -> None:
        matmul_range(fake, n)
        with nsight.annotate("matmul"):
            pass

    df = benchmark_matmul(1024).to_dataframe(extra=True)
    assert df[["Annotation", "n", "Metric", "Unit", "NumRuns"]].values.tolist() == [
        ["matmul", 1024, TIME, "ns", 1]]

    @nsight.annotate("torch.einsum")
    def einsum_matmul(a, b):
        return a * b

    @nsight.analyze.plot(str(tmp_path / "01.png"), plot_type="bar")
    @nsight.analyze.kernel(runs=10, metrics=["dram__throughput.avg.pct_of_peak_sustained_elapsed"])
    def benchmark_matmul_throughput(n: int) -> None:
        matmul_range(fake, n)
        with nsight.annotate("@-operator"):
            pass
        with nsight.annotate("torch.matmul"):
            pass
        assert einsum_matmul(6, 7) == 42

    result = benchmark_matmul_throughput(2048)
    df = result.to_dataframe(extra=True)
    assert df["Annotation"].tolist() == ["@-operator", "torch.matmul", "torch.einsum"]
    assert df["Unit"].tolist() == ["%"] * 3
    launches = recorded_launches("matmul.jsonl", "matmul n=2048 dtype=fp32")
    assert df["AvgValue"].iloc[0] == pytest.approx(statistics.mean(
        r["metrics"]["dram__throughput.avg.pct_of_peak_sustained_elapsed"] for r in launches[0]))
    assert png(tmp_path / "01.png")


def test_parameter_sweep_and_custom_metrics_examples(fake, tmp_path):
    fake.use("matmul.jsonl")
    sizes = [(2 ** i,) for i in range(10, 13)]

    @nsight.analyze.plot(str(tmp_path / "02.png"))
    @nsight.analyze.kernel(configs=sizes, runs=10)
    def benchmark_matmul_sizes(n: int) -> None:
        matmul_range(fake, n)
        with nsight.annotate("matmul"):
            pass

    df = benchmark_matmul_sizes().to_dataframe(extra=True)
    assert df["n"].tolist() == [1024, 2048, 4096] and png(tmp_path / "02.png")

    def compute_tflops(time_ns: float, n: int) -> tuple:
        return 2 * n * n * n / (time_ns / 1e9) / 1e12, "TFLOPS"

    @nsight.analyze.plot(filename=str(tmp_path / "03.png"), metric="compute_tflops",
                         ylabel="Performance (TFLOPS)", annotate_points=True)
    @nsight.analyze.kernel(configs=sizes, runs=10, derive_metric=compute_tflops)
    def benchmark_tflops(n: int) -> None:
        matmul_range(fake, n)
        with nsight.annotate("matmul"):
            pass

    df = benchmark_tflops().to_dataframe(extra=True)
    tflops = df[df["Metric"] == "compute_tflops"]
    # one launch per range in matmul.jsonl: the stand-in hands it back again
    runs = recorded_launches("matmul.jsonl", "matmul n=4096 dtype=fp32")[0]
    assert tflops["AvgValue"].iloc[2] == pytest.approx(statistics.mean(
        2 * 4096 ** 3 / (r["metrics"][TIME] / 1e9) / 1e12 for r in runs))
    assert png(tmp_path / "03.png")
    with pytest.raises(ValueError, match=r"Cannot visualize multiple metrics \(2 > 1\)"):
        nsight.analyze.plot(str(tmp_path / "x.png"))(benchmark_tflops)()
    with pytest.raises(ValueError, match="Metric 'TFLOPS' not found in the profile results"):
        nsight.analyze.plot(str(tmp_path / "x.png"), metric="TFLOPS")(benchmark_tflops)()


def test_subplots_and_plot_customization_examples(fake, tmp_path):
    fake.use("matmul.jsonl")
    configs = list(itertools.product([1024, 2048], ["fp32", "fp16"], [False, True]))

    def compute_tflops(time_ns, *conf):
        return {"TFLOPS": (2 * conf[0] ** 3 / (time_ns / 1e9) / 1e12, "TFLOPS")}

    @nsight.analyze.plot(filename=str(tmp_path / "05.png"), metric="TFLOPS",
                         title="Matrix Multiplication Performance", ylabel="TFLOPs/s",
                         row_panels=["dtype"], col_panels=["transpose"], annotate_points=True)
    @nsight.analyze.kernel(configs=configs, runs=10, derive_metric=compute_tflops)
    def benchmark_with_subplots(n: int, dtype: str, transpose: bool) -> None:
        matmul_range(fake, n, dtype)
        with nsight.annotate("matmul"):
            pass

    df = benchmark_with_subplots().to_dataframe(extra=True)
    assert list(df.columns[:5]) == ["Annotation", "Metric", "n", "dtype", "transpose"]
    assert len(df) == 16 and png(tmp_path / "05.png")

    styled = []

    def custom_style(fig):
        fig.suptitle("Custom Styled Plot", fontsize=16, fontweight="bold")
        fig.set_figwidth(10)
        ax = fig.get_axes()[0]
        ax.grid(True, alpha=0.3)
        for line in ax.get_lines():
            line.set_linewidth(2)
        styled.append(fig)

    @nsight.analyze.plot(filename=str(tmp_path / "06.png"), metric="TFLOPS",
                         plot_callback=custom_style, plot_type="bar", show_aggregate="geomean",
                         variant_fields=["dtype"], variant_annotations=["matmul"])
    @nsight.analyze.kernel(configs=configs[:4], runs=10, derive_metric=compute_tflops)
    def benchmark_custom_plot(n: int, dtype: str, transpose: bool) -> None:
        matmul_range(fake, n, dtype)
        with nsight.annotate("matmul"):
            pass

    benchmark_custom_plot()
    assert styled and png(tmp_path / "06.png")


def test_combine_kernel_metrics_example(fake, tmp_path, capsys):
    fake.use("fusion.jsonl", range="fma variant=unfused n=16777216", launches=2)

    @nsight.analyze.plot(filename=str(tmp_path / "10.png"), annotate_points=True,
                         show_aggregate="avg", print_data=True)
    @nsight.analyze.kernel(runs=10, combine_kernel_metrics=lambda x, y: x + y)
    def benchmark_multiple_kernels() -> None:
        with nsight.annotate("test"):
            pass

    df = benchmark_multiple_kernels().to_dataframe(extra=True)
    mul, add = recorded_launches("fusion.jsonl", "fma variant=unfused n=16777216")[:2]
    assert df["AvgValue"].iloc[0] == pytest.approx(statistics.mean(
        a["metrics"][TIME] + b["metrics"][TIME] for a, b in zip(mul, add)))
    assert png(tmp_path / "10.png")
    assert "Aggregated Data" in capsys.readouterr().out


def test_several_kernels_without_combine_are_plotted_as_lines_of_their_own(fake, tmp_path):
    fake.use("fusion.jsonl", range="fma variant=unfused n=16777216", launches=2)

    @nsight.analyze.plot(filename=str(tmp_path / "k.png"))
    @nsight.analyze.kernel(configs=[1, 2], runs=10)
    def bench(n):
        with nsight.annotate("unfused"):
            pass

    df = bench().to_dataframe(extra=True)
    assert df["KernelIndex"].tolist() == [0, 1, 0, 1]
    assert png(tmp_path / "k.png")


def test_print_data_with_several_kernels_prints_nsight_pythons_columns(fake, tmp_path, capsys):
    """Nsight Python's example 13 on the H200 (cuBLAS's split-K matmul: two kernels in one
    annotation): the printed table holds what Nsight Python prints - its columns, the
    Configuration it adds, AvgValue to four decimals - and none of rangeprof's, KernelIndex
    included, which only labels the lines."""
    from rangeprof import _results
    fake.use("fusion.jsonl", range="fma variant=unfused n=16777216", launches=2)

    @nsight.analyze.plot(filename=str(tmp_path / "k.png"), print_data=True)
    @nsight.analyze.kernel(configs=[1, 2], runs=10)
    def bench(n):
        with nsight.annotate("unfused"):
            pass

    df = bench().to_dataframe()
    lines = capsys.readouterr().out.splitlines()
    table = lines[lines.index("Aggregated Data (Average value and Number of Runs):") + 1:]
    header = table[0].split()
    assert header == list(df.columns) + ["Configuration"]
    assert [c for c in _results.OWN_COLUMNS if c in header] == []
    assert len(table) == 1 + len(df)
    assert table[1].split()[header.index("AvgValue")] == f"{df['AvgValue'].iloc[0]:.4f}"


def test_analyze_plot_and_rangeprof_plot_sweep_draw_with_one_function(fake, recorded, tmp_path,
                                                                     monkeypatch):
    """The sweep is drawn once: analyze.plot (Nsight Python's layout: a tick per config,
    Nsight's colors, the Geomean bar past a dashed line) and rangeprof-plot sweep (an axis
    of n) both draw their panels with _plot.draw_panel, the layout differences being its
    arguments."""
    from matplotlib.container import BarContainer
    from rangeprof import _plot, _results, plots
    calls = []
    draw = _plot.draw_panel

    def spy(ax, series, kind="line", **kw):
        calls.append((kind, kw))
        return draw(ax, series, kind, **kw)
    monkeypatch.setattr(_plot, "draw_panel", spy)

    fake.use("matmul.jsonl")
    figures = []

    @nsight.analyze.plot(filename=str(tmp_path / "a.png"), plot_type="bar",
                         show_aggregate="geomean", plot_callback=figures.append)
    @nsight.analyze.kernel(configs=[(1024,), (2048,)], runs=10)
    def bench(n):
        matmul_range(fake, n)
        with nsight.annotate("matmul"):
            pass

    df = bench().to_dataframe()
    assert [k for k, _ in calls] == ["bar"] and calls[0][1]["colors"] is _plot.COLORS
    ax = figures[0].get_axes()[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["n=1024", "n=2048", "Geomean"]
    drawn = [c for c in ax.containers if isinstance(c, BarContainer)]
    series = [c for c in drawn if c.get_label() == "matmul"]
    assert len(series) == 1 and len(series[0].patches) == 2
    geomean_bar = [p for c in drawn if c not in series for p in c.patches]
    assert [p.get_height() for p in geomean_bar] == [
        pytest.approx(_results.geomean(df["AvgValue"]))]
    assert geomean_bar[0].get_x() + geomean_bar[0].get_width() / 2 == pytest.approx(2)
    assert png(tmp_path / "a.png")

    assert plots.main(["sweep", str(recorded("matmul.jsonl")), "--x", "n",
                       "-o", str(tmp_path / "s.png")]) == 0
    assert [k for k, _ in calls] == ["bar", "line"] and calls[1][1]["numeric_x"] is True


def test_plot_arguments_are_checked(fake):
    with pytest.raises(ValueError, match=r"plot_type='pie': expected 'line' or 'bar'"):
        nsight.analyze.plot("x.png", plot_type="pie")
    with pytest.raises(ValueError, match=r"show_aggregate='max'"):
        nsight.analyze.plot("x.png", show_aggregate="max")


def test_without_matplotlib_plot_says_what_to_install():
    code = textwrap.dedent("""
        import sys, json
        sys.modules["matplotlib"] = None
        sys.modules["rangeprof._native"] = None
        import rangeprof
        try:
            rangeprof.analyze.plot("x.png")
            print(json.dumps(None))
        except ImportError as e:
            print(json.dumps(str(e)))
    """)
    rc, out, err = run_python(code)
    assert rc == 0, err
    assert out.strip() == '"rangeprof.analyze.plot needs matplotlib: pip install matplotlib"'
