#!/usr/bin/env python3
"""scripts/check_citations.py - every citation of a file of this repository, in its
sources and docs, names a file that exists, and where it quotes a section of a Markdown
file ('doc/measurements.md, "Control API"'), a heading that exists there. A citation that
dangles (a file split or renamed, a section retitled) is a claim nobody can check.

    python3 scripts/check_citations.py [ROOT]     # exit 0: all resolve; 1: each listed

Run by python/tests/test_citations.py in the unit suite (and so by CI).

A path is resolved from the repository root, then from the citing file's folder and
those above it (python/tests cites tests/test_x.py as its own). Paths that are not
citations of ours (Nsight Python's files, names made up in examples) are listed in
NOT_OURS with why."""
import os
import re
import subprocess
import sys

TOP = ("inject", "collector", "memory", "common", "nvtx_bridge", "scripts", "python",
       "tests", "bench", "doc", "examples", "subprojects")
EXT = r"(?:c|h|cu|cuh|py|sh|md|txt|build|jsonl|csv|1|toml|ipynb)"
PATH = re.compile(r"(?<![\w./-])((?:%s)/[A-Za-z0-9_./-]*?\.%s)(?![\w/-]|\.\w)" % ("|".join(TOP), EXT))
# 'doc/x.md, "Title"', 'doc/x.md "Title"', 'doc/x.md, section "Title"'
SECTION = re.compile(r'^[,:]? (?:section )?"([^"\n]{3,100})"')
NOT_OURS = {
    # Nsight Python's own tests and examples, fetched into tests/gpu/nsight_python/upstream/
    # (never committed), named by their path in its repository.
    re.compile(r"^tests/test_(profiler|annotate|api_params|info_collector_integration|"
               r"cuda_init_before_nsight)\.py$"): "Nsight Python's test",
    re.compile(r"^examples/(\d\d_\w+|NN_x|__init__|test_examples)\.py$"): "Nsight Python's example",
}
# Files whose paths are data, not citations: tests that make up file names.
DATA = {"python/tests/test_call_graph.py": "made-up sources for the call-graph checker",
        "python/tests/test_nsight_deliberate.py": "made-up Nsight Python test ids",
        "python/tests/test_citations.py": "the made-up trees this script is tested on",
        "scripts/check_citations.py": "its own examples of the forms it reads"}
# A file named as it was ('the former inject/replay.c') is history, not a citation.
FORMER = re.compile(r"former(ly)? $")


def files(root):
    """The tracked files (git ls-files), or where ROOT is no git checkout, every file."""
    r = subprocess.run(["git", "-C", root, "ls-files"], capture_output=True, text=True)
    if r.returncode == 0:
        out = r.stdout.split("\n")
    else:
        out = [os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root)
               for f in fs]
    return [f for f in out if f and not f.startswith("subprojects/") and f not in DATA
            and "/fixtures/" not in f and not f.endswith((".ipynb", ".png", ".whl"))]


def headings(path, cache={}):
    if path not in cache:
        with open(path, encoding="utf-8") as f:
            # A heading, or a list item's bold title ('- **What a range saves** (...)').
            cache[path] = [re.sub(r"^(#+\s*|-\s+)", "", line).replace("`", "")
                           .replace("**", "").strip()
                           for line in f if line.startswith("#") or line.startswith("- **")]
    return cache[path]


def resolve(root, citing, cited):
    if os.path.exists(os.path.join(root, cited)):
        return cited
    if os.path.exists(os.path.join(root, "python", cited)):   # 'cd python && ...'
        return os.path.join("python", cited)
    d = os.path.dirname(citing)
    while d:
        if os.path.exists(os.path.join(root, d, cited)):
            return os.path.join(d, cited)
        d = os.path.dirname(d)
    return None


def check(root):
    bad = []
    for name in files(root):
        try:
            with open(os.path.join(root, name), encoding="utf-8") as f:
                text = f.read()
        except (UnicodeDecodeError, IsADirectoryError, FileNotFoundError):
            continue
        for m in PATH.finditer(text):
            cited = m.group(1).rstrip(".")
            line = text.count("\n", 0, m.start()) + 1
            if any(p.search(cited) for p in NOT_OURS) or FORMER.search(text[max(0, m.start() - 9):m.start()]):
                continue
            where = resolve(root, name, cited)
            if where is None:
                bad.append(f"{name}:{line}: cites {cited}, which does not exist")
                continue
            # A title may run onto the comment's next line.
            after = re.sub(r"\n\s*(?:\*|//|#+|--)?\s*", " ", text[m.end():m.end() + 200])
            s = SECTION.match(after)
            if s and where.endswith(".md"):
                title = s.group(1)
                if not any(h == title or h.startswith(title) for h in headings(os.path.join(root, where))):
                    bad.append(f'{name}:{line}: cites {where}, "{title}", which has no such heading')
    return bad


if __name__ == "__main__":
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    bad = check(root)
    for b in bad:
        print(b)
    print(f"check_citations: {len(bad)} dangling citation(s)", file=sys.stderr)
    sys.exit(1 if bad else 0)
