#!/usr/bin/env bash
# bench/unselected_launches.sh RANGEPROF TINY_LAUNCHES [ROUNDS=5] - issue 35 item 6: what an
# unselected launch costs in steady state, by set-up mode, and why --setup early's steady state
# after a measured launch cost ~1 us more than lazy's (session 17: early 6.25, lazy 5.19, plain
# 4.30 us). Each way runs ROUNDS processes of `TINY_LAUNCHES 100000 3`, interleaved round by
# round; a process's figure is the median of its loops 2-3 (loop 1 overlaps the early set-up):
#   plain                 no rangeprof
#   never-early|lazy      --nvtx-include never/ (nothing measured)
#   c1-early|lazy         one launch measured first (-k tiny -c 1 --runs 1), then unselected
#   c2-early|lazy         two launches measured first: a second profiler pass on the same
#                         object, without the early set-up's empty warm-up pass
#   c1-early-held         as c1-early with another process holding the device lock's presence
#                         byte: the early set-up then enables no profiler and runs no warm-up
#                         (session.c, "alone"), and the measurement enables it on the app's thread
# Prints per way the median host and GPU us per launch (gpu near host: the loop waits on the
# GPU) and, for c1-early, whether the early set-up ran on rangeprof's thread (a setup record)
# or the app's thread won the race (the summary's cost_ms.start ~145 ms).
# Results (H200): doc/measurements.md, "Unselected launches; an idle profiler".
set -u
RP=${1:?usage: bench/unselected_launches.sh RANGEPROF TINY_LAUNCHES [ROUNDS]}
T=${2:?usage: bench/unselected_launches.sh RANGEPROF TINY_LAUNCHES [ROUNDS]}
R=${3:-5}
work=$(mktemp -d)
one() { # way round
	local o="$work/$1.$2"
	case $1 in
	plain) "$T" 100000 3 ;;
	never-early) "$RP" -q -o /dev/null --nvtx-include never/ "$T" 100000 3 ;;
	never-lazy) "$RP" -q -o /dev/null --setup lazy --nvtx-include never/ "$T" 100000 3 ;;
	c1-early) "$RP" -q -o "$o.jsonl" -k tiny -c 1 --runs 1 "$T" 100000 3 ;;
	c1-lazy) "$RP" -q -o "$o.jsonl" --setup lazy -k tiny -c 1 --runs 1 "$T" 100000 3 ;;
	c2-early) "$RP" -q -o "$o.jsonl" -k tiny -c 2 --runs 1 "$T" 100000 3 ;;
	c2-lazy) "$RP" -q -o "$o.jsonl" --setup lazy -k tiny -c 2 --runs 1 "$T" 100000 3 ;;
	c1-early-held)
		python3 -c 'import fcntl,glob,time
fs=[open(p,"a+") for p in glob.glob("/dev/shm/rangeprof-device-*.lock")]
for f in fs: fcntl.lockf(f,fcntl.LOCK_SH,1,2)
print(len(fs),flush=True); time.sleep(60)' >"$work/held" & local h=$!
		sleep 0.3
		"$RP" -q -o "$o.jsonl" -k tiny -c 1 --runs 1 "$T" 100000 3
		kill $h 2>/dev/null; wait $h 2>/dev/null ;;
	esac >"$o.txt" 2>&1
}
ways="plain never-early never-lazy c1-early c1-lazy c2-early c2-lazy c1-early-held"
for r in $(seq 1 "$R"); do for w in $ways; do one "$w" "$r"; done; done
echo "lock files held in c1-early-held: $(cat "$work/held" 2>/dev/null | head -1)"
python3 - "$work" $ways <<'PY'
import glob, json, re, statistics, sys
work, ways = sys.argv[1], sys.argv[2:]
def med(xs): return statistics.median(xs) if xs else float("nan")
print(f"{'way':14} {'host us':>8} {'gpu us':>8}  per process (host)")
for w in ways:
    host, gpu, per = [], [], []
    for path in sorted(glob.glob(f"{work}/{w}.*.txt")):
        lines = [l for l in open(path) if l.startswith("launches=")][1:3]
        h = [float(re.search(r"host_us_per_launch=([0-9.]+)", l).group(1)) for l in lines]
        g = [float(re.search(r"gpu_us_per_launch=([0-9.]+)", l).group(1)) for l in lines
             if "gpu_us" in l]
        if h:
            host.append(med(h)); per.append(f"{med(h):.2f}")
        if g:
            gpu.append(med(g))
    print(f"{w:14} {med(host):8.2f} {med(gpu):8.2f}  {' '.join(per)}")
for w in ("c1-early", "c1-early-held", "c2-early"):
    notes = []
    for path in sorted(glob.glob(f"{work}/{w}.*.jsonl")):
        recs = [json.loads(l) for l in open(path) if l.strip()]
        setup = any(r.get("type") == "setup" for r in recs)
        s = [r for r in recs if r.get("type") == "summary"]
        start = s[0]["cost_ms"].get("start") if s else None
        notes.append(f"{'setup' if setup else 'no-setup'}/start={start if start is None else round(start, 1)}")
    print(f"{w}: {' '.join(notes)}")
PY
rm -rf "$work"
