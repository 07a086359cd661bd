"""rangeprof/_plot.py - the figure of rangeprof.analyze.plot, from an analyze.kernel
DataFrame: one tick per configuration, one line (or bar group) per annotation - per
kernel where an annotation has several -, 95 % CI error bars, optional panels by
parameter, Avg/Geomean bars and value labels, as Nsight Python's plot lays them out.
Draws on a matplotlib Figure of its own (no pyplot state): a notebook's backend is left
as it is. matplotlib is imported here only.

panels and draw_panel are the one drawing of a sweep: rangeprof-plot sweep (plots.py)
draws its panels with them too, its layout (x at its value, matplotlib's colors, x values
sorted) given as their arguments."""
import math
from collections import OrderedDict

from rangeprof._results import OWN_COLUMNS, geomean

MISSING = "rangeprof.analyze.plot needs matplotlib: pip install matplotlib"
COLORS = ["#76B900", "#0070C5", "#5C1682", "#890C57", "#FAC200", "#008564", "#FF5733",
          "#C70039", "#900C3F", "#581845", "#1F618D", "#28B463", "#F39C12", "#D35400"]


def require_matplotlib():
    try:
        import matplotlib  # noqa: F401
        from matplotlib.figure import Figure  # noqa: F401
    except ImportError:
        raise ImportError(MISSING) from None


def legal_metric(df, metric):
    """The metric to plot: the one given, which must be in the results, or the only one."""
    found = list(OrderedDict.fromkeys(df["Metric"]))
    if metric is None:
        if len(found) > 1:
            raise ValueError(f"Cannot visualize multiple metrics ({len(found)} > 1) with the "
                             "@nsight.analyze.plot decorator. Please specify a metric to plot. "
                             f"The metrics found are: {found}")
        if not found:
            raise ValueError("No metrics found in the profile results. Please ensure that the "
                             "profiler is configured correctly.")
        return found[0]
    if metric not in found:
        raise ValueError(f"Metric '{metric}' not found in the profile results. Please check the "
                         f"metric name and try again. The metrics found are: {found}.")
    return metric


def _finite(x):
    try:
        return x is not None and math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


def _series_labels(df, variant_fields, variant_annotations):
    """A label per row: its annotation; with the kernel where the annotation has several
    kernel rows for one config; with variant fields where asked."""
    params = list(df.columns[2:df.columns.get_loc("AvgValue")])
    multi = set()
    for (ann, *_), g in df.groupby(["Annotation"] + params, sort=False, dropna=False):
        if len(g) > 1:
            multi.add(ann)
    labels = []
    for _, row in df.iterrows():
        label = str(row["Annotation"])
        if row["Annotation"] in multi:
            from rangeprof.names import short_kernel
            idx = row.get("KernelIndex")
            kernel = short_kernel(row["Kernel"])
            kernel = kernel if len(kernel) <= 48 else kernel[:47] + "\u2026"
            label += (f" [{int(idx)}]" if _finite(idx) else "") + f" {kernel}"
        if variant_fields and variant_annotations and row["Annotation"] in variant_annotations:
            label += " " + ", ".join(f"{k}={row[k]}" for k in variant_fields)
        labels.append(label)
    return labels


def panels(items, row_fields, col_fields):
    """(row values, column values, cells) of a grid of panels: the distinct tuples of
    row_fields and of col_fields over items (dicts), in first-appearance order ([()]
    without fields), and cells[(row value, column value)], the items of each panel in
    their order."""
    cells = OrderedDict()
    for it in items:
        key = (tuple(it.get(f) for f in row_fields), tuple(it.get(f) for f in col_fields))
        cells.setdefault(key, []).append(it)
    rows = list(OrderedDict.fromkeys(r for r, _ in cells)) or [()]
    cols = list(OrderedDict.fromkeys(c for _, c in cells)) or [()]
    return rows, cols, cells


def draw_panel(ax, series, kind="line", x_values=None, order=None, numeric_x=False,
               colors=None, error_bars=True, annotate_points=False, aggregates=(),
               tick_style=None):
    """Draws one panel of a sweep on ax, for analyze.plot and rangeprof-plot sweep alike.
    series: [(label, [(x, mean, CI95 lower, CI95 upper), ...]), ...], one line with 95 %
    CI bars each (error_bars; a bound that is not finite gives none on its side), or
    bars side by side per x value (kind "bar"). Where x is numeric_x and kind is "line",
    x is placed at its value; else at its index among x_values (default: the series' x
    values in first-appearance order, or sorted by the key order). aggregates ("Avg",
    "Geomean") each add a bar per series beyond the x values, past a dashed line.
    colors: the series' colors in turn (None: matplotlib's). annotate_points labels
    each value. tick_style: keywords for the tick labels. Returns the tick labels, or
    None where x is placed at its value."""
    if x_values is None:
        x_values = list(OrderedDict.fromkeys(p[0] for _, pts in series for p in pts))
        if order is not None:
            x_values.sort(key=order)
    at_value = numeric_x and kind != "bar"
    index = {x: i for i, x in enumerate(x_values)}
    width = 0.8 / max(len(series), 1)
    for k, (label, pts) in enumerate(series):
        style = {"color": colors[k % len(colors)]} if colors else {}
        offset = (k - (len(series) - 1) / 2) * width
        xs = [p[0] if at_value else index[p[0]] for p in pts]
        ys = [p[1] for p in pts]
        err = None
        if error_bars and pts:
            err = [[y - lo if _finite(lo) else 0 for y, (_, _, lo, _) in zip(ys, pts)],
                   [hi - y if _finite(hi) else 0 for y, (_, _, _, hi) in zip(ys, pts)]]
        if kind == "bar":
            xs = [x + offset for x in xs]
            ax.bar(xs, ys, width=width, yerr=err, capsize=3, label=label, **style)
        else:
            ax.errorbar(xs, ys, yerr=err, marker="o", capsize=3, label=label, **style)
        if annotate_points:
            for x, y in zip(xs, ys):
                if _finite(y):
                    ax.annotate(f"{y:.2f}", (x, y), textcoords="offset points",
                                xytext=(0, 5), ha="center", fontsize=8, **style)
        finite = [y for y in ys if _finite(y)]
        for e, what in enumerate(aggregates if finite else ()):
            value = (sum(finite) / len(finite) if what == "Avg"
                     else geomean(float(y) for y in finite))
            if not _finite(value):
                continue
            x = len(x_values) + e + offset
            ax.bar([x], [value], width=width, zorder=3, **style)
            ax.annotate(f"{value:.2f}", (x, value), textcoords="offset points",
                        xytext=(0, 5), ha="center", fontsize=8, fontweight="bold", **style)
    if aggregates:
        ax.axvline(len(x_values) - 0.5, color="black", linestyle="dashed", linewidth=1)
    if at_value:
        return None
    ticks = [str(x) for x in x_values] + list(aggregates)
    ax.set_xticks(range(len(ticks)))
    ax.set_xticklabels(ticks, **(tick_style or {}))
    return ticks


def visualize(df, metric=None, filename="plot.png", title="", ylabel=None,
              annotate_points=False, show_aggregate=None, plot_type="line", plot_width=6,
              plot_height=4, row_panels=None, col_panels=None, x_keys=None, print_data=False,
              variant_fields=None, variant_annotations=None, plot_callback=None):
    """Saves the plot of one metric of df to filename; returns the rows plotted."""
    require_matplotlib()
    from matplotlib.figure import Figure

    metric = legal_metric(df, metric)
    data = df[df["Metric"] == metric].copy()
    params = list(df.columns[2:df.columns.get_loc("AvgValue")])
    row_panels, col_panels = list(row_panels or []), list(col_panels or [])
    variant_fields = list(variant_fields or [])
    for field in row_panels + col_panels + variant_fields + list(x_keys or []):
        if field not in params:
            raise ValueError(f"Field '{field}' is not a parameter of the decorated function; "
                             f"its parameters: {params}")
    used = set(row_panels) | set(col_panels) | (set(variant_fields) if variant_annotations else set())
    if x_keys:
        overlap = used & set(x_keys)
        if overlap:
            raise ValueError("x_keys cannot contain fields used in row_panels, col_panels, or "
                             f"variant_fields: {overlap}")
        config_fields = list(x_keys)
    else:
        config_fields = [p for p in params if p not in used]
    data["Series"] = _series_labels(data, variant_fields, variant_annotations)
    data["Configuration"] = [", ".join(f"{f}={row[f]}" for f in config_fields)
                             for _, row in data.iterrows()]

    rows, cols, cells = panels(data.to_dict("records"), row_panels, col_panels)
    fig = Figure(figsize=(max(plot_width * len(cols), 8), max(plot_height * len(rows), 6)),
                 constrained_layout=True)
    axes = fig.subplots(len(rows), len(cols), squeeze=False)
    normalized = [v for v in OrderedDict.fromkeys(data.get("Normalized", [])) if v is not False]
    runs = int(data["NumRuns"].max()) if len(data) else 0
    label = ylabel or (f"{metric}" + (f" relative to {normalized[0]}" if normalized else ""))
    extra = [name for name, on in (("Avg", show_aggregate == "avg"),
                                   ("Geomean", show_aggregate == "geomean")) if on]
    for i, rv in enumerate(rows):
        for j, cv in enumerate(cols):
            ax = axes[i][j]
            panel = cells.get((rv, cv), [])
            configs = list(OrderedDict.fromkeys(r["Configuration"] for r in panel))
            series = [(name, [(r["Configuration"], r["AvgValue"], r["CI95_Lower"],
                               r["CI95_Upper"]) for r in panel if r["Series"] == name])
                      for name in OrderedDict.fromkeys(r["Series"] for r in panel)]
            draw_panel(ax, series, plot_type, x_values=configs, colors=COLORS,
                       error_bars=not normalized, annotate_points=annotate_points,
                       aggregates=extra,
                       tick_style=dict(rotation=45, ha="right", fontsize=9))
            ax.set_ylim(bottom=0)
            ax.grid(True, linestyle="--", alpha=0.7)
            ax.set_axisbelow(True)
            if j == 0:
                ax.set_ylabel(label if ylabel else f"{label} (avg: {runs} runs)")
            panel_title = "\n".join([f"{f}={v}" for f, v in zip(row_panels, rv)]
                                    + [f"{f}={v}" for f, v in zip(col_panels, cv)])
            ax.set_title(panel_title, fontsize=11)
            if i < len(rows) - 1:
                ax.set_xticklabels([])
            if series:
                ax.legend(title="Annotation", loc="best", fontsize=9, title_fontsize=10)
    gpus = [g for g in OrderedDict.fromkeys(data["GPU"]) if isinstance(g, str)]
    hosts = [h for h in OrderedDict.fromkeys(data["Host"]) if isinstance(h, str)]
    fig.suptitle(f"{title}\n{', '.join(gpus[:1] + hosts[:1])}", fontsize=14, fontweight="bold")
    if plot_callback is not None:
        plot_callback(fig)
    fig.savefig(filename, bbox_inches="tight")
    if print_data:
        # What Nsight Python prints: its columns, the Configuration it adds, AvgValue to four
        # decimals. KernelIndex (added by analyze's frame only to tell several kernels of one
        # annotation apart in the legend) is rangeprof's, so it is not shown.
        shown = data.drop(columns=["Series"] + [c for c in OWN_COLUMNS if c in data.columns])
        shown["AvgValue"] = shown["AvgValue"].map("{:.4f}".format)
        print("Aggregated Data (Average value and Number of Runs):")
        print(shown.to_string(index=False))
    return data
