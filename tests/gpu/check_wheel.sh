#!/usr/bin/env bash
# tests/gpu/check_wheel.sh VENV - issue 17 on the H200: the rangeprof wheel, installed offline
# into VENV (tests/gpu/notebook_venv.sh made it, --system-site-packages over PyTorch's Python),
# measures a PyTorch matmul through the launcher and in-process, with no LD_LIBRARY_PATH set
# by hand: the wheel's library needs no libcjson and finds CUPTI by itself (collector/api.c).
# Prints what it found; exits non-zero on the first broken expectation.
set -u
venv=${1:?usage: tests/gpu/check_wheel.sh VENV}
py=$venv/bin/python
work=$(mktemp -d)
cd "$work" || exit 1
unset LD_LIBRARY_PATH
fail() { echo "FAIL: $*"; exit 1; }
lib=$("$py" -c 'import rangeprof._native as n; print(n.library_path())') || fail "no library path"
echo "library: $lib"
case "$lib" in "$venv"/*) ;; *) fail "the library is not the wheel's: $lib";; esac
ldd "$lib" | sed 's/^/  /'
ldd "$lib" | grep -q cjson && fail "the wheel's library needs libcjson"
"$venv/bin/rangeprof" --version || fail "rangeprof --version"
cat >mm.py <<'PY'
import torch
torch.manual_seed(0)
a = torch.randn(2048, 2048, device="cuda"); b = torch.randn(2048, 2048, device="cuda")
torch.cuda.nvtx.range_push("mm")
c = a @ b
torch.cuda.nvtx.range_pop()
torch.cuda.synchronize()
print("checksum %.6e" % c.double().sum().item())
PY
"$py" mm.py >plain.txt || fail "the plain program"
"$venv/bin/rangeprof" -q -o launcher.jsonl --runs 5 --nvtx-include mm/ -- "$py" mm.py >launcher.txt ||
	fail "the launcher"
diff plain.txt launcher.txt || fail "the launcher changed the result"
cat >inproc.py <<'PY'
import json, sys
import rangeprof
import torch

@rangeprof.analyze.kernel(configs=[(2048,)], runs=5)
def mm(n):
    a = torch.randn(n, n, device="cuda"); b = torch.randn(n, n, device="cuda")
    with rangeprof.annotate("mm"):
        a @ b

df = mm().to_dataframe()
print(df[["Annotation", "Kernel", "NumRuns", "AvgValue"]].to_string())
assert len(df) >= 1 and (df["NumRuns"] == 5).all(), df
print(json.dumps(rangeprof.info()))
PY
"$py" inproc.py >inproc.txt 2>&1 || { cat inproc.txt; fail "in-process"; }
cat inproc.txt
"$py" - <<'PY' || fail "records"
import json
recs = [json.loads(l) for l in open("launcher.jsonl")]
session = [r for r in recs if r["type"] == "session"][0]
runs = [r for r in recs if r["type"] == "run"]
print("launcher: session version", session["version"], "cupti", session.get("cupti"))
assert session.get("cupti") and session["cupti"]["path"], session
assert runs and all(r["runs"] == 5 for r in runs), len(runs)
print("launcher:", len(runs), "runs of", sorted({r["kernel"][:50] for r in runs}))
PY
echo "wheel checks passed"
