#!/usr/bin/env python3
"""tests/gpu/check_import_effects.py LIB - on the GPU, what a process that loads
librangeprof.so as 'import rangeprof' does (ctypes, rangeprof_attach) prints and leaves to
its children (issue 32 items 6 and 7, doc/control-api.md), through the control API
directly so that it checks the library whatever the Python package does:
  quiet      rangeprof_set_option("quiet", "true"): not one line of the library's on stderr
             (progress, exit table, warnings), the records still written;
  loud       the same without it: the ==RANGEPROF== lines are there (the check can fail);
  nothing    quiet, an annotation around no kernel: no "nothing measured" line (and
             without quiet the line is there);
  children   a child that uses CUDA (PyTorch) writes and prints nothing of rangeprof's by
             default, and measures into its own file with rangeprof_set_option("children",
             "true").
One line per case; exit status 1 when any fails. Needs PyTorch with CUDA."""
import glob
import os
import subprocess
import sys
import tempfile

import gpu_records

PARENT = r'''
import ctypes, subprocess, sys
lib = ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)
lib.rangeprof_set_option.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
lib.rangeprof_annotation_begin.argtypes = [ctypes.c_char_p]
lib.rangeprof_annotation_end.argtypes = [ctypes.c_char_p]
quiet, kernels, children = sys.argv[2] == "1", sys.argv[3] == "1", sys.argv[4] == "1"
assert lib.rangeprof_attach() == 0
if quiet:
    assert lib.rangeprof_set_option(b"quiet", b"true") == 0
if children:
    assert lib.rangeprof_set_option(b"children", b"true") == 0
import torch
a = torch.randn(1024, 1024, device="cuda")
torch.cuda.synchronize()
lib.rangeprof_annotation_begin(b"mm")
if kernels:
    (a @ a).sum().item()
lib.rangeprof_annotation_end(b"mm")
r = subprocess.run([sys.executable, "-c", "import torch; a = torch.randn(512, 512, "
                    "device='cuda'); print((a @ a).sum().item() != 0)"],
                   capture_output=True, text=True)
sys.stdout.write("child stdout: " + r.stdout)
sys.stdout.write("child stderr: " + r.stderr.replace("\n", "|") + "\n")
'''


def run(lib, quiet, kernels, children):
    d = tempfile.mkdtemp(prefix="rp-import-")
    env = dict(os.environ, RANGEPROF_OUTPUT=os.path.join(d, "rp.%p.jsonl"))
    for name in ("CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH", "RANGEPROF_CHILDREN",
                 "RANGEPROF_CONTROL_PID", "LD_PRELOAD"):
        env.pop(name, None)
    r = subprocess.run([sys.executable, "-c", PARENT, lib, str(int(quiet)), str(int(kernels)),
                        str(int(children))], capture_output=True, text=True, env=env,
                       timeout=300)
    files = sorted(glob.glob(os.path.join(d, "rp.*.jsonl")))
    runs = {f: sum(1 for r in gpu_records.read(f) if r["type"] == "run")
            for f in files}
    return r, runs


def ours(text):
    return [line for line in text.splitlines()
            if "rangeprof" in line.lower() or "==RANGEPROF==" in line]


def main():
    lib = os.path.realpath(sys.argv[1])
    failed = 0

    def verdict(name, ok, detail):
        nonlocal failed
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {detail}")

    r, runs = run(lib, quiet=True, kernels=True, children=False)
    verdict("quiet", r.returncode == 0 and not ours(r.stderr) and sum(runs.values()) >= 1,
            f"rc {r.returncode}, library lines on stderr {ours(r.stderr)[:3]}, run records "
            f"{sum(runs.values())}")
    r, runs = run(lib, quiet=False, kernels=True, children=False)
    verdict("loud", r.returncode == 0 and any("==RANGEPROF==" in x for x in ours(r.stderr)),
            f"rc {r.returncode}, {len(ours(r.stderr))} library lines")
    r, runs = run(lib, quiet=True, kernels=False, children=False)
    loud, _ = run(lib, quiet=False, kernels=False, children=False)
    verdict("nothing", r.returncode == 0 and not ours(r.stderr) and
            any("nothing measured" in x for x in ours(loud.stderr)),
            f"quiet: {ours(r.stderr)[:2]}; without quiet: {ours(loud.stderr)[:2]}")
    r, runs = run(lib, quiet=False, kernels=True, children=False)
    child_err = [x for x in r.stdout.splitlines() if x.startswith("child stderr")]
    verdict("children-off", r.returncode == 0 and len(runs) == 1 and
            child_err == ["child stderr: "],
            f"files {len(runs)} (the parent's only), child's stderr {child_err}")
    r, runs = run(lib, quiet=False, kernels=True, children=True)
    verdict("children-on", r.returncode == 0 and len(runs) == 2 and all(runs.values()),
            f"files {len(runs)} with run records {list(runs.values())}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
