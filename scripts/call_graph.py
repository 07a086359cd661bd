#!/usr/bin/env python3
"""scripts/call_graph.py - finds call circles between the .c files of rangeprof's C folders.

STYLE.md: "Calls go one way". A circle between files (a.c calls b.c, which calls a.c,
maybe through others) means neither file owns the state they share. This script reads
each .c file of the folders given (default: inject nvtx_bridge collector memory common,
under the repository root), with comments, strings and preprocessor lines taken out, and
- names the functions each file defines, and which of them have external linkage (not
  'static': only those can be called from another file);
- lists, for each file, every identifier followed by '(' inside a function body (a call)
  and every other use of a name another file defines (a function handed on as a pointer,
  which makes that file's code run from here just the same), resolved to the file that
  defines it; a name the file defines itself, static or not, is its own;
- finds the strongly connected components of that file graph (Tarjan's algorithm).
It is regex level, not a C parser: a call made through a macro defined in a header is not
seen, and a local variable named like another file's function counts as a use of it
(functions across files carry their folder's prefix, so that is rare).

Prints each circle of two or more files with the calls that make it, and exits 1 when
there is one; exits 0 saying how many files and cross-file edges it read otherwise.
Standard library only.

    scripts/call_graph.py [--root DIR] [--exclude FOLDER]... [FOLDER...]
"""
import argparse
import re
import sys
from pathlib import Path

DEFAULT_FOLDERS = ["inject", "nvtx_bridge", "collector", "memory", "common"]

# Words that are followed by '(' without being calls of a function defined in the tree.
KEYWORDS = {
    "if", "for", "while", "switch", "return", "sizeof", "do", "else", "case", "goto",
    "_Alignof", "alignof", "_Alignas", "_Static_assert", "static_assert", "_Generic",
    "__attribute__", "__typeof__", "typeof", "__typeof", "__asm__", "asm", "__extension__",
    "__builtin_offsetof", "offsetof", "defined", "__declspec",
}

_TOKEN = re.compile(r"[A-Za-z_]\w*|\S")


def strip_source(text):
    """text with comments, string and character literals and preprocessor lines replaced
    by spaces (newlines kept, so that nothing of the code moves lines)."""
    out = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c == "#":
            # A preprocessor line, with its continuations: a macro body is no definition.
            j = i
            while j < n:
                k = text.find("\n", j)
                if k < 0:
                    k = n
                    break
                if text[k - 1] == "\\":
                    j = k + 1
                    continue
                break
            out.append(re.sub(r"[^\n]", " ", text[i:k]))
            i = k
            continue
        if c == "/" and text.startswith("/*", i):
            k = text.find("*/", i + 2)
            k = n if k < 0 else k + 2
            out.append(re.sub(r"[^\n]", " ", text[i:k]))
            i = k
            continue
        if c == "/" and text.startswith("//", i):
            k = text.find("\n", i)
            k = n if k < 0 else k
            out.append(" " * (k - i))
            i = k
            continue
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + " " * max(0, j - i - 2) + c if j - i >= 2 else " ")
            i = j
            continue
        out.append(c)
        if c == "\n":
            line_start = True
        elif not c.isspace():
            line_start = False
        i += 1
    return "".join(out)


def scan(text):
    """(defined, exported, used) of one stripped .c file: the names of the functions it
    defines, those of them without 'static', and the identifiers used inside function
    bodies (called or not), each with the name of the function using it."""
    tokens = _TOKEN.findall(text)
    defined, exported = set(), set()
    used = []                    # (identifier, called, enclosing function)
    depth = 0                    # brace depth
    header = []                  # tokens at depth 0 since the last ';' or '}'
    current = None               # the function whose body we are in
    for pos, tok in enumerate(tokens):
        if depth == 0:
            if tok == "{":
                name = _function_name(header)
                if name:
                    defined.add(name)
                    if "static" not in header:
                        exported.add(name)
                    current = name
                else:
                    current = None   # a struct, union, enum or initializer
                depth = 1
                header = []
            elif tok in (";", "}"):
                header = []
            else:
                header.append(tok)
            continue
        if tok == "{":
            depth += 1
        elif tok == "}":
            depth -= 1
            if depth == 0:
                current = None
                header = []
        elif current and (tok[0].isalpha() or tok[0] == "_") and tok not in KEYWORDS:
            prev = tokens[pos - 1] if pos else ""
            if prev in (".", "->"):
                continue     # a member, such as a table's function pointer
            nxt = tokens[pos + 1] if pos + 1 < len(tokens) else ""
            used.append((tok, nxt == "(", current))
    return defined, exported, used


def _function_name(header):
    """The name a definition header ('static int f(void)') defines, or None when the
    tokens before a '{' are no function header (struct x, an initializer after '=')."""
    depth = 0
    for k, tok in enumerate(header):
        if tok == "(":
            depth += 1
        elif tok == ")":
            depth -= 1
        elif depth == 0 and tok == "=":
            return None
    # The first identifier at parenthesis depth 0 that is followed by '(' and is not an
    # attribute: 'int f(void)', 'RP_EXPORT int InitializeInjection(void)'.
    depth = 0
    for k, tok in enumerate(header[:-1]):
        if tok == "(":
            depth += 1
        elif tok == ")":
            depth -= 1
        elif (depth == 0 and header[k + 1] == "(" and tok not in KEYWORDS
              and (tok[0].isalpha() or tok[0] == "_")):
            return tok
    return None


def build_graph(root, folders, exclude=()):
    """{file: {other file: sorted [(caller, callee)]}} over the .c files of folders under
    root (recursively), leaving out those under an excluded folder; and the file count."""
    root = Path(root)
    files = []
    for folder in folders:
        base = root / folder
        if base.is_dir():
            files.extend(sorted(base.rglob("*.c")))
    skipped = [root / e for e in exclude]
    files = [f for f in files if not any(s == f or s in f.parents for s in skipped)]
    info = {}
    for f in files:
        rel = f.relative_to(root).as_posix()
        info[rel] = scan(strip_source(f.read_text(encoding="utf-8", errors="replace")))
    owners = {}
    for rel, (_, exported, _) in info.items():
        for name in exported:
            owners.setdefault(name, []).append(rel)
    graph = {rel: {} for rel in info}
    for rel, (defined, _, used) in info.items():
        for name, _called, caller in used:
            if name in defined:
                continue     # its own function, or a static one shadowing another's
            for owner in owners.get(name, ()):
                if owner != rel:
                    graph[rel].setdefault(owner, set()).add((caller, name))
    return {f: {g: sorted(e) for g, e in out.items()} for f, out in graph.items()}, len(info)


def circles(graph):
    """The strongly connected components of two or more files (Tarjan), each sorted,
    in the order of their first file."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        # Iterative, so that a long chain of files cannot exhaust Python's recursion.
        work = [(v, iter(sorted(graph[v])))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        while work:
            node, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    advanced = True
                    break
                if w in on_stack:
                    low[node] = min(low[node], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def describe(graph, component):
    """Lines naming the calls between the files of one circle."""
    members = set(component)
    lines = [f"call circle between {len(component)} files: " + ", ".join(component)]
    for f in component:
        for g, edges in sorted(graph[f].items()):
            if g in members:
                shown = ", ".join(f"{caller}() -> {callee}()" for caller, callee in edges[:4])
                more = f" and {len(edges) - 4} more" if len(edges) > 4 else ""
                lines.append(f"  {f} -> {g}: {shown}{more}")
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="*", default=DEFAULT_FOLDERS,
                        help="folders under the root whose .c files are read "
                             "(default: %(default)s)")
    parser.add_argument("--root", default=Path(__file__).resolve().parent.parent,
                        help="the repository root (default: this script's parent folder's)")
    parser.add_argument("--exclude", action="append", default=[],
                        help="a folder (or file) under the root to leave out; repeatable")
    args = parser.parse_args(argv)
    graph, count = build_graph(args.root, args.folders, args.exclude)
    found = circles(graph)
    for component in found:
        print("\n".join(describe(graph, component)))
    if found:
        print(f"call_graph: {len(found)} call circle(s) among {count} files", file=sys.stderr)
        return 1
    edges = sum(len(out) for out in graph.values())
    print(f"call_graph: no call circle among {count} files ({edges} file-to-file edges)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
