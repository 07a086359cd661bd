"""bench/later_call_python.py - the Python side of a later call (issue 35 item 4), without a
GPU: a function decorated with rangeprof.analyze.kernel, 10 configs x 20 runs as the
tutorial's matmul lesson, called REPS times with its to_dataframe(), against the stand-in
control library of the Python tests (python/tests/fake_control: it hands back the recorded
runs of python/tests/fixtures/recorded/vadd.jsonl as the library would). Prints the first
call and the later calls' median, min and max (wall ms) and their CPU time. The stand-in's
own annotation_end (~4 ms of a call here) is where a GPU measures; the rest is rangeprof's
Python.

    RANGEPROF_TEST_FAKE_CONTROL=build/python/libfake_control.so \\
        .venv/bin/python bench/later_call_python.py [--tree PYTHON_DIR] [--reps N] [--configs N]

--tree: the python/ folder whose rangeprof is timed (default: this checkout's), so that
two trees can be timed in turn. Results: doc/measurements.md, "Cost at the physical floor"."""
import argparse
import os
import statistics
import sys
import tempfile
import time
import warnings

def between(lowest, highest):
    def parse(text):
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text[:40]!r}: expected a whole number") from None
        if not lowest <= n <= highest:
            raise argparse.ArgumentTypeError(f"{n}: expected a whole number from {lowest} to "
                                             f"{highest}")
        return n
    return parse


ap = argparse.ArgumentParser()
ap.add_argument("--tree", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                               "..", "python"))
ap.add_argument("--reps", type=between(2, 100000), default=200,
                help="calls (the first is not a later one)")
ap.add_argument("--configs", type=between(1, 1000), default=10)
args = ap.parse_args()
if not os.path.isdir(os.path.join(args.tree, "rangeprof")):
    ap.error(f"--tree {args.tree!r}: expected a python/ folder holding rangeprof/")
sys.path.insert(0, args.tree)
sys.path.insert(0, os.path.join(args.tree, "tests"))
from fake_control.harness import RECORDED, attach_stand_in, fake_library_path  # noqa: E402
import pandas  # noqa: E402,F401  (the program's own import, as in the lesson)
import rangeprof  # noqa: E402
from rangeprof import analyze  # noqa: E402

attach_stand_in(fake_library_path(), "/dev/null",
                os.path.join(tempfile.mkdtemp(), "rp.%p.jsonl"), "call0",
                os.environ.__setitem__, lambda name: os.environ.pop(name, None), setattr)
os.environ["RANGEPROF_FAKE_FIXTURE"] = str(RECORDED / "vadd.jsonl")
RANGES = ["vadd n=4096", "vadd n=1048576", "vadd n=16777216"]


@rangeprof.analyze.kernel(configs=[(i,) for i in range(args.configs)], runs=20,
                          verbosity=analyze.VerbosityLevel.SILENT)
def lesson(i):
    os.environ["RANGEPROF_FAKE_RANGE"] = RANGES[i % len(RANGES)]
    with rangeprof.annotate("matmul"):
        pass


warnings.simplefilter("ignore")
wall, cpu = [], []
for k in range(args.reps):
    os.environ["RANGEPROF_FAKE_EPOCH"] = f"call{k}"   # a fresh cursor: the same runs each call
    c, t = time.process_time(), time.perf_counter()
    lesson().to_dataframe()
    wall.append(time.perf_counter() - t)
    cpu.append(time.process_time() - c)
later = wall[1:]
print(f"{args.configs} configs x 20 runs: first call {wall[0] * 1e3:.2f} ms; later calls "
      f"median {statistics.median(later) * 1e3:.2f} ms (min {min(later) * 1e3:.2f}, max "
      f"{max(later) * 1e3:.2f}; {len(later)} calls), CPU median "
      f"{statistics.median(cpu[1:]) * 1e3:.2f} ms")
