#!/usr/bin/env bash
# tests/gpu/concurrency.sh - processes that measure on one GPU at once (issue 23): every
# selected launch of every process must be measured, REPS times in a row per case, with no
# CUPTI_ERROR_HARDWARE_BUSY anywhere. Cases (CASES, space-separated; default all):
#   c3        3 concurrent C++ processes (procs work 6, --runs 5: 30 runs each)
#   spawn, forkserver, fork
#             PyTorch multiprocessing, two children measuring at once after a barrier
#             (procs_mp.py: 4 x (sgemm, relu) each, --runs 5: 40 runs each)
#   early, lazy
#             two independent programs started a second apart, --setup early / lazy
#             (procs paced 30 100: 30 launches 0.1 s apart, --runs 5: 150 runs each; the
#             first still measures when the second starts. A program that measures launch
#             after launch would pay the profiler's first pass at every hand-over while both
#             run: doc/concurrency.md, "What it costs")
#   outside   not a default case: ncu (a profiler outside rangeprof) profiles one program
#             while rangeprof measures another (procs paced 30 100). Every launch of
#             rangeprof's program is measured or has its own device-busy warning, no error,
#             the same output as plain, within --busy-timeout (2 s) per launch: issue 23
#             item 3, doc/concurrency.md "A profiler outside rangeprof".
#   holder    not a default case: a profiler outside rangeprof that keeps the hardware
#             (bench/busy_probe.c hold HOLD_S, default 6 s: enabled and idle after one pass)
#             while rangeprof measures procs paced 30 100 with --busy-timeout BUSY_S
#             (default 1; HOLDER_METRICS, when set, is passed as --metrics: one with a counter
#             meets the busy hardware at the availability query rather than at Start). Every
#             launch is measured or has its own warning naming a profiler outside rangeprof,
#             no error says HARDWARE_BUSY, the output is plain's, and the whole run takes at
#             most plain's time + BUSY_S per warned launch + 10 s. busy_probe is taken from
#             BUILT_PROCS_DIR when there, else compiled here from build/'s static libraries
#             (after ninja -C build); it is stopped if the script is.
# Prints one line per case: repetitions, processes short of runs, HARDWARE_BUSY records,
# other error records, and in how many repetitions two processes' measured runs overlapped
# in time (the case is only a test where they did); exits 1 when any process lost a launch.
# Progress lines of the hardware hand-over ("waited ... ms", "lets go") are kept in
# $OUT/handover.txt, with a count per case. Run alone or from run.sh:
#   REPS=20 tests/gpu/concurrency.sh [BUILT_PROCS_DIR]
# Skips cleanly where no GPU exists.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
	echo "SKIP: no GPU here"
	exit 0
fi
RP="$root/build/scripts/rangeprof"
REPS=${REPS:-20}
CASES=${CASES:-c3 spawn forkserver fork early lazy}
PY=${PYTHON:-python3}
work=$(mktemp -d)
if [ -n "${1:-}" ] && [ -x "$1/procs" ]; then
	cp "$1/procs" "$work/procs"
else
	nvcc -O2 -arch=sm_90 -std=c++17 "$root/tests/gpu/procs.cu" -o "$work/procs" -ldl -lcuda || exit 1
fi
# The holder case's profiler outside rangeprof, built only when that case runs; a holder
# left behind would keep the GPU's profiling hardware from everything after this script,
# so it is stopped on any way out (busy_probe disables when stopped, and dies anyway), and
# the rangeprof run beside it with it. That run is waited for in the background: bash
# runs a trap only once a foreground child has ended. Without the case, no trap: a signal
# ends the script as it did.
holder_pid='' holder_rp_pid=''
stop_holder() {
	local p
	for p in $holder_pid $holder_rp_pid; do
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	holder_pid='' holder_rp_pid=''
}
if [[ " $CASES " == *" holder "* ]]; then
	trap stop_holder EXIT
	trap 'stop_holder; exit 130' INT
	trap 'stop_holder; exit 143' TERM
	if [ -n "${1:-}" ] && [ -x "$1/busy_probe" ]; then
		cp "$1/busy_probe" "$work/busy_probe"
	else
		(cd "$root" && ${CC:-cc} -std=c11 -O2 -D_GNU_SOURCE -I. -I/usr/local/cuda/include \
			-Icommon/cshim bench/busy_probe.c build/collector/librp_collector.a \
			build/collector/librp_collector_core.a build/common/librp_common.a \
			-lcjson -ldl -lm -lpthread -o "$work/busy_probe") || exit 1
	fi
fi
cd "$work" || exit 1

# Counts over the files of one repetition: "short busy other" where short is the number of
# processes with fewer than MIN runs (or a missing file).
tally() { # min expected_files files...
	"$PY" - "$@" <<'EOF'
import json, sys
least, expected, paths = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
short = busy = other = 0
spans = []
with_runs = 0
for p in paths:
    runs = 0
    times = []
    for line in open(p, encoding="utf-8"):
        r = json.loads(line)
        if r["type"] == "run":
            runs += 1
            times.append(r["time"])
        elif r["type"] in ("error", "warning"):
            m = r.get("message", "")
            if "HARDWARE_BUSY" in m:
                busy += 1
            elif r["type"] == "error":
                other += 1
                print("  error:", m[:200], file=sys.stderr)
    if runs:
        with_runs += 1
        spans.append((min(times), max(times)))
    if runs and runs < least:
        short += 1
short += max(0, expected - with_runs)
# Whether two processes measured during the same time (ISO times sort as text).
overlap = int(any(a[0] <= b[1] and b[0] <= a[1]
                  for i, a in enumerate(spans) for b in spans[i + 1:]))
print(short, busy, other, overlap)
EOF
}

failed=0
: >"$work/handover.txt"
for c in $CASES; do
	short_total=0 busy_total=0 other_total=0 bad_reps=0 overlaps=0
	start=$(date +%s.%N)
	for rep in $(seq 1 "$REPS"); do
		rm -rf out && mkdir out
		case $c in
		c3)
			for i in 1 2 3; do "$RP" -o "out/w.%p.jsonl" --runs 5 --nvtx-include work/ ./procs work 6 >/dev/null 2>"out/$i.err" & done
			wait
			t=$(tally 30 3 out/*.jsonl) ;;
		spawn|forkserver|fork)
			"$RP" -o "out/py.%p.jsonl" --runs 5 --nvtx-include 'regex:^child/' "$PY" "$root/tests/gpu/procs_mp.py" "$c" >/dev/null 2>out/py.err
			t=$(tally 40 2 out/*.jsonl) ;;
		early|lazy)
			"$RP" -o "out/a.%p.jsonl" --setup "$c" --runs 5 --nvtx-include work/ ./procs paced "${PACED:-30}" 100 >/dev/null 2>out/a.err &
			sleep "${DELAY:-1}"
			"$RP" -o "out/b.%p.jsonl" --setup "$c" --runs 5 --nvtx-include work/ ./procs paced "${PACED:-30}" 100 >/dev/null 2>out/b.err
			wait
			t=$(tally $((5 * ${PACED:-30})) 2 out/*.jsonl) ;;
		outside)
			./procs paced 30 100 >plain_paced.txt
			/usr/local/cuda/bin/ncu --clock-control none --replay-mode kernel -c 200 \
				./procs paced 200 20 >/dev/null 2>&1 &
			ncu_pid=$!
			sleep 2
			start_s=$(date +%s.%N)
			"$RP" -o "out/o.%p.jsonl" --runs 5 --nvtx-include work/ ./procs paced 30 100 >out/o.txt 2>out/o.err
			took=$(awk -v s="$start_s" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
			wait "$ncu_pid"
			measured=$(grep -c '"type":"summary"' out/o.*.jsonl)
			busy_warned=$(grep -c '"type":"warning".*device-busy\|"type":"warning".*profiling hardware was held' out/o.*.jsonl)
			errors=$(grep -c '"type":"error"' out/o.*.jsonl)
			echo "  outside rep $rep: $measured launches measured, $busy_warned device-busy warnings, $errors errors, ${took} s (plain 3 s + up to 2 s per launch)"
			same_out=$(cmp -s plain_paced.txt out/o.txt && echo 0 || echo 1)
			short=$(( (measured + busy_warned >= 30 ? 0 : 1) + same_out ))
			t="$short 0 $errors 1" ;;
		holder)
			hold_s=${HOLD_S:-6} busy_s=${BUSY_S:-1}
			start_s=$(date +%s.%N)
			./procs paced 30 100 >plain_paced.txt
			plain_s=$(awk -v s="$start_s" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
			: >out/holder.txt # there before the first look, whoever runs first
			./busy_probe hold "$hold_s" >out/holder.txt 2>&1 &
			holder_pid=$!
			# Up to 30 s for its context, metric set and first pass (~0.2 s on the H200).
			for _ in $(seq 1 300); do
				grep -q '^holding' out/holder.txt && break
				kill -0 "$holder_pid" 2>/dev/null || break
				sleep 0.1
			done
			if ! grep -q '^holding' out/holder.txt; then
				stop_holder
				echo "  holder rep $rep: busy_probe never held the hardware: $(tr '\n' ' ' <out/holder.txt)"
				t="1 0 0 0"
			else
				start_s=$(date +%s.%N)
				"$RP" -o "out/h.%p.jsonl" --runs 5 --nvtx-include work/ --busy-timeout "$busy_s" \
					${HOLDER_METRICS:+--metrics "$HOLDER_METRICS"} \
					./procs paced 30 100 >out/h.txt 2>out/h.err &
				holder_rp_pid=$!
				wait "$holder_rp_pid"
				holder_rp_pid=
				took=$(awk -v s="$start_s" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
				wait "$holder_pid"
				holder_pid=
				# cat: one file per process, and grep -c names files when given several.
				measured=$(cat out/h.*.jsonl 2>/dev/null | grep -c '"type":"summary"')
				warned=$(cat out/h.*.jsonl 2>/dev/null | grep -c '"type":"warning".*profiling hardware was held by a profiler outside rangeprof')
				busy_errors=$(cat out/h.*.jsonl 2>/dev/null | grep '"type":"error"' | grep -c 'HARDWARE_BUSY')
				errors=$(cat out/h.*.jsonl 2>/dev/null | grep -c '"type":"error"')
				longest=$(cat out/h.*.jsonl 2>/dev/null | grep -o 'another CUPTI client) for [0-9.]* s' |
					awk '{ if ($5 > m) m = $5 } END { printf "%.1f", m }')
				bound=$(awk -v p="$plain_s" -v w="$warned" -v b="$busy_s" 'BEGIN { printf "%.1f", p + w * b + 10 }')
				same_out=$(cmp -s plain_paced.txt out/h.txt && echo 0 || echo 1)
				late=$(awk -v t="$took" -v b="$bound" 'BEGIN { print (t > b) ? 1 : 0 }')
				echo "  holder rep $rep: $measured launches measured, $warned device-busy warnings (longest wait ${longest} s, --busy-timeout $busy_s), $busy_errors HARDWARE_BUSY errors, $errors errors, output $([ "$same_out" = 0 ] && echo same || echo DIFFERS), ${took} s (plain ${plain_s} s, bound ${bound} s); holder: $(grep '^released' out/holder.txt)"
				short=$(( (measured + warned >= 30 ? 0 : 1) + same_out + late ))
				# The last field: whether the holder kept any launch from measuring (a
				# repetition where it kept none shows nothing about the wait).
				t="$short $busy_errors $((errors - busy_errors)) $((warned > 0 ? 1 : 0))"
			fi ;;
		esac
		read -r short busy other overlap <<<"$t"
		echo "  $c rep $rep: short $short busy $busy other $other overlap $overlap"
		grep -h "waited\|lets go" out/*.err 2>/dev/null | sed "s/^/$c $rep: /" >>"$work/handover.txt"
		overlaps=$((overlaps + overlap))
		short_total=$((short_total + short)); busy_total=$((busy_total + busy))
		other_total=$((other_total + other))
		if [ "$short" != 0 ] || [ "$busy" != 0 ]; then bad_reps=$((bad_reps + 1)); cp -r out "$work/bad_${c}_$rep"; fi
	done
	secs=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.0f", e - s }')
	handovers=$(grep -c "^$c [0-9]*: .*lets go" "$work/handover.txt")
	echo "$c: $handovers idle profilers let go when asked"
	echo "$c: $REPS reps in ${secs} s: $bad_reps bad reps, $short_total processes short of runs, $busy_total HARDWARE_BUSY, $other_total other errors; $overlaps reps where processes measured at the same time"
	[ "$c" = holder ] && echo "holder: in $overlaps of $REPS reps the holder kept launches from being measured (only those show the bounded wait)"
	[ "$bad_reps" = 0 ] || failed=1
done
if [ -n "${OUT:-}" ]; then
	cp "$work/handover.txt" "$OUT/" 2>/dev/null
	for d in "$work"/bad_*; do [ -d "$d" ] && cp -r "$d" "$OUT/" ; done
fi
exit $failed
