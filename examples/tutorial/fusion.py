"""examples/tutorial/fusion.py - the tutorial's fusion lesson: out = a*b + c computed
unfused (PyTorch eager: one kernel for the product, one for the sum, each reading and
writing the whole array) and fused (one Triton kernel, one CuPy ElementwiseKernel), so
that bytes moved per NVTX range ('dram__bytes_read.sum' + 'dram__bytes_write.sum') show
what fusion saves. Variants whose package is missing are skipped with a message.

usage: python3 fusion.py [--n 16777216] [--launches 5]"""
import argparse
import sys

import torch


def triton_fused():
    import triton
    import triton.language as tl

    @triton.jit
    def fma_kernel(a_ptr, b_ptr, c_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        a = tl.load(a_ptr + offs, mask=mask)
        b = tl.load(b_ptr + offs, mask=mask)
        c = tl.load(c_ptr + offs, mask=mask)
        tl.store(out_ptr + offs, a * b + c, mask=mask)

    def run(a, b, c, out):
        n = a.numel()
        fma_kernel[(triton.cdiv(n, 1024),)](a, b, c, out, n, BLOCK=1024)

    return run


def cupy_fused():
    import cupy as cp

    kernel = cp.ElementwiseKernel("float32 a, float32 b, float32 c", "float32 out",
                                  "out = a * b + c", "tutorial_fused_fma")

    def run(a, b, c, out):
        kernel(cp.asarray(a), cp.asarray(b), cp.asarray(c), cp.asarray(out))

    return run


def unfused(a, b, c, out):
    product = a * b
    torch.add(product, c, out=out)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1 << 24)
    parser.add_argument("--launches", type=int, default=5)
    args = parser.parse_args()
    torch.manual_seed(0)
    a, b, c = (torch.rand(args.n, device="cuda") for _ in range(3))
    expected = a * b + c
    variants = {"unfused": unfused}
    for name, make in (("triton", triton_fused), ("cupy", cupy_fused)):
        try:
            variants[name] = make()
        except ImportError as e:
            print(f"fusion.py: skipping variant '{name}': {e}", file=sys.stderr)
    for name, run in variants.items():
        out = torch.empty_like(a)
        run(a, b, c, out)  # compiles (Triton, CuPy) outside the measured range
        torch.cuda.synchronize()
        for _ in range(args.launches):
            torch.cuda.nvtx.range_push(f"fma variant={name} n={args.n}")
            run(a, b, c, out)
            torch.cuda.nvtx.range_pop()
        torch.cuda.synchronize()
        err = float((out - expected).abs().max())
        print(f"{name}: max abs error {err:.3g}")


if __name__ == "__main__":
    main()
