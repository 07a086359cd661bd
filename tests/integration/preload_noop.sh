#!/bin/sh
# tests/integration/preload_noop.sh LIB - preloaded into programs that never touch CUDA,
# librangeprof.so changes nothing: same output, same exit status, no files written.
set -u
lib=$(realpath "$1")
cd "$(mktemp -d)"
for cmd in "true" "sh -c 'echo hi; exit 3'" "python3 -c 'print(1)'"; do
	want=$(eval "$cmd" 2>&1; echo "rc=$?")
	got=$(eval "LD_PRELOAD=$lib $cmd" 2>&1; echo "rc=$?")
	[ "$want" = "$got" ] || { echo "differs for $cmd: '$want' vs '$got'"; exit 1; }
done
[ -z "$(ls)" ] || { echo "files written: $(ls)"; exit 1; }
echo "preload no-op: ok"
