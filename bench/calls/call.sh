# bench/calls/call.sh - sourced by each call of bench/calls/ with LOG set to its log's name:
# the repository root as the working directory, $out (the device tool's $OUT, else
# ./gpu-out), the library paths the carried build needs (.devlibs holds libcjson.so.1:
# doc/measurements.md, "Reading this file"), Python unbuffered, the card's state in the
# log, and part NAME COMMAND..., which runs a command with its output and its time in the
# log.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root" || exit 1
out=${OUT:-$root/gpu-out}
mkdir -p "$out"
export LD_LIBRARY_PATH=$root/.devlibs:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONUNBUFFERED=1
log=$out/${LOG:?bench/calls/call.sh: set LOG to the log file name}
part() { # NAME COMMAND...
	local name=$1 start=$SECONDS
	shift
	echo "=== $name" | tee -a "$log"
	"$@" 2>&1 | tee -a "$log"
	echo "=== $name: $((SECONDS - start)) s, exit ${PIPESTATUS[0]}" | tee -a "$log"
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader \
	| tee -a "$log"
