"""tests/gpu/check_control.py LIB CASE - the control API (doc/control-api.md) in a real
PyTorch process, through ctypes alone (no rangeprof package), one case per process:

  early     the library loaded before CUDA: only annotated launches are measured, options
            change between measurements (runs, metrics), a metric the GPU lacks is an
            error record and the next measurement works, results are unchanged
  late      loaded after PyTorch made its context: attach initialises now, memory is
            saved whole (a warning record says why), results are unchanged
  profiler  loaded after torch.profiler took CUPTI: attach says so and measures nothing,
            the process runs on
  ncu       run under ncu: rangeprof measures nothing and says why

Prints one line per finding and exits non-zero on the first broken expectation.
"""
import ctypes
import json
import os
import sys

import gpu_records

LIB, CASE = sys.argv[1], sys.argv[2]


def load():
    lib = ctypes.CDLL(LIB, mode=ctypes.RTLD_GLOBAL)
    lib.rangeprof_info.restype = ctypes.c_void_p
    lib.rangeprof_capture_take.restype = ctypes.c_void_p
    lib.rangeprof_capture_take.argtypes = [ctypes.POINTER(ctypes.c_size_t)]
    lib.rangeprof_last_error.restype = ctypes.c_char_p
    lib.rangeprof_free.argtypes = [ctypes.c_void_p]
    lib.rangeprof_set_option.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    lib.rangeprof_annotation_begin.argtypes = [ctypes.c_char_p]
    lib.rangeprof_annotation_end.argtypes = [ctypes.c_char_p]
    assert lib.rangeprof_control_version() == 2
    return lib


def info(lib):
    p = lib.rangeprof_info()
    text = ctypes.string_at(p).decode()
    lib.rangeprof_free(p)
    return json.loads(text)


def take(lib):
    n = ctypes.c_size_t()
    p = lib.rangeprof_capture_take(ctypes.byref(n))
    if not p:
        return []
    text = ctypes.string_at(p, n.value).decode()
    lib.rangeprof_free(p)
    return gpu_records.parse(text.splitlines(keepends=True), "the capture")


def option(lib, name, value):
    rc = lib.rangeprof_set_option(name.encode(), value.encode())
    assert rc == 0, (name, value, rc, lib.rangeprof_last_error())


def annotated(lib, name, fn):
    assert lib.rangeprof_annotation_begin(name.encode()) == 0, lib.rangeprof_last_error()
    try:
        return fn()
    finally:
        assert lib.rangeprof_annotation_end(name.encode()) == 0


def summaries(records, name):
    return [r for r in records if r["type"] == "summary" and
            any(n.get("domain") == "rangeprof" and n.get("text") == name for n in r["nvtx"])]


def expect(cond, what, detail=""):
    print(("ok   " if cond else "FAIL ") + what + (f": {detail}" if detail else ""))
    if not cond:
        sys.exit(1)


def matmul_case(torch):
    torch.manual_seed(0)
    a = torch.randn(2048, 2048, device="cuda")
    b = torch.randn(2048, 2048, device="cuda")
    return a, b


if CASE == "early":
    lib = load()
    expect(lib.rangeprof_attach() == 0, "attach before CUDA", lib.rangeprof_last_error())
    import torch
    a, b = matmul_case(torch)
    plain = (a @ b).clone()
    torch.cuda.synchronize()
    lib.rangeprof_capture_begin()
    option(lib, "runs", "7")
    outside = a @ b                       # no annotation open: not measured
    inside = annotated(lib, "mm", lambda: a @ b)
    torch.cuda.synchronize()
    recs = take(lib)
    mm = summaries(recs, "mm")
    expect(len(mm) >= 1, "the annotated matmul is measured", [r["kernel"][:60] for r in mm])
    expect(all(r["runs"] == 7 for r in mm), "runs=7 set at run time",
           [(r["runs"], round(r["cost_ms"]["total"], 1)) for r in mm])
    expect(len([r for r in recs if r["type"] == "summary"]) == len(mm),
           "nothing outside the annotation is measured")
    expect(torch.equal(inside, plain) and torch.equal(outside, plain),
           "results identical to the unmeasured matmul")
    option(lib, "metrics", "gpu__time_duration.sum,dram__bytes_read.sum")
    option(lib, "runs", "3")
    annotated(lib, "mm dram", lambda: a @ b)
    torch.cuda.synchronize()
    recs = take(lib)
    s = summaries(recs, "mm dram")
    expect(s and "dram__bytes_read.sum" in s[0]["metrics"] and s[0]["runs"] == 3,
           "metrics and runs changed between measurements",
           s and (list(s[0]["metrics"]), s[0]["runs"]))
    option(lib, "metrics", "no__such_metric.sum")
    annotated(lib, "mm bad", lambda: a @ b)
    torch.cuda.synchronize()
    recs = take(lib)
    errors = [r for r in recs if r["type"] == "error"]
    expect(errors and "no__such_metric" in errors[0]["message"] and not summaries(recs, "mm bad"),
           "a metric the GPU lacks is an error record", errors and errors[0]["message"][:120])
    option(lib, "metrics", "gpu__time_duration.sum")
    again_out = annotated(lib, "mm again", lambda: a @ b)
    torch.cuda.synchronize()
    recs = take(lib)
    again = summaries(recs, "mm again")
    expect(again, "the next measurement works",
           again and round(again[0]["cost_ms"]["total"], 1))
    # A kernel verified before, under a metric set met before but with a new profiler
    # object: its launch is run 0 of a pass opened at ENTER, which must leave room for the
    # runs after it (session 18: 1 run of 20 in every such later in-process launch).
    expect(all(r["runs"] == 3 for r in again), "every run asked is recorded after the "
           "metrics changed back", [r["runs"] for r in again])
    expect(torch.equal(again_out, plain), "result identical after the runs")
    i = info(lib)
    expect(i["measuring"] and not i["late_attach"] and i["memory_save"] == "reach",
           "info: measuring, early, reach", i)
    lib.rangeprof_capture_end()
elif CASE == "late":
    import torch
    a, b = matmul_case(torch)
    plain = (a @ b).clone()
    torch.cuda.synchronize()
    lib = load()
    expect(lib.rangeprof_attach() == 0, "attach after CUDA", lib.rangeprof_last_error())
    i = info(lib)
    expect(i["late_attach"] and i["memory_save"] == "checkpoint" and i["measuring"],
           "info: late, checkpoint, measuring", i)
    lib.rangeprof_capture_begin()
    option(lib, "runs", "5")
    c = torch.empty_like(a)
    annotated(lib, "mm late", lambda: torch.matmul(a, b, out=c))
    torch.cuda.synchronize()
    recs = take(lib)
    s = summaries(recs, "mm late")
    expect(s and all(r["runs"] == 5 for r in s), "the annotated matmul is measured",
           [r.get("kernel", "")[:50] for r in s])
    expect(torch.equal(c, plain), "result identical")
    warned = gpu_records.read(i["output"], keep=lambda l: '"late-attach"' in l or
                              "attached after CUDA" in l)
    expect(warned, "a warning record says memory is saved whole")
elif CASE == "profiler":
    import torch
    a, b = matmul_case(torch)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]):
        (a @ b).sum().item()
        lib = load()
        rc = lib.rangeprof_attach()
        msg = lib.rangeprof_last_error().decode()
        expect(rc == 4 and "CUPTI" in msg, "attach under torch.profiler is refused", (rc, msg))
        c = annotated(lib, "mm", lambda: a @ b)
        torch.cuda.synchronize()
    expect(torch.equal(c, a @ b), "the process runs on")
elif CASE == "ncu":
    # ncu starts the process with its own injection and CUPTI subscription: before cuInit
    # attach cannot know (or refuses at once where CUDA_INJECTION64_PATH names ncu's
    # library); once CUDA runs, rangeprof must say it measures nothing, and why.
    lib = load()
    rc = lib.rangeprof_attach()
    msg = lib.rangeprof_last_error().decode()
    import torch
    a, b = matmul_case(torch)
    lib.rangeprof_capture_begin()
    c = annotated(lib, "mm", lambda: a @ b)
    torch.cuda.synchronize()
    i = info(lib)
    expect(rc == 4 or not i["measuring"], "under ncu rangeprof measures nothing",
           (rc, msg, i.get("reason")))
    expect(bool(msg or i.get("reason")), "and says why", msg or i.get("reason"))
    expect(not summaries(take(lib), "mm"), "no measurement")
    expect(torch.equal(c, a @ b), "the process runs on")
else:
    sys.exit(f"unknown case {CASE!r}")
print("control", CASE, "passed")
