#!/usr/bin/env bash
# bench/placement_sweep.sh - issue 36: how far each kernel of bench/placement_sweep.cu moves
# its DRAM figures with where its arrays lie, under rangeprof (kernel replay, --runs 5, the
# median per place) and under ncu --cache-control all (one launch per place), for each kind
# and size. PADS (default "0 2 4 ... 22": 12 places 2 MB apart) moves the arrays by that many
# MB. On the GPU machine, from the repository root, with build/ built and LD_LIBRARY_PATH as
# tests/gpu/run.sh wants it (about 5 s per place). OUT set: the table and the raw files are
# left there. The table's spread is (max - min) / mean over the places, in %.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
cd "$work" || exit 1
nvcc -O2 -arch=sm_90 -std=c++17 "$root/bench/placement_sweep.cu" -o placement_sweep || exit 1
M=dram__bytes_write.sum,dram__bytes_read.sum,gpu__time_duration.sum
files=()
for pad in ${PADS:-0 2 4 6 8 10 12 14 16 18 20 22}; do
	./placement_sweep 1 "$pad" >"plain_$pad.txt"
	"$root/build/scripts/rangeprof" -q -o "rp_$pad.jsonl" --runs 5 --metrics $M \
		./placement_sweep 1 "$pad" >"rp_$pad.txt" 2>"rp_$pad.err"
	cmp -s "plain_$pad.txt" "rp_$pad.txt" || echo "rangeprof changed the checksum (pad $pad)"
	if [ "${NCU:-1}" = 1 ]; then
		/usr/local/cuda/bin/ncu --clock-control none --cache-control all --metrics $M --csv \
			--page raw --log-file "ncu_$pad.csv" ./placement_sweep 1 "$pad" >"ncu_$pad.txt" 2>&1
		files+=("ncu=ncu_$pad.csv")
	fi
	files+=("rp=rp_$pad.jsonl")
done
python3 "$root/bench/placement_sweep.py" "${files[@]}" | tee table.txt
if [ -n "${OUT:-}" ]; then
	cp table.txt "$OUT/placement_sweep_table.txt"
	tar czf "$OUT/placement_sweep.tgz" *.jsonl *.csv *.txt *.err 2>/dev/null
fi
