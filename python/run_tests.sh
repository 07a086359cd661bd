#!/bin/sh
# python/run_tests.sh - the Python package's tests, for 'meson test --suite unit':
#   1. pytest on python/tests, importing the checkout's python/rangeprof; a skipped test
#      fails the suite, named, unless it is a GPU test without a GPU (its reason says GPU)
#      or one of test_install.py's tests of the installed layout (run in 2, and by .ci/wheel),
#      or the notebook's freshness outside a git checkout (no HEAD to compare with);
#   2. python/tests/test_install.py again on the copy of rangeprof installed in the
#      interpreter's environment (quickstart's pip install .: the wheel's layout), when the
#      interpreter is this checkout's .venv;
#   3. 12 s of fuzzing of each reader of untrusted files and of the tools' arguments
#      (tests/fuzz_readers.py --target all: the JSONL records, ncu's CSV, the command
#      lines; the long runs are in tests/fuzz/NOTES.md).
# The interpreter: RANGEPROF_TEST_PYTHON (an absolute path; a relative one is taken from the
# build directory meson runs the test in, then from the source root; a bare name from PATH),
# else the .venv that scripts/quickstart.sh makes at the source root. None there, or one
# that cannot import what the tests need (the [test] extra and the dependencies), is a
# failure that says what to run: never a skip.
root=${RANGEPROF_SOURCE_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
fail() {
	echo "FAIL: $*"
	exit 1
}
py=${RANGEPROF_TEST_PYTHON:-}
if [ -z "$py" ]; then
	py=$root/.venv/bin/python
	[ -x "$py" ] || fail "no Python for python/tests: $py does not exist (scripts/quickstart.sh" \
		"makes it), and RANGEPROF_TEST_PYTHON is not set"
else
	case $py in
	/*) ;;
	*/*) if [ -x "$PWD/$py" ]; then py=$PWD/$py; else py=$root/$py; fi ;;
	*) py=$(command -v "$py") || fail "RANGEPROF_TEST_PYTHON=$RANGEPROF_TEST_PYTHON is on no PATH" ;;
	esac
	[ -x "$py" ] || fail "RANGEPROF_TEST_PYTHON=$RANGEPROF_TEST_PYTHON names no interpreter" \
		"(looked for $PWD/$RANGEPROF_TEST_PYTHON and $root/$RANGEPROF_TEST_PYTHON)"
fi
missing=
for module in pytest hypothesis scipy duckdb pandas pyarrow matplotlib; do
	"$py" -c "import $module" 2>/dev/null || missing="$missing $module"
done
[ -z "$missing" ] || fail "$py cannot import$missing: install them with" \
	"'$(dirname "$py")/pip install \"$root[test]\"' (scripts/quickstart.sh does)"
echo "python/tests with $py"

cd "$root/python" || exit 1
status=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}" "$py" -m pytest -v -rs -p no:cacheprovider \
	tests >"$log" 2>&1 || status=1
cat "$log"
# A test that cannot run here fails the suite, named (1 above).
skips=$(grep -E '^SKIPPED \[[0-9]+\] ' "$log" | grep -v GPU |
	grep -v '^SKIPPED \[[0-9]*\] tests/test_install.py:' |
	grep -v '^SKIPPED \[[0-9]*\] tests/test_notebook_fresh.py:.* is not a git checkout')
if [ -n "$skips" ]; then
	echo "FAIL: tests that cannot run here (install what they name; scripts/quickstart.sh does):"
	echo "$skips"
	status=1
fi

# The installed copy: test_install.py from outside the checkout's python/, so that
# 'import rangeprof' finds the environment's, which must then be the wheel's layout.
venv_py=$root/.venv/bin/python
if [ "$(cd "$(dirname "$py")" && pwd -P)" = "$(cd "$(dirname "$venv_py")" 2>/dev/null && pwd -P)" ]; then
	echo "test_install.py on the rangeprof installed in $(dirname "$(dirname "$py")")"
	(cd "$root" && RANGEPROF_TEST_INSTALLED=1 "$py" -m pytest -v -rs -p no:cacheprovider \
		python/tests/test_install.py) || status=1
else
	echo "NOTE: test_install.py's tests of the installed wheel ran only on the checkout's" \
		"python/ ($py is not $venv_py); .ci/wheel runs them on the wheel"
fi
"$py" tests/fuzz_readers.py --seconds 12 --target all || status=1
exit $status
