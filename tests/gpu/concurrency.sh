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
		esac
		read -r short busy other overlap <<<"$t"
		echo "  $c rep $rep: short $short busy $busy other $other overlap $overlap"
		grep -h "waited\|lets go" out/*.err | sed "s/^/$c $rep: /" >>"$work/handover.txt"
		overlaps=$((overlaps + overlap))
		short_total=$((short_total + short)); busy_total=$((busy_total + busy))
		other_total=$((other_total + other))
		if [ "$short" != 0 ] || [ "$busy" != 0 ]; then bad_reps=$((bad_reps + 1)); cp -r out "$work/bad_${c}_$rep"; fi
	done
	secs=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.0f", e - s }')
	handovers=$(grep -c "^$c [0-9]*: .*lets go" "$work/handover.txt")
	echo "$c: $handovers idle profilers let go when asked"
	echo "$c: $REPS reps in ${secs} s: $bad_reps bad reps, $short_total processes short of runs, $busy_total HARDWARE_BUSY, $other_total other errors; $overlaps reps where processes measured at the same time"
	[ "$bad_reps" = 0 ] || failed=1
done
if [ -n "${OUT:-}" ]; then
	cp "$work/handover.txt" "$OUT/" 2>/dev/null
	for d in "$work"/bad_*; do [ -d "$d" ] && cp -r "$d" "$OUT/" ; done
fi
exit $failed
