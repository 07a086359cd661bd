#!/usr/bin/env python3
"""scripts/check_maps.py - the maps written in comments and in doc/layout.md are checked
against the code, so that none can go stale (issue 34 item 6: a review found 11 stale call
and lock maps in file headers, and a list of 5 locks called complete beside 20 mutexes).

The call graph is scripts/call_graph.py's (calls, functions handed on as pointers, and uses
of another file's variables and constants). Checked:

1. Every .c file's opening comment has, each on lines of its own, one sentence
       Calls: a.c, b.c (why, in parentheses), collector/, memory/.
       Called by: x.c (why), inject/.
   naming the files it uses and the files that use it: a file of the same top folder by
   its name (its path under the folder where two share a name), one of another top folder
   by that folder (collector/, memory/, nvtx_bridge/, common/, inject/); "none" when there
   is none ("Calls: none (libc only)."). Both lists are complete: a name that is not true,
   and a true one left out, fail. A header (.h) carries no such sentence: the map of its
   functions is in its .c files' comments. Any other sentence of an opening comment that
   says who calls whom ("called by launch.c", "calls collector/api", "a.c -> b.c") fails:
   it would not be checked.
2. Every .c file's opening comment has one sentence "Lock: ..." naming what guards its
   state: "the replay lock", the locks it defines itself (by their variable's name), or
   "none" (atomics, thread-local, written once before any callback: the note says which).
   A file that defines a lock names it; a file that asserts INJECT_REPLAY_HELD() names the
   replay lock; a file that names the replay lock has every function with external linkage
   assert it or take it (inject_session_lock), or names the function after "not asserted
   by:" in the same sentence, with why ("Lock: the replay lock; not asserted by:
   inject_x_need (reads the workload only)."). A function so named that does assert it,
   or that the file does not define, fails too. A header (.h) that says "under the replay
   lock" has every .c file that defines what it declares name the replay lock.
3. doc/layout.md's "Locks" section names every lock the sources define (a pthread_mutex_t,
   pthread_rwlock_t, pthread_spinlock_t, mtx_t, struct rp_lock or atomic_flag variable or
   member, by file and name), and no other.
4. doc/layout.md's "which way the calls run" is a numbered list of tiers of inject/'s
   groups, its top-level files and the other folders; every one of them is in one tier, and
   every edge of the graph between two of them runs to a lower tier. Its prose, like an
   opening comment's, states no call between files ("Calls registry.c"): the comments of
   the files hold those, checked.

Prints each fault as "file:line: what the comment says; what is true" and exits 1; exits 0
saying what it checked otherwise. --write rewrites the Calls: and Called by: sentences of
the .c files from the graph, keeping the notes of the names that stay. Standard library
only.

    scripts/check_maps.py [--root DIR] [--write]
"""
import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from call_graph import DEFAULT_FOLDERS, build_graph, scan_symbols, strip_source  # noqa: E402

FIELDS = ("Calls", "Called by", "Lock")
FOLDER_ORDER = ["inject/", "nvtx_bridge/", "collector/", "memory/", "common/"]
REPLAY = "the replay lock"
REPLAY_DEFINED = ("inject/session/session.c", "replay_lock")
TAKES_REPLAY = {"inject_session_lock", "inject_session_lock_until", "inject_launch_lock_replay"}
LOCK_TYPES = {"pthread_mutex_t", "pthread_rwlock_t", "pthread_spinlock_t", "mtx_t",
              "atomic_flag"}
WIDTH = 99

# A sentence of prose that states a call between files: it must be a checked field instead.
_FILE = r"(?:\b[\w/]+\.c\b|\b(?:inject|collector|memory|nvtx_bridge|common)/)"
_SPAN = r"(?:(?!\. )[^;:.]|\.[ch]\b|\.\w){0,70}?"
PROSE_CLAIMS = [
    # "Called by launch.c", "called from session.c"
    re.compile(r"\bcalled (?:by|from)\b" + _SPAN + _FILE, re.I),
    # "Calls x.c" at a sentence's start, "it calls", "and calls", "never calls": the verb,
    # not a driver's calls.
    re.compile(r"(?:^|[.;:]\s+|\b(?:it|and|never|only|also|which|that|then|file|files)\s+)"
               r"(?:calls|call|calling)\b" + _SPAN + _FILE, re.I),
    # "a.c -> b.c"
    re.compile(_FILE + r"[^.;]{0,40}?(?:->|→)\s*" + _FILE),
]


def opening_comment(text):
    """(lines of the opening /* */ comment with their ' * ' taken off, the index of its
    first line in the file, the index after its last) or None."""
    m = re.match(r"\s*/\*.*?\*/", text, re.S)
    if not m:
        return None
    start = text[:m.start() + len(m.group(0)) - len(m.group(0).lstrip())].count("\n")
    raw = m.group(0).strip().split("\n")
    lines = []
    for k, line in enumerate(raw):
        s = line
        if k == 0:
            s = s.split("/*", 1)[1]
        s = re.sub(r"\*/\s*$", "", s)
        if k > 0:
            s = re.sub(r"^\s*\*(?!/) ?", "", s)
        lines.append(s.strip())
    return lines, start, start + len(raw)


def fields(lines):
    """{field: [(first line index, last line index, text after 'Field:', whether it ends
    its line)]} of the comment's lines: a field begins a line and ends at the first '.'
    outside parentheses that is followed by a space or the line's end (a field that does
    not end its line is a fault)."""
    found, k = {}, 0
    while k < len(lines):
        m = re.match(r"(Calls|Called by|Lock):\s*(.*)", lines[k])
        if not m:
            k += 1
            continue
        name, body, first = m.group(1), m.group(2), k
        while True:
            end = _sentence_end(body)
            if end is not None or k + 1 >= len(lines):
                break
            k += 1
            body += " " + lines[k]
        found.setdefault(name, []).append((first, k, body if end is None else body[:end],
                                           end is not None and body[end + 1:].strip() == ""))
        k += 1
    return found


def _sentence_end(body):
    depth = 0
    for i, c in enumerate(body):
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "." and depth == 0 and (i + 1 == len(body) or body[i + 1] == " "):
            return i
    return None


def items(body):
    """[(name, note or '')] of a field's comma-separated list; a note is in parentheses."""
    out, depth, cur = [], 0, ""
    for c in body + ",":
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        if c == "," and depth == 0:
            cur = cur.strip()
            if cur:
                m = re.match(r"(\S+)\s*(\(.*\))?$", cur, re.S)
                out.append((m.group(1), m.group(2) or "") if m else (cur, ""))
            cur = ""
        else:
            cur += c
    return out


class Units:
    """The names a file's comment uses for the other files: a file of the same top folder
    by its name, one of another top folder by that folder."""

    def __init__(self, files):
        self.by_top = {}
        for f in files:
            top = f.split("/")[0]
            self.by_top.setdefault(top, []).append(f)

    def name(self, subject, other):
        top = other.split("/")[0]
        if subject.split("/")[0] != top:
            return top + "/"
        base = other.rsplit("/", 1)[-1]
        same = [f for f in self.by_top[top] if f.rsplit("/", 1)[-1] == base]
        return base if len(same) == 1 else other.split("/", 1)[1]


def sort_key(name):
    if name.endswith("/"):
        return (1, FOLDER_ORDER.index(name) if name in FOLDER_ORDER else 99, name)
    return (0, 0, name)


def truth(graph, units, subject):
    """({callee name: an example edge}, {caller name: an example edge}) of one file."""
    calls, called = {}, {}
    for other, edges in graph[subject].items():
        calls.setdefault(units.name(subject, other), f"{edges[0][0]} -> {edges[0][1]}")
    for other, out in graph.items():
        if subject in out and other != subject:
            e = out[subject][0]
            called.setdefault(units.name(subject, other), f"{other}: {e[0]} -> {e[1]}")
    return calls, called


def check_calls(rel, lines, start, found, calls, called, problems):
    for field, true in (("Calls", calls), ("Called by", called)):
        entries = found.get(field, [])
        if not entries:
            listed = ", ".join(sorted(true, key=sort_key)) or "none"
            problems.append(f"{rel}:{start + 1}: its opening comment has no '{field}:' "
                            f"sentence; true: '{field}: {listed}.'")
            continue
        first, last, body, ends_line = entries[0]
        where = f"{rel}:{start + first + 1}"
        if len(entries) > 1:
            problems.append(f"{where}: '{field}:' is said {len(entries)} times; say it once")
        if not ends_line:
            problems.append(f"{where}: the '{field}:' sentence must end its line with a '.'")
        claimed = [n for n, _ in items(body)]
        if claimed == ["none"]:
            claimed = []
        verb = "calls or uses" if field == "Calls" else "is called or used by"
        for n in claimed:
            if n not in true:
                problems.append(f"{where}: says '{field}: {n}', but {rel} {verb} nothing of "
                                f"{n}")
        for n, example in sorted(true.items(), key=lambda kv: sort_key(kv[0])):
            if n not in claimed:
                problems.append(f"{where}: '{field}:' leaves out {n} ({example})")


def check_prose(rel, lines, start, found, problems):
    """A call claim outside the fields is not checked: it fails."""
    in_field = set()
    for entries in found.values():
        for first, last, _, _ in entries:
            in_field.update(range(first, last + 1))
    text_lines = [(k, s) for k, s in enumerate(lines) if k not in in_field]
    joined = " ".join(s for _, s in text_lines)
    offsets, pos = [], 0
    for k, s in text_lines:
        offsets.append((pos, k))
        pos += len(s) + 1
    for pattern in PROSE_CLAIMS:
        for m in pattern.finditer(joined):
            k = max(line for off, line in offsets if off <= m.start())
            problems.append(f"{rel}:{start + k + 1}: '{m.group(0)}' says who calls whom "
                            f"outside a 'Calls:' or 'Called by:' sentence, where nothing "
                            f"checks it")


def lock_definitions(rel, text):
    """[(name, line)] of the locks a file defines: variables and members of a lock type
    (not pointers, not parameters, not extern declarations)."""
    stripped = strip_source(text)
    tokens = [(m.group(0), stripped.count("\n", 0, m.start()) + 1)
              for m in re.finditer(r"[A-Za-z_]\w*|\S", stripped)]
    found, depth = [], 0
    for i, (tok, line) in enumerate(tokens):
        if tok == "(":
            depth += 1
        elif tok == ")":
            depth -= 1
        if depth:
            continue
        if tok in LOCK_TYPES:
            j = i + 1
        elif tok == "rp_lock" and i and tokens[i - 1][0] == "struct":
            j = i + 1
        else:
            continue
        if j < len(tokens) and tokens[j][0] == "{":
            continue                    # the struct's own definition
        while j < len(tokens) and tokens[j][0] in ("const", "volatile"):
            j += 1
        if j + 1 >= len(tokens) or not re.match(r"[A-Za-z_]", tokens[j][0]):
            continue                    # a pointer, or a cast
        if tokens[j + 1][0] not in (";", "=", ",", "["):
            continue
        back = [t for t, _ in tokens[max(0, i - 4):i]]
        if "extern" in back:
            continue
        found.append((tokens[j][0], line))
    return found


def check_lock(rel, text, lines, start, found, problems):
    entries = found.get("Lock", [])
    defined = lock_definitions(rel, text)
    if not entries:
        problems.append(f"{rel}:{start + 1}: its opening comment has no 'Lock:' sentence "
                        f"(the replay lock, its own lock's name, or none: what guards its "
                        f"state)")
        return []
    first, _, body, ends_line = entries[0]
    where = f"{rel}:{start + first + 1}"
    if not ends_line:
        problems.append(f"{where}: the 'Lock:' sentence must end its line with a '.'")
    head, _, exempt = body.partition("; not asserted by:")
    named = [n for n, _ in items(head.replace("the replay lock", "the_replay_lock"))]
    named = [REPLAY if n == "the_replay_lock" else n.strip("`") for n in named]
    own = {name for name, _ in defined}
    if (rel, "replay_lock") == REPLAY_DEFINED:
        own.discard("replay_lock")
    for n in named:
        if n not in (REPLAY, "none") and n not in own:
            problems.append(f"{where}: says 'Lock: {n}', but {rel} defines no lock {n} "
                            f"(it defines: {', '.join(sorted(own)) or 'none'})")
    for name, line in defined:
        if name in own and name not in named:
            problems.append(f"{rel}:{line}: defines the lock {name}, which its 'Lock:' "
                            f"sentence does not name")
    info = scan_symbols(strip_source(text))
    external = sorted(n for n in info["exported"] if n in info["functions"])
    asserting = [n for n in external if "INJECT_REPLAY_HELD" in info["bodies"][n]]
    any_assert = any("INJECT_REPLAY_HELD" in b for b in info["bodies"].values())
    if any_assert and REPLAY not in named:
        problems.append(f"{where}: its functions assert INJECT_REPLAY_HELD() "
                        f"({', '.join(asserting) or 'static ones'}), but 'Lock:' does not "
                        f"name the replay lock")
    listed = [n for n, _ in items(exempt)]
    if REPLAY in named:
        for n in external:
            body = info["bodies"][n]
            ok = "INJECT_REPLAY_HELD" in body or body & TAKES_REPLAY
            if not ok and n not in listed:
                problems.append(f"{where}: says its state is under the replay lock, but "
                                f"{n}() neither asserts INJECT_REPLAY_HELD() nor takes it, "
                                f"and is not named after 'not asserted by:'")
            if ok and n in listed:
                problems.append(f"{where}: names {n}() after 'not asserted by:', but it "
                                f"asserts or takes the replay lock")
    for n in listed:
        if n not in external:
            problems.append(f"{where}: names {n}() after 'not asserted by:', but {rel} "
                            f"defines no such external function")
    if exempt and REPLAY not in named:
        problems.append(f"{where}: 'not asserted by:' without the replay lock")
    return named


_UNDER_REPLAY = re.compile(r"\bunder\s+the\s+replay\s+lock\b", re.I)


def check_header_lock(rel, text, lines, start, owners, locks, problems):
    """A header that says its state or its functions are under the replay lock: every .c
    file that defines what it declares names the replay lock in its 'Lock:' sentence."""
    for k, line in enumerate(lines):
        joined = line + " " + (lines[k + 1] if k + 1 < len(lines) else "")
        m = _UNDER_REPLAY.search(joined)
        if m and m.start() < len(line):
            break
    else:
        return
    declared = scan_symbols(strip_source(text))["declared"]
    by_file = {}
    for name in sorted(declared):
        for owner in owners.get(name, ()):
            by_file.setdefault(owner, name)
    for owner, name in sorted(by_file.items()):
        if REPLAY not in locks.get(owner, []):
            problems.append(f"{rel}:{start + k + 1}: says 'under the replay lock', but {owner}, "
                            f"which defines {name} (declared here), does not name the replay "
                            f"lock in its 'Lock:' sentence")


def layout_sections(root):
    text = (root / "doc" / "layout.md").read_text(encoding="utf-8")
    sections, current = {}, None
    for k, line in enumerate(text.splitlines()):
        m = re.match(r"#{2,3} (.*)", line)
        if m:
            current = m.group(1)
            sections[current] = []
            continue
        if current:
            sections[current].append((k + 1, line))
    return sections


def section(sections, word):
    for title, lines in sections.items():
        if word in title:
            return lines
    return None


def check_layout_locks(root, files, problems):
    lines = section(layout_sections(root), "Locks")
    if lines is None:
        problems.append("doc/layout.md: no section whose title says 'Locks'")
        return 0
    listed = {}
    for k, line in lines:
        m = re.match(r"\s*- `([\w/]+\.[ch])`: `(\w+)`", line)
        if m:
            listed[(m.group(1), m.group(2))] = k
    real = {}
    for f in files:
        for name, line in lock_definitions(f, (root / f).read_text(encoding="utf-8")):
            real[(f, name)] = line
    for (f, name), line in sorted(real.items()):
        if (f, name) not in listed:
            problems.append(f"{f}:{line}: defines the lock {name}, which doc/layout.md's "
                            f"list of locks does not name (add '- `{f}`: `{name}`: ...')")
    for (f, name), k in sorted(listed.items()):
        if (f, name) not in real:
            problems.append(f"doc/layout.md:{k}: lists the lock `{name}` of `{f}`, which "
                            f"the sources do not define")
    return len(real)


def unit_of(rel):
    """inject/'s group (its subfolder) or top-level file, or another top folder."""
    parts = rel.split("/")
    if parts[0] != "inject":
        return parts[0] + "/"
    return parts[1] if len(parts) == 2 else parts[1] + "/"


def check_layout_order(root, graph, problems):
    lines = section(layout_sections(root), "which way the calls run")
    if lines is None:
        problems.append("doc/layout.md: no section whose title says 'which way the calls run'")
        return 0
    tier = {}
    for k, line in lines:
        m = re.match(r"(\d+)\. (.*)", line)
        if m:
            for unit in re.findall(r"`([\w./]+)`", m.group(2)):
                tier[unit] = (int(m.group(1)), k)
    units = {unit_of(f) for f in graph}
    for u in sorted(units - set(tier)):
        problems.append(f"doc/layout.md: '{u}' is in no tier of 'which way the calls run'")
    for u in sorted(set(tier) - units):
        problems.append(f"doc/layout.md:{tier[u][1]}: '{u}' is in a tier of 'which way the "
                        f"calls run' but no .c file is in it")
    checked = 0
    for f, out in sorted(graph.items()):
        for g, edges in sorted(out.items()):
            a, b = unit_of(f), unit_of(g)
            if a == b or a not in tier or b not in tier:
                continue
            checked += 1
            if tier[a][0] >= tier[b][0]:
                problems.append(f"doc/layout.md:{tier[a][1]}: {a} (tier {tier[a][0]}) is above "
                                f"{b} (tier {tier[b][0]}), but {f} -> {g}: {edges[0][0]} -> "
                                f"{edges[0][1]}")
    return checked


def wrap(field, entries, indent=" * "):
    """The lines of a field's sentence, under WIDTH columns."""
    words = []
    for k, (name, note) in enumerate(entries):
        text = name + (" " + note if note else "")
        words.append(text + ("," if k + 1 < len(entries) else "."))
    out, line = [], f"{indent}{field}:"
    for w in " ".join(words).split(" "):
        if len(line) + 1 + len(w) > WIDTH:
            out.append(line)
            line = indent + w
        else:
            line += " " + w
    out.append(line)
    return out


def rewrite(path, rel, calls, called):
    """The file's text with its Calls: and Called by: sentences made true."""
    text = path.read_text(encoding="utf-8")
    parsed = opening_comment(text)
    if parsed is None:
        return text
    lines, start, end = parsed
    found = fields(lines)
    file_lines = text.split("\n")
    edits, missing = [], []
    for field, true in (("Calls", calls), ("Called by", called)):
        old = found.get(field)
        notes = dict(items(old[0][2])) if old else {}
        if old and (set(notes) - {"none"}) == set(true):
            continue                    # true already: its wrapping stays the author's
        kept = [n for n in notes if n in true]
        added = sorted((n for n in true if n not in notes), key=sort_key)
        entries = [(n, notes.get(n, "")) for n in kept + added] or [
            ("none", notes.get("none", ""))]
        if old:
            edits.append((start + old[0][0], start + old[0][1], wrap(field, entries)))
        else:
            missing += wrap(field, entries)
    for a, b, new in sorted(edits, key=lambda e: -e[0]):
        if file_lines[b].rstrip().endswith("*/"):
            new = new[:-1] + [new[-1] + " */"]
        file_lines[a:b + 1] = new
    if missing:
        # At the comment's end: the last sentence's line keeps its words, ours follow.
        k = start + (end - start) - 1 + sum(len(n) - (b - a + 1) for a, b, n in edits)
        last = file_lines[k]
        if last.strip() == "*/":
            file_lines[k:k] = missing
        else:
            file_lines[k] = re.sub(r"\s*\*/\s*$", "", last)
            file_lines[k + 1:k + 1] = missing[:-1] + [missing[-1] + " */"]
    return "\n".join(file_lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=Path(__file__).resolve().parent.parent,
                        help="the repository root (default: this script's parent folder's)")
    parser.add_argument("--write", action="store_true",
                        help="rewrite the .c files' Calls: and Called by: sentences")
    args = parser.parse_args(argv)
    root = Path(args.root)
    graph, _ = build_graph(root, DEFAULT_FOLDERS)
    units = Units(graph)
    sources = sorted(p.relative_to(root).as_posix() for folder in DEFAULT_FOLDERS
                     if (root / folder).is_dir()
                     for p in (root / folder).rglob("*") if p.suffix in (".c", ".h"))
    problems = []
    if args.write:
        for rel in sorted(graph):
            calls, called = truth(graph, units, rel)
            path = root / rel
            new = rewrite(path, rel, calls, called)
            if new != path.read_text(encoding="utf-8"):
                path.write_text(new, encoding="utf-8")
                print(f"check_maps: wrote {rel}")
    owners = {}
    for rel in graph:
        found = scan_symbols(strip_source((root / rel).read_text(encoding="utf-8")))
        for name in found["exported"]:
            owners.setdefault(name, []).append(rel)
    claims, locks, header_text = 0, {}, {}
    for rel in sources:
        text = (root / rel).read_text(encoding="utf-8")
        parsed = opening_comment(text)
        if parsed is None:
            problems.append(f"{rel}:1: no opening comment")
            continue
        lines, start, end = parsed
        found = fields(lines)
        for k, line in enumerate(text.split("\n")[start:end]):
            if len(line) > WIDTH:
                problems.append(f"{rel}:{start + k + 1}: {len(line)} columns in the opening "
                                f"comment; C comments stay under 100")
        check_prose(rel, lines, start, found, problems)
        if rel.endswith(".h"):
            header_text[rel] = (text, lines, start)
            for field in ("Calls", "Called by"):
                for first, _, _, _ in found.get(field, []):
                    problems.append(f"{rel}:{start + first + 1}: a header carries no "
                                    f"'{field}:' sentence: its functions' map is in their "
                                    f".c files' opening comments")
            continue
        calls, called = truth(graph, units, rel)
        check_calls(rel, lines, start, found, calls, called, problems)
        locks[rel] = check_lock(rel, text, lines, start, found, problems)
        claims += len(calls) + len(called)
    for rel, (text, lines, start) in sorted(header_text.items()):
        check_header_lock(rel, text, lines, start, owners, locks, problems)
    layout = root / "doc" / "layout.md"
    if layout.exists():
        # Its prose may describe, not map: a call claim there belongs in a file's comment.
        check_prose("doc/layout.md", layout.read_text(encoding="utf-8").splitlines(), 0, {},
                    problems)
    locks = check_layout_locks(root, sources, problems)
    order = check_layout_order(root, graph, problems)
    for p in problems:
        print(p)
    if problems:
        print(f"check_maps: {len(problems)} fault(s)", file=sys.stderr)
        return 1
    print(f"check_maps: {len(graph)} files' maps true ({claims} names in Calls:/Called by:), "
          f"{locks} locks listed, {order} edges between tiers running down")
    return 0


if __name__ == "__main__":
    sys.exit(main())
