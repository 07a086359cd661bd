#!/usr/bin/env bash
# bench/floor.sh OUT.json [options] - issue 35's benchmark on the GPU machine (bench/floor.py:
# rangeprof, Nsight Python 0.9.6 and the plain program side by side, each call's cost beyond
# plain + the physical floor). Makes (or reuses) the venv of tests/gpu/notebook_venv.sh from
# the wheels in .devwheels/ (torch from the base Python, nsight-python 0.9.6, rangeprof);
# options go to bench/floor.py (--reps, --lessons 3,10, --runs, --ways). Three reps of both
# lessons take about 4 minutes on an H200. Never changes the card's settings.
# Results (H200): doc/measurements.md, "Cost at the physical floor".
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${NOTEBOOK_VENV:-${TMPDIR:-/tmp}/rangeprof-notebook-venv}
bash "$root/tests/gpu/notebook_venv.sh" "$venv" || exit
unset LD_LIBRARY_PATH # the wheel's library needs none (issue 17)
export PYTHONUNBUFFERED=1
exec "$venv/bin/python" "$root/bench/floor.py" "$@"
