"""rangeprof/names.py - one spelling for kernel names that two demanglers wrote: the
JSONL's (CUPTI, cxxabi: 'void at::native::f<4, std::array<char*, 1ul> >(int, ...)') and
ncu's ('void at::f<4, std::array<char *, 1>>(int, T2, T3)', or with no namespaces at all),
used to match kernels across the two and to show long names in text tables by what tells
them apart. Standard library only."""
import re


def canonical_kernel(name):
    """One spelling for ncu's and the JSONL's demangled names: no parameter list or 'void',
    no namespace qualifiers at all (the JSONL writes 'at::native::FillFunctor', ncu
    'at::FillFunctor' or, depending on its name base, plain 'FillFunctor'), anonymous
    namespaces dropped ('(anonymous namespace)::', ncu's '<unnamed>::'), integer suffixes
    dropped ('1ul' -> '1'), no space before '*' or '&', '>>' for '> >', single spaces.
    Kernels are matched on this name together with the grid and the NVTX path, so that
    the qualifiers it drops are rarely needed to tell two kernels apart."""
    s = name.strip()
    if s.startswith("void "):
        s = s[5:]
    s = s.replace("(anonymous namespace)::", "").replace("<unnamed>::", "")
    # Cut the parameter list: the first '(' at template depth 0.
    depth = 0
    for i, ch in enumerate(s):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0 and i > 0:
            s = s[:i]
            break
    s = re.sub(r"\b[A-Za-z_]\w*::", "", s)
    s = re.sub(r"\b(\d+)(?:ull|ul|ll|u|l)\b", r"\1", s, flags=re.I)
    # Each pattern can start only at the first character of a run (the lookbehind, a
    # '>'), so that a long run of spaces is passed once, not once per space.
    s = re.sub(r"(?<!\s)\s+(?=[*&])", "", s)
    s = re.sub(r">\s+(?=>)", ">", s)
    return re.sub(r"\s+", " ", s).strip()


# A range workload's kernel text (--replay-mode range): its kernels' count, then their
# names separated by ', ' ("3 kernels: add_one, scale_add, add_one").
_RANGE_TEXT = re.compile(r"(\d+ kernels?: )(.*)\Z", re.S)


def _split_names(text):
    """text split at the ', ' that stand outside brackets (a template's or a parameter
    list's commas stay in their name)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "<([":
            depth += 1
        elif ch in ">)]":
            depth = max(depth - 1, 0)
        elif ch == "," and depth == 0 and text[i + 1:i + 2] == " ":
            parts.append(text[start:i])
            start = i + 2
    parts.append(text[start:])
    return parts


# What inject/range/range_workload.c appends to a list it cuts.
_RANGE_CUT = re.compile(r"\.\.\. \(\d+ more\)\Z")


def _short_part(part):
    m = _RANGE_TEXT.match(part)
    if m is None:
        return canonical_kernel(part)
    names = m.group(2)
    cut = _RANGE_CUT.search(names)
    if cut:
        names = names[:cut.start()]
    short = ", ".join(canonical_kernel(n) for n in _split_names(names)) if names else ""
    return m.group(1) + short + (cut.group(0) if cut else "")


def short_kernel(name):
    """canonical_kernel of each part of a kernel column ('a + b' for kernels combined per
    range): what a text table shows, where 'void at::native::vectorized_elementwise_kernel<'
    would fill the column before the functor that tells two kernels apart. A range
    workload's text ('2 kernels: a, b') keeps its count and shortens each name."""
    return " + ".join(_short_part(part) for part in str(name).split(" + "))
