"""scripts/flush_image.py, the build's compilation of the cache flush ahead
(inject/session/flush_image.h), with stand-ins for rp_flush_text, ptxas and fatbinary: what
a toolkit that does not know an architecture leaves out (and says), and what a failure does
with and without --required. The real toolkit's images are checked by the C unit test
(tests/unit/inject/flush_test.c: each image is of the library's own text)."""
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "flush_image.py"
MAGIC = "\\120\\355\\125\\272"  # 0xba55ed50, little-endian, as printf octal escapes


def tool(path, body):
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def toolkit(tmp_path, archs, ptxas_fails=False, fatbinary_notice=""):
    """A bin/ with a ptxas whose --help lists archs, and a fatbinary beside it that writes
    a fatbin's magic and the images it was given (and fatbinary_notice on stderr)."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    listed = ",".join("'sm_%d'" % a for a in archs)
    tool(bin_ / "ptxas", f"""
if [ "$1" = --help ]; then echo "Allowed values for this option:  {listed}"; exit 0; fi
{"echo 'ptxas fatal   : broken' >&2; exit 255" if ptxas_fails else ""}
while [ $# -gt 0 ]; do [ "$1" = -o ] && {{ echo cubin > "$2"; }}; shift; done
""")
    tool(bin_ / "fatbinary", f"""
out=; images=
for a in "$@"; do case $a in --create=*) out=${{a#--create=}} ;; --image3=*) images="$images $a" ;; esac; done
printf '{MAGIC}' > "$out"; echo "$images" >> "$out"
{f"echo '{fatbinary_notice}' >&2" if fatbinary_notice else ""}
""")
    text = tool(tmp_path / "rp_flush_text", 'echo ".version 7.4 // $1 $2" > "$3"\n')
    return bin_ / "ptxas", text


def run(ptxas, text, out, *extra):
    if not SCRIPT.exists():
        pytest.skip(f"{SCRIPT} is not in this tree (a source checkout has it)")
    return subprocess.run([sys.executable, str(SCRIPT), "--tool", str(text), "--ptxas",
                           str(ptxas), "--out", str(out), *extra],
                          capture_output=True, text=True, timeout=60)


def fatbin_args(header, stem):
    """The bytes of one image's array, after its magic, as text."""
    body = header.split("flush_image_%s[" % stem)[1].split("};")[0].split("{", 1)[1]
    data = bytes(int(x, 16) for x in re.findall(r"0x([0-9a-f]{2})", body))
    assert data[:4] == bytes.fromhex("50ed55ba")
    return data[4:].decode()


def entries(header):
    return re.findall(r'\{ (true|false), (\d), flush_image_\w+, sizeof\(\w+\), '
                      r'0x[0-9a-f]{16}ULL, "([^"]*)" \}', header)


def test_every_listed_architecture_gets_a_cubin_and_the_text_goes_along(tmp_path):
    ptxas, text = toolkit(tmp_path, [75, 80, 90, 100, 110, 120])
    out = tmp_path / "h.h"
    r = run(ptxas, text, out)
    assert r.returncode == 0, r.stdout + r.stderr
    header = out.read_text()
    assert entries(header) == [("true", "2", "sm_80 sm_90 sm_100"),
                               ("true", "1", "sm_80 sm_90 sm_100 sm_110 sm_120"),
                               ("false", "1", "sm_75 sm_80 sm_90 sm_100 sm_110 sm_120")]
    assert "FLUSH_IMAGES_MADE" in header and "left out" not in r.stdout
    # What fatbinary was given (the stand-in writes it after the magic): a cubin for each
    # architecture, and the text under the lowest architecture its .target allows.
    given = fatbin_args(header, "flush_1_2")
    assert re.findall(r"kind=elf,sm=(\d+),", given) == ["80", "90", "100"]
    assert re.findall(r"kind=ptx,sm=(\d+),", given) == ["80"]
    assert re.findall(r"kind=ptx,sm=(\d+),", fatbin_args(header, "flush_0_1")) == ["70"]
    assert "_Alignas(16) const unsigned char flush_image_flush_1_2[" in header


def test_an_architecture_the_toolkit_does_not_know_is_left_out_and_said(tmp_path):
    """A CUDA 12.6 toolkit: no sm_100, sm_110 or sm_120."""
    ptxas, text = toolkit(tmp_path, [75, 80, 86, 89, 90])
    out = tmp_path / "h.h"
    r = run(ptxas, text, out)
    assert r.returncode == 0, r.stdout + r.stderr
    assert entries(out.read_text()) == [("true", "2", "sm_80 sm_90"),
                                        ("true", "1", "sm_80 sm_90"),
                                        ("false", "1", "sm_75 sm_80 sm_90")]
    assert "knows no sm_100: left out of the (1, 2) image" in r.stdout
    assert "knows no sm_100, sm_110, sm_120: left out of the (0, 1) image" in r.stdout


@pytest.mark.parametrize("archs, fails, why", [
    ([60, 70], False, "compiles for none of the architectures listed"),
    ([80, 90], True, "failed (exit 255): ptxas fatal   : broken"),
])
def test_a_toolkit_that_cannot_make_them_leaves_none_or_stops_where_required(
        tmp_path, archs, fails, why):
    ptxas, text = toolkit(tmp_path, archs, ptxas_fails=fails)
    out = tmp_path / "h.h"
    r = run(ptxas, text, out)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "no compiled images of the flush (the library will load its text)" in r.stdout
    assert why in r.stdout
    assert "FLUSH_IMAGES_MADE" not in out.read_text()
    out.unlink()
    r = run(ptxas, text, out, "--required")
    assert r.returncode != 0 and why in r.stderr, r.stdout + r.stderr
    assert not out.exists()


def test_a_tool_that_succeeds_with_a_notice_keeps_the_images_and_shows_it(tmp_path):
    ptxas, text = toolkit(tmp_path, [80, 90],
                          fatbinary_notice="fatbinary info : compressed with zstd")
    out = tmp_path / "h.h"
    r = run(ptxas, text, out, "--required")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "fatbinary: fatbinary info : compressed with zstd" in r.stdout
    assert len(entries(out.read_text())) == 3
