"""tests/gpu/torchrun_ranks.py - for `torchrun --nproc-per-node 2` on ONE GPU (issue 37):
both ranks use cuda:0 (no process group: nothing to all-reduce), each runs matmuls of two
sizes inside NVTX ranges 'step n=N', so that rangeprof measures the same kernels in both
processes and the cross-rank report (rangeprof-report --by-rank) has two ranks to compare.
Prints each rank's result, which must be the same with and without rangeprof."""
import os

import torch


def main():
    rank = int(os.environ["RANK"])
    torch.cuda.set_device(0)
    torch.manual_seed(1234)
    total = 0.0
    for n in (1024, 2048):
        a = torch.randn(n, n, device="cuda")
        for _ in range(4):
            torch.cuda.nvtx.range_push(f"step n={n}")
            c = a @ a
            torch.cuda.nvtx.range_pop()
        torch.cuda.synchronize()
        total += float(c.double().abs().sum().item())
    print(f"rank {rank} world {os.environ['WORLD_SIZE']} sum {round(total, -3):.0f}", flush=True)


if __name__ == "__main__":
    main()
