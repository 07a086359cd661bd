#!/bin/sh
# scripts/zig_cc.sh - the C compiler of the distributable wheel (scripts/build_wheel.sh sets
# CC to it): zig's clang, linking against the symbol versions of glibc
# $RANGEPROF_WHEEL_GLIBC, so that the library, the launcher and the metric lister run on
# every glibc since (manylinux). zig comes from the ziglang pip package, run by
# $RANGEPROF_ZIG_PYTHON.
# meson's probe of the compiler's predefined macros reads the program from stdin ('-'), which
# zig hands to clang unchanged, and clang refuses a triple with a glibc version in it: that
# probe alone gets the plain triple (the macros are the same).
glibc=${RANGEPROF_WHEEL_GLIBC:?scripts/zig_cc.sh: RANGEPROF_WHEEL_GLIBC is not set (scripts/build_wheel.sh sets it)}
target=x86_64-linux-gnu.$glibc
for arg in "$@"; do
	[ "$arg" = - ] && target=x86_64-linux-gnu
done
exec "${RANGEPROF_ZIG_PYTHON:-python3}" -m ziglang cc -target "$target" "$@"
