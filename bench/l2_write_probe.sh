#!/usr/bin/env bash
# bench/l2_write_probe.sh - issue 22: which step of rangeprof's run sequence adds ~20 % to
# the DRAM writes of tests/gpu/l2_rmw.cu's kernel. Builds bench/l2_write_probe.cu (twice:
# plain for ncu, -DWITH_CUPTI for its range profiler mode) and tests/gpu/l2_rmw.cu, then
# measures `rmw`'s dram__bytes_write.sum (and reads, time):
#   ncu --cache-control none -k rmw after each variant's preparation (l2_write_probe.cu's
#       header lists them), each variant twice, 6 launches each;
#   ncu --cache-control all on the probe's ncu_like (THE reference) and on l2_rmw itself;
#   the probe's CUPTI mode: rangeprof's run sequence back to back inside range profiler
#       passes, with and without NVML's sample, an idle gap, a GPU spin, a pass per run;
#   rangeprof on l2_rmw (--runs 1, --runs 20, --runs 20 --cache-control none) and on the
#       probe (--runs 20), each twice.
# and prints one table: label, median DRAM write bytes, min-max, n, % against the reference,
# the median of each repetition, reads against the reference, time.
# Never locks clocks: ncu with --clock-control none, rangeprof with its default.
# Run once, in session 9: its table and what it showed are in bench/NOTES.md, "Session 9".
#
# Run on the GPU machine, from the repository root with build/ built, LD_LIBRARY_PATH set
# as bench/NOTES.md says:  bench/l2_write_probe.sh
# Logs: $OUT/l2_write_probe_table.txt and $OUT/l2_write_probe_logs.tgz when OUT is set
# (two files: the device tool brings back at most 8), else left in a temporary directory
# named at the end.
#
# GPU time, estimated before the first run (which took 79 s with BUDGET_S=200): 3 nvcc builds ~15 s; 22 ncu processes
# (18 variant runs, 4 reference runs) at ~4-5 s each (ncu's start, the probe's 120 MB flush
# buffer and PTX JIT, 6 profiled launches) ~110 s; 16 CUPTI-mode processes at ~2 s (profiler
# set-up ~0.3 s, 40 runs) ~30 s; 8 rangeprof processes at ~3 s ~25 s. About 3 minutes; every
# command is bounded by timeout, 90 s for ncu and 60 s for the others, and none starts once
# BUDGET_S (default 280) seconds have passed since the start: those are listed as skipped.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
RP=${RP:-$root/build/scripts/rangeprof}
NCU=${NCU:-/usr/local/cuda/bin/ncu}
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
cuda=$(dirname "$(dirname "$(readlink -f "$NVCC")")")
M=dram__bytes_write.sum,dram__bytes_read.sum,gpu__time_duration.sum
work=$(mktemp -d)
out=${OUT:-}
[ -n "$out" ] && mkdir -p "$out"
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
	echo "SKIP: no GPU here"
	exit 0
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader

# Builds. libcupti's directory differs between toolkits (lib64, extras/CUPTI/lib64).
cupti_link=()
for d in "$cuda/lib64" "$cuda/lib" "$cuda/extras/CUPTI/lib64" "$cuda/targets/x86_64-linux/lib"; do
	if [ -e "$d/libcupti.so" ]; then
		cupti_link+=("-L$d" "-Xlinker" "-rpath=$d")
	fi
done
flags=(-O2 -arch=sm_90 -std=c++17 -Xcompiler=-Wall)
"$NVCC" "${flags[@]}" "$root/bench/l2_write_probe.cu" -o "$work/l2_write_probe" -lcuda || exit 1
cupti_built=yes
"$NVCC" "${flags[@]}" -DWITH_CUPTI -I"$root/bench" "$root/bench/l2_write_probe.cu" \
	-o "$work/l2_write_probe_cupti" ${cupti_link[@]+"${cupti_link[@]}"} -lcuda -lcupti -ldl || cupti_built=no
"$NVCC" -O2 -arch=sm_90 -std=c++17 "$root/tests/gpu/l2_rmw.cu" -o "$work/l2_rmw" || exit 1
cd "$work" || exit 1
failures=()
budget=${BUDGET_S:-280}
# in_budget WHAT: false (and WHAT listed as skipped) once the budget is spent.
in_budget() {
	if ((SECONDS > budget)); then
		failures+=("$1: skipped, past the ${budget} s budget")
		return 1
	fi
}

# ncu_run LABEL REP CACHE_CONTROL PROGRAM ARGS...: rmw's rows in ncu_LABEL_REP.csv.
ncu_run() {
	local label=$1 rep=$2 cc=$3
	shift 3
	in_budget "ncu $label #$rep" || return
	timeout 90 "$NCU" --clock-control none --cache-control "$cc" -k rmw --metrics "$M" \
		--csv --page raw --log-file "ncu_${label}_$rep.csv" "$@" >"ncu_${label}_$rep.txt" 2>&1 ||
		failures+=("ncu $label #$rep: rc $? (ncu_${label}_$rep.txt)")
}
# cupti_run LABEL REP ARGS...: the probe's CUPTI mode, cupti_LABEL_REP.txt.
cupti_run() {
	local label=$1 rep=$2
	shift 2
	in_budget "cupti $label #$rep" || return
	timeout 60 ./l2_write_probe_cupti --cupti "$@" >"cupti_${label}_$rep.txt" 2>&1 ||
		failures+=("cupti $label #$rep: rc $? (cupti_${label}_$rep.txt)")
}
# rp_run LABEL REP OPTIONS... -- PROGRAM ARGS...: rp_LABEL_REP.jsonl.
rp_run() {
	local label=$1 rep=$2
	shift 2
	in_budget "rangeprof $label #$rep" || return
	timeout 60 "$RP" -q -o "rp_${label}_$rep.jsonl" --metrics "$M" "$@" >"rp_${label}_$rep.txt" 2>&1 ||
		failures+=("rangeprof $label #$rep: rc $? (rp_${label}_$rep.txt)")
}

variants="ncu_like rp_flush rp_flush_nocode restore_out_then_rp_flush restore_all_then_rp_flush
restore_pinned_then_rp_flush save_restore_then_rp_flush prior_run prior_run_no_restore"
# The repetitions are the outer loop, so that a drift (temperature, clocks) spreads over
# every label rather than landing on a few.
for rep in 1 2; do
	if [ -x "$NCU" ]; then
		ncu_run ref_all "$rep" all ./l2_write_probe ncu_like 6
		ncu_run l2_rmw_all "$rep" all ./l2_rmw 6
		for v in $variants; do
			ncu_run "$v" "$rep" none ./l2_write_probe "$v" 6
		done
	fi
	if [ "$cupti_built" = yes ]; then
		R=restore_all_then_rp_flush
		cupti_run rp_seq "$rep" --pass-runs 20 "$R" 40
		cupti_run rp_seq_nonvml "$rep" --pass-runs 20 --no-nvml "$R" 40
		cupti_run rp_seq_sync "$rep" --pass-runs 20 --gap sync "$R" 40
		cupti_run rp_seq_spin5 "$rep" --pass-runs 20 --gap spin5 "$R" 40
		cupti_run rp_seq_spin20 "$rep" --pass-runs 20 --gap spin20 "$R" 40
		cupti_run rp_seq_pass1 "$rep" --pass-runs 1 "$R" 20
		cupti_run flush_only "$rep" --pass-runs 20 rp_flush 40
		cupti_run flush_only_sync "$rep" --pass-runs 20 --gap sync rp_flush 40
	fi
	rp_run runs1 "$rep" --runs 1 --nvtx-include rmw/ ./l2_rmw 8
	rp_run runs20 "$rep" --runs 20 --nvtx-include rmw/ ./l2_rmw 8
	rp_run runs20_ccnone "$rep" --runs 20 --cache-control none --nvtx-include rmw/ ./l2_rmw 8
	rp_run probe_runs20 "$rep" --runs 20 -k rmw ./l2_write_probe ncu_like 8
done

table=$work/l2_write_probe_table.txt
PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}" python3 - "$work" "$variants" <<'EOF' | tee "$table"
"""The table: every label's rmw samples pooled over its repetitions."""
import glob
import os
import re
import statistics
import sys

from rangeprof import compare_ncu as rp_ncu
from rangeprof import units as rp_units

work, variants = sys.argv[1], sys.argv[2].split()
W, R, T = "dram__bytes_write.sum", "dram__bytes_read.sum", "gpu__time_duration.sum"


def is_rmw(name):
    c = rp_ncu.canonical_kernel(name)
    return c == "rmw" or c.startswith("_Z3rmw")


def scale(unit):
    """bytes or seconds per unit of a cell; 1 for an empty or unknown unit."""
    try:
        return rp_units.parse_unit(unit).scale if unit else 1.0
    except (ValueError, ZeroDivisionError):
        return 1.0


def ncu_samples(path):
    """{metric: [bytes or seconds]} of rmw's rows; {} when the file is missing or bad."""
    got = {}
    try:
        rows = rp_ncu.read_ncu_csv(path)
    except (OSError, rp_ncu.NcuError):
        return got
    for (_nvtx, kernel, _grid), metrics in rows.items():
        if not is_rmw(kernel):
            continue
        for metric, (vals, unit) in metrics.items():
            got.setdefault(metric, []).extend(v * scale(unit) for v in vals)
    return got


def rp_samples(path):
    got = {}
    if not os.path.exists(path):
        return got
    try:
        _recs, entries = rp_ncu.read_rangeprof([path])
    except Exception as e:  # a broken recording is a missing row, said below
        print(f"  {path}: {e}", file=sys.stderr)
        return got
    for entry in entries.values():
        if not is_rmw(entry["kernel"]):
            continue
        for metric, (vals, unit) in entry["metrics"].items():
            got.setdefault(metric, []).extend(v * scale(unit) for v in vals)
    return got


def cupti_samples(path):
    got, notes = {}, []
    try:
        lines = open(path, encoding="utf-8", errors="replace").read().splitlines()
    except OSError:
        return got, notes
    for line in lines:
        f = line.split()
        if f[:1] == ["cupti_run"] and len(f) == 7:
            got.setdefault(W, []).append(float(f[3]))
            got.setdefault(R, []).append(float(f[4]))
            got.setdefault(T, []).append(float(f[5]) * 1e-9)
        elif f[:1] == ["cupti_summary"]:
            notes.append(" ".join(x for x in f[1:] if not x.startswith(("variant=", "gap="))))
    return got, notes


def collect(kind, label):
    reps, notes = [], []
    for rep in (1, 2):
        if kind == "ncu":
            reps.append(ncu_samples(os.path.join(work, f"ncu_{label}_{rep}.csv")))
        elif kind == "rp":
            reps.append(rp_samples(os.path.join(work, f"rp_{label}_{rep}.jsonl")))
        else:
            got, n = cupti_samples(os.path.join(work, f"cupti_{label}_{rep}.txt"))
            reps.append(got)
            notes += n
    return reps, notes


def med(v):
    return statistics.median(v) if v else float("nan")


rows = [("ref_all", "ncu", "REFERENCE: ncu cc all, probe ncu_like"),
        ("l2_rmw_all", "ncu", "ncu cc all, l2_rmw itself")]
rows += [(v, "ncu", "ncu cc none, after this preparation") for v in variants]
rows += [("rp_seq", "cupti", "restore+flush+NVML, back to back, 20/pass"),
         ("rp_seq_nonvml", "cupti", "same without the NVML sample"),
         ("rp_seq_sync", "cupti", "same, sync + 1 ms idle before rmw"),
         ("rp_seq_spin5", "cupti", "same, 5 us GPU spin before rmw"),
         ("rp_seq_spin20", "cupti", "same, 20 us GPU spin before rmw"),
         ("rp_seq_pass1", "cupti", "same, one run per Start/Stop"),
         ("flush_only", "cupti", "flush+NVML only (no restore), 20/pass"),
         ("flush_only_sync", "cupti", "same, sync + 1 ms idle before rmw"),
         ("runs1", "rp", "rangeprof --runs 1, l2_rmw"),
         ("runs20", "rp", "rangeprof --runs 20, l2_rmw"),
         ("runs20_ccnone", "rp", "rangeprof --runs 20 --cache-control none"),
         ("probe_runs20", "rp", "rangeprof --runs 20, probe ncu_like")]

data = {label: collect(kind, label) for label, kind, _ in rows}
ref_reps = data["ref_all"][0]
ref_w = med([x for r in ref_reps for x in r.get(W, [])])
ref_r = med([x for r in ref_reps for x in r.get(R, [])])
print(f"\nIssue 22 probe: rmw's DRAM writes (MB = 1e6 bytes), reference ncu --cache-control all "
      f"on ncu_like: {ref_w / 1e6:.3f} MB")
print(f"{'label':29} {'what':42} {'n':>4} {'writes MB':>9} {'min-max MB':>13} {'vs ref':>8} "
      f"{'rep medians':>13} {'reads':>7} {'time us':>8}")
for label, kind, what in rows:
    reps, notes = data[label]
    w = [x for r in reps for x in r.get(W, [])]
    if not w:
        print(f"{label:29} {what:42} {'-':>4}   (no samples: see the logs)")
        continue
    rd = [x for r in reps for x in r.get(R, [])]
    t = [x for r in reps for x in r.get(T, [])]
    m = med(w)
    pct = f"{100 * (m - ref_w) / ref_w:+7.1f}%" if ref_w == ref_w and ref_w else "    n/a"
    rpct = (f"{100 * (med(rd) - ref_r) / ref_r:+6.1f}%" if rd and ref_r == ref_r and ref_r
            else "    n/a")
    per_rep = "/".join(f"{med(r.get(W, [])) / 1e6:.2f}" if r.get(W) else "-" for r in reps)
    print(f"{label:29} {what:42} {len(w):4d} {m / 1e6:9.3f} {min(w) / 1e6:6.2f}-{max(w) / 1e6:<6.2f} "
          f"{pct} {per_rep:>13} {rpct} {med(t) * 1e6:8.2f}")
    if notes:
        print(f"{'':30}{' | '.join(notes)}")
print("\nreads: DRAM reads against the reference's median. rep medians: each repetition's "
      "median writes (MB). CUPTI rows: the probe's range profiler mode (l2_write_probe.cu).")
EOF

for f in ${failures[@]+"${failures[@]}"}; do
	echo "FAILED: $f" | tee -a "$table"
done
if [ -n "$out" ]; then
	cp "$table" "$out/"
	tar czf "$out/l2_write_probe_logs.tgz" --exclude=l2_write_probe --exclude=l2_write_probe_cupti \
		--exclude=l2_rmw . 2>/dev/null
	echo "logs: \$OUT/l2_write_probe_logs.tgz, table: \$OUT/l2_write_probe_table.txt"
else
	echo "logs and table in $work"
fi
