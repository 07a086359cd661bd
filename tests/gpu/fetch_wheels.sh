#!/usr/bin/env bash
# tests/gpu/fetch_wheels.sh [DIR] - run HERE (a machine that reaches PyPI), not on the GPU
# machine: downloads into DIR (default .devwheels/ at the repository root, ignored through
# .git/info/exclude) the wheels that tests/gpu/notebook.sh and bench/notebook_vs_nsight.py
# install offline on the H200 (Python 3.12, manylinux x86_64, no network):
#   pip                                    to bootstrap a venv made --without-pip
#   nbclient nbformat ipykernel jupyter_client and all their dependencies
#   nsight-python==0.9.6 (--no-deps: its ncu-report comes from ncu's extras/python, and
#     pandas, numpy, matplotlib, nvidia-ml-py are in the H200's image) with deepdiff<8.7,
#     orderly-set and nvtx
#   pandas (--no-deps) and its small dependencies, installed only where the GPU machine's
#     Python lacks pandas (numpy must be there: it is not fetched); 12 of the ~32 MB, left
#     out with FETCH_PANDAS=0 (the H200's image has pandas)
# The rangeprof wheel is not fetched: scripts/build_wheel.sh builds it here (the manylinux
# wheel, from HEAD's sdist) as rangeprof-*.whl. With --build-rangeprof this script runs that
# build too, with $PYTHON, which then needs build, ziglang, auditwheel and twine.
# Then it checks that the set resolves offline for ipykernel (a dry run of pip against DIR
# alone) and prints DIR's size: everything carried to the GPU machine shares 64 MiB.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build_rangeprof=
if [ "${1:-}" = --build-rangeprof ]; then build_rangeprof=1; shift; fi
dest=${1:-$root/.devwheels}
PY=${PYTHON:-python3}
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)

# Keep DIR out of git without touching .gitignore (it is a machine-local folder).
if [ "$dest" = "$root/.devwheels" ]; then
	exclude=$(git -C "$root" rev-parse --git-path info/exclude 2>/dev/null || true)
	case $exclude in /*) ;; ?*) exclude=$root/$exclude ;; esac
	if [ -n "$exclude" ] && ! grep -qx '/.devwheels/' "$exclude" 2>/dev/null; then
		mkdir -p "$(dirname "$exclude")"
		echo '/.devwheels/' >>"$exclude"
		echo "fetch_wheels.sh: added /.devwheels/ to $exclude"
	fi
fi

# pip matches platform tags exactly: name every manylinux level a wheel may carry, up to
# glibc 2.35 (the H200 has Ubuntu 24.04's 2.39; this machine's 2.36 can then test them too).
target=(--only-binary=:all: --python-version 3.12 --implementation cp
	--platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64
	--platform manylinux1_x86_64 --platform manylinux_2_5_x86_64
	--platform manylinux2010_x86_64 --platform manylinux_2_12_x86_64)
for n in 24 26 27 28 31 34 35; do target+=(--platform "manylinux_2_${n}_x86_64"); done
dl() { "$PY" -m pip download --disable-pip-version-check -q "${target[@]}" -d "$dest" "$@"; }

dl pip
dl nbclient nbformat ipykernel jupyter_client
dl --no-deps nsight-python==0.9.6
dl 'deepdiff<8.7' orderly-set nvtx
[ "${FETCH_PANDAS:-1}" = 0 ] || dl --no-deps pandas python-dateutil six pytz tzdata

if [ -n "$build_rangeprof" ]; then
	PYTHON=$PY "$root/scripts/build_wheel.sh" "$dest"
	rm -f "$dest"/rangeprof-*.tar.gz # the GPU machine installs the wheel
	# What the wheel was built from (HEAD's committed library files: the sdist is HEAD's),
	# for notebook.sh, which refuses to stamp a notebook that ran another library.
	"$PY" -c 'import sys; sys.path.insert(0, sys.argv[1] + "/tests/gpu"); import notebook_stamp as s
print(s.library_digest_of_commit(sys.argv[1]))' "$root" >"$dest/rangeprof.library-digest" ||
		{ echo "fetch_wheels.sh: cannot record the wheel's library digest" >&2; exit 1; }
fi

# Two versions of one package stop an offline install: say so now, not on the GPU machine.
dups=$(cd "$dest" && ls ./*.whl | sed -E 's|^\./||; s|-[0-9][^-]*-.*||' | tr 'A-Z_.' 'a-z--' |
	sort | uniq -d)
if [ -n "$dups" ]; then
	echo "fetch_wheels.sh: more than one version of: $dups (delete the older wheels in $dest)" >&2
	exit 1
fi

# Does ipykernel's closure resolve from DIR alone, for Python 3.12 on manylinux? pip's
# dry-run resolver with --no-index answers without installing anything.
if "$PY" -m pip install --help 2>/dev/null | grep -q -- --dry-run; then
	"$PY" -m pip install --disable-pip-version-check -q --dry-run --ignore-installed \
		--no-index --find-links "$dest" --target "$(mktemp -d)" "${target[@]}" \
		nbclient nbformat ipykernel jupyter_client 'deepdiff<8.7' nvtx ||
		{ echo "fetch_wheels.sh: the wheels in $dest do not resolve offline" >&2; exit 1; }
	echo "fetch_wheels.sh: nbclient, nbformat, ipykernel, jupyter_client resolve offline from $dest"
fi

ls "$dest"/rangeprof-*.whl >/dev/null 2>&1 ||
	echo "fetch_wheels.sh: note: no rangeprof-*.whl in $dest yet" \
		"(scripts/build_wheel.sh $dest, or this script with --build-rangeprof)"
echo "fetch_wheels.sh: $(ls "$dest"/*.whl | wc -l) wheels, $(du -sh "$dest" | cut -f1) in $dest" \
	"(everything carried to the GPU machine: 64 MiB at most)"
