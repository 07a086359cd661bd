"""tests/gpu/torch_cnn.py - library kernels and short kernels against ncu (issue 11 item 6),
run by tests/gpu/library_kernels.sh plainly, under rangeprof and under ncu:
  "cnn/"    a small CNN in eval mode, three forwards: cuDNN convolutions (the second, 64->128
            3x3 stride 2 on 32x64x56x56, ~3.7 GFLOP of fp32 FFMA, ~50-150 us on an H200,
            is meant to be the sm80 implicit-GEMM kernel that measured 5.7 % faster than
            ncu), batch norm, ReLU, pooling, and a linear layer 128->1000 on 32 rows (a
            few-microsecond cuBLAS/CUTLASS sgemm, like the 7 us one that read 5.5 % faster);
  "short/"  PyTorch elementwise and reduction kernels of ~2-20 us, three iterations.
Prints digests and sums of the results, which must not change under rangeprof."""
import hashlib

import torch
import torch.nn as nn

torch.manual_seed(0)
# Fixed algorithms: no autotuning, whose choice could differ between the plain run, the
# run under rangeprof and the run under ncu, and would then compare different kernels.
torch.backends.cudnn.benchmark = False
torch.backends.cudnn.deterministic = True
# fp32 FFMA kernels, as the report's 'f32f32_f32f32' convolution; TF32 would pick other ones.
torch.backends.cudnn.allow_tf32 = False
torch.backends.cuda.matmul.allow_tf32 = False
dev = "cuda"

model = nn.Sequential(
    nn.Conv2d(3, 64, 3, stride=2, padding=1),      # 224 -> 112, ~103 MB out
    nn.BatchNorm2d(64),
    nn.ReLU(inplace=True),
    nn.MaxPool2d(2),                                 # 112 -> 56
    nn.Conv2d(64, 128, 3, stride=2, padding=1),     # 56 -> 28: the main convolution
    nn.BatchNorm2d(128),
    nn.ReLU(inplace=True),
    nn.AdaptiveAvgPool2d(1),
    nn.Flatten(),
    nn.Linear(128, 1000),
).to(dev).eval()
# Batch norm with running statistics that are not the identity, so that it does work.
with torch.no_grad():
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.1, 0.1)
            m.running_var.uniform_(0.5, 1.5)
x = torch.randn(32, 3, 224, 224, device=dev)

with torch.no_grad():
    # A forward outside every selected range first: cuDNN and cuBLAS handles, workspaces
    # and lazy module loading happen here, not inside the measured launches.
    model(x)
    torch.cuda.synchronize()
    for _ in range(3):  # ncu measures each launch once: three samples per kernel
        torch.cuda.nvtx.range_push("cnn")
        y = model(x)
        torch.cuda.nvtx.range_pop()

    a = torch.randn(1 << 20, device=dev)
    b = torch.randn(1 << 20, device=dev)
    big = torch.randn(4 << 20, device=dev)
    big2 = torch.randn(4 << 20, device=dev)
    logits = torch.randn(512, 1024, device=dev)
    # Warm-up outside the range, as above.
    a + b, big.sum(), torch.softmax(logits, -1), torch.lerp(big, big2, 0.25)
    torch.cuda.synchronize()
    for _ in range(3):
        torch.cuda.nvtx.range_push("short")
        s_add = a + b                            # 12 MB moved: ~3-4 us
        s_sum = big.sum()                        # 16 MB read: ~5-7 us
        s_soft = torch.softmax(logits, -1)       # 2 MB each way: ~3 us
        s_lerp = torch.lerp(big, big2, 0.25)     # 48 MB moved: ~12-15 us
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()

for name, t in (("cnn", y), ("add", s_add), ("sum", s_sum), ("softmax", s_soft),
                ("lerp", s_lerp)):
    t = t.float().cpu()
    digest = hashlib.sha256(t.numpy().tobytes()).hexdigest()[:16]
    first = " ".join(f"{v:.6e}" for v in t.flatten()[:3].tolist())
    print(f"{name} {digest} sum {t.double().sum().item():.9e} first {first}")
