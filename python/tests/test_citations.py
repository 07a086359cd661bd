"""scripts/check_citations.py: every file of this repository that a comment or a doc
cites exists, and every Markdown section it quotes is a heading there (issue 34: citations
of inject/replay.c outlived the file by three sessions). The tree is checked whole; then
the script on small made-up trees, so that a pass means "nothing dangles" and not "the
script saw nothing"."""
import subprocess
import sys
from pathlib import Path

from conftest import source_script

ROOT = Path(__file__).resolve().parents[2]


def module():
    return source_script("scripts/check_citations.py")


def test_no_citation_in_the_repository_dangles():
    r = subprocess.run([sys.executable, str(module().__file__), str(ROOT)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 dangling" in r.stderr


def tree(tmp_path, files):
    for name, text in files.items():
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return str(tmp_path)


def found(tmp_path, files):
    return sorted(module().check(tree(tmp_path, files)))


def test_a_removed_file_and_a_retitled_section_are_found(tmp_path):
    assert found(tmp_path, {
        "doc/measurements.md": "# Measurements\n\n## Control API\n\ntext\n",
        "inject/a.c": "/* the cost (doc/measurements.md, \"Control API\"); see inject/b.c */\n",
        "inject/c.c": "/* the cost (doc/measurements.md, \"Control\n * costs\") and inject/gone.c */\n",
        "bench/p.cu": "// cited by inject/replay.c and, as it was, the former inject/replay.c\n",
        "inject/b.c": "",
    }) == [
        "bench/p.cu:1: cites inject/replay.c, which does not exist",
        'inject/c.c:1: cites doc/measurements.md, "Control costs", which has no such heading',
        "inject/c.c:2: cites inject/gone.c, which does not exist",
    ]


def test_paths_resolve_from_the_root_the_citing_folder_and_python(tmp_path):
    assert found(tmp_path, {
        "python/tests/test_x.py": "# as tests/test_y.py does\n",
        "python/tests/test_y.py": "",
        "tests/fuzz/NOTES.md": "cd python && python tests/test_y.py\n",
        "doc/records.md": "# x\n\n### `summary` - one per launch\n\n- **What a range saves** (y)\n",
        "common/s.c": '/* doc/records.md, "summary"; doc/records.md, "What a range saves" */\n',
    }) == []
