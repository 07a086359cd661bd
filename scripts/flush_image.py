#!/usr/bin/env python3
"""scripts/flush_image.py - compiles the cache flush's kernel ahead, at build time
(inject/session/flush_image.h says why): for each text that inject_flush_init can ask for,
the build's own rp_flush_text writes it, ptxas compiles it for each architecture below that
this ptxas knows, and fatbinary (beside that ptxas: one toolkit) puts the cubins and the
text in one compressed fatbin. The output is a C header, included by
inject/session/flush_image.c, that defines the fatbins and FLUSH_IMAGES_MADE's entries.

A cubin for sm_XY runs on every GPU of compute capability X.Z with Z >= Y, so sm_80 serves
8.0 to 8.9, sm_90 9.0, sm_100 10.0 and 10.3, sm_120 12.0 and 12.1. Other GPUs get the
fatbin's text, compiled by the driver as before. The two-blocks-per-SM text needs 2048
threads per SM: sm_86 to sm_89, sm_110 and sm_120 hold fewer (ptxas refuses the text's
.minnctapersm 2 there), and there inject_flush_init loads the one-block text. The
sweep-only text (.target sm_70) serves GPUs before 8.0 and those without cooperative
launches. ptxas runs with -Werror and -warn-spills: a spill would send registers through
the L2 that the flush empties.

An architecture this ptxas does not list (an older toolkit has no sm_110 or sm_120, a newer
may drop sm_75) is left out, and said. Any other failure ends the build where it was asked
for (--required: meson's -Dflush_image=enabled); otherwise the header holds no image, the
library loads the text, and this script says why.

    flush_image.py --tool RP_FLUSH_TEXT --ptxas PTXAS --out HEADER [--required]

Standard library only.
"""
import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

# (empty, per_sm, architectures): inject_flush_text's arguments and the cubins made of it.
IMAGES = [
    (True, 2, [80, 90, 100]),
    (True, 1, [80, 90, 100, 110, 120]),
    (False, 1, [75, 80, 90, 100, 110, 120]),
]


class Failed(Exception):
    pass


def fnv1a64(data: bytes) -> int:
    """FNV-1a, 64 bits: inject_flush_image's text_fnv1a (the unit test computes the same)."""
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def run(cmd):
    try:
        done = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    except OSError as e:
        raise Failed("%s: %s" % (cmd[0], e))
    if done.returncode != 0:
        raise Failed("%s failed (exit %d): %s%s" % (" ".join(map(str, cmd)), done.returncode,
                                                   done.stdout, done.stderr.strip()))
    # A tool that succeeded and still said something (fatbinary's notices): shown in the
    # build's log, not taken for a failure. ptxas runs with -Werror: its warnings fail.
    if done.stderr.strip():
        print("flush_image.py: %s: %s" % (Path(str(cmd[0])).name, done.stderr.strip()))
    return done.stdout


def known_archs(ptxas):
    """The sm_NN this ptxas compiles for, from its --help's list for --gpu-name."""
    archs = {int(n) for n in re.findall(r"'sm_(\d+)'", run([ptxas, "--help"]))}
    if not archs:
        raise Failed("%s --help lists no sm_NN for --gpu-name" % ptxas)
    return archs


def c_array(name, data):
    rows = [",".join("0x%02x" % b for b in data[i:i + 24]) for i in range(0, len(data), 24)]
    # 16-byte aligned: the fatbin's header has 64-bit fields.
    return "static _Alignas(16) const unsigned char %s[%d] = {\n%s\n};\n" % (
        name, len(data), ",\n".join(rows))


def make(tool, ptxas, tmp):
    """The header's text with every image this toolkit can make; raises Failed."""
    fatbinary = Path(ptxas).with_name("fatbinary")
    known = known_archs(ptxas)
    arrays, entries = [], []
    for empty, per_sm, wanted in IMAGES:
        archs = [sm for sm in wanted if sm in known]
        left_out = [sm for sm in wanted if sm not in known]
        if left_out:
            print("flush_image.py: %s knows no %s: left out of the (%d, %d) image" % (
                ptxas, ", ".join("sm_%d" % sm for sm in left_out), empty, per_sm))
        if not archs:
            continue
        stem = "flush_%d_%d" % (empty, per_sm)
        ptx = tmp / (stem + ".ptx")
        run([tool, "1" if empty else "0", str(per_sm), ptx])
        images = []
        for sm in archs:
            cubin = tmp / ("%s_sm%d.cubin" % (stem, sm))
            run([ptxas, "-arch=sm_%d" % sm, "-Werror", "-warn-spills", ptx, "-o", cubin])
            images.append("--image3=kind=elf,sm=%d,file=%s" % (sm, cubin))
        # The text under the lowest architecture its .target allows.
        images.append("--image3=kind=ptx,sm=%d,file=%s" % (80 if empty else 70, ptx))
        fatbin = tmp / (stem + ".fatbin")
        run([fatbinary, "--create=%s" % fatbin, "-64", "--compress-all"] + images)
        data = fatbin.read_bytes()
        if data[:4] != bytes.fromhex("50ed55ba"):
            raise Failed("%s is not a fatbin (it starts %s)" % (fatbin, data[:4].hex()))
        arrays.append(c_array("flush_image_" + stem, data))
        entries.append("\t{ %s, %d, flush_image_%s, sizeof(flush_image_%s), 0x%016xULL, "
                       '"%s" },' % ("true" if empty else "false", per_sm, stem, stem,
                                    fnv1a64(ptx.read_bytes()),
                                    " ".join("sm_%d" % sm for sm in archs)))
    if not entries:
        raise Failed("%s compiles for none of the architectures listed" % ptxas)
    return ("#include <stdbool.h>\n\n" + "\n".join(arrays) +
            "\n#define FLUSH_IMAGES_MADE \\\n" + " \\\n".join(entries) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tool", required=True, help="the build's rp_flush_text")
    ap.add_argument("--ptxas", required=True, help="fatbinary is taken from beside it")
    ap.add_argument("--out", required=True, help="the header to write")
    ap.add_argument("--required", action="store_true",
                    help="fail where the images cannot be made (else: a header of none)")
    args = ap.parse_args()
    head = ("/* Generated by scripts/flush_image.py at build time: the cache flush's kernel\n"
            " * compiled ahead (inject/session/flush_image.h). Not to be edited. */\n")
    with tempfile.TemporaryDirectory(prefix="rangeprof-flush-image-") as tmp:
        try:
            body = make(args.tool, args.ptxas, Path(tmp))
        except Failed as e:
            if args.required:
                sys.exit("flush_image.py: %s" % e)
            print("flush_image.py: no compiled images of the flush (the library will load "
                  "its text): %s" % e)
            body = "/* None: %s */\n" % str(e).replace("*/", "* /")
    Path(args.out).write_text(head + body)


if __name__ == "__main__":
    main()
