# bench/write_probe.py - kernels whose DRAM writes disagreed with ncu (bench/NOTES.md,
# session 1, "Agreement with ncu"): cuBLAS/CUTLASS fp32 sgemm 2048 (output can stay in L2),
# a Triton 64 MB add, and two PyTorch fills (64 MB, 16 MB: pure writes). Each launched 5
# times inside its own range. The measured program of bench/write_probe.sh, which runs it
# (doc/measurements.md, "Agreement with ncu"); alone: python3 bench/write_probe.py.
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


torch.manual_seed(0)
a = torch.randn(2048, 2048, device="cuda")
b = torch.randn(2048, 2048, device="cuda")
n = 1 << 24
x, y = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
o = torch.empty_like(x)
f64, f16 = torch.empty(n, device="cuda"), torch.empty(n // 4, device="cuda")
add_kernel[(triton.cdiv(n, 1024),)](x, y, o, n, BLOCK=1024)
c = a @ b
torch.cuda.synchronize()
for _ in range(5):
    torch.cuda.nvtx.range_push("mm")
    c = a @ b
    torch.cuda.nvtx.range_pop()
    torch.cuda.nvtx.range_push("add")
    add_kernel[(triton.cdiv(n, 1024),)](x, y, o, n, BLOCK=1024)
    torch.cuda.nvtx.range_pop()
    torch.cuda.nvtx.range_push("fill64")
    f64.fill_(1.5)
    torch.cuda.nvtx.range_pop()
    torch.cuda.nvtx.range_push("fill16")
    f16.fill_(2.5)
    torch.cuda.nvtx.range_pop()
torch.cuda.synchronize()
print("done", float(c.sum()), float(o.sum()))
