#!/bin/sh
# python/run_tests.sh - the Python package's tests (pytest), then 12 s of fuzzing of each
# reader of untrusted files (tests/fuzz_readers.py: the JSONL records, ncu's CSV; the long
# runs are in tests/fuzz/NOTES.md), for 'meson test --suite unit'.
# The interpreter comes from RANGEPROF_TEST_PYTHON (.ci/run creates a virtual environment
# with pandas, pyarrow, matplotlib, pytest and hypothesis and sets it); without one the
# test is skipped (exit 77, which meson counts as a skip), never passed.
root=${RANGEPROF_SOURCE_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
py=${RANGEPROF_TEST_PYTHON:-}
if [ -z "$py" ]; then
	echo "SKIP: RANGEPROF_TEST_PYTHON names no interpreter; set it to a Python with pytest," \
		"pandas, pyarrow, matplotlib and hypothesis (.ci/run makes one) to run python/tests"
	exit 77
fi
for module in pytest hypothesis; do
	if ! "$py" -c "import $module" 2>/dev/null; then
		echo "FAIL: RANGEPROF_TEST_PYTHON=$py cannot import $module"
		exit 1
	fi
done
cd "$root/python" || exit 1
export PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}"
"$py" -m pytest -v -p no:cacheprovider tests || exit 1
exec "$py" tests/fuzz_readers.py --seconds 12
