"""The modules of python/rangeprof import one another one way: no circle, counting imports
made inside functions too (a lazy import is a dependency all the same). frame.py and
dataset.py once called each other (frame.load handed datasets over, dataset called
frame.load back); rangeprof.load (sources.py) now stands above both (issue 34)."""
import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "rangeprof"


def imports_of(path):
    """The rangeprof modules that path imports, anywhere in it."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1 and node.module:
                found.add(node.module.split(".")[0])
            elif node.level == 1:
                found.update(a.name for a in node.names)
            elif node.module == "rangeprof":
                found.update(a.name for a in node.names)
            elif node.module and node.module.startswith("rangeprof."):
                found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("rangeprof."):
                    found.add(a.name.split(".")[1])
    return found


def graph(package):
    modules = {p.stem: p for p in package.glob("*.py")}
    return {m: sorted(imports_of(p) & set(modules) - {m, "__init__"})
            for m, p in modules.items() if m != "__init__"}


def circles(g):
    """Strongly connected components of two or more modules (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in g.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def test_the_package_has_no_import_circle():
    g = graph(PACKAGE)
    assert len(g) >= 30 and sum(map(len, g.values())) >= 30, g   # it read the package
    assert circles(g) == []


def test_a_lazy_import_back_is_a_circle(tmp_path):
    """The shape frame.py and dataset.py had: each imports the other inside a function."""
    (tmp_path / "frame.py").write_text("def load():\n    from rangeprof import dataset\n")
    (tmp_path / "dataset.py").write_text("def read():\n    from rangeprof.frame import load\n")
    (tmp_path / "sources.py").write_text("from .frame import load\n")
    assert circles(graph(tmp_path)) == [["dataset", "frame"]]
    (tmp_path / "frame.py").write_text("def load():\n    pass\n")
    assert circles(graph(tmp_path)) == []
