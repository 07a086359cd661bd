"""doc/layout.md draws the folder map of the C code: every .c file of inject/ (and of its
groups, one subfolder each), nvtx_bridge/, collector/, memory/ and common/ is on it, under
the heading of the folder that holds it, and it names no file that does not exist (issue
19: the map matches the code; issue 34: the folders show the groups)."""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
FOLDERS = ("inject", "nvtx_bridge", "collector", "memory", "common")


def mapped():
    """(folder, file) for every `name.c` in a folder's section of doc/layout.md."""
    text = (ROOT / "doc" / "layout.md").read_text(encoding="utf-8")
    found, folder = set(), None
    for line in text.splitlines():
        head = re.match(r"#{2,3} ([\w/]+)/", line)
        if head:
            folder = head.group(1)
            continue
        if folder:
            for name in re.findall(r"`(?:[\w/]*/)?([\w]+\.c)`", line):
                prefix = re.search(r"`([\w]+)/" + re.escape(name) + "`", line)
                found.add((prefix.group(1) if prefix else folder, name))
    return found


def test_every_c_file_is_on_the_map_and_the_map_names_only_real_files():
    real = {(p.parent.relative_to(ROOT).as_posix(), p.name)
            for f in FOLDERS for p in (ROOT / f).rglob("*.c")}
    on_map = {(f, n) for f, n in mapped() if f.split("/")[0] in FOLDERS}
    assert real - on_map == set(), f"not on doc/layout.md: {sorted(real - on_map)}"
    assert on_map - real == set(), f"on doc/layout.md but not in the tree: {sorted(on_map - real)}"
