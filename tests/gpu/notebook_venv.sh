#!/usr/bin/env bash
# tests/gpu/notebook_venv.sh VENV [WHEELS] - on the GPU machine (no network): makes the Python
# environment of issue 18's notebook, Nsight Python script and benchmark in VENV, offline,
# from the wheels that tests/gpu/fetch_wheels.sh put in WHEELS (default .devwheels/ at the
# repository root, carried there): nbclient, nbformat, ipykernel, jupyter_client and their
# dependencies, nsight-python 0.9.6 (--no-deps) with deepdiff, orderly-set and nvtx, and
# rangeprof-*.whl (--no-deps; pandas too where the base Python lacks it). Registers an
# ipykernel named rangeprof-notebook for VENV's Python.
#
# The base is the Python that holds PyTorch ($NOTEBOOK_PYTHON, else /opt/torch/.venv/bin/python,
# else python3). The venv is made --system-site-packages; since a venv made from a venv's
# interpreter sees its *base* interpreter's packages, not that venv's, a .pth file adds the
# base Python's own site directories (torch's) after VENV's.
#
# Exit 0 when VENV is ready (also when it was already: VENV/.ready), 77 when the wheels are
# not there (nothing to install from), 1 when making it failed. Says why on stdout.
set -u
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
venv=${1:?usage: tests/gpu/notebook_venv.sh VENV [WHEELS]}
wheels=${2:-${RANGEPROF_WHEELS:-$root/.devwheels}}
base=${NOTEBOOK_PYTHON:-/opt/torch/.venv/bin/python}
[ -x "$base" ] || base=$(command -v python3)
KERNEL=rangeprof-notebook

if [ -f "$venv/.ready" ] && [ -x "$venv/bin/python" ]; then
	echo "notebook venv: $venv (ready)"
	exit 0
fi
if ! ls "$wheels"/nbclient-*.whl "$wheels"/ipykernel-*.whl "$wheels"/pip-*.whl >/dev/null 2>&1; then
	echo "no wheels in $wheels: run tests/gpu/fetch_wheels.sh where PyPI is reachable," \
		"and carry .devwheels"
	exit 77
fi
rp_wheel=$(ls -t "$wheels"/rangeprof-*.whl 2>/dev/null | head -1)
if [ -z "$rp_wheel" ]; then
	echo "no rangeprof-*.whl in $wheels: build it where PyPI is reachable" \
		"(tests/gpu/fetch_wheels.sh --build-rangeprof, or scripts/build_wheel.sh .devwheels)"
	exit 77
fi
fail() { echo "notebook venv: $*"; exit 1; }

rm -rf "$venv"
"$base" -m venv --system-site-packages --without-pip "$venv" || fail "'$base -m venv' failed"
py=$venv/bin/python
pipq=(-m pip install -q --disable-pip-version-check --no-cache-dir --no-warn-script-location
	--no-index)
# pip from its own wheel (a wheel is a zip that Python can run from), before the base's site
# directories are visible: the venv gets its own pip whatever the base has.
pip_wheel=$(ls "$wheels"/pip-*.whl | tail -1)
"$py" "$pip_wheel/pip" install -q --disable-pip-version-check --no-cache-dir --no-index \
	--find-links "$wheels" pip || fail "bootstrapping pip from $pip_wheel failed"

purelib=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
pth=$purelib/_notebook_base_python.pth
"$base" - "$py" >"$pth" <<'EOF' || fail "listing the site directories of $base failed"
import os, subprocess, sys
# The base Python's site directories that the venv does not already have, each added with
# site.addsitedir so that the .pth files in them are read too.
venv_path = set(subprocess.run([sys.argv[1], "-c", "import sys; print('\\n'.join(sys.path))"],
                               capture_output=True, text=True, check=True).stdout.split("\n"))
for d in sys.path:
    site_dir = os.path.basename(d) in ("site-packages", "dist-packages") and os.path.isdir(d)
    if site_dir and d not in venv_path:
        print(f"import site; site.addsitedir({d!r})")
EOF
"$py" -c 'import torch' 2>/dev/null ||
	echo "notebook venv: warning: $py cannot import torch (base $base)"

"$py" "${pipq[@]}" --find-links "$wheels" nbclient nbformat ipykernel jupyter_client \
	'deepdiff<8.7' orderly-set nvtx || fail "installing nbclient, ipykernel, deepdiff, nvtx failed"
ls "$wheels"/nsight_python-0.9.6-*.whl >/dev/null 2>&1 &&
	{ "$py" "${pipq[@]}" --no-deps "$wheels"/nsight_python-0.9.6-*.whl ||
		fail "installing nsight-python failed"; }
"$py" -c 'import pandas' 2>/dev/null ||
	{ "$py" "${pipq[@]}" --find-links "$wheels" pandas ||
		fail "installing pandas failed (numpy must be there)"; }
"$py" "${pipq[@]}" --no-deps --force-reinstall "$rp_wheel" || fail "installing $rp_wheel failed"
"$py" -m ipykernel install --prefix "$venv" --name "$KERNEL" \
	--display-name "Python 3 (rangeprof notebook)" >/dev/null || fail "registering the ipykernel failed"
"$py" -c '
import importlib.metadata as m
import nbclient, ipykernel, pandas, rangeprof, torch
nsight = next((d.version for d in m.distributions() if d.metadata["Name"] == "nsight-python"),
              "not installed")
print("notebook venv:", __import__("sys").executable, "| torch", torch.__version__,
      "| pandas", pandas.__version__, "| nbclient", nbclient.__version__,
      "| ipykernel", ipykernel.__version__, "| rangeprof", getattr(rangeprof, "__version__", "?"),
      "| nsight-python", nsight)
' || fail "the venv cannot import torch, pandas, nbclient, ipykernel and rangeprof"
touch "$venv/.ready"
