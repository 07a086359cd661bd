"""Config columns from key=value words of NVTX range texts."""
from rangeprof.config import config_from_nvtx, parse


def test_words_become_typed_columns():
    assert parse("matmul n=4096 dtype=fp16") == {"n": 4096, "dtype": "fp16"}
    assert parse("x alpha=1e-3 flag=true neg=-2") == {"alpha": 0.001, "flag": True, "neg": -2}


def test_words_without_equals_and_quoted_values():
    assert parse("vadd") == {}
    assert parse("a name='two words' k=v") == {"name": "two words", "k": "v"}


def test_inner_ranges_win():
    nvtx = [{"text": "sweep n=1 dtype=fp32"}, {"text": "matmul n=2"}]
    assert config_from_nvtx(nvtx) == {"n": 2, "dtype": "fp32"}
