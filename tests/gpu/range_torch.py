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
output (outside the ranges), which must not change under rangeprof or ncu."""
import hashlib
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


def in_range(name, fn, *args):
    torch.cuda.nvtx.range_push(name)
    out = fn(*args)
    torch.cuda.nvtx.range_pop()
    return out


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


if __name__ == "__main__":
    main()
