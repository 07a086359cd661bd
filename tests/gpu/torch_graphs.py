"""tests/gpu/torch_graphs.py - PyTorch CUDA graphs (issue 8), run plain and under rangeprof:
the printed lines must be identical.

(a) torch.cuda.graph: one MLP step on static tensors (matmul, relu, an in-place add into a
    state that carries over), captured once and replayed 5 times, each replay inside
    NVTX range "g".
(b) torch.compile(mode="reduce-overhead"), which captures CUDA graphs itself (cudagraph
    trees), called several times inside range "c". It needs Triton and a working compiler;
    where it cannot run, "compile: unavailable <reason>" is printed instead, plain and under
    rangeprof alike.

Checksums are rounded sums and an exact hash of the bytes: cuBLAS picks the same kernels
for the same shapes in one process, so the results are bitwise reproducible run to run
(TF32 is off so that the choice does not depend on a global default)."""
import hashlib
import sys

import torch

torch.manual_seed(0)
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
dev = "cuda"


def digest(name, t):
    t = t.detach().float()
    h = hashlib.sha256(t.cpu().numpy().tobytes()).hexdigest()[:16]
    print(f"{name} sum {t.double().sum().item():.6g} hash {h}")


def graph_case():
    # Large enough for each kernel to take tens of microseconds.
    x = torch.randn(4096, 2048, device=dev) * 0.05
    w1 = torch.randn(2048, 2048, device=dev) * 0.02
    w2 = torch.randn(2048, 2048, device=dev) * 0.02
    state = torch.zeros(4096, 2048, device=dev)

    def step():
        h = torch.relu(x @ w1)
        state.add_(h @ w2)  # in place: each replay must see the previous one's state

    # Warm-up on a side stream, as PyTorch requires before capture (lazy cuBLAS
    # workspace and handle creation must not happen inside the capture).
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        step()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    state.zero_()

    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        step()
    for _ in range(5):
        torch.cuda.nvtx.range_push("g")
        g.replay()
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    digest("graph state", state)


def compile_case():
    try:
        a = torch.randn(4096, 4096, device=dev)
        b = torch.randn(4096, 4096, device=dev)

        def f(a, b):
            return torch.relu(a * 1.5 + b).sum(dim=1) + torch.sin(a[:, 0])

        cf = torch.compile(f, mode="reduce-overhead")
        # The first calls compile and record the graph; later ones replay it.
        outs = []
        for i in range(6):
            torch.cuda.nvtx.range_push("c")
            out = cf(a, b)
            torch.cuda.nvtx.range_pop()
            # cudagraph trees reuse the output's memory on the next replay: keep a copy.
            outs.append(out.clone())
        torch.cuda.synchronize()
        ref = f(a, b)
    except Exception as e:  # no Triton, no compiler, no cache dir: say why, go on
        reason = f"{type(e).__name__}: {e}".splitlines()[0][:200]
        print(f"compile: unavailable {reason}")
        return
    for i, out in enumerate(outs):
        digest(f"compile call {i}", out)
    # The compiled function may fuse and reorder, so it is compared with eager loosely.
    print("compile matches eager", bool(torch.allclose(outs[-1], ref, rtol=1e-4, atol=1e-3)))


def main():
    if not torch.cuda.is_available():
        print("no CUDA device")
        sys.exit(1)
    graph_case()
    compile_case()


if __name__ == "__main__":
    main()
