# tests/gpu/notebook.sh - issue 18 on the H200: rangeprof in a notebook.
#   notebook-venv          a venv with nbclient, ipykernel, Nsight Python 0.9.6 and the
#                          rangeprof wheel, installed offline from .devwheels/
#                          (tests/gpu/notebook_venv.sh; tests/gpu/fetch_wheels.sh fills it)
#   notebook-cells         examples/tutorial/tutorial.ipynb executed headless by nbclient in
#                          that venv's kernel: every cell runs without an error
#   notebook-write-back    the executed notebook, stamped in its metadata.rangeprof with the
#                          commit (RANGEPROF_COMMIT, else git rev-parse HEAD: the device
#                          tool's copy has no .git) and the digest of the library it ran
#                          (tests/gpu/notebook_stamp.py), written to $NOTEBOOK_WRITE_BACK or
#                          $out/tutorial.ipynb, to be committed as the tutorial; refused when
#                          the wheel's Python package is not this tree's
#   notebook-values        its DataFrames: Nsight Python's columns, plausible H200 values,
#                          each lesson's point, rangeprof against ncu (check_notebook.py)
#   nsight-script-nsight   tests/gpu/nsight_script.py under Nsight Python 0.9.6 (over ncu)
#   nsight-script-rangeprof the same script with only 'import rangeprof as nsight'
#   nsight-script-compare  the two DataFrames: same columns, times within 2 % per config
# A check that cannot run here (no GPU, no wheels, no Nsight Python) is counted as skipped,
# not failed. Never changes the card's settings (clock control none in both tools).
#
# Sourced by tests/gpu/run.sh from its work directory: uses its check, $root, $work and $out,
# counts into its pass, fail and skip. Run alone (bash tests/gpu/notebook.sh) it makes a
# work directory of its own, writes into $OUT (or ./gpu-out) and ends with the suite's
# summary line and exit status. About 3-4 minutes on an H200, a minute of it the venv.

if ! declare -F check >/dev/null; then
	nb_alone=1
	root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
	out=${OUT:-$root/gpu-out}
	mkdir -p "$out"
	work=$(mktemp -d)
	cd "$work" || exit 1
	pass=0
	fail=0
	skip=0
	. "$root/tests/gpu/checks.sh"
else
	nb_alone=
fi
nb_start=$SECONDS
nb_skip() { # name reason
	skip=$((${skip:-0} + 1))
	echo "SKIP $1: $2"
}
nb_check() { # [--show] name command...: as check, but exit status 77 is a skip (the log's
	# last line says why); --show prints the whole log after the verdict, pass or fail
	local show='' name rc
	[ "$1" = --show ] && { show=1; shift; }
	name=$1
	shift
	"$@" >"$work/$name.log" 2>&1
	rc=$?
	if [ $rc -eq 0 ]; then
		pass=$((pass + 1))
		echo "PASS $name"
	elif [ $rc -eq 77 ]; then
		nb_skip "$name" "$(tail -1 "$work/$name.log")"
	else
		fail=$((fail + 1))
		echo "FAIL $name"
		[ -n "$show" ] || tail -30 "$work/$name.log"
	fi
	[ -z "$show" ] || cat "$work/$name.log"
}

# nb_write_back EXECUTED DEST: stamps EXECUTED and copies it to DEST, when the rangeprof the
# notebook ran is this tree's: the Python package installed from the wheel must equal
# python/rangeprof (the wheel in .devwheels is built from the commit, scripts/build_wheel.sh),
# and the library files the wheel was built from (the digest fetch_wheels.sh recorded
# beside it) must be this tree's: a wheel built before a change to the C library installs
# the same Python files and would otherwise pass.
nb_write_back() {
	"$nb_py" - "$root" "${RANGEPROF_WHEELS:-$root/.devwheels}" <<'EOF' || return 1
import filecmp, pathlib, sys
import rangeprof
pkg = pathlib.Path(rangeprof.__file__).parent
src = pathlib.Path(sys.argv[1]) / "python" / "rangeprof"
stale = [p.name for p in sorted(src.glob("*.py")) if p.name not in ("_version.py", "_layout.py")
         and not ((pkg / p.name).is_file() and filecmp.cmp(p, pkg / p.name, shallow=False))]
if stale:
    sys.exit(f"the rangeprof the notebook ran ({pkg}) is not this tree's: {stale} differ; "
             "rebuild the wheel in .devwheels (tests/gpu/fetch_wheels.sh --build-rangeprof)")
sys.path.insert(0, str(pathlib.Path(sys.argv[1]) / "tests" / "gpu"))
import notebook_stamp
record = pathlib.Path(sys.argv[2]) / "rangeprof.library-digest"
if not record.is_file():
    sys.exit(f"{record} is missing: nothing says which library the wheel was built from; "
             "rebuild the wheel (tests/gpu/fetch_wheels.sh --build-rangeprof)")
built, here = record.read_text().strip(), notebook_stamp.library_digest_of_files(sys.argv[1])
if built != here:
    sys.exit(f"the wheel was built from other library files ({built[:12]}) than this "
             f"tree's ({here[:12]}): rebuild it (tests/gpu/fetch_wheels.sh --build-rangeprof)")
EOF
	"$nb_py" "$root/tests/gpu/notebook_stamp.py" stamp "$1" "$root" || return 1
	cp "$1" "$2" || return 1
	echo "executed notebook: $2 (commit it as examples/tutorial/tutorial.ipynb)"
}

# Outside $work, which run.sh packs into gpu-work.tgz.
nb_venv=${NOTEBOOK_VENV:-$(mktemp -d)/nbvenv}
nb_py=$nb_venv/bin/python
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
	for name in notebook-venv notebook-cells notebook-write-back notebook-values \
		nsight-script-nsight nsight-script-rangeprof nsight-script-compare; do
		nb_skip $name "no GPU here"
	done
else
	# The wheel's library needs no libcjson and finds CUPTI itself (issue 17): nothing is
	# put on LD_LIBRARY_PATH, and what the caller put there is taken away.
	nb_saved_llp=${LD_LIBRARY_PATH-}
	unset LD_LIBRARY_PATH
	export PYTHONUNBUFFERED=1
	# Jupyter's and matplotlib's own files in the work directory, not in $HOME.
	export JUPYTER_RUNTIME_DIR=$work/jupyter/runtime JUPYTER_PLATFORM_DIRS=1 \
		IPYTHONDIR=$work/jupyter/ipython MPLCONFIGDIR=$work/jupyter/mpl
	mkdir -p "$JUPYTER_RUNTIME_DIR" "$IPYTHONDIR" "$MPLCONFIGDIR"
	nb_check notebook-venv bash "$root/tests/gpu/notebook_venv.sh" "$nb_venv"
	grep -E "^notebook venv:" "$work/notebook-venv.log"
	if [ -x "$nb_py" ] && [ -f "$nb_venv/.ready" ]; then
		# Issue 17: the wheel in that fresh venv measures a PyTorch matmul through the
		# launcher and in-process, with nothing on LD_LIBRARY_PATH.
		nb_check --show wheel bash "$root/tests/gpu/check_wheel.sh" "$nb_venv"
		mkdir -p "$work/notebook"
		# The notebook's JSON Lines file and ncu's CSV land beside it, in $work.
		nb_check notebook-cells env RANGEPROF_OUTPUT="$work/notebook/tutorial.%p.jsonl" \
			timeout 1500 "$nb_py" "$root/tests/gpu/check_notebook.py" run \
			"$root/examples/tutorial/tutorial.ipynb" "$work/notebook/tutorial.ipynb" \
			"$work/notebook/values.json" --kernel rangeprof-notebook --cwd "$work/notebook"
		# The executed notebook, stamped with the commit and the library it ran
		# (tests/gpu/notebook_stamp.py; python/tests/test_notebook_fresh.py compares them
		# with HEAD), written back to $NOTEBOOK_WRITE_BACK, else $out/tutorial.ipynb.
		if [ -f "$work/notebook/tutorial.ipynb" ]; then
			nb_check --show notebook-write-back nb_write_back "$work/notebook/tutorial.ipynb" \
				"${NOTEBOOK_WRITE_BACK:-$out/tutorial.ipynb}"
		else
			fail=$((fail + 1))
			echo "FAIL notebook-write-back: no executed notebook ($work/notebook/tutorial.ipynb)"
		fi
		if [ -f "$work/notebook/values.json" ]; then
			nb_check --show notebook-values "$nb_py" "$root/tests/gpu/check_notebook.py" verify \
				"$work/notebook/values.json"
		else
			fail=$((fail + 1))
			echo "FAIL notebook-values: the notebook left no values ($work/notebook/values.json)"
		fi
		mkdir -p "$work/nsight_script"
		NS=("$nb_py" "$root/tests/gpu/check_nsight_script.py")
		nb_check nsight-script-nsight timeout 1000 "${NS[@]}" nsight "$root/tests/gpu/nsight_script.py" \
			"$work/nsight_script/nsight.json"
		nb_check nsight-script-rangeprof timeout 1000 "${NS[@]}" rangeprof \
			"$root/tests/gpu/nsight_script.py" \
			"$work/nsight_script/rangeprof.json"
		nb_check --show nsight-script-compare "${NS[@]}" compare "$work/nsight_script/nsight.json" \
			"$work/nsight_script/rangeprof.json"
	else
		for name in notebook-cells notebook-write-back notebook-values nsight-script-nsight \
			nsight-script-rangeprof nsight-script-compare; do nb_skip $name "no notebook venv"; done
	fi
fi
# The rest of the suite (sourced from run.sh) runs the build's library, which does need it.
[ -n "${nb_saved_llp:-}" ] && export LD_LIBRARY_PATH=$nb_saved_llp
echo "notebook and Nsight Python script: $((SECONDS - nb_start)) s"
if [ -n "$nb_alone" ]; then
	echo "$pass passed, $fail failed, $skip skipped (work directory $work)"
	[ "$fail" -eq 0 ]
	exit
fi
