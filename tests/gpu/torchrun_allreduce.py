"""tests/gpu/torchrun_allreduce.py - for `torchrun --nproc-per-node 2` on two GPUs
(nvidia-h200-x2): each rank runs a matmul and an all-reduce inside NVTX ranges. With both
ranges selected (--nvtx-include step/), rangeprof must measure the matmuls, report the NCCL kernels as never
replayed, and the job must finish with the same results."""
import os

import torch
import torch.distributed as dist


def main():
    rank = int(os.environ["RANK"])
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    dist.init_process_group("nccl")
    torch.manual_seed(rank)
    a = torch.randn(2048, 2048, device="cuda")
    for _ in range(3):
        torch.cuda.nvtx.range_push("step")
        torch.cuda.nvtx.range_push("matmul")
        c = a @ a
        torch.cuda.nvtx.range_pop()
        torch.cuda.nvtx.range_push("allreduce")
        dist.all_reduce(c)
        torch.cuda.nvtx.range_pop()
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    print(f"rank {rank} sum {round(float(c.double().sum().item()), -3):.0f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
