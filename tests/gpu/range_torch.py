"""tests/gpu/range_torch.py - range replay (--replay-mode range, issue 20) on PyTorch: whole
module forwards, each inside one NVTX push/pop range, measured as one workload each.

usage: python3 range_torch.py [mlp|fusion] [ITERATIONS]      (default: mlp 4)

  mlp     a transformer MLP block, out = x + fc2(gelu(fc1(layer_norm(x)))), fp32, 2048
          tokens of width 1024, hidden 4096: a LayerNorm (reductions), two cuBLAS GEMMs
          with their bias, an elementwise GELU and the residual add; each forward inside
          the range 'mlp', its output the next forward's input.
  fusion  the Nsight Python tutorial's fusion lesson, out = a*b + c on 16M floats:
          'unfused' (PyTorch eager: the product goes to memory, then the add) and 'fused'
          (torch.addcmul: one kernel), each inside its own range.

Before the ranges, every step runs outside any range (3 times): the cuBLAS handle and
workspace, the modules' lazy loading and the caching allocator's blocks are all in place,
so that no range allocates (cudaMalloc inside a range would refuse it). The loop after the
warm-up makes exactly the allocations the warm-up made. Prints a digest of every range's
output (outside the ranges), which must not change under rangeprof or ncu.

With RANGE_REPLAY_TIME=1 in the environment (plain runs only: under a profiler the events
would hold its replays), each range is also timed by CUDA events recorded just outside it,
after a 256 MiB write flushed the L2 (as --cache-control all does) and torch.cuda._sleep
held the GPU for ~5 ms, so that the range's kernels are all queued when the first starts
(the range's GPU time without Python's launch gaps, as a replay issues them back to back:
without the hold the MLP block took 959 us by events, its kernels 754), and
"range NAME time us: median X (N ranges)" is printed on stderr, as tests/gpu/range_replay.cu
does, for tests/gpu/check_range.py vs-ncu --app-time."""
import hashlib
import os
import statistics
import sys

import torch


def digest(t):
    return hashlib.sha256(t.detach().float().cpu().numpy().tobytes()).hexdigest()[:16]


class MLPBlock(torch.nn.Module):
    def __init__(self, width, hidden):
        super().__init__()
        self.norm = torch.nn.LayerNorm(width)
        self.fc1 = torch.nn.Linear(width, hidden)
        self.fc2 = torch.nn.Linear(hidden, width)

    def forward(self, x):
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.norm(x))))


TIMING = os.environ.get("RANGE_REPLAY_TIME") == "1"
_times = {}
_flush = None


def in_range(name, fn, *args):
    global _flush
    if TIMING:
        if _flush is None:
            _flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
        _flush.fill_(len(_times.get(name, ())) & 0xFF)
        torch.cuda._sleep(10_000_000)
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
    torch.cuda.nvtx.range_push(name)
    out = fn(*args)
    torch.cuda.nvtx.range_pop()
    if TIMING:
        end.record()
        end.synchronize()
        _times.setdefault(name, []).append(begin.elapsed_time(end) * 1e3)
    return out


def print_times():
    for name, times in _times.items():
        print(f"range {name} time us: median {statistics.median(times):.2f} ({len(times)} ranges)",
              file=sys.stderr)


def mlp(iterations):
    block = MLPBlock(1024, 4096).cuda().eval()
    x = torch.randn(2048, 1024, device="cuda")
    # The same steps as the loop below, outside any range.
    for _ in range(3):
        y = block(x)
        digest(y)
    torch.cuda.synchronize()
    for i in range(iterations):
        y = in_range("mlp", block, x)
        print(f"mlp {i} {digest(y)}")
        x = y


def fusion(iterations):
    n = 1 << 24
    a, b, c = (torch.rand(n, device="cuda") for _ in range(3))
    out = torch.empty_like(a)

    def unfused():
        product = a * b
        torch.add(product, c, out=out)

    def fused():
        torch.addcmul(c, a, b, out=out)

    for name, fn in (("unfused", unfused), ("fused", fused)):
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        for i in range(iterations):
            in_range(name, fn)
            print(f"{name} {i} {digest(out)}")


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "mlp"
    iterations = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    torch.manual_seed(0)
    # fp32 GEMMs in fp32 (not TF32), as PyTorch's default: said here so that a changed
    # default does not change what is compared.
    torch.backends.cuda.matmul.allow_tf32 = False
    with torch.inference_mode():
        if mode == "mlp":
            mlp(iterations)
        elif mode == "fusion":
            fusion(iterations)
        else:
            sys.exit(f"range_torch.py: unknown mode '{mode}' (mlp, fusion)")
    print_times()


if __name__ == "__main__":
    main()
