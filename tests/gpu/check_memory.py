"""tests/gpu/check_memory.py JSONL - the save strategies recorded for tests/gpu/memory_cases.cu.

Every case whose kernel writes only through its parameters (directly, through one level of
pointers in device memory), its module's __device__ variables, or a pointer kept in one of
them ("hidden") must be measured with the "reach" strategy, its first launch verified. The
case that writes three links away from its parameter ("chain") must be caught by
verification: a warning names the kernel, its first launch is not replayed, and its later
launches use the full checkpoint. Verification happens at the first launch of each kernel
only.
"""
import sys

import gpu_records

records = gpu_records.read(sys.argv[1])
summaries = {}
for r in records:
    if r["type"] == "summary":
        summaries.setdefault(r["nvtx_path"], []).append(r)
warnings = [r["message"] for r in records if r["type"] == "warning"]
# Case and whether its kernel is launched here for the first time: managed, pool and vmm
# reuse inplace_atomic, which the first case has verified already.
reach_cases = [("inplace_atomic", True), ("batched_accumulate", True),
               ("multi_tensor_scale", True), ("bump_globals", True), ("managed", False),
               ("pool", False), ("vmm", False), ("hidden", True)]
failed = []
for case, first in reach_cases:
    got = summaries.get("case " + case, [])
    strategies = [s["save"]["strategy"] for s in got]
    verified = [s["save"].get("verified_now", False) for s in got]
    print(f"{case}: {len(got)} launches, strategies {strategies}, verified {verified}, "
          f"bytes {[s['save'].get('bytes') for s in got]}")
    if len(got) != 3 or strategies != ["reach"] * 3 or verified != [first, False, False]:
        failed.append(case)
for case, kernel in (("chain", "follow_chain"),):
    got = summaries.get("case " + case, [])
    strategies = [s["save"]["strategy"] for s in got]
    caught = [w for w in warnings if kernel in w and "wrote outside" in w]
    print(f"{case}: {len(got)} launches, strategies {strategies}, warning: {caught[:1]}")
    if len(got) != 2 or strategies != ["checkpoint"] * 2 or not caught:
        failed.append(case)
print("FAILED: " + ", ".join(failed) if failed else "all save strategies as expected")
sys.exit(1 if failed else 0)
