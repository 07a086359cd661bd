#!/bin/sh
# tests/integration/preload_noop.sh LIB - preloaded into programs that never touch CUDA,
# librangeprof.so changes nothing: same output, same exit status, no files written. A
# relative LD_PRELOAD path is exported to children as an absolute one.
set -u
lib=$(realpath "$1")
# A sanitizer build's library needs the sanitizer runtime first in the load order.
runtime=$(ldd "$lib" 2>/dev/null | awk '/lib(asan|ubsan)\.so/ {print $3}' | head -1)
preload=${runtime:+$runtime:}$lib
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
cd "$(mktemp -d)"
for cmd in "true" "sh -c 'echo hi; exit 3'" "python3 -c 'print(1)'"; do
	want=$(eval "$cmd" 2>&1; echo "rc=$?")
	got=$(eval "LD_PRELOAD=$preload $cmd" 2>&1; echo "rc=$?")
	[ "$want" = "$got" ] || { echo "differs for $cmd: '$want' vs '$got'"; exit 1; }
done
[ -z "$(ls)" ] || { echo "files written: $(ls)"; exit 1; }
# The raw form with a relative path (issue 9, item 7): a child in another directory
# must still find the library.
mkdir sub && cp "$lib" sub/librangeprof.so
# (printenv itself, started in /, cannot preload the relative LD_PRELOAD: the loader says
# so on stderr, which is the user's relative path, not ours.)
got=$(LD_PRELOAD=${runtime:+$runtime:}sub/librangeprof.so sh -c 'cd / && printenv CUDA_INJECTION64_PATH NVTX_INJECTION64_PATH' 2>/dev/null)
want="$PWD/sub/librangeprof.so
$PWD/sub/librangeprof.so"
[ "$got" = "$want" ] || { echo "relative preload exported as '$got', wanted '$want'"; exit 1; }
echo "preload no-op: ok"
