#!/usr/bin/env bash
# bench/l2_placement.sh - issue 22: do rangeprof's and ncu's DRAM writes of L2-resident
# kernels differ because of what each does before the kernel, or because each tool's own
# device allocations put the application's arrays at other physical addresses? Runs
# tests/gpu/l2_resident.cu (gather + read-modify-write, half-L2 overwrite, histogram with
# atomics; the arrays at PLACES offsets STEP_KB apart in one allocation) under rangeprof
# with --setup early (the default: its flush buffer is allocated on its set-up thread from
# the first allocation on) and --setup lazy (allocated at the first measured launch, after
# the application's allocation), and under ncu --cache-control all, REPS times each, and
# prints bench/l2_placement.py's tables against the first ncu recording. MATCH=N: rangeprof
# with the application's allocation padded to where it lies under ncu (and the controls
# said below); the tables then compare the same physical places.
# On the GPU machine, from the repository root, with build/ built and LD_LIBRARY_PATH as
# tests/gpu/run.sh wants it. OUT set: the tables and raw files are left there.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
cd "$work" || exit 1
nvcc -O2 -arch=sm_90 -std=c++17 "$root/tests/gpu/l2_resident.cu" -o l2_resident || exit 1
M=dram__bytes_write.sum,dram__bytes_read.sum,gpu__time_duration.sum
ARGS="${ITER:-3} ${PLACES:-64} ${STEP_KB:-2048} ${KINDS:-gather,overwrite,histogram,readonly}"
./l2_resident $ARGS >plain.txt 2>plain.err
cat plain.err
labels=()
# One recording: TOOL (ncu; ncu-own-sweep, ncu-own-empty: ncu --cache-control none, the
# program flushing the L2 itself before each kernel, L2_RESIDENT_FLUSH=sweep or empty;
# early, lazy: rangeprof with that --setup) LABEL USED_MB (0: no padding) [BUILD:
# rangeprof's build directory, build/ if not given, e.g. one built with
# -Dc_args=-DFLUSH_DISCARD_HALVES=0, whose flush sweeps without discarding].
record() {
	local tool=$1 label=$2 used=$3 rp=${4:-$root/build}/scripts/rangeprof setup=$1 cache=all
	if [ "${tool%%-*}" = ncu ]; then
		local own=
		[ "$tool" = ncu ] || own=${tool#ncu-own-} cache=none
		L2_RESIDENT_FLUSH=$own /usr/local/cuda/bin/ncu --clock-control none --cache-control $cache \
			--metrics $M --csv --page raw --nvtx -k 'regex:^(gather|overwrite|histogram|readonly)$' \
			--log-file "$label.csv" ./l2_resident $ARGS "$used" >"$label.txt" 2>"$label.err"
		labels+=("$label=$label.csv")
	else
		/usr/bin/time -f "%e s" -o "$label.time" "$rp" -q \
			-o "$label.jsonl" --setup "$setup" \
			--runs "${RUNS:-10}" --metrics $M \
			./l2_resident $ARGS "$used" >"$label.txt" 2>"$label.err"
		cmp -s plain.txt "$label.txt" || echo "$label: rangeprof changed the checksum"
		labels+=("$label=$label.jsonl")
	fi
	grep -h l2_resident: "$label.txt" "$label.err" | sed "s/^/$label: /"
}
if [ -n "${RECORDINGS:-}" ]; then
	# RECORDINGS="TOOL:LABEL:USED_MB[:BUILD] ...", in that order.
	for spec in $RECORDINGS; do
		IFS=: read -r tool label used build <<<"$spec"
		record "$tool" "$label" "$used" "$build"
	done
elif [ -z "${MATCH:-}" ]; then
	# Each tool as it is: the application's allocation wherever the tool leaves it.
	for rep in $(seq 1 "${REPS:-2}"); do
		record ncu "ncu$rep" 0
		record early "early$rep" 0
		record lazy "lazy$rep" 0
	done
else
	# Padding to the same device memory in use: ncu first as it is, then rangeprof with
	# the padding that brings the memory in use before the allocation to ncu's figure; two
	# controls, 2 MB more (one place further) and MATCH MB more under both tools. (It does
	# not put the allocation at the same physical place: bench/NOTES.md, session 11.)
	record ncu ncu 0
	used=$(sed -n 's/.* \([0-9]*\) MiB used before the allocation.*/\1/p' ncu.err | head -1)
	[ -n "$used" ] || { echo "no 'MiB used before' line from ncu"; exit 1; }
	record lazy lazy "$used"
	record early early "$used"
	record ncu ncu_again 0
	record lazy lazy_2mb_more $((used + 2))
	record ncu "ncu_${MATCH}mb_more" $((used + MATCH))
	record lazy "lazy_${MATCH}mb_more" $((used + MATCH))
fi
for metric in dram__bytes_write.sum dram__bytes_read.sum gpu__time_duration.sum; do
	python3 "$root/bench/l2_placement.py" --metric $metric "${labels[@]}"
done | tee table.txt
if [ -n "${OUT:-}" ]; then
	cp table.txt "$OUT/l2_placement_table.txt"
	tar czf "$OUT/l2_placement.tgz" *.jsonl *.csv *.txt *.err *.time 2>/dev/null
fi
