"""One record reader: no module of the package (python/rangeprof/) and no script of the GPU
suite (tests/gpu/) parses JSON itself outside records.py, except the JSON listed in
ALLOWED, which is not rangeprof's records (each entry says what it is). A record line
read anywhere else goes through records.parse_line or records.Reader, so that one rule
says what a record is and every path reports a bad one alike. The scan is of the code
(its syntax tree): json.loads, json.load, json.JSONDecoder under any name they are
imported as, and any read_json (pyarrow's, pandas')."""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCANNED = [("python/rangeprof", "*.py"), ("tests/gpu", "**/*.py")]
PARSERS = {("json", "loads"), ("json", "load"), ("json", "JSONDecoder"),
           ("pyarrow.json", "read_json")}

# (file, function) -> why the JSON it parses is not a record line, or why it may.
ALLOWED = {
    ("python/rangeprof/records.py", "*"): "the record reader itself",
    ("python/rangeprof/frame.py", "_ArrowReader._parse"):
        "the columnar reader of run lines, pyarrow's; test_frame_records.py ties its "
        "schema and its verdicts to records.py",
    ("python/rangeprof/frame.py", "_ArrowReader._config_keys"):
        "the keys frame.py made itself of range texts (json.dumps), read back",
    ("python/rangeprof/runcolumns.py", "_read"):
        "the conversion's fast path: pyarrow on run lines with frame.py's schema and "
        "checks (_ArrowReader._schema, _acceptable); test_dataset_columns.py ties its "
        "columns and its verdicts to load()'s",
    ("python/rangeprof/dataset.py", "_check_marker"):
        "a Parquet dataset's marker file, the dataset's own JSON",
    ("python/rangeprof/dataset.py", "ledger"):
        "a Parquet dataset's ledger, the dataset's own JSON Lines",
    ("python/rangeprof/_control.py", "*"):
        "the control API's rangeprof_info() text, a JSON object, not a record",
    ("tests/gpu/check_control.py", "info"): "rangeprof_info()'s JSON object",
    ("tests/gpu/check_nsight_script.py", "load"): "a DataFrame written with orient='split'",
    ("tests/gpu/check_notebook.py", "verify"): "the notebook's values, written by the check",
    ("tests/gpu/notebook_stamp.py", "*"): "the notebook (.ipynb) file",
    ("tests/gpu/nsight_python/run.py", "check_import"):
        "what a child process printed as JSON about its environment",
}


def parser_calls(source, filename="<source>"):
    """[(function, line, parser)] of each use of a JSON parser in source: a call, or a
    reference (a parser handed on), under the names the module imports it as.
    function: 'Class.method', 'function', or '<module>'."""
    tree = ast.parse(source, filename)
    modules, names = {}, {}   # local name -> module; local name -> (module, attribute)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                modules[a.asname or a.name.split(".")[0]] = a.name if a.asname else \
                    a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                if (node.module, a.name) in PARSERS:
                    names[a.asname or a.name] = (node.module, a.name)
                else:
                    modules[a.asname or a.name] = f"{node.module}.{a.name}"
    found = []

    def dotted(node):
        if isinstance(node, ast.Name):
            return modules.get(node.id, node.id)
        if isinstance(node, ast.Attribute):
            base = dotted(node.value)
            return f"{base}.{node.attr}" if base else None
        return None

    def visit(node, where):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                visit(child, child.name if where == "<module>" else f"{where}.{child.name}")
                continue
            hit = None
            if isinstance(child, ast.Attribute):
                base = dotted(child.value)
                if (base, child.attr) in PARSERS:
                    hit = f"{base}.{child.attr}"
                elif child.attr == "read_json":  # pyarrow's or pandas', however reached
                    hit = f"{base or '...'}.read_json"
            elif isinstance(child, ast.Name) and child.id in names:
                hit = ".".join(names[child.id])
            if hit:
                found.append((where, child.lineno, hit))
            visit(child, where)
    visit(tree, "<module>")
    return found


def _scan():
    out = []
    for folder, pattern in SCANNED:
        for path in sorted((ROOT / folder).glob(pattern)):
            rel = path.relative_to(ROOT).as_posix()
            for where, line, parser in parser_calls(path.read_text(), rel):
                out.append((rel, where, line, parser))
    return out


def test_the_scan_finds_a_parser_under_any_name():
    """The scan itself: it must see what it guards against."""
    source = '''
import json
import json as j
from json import loads as parse
import pyarrow.json
from pyarrow import json as pj

def a(line):
    return json.loads(line)

class R:
    def b(self, f):
        return j.load(f), parse("1"), pyarrow.json.read_json(f), pj.read_json(f), \
            self.pa.json.read_json(f)

decode = json.JSONDecoder().decode
rows = list(map(json.loads, []))
'''
    found = [(w, p) for w, _, p in parser_calls(source)]
    assert found == [("a", "json.loads"), ("R.b", "json.load"), ("R.b", "json.loads"),
                     ("R.b", "pyarrow.json.read_json"), ("R.b", "pyarrow.json.read_json"),
                     ("R.b", "self.pa.json.read_json"),
                     ("<module>", "json.JSONDecoder"), ("<module>", "json.loads")]
    # json.dumps, a method named loads of another object: not parsers.
    assert parser_calls("import json, pickle\njson.dumps(1)\npickle.loads(b'')\n") == []


def test_no_json_is_parsed_outside_records_py_but_the_listed_non_records():
    if not (ROOT / "tests" / "gpu").is_dir():
        pytest.skip("not a source checkout")
    unlisted = [f"{rel}:{line}: {parser} in {where}" for rel, where, line, parser in _scan()
                if (rel, where) not in ALLOWED and (rel, "*") not in ALLOWED]
    assert not unlisted, (
        "JSON parsed outside rangeprof/records.py: read records with records.parse_line "
        "or records.Reader (tests/gpu: gpu_records.read), or, for JSON that is not a "
        "record, add it to ALLOWED saying what it is:\n" + "\n".join(unlisted))


def test_every_allowed_entry_is_still_used():
    """An entry whose parser has gone is removed, so that the list stays a list of the
    exceptions there are."""
    if not (ROOT / "tests" / "gpu").is_dir():
        pytest.skip("not a source checkout")
    used = {(rel, where) for rel, where, _, _ in _scan()} | \
        {(rel, "*") for rel, _, _, _ in _scan()}
    assert [k for k in ALLOWED if k not in used] == []
