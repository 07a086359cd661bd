# tests/gpu/cupy_triton.py - kernels from CuPy (an ElementwiseKernel and a reduction) and
# from Triton (a vector add), inside NVTX ranges of the 'nvtx'-free default domain pushed
# through torch.cuda.nvtx. Prints digests that must not change under rangeprof.
import hashlib
import cupy as cp
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


torch.manual_seed(0)
n = 1 << 24
x = torch.rand(n, device="cuda")
y = torch.rand(n, device="cuda")
o = torch.empty_like(x)
add_kernel[(triton.cdiv(n, 1024),)](x, y, o, n, BLOCK=1024)  # compile outside the range
torch.cuda.synchronize()
for _ in range(8):  # several launches: ncu measures each once
    torch.cuda.nvtx.range_push("triton")
    add_kernel[(triton.cdiv(n, 1024),)](x, y, o, n, BLOCK=1024)
    torch.cuda.nvtx.range_pop()

saxpy = cp.ElementwiseKernel("float32 a, float32 x, float32 y", "float32 z", "z = a * x + y", "rp_saxpy")
cx = cp.arange(n, dtype=cp.float32)
cy = cp.ones(n, dtype=cp.float32)
# Compiled outside the ranges, twice: the loop's arrays then come from CuPy's pool, which
# holds the two blocks each iteration alternates between (range replay refuses an
# allocation inside a range; doc/range-replay.md).
for _ in range(2):
    cz = saxpy(cp.float32(2), cx, cy)
    total = cz.sum()
cp.cuda.Device().synchronize()
for _ in range(8):
    torch.cuda.nvtx.range_push("cupy")
    cz = saxpy(cp.float32(2), cx, cy)
    total = cz.sum()
    torch.cuda.nvtx.range_pop()
torch.cuda.synchronize()
print("triton", hashlib.sha256(o.cpu().numpy().tobytes()).hexdigest()[:16])
print("cupy", float(total), hashlib.sha256(cp.asnumpy(cz).tobytes()).hexdigest()[:16])
