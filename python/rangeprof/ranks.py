"""rangeprof/ranks.py - ranks compared: for each kernel (NVTX range and config) of a job,
the spread of a metric across ranks against its spread across runs within a rank, the
ranks that stand out, and their GPU's SM clock, temperature and throttle reasons beside
the other ranks'. rangeprof-report --by-rank prints it, rangeprof-plot by-rank draws it.

The statistics, per group (job, NVTX path, kernel, metric) of k ranks with n_j runs each:
- one-way ANOVA: F = MS_between / MS_within with (k - 1, N - k) degrees of freedom, its
  p-value, and the variance components: within a rank sigma_w^2 = MS_within, across ranks
  sigma_r^2 = max(0, (MS_between - MS_within) / n0), n0 = (N - sum n_j^2 / N) / (k - 1)
  (unbalanced one-way random effects); RankSDPct and RunSDPct are their square roots in %
  of the mean, ICC = sigma_r^2 / (sigma_r^2 + sigma_w^2) the share of the variance that is
  between ranks;
- a rank stands out when Welch's t-test of its runs against the other ranks' runs, its
  p-value adjusted by Holm's step-down over the k ranks of the group (so the chance that a
  group with no straggler shows one stays within alpha whatever k is), is at most alpha,
  and its mean differs from the others' by at least min_diff_pct % (with thousands of runs
  a difference far too small to matter would be significant). "The others" leave out the
  ranks found to stand out: the most significant rank is taken, the tests made again
  without it, and so on until none is left (as Rosner's generalised ESD), so that one
  slow rank does not make the rest look fast. With k = 2 both ranks differ from "the
  others" alike: both are named. The runs of a rank are taken as independent; where
  launches of a rank differ more than its runs (RunSDPct counts both), p is too small.
A process without a rank (no launcher variables) counts as a rank of its own, named by
its session. Needs pandas."""
import math
import sys

from rangeprof import stats

# Reasons that lower the clock (the summary's "stable" condition counts the same).
SLOWDOWN = frozenset(("sw_power_cap", "hw_slowdown", "sw_thermal_slowdown",
                      "hw_thermal_slowdown", "hw_power_brake_slowdown"))
GROUP = ["JobId", "Annotation", "Kernel", "Metric"]
GROUP_COLUMNS = GROUP + ["Ranks", "Runs", "Mean", "Unit", "RankSDPct", "RunSDPct", "ICC",
                         "F", "P", "StandOut"]
RANK_COLUMNS = GROUP + ["Rank", "Host", "GPU", "Device", "Runs", "Mean", "DiffPct", "P",
                        "PHolm", "StandsOut", "SMClockMHz", "OthersSMClockMHz",
                        "TemperatureC", "OthersTemperatureC", "ThrottledPct",
                        "OthersThrottledPct", "ThrottleReasons"]


def f_sf(f, d1, d2):
    """P(F >= f) for Fisher's F with (d1, d2) degrees of freedom."""
    if not (d1 > 0 and d2 > 0) or math.isnan(f):
        return math.nan
    if f <= 0:
        return 1.0
    if math.isinf(f):
        return 0.0
    return stats._betainc(d2 / 2, d1 / 2, d2 / (d2 + d1 * f))


def holm(p):
    """Holm's step-down adjusted p-values, in the order given (NaN stays NaN)."""
    order = sorted((v, i) for i, v in enumerate(p) if not math.isnan(v))
    m = len(order)
    out = [math.nan] * len(p)
    running = 0.0
    for rank, (v, i) in enumerate(order):
        running = max(running, min(1.0, (m - rank) * v))
        out[i] = running
    return out


def _welch_moments(n1, m1, v1, n2, m2, v2):
    """Welch's t of sample 1 against sample 2 from counts, means and variances: (t, p)."""
    if n1 < 2 or n2 < 2:
        return math.nan, math.nan
    se2 = v1 / n1 + v2 / n2
    if se2 <= 0:
        return (0.0, 1.0) if m1 == m2 else (math.copysign(math.inf, m1 - m2), 0.0)
    t = (m1 - m2) / math.sqrt(se2)
    den = (v1 / n1) ** 2 / (n1 - 1) + (v2 / n2) ** 2 / (n2 - 1)
    df = se2 ** 2 / den if den > 0 else math.inf
    return t, stats.t_sf_two_sided(t, df)


def _codes(col):
    """(int32 codes, names) of a column: -1 for null."""
    import numpy as np
    import pandas as pd
    if not isinstance(col.dtype, pd.CategoricalDtype):
        col = col.astype("category")
    return (np.asarray(col.cat.codes, dtype=np.int32),
            [None if v is None else str(v) for v in col.cat.categories])


def _throttle_flags(col):
    """Per row: 1.0 when a slowdown reason was active, 0.0 when none, NaN when unknown."""
    import numpy as np
    cat = col.astype("category")
    per_cat = []
    for text in cat.cat.categories:
        names = stats.throttle_names(text)
        per_cat.append(math.nan if names is None else float(bool(SLOWDOWN & set(names))))
    codes = cat.cat.codes.to_numpy()
    table_ = np.array(per_cat + [math.nan], dtype=float)
    return table_[np.where(codes < 0, len(per_cat), codes)]


def compare(df, metric="gpu__time_duration.sum", alpha=0.01, min_diff_pct=1.0):
    """(groups, ranks): a dict per group (GROUP_COLUMNS) and per rank of a group
    (RANK_COLUMNS) of a load() DataFrame's rows of metric. Groups with fewer than two
    ranks of two runs each are left out."""
    import numpy as np
    import pandas as pd
    keep = np.asarray(df["Metric"] == metric, dtype=bool) & np.isfinite(
        df["Value"].to_numpy(dtype=float))
    if not keep.any():
        return [], []
    d = df if keep.all() else df.loc[keep]  # --by-rank reads one metric: no copy
    # Everything as integer codes (millions of rows: no Python object per row).
    codes, names = {}, {}
    for c in ("JobId", "Annotation", "Kernel", "Metric", "Session", "ThrottleReasons", "Host",
              "GPU", "Unit"):
        codes[c], names[c] = _codes(d[c])
    rank = d["Rank"].to_numpy(dtype=float)
    # A rank, or (no rank) -1 - the session's code.
    unit = np.where(np.isnan(rank), -1 - codes["Session"], np.nan_to_num(rank, nan=0))
    reason_flags = _throttle_flags(pd.Series(pd.Categorical.from_codes(
        codes["ThrottleReasons"], categories=names["ThrottleReasons"])))
    work = pd.DataFrame({
        "JobId": codes["JobId"], "Annotation": codes["Annotation"],
        "Kernel": codes["Kernel"], "Metric": codes["Metric"],
        "_unit": unit.astype(np.int64), "Value": d["Value"].to_numpy(dtype=float),
        "SMClock": d["SMClock"].to_numpy(dtype=float),
        "Temperature": d["Temperature"].to_numpy(dtype=float),
        "_throttled": reason_flags, "_reasons": codes["ThrottleReasons"],
        "Host": codes["Host"], "GPU": codes["GPU"],
        "Device": d["Device"].to_numpy(dtype=float), "Unit": codes["Unit"]})
    del d
    keys = GROUP + ["_unit"]
    g = work.groupby(keys, sort=False)
    per = g.agg(n=("Value", "size"), mean=("Value", "mean"), var=("Value", "var"),
                sm=("SMClock", "median"), temp=("Temperature", "mean"),
                thr=("_throttled", "mean"), host=("Host", "first"),
                gpu=("GPU", "first"), device=("Device", "first"),
                unit=("Unit", "first")).reset_index()
    # The reasons each rank's runs had: the distinct (rank, reasons) pairs, few.
    pairs = work.groupby(keys + ["_reasons"], sort=False).size().reset_index()
    seen = {}
    for row in pairs.itertuples(index=False):
        key = tuple(row[:len(keys)])
        r = row[len(keys)]
        found = stats.throttle_names(names["ThrottleReasons"][r]) if r >= 0 else None
        seen.setdefault(key, set()).update(found or ())
    per["reasons"] = [",".join(sorted(seen.get(tuple(k), ()))) for k in
                      per[keys].itertuples(index=False, name=None)]
    sessions = names["Session"]
    per["label"] = [int(u) if u >= 0 else sessions[-1 - u] for u in per["_unit"]]
    for c in ("JobId", "Annotation", "Kernel", "Metric"):
        per[c] = [names[c][i] if i >= 0 else "" for i in per[c]]
    per["host"] = [names["Host"][i] if i >= 0 else None for i in per["host"]]
    per["gpu"] = [names["GPU"][i] if i >= 0 else None for i in per["gpu"]]
    per["unit"] = [names["Unit"][i] if i >= 0 else None for i in per["unit"]]
    del work
    groups, ranks = [], []
    for key, sub in per.groupby(GROUP, sort=False, dropna=False):
        sub = sub[sub["n"] >= 2]
        k = len(sub)
        if k < 2:
            continue
        n = sub["n"].to_numpy(dtype=float)
        m = sub["mean"].to_numpy(dtype=float)
        v = sub["var"].to_numpy(dtype=float)
        N = n.sum()
        M = float((n * m).sum() / N)
        ssb = float((n * (m - M) ** 2).sum())
        ssw = float(((n - 1) * v).sum())
        msb, msw = ssb / (k - 1), ssw / (N - k) if N > k else math.nan
        F = msb / msw if msw > 0 else (math.inf if msb > 0 else math.nan)
        p_anova = f_sf(F, k - 1, N - k)
        n0 = (N - (n ** 2).sum() / N) / (k - 1)
        var_r = max(0.0, (msb - msw) / n0) if n0 > 0 and not math.isnan(msw) else math.nan
        scale = abs(M) if M else math.nan
        # Each rank against the others that do not stand out: a straggler among the others
        # would shift their mean and have the ordinary ranks called fast (swamping). So
        # the ranks that stand out are found again without those found, until none is added.
        out = np.zeros(k, dtype=bool)
        for _ in range(k):
            ps, diffs, others = [], [], []
            for j in range(k):
                rest = (np.arange(k) != j) & ~out
                if not rest.any():
                    rest = np.arange(k) != j
                no = n[rest].sum()
                mo = float((n[rest] * m[rest]).sum() / no)
                sso = float(((n[rest] - 1) * v[rest]).sum() +
                            (n[rest] * (m[rest] - mo) ** 2).sum())
                vo = sso / (no - 1) if no > 1 else math.nan
                _, p = _welch_moments(n[j], m[j], v[j], no, mo, vo)
                ps.append(p)
                diffs.append((m[j] - mo) / abs(mo) * 100 if mo else math.nan)
                others.append(rest)
            adj = holm(ps)
            # One at a time, the most significant first (as Rosner's generalised ESD).
            cand = [j for j in range(k) if not out[j] and adj[j] <= alpha
                    and abs(diffs[j]) >= min_diff_pct]
            if not cand:
                break
            out[min(cand, key=lambda j: (ps[j], -abs(diffs[j])))] = True
        out = [bool(x) for x in out]
        sm, temp, thr = (sub[c].to_numpy(dtype=float) for c in ("sm", "temp", "thr"))
        standing = []
        for j, row in enumerate(sub.itertuples(index=False)):
            rest = others[j]
            label = row.label
            r = dict(zip(GROUP, key))
            r.update(Rank=label, Host=row.host, GPU=row.gpu,
                     Device=None if math.isnan(row.device) else int(row.device),
                     Runs=int(row.n), Mean=float(row.mean), DiffPct=diffs[j], P=ps[j],
                     PHolm=adj[j], StandsOut=out[j], SMClockMHz=sm[j] / 1e6,
                     OthersSMClockMHz=_nanmedian(sm[rest]) / 1e6, TemperatureC=temp[j],
                     OthersTemperatureC=_nanmean(temp[rest]),
                     ThrottledPct=thr[j] * 100, OthersThrottledPct=_nanmean(thr[rest]) * 100,
                     ThrottleReasons=row.reasons)
            for c, val in r.items():  # numpy scalars as Python's, for the writers
                if isinstance(val, np.generic):
                    r[c] = val.item()
            ranks.append(r)
            if out[j]:
                standing.append(str(label))
        gr = dict(zip(GROUP, key))
        gr.update(Ranks=k, Runs=int(N), Mean=M, Unit=sub["unit"].iloc[0],
                  RankSDPct=math.sqrt(var_r) / scale * 100 if var_r == var_r else math.nan,
                  RunSDPct=math.sqrt(msw) / scale * 100 if msw == msw else math.nan,
                  ICC=var_r / (var_r + msw) if (var_r + msw) > 0 else math.nan,
                  F=F, P=p_anova, StandOut=",".join(standing))
        for c, val in gr.items():
            if isinstance(val, np.generic):
                gr[c] = val.item()
        groups.append(gr)
    return groups, ranks


def _nanmedian(x):
    import numpy as np
    x = x[~np.isnan(x)]
    return float(np.median(x)) if len(x) else math.nan


def _nanmean(x):
    import numpy as np
    x = x[~np.isnan(x)]
    return float(x.mean()) if len(x) else math.nan


def _load(files, metric, prog):
    from rangeprof.sources import load
    cols = ["Annotation", "Kernel", "Metric", "Value", "Unit", "Session", "Host", "JobId",
            "Rank", "GPU", "Device", "SMClock", "Temperature", "ThrottleReasons"]
    return load(files, columns=cols, filters=[("Metric", "==", metric)])


def report_main(args, out, prog):
    """rangeprof-report --by-rank FILES [--metric M] [--alpha A] [--csv|--json]."""
    from rangeprof.output import brief, said, write
    metrics = [x for v in args.metric or [] for x in v.split(",") if x]
    if len(metrics) > 1:
        print(f"{prog}: error: --by-rank compares one metric; --metric "
              f"{said(','.join(metrics))} names {len(metrics)}", file=sys.stderr)
        return 2
    metric = metrics[0] if metrics else "gpu__time_duration.sum"
    try:
        df = _load(args.files, metric, prog)
    except FileNotFoundError as e:
        print(f"{prog}: error: {brief(e)}", file=sys.stderr)
        return 2
    groups, ranks = compare(df, metric, args.alpha)
    if not groups:
        print(f"{prog}: error: --by-rank: no kernel of metric {said(metric)} was measured by "
              "two or more ranks (or processes) with two or more runs each", file=sys.stderr)
        return 1
    form = "csv" if args.csv else "json" if args.json else "text"
    if form != "text":
        write(ranks, RANK_COLUMNS, form, out, widths=dict(Kernel=40, Annotation=32))
        return 0
    write(groups, [c for c in GROUP_COLUMNS if c != "Metric"], "text", out,
          widths=dict(Kernel=40, Annotation=32, JobId=16))
    flagged = [r for r in ranks if r["StandsOut"]]
    print(file=out)
    if not flagged:
        print(f"No rank stands out (Welch t against the other ranks, Holm over each "
              f"kernel's ranks, alpha {args.alpha:g}, at least 1 % apart).", file=out)
        return 0
    print(f"Ranks that stand out (alpha {args.alpha:g}, Holm over each kernel's ranks), "
          "their GPU beside the other ranks':", file=out)
    write(flagged, ["Annotation", "Kernel", "Rank", "Host", "GPU", "Device", "Runs",
                    "DiffPct", "PHolm", "SMClockMHz", "OthersSMClockMHz", "TemperatureC",
                    "OthersTemperatureC", "ThrottledPct", "OthersThrottledPct",
                    "ThrottleReasons"], "text", out, widths=dict(Kernel=32, Annotation=24))
    return 0


def plot(files, output, metric="gpu__time_duration.sum", alpha=0.01, top=6):
    """One figure: per rank, each kernel's mean in % of the other ranks' (the top kernels
    by F; ranks that stand out ringed in red), then the rank's median SM clock and mean
    temperature (runs throttled marked). Returns output; ValueError when nothing to plot."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    df = _load(files, metric, "rangeprof-plot")
    groups, ranks = compare(df, metric, alpha)
    if not groups:
        raise ValueError(f"no kernel of metric {metric} was measured by two or more ranks "
                         "with two or more runs each")
    chosen = sorted(groups, key=lambda g: (-(g["F"] if g["F"] == g["F"] else -1)))[:top]
    fig, axes = plt.subplots(3, 1, figsize=(9, 8), sharex=True)
    per_rank = {}
    for r in ranks:
        per_rank.setdefault(str(r["Rank"]), r)
    xs = sorted(per_rank, key=lambda x: (0, int(x), "") if x.isdigit() else (1, 0, x))
    pos = {x: i for i, x in enumerate(xs)}
    for g in chosen:
        rows = sorted((r for r in ranks if all(r[c] == g[c] for c in GROUP)),
                      key=lambda r: pos[str(r["Rank"])])
        at = [pos[str(r["Rank"])] for r in rows]
        name = (g["Kernel"][:40] + (" [" + g["Annotation"][:24] + "]" if g["Annotation"] else ""))
        axes[0].plot(at, [100 + r["DiffPct"] for r in rows], marker="o", label=name)
        bad = [(a, 100 + r["DiffPct"]) for a, r in zip(at, rows) if r["StandsOut"]]
        if bad:
            axes[0].scatter(*zip(*bad), s=160, facecolors="none", edgecolors="red", zorder=3)
    axes[2].set_xticks(range(len(xs)))
    axes[2].set_xticklabels(xs, rotation=90 if len(xs) > 24 else 0,
                            fontsize=8 if len(xs) > 24 else 10)
    axes[0].axhline(100, color="gray", lw=0.8)
    axes[0].set_ylabel(f"{metric}\n% of the other ranks")
    axes[0].legend(fontsize=7)
    axes[1].bar(range(len(xs)), [per_rank[x]["SMClockMHz"] for x in xs], color="tab:blue")
    axes[1].set_ylabel("SM clock (MHz, median)")
    lo = min((per_rank[x]["SMClockMHz"] for x in xs if per_rank[x]["SMClockMHz"] ==
              per_rank[x]["SMClockMHz"]), default=0)
    if lo:
        axes[1].set_ylim(lo * 0.9, None)
    colors = ["tab:red" if per_rank[x]["ThrottledPct"] > 0 else "tab:orange" for x in xs]
    axes[2].bar(range(len(xs)), [per_rank[x]["TemperatureC"] for x in xs], color=colors)
    axes[2].set_ylabel("temperature (C, mean)\nred: throttled runs")
    axes[2].set_xlabel("rank")
    fig.suptitle(f"{metric} by rank: {len(groups)} kernel(s), "
                 f"{sum(r['StandsOut'] for r in ranks)} rank result(s) standing out")
    fig.tight_layout()
    fig.savefig(output, dpi=110)
    plt.close(fig)
    return output
