#!/bin/sh
# tests/integration/run_import_child.sh APP LIB FAKE_LIBCUDA - children of a process that
# attached through the control API (as 'import rangeprof' does) measure nothing and write
# nothing unless it asks for them (option children): import_child.c checks the hooks and
# mappings; here, what they print and write. Two children are run with the option on:
# their init runs and says why it cannot measure here (or, on a GPU machine, writes its
# session record).
set -eu
app=$(realpath "$1") lib=$(realpath "$2") fake=$(realpath "$3")
dir=$(mktemp -d)
cd "$dir"
runtime=$(ldd "$lib" 2>/dev/null | awk '/lib(asan|ubsan)\.so/ {print $3}' | head -1)
[ -z "$runtime" ] || export ASAN_OPTIONS=detect_leaks=0
unset CUDA_INJECTION64_PATH NVTX_INJECTION64_PATH RANGEPROF_OUTPUT RANGEPROF_CHILDREN \
	RANGEPROF_CONTROL_PID 2>/dev/null || true
export RANGEPROF_OUTPUT="$dir/out/rangeprof.%p.jsonl"
mkdir out
LD_PRELOAD=${runtime:-} "$app" parent "$lib" "$fake" >stdout.txt 2>stderr.txt || {
	cat stdout.txt stderr.txt; exit 1; }
cat stdout.txt
grep -q "import_child: ok" stdout.txt
# The parent's own init refused (no CUPTI/driver here) and said so: one line per process
# that ran init. The inert children said nothing; the two that were asked for did.
parent_pid_lines=$(grep -c "rangeprof: error:" stderr.txt || true)
files=$(ls out | wc -l)
echo "error lines: $parent_pid_lines, files: $files"
if grep -q "import_child.*FAIL" stderr.txt; then cat stderr.txt; exit 1; fi
# Each process that ran init either wrote a file (a GPU machine) or said why not: the
# parent and the one child whose CUDA hook was asked for, never the inert ones.
[ $((parent_pid_lines + files)) -le 2 ] || { echo "inert children spoke or wrote:"; cat stderr.txt; ls out; exit 1; }
[ $((parent_pid_lines + files)) -ge 1 ] || { echo "the measuring child never ran init"; cat stderr.txt; exit 1; }
[ "$(ls "$dir" | sort | tr '\n' ' ')" = "out stderr.txt stdout.txt " ] || {
	echo "files written in the working directory: $(ls "$dir")"; exit 1; }
echo "import child: ok"
