#!/usr/bin/env bash
# bench/mem_scaling.sh [GIB...] - issue 6's benchmark: a program holding N GiB of touched
# device memory launches a 64 MB in-place kernel 3 times in NVTX range "k"; rangeprof
# (--runs 20) and ncu (one pass, --clock-control none) measure it side by side, and the
# checksum must not change. Prints one line per size: rangeprof's cost of each measured
# launch (from the summary records), its save strategy, rangeprof's and ncu's wall time.
# Results (H200, session 2): doc/measurements.md, "Held memory, save and reach". Run by
# tests/gpu/run.sh (unless QUICK=1); README.md's memory figures come from it.
# Run on the GPU machine from the repository root with build/ built:
#   bench/mem_scaling.sh 0 16 48 70 120
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
RP="$root/build/scripts/rangeprof"
NCU=${NCU:-/usr/local/cuda/bin/ncu}
work=$(mktemp -d)
nvcc -O2 -arch=sm_90 -std=c++17 "$root/bench/mem_scaling.cu" -o "$work/mem_scaling" || exit 1
sizes=${*:-0 16 48 70 120}
TIMEFORMAT=%R
printf '%-6s %-44s %-10s %-9s %-9s %s\n' GiB "rangeprof ms per launch (1st, 2nd, 3rd)" strategy "rp wall" "ncu wall" same
for g in $sizes; do
	plain=$("$work/mem_scaling" "$g")
	rp_wall=$( { time "$RP" -q -o "$work/m$g.jsonl" --runs 20 --nvtx-include k/ "$work/mem_scaling" "$g" >"$work/rp$g.txt" 2>"$work/rp$g.err"; } 2>&1 )
	ncu_wall=$( { time "$NCU" --clock-control none --nvtx --nvtx-include k/ --metrics gpu__time_duration.sum "$work/mem_scaling" "$g" >"$work/ncu$g.txt" 2>&1; } 2>&1 )
	costs=$(python3 -c "
import json,sys
s=[json.loads(l) for l in open('$work/m$g.jsonl')]
s=[r for r in s if r['type']=='summary']
print(' '.join('%.1f' % r['cost_ms']['total'] for r in s), '|', ','.join(sorted({r['save']['strategy'] for r in s})))")
	same=no; [ "$plain" = "$(cat "$work/rp$g.txt")" ] && same=yes
	printf '%-6s %-44s %-10s %-9s %-9s %s\n' "$g" "${costs% |*}" "${costs#*| }" "$rp_wall" "$ncu_wall" "$same"
	grep -h "warning\|error" "$work/rp$g.err" | head -3
done
[ -n "${OUT:-}" ] && cp "$work"/m*.jsonl "$OUT/" 2>/dev/null
rm -rf "$work"
