"""rangeprof/units.py - units as a scale and a product of dimensions, so that derived
metrics carry units ('nanosecond' * 'byte'^-1 ...) and can be converted to a unit the user
asks for ('TB/s'). The profiler's unit strings ('nanosecond', 'byte', 'instruction',
'percent', '1/second'), ncu's CSV units ('ns', 'Kbyte', '%') and short forms ('B',
'FLOP/s') all parse. Standard library only."""
import math
import re

_PREFIX = {"": 1.0, "n": 1e-9, "u": 1e-6, "m": 1e-3, "K": 1e3, "k": 1e3, "M": 1e6,
           "G": 1e9, "T": 1e12, "P": 1e15}
# CUPTI spells its prefixes out ('nanosecond'); ncu's CSV abbreviates them ('ns', 'Kbyte').
_LONG_PREFIX = {"nano": 1e-9, "micro": 1e-6, "milli": 1e-3, "kilo": 1e3, "mega": 1e6,
                "giga": 1e9, "tera": 1e12, "peta": 1e15}
# base name -> (scale, dimension); FLOP and inst are counts, kept as their own dimension
# so that FLOP/byte and inst/cycle read as what they are.
_BASE = {"second": (1.0, "s"), "s": (1.0, "s"), "sec": (1.0, "s"),
         "byte": (1.0, "B"), "B": (1.0, "B"), "hz": (1.0, "1/s"), "Hz": (1.0, "1/s"),
         "FLOP": (1.0, "FLOP"), "flop": (1.0, "FLOP"), "cycle": (1.0, "cycle"),
         "inst": (1.0, "inst"), "instruction": (1.0, "inst"), "percent": (1.0, "%"),
         "%": (1.0, "%")}


class UnitError(ValueError):
    pass


class Unit:
    """scale * product(dim ** power). Immutable; compare with same_dims()."""
    __slots__ = ("scale", "dims")

    def __init__(self, scale=1.0, dims=None):
        self.scale = float(scale)
        self.dims = {k: v for k, v in (dims or {}).items() if v}

    def __mul__(self, other):
        dims = dict(self.dims)
        for k, v in other.dims.items():
            dims[k] = dims.get(k, 0) + v
        return Unit(self.scale * other.scale, dims)

    def __truediv__(self, other):
        return self * other ** -1

    def __pow__(self, power):
        try:
            scale = self.scale ** power
        except (OverflowError, ZeroDivisionError):
            scale = math.inf  # said as out of range where it is used (conversion_factor)
        if isinstance(scale, complex):
            scale = math.nan
        return Unit(scale, {k: v * power for k, v in self.dims.items()})

    def same_dims(self, other):
        return self.dims == other.dims

    @property
    def dimensionless(self):
        return not self.dims

    def __repr__(self):
        return f"Unit({format_unit(self)!r})"


DIMENSIONLESS = Unit()


def _split_power(token):
    """(word, power) of an atom: 'byte^-1' -> ('byte', -1), 'second2' -> ('second', 2),
    'byte^' -> ('byte', 1); the shortest word before an optional '^' and optional signed
    digits, as re.fullmatch(r"(.*?)\\^?(-?\\d+)?", token) splits it, in one pass from the
    end (that regex tries every split and every digit count: quadratic in a long run of
    digits). ValueError for a power of more digits than int() takes."""
    i = len(token)
    while i and token[i - 1].isdecimal():  # \d: Unicode decimal digits
        i -= 1
    if i == len(token):
        return (token[:-1], 1) if token.endswith("^") else (token, 1)
    j = i - 1 if i and token[i - 1] == "-" else i
    power = int(token[j:])
    if j and token[j - 1] == "^":
        j -= 1
    return token[:j], power


def _atom(token):
    """'nsecond' -> Unit(1e-9, {s: 1}); '%' and unknown words are dimensions of their own."""
    if token in ("", "1"):
        return Unit()
    word, power = _split_power(token)
    # CUPTI names the clock a cycle counter counts ('gpc_cycle', 'sm_cycle', 'dram_cycle');
    # ncu's CSV gives the same metric's unit as plain 'cycle'. The metric's name says the
    # clock: as a unit, a cycle of any clock is a cycle, so that the two compare.
    if re.fullmatch(r"[a-z][a-z0-9]*_cycle", word):
        word = "cycle"
    if word in _PREFIX and word:  # a bare prefix ('T' in 'T/s') is a scale
        return Unit(_PREFIX[word] ** power)
    prefixes = dict(_PREFIX, **_LONG_PREFIX)
    for prefix in sorted(prefixes, key=len, reverse=True):
        if word.startswith(prefix) and word[len(prefix):] in _BASE:
            scale, dim = _BASE[word[len(prefix):]]
            unit = Unit(prefixes[prefix] * scale, {"s": -1} if dim == "1/s" else {dim: 1})
            return unit ** power
    return Unit(1.0, {word: power})


def parse_unit(text):
    """A unit string ('nsecond', 'byte/second', 'TFLOP/s', 'cycle/nsecond', '%') as a Unit.
    Never raises: a text whose powers no float can hold ('Kbyte^99999') is a dimension of
    its own, as an unknown word is, so that it converts to nothing but itself."""
    try:
        return _parse_unit(text)
    except (ArithmeticError, ValueError):
        return Unit(1.0, {str(text).strip(): 1})


def _parse_unit(text):
    text = (text or "").strip()
    if not text or text in ("none", "dimensionless"):
        return Unit()
    parts = text.split("/")
    unit = Unit()
    for i, part in enumerate(parts):
        for token in re.split(r"[\s*·]+", part.strip()):
            atom = _atom(token)
            unit = unit * atom if i == 0 else unit / atom
    return unit


_SHOW = {"s": "second", "B": "byte"}
_NAMES = [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "K"), (1.0, ""),
          (1e-3, "m"), (1e-6, "u"), (1e-9, "n")]


def format_unit(unit):
    """Readable text of a Unit: 'nsecond', '1/nsecond', 'byte/second', '1e-3 FLOP/byte'."""
    num = [(k, v) for k, v in sorted(unit.dims.items()) if v > 0]
    den = [(k, -v) for k, v in sorted(unit.dims.items()) if v < 0]

    def word(k, v, prefix=""):
        return f"{prefix}{_SHOW.get(k, k)}" + (f"^{v:g}" if v != 1 else "")

    scale = unit.scale
    prefix_num = prefix_den = ""
    if not num and den and not math.isclose(scale, 1.0, rel_tol=1e-12):
        # 1e12/second reads as T/second (a rate with its count left out: 'TFLOP/s')
        for value, name in _NAMES:
            if math.isclose(scale, value, rel_tol=1e-9) and name:
                bottom = "*".join(word(k, v) for k, v in den)
                return f"{name}/{bottom}"
    if not math.isclose(scale, 1.0, rel_tol=1e-12):
        for value, name in _NAMES:
            if num and num[0][1] == 1 and math.isclose(scale, value, rel_tol=1e-9):
                prefix_num, scale = name, 1.0
                break
            if den and den[0][1] == 1 and math.isclose(scale, 1 / value, rel_tol=1e-9):
                prefix_den, scale = name, 1.0
                break
    top = "*".join(word(k, v, prefix_num if i == 0 else "") for i, (k, v) in enumerate(num))
    bottom = "*".join(word(k, v, prefix_den if i == 0 else "") for i, (k, v) in enumerate(den))
    text = (top or "1") + (f"/{bottom}" if bottom else "")
    if text == "1":
        text = ""
    if not math.isclose(scale, 1.0, rel_tol=1e-12):
        text = f"{scale:g} {text}".strip()
    return text


# Counts that a user may name in a unit or leave out: 'TFLOP/s' is a valid unit for
# 2*n**3/time, whose algebra knows no FLOP.
_COUNTS = ("FLOP", "inst")


def conversion_factor(src, dst):
    """Multiplier taking a value in unit src to unit dst; UnitError if dimensions differ."""
    strip = lambda u: Unit(u.scale, {k: v for k, v in u.dims.items() if k not in _COUNTS})  # noqa: E731
    if not strip(src).same_dims(strip(dst)):
        raise UnitError(f"cannot express '{format_unit(src) or 'dimensionless'}' "
                        f"as '{format_unit(dst) or 'dimensionless'}'")
    try:
        factor = src.scale / dst.scale
    except (ArithmeticError, ValueError):
        factor = math.nan
    if not math.isfinite(factor) or factor == 0:
        raise UnitError(f"no finite factor takes '{format_unit(src)}' to '{format_unit(dst)}'")
    return factor


def same_unit(a, b):
    """Whether unit texts a and b name one unit: the same dimensions and scale
    ('nanosecond', 'nsecond' and 'ns'; not 'usecond'). A text that is not a string (a
    missing unit) is no unit."""
    ua = parse_unit(a if isinstance(a, str) else "")
    ub = parse_unit(b if isinstance(b, str) else "")
    return ua.same_dims(ub) and math.isclose(ua.scale, ub.scale, rel_tol=1e-12)
