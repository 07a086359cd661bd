#!/usr/bin/env bash
# bench/dirty_before.sh - issue 22: bench/dirty_before.cu under ncu --cache-control none
# (the program flushes, then leaves DIRTY KB dirty, then the measured kernel), twice; prints
# each kernel's median DRAM writes per DIRTY and the increase over DIRTY 0. On the GPU
# machine from the repository root (~30 s). OUT set: the table and CSVs are left there.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
cd "$work" || exit 1
nvcc -O2 -arch=sm_90 -std=c++17 "$root/bench/dirty_before.cu" -o dirty_before || exit 1
for rep in 1 2; do
	/usr/local/cuda/bin/ncu --clock-control none --cache-control none --csv --page raw \
		--metrics dram__bytes_write.sum,dram__bytes_read.sum --nvtx -k 'regex:^(gather|readonly)$' \
		--log-file "ncu_$rep.csv" ./dirty_before "${ITER:-5}" >/dev/null 2>&1
done
ROOT=$root python3 - ncu_1.csv ncu_2.csv <<'PY' | tee table.txt
import os, statistics, sys
sys.path.insert(0, os.path.join(os.environ.get("ROOT", "."), "python"))
from rangeprof import compare_ncu as ncu
for path in sys.argv[1:]:
    rows = ncu.read_ncu_csv(path)
    per = {}
    for key, entry in rows.items():
        kernel, _, d = (key[0] or "").partition("/d")
        vals, unit = entry["dram__bytes_write.sum"]
        scale = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6}[unit]
        per.setdefault(kernel, {})[int(d)] = statistics.median(vals) * scale
    print(f"{path}: DRAM writes (median of the launches) per KB left dirty before the kernel")
    for kernel, by in per.items():
        base = by.get(0, 0)
        print(f"  {kernel:<9}" + "  ".join(f"d{d}: {v / 1e3:7.1f} KB (+{(v - base) / 1e3:6.1f})"
                                          for d, v in sorted(by.items())))
PY
if [ -n "${OUT:-}" ]; then
	cp table.txt ncu_*.csv "$OUT/"
fi
