"""bench/placement_sweep.py - bench/placement_sweep.sh's table: per kind and size of
bench/placement_sweep.cu, each tool's DRAM write and read over the places it was run at
(min, mean, max, and the spread (max - min) / mean in %).

    python3 bench/placement_sweep.py rp=rp_0.jsonl ncu=ncu_0.csv rp=rp_2.jsonl ...

A rangeprof file gives one value per kernel and place, the median of its runs; an ncu file
one launch per kernel, matched to its kind and size by launch order (the program launches
rmw, write, gather for each size in SIZES_MB's order)."""
import csv
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "gpu"))
import gpu_records  # noqa: E402  (records.parse_line, the one record reader)

SIZES_MB = [1, 2, 4, 8, 12, 16, 20, 24, 28, 32, 40, 48, 64]
KINDS = ["rmw", "write", "gather"]
KERNEL = {"rmw": "rmw", "write": "write_new", "gather": "gather_sized"}
SCALE = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "nsecond": 1e-3,
         "usecond": 1, "msecond": 1e3}
METRICS = ["dram__bytes_write.sum", "dram__bytes_read.sum"]


def rangeprof(path):
    runs = {}
    for rec in gpu_records.read(path):
        if rec.get("type") != "run" or not rec.get("nvtx_path"):
            continue
        kind, _, mb = rec["nvtx_path"].rpartition("/")[2].partition(" ")
        for m in METRICS:
            runs.setdefault((kind, int(mb), m), []).append(rec["metrics"][m])
    return {k: statistics.median(v) for k, v in runs.items()}


def ncu(path):
    with open(path) as f:
        rows = list(csv.reader(line for line in f if not line.startswith("==")))
    head, units, body = rows[0], rows[1], rows[2:]
    out = {}
    for i, row in enumerate(body):
        kind, mb = KINDS[i % 3], SIZES_MB[(i // 3) % len(SIZES_MB)]
        name = row[head.index("Kernel Name")]
        if not name.startswith(KERNEL[kind]):
            sys.exit(f"{path}: launch {i} is {name}, expected {KERNEL[kind]}")
        for m in METRICS:
            col = head.index(m)
            out[(kind, mb, m)] = float(row[col].replace(",", "")) * SCALE[units[col]]
    return out


def main(args):
    per_tool = {}
    for arg in args:
        tool, _, path = arg.partition("=")
        per_tool.setdefault(tool, []).append(rangeprof(path) if tool == "rp" else ncu(path))
    for m in METRICS:
        print(f"{m}, MB, over the places (spread = (max - min) / mean)")
        print(f"{'kind':<7}{'MB':>4}  " + "  ".join(
            f"{t + ' min':>9}{t + ' mean':>10}{t + ' max':>9}{'spread':>8}" for t in per_tool))
        for kind in KINDS:
            for mb in SIZES_MB:
                cells = []
                for tool, places in per_tool.items():
                    v = [p[(kind, mb, m)] / 1e6 for p in places if (kind, mb, m) in p]
                    if not v:
                        cells.append(f"{'-':>36}")
                        continue
                    mean = statistics.mean(v)
                    spread = 100 * (max(v) - min(v)) / mean if mean else 0.0
                    cells.append(f"{min(v):>9.3f}{mean:>10.3f}{max(v):>9.3f}{spread:>7.1f}%")
                print(f"{kind:<7}{mb:>4}  " + "  ".join(cells))
        print()


if __name__ == "__main__":
    main(sys.argv[1:])
