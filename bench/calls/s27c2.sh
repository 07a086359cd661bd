#!/usr/bin/env bash
# bench/calls/s27c2.sh - the second device call planned after session 26 (bench/NOTES.md,
# "Session 26"), after s27c1.sh (the same carry, plus tests/gpu/nsight_python/upstream,
# fetched by tests/gpu/nsight_python/fetch.sh), from the repository root:
#   command: bash bench/calls/s27c2.sh
#   1. bench/per_run.sh (issue 35 item 7: a run against its floor, rmw64 and sgemm)
#   2. bench/mem_scaling.sh 0 120, kernel mode then range mode (item 8)
#   3. GPU suite sections 3c (tests/gpu/library_kernels.sh: accuracy against ncu) and 4d
#      (Nsight Python's own examples and tests, unmodified)
#   4. bench/first_launch_probe --part 8 35 (which kind of call the first Start holds up)
#      and --part 9 35, twice (what an unselected launch pays after retiring; whether
#      cuptiFinalize would take more off)
# Files back: c2.log, per_run.json.
# Never changes the card's settings.
set -u
LOG=c2.log . "$(dirname "$0")/call.sh"
part per-run bash bench/per_run.sh "$out/per_run.json"
part mem-kernel bash bench/mem_scaling.sh 0 120
part mem-range env MEM_SCALING_MODE=range bash bench/mem_scaling.sh 0 120
part suite-3c-4d env SECTIONS="3c 4d" OUT="$out/suite" bash tests/gpu/run.sh
nvcc -O2 -arch=sm_90 -std=c++17 bench/first_launch_probe.cu -o /tmp/first_launch_probe \
	-lcupti -L/usr/local/cuda/lib64 -I/usr/local/cuda/include \
	-Xlinker -rpath=/usr/local/cuda/lib64
part probe-p8 /tmp/first_launch_probe --part 8 35
part probe-p9 /tmp/first_launch_probe --part 9 35
part probe-p9-again /tmp/first_launch_probe --part 9 35
rm -rf "$out/suite"
