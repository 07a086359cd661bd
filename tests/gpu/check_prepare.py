"""tests/gpu/check_prepare.py LIB CASE - the set-up ahead of the first measurement
(rangeprof_prepare, doc/control-api.md), in a real PyTorch process with the rangeprof
package from this checkout and the library LIB loaded first, one case per process:

  ahead     an interactive session (sys.ps1 set, as the REPL does; a notebook's kernel is
            one too): analyze.kernel's decoration makes the library start CUDA and the
            device's set-up on its own thread, PyTorch untouched; the set-up record is
            written before the first call, and that call's first measurement does not pay
            the range profiler object's first Start (its summary's cost_ms.start), every
            config measured with the runs asked for
  explicit  a script that calls rangeprof.prepare() after decorating: the same
  script    a script: the decoration starts nothing (CUDA not started, no set-up record
            before the call); the set-up runs in the first call (one record after it)
  lazy      interactive under RANGEPROF_SETUP=lazy: no set-up record at all, and the first
            measurement pays the first Start (which tells the 'ahead' check apart)
  exit      interactive: decorates, makes PyTorch start CUDA (its runtime's exit handlers
            are then registered after the set-up began) and exits at once, the set-up
            still running: the process ends with status 0 (tests/gpu/run.sh: 3 times; each
            says whether the set-up was still under way at its exit)

Prints one line per finding and exits non-zero on the first broken expectation.
"""
import ctypes
import json
import os
import sys
import tempfile
import time

LIB, CASE = sys.argv[1], sys.argv[2]
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT = os.path.join(tempfile.mkdtemp(prefix="rangeprof-prepare-"), "r.jsonl")
os.environ["RANGEPROF_OUTPUT"] = OUT
if CASE == "lazy":
    os.environ["RANGEPROF_SETUP"] = "lazy"
if CASE in ("ahead", "lazy", "exit"):
    sys.ps1 = ">>> "  # what the REPL sets: analyze.kernel takes the session as interactive
STARTS = CASE in ("ahead", "explicit", "exit")
ctypes.CDLL(LIB, mode=ctypes.RTLD_GLOBAL)
sys.path.insert(0, os.path.join(ROOT, "python"))

import torch  # noqa: E402

import rangeprof  # noqa: E402
from rangeprof import records  # noqa: E402

RUNS = 5
SIZES = [1024, 2048, 4096]


def fail(what):
    print(f"check_prepare {CASE}: FAIL: {what}", flush=True)
    sys.exit(1)


def setup_records():
    if not os.path.exists(OUT):
        return []
    return [r for r, _ in records.read(OUT).setups]


t_decorate = time.perf_counter()


@rangeprof.analyze.kernel(configs=[(n,) for n in SIZES], runs=RUNS)
def matmul(n):
    a = torch.randn(n, n, device="cuda")
    b = torch.randn(n, n, device="cuda")
    with rangeprof.annotate("matmul"):
        a @ b


if CASE == "explicit":
    rangeprof.prepare()
decorate_s = time.perf_counter() - t_decorate
info = rangeprof.info()
print(f"check_prepare {CASE}: decorating took {decorate_s * 1e3:.1f} ms; prepare "
      f"{json.dumps(info.get('prepare'))}", flush=True)

if CASE == "exit":
    # The status says whether the exit went well (tests/gpu/run.sh checks it); whether the
    # set-up was still under way here, which the case is about, is said, not assumed.
    torch.zeros(1, device="cuda")
    under_way = not setup_records()
    state = ("with the set-up under way" if under_way else
             "after the set-up ended (the race was not met this time)")
    print(f"check_prepare {CASE}: exiting {state}", flush=True)
    sys.exit(0)


def cuda_started():
    cuda = ctypes.CDLL("libcuda.so.1")
    count = ctypes.c_int()
    return cuda.cuDeviceGetCount(ctypes.byref(count)) == 0


if STARTS:
    deadline = time.monotonic() + 20
    while not setup_records() and time.monotonic() < deadline:
        time.sleep(0.05)
    ready_s = time.perf_counter() - t_decorate
    if not setup_records():
        fail(f"no set-up record 20 s after the decoration; info: {rangeprof.info()}")
    if torch.cuda.is_initialized():
        fail("PyTorch's CUDA was started: the set-up must not need the application")
    prep = rangeprof.info().get("prepare") or []
    if [(p.get("device"), p.get("result")) for p in prep] != [(0, "set-up started")]:
        fail(f"info's prepare says {prep}")
    print(f"check_prepare {CASE}: set-up record after {ready_s:.2f} s: "
          f"{json.dumps(setup_records()[0].get('cost_ms'))}", flush=True)
else:
    time.sleep(2)
    if setup_records():
        fail("a set-up ran at the decoration")
    if CASE == "script" and cuda_started():
        fail("CUDA was started in a script before the program started it")
    if rangeprof.info().get("prepare") is not None:
        fail(f"info's prepare: {rangeprof.info().get('prepare')}")

t = time.perf_counter()
frame = matmul().to_dataframe(extra=True)
first_s = time.perf_counter() - t
runs = sorted(set(frame["NumRuns"].tolist()))
if runs != [RUNS]:
    fail(f"NumRuns {runs}, asked {RUNS}")
summaries = [r for r, _ in records.read(OUT).summaries]
if len(summaries) != len(SIZES):
    fail(f"{len(summaries)} summaries for {len(SIZES)} configs")
start_ms = (summaries[0].get("cost_ms") or {}).get("start")
if start_ms is None:
    fail(f"the first summary has no cost_ms.start: {summaries[0].get('cost_ms')}")
print(f"check_prepare {CASE}: first call {first_s:.3f} s; first summary's start "
      f"{start_ms:.1f} ms, cost_ms {json.dumps(summaries[0].get('cost_ms'))}", flush=True)
setups = len(setup_records())
if STARTS and start_ms > 50:
    fail(f"the first measurement paid {start_ms:.1f} ms for Start: the set-up was not done")
# In a script the device is set up during the first call (--setup early: at its first
# allocation), and the first measured launch waits for it: one set-up record, now.
if CASE == "script" and setups != 1:
    fail(f"{setups} set-up records after the first call; --setup early writes one there")
# Lazy: no set-up thread at all; the first measurement pays the object's first Start, which
# is what the first check above tells apart.
if CASE == "lazy" and (setups or start_ms < 50):
    fail(f"lazy: {setups} set-up records, the first Start {start_ms:.1f} ms (expected none, "
         "and the Start paid by the measurement)")
print(f"check_prepare {CASE}: ok", flush=True)
