#!/usr/bin/env bash
# bench/per_run.sh OUT.json [options] - issue 35 item 7's benchmark on the GPU machine
# (bench/per_run.py: a measured run's cost against its physical floor, for the 64 MiB
# read-modify-write kernel and a cuBLAS matmul). Needs build/ (the launcher and the
# library) and PyTorch's Python; options go to bench/per_run.py (--reps, --runs-list,
# --workloads, --n). Never changes the card's settings.
# Results (H200): doc/measurements.md, "Cost at the physical floor".
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-/opt/torch/.venv/bin/python}
[ -x "$py" ] || py=python3
export LD_LIBRARY_PATH=$root/.devlibs:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONUNBUFFERED=1
exec "$py" "$root/bench/per_run.py" "$@"
