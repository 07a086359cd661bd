"""rangeprof/config.py - configuration columns from NVTX range texts: each 'key=value' word
('matmul n=4096 dtype=fp16') becomes a column, numbers typed as numbers. Where ranges are
nested, inner ranges win over outer ones for the same key. Standard library only."""
import re

_WORD = re.compile(r"(?<![^\s,;(\[{])([A-Za-z_][A-Za-z0-9_.\-]*)=(\"[^\"]*\"|'[^']*'|[^\s,;)\]}]+)")


def typed(text):
    """'4096' -> 4096, '1e-3' -> 0.001, 'true' -> True, anything else stays a string."""
    if re.fullmatch(r"[+-]?\d+", text):
        try:
            return int(text)
        except ValueError:  # more digits than Python converts (4300): kept as written
            return text
    try:
        return float(text)
    except ValueError:
        pass
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    return text


def parse(text):
    """The key=value words of one range text, in order, values typed."""
    out = {}
    for key, value in _WORD.findall(text or ""):
        if value[:1] in "\"'" and value[-1:] == value[:1]:
            out[key] = value[1:-1]
        else:
            out[key] = typed(value)
    return out


def config_from_nvtx(nvtx, nvtx_path=""):
    """Configuration of a run from its 'nvtx' list (outermost first), falling back to its
    nvtx_path when the list is empty."""
    out = {}
    texts = [r.get("text", "") for r in nvtx if isinstance(r, dict)] or [nvtx_path]
    for text in texts:
        out.update(parse(text))
    return out
