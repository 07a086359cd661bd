#!/bin/sh
# tests/integration/run_nvtx_app.sh APP PROBE LIB LAUNCHER - the NVTX app through the
# probe (the bridge must see exactly its ranges), then preloaded with librangeprof.so,
# through NVTX_INJECTION64_PATH=librangeprof.so and through the launcher: same output and
# exit status each time, no file written.
set -eu
app=$(realpath "$1") probe=$(realpath "$2") lib=$(realpath "$3") launcher=$(realpath "$4")
cd "$(mktemp -d)"
NVTX_INJECTION64_PATH="$probe" "$app"
plain=$("$app")
[ "$(NVTX_INJECTION64_PATH="$lib" "$app")" = "$plain" ]
[ "$(LD_PRELOAD="$lib" "$app")" = "$plain" ]
[ "$("$launcher" -q -- "$app" 2>/dev/null)" = "$plain" ]
[ -z "$(ls)" ] || { echo "files written: $(ls)"; exit 1; }
echo "nvtx integration: ok"
