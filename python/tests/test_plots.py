"""rangeprof-plot writes PNG files for each kind of plot."""
import pytest

pytest.importorskip("matplotlib")
from rangeprof import plots  # noqa: E402

PNG = b"\x89PNG"


def test_sweep_with_variants_and_panels(recorded, tmp_path):
    out = tmp_path / "sweep.png"
    plots.main(["sweep", str(recorded("matmul.jsonl")), "--x", "n", "--variant", "dtype",
                "--derive", "tflops=2*n**3/gpu__time_duration.sum/1e3", "--metric", "tflops",
                "-o", str(out)])
    assert out.read_bytes()[:4] == PNG
    out2 = tmp_path / "panels.png"
    plots.main(["sweep", str(recorded("matmul.jsonl")), "--x", "n", "--col", "dtype", "--bar", "-o", str(out2)])
    assert out2.read_bytes()[:4] == PNG


def test_distribution_roofline_and_ab(recorded, tmp_path):
    for argv in (["distribution", str(recorded("vadd.jsonl"))],
                 ["roofline", str(recorded("matmul.jsonl"))],
                 ["roofline", str(recorded("matmul.jsonl")), "--flops", "2*n**3"],
                 ["ab", str(recorded("vadd.jsonl")), str(recorded("vadd_cache_none.jsonl"))]):
        out = tmp_path / f"{argv[0]}{len(argv)}.png"
        plots.main(argv + ["-o", str(out)])
        assert out.read_bytes()[:4] == PNG
