#!/bin/sh
# tests/integration/run_nvtx_app.sh APP PROBE LIB LAUNCHER - the NVTX app through the
# probe (the bridge must see exactly its ranges), then preloaded with librangeprof.so,
# through NVTX_INJECTION64_PATH=librangeprof.so and through the launcher: same output and
# exit status each time, no file written.
set -eu
app=$(realpath "$1") probe=$(realpath "$2") lib=$(realpath "$3") launcher=$(realpath "$4")
cd "$(mktemp -d)"
# A sanitizer build's library needs the sanitizer runtime first in the load order.
runtime=$(ldd "$lib" 2>/dev/null | awk '/lib(asan|ubsan)\.so/ {print $3}' | head -1)
pre=${runtime:+$runtime:}
[ -z "$runtime" ] || export ASAN_OPTIONS=detect_leaks=0
LD_PRELOAD=${runtime:-} NVTX_INJECTION64_PATH="$probe" "$app"
plain=$("$app")
[ "$(LD_PRELOAD=${runtime:-} NVTX_INJECTION64_PATH="$lib" "$app")" = "$plain" ]
[ "$(LD_PRELOAD="$pre$lib" "$app")" = "$plain" ]
[ "$(LD_PRELOAD=${runtime:-} "$launcher" -q -- "$app" 2>/dev/null)" = "$plain" ]
[ -z "$(ls)" ] || { echo "files written: $(ls)"; exit 1; }
echo "nvtx integration: ok"
