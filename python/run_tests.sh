#!/bin/sh
# python/run_tests.sh - the Python package's tests (pytest) for 'meson test --suite unit'.
# The interpreter comes from RANGEPROF_TEST_PYTHON (.ci/run creates a virtual environment
# with pandas, matplotlib and pytest and sets it), else .venv/ at the repository root
# (scripts/quickstart.sh); without one the test is skipped (exit 77, which meson counts as
# a skip), never passed.
root=${RANGEPROF_SOURCE_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
py=${RANGEPROF_TEST_PYTHON:-}
# Else the environment scripts/quickstart.sh makes (it has pytest, pandas, matplotlib), so
# that the README's test command runs these tests too.
if [ -z "$py" ] && [ -x "$root/.venv/bin/python" ]; then
	py=$root/.venv/bin/python
fi
if [ -z "$py" ]; then
	echo "SKIP: RANGEPROF_TEST_PYTHON names no interpreter and there is no .venv; set it to" \
		"a Python with pytest, pandas and matplotlib (scripts/quickstart.sh makes .venv) to" \
		"run python/tests"
	exit 77
fi
if ! "$py" -c "import pytest" 2>/dev/null; then
	echo "FAIL: RANGEPROF_TEST_PYTHON=$py cannot import pytest"
	exit 1
fi
cd "$root/python" || exit 1
PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}" exec "$py" -m pytest -v -p no:cacheprovider tests
