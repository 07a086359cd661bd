#!/usr/bin/env python3
"""scripts/check_names.py - every function with external linkage in inject/ carries the
name of its file or of its group, so that a call says where the callee lives.

doc/layout.md: inject/'s groups are its subfolders (callback/, graph/, range/, kernel/,
measure/, session/); the files at the top of inject/ are the entry, the set-up and what
every group uses. A function defined in a group's file must begin with `inject_` and the
group's name, the group's name, `inject_` and the file's name, or the file's name
(`range_ops_init` and `inject_range_opened` in inject/range/range_ops.c); one in a file
at the top of inject/ with `inject_` and the file's name. FILE may drop a final "s" (`inject_name_of` in names.c). The library's
exported symbols (inject/rangeprof.map: the entry points and the control API) keep the
names their callers know.

A function of the other C folders begins with its folder's prefix (collector_, mem_,
rp_; nvtx_bridge/'s with nvtx_ or bridge_) or its file's name (`stats_sort` in
collector/stats.c).

Reads the files with scripts/call_graph.py's scanner (comments, strings and preprocessor
lines taken out). Prints each function whose name does not say where it lives and exits 1;
exits 0 saying how many it read otherwise. Standard library only.

    scripts/check_names.py [--root DIR]
"""
import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from call_graph import scan, strip_source  # noqa: E402

FOLDER_PREFIXES = {
    "collector": ("collector_",),
    "memory": ("mem_",),
    "nvtx_bridge": ("nvtx_", "bridge_"),
    "common": ("rp_",),
}


def exported_symbols(root):
    """The names inject/rangeprof.map exports: they are the library's interface."""
    text = (root / "inject" / "rangeprof.map").read_text(encoding="utf-8")
    text = re.sub(r"/\*.*?\*/|#[^\n]*", " ", text, flags=re.S)
    return set(re.findall(r"\b([A-Za-z_]\w*)\s*;", text)) - {"local"}


def allowed_prefixes(rel):
    """The prefixes a function defined in rel (a path under the root) may carry."""
    parts = Path(rel).parts
    stem = Path(rel).stem
    stems = {stem, stem[:-1]} if stem.endswith("s") else {stem}
    found = []
    for s in sorted(stems):
        found += [f"inject_{s}", f"{s}_"]
    if parts[0] != "inject":
        return FOLDER_PREFIXES.get(parts[0], ()) + tuple(found[1::2])
    if len(parts) > 2:
        group = parts[1]
        found += [f"inject_{group}_", f"{group}_"]
    return tuple(found)


def check(root):
    """[(file, function)] of the functions whose name does not say where they live, and
    the number of functions read."""
    root = Path(root)
    public = exported_symbols(root)
    wrong, count = [], 0
    for folder in ["inject", *FOLDER_PREFIXES]:
        for f in sorted((root / folder).rglob("*.c")):
            rel = f.relative_to(root).as_posix()
            _, exported, _ = scan(strip_source(f.read_text(encoding="utf-8",
                                                          errors="replace")))
            prefixes = allowed_prefixes(rel)
            for name in sorted(exported):
                count += 1
                if name in public or name.startswith(prefixes):
                    continue
                wrong.append((rel, name))
    return wrong, count


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1],
                        help="the repository root (default: this script's parent folder's)")
    args = parser.parse_args()
    wrong, count = check(args.root)
    for rel, name in wrong:
        print(f"{rel}: {name} carries neither its file's nor its group's name "
              f"(allowed: {', '.join(allowed_prefixes(rel))})")
    if wrong:
        return 1
    print(f"check_names: {count} functions, each named after its file or group")
    return 0


if __name__ == "__main__":
    sys.exit(main())
