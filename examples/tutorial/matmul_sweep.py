"""examples/tutorial/matmul_sweep.py - the tutorial's matrix-size sweep in fp32 and fp16,
as a plain PyTorch program: no profiler import, only NVTX ranges whose texts carry the
configuration ('matmul n=4096 dtype=fp16'), which rangeprof's loader turns into columns.

usage: python3 matmul_sweep.py [--sizes 1024,2048,4096,8192] [--dtypes fp32,fp16]"""
import argparse

import torch

DTYPES = {"fp32": torch.float32, "fp16": torch.float16}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1024,2048,4096,8192")
    parser.add_argument("--dtypes", default="fp32,fp16")
    args = parser.parse_args()
    # fp32 stays fp32 (no TF32), as in the tutorial, so that its FLOPs are FFMA instructions.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(0)
    checksum = 0.0
    for dtype in args.dtypes.split(","):
        for n in (int(s) for s in args.sizes.split(",")):
            a = torch.randn(n, n, device="cuda", dtype=DTYPES[dtype])
            b = torch.randn(n, n, device="cuda", dtype=DTYPES[dtype])
            # The first call picks the cuBLAS kernel and creates its workspace; keep that
            # set-up out of the measured range.
            torch.matmul(a, b)
            torch.cuda.synchronize()
            torch.cuda.nvtx.range_push(f"matmul n={n} dtype={dtype}")
            c = torch.matmul(a, b)
            torch.cuda.nvtx.range_pop()
            checksum += float(c.float().abs().mean())
            del a, b, c
            torch.cuda.empty_cache()
    print(f"checksum {checksum:.6g}")


if __name__ == "__main__":
    main()
