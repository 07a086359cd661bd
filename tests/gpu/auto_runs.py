"""tests/gpu/auto_runs.py - kernels for --runs auto and the NVML fields (issue 11), run by
tests/gpu/run.sh under rangeprof --runs auto:
  "medium/"  a ~50 us in-place kernel: steady, so it stops early at the CI target;
  "tiny/"    a ~3 us kernel on 64 Ki floats: noisier, so it takes more runs;
  "heat/"    a heavy fp16 matmul (8192^3, ~1.5 ms on an H200) launched for SECONDS
             (first argument) before the measured launch, so that the GPU heats while
             its runs go on: its time drifts with the clock.
Prints checksums that must not change under rangeprof."""
import sys
import time

import torch

seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 4.0
torch.manual_seed(0)
x = torch.zeros(16 << 20, device="cuda")
t = torch.zeros(64 << 10, device="cuda")
a = torch.randn(8192, 8192, device="cuda", dtype=torch.float16)
b = torch.randn(8192, 8192, device="cuda", dtype=torch.float16)
for _ in range(3):
    torch.cuda.nvtx.range_push("medium")
    x.add_(1.0)
    torch.cuda.nvtx.range_pop()
    torch.cuda.nvtx.range_push("tiny")
    t.add_(1.0)
    torch.cuda.nvtx.range_pop()
torch.cuda.synchronize()
# Heat the GPU outside every selected range, then measure one heavy launch.
end = time.time() + seconds
c = None
while time.time() < end:
    for _ in range(20):
        c = a @ b
    torch.cuda.synchronize()
torch.cuda.nvtx.range_push("heat")
c = a @ b
torch.cuda.nvtx.range_pop()
torch.cuda.synchronize()
print("medium", float(x.sum()), "tiny", float(t.sum()), "heat", round(float(c.float().abs().mean()), 2))
