#!/usr/bin/env bash
# bench/cluster_scale.sh [DIR] - issue 37's scale figures (doc/measurements.md, "Ranks at
# cluster scale"), on the development machine (no GPU): 1 000 rank files holding 20 million
# run records in all (bench/gen_cluster.py: 16 hosts x 8 ranks, the job repeated as 8
# jobs, 20 000 runs a file, ~17 MB), converted into one Parquet dataset, then DuckDB's
# queries over it and rangeprof.load of one kernel's rows (a filter pushed down). Each step
# timed with its CPU time (user + system, all its processes) and its peak memory
# (bench/tree_rss.py: the whole process tree), the load average beside it: on a shared
# machine the wall time is not the program's alone. Needs ~20 GB free in DIR (default
# /tmp/cluster_scale); FILES=100 for a tenth; CONVERT=0 queries the dataset converted
# before; SRC=DIR2/files takes the files generated there (DIR gets the dataset only);
# BY_RANK=0 leaves out the --by-rank step; RANGEPROF_CONVERT_FAST=0 converts every batch
# through load() (doc/records.md, "The Parquet dataset"), as before the fast path.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-/tmp/cluster_scale}
files=${FILES:-1000}
src=${SRC:-$dir/files}
launches=${LAUNCHES:-1000}
PY=${PYTHON:-python3}
export PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}"
load() { echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"; }
mkdir -p "$dir"
echo "== $(date -u +%FT%TZ) $(nproc) cores, $(load), $($PY -c 'import pandas, pyarrow, duckdb; print("pandas", pandas.__version__, "pyarrow", pyarrow.__version__, "duckdb", duckdb.__version__)')"
if [ ! -f "$src/.done" ]; then
	rm -rf "$src"
	/usr/bin/time -f "generate: %e s" $PY "$root/bench/gen_cluster.py" "$src" --hosts 16 \
		--ranks-per-host 8 --files "$files" --launches "$launches" --runs 20 --kernels 10 --jobs 2
	touch "$src/.done"
fi
echo "input: $(ls "$src" | grep -c jsonl) files, $(du -sh "$src" | cut -f1)"
if [ "${CONVERT:-1}" = 1 ]; then
	rm -rf "$dir/ds"
	echo "== convert ($(load) before)"
	/usr/bin/time -f "convert: %e s wall, CPU %U s user + %S s system (all processes)" \
		$PY "$root/bench/tree_rss.py" $PY -m rangeprof.report --to-parquet "$dir/ds" "$src"
	echo "($(load) after)"
fi
echo "dataset: $(find "$dir/ds" -name '*.parquet' | wc -l) parts, $(du -sh "$dir/ds" | cut -f1)"
echo "== convert again (nothing new)"
/usr/bin/time -f "again: %e s wall, CPU %U s user + %S s system" \
	$PY "$root/bench/tree_rss.py" $PY -m rangeprof.report --to-parquet "$dir/ds" "$src"
echo "== DuckDB: doc/records.md's three queries, each run twice in a row"
$PY - "$dir/ds" "$root/doc/records.md" <<'PYEOF'
import os, re, sys, time, resource
import duckdb
ds, md = sys.argv[1], sys.argv[2]
queries = re.findall(r"```sql\n(.*?)```", open(md).read(), flags=re.S)
con = duckdb.connect()
for i, q in enumerate(queries, 1):
    for kind in ("first", "again"):
        t, c = time.time(), os.times()
        rows = con.sql(q.replace("DIR", ds)).fetchall()
        c2 = os.times()
        print(f"query {i} ({kind}): {time.time() - t:.2f} s, CPU {c2.user - c.user:.2f} s user"
              f" + {c2.system - c.system:.2f} s system, load average "
              f"{open('/proc/loadavg').read().split()[0]}; {len(rows)} rows; first: {rows[0]}")
print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
PYEOF
echo "== rangeprof.load of one kernel's rows (filter pushed down), twice in a row"
for i in 1 2; do $PY "$root/bench/tree_rss.py" $PY -c '
import os, sys, time, rangeprof
t, c = time.time(), os.times()
df = rangeprof.load(sys.argv[1], filters=[("Kernel", "==", "reduce_kernel<512, 1>")])
c2 = os.times()
print(f"load: {time.time() - t:.2f} s, CPU {c2.user - c.user:.2f} s user + {c2.system - c.system:.2f} s system, "
      "load average", open("/proc/loadavg").read().split()[0] + f"; {len(df)} rows, ranks {df.Rank.nunique()}, jobs {df.JobId.nunique()}")
' "$dir/ds"; done
[ "${BY_RANK:-1}" = 1 ] || exit 0
echo "== rangeprof-report --by-rank over the whole dataset (20 M rows)"
/usr/bin/time -f "by-rank: %e s wall, CPU %U s user + %S s system" \
	$PY "$root/bench/tree_rss.py" $PY -m rangeprof.report --by-rank "$dir/ds" >"$dir/by_rank.txt"
head -12 "$dir/by_rank.txt" | cut -c1-160
grep -c . "$dir/by_rank.txt"
