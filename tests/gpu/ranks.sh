#!/usr/bin/env bash
# tests/gpu/ranks.sh - issue 37 on the GPU machine: a torchrun job measured by rangeprof,
# one file per rank (-o 'r.%q{RANK}.jsonl'), then one Parquet dataset and the cross-rank
# report over it (tests/gpu/check_ranks.py says what is checked).
#   1. ONE GPU (nvidia-h200): torchrun --nproc-per-node 2 tests/gpu/torchrun_ranks.py, both
#      ranks on cuda:0: results unchanged, each session says its rank, both files in one
#      dataset, every kernel compared over the 2 ranks.
#   2. TWO GPUs (nvidia-h200-x2, whenever lent): torchrun with an all-reduce
#      (tests/gpu/torchrun_allreduce.py): the job completes under rangeprof with its
#      results unchanged, each rank on its own GPU, and the report names each rank's GPU.
#      With fewer than 2 GPUs: one SKIP line, not a failure.
# The analysis needs pyarrow, which the H200's image may lack: without it the files are
# left in $OUT and the line to run on the development machine is printed. $OUT gets at
# most 8 files (the device tool's limit): per case the two rank files, the analysis and
# the plot. Exit status: the number of failed checks (0: all passed or skipped).
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-$root/gpu-out}
mkdir -p "$out"
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
	echo "SKIP: no GPU here"
	exit 0
fi
if ! command -v torchrun >/dev/null; then
	echo "SKIP: no torchrun here"
	exit 0
fi
RP="$root/build/scripts/rangeprof"
CR="python3 $root/tests/gpu/check_ranks.py"
export PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}"
work=$(mktemp -d)
cd "$work" || exit 1
fail=0
have_pyarrow=$(python3 -c 'import pyarrow, pandas; print(1)' 2>/dev/null || echo 0)
result() {  # NAME STATUS
	if [ "$2" -eq 0 ]; then echo "PASS $1"; else echo "FAIL $1"; fail=$((fail + 1)); fi
}
analyse() {  # NAME WORLD [--own-gpus] FILES...
	local name=$1; shift
	if [ "$have_pyarrow" = 1 ]; then
		$CR analyse --dataset "$work/$name.ds" --plot "$out/$name.ranks.png" "$@" >"$out/$name.analyse.txt" 2>&1
		result "$name-analyse" $?
		cat "$out/$name.analyse.txt"
	else
		echo "NOTE $name-analyse not run here: no pyarrow; on the development machine, with"
		echo "     the files from \$OUT: PYTHONPATH=python python3 tests/gpu/check_ranks.py analyse --dataset /tmp/$name.ds $* (paths under \$OUT)"
	fi
}

# 1. One GPU, two ranks.
torchrun --nproc-per-node 2 "$root/tests/gpu/torchrun_ranks.py" 2>/dev/null | sort >one_plain.txt
timeout 600 "$RP" -q -o 'one.%q{RANK}.jsonl' --runs 10 --nvtx-include 'regex:^step /' -- \
	torchrun --nproc-per-node 2 "$root/tests/gpu/torchrun_ranks.py" 2>one_rp.err | sort >one_rp.txt
cmp -s one_plain.txt one_rp.txt && test -s one_plain.txt
result one-gpu-results-unchanged $?
cat one_rp.txt
$CR records --world 2 one.0.jsonl one.1.jsonl
result one-gpu-records $?
tail -5 one_rp.err
cp one.0.jsonl one.1.jsonl "$out/" 2>/dev/null
analyse one --world 2 one.0.jsonl one.1.jsonl

# 2. Two GPUs: an all-reduce job, each rank on its own GPU.
gpus=$(nvidia-smi -L | wc -l)
if [ "$gpus" -ge 2 ]; then
	torchrun --nproc-per-node 2 "$root/tests/gpu/torchrun_allreduce.py" 2>/dev/null | sort >two_plain.txt
	timeout 600 "$RP" -q -o 'two.%q{RANK}.jsonl' --runs 5 --nvtx-include 'regex:^step /' -- \
		torchrun --nproc-per-node 2 "$root/tests/gpu/torchrun_allreduce.py" 2>two_rp.err | sort >two_rp.txt
	cmp -s two_plain.txt two_rp.txt && test -s two_plain.txt
	result two-gpu-allreduce-completes $?
	$CR records --world 2 --own-gpus two.0.jsonl two.1.jsonl
	result two-gpu-records $?
	tail -5 two_rp.err
	cp two.0.jsonl two.1.jsonl "$out/" 2>/dev/null
	analyse two --world 2 --own-gpus two.0.jsonl two.1.jsonl
else
	echo "SKIP two-GPU ranks check (torchrun all-reduce, each rank's GPU named): $gpus GPU here, needs 2 (nvidia-h200-x2)"
fi
echo "ranks.sh: $fail failed"
exit "$fail"
