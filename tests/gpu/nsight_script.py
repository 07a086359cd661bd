"""tests/gpu/nsight_script.py - a Nsight Python script as its users write it: the tutorial's
first lesson, an fp32 matmul at three sizes, 20 runs each. tests/gpu/check_nsight_script.py
runs it under Nsight Python 0.9.6 and, with only its import line changed to
'import rangeprof as nsight', under rangeprof; the two DataFrames must agree.

usage: python3 nsight_script.py [OUT.json]   (OUT.json: the DataFrame, pandas orient='split')
No sizes of 256 or 512: cuBLAS splits those in two kernels, which Nsight Python 0.9.6 refuses."""

import sys

import nsight
import torch

torch.backends.cuda.matmul.allow_tf32 = False


@nsight.analyze.kernel(configs=[(1024,), (2048,), (4096,)], runs=20)
def matmul(n):
    a = torch.randn(n, n, device="cuda")
    b = torch.randn(n, n, device="cuda")
    with nsight.annotate("matmul"):
        _ = a @ b


if __name__ == "__main__":
    result = matmul()
    df = result.to_dataframe()
    print(df[["Annotation", "n", "Metric", "AvgValue", "StdDev", "NumRuns", "Kernel"]].to_string())
    if len(sys.argv) > 1:
        df.to_json(sys.argv[1], orient="split", default_handler=str)
