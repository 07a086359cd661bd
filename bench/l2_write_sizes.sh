#!/usr/bin/env bash
# bench/l2_write_sizes.sh - issue 22: rangeprof's and ncu's DRAM writes of the kernels of
# bench/l2_write_sizes.cu (empty, spin, a 64 MB read, and a read-modify-write over 1-32 MB
# arrays), side by side, twice, with the difference in bytes: is the extra a fixed amount
# per measured range or a share of what the kernel dirties? On the GPU machine, from the
# repository root, with build/ built and LD_LIBRARY_PATH as tests/gpu/run.sh wants it
# (~10 s per pad and repetition). PADS="0 2 6" moves the arrays by that many MB (one run of
# each per pad), REPS (default 2) repeats each. OUT set: the table and the raw files are
# left there.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
cd "$work" || exit 1
nvcc -O2 -arch=sm_90 -std=c++17 "$root/bench/l2_write_sizes.cu" -o l2_write_sizes || exit 1
M=dram__bytes_write.sum,dram__bytes_read.sum,gpu__time_duration.sum
# PADS: the arrays moved by that many MB (allocated before them), REPS times each.
files=()
for pad in ${PADS:-0}; do
	./l2_write_sizes 5 "$pad" >"plain_$pad.txt"
	for rep in $(seq 1 "${REPS:-2}"); do
		"$root/build/scripts/rangeprof" -q -o "rp_${pad}_$rep.jsonl" --runs 20 --metrics $M \
			./l2_write_sizes 5 "$pad" >"rp_${pad}_$rep.txt" 2>"rp_${pad}_$rep.err"
		cmp -s "plain_$pad.txt" "rp_${pad}_$rep.txt" || echo "rangeprof changed the checksum (pad $pad, rep $rep)"
		/usr/local/cuda/bin/ncu --clock-control none --cache-control all --metrics $M --csv \
			--page raw --log-file "ncu_${pad}_$rep.csv" ./l2_write_sizes 5 "$pad" >"ncu_${pad}_$rep.txt" 2>&1
		files+=("rp_${pad}_$rep.jsonl" "ncu_${pad}_$rep.csv")
	done
done
python3 - "${files[@]}" <<'PY' | tee table.txt
import csv, json, re, statistics, sys
SCALE = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "nsecond": 1e-3,
         "usecond": 1, "msecond": 1e3}
def kind(name):
    m = re.search(r"\b(empty|spin|read_only|gather_rmw)\b|rmw<(\d+)>", name)
    return None if not m else m.group(1) or f"rmw {m.group(2)} MB"
def rangeprof(path):
    out = {}
    for r in map(json.loads, open(path)):
        if r.get("type") == "run" and kind(r.get("kernel", "")):
            out.setdefault(kind(r["kernel"]), []).append(r["metrics"]["dram__bytes_write.sum"])
    return out
def ncu(path):
    rows = list(csv.reader(l for l in open(path) if not l.startswith("==")))
    head, units, out = rows[0], rows[1], {}
    col = head.index("dram__bytes_write.sum")
    for r in rows[2:]:
        k = kind(r[head.index("Kernel Name")])
        if k:
            out.setdefault(k, []).append(float(r[col].replace(",", "")) * SCALE[units[col]])
    return out
order = ["empty", "spin", "read_only", "gather_rmw", "rmw 1 MB", "rmw 4 MB", "rmw 16 MB", "rmw 32 MB"]
args = sys.argv[1:]
for rep in range(len(args) // 2):
    rp, nc = rangeprof(args[2 * rep]), ncu(args[2 * rep + 1])
    print(f"{args[2 * rep]}: DRAM writes, median (rangeprof: all runs; ncu: its {len(next(iter(nc.values())))} launches)")
    print(f"{'kernel':<10} {'rangeprof B':>12} {'ncu B':>12} {'rp - ncu B':>11} {'%':>7}  rp min-max")
    for k in order:
        if k not in rp or k not in nc:
            print(f"{k:<10} missing (rangeprof {k in rp}, ncu {k in nc})")
            continue
        a, b = statistics.median(rp[k]), statistics.median(nc[k])
        pct = f"{100 * (a - b) / b:+.1f}" if b else "n/a"
        print(f"{k:<10} {a:>12.0f} {b:>12.0f} {a - b:>+11.0f} {pct:>7}  {min(rp[k]):.0f}-{max(rp[k]):.0f}")
PY
if [ -n "${OUT:-}" ]; then
	cp table.txt "$OUT/l2_write_sizes_table.txt"
	tar czf "$OUT/l2_write_sizes.tgz" *.jsonl *.csv *.txt *.err 2>/dev/null
fi
