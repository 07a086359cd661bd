"""rangeprof/expr.py - the small, safe expression language of --derive: numbers, names of
metrics and configuration columns (metric names keep their dots: gpu__time_duration.sum),
+ - * / ** and parentheses, unary minus, and the functions min, max, abs, sqrt, log, exp.
Parsed by a recursive-descent parser into a tree and evaluated over one run's values with
units carried alongside; nothing reaches Python's eval. Standard library only.

    d = parse_derivation("tflops[TFLOP/s]=2*n**3/gpu__time_duration.sum")
    value, unit = d.evaluate({"n": (4096, DIMENSIONLESS), "gpu__time_duration.sum": (t, ns)})"""
import math
import re

from rangeprof.units import DIMENSIONLESS, Unit, UnitError, conversion_factor, format_unit, parse_unit


class ExprError(ValueError):
    pass


_TOKEN = re.compile(r"\s*(?:(?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)"
                    r"|(?P<name>[A-Za-z_][A-Za-z0-9_.]*)|(?P<op>\*\*|[-+*/(),]))")
_FUNCTIONS = {
    "min": (2, None), "max": (2, None), "abs": (1, abs), "sqrt": (1, math.sqrt),
    "log": (1, math.log), "exp": (1, math.exp),
}


def _tokens(text):
    pos, out = 0, []
    end = len(text.rstrip())  # (not the rest stripped at every token: quadratic)
    while pos < end:
        m = _TOKEN.match(text, pos)
        if not m:
            raise ExprError(f"unexpected '{text[pos:].strip()[:20]}' at character {pos + 1} "
                            f"of '{text}'")
        kind = m.lastgroup
        out.append((kind, m.group(kind), pos + 1))
        pos = m.end()
    out.append(("end", "", len(text) + 1))
    return out


class _Parser:
    """expr := term (('+'|'-') term)*; term := unary (('*'|'/') unary)*;
    unary := '-' unary | power; power := atom ('**' unary)?;
    atom := number | name | name '(' expr (',' expr)* ')' | '(' expr ')'"""

    def __init__(self, text):
        self.text, self.toks, self.i = text, _tokens(text), 0

    def peek(self):
        return self.toks[self.i]

    def take(self, value=None):
        tok = self.toks[self.i]
        if value is not None and tok[1] != value:
            found = tok[1] or "the end"
            raise ExprError(f"expected '{value}' at character {tok[2]} of '{self.text}', "
                            f"found {found!r}")
        self.i += 1
        return tok

    def parse(self):
        tree = self.expr()
        if self.peek()[0] != "end":
            tok = self.peek()
            raise ExprError(f"unexpected '{tok[1]}' at character {tok[2]} of '{self.text}'")
        return tree

    def expr(self):
        node = self.term()
        while self.peek()[1] in ("+", "-"):
            node = (self.take()[1], node, self.term())
        return node

    def term(self):
        node = self.unary()
        while self.peek()[1] in ("*", "/"):
            node = (self.take()[1], node, self.unary())
        return node

    def unary(self):
        if self.peek()[1] == "-":
            self.take()
            return ("neg", self.unary())
        if self.peek()[1] == "+":
            self.take()
            return self.unary()
        return self.power()

    def power(self):
        node = self.atom()
        if self.peek()[1] == "**":
            self.take()
            node = ("**", node, self.unary())
        return node

    def atom(self):
        kind, value, where = self.take()
        if kind == "num":
            return ("num", float(value))
        if kind == "name":
            if self.peek()[1] == "(":
                if value not in _FUNCTIONS:
                    raise ExprError(f"unknown function '{value}' at character {where}; "
                                    f"known: {', '.join(sorted(_FUNCTIONS))}")
                self.take("(")
                args = [self.expr()]
                while self.peek()[1] == ",":
                    self.take()
                    args.append(self.expr())
                self.take(")")
                if len(args) != _FUNCTIONS[value][0]:
                    raise ExprError(f"{value}() takes {_FUNCTIONS[value][0]} argument(s), "
                                    f"got {len(args)}")
                return ("call", value, args)
            return ("name", value)
        if value == "(":
            node = self.expr()
            self.take(")")
            return node
        raise ExprError(f"unexpected {value or 'end'!r} at character {where} of '{self.text}'")


def names(tree):
    """The variable names a tree reads."""
    if tree[0] == "name":
        return {tree[1]}
    if tree[0] == "num":
        return set()
    if tree[0] == "call":
        return set().union(*(names(a) for a in tree[2]))
    return set().union(*(names(a) for a in tree[1:]))


def evaluate(tree, env):
    """(value, Unit) of a tree; env maps names to (value, Unit). Arithmetic on NaN gives
    NaN; division by zero gives NaN rather than an exception (a run with a zero counter)."""
    kind = tree[0]
    if kind == "num":
        return tree[1], DIMENSIONLESS
    if kind == "name":
        if tree[1] not in env:
            raise ExprError(f"unknown name '{tree[1]}'")
        return env[tree[1]]
    if kind == "neg":
        v, u = evaluate(tree[1], env)
        return -v, u
    if kind == "call":
        vals = [evaluate(a, env) for a in tree[2]]
        if tree[1] in ("min", "max"):
            (a, ua), (b, ub) = vals
            try:
                b *= conversion_factor(ub, ua)
            except UnitError as e:
                raise ExprError(f"{tree[1]}() of different units: {e}") from None
            return (min if tree[1] == "min" else max)(a, b), ua
        v, u = vals[0]
        if tree[1] == "abs":
            return abs(v), u
        if tree[1] == "sqrt":
            return (math.sqrt(v) if v >= 0 else math.nan), u ** 0.5
        if not u.dimensionless:
            raise ExprError(f"{tree[1]}() needs a dimensionless argument, got '{format_unit(u)}'")
        try:
            return _FUNCTIONS[tree[1]][1](v), DIMENSIONLESS
        except (ValueError, OverflowError):
            return math.nan, DIMENSIONLESS
    op = kind
    (a, ua), (b, ub) = evaluate(tree[1], env), evaluate(tree[2], env)
    if op in ("+", "-"):
        try:
            b *= conversion_factor(ub, ua)
        except UnitError as e:
            raise ExprError(f"'{op}' of different units: {e}") from None
        return (a + b if op == "+" else a - b), ua
    if op == "*":
        return a * b, ua * ub
    if op == "/":
        return (a / b if b else math.nan), ua / ub
    if not ub.dimensionless:
        raise ExprError("an exponent must be dimensionless")
    try:
        value = a ** b
    except (OverflowError, ZeroDivisionError, ValueError):
        value = math.nan
    if isinstance(value, complex):  # a negative base to a fractional power
        value = math.nan
    return value, ua ** b


def _prefix_literal(tree):
    """The value of a literal that is a power of 1000 other than 1, else None."""
    if tree[0] != "num" or not 0 < tree[1] < math.inf:
        return None
    k = math.log10(tree[1]) / 3
    return tree[1] if k != 0 and abs(k - round(k)) < 1e-12 else None


class Derivation:
    """name[unit]=expression: a derived metric, evaluated per run."""

    def __init__(self, name, tree, text, unit_text=None):
        self.name, self.tree, self.text, self.unit_text = name, tree, text, unit_text
        self.unit = parse_unit(unit_text) if unit_text else None
        self.inputs = names(tree)
        self.prefix = _trailing_prefix(tree)

    def evaluate(self, env):
        """(value, unit text) for one run; the value converted to [unit] when one was given."""
        value, unit = evaluate(self.tree, env)
        if self.prefix != 1:
            unit = Unit(unit.scale * self.prefix, unit.dims)
        if self.unit is None:
            return value, format_unit(unit)
        try:
            return value * conversion_factor(unit, self.unit), self.unit_text
        except UnitError as e:
            raise ExprError(f"--derive {self.name}: {e}") from None


def _trailing_prefix(tree):
    """The change of prefix that literal powers of 1000 multiplying or dividing the whole
    expression at its end make, as in the tutorial's 2*n**3/time/1e3: the number shrinks
    and the unit grows by the same factor, so that the result denotes the same rate (in
    units of 1e3/nsecond, T/second). Anywhere else a literal is the number it says
    (1000/time is 1000 per time, as items/time with items=1000 is)."""
    factor = 1.0
    while tree[0] in ("*", "/"):
        prefix = _prefix_literal(tree[2])
        if prefix is None:
            break
        factor *= prefix if tree[0] == "/" else 1 / prefix
        tree = tree[1]
    return factor


def parse_derivation(text):
    """'name=expr' or 'name[unit]=expr' as a Derivation; ExprError says what is wrong."""
    m = re.fullmatch(r"\s*([A-Za-z_][A-Za-z0-9_.]*)\s*(?:\[([^\]]*)\])?\s*=(.*)", text or "")
    if not m:
        raise ExprError(f"--derive '{text}': expected NAME=EXPRESSION or NAME[UNIT]=EXPRESSION")
    name, unit, body = m.group(1), m.group(2), m.group(3)
    try:
        tree = _Parser(body).parse()
        if _depth(tree) > MAX_DEPTH:
            raise ExprError(f"nested more than {MAX_DEPTH} deep")
    except RecursionError:
        raise ExprError(f"--derive '{text[:60]}...': nested more than {MAX_DEPTH} deep") from None
    except ExprError as e:
        raise ExprError(f"--derive '{text}': {e}") from None
    return Derivation(name, tree, body.strip(), unit.strip() if unit else None)


# Deeper trees are refused: evaluation recurses over them.
MAX_DEPTH = 200


def _depth(tree):
    """The depth of a tree, without recursion (a 'x+x+...' of 10^5 terms is that deep)."""
    deepest, todo = 0, [(tree, 1)]
    while todo:
        node, d = todo.pop()
        deepest = max(deepest, d)
        if node[0] == "call":
            todo += [(a, d + 1) for a in node[2]]
        elif node[0] not in ("num", "name"):
            todo += [(a, d + 1) for a in node[1:]]
    return deepest
