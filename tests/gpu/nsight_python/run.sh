#!/usr/bin/env bash
# tests/gpu/nsight_python/run.sh [run.py's options] - on the GPU machine, from the repository
# root: installs the newest .devwheels/rangeprof-*.whl (tests/gpu/fetch_wheels.sh
# --build-rangeprof makes it) into a folder of its own, offline and --no-deps, and runs
# tests/gpu/nsight_python/run.py with the Python that has PyTorch, cuda-core and pytest
# ($NSIGHT_PYTHON_PY, else /opt/torch/.venv/bin/python, else python3) and that folder
# first on its path. Needs tests/gpu/nsight_python/upstream/ (fetch.sh) carried too.
# Exit status: run.py's (0 pass, 1 a failure, 77 skipped: no GPU, no wheel, no upstream/).
set -u
root=$(cd "$(dirname "$0")/../../.." && pwd)
py=${NSIGHT_PYTHON_PY:-/opt/torch/.venv/bin/python}
[ -x "$py" ] || py=$(command -v python3)
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
	echo "SKIP nsight-python: no GPU here (nvidia-smi -L fails)"
	exit 77
fi
wheel=$(ls -t "${RANGEPROF_WHEELS:-$root/.devwheels}"/rangeprof-*.whl 2>/dev/null | head -1)
if [ -z "$wheel" ]; then
	echo "SKIP nsight-python: no rangeprof-*.whl in ${RANGEPROF_WHEELS:-$root/.devwheels}" \
		"(tests/gpu/fetch_wheels.sh --build-rangeprof, then carry .devwheels)"
	exit 77
fi
site=$(mktemp -d)/site
pip=("$py" -m pip)
"$py" -m pip --version >/dev/null 2>&1 || {
	pipwhl=$(ls "$(dirname "$wheel")"/pip-*.whl 2>/dev/null | tail -1)
	[ -n "$pipwhl" ] || { echo "FAIL nsight-python: $py has no pip, and no pip-*.whl is beside $wheel"; exit 1; }
	pip=("$py" "$pipwhl/pip")
}
"${pip[@]}" install -q --disable-pip-version-check --no-cache-dir --no-index --no-deps \
	--target "$site" "$wheel" || { echo "FAIL nsight-python: installing $wheel failed"; exit 1; }
# The wheel's library finds CUPTI itself: nothing on LD_LIBRARY_PATH.
unset LD_LIBRARY_PATH
PYTHONPATH=$site${PYTHONPATH:+:$PYTHONPATH} exec "$py" "$root/tests/gpu/nsight_python/run.py" "$@"
