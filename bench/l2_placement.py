"""bench/l2_placement.py - issue 22: DRAM writes of tests/gpu/l2_resident.cu's kernels per
place of their arrays, under several recordings (rangeprof's JSON Lines, ncu's raw CSV with
--nvtx), side by side.

usage: l2_placement.py LABEL=FILE [LABEL=FILE ...] [--metric dram__bytes_write.sum]

For each kind (gather, overwrite, histogram) and place (NVTX range '<kind>/pNN'): each
recording's median over its launches (and runs). Then per kind and recording: the median
and the mean over places and their gaps to the first recording's, how many places are within 3 % of the first
recording's same place, and the shift (in places) at which the recording's figures follow
the first one's best (Pearson's r over the places both have): a shift other than 0 with a
high r means the same physical layouts occur in both, at other offsets of the allocation.
"""
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "gpu"))
from check_l2_resident import NoRuns, per_place  # noqa: E402
from rangeprof import compare_ncu as rangeprof_ncu  # noqa: E402
from rangeprof import units as rangeprof_units  # noqa: E402

def pearson(a, b):
    if len(a) < 3:
        return float("nan")
    ma, mb = statistics.fmean(a), statistics.fmean(b)
    sa = math.sqrt(sum((x - ma) ** 2 for x in a))
    sb = math.sqrt(sum((y - mb) ** 2 for y in b))
    return float("nan") if sa == 0 or sb == 0 else sum(
        (x - ma) * (y - mb) for x, y in zip(a, b)) / (sa * sb)


def best_shift(ref, other, least=8):
    """(shift, r): other[p + shift] against ref[p] over at least `least` common places."""
    best = (0, float("nan"))
    n = max(max(ref), max(other)) + 1
    for s in range(-n + least, n - least + 1):
        common = [p for p in ref if p + s in other]
        if len(common) < least:
            continue
        r = pearson([ref[p] for p in common], [other[p + s] for p in common])
        if not math.isnan(r) and (math.isnan(best[1]) or r > best[1]):
            best = (s, r)
    return best


def main(argv):
    metric = "dram__bytes_write.sum"
    if "--metric" in argv:
        i = argv.index("--metric")
        metric = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    recordings = []
    for arg in argv:
        label, sep, path = arg.partition("=")
        if not sep:
            sys.exit(f"l2_placement.py: '{arg}' is not LABEL=FILE")
        try:
            recordings.append((label, per_place(path, (metric,))[metric]))
        except (OSError, rangeprof_ncu.NcuError, rangeprof_units.UnitError, NoRuns) as e:
            sys.exit(f"l2_placement.py: {e}")
    if not recordings:
        sys.exit(__doc__)
    ref_label, ref = recordings[0]
    for kind in ("gather", "overwrite", "histogram", "readonly"):
        if kind not in ref:
            continue
        places = sorted(ref[kind])
        print(f"\n{kind}: {metric} / 1000 (KB, us), median over launches and runs, per place")
        print("place " + " ".join(f"{label:>10}" for label, _ in recordings))
        for p in places:
            cells = []
            for _, rec in recordings:
                v = rec.get(kind, {}).get(p)
                cells.append(f"{v / 1e3:>10.1f}" if v is not None else f"{'-':>10}")
            print(f"p{p:02d}   " + " ".join(cells))
        print(f"summary against {ref_label}: median over places, gap; mean over places, gap "
              "(what tests/gpu/check_l2_resident.py judges); places within 3 %, r at shift 0, "
              "best shift and its r")
        ref_median = statistics.median(ref[kind].values())
        ref_mean = statistics.fmean(ref[kind].values())
        for label, rec in recordings:
            mine = rec.get(kind)
            if not mine:
                print(f"  {label:>10}: no places")
                continue
            med = statistics.median(mine.values())
            gap = 100 * (med - ref_median) / ref_median if ref_median else float("nan")
            mean = statistics.fmean(mine.values())
            mean_gap = 100 * (mean - ref_mean) / ref_mean if ref_mean else float("nan")
            common = [p for p in places if p in mine]
            within = sum(1 for p in common
                         if abs(mine[p] - ref[kind][p]) <= 0.03 * abs(ref[kind][p]))
            r0 = pearson([ref[kind][p] for p in common], [mine[p] for p in common])
            shift, r = best_shift(ref[kind], mine)
            print(f"  {label:>10}: {med / 1e3:10.1f}  {gap:+6.1f} %  {mean / 1e3:10.1f}  "
                  f"{mean_gap:+6.2f} %  {within:>3}/{len(common)}"
                  f"  r0 {r0:+.2f}  shift {shift:+d} r {r:+.2f}"
                  f"  (places {min(mine.values()) / 1e3:.1f}-{max(mine.values()) / 1e3:.1f})")


if __name__ == "__main__":
    main(sys.argv[1:])
