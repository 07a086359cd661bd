#!/bin/sh
# tests/integration/launcher.sh LAUNCHER - every bad value stops the launcher before the
# application starts, with one line naming the option, the value and what is accepted;
# good runs pass the application's exit status and death by signal through.
set -u
rp=$(realpath "$1")
fail=0
# A sanitizer build: its runtime first in LD_PRELOAD (the launcher keeps it there), no
# leak report from the uninstrumented programs it runs; the launcher's own refusals,
# which exit before any exec, are checked for leaks below.
runtime=$(ldd "$rp" 2>/dev/null | awk '/lib(asan|ubsan)\.so/ {print $3}' | head -1)
if [ -n "$runtime" ]; then
	export LD_PRELOAD="$runtime" ASAN_OPTIONS=detect_leaks=0
fi
cd "$(mktemp -d)"
check_error() { # expected-substring args...
	want=$1; shift
	out=$(ASAN_OPTIONS=detect_leaks=1 "$rp" "$@" touch started 2>&1); rc=$?
	if [ $rc -eq 0 ] || [ -e started ] || ! printf '%s' "$out" | grep -qF -- "$want" ||
	   [ "$(printf '%s\n' "$out" | wc -l)" -ne 1 ]; then
		echo "FAIL: rangeprof $* -> rc=$rc '$out' (wanted '$want')"; fail=1; rm -f started
	fi
}
check_error "unknown option '--bogus'" --bogus
check_error "--runs 'abc': expected an integer" --runs abc
check_error "--runs '0': expected an integer" --runs 0
check_error "--cache-control 'maybe': should be one of 'all', 'none'" --cache-control maybe
check_error "--runs 'many': expected an integer from 1 to 100000 or 'auto'" --runs many
check_error "--target-ci '0': expected a number > 0 and <= 100" --target-ci 0
check_error "--runs-min '300' is more than --runs-max '0200'" --runs auto --runs-min 300 --runs-max 0200
check_error "--thermal-wait '30' is more than --thermal-continue '20.0'" --thermal-wait 30 --thermal-continue 20.0
check_error "--thermal-control 'on': should be one of 'auto', 'manual', 'off'" --thermal-control on
check_error "--graph-profiling 'nodes': should be one of 'node', 'graph', 'none'" --graph-profiling nodes
check_error "--nvtx-include 'A//B': empty range name at character 3" --nvtx-include 'A//B'
check_error "--nvtx-exclude '[': no range name" --nvtx-exclude '['
check_error "unknown escape '%q'" -o 'x.%q'
check_error "directory '/nonexistent' does not exist" -o /nonexistent/r.jsonl
check_error "-c needs a value (N)" -c --
check_error "--output '.': '.' names a directory" -o .
check_error "is a directory; expected a file path" -o /tmp
check_error "names a directory" -o /tmp/
mkfifo fifo
check_error "'fifo' is a FIFO" -o fifo
rm -f fifo
# A value from the environment is reported under the variable's name, escaped and cut.
out=$(RANGEPROF_NVTX_EXCLUDE='A//' "$rp" touch started 2>&1)
printf '%s' "$out" | grep -qF "RANGEPROF_NVTX_EXCLUDE 'A//': empty range name" ||
	{ echo "FAIL: env origin: $out"; fail=1; }
out=$("$rp" --runs "$(printf '1[2J')" true 2>&1)
printf '%s' "$out" | grep -qF -- "--runs '1\x1b[2J'" || { echo "FAIL: escaping: $out"; fail=1; }
out=$("$rp" -k "regex:$(head -c 20000 /dev/zero | tr '\0' '(')" true 2>&1)
printf '%s' "$out" | grep -qF -- "...(20006 bytes)': invalid regular expression: regular expression of 20000 bytes" ||
	{ echo "FAIL: deep regex: $out"; fail=1; }
"$rp" --version | grep -q '^rangeprof [0-9]' || { echo "FAIL: --version"; fail=1; }
out=$(RANGEPROF_LIST_METRICS=1 "$rp" -q -- sh -c 'echo ran' 2>&1)
printf '%s' "$out" | grep -q '^ran$' && printf '%s' "$out" | grep -q "RANGEPROF_LIST_METRICS is ignored" ||
	{ echo "FAIL: leftover RANGEPROF_LIST_METRICS: $out"; fail=1; }
"$rp" -q -c 2 -c unlimited -- true 2>/dev/null || { echo "FAIL: -c unlimited"; fail=1; }
# A mistyped variable is named with the option it would be, and the run goes on; the test
# scripts' own RANGEPROF_ variables are not mistaken for typos.
out=$(RANGEPROF_RUN=3 RANGEPROF_TEST_PYTHON=x RANGEPROF_SOURCE_ROOT=x "$rp" -q -- sh -c 'echo ran' 2>&1)
printf '%s\n' "$out" | grep -qx 'ran' &&
	printf '%s\n' "$out" | grep -qxF 'rangeprof: warning: RANGEPROF_RUN is not a rangeprof option and is not read; did you mean RANGEPROF_RUNS?' &&
	[ "$(printf '%s\n' "$out" | grep -c 'not a rangeprof option')" -eq 1 ] ||
	{ echo "FAIL: typo warning: $out"; fail=1; }
# A list variable with no expression is refused, as --nvtx-include '' is.
out=$(RANGEPROF_NVTX_INCLUDE=';;;' "$rp" touch started 2>&1); rc=$?
{ [ $rc -eq 2 ] && [ ! -e started ] && printf '%s' "$out" | grep -qF "RANGEPROF_NVTX_INCLUDE ';;;': expected an NVTX expression"; } ||
	{ echo "FAIL: ';;;': rc=$rc $out"; fail=1; rm -f started; }
# A loop of symbolic links is named as one.
ln -s loop_b loop_a && ln -s loop_a loop_b
check_error "'loop_a' is a loop of symbolic links" -o loop_a
check_error "directory 'loop_a' is a loop of symbolic links" -o loop_a/x.jsonl
rm -f loop_a loop_b
# Every choice reaches the library through its variable (a value the launcher forgot to
# export stopped it with "cannot set RANGEPROF_GRAPH_PROFILING").
out=$("$rp" -q --graph-profiling graph --memory-save checkpoint --thermal-control off \
	--cache-control none -- sh -c 'echo "$RANGEPROF_GRAPH_PROFILING $RANGEPROF_MEMORY_SAVE $RANGEPROF_THERMAL_CONTROL $RANGEPROF_CACHE_CONTROL"' 2>/dev/null)
[ "$out" = "graph checkpoint off none" ] || { echo "FAIL: choices exported: $out"; fail=1; }
out=$("$rp" -q --runs auto --target-ci 0.5 --nvtx-include 'a/' --nvtx-include 'b;c/' -c 3 -- \
	sh -c 'echo "$RANGEPROF_RUNS $RANGEPROF_TARGET_CI $RANGEPROF_NVTX_INCLUDE $RANGEPROF_LAUNCH_COUNT $RANGEPROF_QUIET"' 2>/dev/null)
[ "$out" = 'auto 0.5 a/;b\;c/ 3 1' ] || { echo "FAIL: values exported: $out"; fail=1; }
RANGEPROF_RUNS=x "$rp" true 2>/dev/null && { echo "FAIL: bad env accepted"; fail=1; }
# One bound alone moves the default other, whatever else is asked: only two values the
# user gave can contradict.
for args in "--runs-max 5" "--runs 3 --runs-max 5" "--runs auto --runs-min 300" \
	    "--thermal-wait 30" "--thermal-wait 30 --thermal-control off" "--thermal-continue 5"; do
	# shellcheck disable=SC2086
	out=$("$rp" -q $args -- sh -c 'echo ran' 2>&1)
	printf '%s' "$out" | grep -q '^ran$' && ! printf '%s' "$out" | grep -q "error:" ||
		{ echo "FAIL: rangeprof $args: $out"; fail=1; }
	# shellcheck disable=SC2086
	out=$("$rp" $args --list-metrics 2>&1)
	printf '%s' "$out" | grep -q "is more than" && { echo "FAIL: $args --list-metrics: $out"; fail=1; }
done
"$rp" -q -- sh -c 'exit 7' 2>/dev/null; [ $? -eq 7 ] || { echo "FAIL: exit status"; fail=1; }
"$rp" -q -- sh -c 'kill -TERM $$' 2>/dev/null; [ $? -eq 143 ] || { echo "FAIL: signal"; fail=1; }
"$rp" --help | grep -q -- "--nvtx-include EXPR" || { echo "FAIL: help"; fail=1; }
"$rp" --help | grep -q "RANGEPROF_LAUNCH_COUNT" || { echo "FAIL: help env"; fail=1; }
# Without a driver (CI, the development machine) the app still runs, with a warning.
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda.so.1 '; then
	out=$("$rp" -- sh -c 'echo ran' 2>&1)
	printf '%s' "$out" | grep -q "no CUDA driver (libcuda.so.1)" &&
		printf '%s' "$out" | grep -q '^ran$' || { echo "FAIL: no-driver: $out"; fail=1; }
fi
[ $fail -eq 0 ] && echo "launcher: ok"
exit $fail
