"""rangeprof-report keeps different GPUs apart by default, as rangeprof.summarize does
(issue 38, finding 11): before, the runs of an H200 and of another GPU of the same
kernels were pooled into one row."""
import io
import json

from rangeprof import report


def _two_gpus(recorded, tmp_path):
    """vadd.jsonl, then vadd_again.jsonl as if recorded on another GPU, in one file."""
    other = []
    for line in recorded("vadd_again.jsonl").read_text().splitlines():
        rec = json.loads(line)
        if rec["type"] == "device":
            rec["name"] = "NVIDIA H100 80GB HBM3"
        other.append(json.dumps(rec) + "\n")
    path = tmp_path / "two_gpus.jsonl"
    path.write_text(recorded("vadd.jsonl").read_text() + "".join(other))
    return path


def _json(*argv):
    out = io.StringIO()
    assert report.main([str(a) for a in argv] + ["--json"], out=out) == 0
    return json.loads(out.getvalue())


def test_the_report_splits_gpus_by_default(recorded, tmp_path):
    path = _two_gpus(recorded, tmp_path)
    rows = _json(path, "--metric", "gpu__time_duration.sum")
    assert [(r["Annotation"], r["GPU"], r["NumRuns"]) for r in rows] == [
        (f"vadd n={n}", gpu, 400) for gpu in ("NVIDIA H200", "NVIDIA H100 80GB HBM3")
        for n in (4096, 1048576, 16777216)]
    out = io.StringIO()
    assert report.main([str(path), "--metric", "gpu__time_duration.sum"], out=out) == 0
    assert out.getvalue().split()[:4] == ["Annotation", "Kernel", "GPU", "Metric"]
    # Pooled only when asked.
    rows = _json(path, "--metric", "gpu__time_duration.sum", "--group-by", "Annotation,Kernel")
    assert [r["NumRuns"] for r in rows] == [800] * 3
    # --bytes too.
    rows = _json(path, "--bytes")
    assert {(r["GPU"], r["NumRuns"]) for r in rows if r["Metric"] == "dram_bytes"} == {
        ("NVIDIA H200", 400), ("NVIDIA H100 80GB HBM3", 400)}


def test_one_gpu_shows_no_gpu_column(recorded):
    out = io.StringIO()
    assert report.main([str(recorded("vadd.jsonl"))], out=out) == 0
    assert "GPU" not in out.getvalue().splitlines()[0].split()
    assert "GPU" not in _json(recorded("vadd.jsonl"))[0]
