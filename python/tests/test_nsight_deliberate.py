"""The GPU suite's run of Nsight Python's own examples and tests (tests/gpu/nsight_python/):
its list of deliberate differences (deliberate.txt) and python/README.md's table of them
name the same test cases under the same rows, at most 13 in all; the pins are well formed;
the runner reads pytest's results per test case and skips cleanly where there is no GPU."""
import hashlib
import importlib.util
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "tests" / "gpu" / "nsight_python"
_spec = importlib.util.spec_from_file_location("nsight_python_run", SUITE / "run.py")
runner = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(runner)

# The bound: at most 13 Nsight Python test cases may fail, each listed.
MOST = 13


def readme_table():
    """{row: [test ids]} of python/README.md's table of deliberate differences."""
    text = (ROOT / "python" / "README.md").read_text()
    section = text.split("### Deliberate differences, and the Nsight Python tests that show "
                         "them", 1)[1].split("\n### ", 1)[0]
    rows = {}
    for line in section.splitlines():
        if not line.startswith("| **"):
            continue
        first, tests = line.strip("|").split(" | ", 1)
        row = re.match(r"\*\*(.+?)\*\*", first.strip()).group(1)
        rows[row] = re.findall(r"`([^`]+::[^`]+)`", tests)
    return rows


def test_the_readme_table_and_the_runners_list_agree():
    table = readme_table()
    listed = runner.read_deliberate()
    assert table, "python/README.md has no table of deliberate differences"
    from_table = {test: row for row, tests in table.items() for test in tests}
    assert {t: r for t, (r, _how, _why) in listed.items()} == from_table
    assert all(tests for tests in table.values()), "a row shown by no test"
    assert len(listed) <= MOST


def test_every_listed_case_is_in_a_pinned_test_file():
    _commit, files = runner.read_pins()
    for test in runner.read_deliberate():
        assert test.split("::")[0] in files, test
    for test in runner.NOT_RUN:
        assert test.split("::")[0] in files, test


def test_the_pins_name_one_commit_and_sha256_per_file():
    commit, files = runner.read_pins()
    assert re.fullmatch(r"[0-9a-f]{40}", commit)
    assert files and all(re.fullmatch(r"[0-9a-f]{64}", d) for d in files.values())
    assert any(f.startswith("examples/") for f in files)
    assert {"tests/test_annotate.py", "tests/test_api_params.py", "tests/test_profiler.py",
            "tests/test_info_collector_integration.py",
            "tests/test_cuda_init_before_nsight.py"} <= set(files)


def test_the_upstream_folder_is_ignored_by_git():
    r = subprocess.run(["git", "-C", str(ROOT), "check-ignore", "-q",
                        "tests/gpu/nsight_python/upstream/tests/test_profiler.py"])
    if r.returncode == 128:
        pytest.skip("not a git checkout")
    assert r.returncode == 0


def test_junit_results_become_one_verdict_per_case(tmp_path):
    xml = tmp_path / "r.xml"
    xml.write_text("""<?xml version="1.0"?><testsuites><testsuite>
<testcase classname="tests.test_x" name="test_a"/>
<testcase classname="tests.test_x" name="test_b[p]"><failure message="AssertionError: no">tb</failure></testcase>
<testcase classname="tests.test_x.TestK" name="test_c"><skipped message="no triton"/></testcase>
<testcase classname="tests.test_x" name="test_d"><error message="fixture failed"/></testcase>
</testsuite></testsuites>""")
    assert [c[:3] for c in runner.junit_cases(xml, "tests/test_x.py")] == [
        ("tests/test_x.py::test_a", "PASS", ""),
        ("tests/test_x.py::test_b[p]", "FAIL", "AssertionError: no"),
        ("tests/test_x.py::TestK::test_c", "SKIP", "no triton"),
        ("tests/test_x.py::test_d", "FAIL", "fixture failed")]


def test_a_missing_module_is_a_skip_but_not_nsights_own():
    err = "Traceback ...\nModuleNotFoundError: No module named 'cuda.tile'\n"
    assert runner.missing_module(err) == "cuda.tile"
    assert runner.missing_module("ModuleNotFoundError: No module named 'nsight.x'") is None


def test_the_runner_skips_cleanly_without_a_gpu(monkeypatch, capsys):
    monkeypatch.setattr(runner, "gpu_here", lambda: False)
    assert runner.main([]) == 77
    assert capsys.readouterr().out == "SKIP nsight-python: no GPU here (nvidia-smi -L fails)\n"


def test_the_runners_own_columns_are_rangeprofs():
    from rangeprof import _results
    assert set(runner.OWN_COLUMNS) <= set(_results.OWN_COLUMNS)


def _repo_with(tmp_path, files):
    repo = tmp_path / "repo"
    repo.mkdir()
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git[:3] + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "."], check=True)
    subprocess.run(git + ["commit", "-qm", "x"], check=True)
    commit = subprocess.run(git[:3] + ["rev-parse", "HEAD"], capture_output=True, text=True,
                            check=True).stdout.strip()
    return repo, commit


def _fetch(tmp_path, repo, pins_text):
    pins = tmp_path / "pins.txt"
    pins.write_text(pins_text)
    dest = tmp_path / "upstream"
    r = subprocess.run(["bash", str(SUITE / "fetch.sh"), str(repo)], capture_output=True,
                       text=True, env={**os.environ,
                                       "NSIGHT_PYTHON_PINS": str(pins),
                                       "NSIGHT_PYTHON_UPSTREAM": str(dest)})
    return r, dest


def test_fetch_copies_the_pinned_files_and_refuses_a_wrong_hash(tmp_path):
    if subprocess.run(["git", "--version"], capture_output=True).returncode:
        pytest.skip("no git")
    files = {"examples/00_minimal.py": "print(1)\n", "tests/test_a.py": "def test(): pass\n"}
    repo, commit = _repo_with(tmp_path, files)
    sums = {n: hashlib.sha256(t.encode()).hexdigest() for n, t in files.items()}
    good = f"# pins\ncommit {commit}\n" + "".join(f"{d}  {n}\n" for n, d in sums.items())
    r, dest = _fetch(tmp_path, repo, good)
    assert r.returncode == 0, r.stderr
    assert {str(p.relative_to(dest)) for p in dest.rglob("*.py")} == set(files)
    assert (dest / "COMMIT").read_text().strip() == commit
    shutil.rmtree(dest)
    bad = good.replace(sums["tests/test_a.py"], "0" * 64)
    r, dest = _fetch(tmp_path, repo, bad)
    assert r.returncode == 1
    assert f"tests/test_a.py: sha256 {sums['tests/test_a.py']}, pinned {'0' * 64}" in r.stderr
    assert not dest.exists(), "nothing is copied when a hash differs"


def test_a_listed_case_is_deliberate_only_when_it_fails_as_listed(tmp_path, capsys):
    """A case of deliberate.txt that fails for another reason (a crash, no driver) fails
    the suite: only the listed failure is the deliberate difference."""
    listed = runner.read_deliberate()
    row, how, _why = listed["tests/test_annotate.py::test_active_annotations_nested"]
    assert how.search("Failed: DID NOT RAISE ValueError")             # pytest 9
    assert how.search("Failed: DID NOT RAISE <class 'ValueError'>")  # pytest 8
    assert not how.search("rangeprof.exceptions.Unavailable: no NVIDIA driver")
    _row, how, _why = listed["tests/test_cuda_init_before_nsight.py::test"]
    assert how.search("AssertionError: Subprocess unexpectedly succeeded\nassert 0 != 0")


def test_the_runners_list_of_our_columns_is_the_packages():
    """run.py fails an example whose output shows one of rangeprof's own columns; its list
    is a copy of _results.OWN_COLUMNS (the runner does not import the package), which
    lacked Temperature, Power and Passes until this test tied the two."""
    from rangeprof import _results
    assert runner.OWN_COLUMNS == _results.OWN_COLUMNS

