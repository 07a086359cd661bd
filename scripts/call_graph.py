#!/usr/bin/env python3
"""scripts/call_graph.py - finds call circles between the .c files of rangeprof's C folders.

STYLE.md: "Calls go one way". A circle between files (a.c calls b.c, which calls a.c,
maybe through others) means neither file owns the state they share. This script reads
each .c file of the folders given (default: inject nvtx_bridge collector memory common,
under the repository root), with comments, strings and preprocessor lines taken out, and
- names the functions and the file-scope variables and constants each file defines, and
  which of them have external linkage (not 'static': only those can be used from another
  file);
- lists, for each file, every identifier inside a function body or a file-scope initializer
  that names another file's function (a call, or a function handed on as a pointer, which
  makes that file's code run from here just the same) or its variable or constant (data:
  the `rp_api` table, a `struct inject_workload`, an array; state shared through it ties
  the files as a call does), resolved to the file that defines it; a name the file
  defines itself, static or not, is its own;
- counts the uses in a header's inline functions and macros, and in the file's own
  macros, as uses of the file that names them (their code is compiled there);
- finds the strongly connected components of that file graph (Tarjan's algorithm).
It is regex level, not a C parser: a local variable named like another file's function or
variable counts as a use of it (names across files carry their folder's prefix, so that is
rare), and a macro is expanded by the names its body uses, whatever its arguments.

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


def strip_source(text, keep_directives=False):
    """text with comments, string and character literals and (unless keep_directives)
    preprocessor lines replaced by spaces (newlines kept, so that nothing moves lines)."""
    out = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c == "#" and not keep_directives:
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
    bodies and file-scope initializers (called or not), each as (identifier, called, the
    function or variable using it). scan_symbols says more, the variables included."""
    found = scan_symbols(text)
    return (found["functions"], found["exported"] & found["functions"], found["used"])


def scan_symbols(text):
    """What one stripped .c or .h file defines and uses: a dict of
    - functions: the names of the functions it defines (with a body);
    - variables: the names of the variables and constants it defines at file scope (not
      'extern', not 'typedef');
    - exported: those of both without 'static' (only those can be used from another file);
    - used: [(identifier, called, user)] for every identifier inside a function body or a
      file-scope initializer, called when '(' follows it, user being the function or
      variable whose code or value it is in;
    - bodies: {function: set of identifiers its body uses} (for a header's inline functions,
      whose code runs in the file that calls them);
    - declared: the names of its prototypes and extern declarations (what a header offers)."""
    tokens = _TOKEN.findall(text)
    functions, variables, exported, declared = set(), set(), set(), set()
    used, bodies = [], {}
    depth = 0                    # brace depth
    header = []                  # tokens at depth 0 since the last ';' or '}', a brace
    #                              block other than a function's body standing as "{}"
    current = None               # the function or variable whose body we are in
    for pos, tok in enumerate(tokens):
        if depth == 0:
            if tok == "{":
                name = _function_name(header)
                if name:
                    functions.add(name)
                    if "static" not in header:
                        exported.add(name)
                    current = name
                    bodies.setdefault(name, set())
                    header = []
                else:
                    # A struct, union or enum body (its declarators follow the '}'), or a
                    # variable's initializer: its uses are the variable's.
                    initialized = _declared(header) if "=" in header else []
                    current = initialized[-1][0] if initialized else None
                    header.append("{")
                depth = 1
            elif tok == ";":
                _define(header, variables, exported, used, declared)
                header = []
            elif tok == "}":
                header = []
            else:
                header.append(tok)
            continue
        if tok == "{":
            depth += 1
        elif tok == "}":
            depth -= 1
            if depth == 0:
                if header and header[-1] == "{":
                    header[-1] = "{}"       # a struct or an initializer: declarators follow
                else:
                    header = []
                current = None
        elif current and (tok[0].isalpha() or tok[0] == "_") and tok not in KEYWORDS:
            prev = tokens[pos - 1] if pos else ""
            if prev in (".", "->"):
                continue     # a member, such as a table's function pointer
            nxt = tokens[pos + 1] if pos + 1 < len(tokens) else ""
            used.append((tok, nxt == "(", current))
            if current in bodies:
                bodies[current].add(tok)
    return {"functions": functions, "variables": variables, "exported": exported,
            "used": used, "bodies": bodies, "declared": declared}


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


# Words that precede a declarator without naming it.
_NOT_NAMES = KEYWORDS | {"struct", "union", "enum"}


def _declared(header):
    """[(name, is_function_prototype, initializer tokens)] for each declarator of a
    file-scope declaration's tokens ('static int a = 1, b[2]', 'void (*hook)(void)')."""
    if not header or header[0] == "typedef" or "typedef" in header:
        return []
    if header[0] in ("_Static_assert", "static_assert"):
        return []                     # declares nothing; its words are no definitions
    if "{}" in header:
        # 'struct x { ... } a, b' and 'T v = { ... }': only what follows the last block, or
        # the part before '=' when the block was an initializer.
        k = len(header) - 1 - header[::-1].index("{}")
        if "=" not in header[:k]:
            header = ["T"] + header[k + 1:]
    out, segment, depth = [], [], 0
    segments = []
    for tok in header:
        if tok in "([":
            depth += 1
        elif tok in ")]":
            depth -= 1
        if tok == "," and depth == 0:
            segments.append(segment)
            segment = []
        else:
            segment.append(tok)
    segments.append(segment)
    first = True
    for seg in segments:
        init = []
        # The '=' of an initializer, at parenthesis depth 0 ('==' inside
        # '_Static_assert(a == 1, ...)' comes as two '=' within parentheses).
        depth, k = 0, None
        for i, tok in enumerate(seg):
            depth += tok in "([" and 1 or (tok in ")]" and -1 or 0)
            if tok == "=" and depth == 0:
                k = i
                break
        if k is not None:
            seg, init = seg[:k], seg[k + 1:]
        name, prototype = _declarator_name(seg, first)
        first = False
        if name:
            out.append((name, prototype, init))
    return out


def _declarator_name(seg, first):
    """The name a declarator declares, and whether it is a function's prototype."""
    depth = 0
    name = None
    for k, tok in enumerate(seg):
        if tok in "([":
            depth += 1
            continue
        if tok in ")]":
            depth -= 1
            continue
        if depth or not (tok[0].isalpha() or tok[0] == "_") or tok in _NOT_NAMES:
            continue
        if k and seg[k - 1] in ("struct", "union", "enum"):
            continue
        if k + 1 < len(seg) and seg[k + 1] == "(":
            return tok, True          # 'int f(void)': a prototype
        name = tok
    if name is None and "(" in seg:
        # 'void (*hook)(void)': a pointer to a function, named inside the first parentheses.
        k = seg.index("(")
        inner = [t for t in seg[k + 1:seg.index(")", k)] if t[0].isalpha() or t[0] == "_"]
        return (inner[-1] if inner else None), False
    if first and name is not None and len([t for t in seg if t not in ("*",)]) < 2:
        return None, False            # 'x;' alone declares nothing
    return name, False


def _define(header, variables, exported, used, declared):
    """Records the variables a file-scope declaration ending in ';' defines, the uses in an
    initializer that has no braces, and the names only declared (prototypes, extern)."""
    for name, prototype, init in _declared(header):
        if prototype or "extern" in header:
            declared.add(name)
            continue
        variables.add(name)
        if "static" not in header:
            exported.add(name)
        for tok in init:
            if (tok[0].isalpha() or tok[0] == "_") and tok not in KEYWORDS:
                used.append((tok, False, name))


_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)(\([^)]*\))?(.*)$", re.M)


def macros(text):
    """{name: identifiers its body uses} of the #define lines of a file (comments and strings
    taken out, continuations joined): a use of the macro uses those."""
    found = {}
    for m in _DEFINE.finditer(text.replace("\\\n", " ")):
        params = set(re.findall(r"\w+", m.group(2) or ""))
        body = [t for t in re.findall(r"(?<![.>\w])[A-Za-z_]\w*", m.group(3))
                if t not in KEYWORDS and t not in params and t != "__VA_ARGS__"]
        found[m.group(1)] = set(body)
    return found


def strip_comments(text):
    """text with comments and literals blanked, preprocessor lines kept."""
    return strip_source(text, keep_directives=True)


def build_graph(root, folders, exclude=()):
    """{file: {other file: sorted [(user, used)]}} over the .c files of folders under root
    (recursively), leaving out those under an excluded folder; and the file count.
    An edge is a call of another file's function, a use of it as a pointer, or a use of its
    variable or constant (data), from a function body or a file-scope initializer. A header's
    inline functions and macros are code of the file that uses them: their uses count there."""
    root = Path(root)
    files, headers = [], []
    for folder in folders:
        base = root / folder
        if base.is_dir():
            files.extend(sorted(base.rglob("*.c")))
            headers.extend(sorted(base.rglob("*.h")))
    skipped = [root / e for e in exclude]
    files = [f for f in files if not any(s == f or s in f.parents for s in skipped)]
    info, expand = {}, {}
    for h in headers:
        text = h.read_text(encoding="utf-8", errors="replace")
        for name, body in macros(strip_comments(text)).items():
            expand.setdefault(name, set()).update(body)
        for name, body in scan_symbols(strip_source(text))["bodies"].items():
            expand.setdefault(name, set()).update(body)
    local_macros = {}
    for f in files:
        rel = f.relative_to(root).as_posix()
        text = f.read_text(encoding="utf-8", errors="replace")
        info[rel] = scan_symbols(strip_source(text))
        local_macros[rel] = macros(strip_comments(text))
    owners = {}
    for rel, found in info.items():
        for name in found["exported"]:
            owners.setdefault(name, []).append(rel)
    kinds = {}
    for rel, found in info.items():
        for name in found["variables"]:
            kinds[name] = "data"
    graph = {rel: {} for rel in info}
    for rel, found in info.items():
        own = found["functions"] | found["variables"]
        user_is_function = found["functions"]
        for name, _called, user in found["used"]:
            shown_user = f"{user}()" if user in user_is_function else user
            for target, path in _resolve(name, own, local_macros[rel], expand):
                for owner in owners.get(target, ()):
                    if owner != rel:
                        shown = f"{target} (data)" if kinds.get(target) else f"{target}()"
                        via = "".join(f"{step} > " for step in path)
                        graph[rel].setdefault(owner, set()).add((shown_user, via + shown))
    return {f: {g: sorted(e) for g, e in out.items()} for f, out in graph.items()}, len(info)


def _resolve(name, own, local, expand):
    """(name, the macros and inline functions it went through) for name and for every name
    that the macros and header inline functions it names use, transitively; a name the file
    defines itself is its own."""
    out, seen, work = [], set(), [(name, ())]
    while work:
        n, path = work.pop()
        if n in seen or n in own and path == ():
            continue
        seen.add(n)
        body = local.get(n, expand.get(n))
        if body is None:
            if n not in own:
                out.append((n, path))
            continue
        if path == () and n in own:
            continue
        for m in body:
            work.append((m, path + (n,)))
    return out


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
    """Lines naming the calls and uses of data between the files of one circle."""
    members = set(component)
    lines = [f"call circle between {len(component)} files: " + ", ".join(component)]
    for f in component:
        for g, edges in sorted(graph[f].items()):
            if g in members:
                shown = ", ".join(f"{user} -> {used}" for user, used in edges[:4])
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
