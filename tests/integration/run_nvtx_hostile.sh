#!/bin/sh
# tests/integration/run_nvtx_hostile.sh APP PROBE LIB - the hostile NVTX program plain,
# preloaded with librangeprof.so and through the probe (which times the launch check):
# it must finish with status 0 each time, within bounded memory and time of the plain
# run, and the launch check must cost about the same in every phase.
set -eu
app=$(realpath "$1") probe=$(realpath "$2") lib=$(realpath "$3")
cd "$(mktemp -d)"
runtime=$(ldd "$lib" 2>/dev/null | awk '/lib(asan|ubsan)\.so/ {print $3}' | head -1)
pre=${runtime:+$runtime:}
[ -z "$runtime" ] || export ASAN_OPTIONS=detect_leaks=0
"$app" >plain.txt
LD_PRELOAD="$pre$lib" "$app" >preloaded.txt
LD_PRELOAD=${runtime:-} NVTX_INJECTION64_PATH="$probe" "$app" >probe.txt
echo "plain:"; cat plain.txt; echo "librangeprof.so:"; cat preloaded.txt
echo "probe (launch check per phase):"; cat probe.txt
rss() { awk '/peak RSS/ {for (i = 1; i <= NF; i++) if ($i == "RSS") v = $(i + 1)} END {print v}' "$1"; }
secs() { awk '/ s  peak/ {for (i = 1; i <= NF; i++) if ($(i + 1) == "s") t += $i} END {print t}' "$1"; }
awk -v p="$(rss plain.txt)" -v r="$(rss preloaded.txt)" 'BEGIN {
	if (r > p + 96) { printf "FAIL: peak RSS %.1f MB preloaded vs %.1f MB plain\n", r, p; exit 1 } }'
awk -v p="$(secs plain.txt)" -v r="$(secs preloaded.txt)" 'BEGIN {
	if (r > 5 * p + 5) { printf "FAIL: %.2f s preloaded vs %.2f s plain\n", r, p; exit 1 } }'
# Launch check: no phase more than 20x the cheapest, nor over 20 us.
awk '/launch check/ {v = $(NF - 1); if (min == "" || v < min) min = v; if (v > max) max = v}
	END { if (max > 20 * min + 200 || max > 20000) {
		printf "FAIL: launch check from %.1f to %.1f ns\n", min, max; exit 1 } }' probe.txt
grep -q "nvtx_hostile: done" preloaded.txt
echo "nvtx hostile: ok"
