#!/usr/bin/env bash
# examples/tutorial/record.sh OUTDIR - records the tutorial's data on a GPU machine: each
# program of examples/tutorial/ run unmodified under build/scripts/rangeprof, one JSONL per
# lesson, ncu's raw CSV of two of them, a second recording for A/B comparison, and the
# device's state (nvidia-smi -q) before and after. Run from the repository root with build/
# built and LD_LIBRARY_PATH set so that the launcher's library loads. Takes 2-4 minutes on
# an H200. Never changes the card's settings: rangeprof keeps its default
# --clock-control none and ncu runs with --clock-control none.
set -u
out=${1:?usage: examples/tutorial/record.sh OUTDIR}
root=$(cd "$(dirname "$0")/../.." && pwd)
here="$root/examples/tutorial"
RP="$root/build/scripts/rangeprof"
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
PY=${PYTHON:-python3}
mkdir -p "$out"
out=$(cd "$out" && pwd)
# Untracked files, listed before this script writes into OUTDIR (which may be in the tree).
untracked=$(git -C "$root" ls-files --others --exclude-standard 2>/dev/null)
log="$out/record.log"
: >"$log"
say() { echo "$*" | tee -a "$log"; }

say "# recorded by examples/tutorial/record.sh, commit $(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
# HEAD alone does not say which code ran: the tree may hold changes not yet committed (the
# fixtures of 2026-11-30 name a commit without the code that wrote them). Log whether it
# differs from HEAD and how: the diff against HEAD (staged or not) is kept beside the
# output with its hash, and untracked files, which no diff shows, are listed.
if git -C "$root" rev-parse --git-dir >/dev/null 2>&1; then
	say "# git describe --always --dirty: $(git -C "$root" describe --always --dirty 2>&1)"
	git -C "$root" diff HEAD --binary >"$out/git-diff.patch" 2>&1
	say "# git diff HEAD: $(wc -l <"$out/git-diff.patch") lines, sha256 $(sha256sum <"$out/git-diff.patch" | cut -d' ' -f1) (git-diff.patch)"
	[ -n "$untracked" ] && printf '%s\n' "$untracked" >"$out/git-untracked.txt"
	say "# untracked files: $(printf '%s' "$untracked" | grep -c .)${untracked:+ (git-untracked.txt)}"
else
	say "# not a git checkout: the code that ran is not recorded"
fi
nvidia-smi -q >"$out/nvidia-smi.before.txt" 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv >>"$log" 2>&1
"$RP" --list-metrics >"$out/list-metrics.txt" 2>&1

# Metric names differ between GPU generations, and an unknown one makes rangeprof measure
# nothing: keep only the candidates this device accepts, tried one by one on the bundled
# C example (fast to start).
probe_prog=("$root/build/examples/example_kernels" 1)
[ -x "${probe_prog[0]}" ] || probe_prog=("$PY" "$here/vector_add.py" --sizes 4096 --launches 1)
accepted() {
	local m keep=()
	for m in "$@"; do
		local f="$out/.probe.jsonl"
		rm -f "$f"
		"$RP" -q -o "$f" --runs 1 -c 1 --metrics "gpu__time_duration.sum,$m" "${probe_prog[@]}" >/dev/null 2>&1
		if grep -q '"type": *"run"' "$f" 2>/dev/null; then keep+=("$m"); else echo "metric not accepted here: $m" >>"$log"; fi
		rm -f "$f"
	done
	local IFS=,
	echo "${keep[*]}"
}
TIME=gpu__time_duration.sum
BYTES=dram__bytes_read.sum,dram__bytes_write.sum
# roofline: time, FLOP counters, DRAM bytes and the throughput percentages of peak.
ROOFLINE=$TIME,$BYTES,$(accepted sm__sass_thread_inst_executed_op_ffma_pred_on.sum \
	sm__sass_thread_inst_executed_op_hfma_pred_on.sum sm__inst_executed_pipe_tensor.sum \
	sm__ops_path_tensor_src_fp16_dst_fp32.sum sm__throughput.avg.pct_of_peak_sustained_elapsed \
	gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed \
	dram__throughput.avg.pct_of_peak_sustained_elapsed sm__cycles_elapsed.avg.per_second)
ROOFLINE=${ROOFLINE%,}
CLOCKS=$TIME,$(accepted sm__cycles_elapsed.avg.per_second dram__cycles_elapsed.avg.per_second)
CLOCKS=${CLOCKS%,}
say "roofline metrics: $ROOFLINE"
say "clock metrics: $CLOCKS"

record() { # name rangeprof-options... -- program args...
	local name=$1; shift
	rm -f "$out/$name.jsonl"
	local t0=$SECONDS
	say "\$ rangeprof -o $name.jsonl $*"
	timeout 300 "$RP" -o "$out/$name.jsonl" "$@" >"$out/$name.stdout.txt" 2>"$out/$name.stderr.txt"
	say "  exit $?, $((SECONDS - t0)) s, $(grep -c '"type": *"run"' "$out/$name.jsonl" 2>/dev/null || echo 0) run records"
}
ncu_csv() { # name ncu-options... -- program args...
	local name=$1; shift
	local t0=$SECONDS
	say "\$ ncu --clock-control none --cache-control all --csv --page raw --log-file $name.ncu.csv $*"
	timeout 300 "$NCU" --clock-control none --cache-control all --csv --page raw \
		--log-file "$out/$name.ncu.csv" "$@" >"$out/$name.ncu.stdout.txt" 2>&1
	say "  exit $?, $((SECONDS - t0)) s"
}

# (a) matmul sweep, fp32 and fp16, with the roofline metric set.
record matmul --runs 10 --metrics "$ROOFLINE" --nvtx-include 'regex:^matmul /' -- \
	"$PY" "$here/matmul_sweep.py"
# (b) the noise lesson: 20 runs of each of 20 launches per size; then the same again, as
# the B side of an A/B comparison that should find no real difference.
record vadd --runs 20 --metrics "$TIME,$BYTES" --nvtx-include 'regex:^vadd /' -- \
	"$PY" "$here/vector_add.py"
record vadd_again --runs 20 --metrics "$TIME,$BYTES" --nvtx-include 'regex:^vadd /' -- \
	"$PY" "$here/vector_add.py"
# (c) cache control: the same program without the L2 flush between runs.
record vadd_cache_none --runs 20 --cache-control none --metrics "$TIME,$BYTES" \
	--nvtx-include 'regex:^vadd /' -- "$PY" "$here/vector_add.py"
# (d) fusion: bytes moved by a*b+c unfused (two kernels) and fused (Triton, CuPy).
record fusion --runs 10 --metrics "$TIME,$BYTES" --nvtx-include 'regex:^fma /' -- \
	"$PY" "$here/fusion.py"
# (e) clocks and temperature per run while the GPU is kept busy.
record clocks --runs 5 --metrics "$CLOCKS" --nvtx-include 'regex:^burn /' -- \
	"$PY" "$here/clocks.py" --every 100

# ncu on the same programs, for rangeprof-compare-ncu.
ncu_csv vadd --metrics "$TIME,$BYTES" --nvtx --nvtx-include 'regex:^vadd /' \
	"$PY" "$here/vector_add.py" --launches 5
ncu_csv fusion --metrics "$TIME,$BYTES" --nvtx --nvtx-include 'regex:^fma /' \
	"$PY" "$here/fusion.py"

nvidia-smi -q >"$out/nvidia-smi.after.txt" 2>&1
say "done in $SECONDS s"
