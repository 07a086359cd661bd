#!/usr/bin/env bash
# bench/clock_probe.sh - is the small, mostly negative time difference to ncu on the
# memory-bound vadd a clock effect? Collects the SM and DRAM clocks with the times, under
# ncu and under rangeprof with 20 back-to-back runs and with 1 run per launch.
# Result (H200, session 1): both clocks agree within 0.15 % between ncu and rangeprof, with
# 20 runs and with 1 (doc/measurements.md, "Agreement with ncu"). No code comment cites it.
# Run, on the GPU machine, from the repository root with build/ built:
#   bench/clock_probe.sh > clock.txt 2>&1
root=$(pwd); RP=$root/build/scripts/rangeprof; NCU=/usr/local/cuda/bin/ncu
M=gpu__time_duration.sum,gpc__cycles_elapsed.avg.per_second,dram__cycles_elapsed.avg.per_second,dram__bytes_read.sum
cd "$(mktemp -d)"
nvcc -O2 -arch=sm_90 "$root/examples/kernels.cu" -o kernels -ldl
for rep in 1 2; do
	$NCU --clock-control none --cache-control all --csv --page raw --metrics $M --nvtx \
		--nvtx-include outer/ --log-file ncu$rep.csv ./kernels 8 >/dev/null 2>&1
	"$RP" -q -o rp20_$rep.jsonl --runs 20 --metrics $M --nvtx-include outer/ ./kernels 8 >/dev/null
	"$RP" -q -o rp1_$rep.jsonl --runs 1 --metrics $M --nvtx-include outer/ ./kernels 8 >/dev/null
	echo "== rep $rep: 20 runs"; python3 "$root/tests/gpu/compare_ncu.py" rp20_$rep.jsonl ncu$rep.csv | grep -v only
	echo "== rep $rep: 1 run"; python3 "$root/tests/gpu/compare_ncu.py" rp1_$rep.jsonl ncu$rep.csv | grep -v only
done
