#!/usr/bin/env bash
# bench/cluster_scale.sh [DIR] - issue 37's scale figures (doc/measurements.md, "Ranks at
# cluster scale"), on the development machine (no GPU): 1 000 rank files holding 20 million
# run records in all (bench/gen_cluster.py: 16 hosts x 8 ranks, the job repeated as 8
# jobs, 20 000 runs a file, ~17 MB), converted into one Parquet dataset, then a DuckDB
# query over it and rangeprof.load of one kernel's rows (a filter pushed down). Each step
# timed with its peak memory (bench/tree_rss.py: the whole process tree). Needs ~20 GB
# free in DIR (default /tmp/cluster_scale); FILES=100 RUNS=20000 for a tenth.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-/tmp/cluster_scale}
files=${FILES:-1000}
launches=${LAUNCHES:-1000}
PY=${PYTHON:-python3}
export PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}"
mkdir -p "$dir"
echo "== $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $($PY -c 'import pandas, pyarrow, duckdb; print("pandas", pandas.__version__, "pyarrow", pyarrow.__version__, "duckdb", duckdb.__version__)')"
if [ ! -f "$dir/files/.done" ]; then
	rm -rf "$dir/files"
	/usr/bin/time -f "generate: %e s" $PY "$root/bench/gen_cluster.py" "$dir/files" --hosts 16 \
		--ranks-per-host 8 --files "$files" --launches "$launches" --runs 20 --kernels 10 --jobs 2
	touch "$dir/files/.done"
fi
echo "input: $(ls "$dir/files" | grep -c jsonl) files, $(du -sh "$dir/files" | cut -f1)"
rm -rf "$dir/ds"
echo "== convert (load average before: $(cut -d' ' -f1 /proc/loadavg))"
/usr/bin/time -f "convert: %e s wall, CPU %U s user + %S s system (all processes)" \
	$PY "$root/bench/tree_rss.py" $PY -m rangeprof.report --to-parquet "$dir/ds" "$dir/files"
echo "dataset: $(find "$dir/ds" -name '*.parquet' | wc -l) parts, $(du -sh "$dir/ds" | cut -f1)"
echo "== convert again (nothing new)"
$PY "$root/bench/tree_rss.py" $PY -m rangeprof.report --to-parquet "$dir/ds" "$dir/files"
echo "== DuckDB: doc/records.md's three queries, each run twice in a row"
$PY - "$dir/ds" "$root/doc/records.md" <<'PYEOF'
import re, sys, time, resource
import duckdb
ds, md = sys.argv[1], sys.argv[2]
queries = re.findall(r"```sql\n(.*?)```", open(md).read(), flags=re.S)
con = duckdb.connect()
for i, q in enumerate(queries, 1):
    for kind in ("first", "again"):
        t = time.time()
        rows = con.sql(q.replace("DIR", ds)).fetchall()
        print(f"query {i} ({kind}): {time.time() - t:.2f} s, {len(rows)} rows; first: {rows[0]}")
print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
PYEOF
echo "== rangeprof.load of one kernel's rows (filter pushed down), twice in a row"
for i in 1 2; do $PY "$root/bench/tree_rss.py" $PY -c '
import sys, time, rangeprof
t = time.time()
df = rangeprof.load(sys.argv[1], filters=[("Kernel", "==", "reduce_kernel<512, 1>")])
print(f"load: {time.time() - t:.2f} s, {len(df)} rows, ranks {df.Rank.nunique()}, jobs {df.JobId.nunique()}")
' "$dir/ds"; done
echo "== rangeprof-report --by-rank over the whole dataset (20 M rows)"
/usr/bin/time -f "by-rank: %e s wall, CPU %U s user + %S s system" \
	$PY "$root/bench/tree_rss.py" $PY -m rangeprof.report --by-rank "$dir/ds" >"$dir/by_rank.txt"
head -12 "$dir/by_rank.txt" | cut -c1-160
grep -c . "$dir/by_rank.txt"
