#!/usr/bin/env bash
# bench/calls/s27c1.sh - the first device call planned after session 26 (bench/NOTES.md,
# "Session 26"), on a fresh nvidia-h200 or nvidia-h100-x1, from the repository root with
# the library and package to land built here and carried:
#   carry: .devwheels build/scripts build/inject/librangeprof.so .devlibs
#   (PYTHON=/tmp/wt/bin/python tests/gpu/fetch_wheels.sh --build-rangeprof at HEAD first;
#    .devlibs holds libcjson.so.1: doc/measurements.md, "Reading this file")
#   command: RANGEPROF_COMMIT=$(git rev-parse HEAD) bash bench/calls/s27c1.sh
# What it runs, in order, each part's time said in the log:
#   1. the tutorial notebook (tests/gpu/notebook.sh), written back to $OUT/tutorial.ipynb:
#      what lands the library (python/tests/test_notebook_fresh.py)
#   2. GPU suite sections 2 (selection, the -c 1 retire checks) and 3b (the kept copies,
#      NVML's used memory)
#   3. bench/unselected_launches.sh, 5 rounds (issue 35 item 6: retiring after -c)
#   4. bench/floor.sh --reps 2, both lessons, with Nsight Python (items 3, 4, 5)
# Files back (at most 8): c1.log, tutorial.ipynb, floor.json.
# Never changes the card's settings (ncu --clock-control none; rangeprof's default none).
set -u
LOG=c1.log . "$(dirname "$0")/call.sh"
part notebook env RANGEPROF_DIRTY=0 NOTEBOOK_WRITE_BACK="$out/tutorial.ipynb" \
	OUT="$out/nb" bash tests/gpu/notebook.sh
part suite-2-3b env SECTIONS="2 3b" OUT="$out/suite" bash tests/gpu/run.sh
nvcc -O2 -arch=sm_90 bench/tiny_launches.cu -o /tmp/tiny_launches -lcuda
part unselected bash bench/unselected_launches.sh build/scripts/rangeprof /tmp/tiny_launches 5
part floor bash bench/floor.sh "$out/floor.json" --reps 2
# What the parts left under $OUT beyond the three files is not returned (8 files at most).
rm -rf "$out/nb" "$out/suite"
