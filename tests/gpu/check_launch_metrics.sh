#!/usr/bin/env bash
# tests/gpu/check_launch_metrics.sh - rangeprof's launch__ metrics (doc/records.md) against
# ncu's on the same launches: tests/gpu/launch_kernels.cu (registers, shared memory, grids,
# clusters), the bundled example, and PyTorch's matmuls; and Nsight Python's example 09
# metric list (two counters and launch__sm_count) in one run. Runs alone
# (tests/gpu/check_launch_metrics.sh, after meson compile -C build) or sourced by run.sh.
# ncu runs with --clock-control none.
. "$(dirname "${BASH_SOURCE[0]}")/alone.sh"
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
	echo "SKIP: no GPU here"
	exit 0
fi
NCU=${NCU:-/usr/local/cuda/bin/ncu}
L=launch__block_size,launch__grid_size,launch__thread_count,launch__block_dim_x,launch__block_dim_y
L=$L,launch__block_dim_z,launch__grid_dim_x,launch__grid_dim_y,launch__grid_dim_z
L=$L,launch__cluster_dim_x,launch__cluster_dim_y,launch__cluster_dim_z,launch__cluster_size
L=$L,launch__sm_count,launch__registers_per_thread,launch__registers_per_thread_allocated
L=$L,launch__shared_mem_per_block,launch__shared_mem_per_block_allocated
L=$L,launch__shared_mem_per_block_static,launch__shared_mem_per_block_dynamic
L=$L,launch__shared_mem_per_block_driver,launch__stack_size,launch__occupancy_limit_blocks
L=$L,launch__occupancy_limit_warps,launch__occupancy_limit_registers
L=$L,launch__waves_per_multiprocessor
CHECK="python3 $root/tests/gpu/check_launch_metrics.py"
nvcc -O2 -arch=sm_90 "$root/tests/gpu/launch_kernels.cu" -o launch_kernels 2>/dev/null &&
	nvcc -O2 -arch=sm_90 -std=c++17 --extended-lambda "$root/examples/kernels.cu" -o kernels_lm \
		-ldl -lcuda || { echo "FAIL build"; exit 1; }

# Only launch__ metrics: the runs are still measured and written.
check launch-only "$RP" -q -o lk.jsonl --runs 3 --metrics "$L" ./launch_kernels
"$NCU" --clock-control none --csv --page raw --metrics "$L" --log-file lk_ncu.csv \
	./launch_kernels >/dev/null 2>&1
check launch-kernels-vs-ncu $CHECK lk.jsonl lk_ncu.csv --min-launches 20
cat "$work/launch-kernels-vs-ncu.log"

# Mixed with counters, on the example.
check launch-example "$RP" -q -o ex.jsonl --runs 2 --nvtx-include outer/ \
	--metrics "gpu__time_duration.sum,$L,dram__bytes_read.sum" ./kernels_lm 2
"$NCU" --clock-control none --csv --page raw --metrics "$L" --nvtx --nvtx-include outer/ \
	--log-file ex_ncu.csv ./kernels_lm 2 >/dev/null 2>&1
check launch-example-vs-ncu $CHECK ex.jsonl ex_ncu.csv --min-launches 6
cat "$work/launch-example-vs-ncu.log"

if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
	cat >mm.py <<'PY'
import torch
for n in (1024, 2048, 4096):
    a = torch.randn(n, n, device="cuda"); b = torch.randn(n, n, device="cuda")
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push("mm")
    (a @ b).sum()
    torch.cuda.nvtx.range_pop()
torch.cuda.synchronize()
PY
	# Nsight Python's example 09 asks for these three in one list.
	E9=smsp__sass_inst_executed_op_shared_ld.sum,smsp__sass_inst_executed_op_shared_st.sum,launch__sm_count
	check launch-torch "$RP" -q -o mm.jsonl --runs 2 --nvtx-include mm/ --metrics "$E9,$L" python3 mm.py
	"$NCU" --clock-control none --csv --page raw --metrics "$L" --nvtx --nvtx-include mm/ \
		--log-file mm_ncu.csv python3 mm.py >/dev/null 2>&1
	check launch-torch-vs-ncu $CHECK mm.jsonl mm_ncu.csv --min-launches 6
	cat "$work/launch-torch-vs-ncu.log"
	check launch-example09-metrics python3 -c '
import json, sys, torch
sms = torch.cuda.get_device_properties(0).multi_processor_count
runs = [json.loads(l) for l in open("mm.jsonl") if "\"type\":\"run\"" in l]
ok = bool(runs) and all(r["metrics"]["launch__sm_count"] == sms and
                        r["metrics"]["smsp__sass_inst_executed_op_shared_ld.sum"] is not None
                        for r in runs)
print(len(runs), "runs; launch__sm_count", sms, "and the shared-memory counters in each:", ok)
sys.exit(0 if ok else 1)'
else
	echo "SKIP launch-torch: no PyTorch with CUDA"
fi
alone_finish
