# tests/gpu/torch_memory.py - PyTorch kernels whose memory is hard to save cheaply (issue 6):
# multi-tensor apply (_foreach_ ops pass tensor lists in a parameter struct), in-place
# batched GEMM with beta = 1 (baddbmm_), an in-place add, index_add_ with atomics. Run it
# also with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (cuMemCreate/cuMemMap memory).
# Prints checksums that must be the same with and without rangeprof.
import torch

torch.manual_seed(0)
dev = "cuda"
params = [torch.randn(n, device=dev) for n in (1000, 30000, 65536, 250000)]
grads = [torch.randn_like(p) for p in params]
a = torch.randn(16, 128, 64, device=dev)
b = torch.randn(16, 64, 96, device=dev)
c = torch.randn(16, 128, 96, device=dev)
x = torch.randn(1 << 20, device=dev)
idx = torch.randint(0, 4096, (1 << 20,), device=dev)
acc = torch.zeros(4096, device=dev)
for step in range(3):
    torch.cuda.nvtx.range_push("foreach")
    torch._foreach_mul_(params, 0.9)
    torch._foreach_add_(params, grads, alpha=0.1)
    torch.cuda.nvtx.range_pop()
    torch.cuda.nvtx.range_push("baddbmm")
    c.baddbmm_(a, b, beta=1.0, alpha=0.5)
    torch.cuda.nvtx.range_pop()
    torch.cuda.nvtx.range_push("inplace")
    x.add_(1.0).mul_(0.99)
    acc.index_add_(0, idx, x)
    torch.cuda.nvtx.range_pop()
torch.cuda.synchronize()
print("foreach", [round(float(p.double().sum()), 3) for p in params])
print("baddbmm", round(float(c.double().sum()), 3))
print("inplace", round(float(x.double().sum()), 3), round(float(acc.double().sum()), 1))
