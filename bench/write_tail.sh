#!/usr/bin/env bash
# bench/write_tail.sh - issue 22: bench/write_tail.cu under ncu --cache-control all and
# under rangeprof --runs 5, twice each; prints per kernel and WAIT (us the last block idles
# after the work) each recording's DRAM writes and time, medians over places of the medians
# per place, and the increase over WAIT 0. On the GPU machine from the repository root,
# with build/ built and LD_LIBRARY_PATH as tests/gpu/run.sh wants it (~1 minute). OUT set:
# the table and raw files are left there.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
cd "$work" || exit 1
nvcc -O2 -arch=sm_90 -std=c++17 "$root/bench/write_tail.cu" -o write_tail || exit 1
M=dram__bytes_write.sum,dram__bytes_read.sum,gpu__time_duration.sum
ARGS="${ITER:-3} ${PLACES:-4}"
files=()
for rep in 1 2; do
	/usr/local/cuda/bin/ncu --clock-control none --cache-control all --csv --page raw \
		--metrics $M --nvtx -k 'regex:^(overwrite|gather_wait)$' \
		--log-file "ncu_$rep.csv" ./write_tail $ARGS >/dev/null 2>&1
	"$root/build/scripts/rangeprof" -q -o "rp_$rep.jsonl" --runs 5 --metrics $M \
		./write_tail $ARGS >/dev/null
	files+=("ncu_$rep.csv" "rp_$rep.jsonl")
done
ROOT=$root python3 - "${files[@]}" <<'PY' | tee table.txt
import os, re, statistics, sys
sys.path.insert(0, os.path.join(os.environ.get("ROOT", "."), "python"))
from rangeprof import compare_ncu as ncu, units
NAME = re.compile(r"(?:^|/)(overwrite|gather)/w(\d+)/p(\d+)$")
def load(path):
    rows = ncu.read_ncu_csv(path) if path.endswith(".csv") else ncu.read_rangeprof([path])[1]
    out = {}
    for key, entry in rows.items():
        m = NAME.search(key[0] or "")
        if not m:
            continue
        found = entry.get("metrics", entry)
        for metric, base in (("dram__bytes_write.sum", "byte"), ("gpu__time_duration.sum", "nsecond")):
            vals, unit = found[metric]
            f = units.conversion_factor(units.parse_unit(unit), units.parse_unit(base))
            out.setdefault((m.group(1), int(m.group(2)), metric), {})[int(m.group(3))] = \
                statistics.median(v * f for v in vals)
    return {k: statistics.median(v.values()) for k, v in out.items()}
data = {path: load(path) for path in sys.argv[1:]}
for kind in ("overwrite", "gather"):
    print(f"{kind}: DRAM writes KB (+ over WAIT 0) / time us, medians over places")
    waits = sorted({w for d in data.values() for (k, w, _) in d if k == kind})
    print("  WAIT us " + "".join(f"{p:>28}" for p in data))
    for w in waits:
        cells = []
        for d in data.values():
            wr, w0, t = (d.get((kind, w, "dram__bytes_write.sum")), d.get((kind, 0, "dram__bytes_write.sum")),
                         d.get((kind, w, "gpu__time_duration.sum")))
            cells.append("-" if wr is None else f"{wr / 1e3:8.1f} (+{(wr - w0) / 1e3:7.1f}) {t / 1e3:6.1f}")
        print(f"  {w:>7} " + "".join(f"{c:>28}" for c in cells))
PY
if [ -n "${OUT:-}" ]; then
	tar czf "$OUT/write_tail.tgz" table.txt ncu_*.csv rp_*.jsonl
	cp table.txt "$OUT/write_tail.txt"
fi
