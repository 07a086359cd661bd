"""examples/tutorial/clocks.py - clocks and temperature per run: keeps the GPU busy with
fp16 matrix products for a few seconds, marking every few iterations with an NVTX range
'burn step=K', so that the measured runs of successive steps show the SM clock
(sm_clock_hz, measured per run) and the temperature the GPU reached, next to the rated
clock that a device attribute reports.

usage: python3 clocks.py [--seconds 6] [--every 40] [--n 8192]"""
import argparse
import time

import torch


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--every", type=int, default=40)
    parser.add_argument("--n", type=int, default=8192)
    args = parser.parse_args()
    torch.manual_seed(0)
    a = torch.randn(args.n, args.n, device="cuda", dtype=torch.float16)
    b = torch.randn(args.n, args.n, device="cuda", dtype=torch.float16)
    c = torch.matmul(a, b)
    torch.cuda.synchronize()
    start, i, step = time.monotonic(), 0, 0
    while time.monotonic() - start < args.seconds:
        if i % args.every == 0:
            torch.cuda.nvtx.range_push(f"burn step={step}")
            torch.matmul(a, b, out=c)
            torch.cuda.nvtx.range_pop()
            step += 1
        else:
            torch.matmul(a, b, out=c)
        i += 1
        if i % 8 == 0:
            torch.cuda.synchronize()  # keeps the wall-clock budget honest
    torch.cuda.synchronize()
    print(f"{i} products, {step} marked steps")


if __name__ == "__main__":
    main()
