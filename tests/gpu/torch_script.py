# tests/gpu/torch_script.py - PyTorch under torch.cuda.nvtx ranges: fp32 and fp16 matmul
# (cuBLAS), softmax, an in-place update and a CUDA graph. Prints digests of the results,
# which must not change under rangeprof.
import hashlib
import torch

torch.manual_seed(0)
dev = "cuda"
out = {}
for dtype, name in ((torch.float32, "fp32"), (torch.float16, "fp16")):
    a = torch.randn(2048, 2048, device=dev, dtype=dtype)
    b = torch.randn(2048, 2048, device=dev, dtype=dtype)
    for _ in range(8):  # several launches: ncu measures each once
        torch.cuda.nvtx.range_push(f"matmul n=2048 dtype={name}")
        c = a @ b
        torch.cuda.nvtx.range_pop()
    out[name] = c
x = torch.randn(4096, 4096, device=dev)
for _ in range(8):
    torch.cuda.nvtx.range_push("softmax")
    y = torch.softmax(x, dim=-1)
    torch.cuda.nvtx.range_pop()
z = torch.zeros(1 << 24, device=dev)
torch.cuda.nvtx.range_push("inplace")
for _ in range(8):
    z.add_(1.0)
torch.cuda.nvtx.range_pop()
# A CUDA graph: its two kernel nodes are measured at g.replay() (--graph-profiling node).
g = torch.cuda.CUDAGraph()
s = torch.randn(1 << 20, device=dev)
torch.cuda.synchronize()
with torch.cuda.graph(g):
    s2 = s * 2 + 1
torch.cuda.nvtx.range_push("graph")
g.replay()
torch.cuda.nvtx.range_pop()
torch.cuda.synchronize()
for k, t in list(out.items()) + [("softmax", y), ("inplace", z), ("graph", s2)]:
    print(k, hashlib.sha256(t.float().cpu().numpy().tobytes()).hexdigest()[:16])
