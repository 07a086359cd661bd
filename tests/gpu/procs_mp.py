"""tests/gpu/procs_mp.py - two Python multiprocessing children (spawn or forkserver, the
first argument) run PyTorch kernels inside NVTX ranges at the same time on one GPU. Under
rangeprof each child writes its own file (%p) and every child must have run records: the
processes take turns on the device instead of one getting CUPTI_ERROR_HARDWARE_BUSY."""
import multiprocessing as mp
import sys


def child(rank, barrier, queue):
    import torch
    torch.manual_seed(rank)
    a = torch.randn(1024, 1024, device="cuda")
    b = torch.randn(1024, 1024, device="cuda")
    torch.cuda.synchronize()
    barrier.wait()  # both children measure at once from here
    c = None
    for _ in range(4):
        torch.cuda.nvtx.range_push(f"child{rank}")
        c = a @ b
        c = torch.relu(c)
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    queue.put((rank, round(float(c.double().sum().item()), -2)))


def main():
    method = sys.argv[1] if len(sys.argv) > 1 else "spawn"
    ctx = mp.get_context(method)
    barrier = ctx.Barrier(2)
    queue = ctx.Queue()
    procs = [ctx.Process(target=child, args=(r, barrier, queue)) for r in range(2)]
    for p in procs:
        p.start()
    results = sorted(queue.get(timeout=600) for _ in procs)
    for p in procs:
        p.join()
    for rank, total in results:
        print(f"child {rank} sum {total:.0f}")
    print("exit codes", [p.exitcode for p in procs])


if __name__ == "__main__":
    main()
