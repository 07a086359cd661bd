#!/bin/sh
# scripts/quickstart.sh - the README's first command: on a fresh Debian machine, sets up
# everything and measures the bundled example.
#   1. Debian's packages for the build and the tests (apt-get, as root or through sudo),
#      clang and its libFuzzer runtime for the fuzz targets' short runs among them;
#   2. the build in build/ (meson), which compiles the example with the toolkit's nvcc;
#   3. .venv/: a virtual environment with rangeprof installed by pip install '.[test]' (the
#      one install: library, launcher, commands, rangeprof.load, matplotlib) and what the
#      Python tests import (the [test] extra of pyproject.toml), so that
#      'meson test -C build --suite unit' runs every test (python/run_tests.sh finds .venv);
#   4. on a machine with an NVIDIA GPU, the main job:
#        .venv/bin/rangeprof --runs 20 --nvtx-include outer/ -- build/examples/example_kernels
#      Without one it says so in one line, and exits 0: everything else is set up.
# The CUDA headers come from the CUDA 13 toolkit (/usr/local/cuda or $CUDA_HOME) or, with
# no toolkit, from NVIDIA's pip packages installed into .venv; the example needs nvcc,
# which only a toolkit has. Run again, it reinstalls rangeprof and rebuilds what changed.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
say() { echo "quickstart: $*"; }
# Runs a step, its output shown only when it fails.
quiet() {
	log=$(mktemp)
	if ! "$@" >"$log" 2>&1; then
		cat "$log" >&2
		rm -f "$log"
		say "failed: $*" >&2
		exit 1
	fi
	rm -f "$log"
}

# 1. Debian's packages.
packages="meson ninja-build pkg-config gcc g++ libc6-dev binutils libcjson-dev
	libcriterion-dev patchelf python3 python3-venv clang libclang-rt-dev"
missing=$(for p in $packages; do dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null |
	grep -q 'ok installed' || echo "$p"; done)
if [ -n "$missing" ]; then
	if [ "$(id -u)" = 0 ]; then sudo=; elif command -v sudo >/dev/null; then sudo=sudo; else
		say "needs root for: apt-get install $(echo $missing)" >&2
		exit 1
	fi
	say "installing $(echo $missing)"
	quiet $sudo apt-get update -qq
	# shellcheck disable=SC2086
	quiet $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
		--no-install-recommends $missing
fi

# 3 before 2: with no toolkit, the headers come from .venv's pip packages.
if [ ! -x .venv/bin/python ]; then
	say "creating .venv"
	/usr/bin/python3 -m venv .venv
fi
if ! .venv/bin/python scripts/find_toolkit.py >/dev/null 2>&1; then
	say "no CUDA toolkit here: taking the CUDA headers from NVIDIA's pip packages"
	quiet .venv/bin/pip install nvidia-cuda-runtime nvidia-cuda-crt nvidia-cuda-cupti nvidia-nvtx
fi
# Named to both builds: pip's isolated build does not see .venv's packages.
setup_args=-Dtoolkit=$(.venv/bin/python scripts/find_toolkit.py | sed -n 1p)
say "installing rangeprof and the tests' packages into .venv (pip install '.[test]')"
quiet .venv/bin/pip install --disable-pip-version-check --config-settings=setup-args="$setup_args" \
	'.[test]'

# 2. The build (the example, the tests).
if [ ! -f build/build.ninja ]; then
	quiet meson setup build "$setup_args"
fi
quiet meson compile -C build
say "built build/; rangeprof is .venv/bin/rangeprof ($(.venv/bin/rangeprof --version))"

# 4. The main job, on a GPU.
example=build/examples/example_kernels
if [ ! -x "$example" ]; then
	say "no nvcc (the CUDA 13 toolkit's) to compile the example: not measured" >&2
	exit 0
fi
if ! gpu=$(.venv/bin/python - 2>&1 <<'PY'
import ctypes
try:
    cuda = ctypes.CDLL("libcuda.so.1")
except OSError:
    raise SystemExit("no NVIDIA driver (libcuda.so.1)")
count = ctypes.c_int(0)
if cuda.cuInit(0) != 0 or cuda.cuDeviceGetCount(ctypes.byref(count)) != 0 or count.value < 1:
    raise SystemExit("the NVIDIA driver sees no GPU")
print(f"{count.value} GPU(s)")
PY
); then
	say "no NVIDIA GPU on this machine ($gpu): everything is set up, the example was not" \
		"measured. With a GPU: .venv/bin/rangeprof --runs 20 --nvtx-include outer/ -- $example"
	exit 0
fi
say "$gpu: .venv/bin/rangeprof --runs 20 --nvtx-include outer/ -- $example"
exec .venv/bin/rangeprof --runs 20 --nvtx-include outer/ -- "$example"
