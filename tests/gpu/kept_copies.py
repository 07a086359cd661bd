# tests/gpu/kept_copies.py - the saved copies rangeprof keeps between measurements
# (inject/session/session.c) never cost the application memory it would have without
# rangeprof: a PyTorch program measures an in-place kernel over GiB (its copies are kept,
# being over 256 MiB), then allocates nearly all of what was free before, then measures
# again and asks how much is free. Run plain and under rangeprof with
# --nvtx-include measured/; prints one line per step, which tests/gpu/run.sh compares:
#   free_before_mib, the big allocation's outcome, free_after_mib, x's values.
# Under rangeprof the big allocation must succeed (the kept copies go at its ENTER, where
# it would leave the device short) and free_after_mib must read as plain's within 1 GiB
# (they go at cuMemGetInfo's ENTER): rangeprof's own memory (the flush's buffer, CUPTI's
# counters) is under 1 GiB, the copies are GIB GiB.
import sys

import torch

GIB = int(sys.argv[1]) if len(sys.argv) > 1 else 8
MARGIN = 3 << 30  # PyTorch's and CUDA's own, rangeprof's own, rounding


def measured(x):
    torch.cuda.nvtx.range_push("measured")
    x.add_(1.0)  # in place over all of x: its copy is GIB GiB
    torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()


free_before, total = torch.cuda.mem_get_info()
print("free_before_mib", free_before >> 20)
x = torch.zeros(GIB << 28, dtype=torch.float32, device="cuda")  # GIB GiB
measured(x)
big = free_before - (GIB << 30) - MARGIN
try:
    y = torch.empty(big, dtype=torch.uint8, device="cuda")
    y.fill_(1)
    torch.cuda.synchronize()
    print("big_allocation ok")
    del y
except torch.cuda.OutOfMemoryError as e:
    print("big_allocation out of memory:", str(e).splitlines()[0][:120])
torch.cuda.empty_cache()
measured(x)
free_after, _ = torch.cuda.mem_get_info()
print("free_after_mib", free_after >> 20)
print("x", float(x[0]), float(x[-1]))
