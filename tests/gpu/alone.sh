# tests/gpu/alone.sh - what a part of the GPU suite that can also run by itself
# (library_kernels.sh, l2_resident.sh) needs when it does: run.sh's check and same, $root,
# $RP, a work directory of its own to run in, and the suite's summary line and exit status
# at its end (alone_finish). Sourced at the part's top: alone is 1 when the part runs by
# itself, empty when tests/gpu/run.sh sourced it (run.sh's definitions are then in place).
if ! declare -F check >/dev/null; then
	alone=1
	root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
	RP="$root/build/scripts/rangeprof"
	work=$(mktemp -d)
	cd "$work" || exit 1
	pass=0
	fail=0
	. "$root/tests/gpu/checks.sh"
else
	alone=
fi

# The summary line and exit status, where the part ran by itself; nothing otherwise.
alone_finish() {
	[ -n "$alone" ] || return 0
	echo "$pass passed, $fail failed (work directory $work)"
	[ "$fail" -eq 0 ]
	exit
}
