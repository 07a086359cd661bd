"""The committed tutorial notebook (examples/tutorial/tutorial.ipynb) shows what HEAD prints:
its outputs were made on the GPU (tests/gpu/notebook.sh) from the library and the Python
package as HEAD commits them, and from its cells as they are. tests/gpu/notebook_stamp.py
defines what counts as a change and says how to refresh the notebook; outside a git
checkout there is no HEAD to compare with and the test skips, saying so."""
from pathlib import Path

import pytest

from conftest import source_script

ROOT = Path(__file__).resolve().parents[2]


def _stamp_module():
    return source_script("tests/gpu/notebook_stamp.py")


def test_the_notebooks_outputs_are_heads():
    stamp = _stamp_module()
    try:
        problems = stamp.check(ROOT / stamp.NOTEBOOK, ROOT)
    except stamp.NotAGitCheckout as e:
        pytest.skip(f"{ROOT} is not a git checkout ({e}): no HEAD to compare the notebook with")
    assert not problems, "\n".join(problems)


# The stamp and the check themselves, on a small git repository of the same shape.
def _git(repo, *args):
    import subprocess
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True, env=env).stdout.strip()


@pytest.fixture
def repo(tmp_path, monkeypatch):
    import json
    import shutil
    if shutil.which("git") is None:
        pytest.fail("git is not installed: the notebook's freshness is judged by git")
    monkeypatch.delenv("RANGEPROF_COMMIT", raising=False)
    monkeypatch.delenv("RANGEPROF_DIRTY", raising=False)
    stamp = _stamp_module()
    (tmp_path / "inject").mkdir()
    (tmp_path / "inject" / "entry.c").write_text("int x;\n")
    (tmp_path / "python" / "rangeprof" / "__pycache__").mkdir(parents=True)
    (tmp_path / "python" / "rangeprof" / "__init__.py").write_text("v = 1\n")
    (tmp_path / "python" / "rangeprof" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    (tmp_path / "python" / "rangeprof" / "run.jsonl").write_text("{}\n")
    (tmp_path / "doc").mkdir()
    (tmp_path / "doc" / "x.md").write_text("doc\n")
    nb_path = tmp_path / stamp.NOTEBOOK
    nb_path.parent.mkdir(parents=True)
    nb = {"cells": [{"cell_type": "code", "source": ["import rangeprof\n", "1"],
                     "metadata": {}, "outputs": [], "execution_count": None}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    nb_path.write_text(json.dumps(nb))
    (tmp_path / ".gitignore").write_text("__pycache__/\n*.jsonl\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-q", "-m", "start")
    return stamp, tmp_path, nb_path


def test_an_unstamped_notebook_fails_naming_the_refresh(repo):
    stamp, root, nb_path = repo
    problems = stamp.check(nb_path, root)
    assert len(problems) == 1
    assert "records no run" in problems[0] and "tests/gpu/notebook.sh" in problems[0]


def test_a_stamp_at_head_passes_and_reads_the_files_as_git_does(repo):
    stamp, root, nb_path = repo
    meta = stamp.stamp(nb_path, root)
    assert meta["commit"] == _git(root, "rev-parse", "HEAD") and meta["dirty"] is False
    # The GPU machine's tree has no .git: the digest of the files equals git's of HEAD.
    assert meta["library_digest"] == stamp.library_digest_of_commit(root)
    _git(root, "commit", "-q", "-am", "the refreshed notebook")
    assert stamp.check(nb_path, root) == []
    # Outside the library's paths nothing counts.
    (root / "doc" / "x.md").write_text("more doc\n")
    _git(root, "commit", "-q", "-am", "docs")
    assert stamp.check(nb_path, root) == []


def test_a_library_commit_after_the_run_fails_naming_it(repo):
    stamp, root, nb_path = repo
    stamp.stamp(nb_path, root)
    _git(root, "commit", "-q", "-am", "the refreshed notebook")
    (root / "python" / "rangeprof" / "__init__.py").write_text("v = 2\n")
    _git(root, "commit", "-q", "-am", "a new value")
    problems = stamp.check(nb_path, root)
    assert "1 commit(s) since" in problems[0] and "a new value" in problems[0]
    assert problems[-1].startswith(f"Refresh {stamp.NOTEBOOK}: ")
    # Uncommitted, an edit does not count; committed back, the files are the run's again.
    (root / "python" / "rangeprof" / "__init__.py").write_text("v = 1\n")
    assert stamp.check(nb_path, root) != []
    _git(root, "commit", "-q", "-am", "back")
    assert stamp.check(nb_path, root) == []


def test_an_edited_cell_fails(repo):
    import json
    stamp, root, nb_path = repo
    stamp.stamp(nb_path, root)
    nb = json.loads(nb_path.read_text())
    nb["cells"][0]["source"] = "import rangeprof\n2"
    nb_path.write_text(json.dumps(nb))
    _git(root, "commit", "-q", "-am", "edited")
    assert "a cell's source was edited after the run" in stamp.check(nb_path, root)


def test_the_stamp_takes_the_commit_from_the_environment_without_git(repo, monkeypatch):
    stamp, root, nb_path = repo
    import shutil
    shutil.rmtree(root / ".git")
    with pytest.raises(SystemExit, match="RANGEPROF_COMMIT"):
        stamp.stamp(nb_path, root)
    monkeypatch.setenv("RANGEPROF_COMMIT", "0123456789abcdef")
    monkeypatch.setenv("RANGEPROF_DIRTY", "0")
    meta = stamp.stamp(nb_path, root)
    assert meta["commit"] == "0123456789abcdef" and meta["dirty"] is False
    with pytest.raises(stamp.NotAGitCheckout):
        stamp.check(nb_path, root)
