"""examples/tutorial/vector_add.py - the tutorial's noise lesson: a vector add launched
many times (20 by default) in each of a few sizes, the smallest tiny enough that its time
is mostly launch and memory latency. Recorded with '--runs 20' it shows why one average is
not enough (CI, RSD, StableMeasurement); recorded with '--cache-control all' and 'none' it
shows what flushing the L2 changes for data that fits in it (H200: 60 MiB of L2).

usage: python3 vector_add.py [--sizes 4096,1048576,16777216] [--launches 20]"""
import argparse

import torch


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="4096,1048576,16777216")
    parser.add_argument("--launches", type=int, default=20)
    args = parser.parse_args()
    torch.manual_seed(0)
    checksum = 0.0
    for n in (int(s) for s in args.sizes.split(",")):
        x = torch.rand(n, device="cuda")
        y = torch.rand(n, device="cuda")
        out = torch.empty_like(x)
        torch.add(x, y, out=out)  # loads the kernel outside the measured range
        torch.cuda.synchronize()
        for _ in range(args.launches):
            torch.cuda.nvtx.range_push(f"vadd n={n}")
            torch.add(x, y, out=out)
            torch.cuda.nvtx.range_pop()
        checksum += float(out.sum())
    print(f"checksum {checksum:.6g}")


if __name__ == "__main__":
    main()
