#!/usr/bin/env bash
# bench/write_probe.sh - DRAM writes of bench/write_probe.py under ncu and rangeprof, with
# and without cache control, ncu twice.
# Result (H200, session 1): with --cache-control none the two tools start from different
# cache states, so DRAM counts differ by up to 40 %; times still agree within 2 %
# (doc/measurements.md, "Agreement with ncu"). No code comment cites it.
# Run, on the GPU machine, from the repository root with build/ built (needs PyTorch and
# Triton): bench/write_probe.sh > write.txt 2>&1
root=$(pwd); RP=$root/build/scripts/rangeprof; NCU=/usr/local/cuda/bin/ncu
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_op_write.sum
cd "$(mktemp -d)"
for cc in all none; do
	for rep in 1 2; do
		$NCU --clock-control none --cache-control $cc --csv --page raw --metrics $M --nvtx \
			--nvtx-include 'regex:.*/' --log-file ncu_$cc$rep.csv python3 "$root/bench/write_probe.py" >/dev/null 2>&1
	done
	"$RP" -q -o rp_$cc.jsonl --runs 10 --cache-control $cc --metrics $M --nvtx-include 'regex:.*/' \
		python3 "$root/bench/write_probe.py" >/dev/null
	for rep in 1 2; do
		echo "== cache-control $cc, ncu run $rep vs rangeprof"
		python3 "$root/tests/gpu/compare_ncu.py" rp_$cc.jsonl ncu_$cc$rep.csv | grep -v "^only"
	done
done
