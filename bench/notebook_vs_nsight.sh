#!/usr/bin/env bash
# bench/notebook_vs_nsight.sh OUT.json [options] - issue 18's benchmark on the GPU machine: makes
# (or reuses) the venv of tests/gpu/notebook_venv.sh from the wheels in .devwheels/ (torch from
# the base Python, nsight-python 0.9.6, rangeprof), then runs bench/notebook_vs_nsight.py with
# it; options go to that script (--reps, --runs, --lessons 3,10, --no-ncu). With the default
# 3 reps of both lessons it takes about 5-8 minutes on an H200; under a 10-minute limit per
# command, run '--lessons 3' and '--lessons 10' as two commands. Never changes the card's
# settings.
# Results (H200, session 6, `bench/notebook_vs_nsight.sh OUT.json --reps 3`):
# doc/measurements.md, "Notebook vs Nsight Python"; cited by README.md (the notebook
# paragraph) and doc/control-api.md (the warm-up pass's cost).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${NOTEBOOK_VENV:-${TMPDIR:-/tmp}/rangeprof-notebook-venv}
bash "$root/tests/gpu/notebook_venv.sh" "$venv" || exit
# The wheel's library needs no LD_LIBRARY_PATH (issue 17).
unset LD_LIBRARY_PATH
export PYTHONUNBUFFERED=1
exec "$venv/bin/python" "$root/bench/notebook_vs_nsight.py" "$@"
