#!/bin/sh
# tests/fuzz/run.sh SECONDS [TARGET...] - builds every libFuzzer target with clang
# (-fsanitize=fuzzer,address,undefined) and runs each for SECONDS seconds, one after
# the other. Exits non-zero on the first finding (libFuzzer leaves crash-* in the work
# directory) or build failure. Work and corpora: ${FUZZ_DIR:-build-fuzz} under the
# repository root; corpora persist between runs. The unit suite runs each target for 15 s
# (tests/meson.build), into the build directory.
set -eu
seconds=${1:?usage: tests/fuzz/run.sh SECONDS [TARGET...]}
shift
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=${FUZZ_DIR:-$root/build-fuzz}
cc=${CC_FUZZ:-clang}
cuda=${CUDA_ROOT:-/usr/local/cuda}
if ! command -v "$cc" >/dev/null; then
	echo "no $cc here: the fuzz targets need clang with libFuzzer (apt-get install clang" \
		"libclang-rt-dev; scripts/quickstart.sh does)"
	exit 1
fi
mkdir -p "$dir"
targets=${*:-"nvtx_expr options jsonl"}
common="$root/common/log.c $root/common/regex.c $root/common/utf8.c"
flags="-g -O1 -std=c11 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined
       -fno-sanitize-recover=undefined -I$root -isystem $cuda/include -Wall -Wextra -Werror
       -Wno-missing-field-initializers"
for t in $targets; do
	case $t in
	nvtx_expr) src="$root/nvtx_bridge/state.c $root/nvtx_bridge/registry.c $common"
		libs="-lpthread" ;;
	options) src="$root/common/options.c $root/common/launch_metrics.c $common" libs="" ;;
	jsonl) src="$root/collector/records.c $root/collector/cost.c $root/collector/jsonl.c $root/collector/stats.c
		$root/collector/placement.c $root/common/options.c $root/common/launch_metrics.c $common" libs="-lcjson -lm" ;;
	*) echo "unknown target '$t'; accepted: nvtx_expr options jsonl" >&2; exit 2 ;;
	esac
	# shellcheck disable=SC2086
	$cc $flags "$root/tests/fuzz/fuzz_$t.c" $src $libs -o "$dir/fuzz_$t" || {
		echo "fuzz_$t: cannot build (the compiler's messages are above: a source missing from" \
			"this list, or the tools): needs $cc with libFuzzer, libcjson and $cuda/include" \
			"(apt-get install clang libclang-rt-dev libcjson-dev; scripts/quickstart.sh does)"
		exit 1
	}
done
status=0
for t in $targets; do
	mkdir -p "$dir/corpus_$t"
	echo "fuzz_$t: ${seconds} s"
	# Up to 2 KB inputs: longer names are cut by the bridge anyway; -rss_limit_mb
	# catches unbounded memory. The seeds give the grammar a start.
	if ! (cd "$dir" && ./"fuzz_$t" -max_total_time="$seconds" -max_len=2048 \
		-rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
		"corpus_$t" "$root/tests/fuzz/seeds/$t" 2>"fuzz_$t.log"); then
		echo "fuzz_$t: FINDING (see $dir/fuzz_$t.log and $dir/crash-*)"
		tail -40 "$dir/fuzz_$t.log"
		status=1
		break
	fi
	grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$dir/fuzz_$t.log" | tr '\n' ' '
	echo
done
exit $status
