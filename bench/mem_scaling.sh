#!/usr/bin/env bash
# bench/mem_scaling.sh [GIB...] - issue 6's benchmark: a program holding N GiB of touched
# device memory launches a 64 MB in-place kernel 3 times in NVTX range "k"; rangeprof
# (--runs 20) and ncu (one pass, --clock-control none) measure it side by side, and the
# checksum must not change. Prints one line per size: rangeprof's cost of each measured
# launch (from the summary records), its save strategy, the program's own wall time,
# rangeprof's and ncu's, and rangeprof's less the program's (issue 35 item 8: its growth
# from 0 to 120 GiB). REPS=N repeats every size N times, interleaved, and prints medians.
# MEM_SCALING_MODE=range: both tools replay each occurrence of the range "k" whole
# (--replay-mode range), so the first figure is a range's first occurrence (issue 35 item
# 8's second part: flat within 10 % from 0 to 120 GiB); kernel (the default) measures each
# launch.
# Results (H200, session 2): doc/measurements.md, "Held memory, save and reach". Run by
# tests/gpu/run.sh (unless QUICK=1); README.md's memory figures come from it.
# Run on the GPU machine from the repository root with build/ built:
#   bench/mem_scaling.sh 0 16 48 70 120
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
RP="$root/build/scripts/rangeprof"
NCU=${NCU:-/usr/local/cuda/bin/ncu}
sizes=${*:-0 16 48 70 120}
# REPS=N: each size N times, the sizes interleaved within a rep; each figure the median.
reps=${REPS:-1}
case $reps in
''|*[!0-9]*|0*) echo "mem_scaling.sh: REPS=${reps:0:40}: expected a whole number from 1 to 20" >&2; exit 2 ;;
esac
[ "$reps" -le 20 ] || { echo "mem_scaling.sh: REPS=$reps: expected a whole number from 1 to 20" >&2; exit 2; }
mode=${MEM_SCALING_MODE:-kernel}
case $mode in
kernel|range) ;;
*) echo "mem_scaling.sh: MEM_SCALING_MODE=${mode:0:40}: expected kernel or range" >&2; exit 2 ;;
esac
# The tools, checked before any GPU work (NCU=/bin/true leaves ncu out).
for tool in "$RP" "$NCU"; do
	[ -x "$tool" ] || { echo "mem_scaling.sh: $tool: not an executable (build/ built? NCU?)" >&2; exit 2; }
done
for g in $sizes; do
	case $g in
	''|*[!0-9]*) echo "mem_scaling.sh: size '${g:0:40}': expected whole GiB (e.g. 0 16 120)" >&2; exit 2 ;;
	esac
done
work=$(mktemp -d)
nvcc -O2 -arch=sm_90 -std=c++17 "$root/bench/mem_scaling.cu" -o "$work/mem_scaling" || exit 1
TIMEFORMAT=%R
rows="$work/rows.txt"
# Before each timed process the program runs once untimed at 0 GiB (prime): the process
# after one that held 120 GiB waited 50-90 ms longer for its context, whichever tool it
# was (session 21, call 4, from the program's phases), so that whichever tool ran after the
# program at 120 GiB paid for the program's memory. Waiting until nvidia-smi showed the
# memory given back did not remove it (call 5: rp - plain still 0.276 -> 0.523 s).
prime() {
	"$work/mem_scaling" 0 >/dev/null 2>&1 ||
		echo "mem_scaling.sh: the 0 GiB run before a timed one failed (exit $?)" >&2
}
for rep in $(seq 1 "$reps"); do
for g in $sizes; do
	# The program alone, timed too: rangeprof's growth with the memory is its wall less
	# this one (the program's own allocation and teardown of N GiB grow with N as well).
	prime
	plain_wall=$( { time "$work/mem_scaling" "$g" >"$work/plain$g.txt" 2>"$work/plain$g.err"; } 2>&1 )
	# rangeprof appends to its output: each rep's own file, so that its summaries are its own.
	rm -f "$work/m$g.jsonl"
	prime
	rp_wall=$( { time "$RP" -q -o "$work/m$g.jsonl" --runs 20 --replay-mode "$mode" --nvtx-include k/ "$work/mem_scaling" "$g" >"$work/rp$g.txt" 2>"$work/rp$g.err"; } 2>&1 )
	prime
	ncu_wall=$( { time "$NCU" --clock-control none --replay-mode "$mode" --nvtx --nvtx-include k/ --metrics gpu__time_duration.sum "$work/mem_scaling" "$g" >"$work/ncu$g.txt" 2>&1; } 2>&1 )
	costs=$(python3 -c "
import json,sys
s=[json.loads(l) for l in open('$work/m$g.jsonl')]
s=[r for r in s if r['type']=='summary']
print(' '.join('%.1f' % r['cost_ms']['total'] for r in s) or '-', '|', ','.join(sorted({r.get('save', {}).get('strategy', '-') for r in s})) or '-')" 2>/dev/null)
	[ -n "$costs" ] || costs="- | -" # no output file: said in the row, the table goes on
	same=no; [ "$(cat "$work/plain$g.txt")" = "$(cat "$work/rp$g.txt")" ] && same=yes
	echo "$g $plain_wall $rp_wall $ncu_wall $same ${costs% |*} | ${costs#*| }" >>"$rows"
	grep -h "warning\|error" "$work/rp$g.err" | head -3
done
done
# One line per size, medians over the reps; "same" only when every rep kept the checksum.
echo "replay mode: $mode (each figure below: a launch's or, in range mode, an occurrence's)"
python3 - "$rows" "$sizes" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
print("%-6s %-36s %-10s %-10s %-9s %-9s %-10s %s" % ("GiB", "rangeprof ms per launch (medians)",
      "strategy", "plain wall", "rp wall", "ncu wall", "rp - plain", "same"))
for g in sys.argv[2].split():
    mine = [r for r in rows if r[0] == g]
    if not mine:
        continue
    # The rep with the most summaries sets the columns; a rep with another number of them
    # (or none: "-") leaves its cells out.
    ref = max(mine, key=lambda r: r.index("|"))
    bar = ref.index("|")
    def cell(r, i):
        try:
            return float(r[5 + i]) if r.index("|") == bar else None
        except ValueError:
            return None
    launches = []
    for i in range(bar - 5):
        got = [v for v in (cell(r, i) for r in mine) if v is not None]
        launches.append(statistics.median(got) if got else float("nan"))
    plain, rp, ncu = (statistics.median(float(r[i]) for r in mine) for i in (1, 2, 3))
    same = "yes" if all(r[4] == "yes" for r in mine) else "no"
    print("%-6s %-36s %-10s %-10.3f %-9.3f %-9.3f %-10.3f %s" % (
        g, ", ".join("%.1f" % c for c in launches) or "-", ref[bar + 1], plain, rp, ncu,
        rp - plain, same))
PY
[ -n "${OUT:-}" ] && cp "$work"/m*.jsonl "$OUT/" 2>/dev/null
rm -rf "$work"
