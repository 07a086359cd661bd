# tests/gpu/checks.sh - the GPU suite's two verdicts, sourced by run.sh and by scripts it
# sources that can also run alone (library_kernels.sh). They count into $pass and $fail
# and keep each check's output in $work/NAME.log.
check() { # name command...
	local name=$1; shift
	if "$@" >"$work/$name.log" 2>&1; then pass=$((pass + 1)); echo "PASS $name";
	else fail=$((fail + 1)); echo "FAIL $name"; tail -20 "$work/$name.log"; fi
}
same() { # file_a file_b name: identical application output
	if diff -q "$1" "$2" >/dev/null; then pass=$((pass + 1)); echo "PASS same-results $3";
	else fail=$((fail + 1)); echo "FAIL same-results $3"; diff "$1" "$2" | head; fi
}
