"""Matplotlib figures for experiment results (see :mod:`dphist.experiments.analysis`).

Every function returns a :class:`matplotlib.figure.Figure` built without
pyplot's global state (safe with the Agg backend in worker processes and
when saving files); in a notebook the figure displays inline.

* :func:`error_vs_epsilon` - one panel per dataset, log-log, the best few methods named and the rest
  grey; :func:`error_vs_epsilon_by_family` - one dataset, one panel per family of methods;
* :func:`error_vs_range_length` - Kellaris et al. (TKDE) Figures 15-18 (and ``_by_family``);
* :func:`error_vs_scale` - DPBench's scale-epsilon exchangeability check;
* :func:`skyline` - time vs error, dominated methods hollow (Kellaris et al. Sec. 7.2);
* :func:`skyline_by_family` - the same for one dataset, one panel per family of methods (e.g. per
  plugin) against the grey cloud of all the others: readable with dozens of presets;
* :func:`error_table` - a SORTaki-style table of mean errors on a colour (error) scale;
* :func:`regret` - DPBench regret per algorithm;
* :func:`dataset_shapes` - the histograms themselves (2-D datasets as heat maps);
* :func:`release_heatmap` - 2-D releases as heat maps with their groups outlined (:func:`group_outlines`);
* :func:`use_style` - the notebooks' one figure style (:data:`STYLE`): readable at the committed size;
* :func:`linear_bound` - the SVD lower bound on the per-query MSE of any data-independent linear
  mechanism, drawn as a dashed line in the error-against-epsilon figures (:data:`BOUND_CAPTION`).

Figures that put methods side by side (error against epsilon or range length,
skyline, error table, regret) draw one comparability class at a time
(:func:`dphist.experiments.analysis.comparable`): attributed releases by
default; ``unattributed=True`` draws the unattributed ones (scored against the
sorted truth) on their own.  Error bars are the 95% Student-t confidence intervals of the means
(:meth:`dphist.experiments.results.Results.aggregate`).
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from matplotlib.colors import LogNorm
from matplotlib.figure import Figure

from .errors import InvalidParameter
from .experiments import analysis
from .experiments.results import Results

_MARKERS = "osD^v<>pPhX*"

#: the figure style of the notebooks: 100 dpi and text no smaller than 8 points, so that a figure
#: stays readable at the size it is committed at (an inline PNG is shown at one pixel per dot)
STYLE = {"figure.dpi": 100, "savefig.dpi": 100, "font.size": 10, "axes.titlesize": 10, "axes.labelsize": 10,
         "xtick.labelsize": 9, "ytick.labelsize": 9, "legend.fontsize": 9, "legend.title_fontsize": 9,
         "figure.titlesize": 11}


def use_style() -> dict:
    """Apply :data:`STYLE` to matplotlib's defaults (``matplotlib.rcParams``); returns it.

    Call once at the top of a notebook, after ``%matplotlib inline`` (which sets its own dpi).
    """
    import matplotlib
    matplotlib.rcParams.update(STYLE)
    return dict(STYLE)


def _style(i: int) -> dict:
    return {"marker": _MARKERS[i % len(_MARKERS)], "color": f"C{i % 10}"}


def _grid(k: int, width: float = 4.0, height: float = 3.2, max_cols: int = 2, legend: bool = False,
          title_space: float = 0.0):
    # fixed margins instead of a layout engine: constrained layout costs seconds per figure
    cols = min(k, max_cols)
    rows = math.ceil(k / cols)
    extra = (1.8 if legend is True else 1.8 * legend) if legend else 0.0
    fig = Figure(figsize=(width * cols + extra, height * rows))
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    fig.subplots_adjust(left=0.75 / (width * cols + extra), right=1 - (0.25 + extra) / (width * cols + extra),
                        bottom=0.6 / (height * rows), top=1 - (0.45 + title_space) / (height * rows),
                        wspace=0.35, hspace=0.55)
    for ax in axes[k:]:
        ax.set_visible(False)
    return fig, axes[:k]


def _legend_columns(n_labels: int, n_panels: int, height: float = 3.2, max_cols: int = 2) -> int:
    rows = math.ceil(n_panels / min(n_panels, max_cols))
    return max(1, math.ceil(n_labels / max(8, int(height * rows * 5.5))))


def _finish(ax):
    ax.minorticks_off()   # log-axis minor ticks dominate drawing time and add little
    ax.grid(True, which="major", alpha=0.3)


def save(fig: Figure, path, dpi: int = 100) -> Path:
    """Write ``fig`` as PNG (Agg canvas; no display needed)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    FigureCanvasAgg(fig)
    path = Path(path)
    fig.savefig(path, dpi=dpi)
    return path


#: curves drawn in colour and named when a panel holds more methods; the others are grey
HIGHLIGHT = 8
#: a confidence interval reaching below zero is drawn down to this fraction of the mean (log axes)
CI_FLOOR = 0.01


def _interval(mean: float, low: float, high: float) -> tuple[float, float]:
    """Lengths below and above the mean of its confidence interval, as drawn on a log axis."""
    if not math.isfinite(high - low):   # one trial: no interval
        return 0.0, 0.0
    return mean - max(low, mean * CI_FLOOR), high - mean


#: the legend label of the SVD bound line
BOUND_LABEL = "lower bound, data-independent linear mechanisms (SVD)"
#: what the line is, for figure captions (the report, the explorer)
BOUND_CAPTION = (
    "The dashed black line is the SVD lower bound (Li and Miklau, ICDT 2013) on the expected per-query MSE of "
    "any data-independent linear mechanism (a fixed strategy measured with noise, then least squares) on this "
    "workload: (2 / eps^2) (s_1 + ... + s_n)^2 / (n m), with s_i the workload's singular values and m its "
    "number of queries. Under Gaussian noise (L2 sensitivity) it is the matrix mechanism's exact optimum "
    "when the optimal strategy's Gram root has a constant diagonal; under the Laplace noise dphist uses (L1 "
    "sensitivity, never below L2) it is still a lower bound, but a loose one: the best optimised strategies "
    "stay several times above it. Data-dependent methods are not bound by it and may fall below it.")


def linear_bound(workload: str, n: int, epsilon=1.0):
    """The SVD lower bound on the expected per-query MSE of any data-independent linear mechanism on
    ``workload`` (a 1-D range workload's name) over ``n`` bins at ``epsilon`` (a number or an array):
    ``(2 / eps^2) svd_bound / m`` (``dphist_hdmm.bounds``).  None when it has none: the ``hdmm``
    plugin is not installed, or the workload is not a 1-D range workload it can bound (e.g. a
    rectangle workload, or a domain beyond its dense eigendecomposition)."""
    per_unit = _bound_at_unit_epsilon(str(workload), int(n))
    if per_unit is None:
        return None
    eps = np.asarray(epsilon, dtype=float)
    out = per_unit / eps ** 2
    return float(out) if out.ndim == 0 else out


_BOUNDS: dict = {}


def _bound_at_unit_epsilon(workload: str, n: int):
    key = (workload, n)
    if key not in _BOUNDS:
        _BOUNDS[key] = _compute_bound(workload, n)
    return _BOUNDS[key]


def _compute_bound(workload: str, n: int):
    from importlib.util import find_spec

    from . import workloads as wl
    from .errors import DPHistError
    if find_spec("dphist_hdmm") is None:
        return None
    from dphist_hdmm.bounds import svd_bound
    try:
        w = wl.resolve(workload, n, "the bound's workload")
        return 2.0 * svd_bound(w, n) / len(w)
    except (DPHistError, MemoryError):
        return None


def bound_lines(results: Results, metric: str, workload: str, unattributed: bool) -> dict:
    """``{dataset: (epsilons, bound)}`` for the panels of an error-against-epsilon figure: the MSE
    metric, attributed releases, one domain size per dataset, and a workload with a bound."""
    if metric != "mse" or unattributed:
        return {}
    sel = analysis.comparable(results, unattributed).filter(metric=metric, workload=workload, reference="sample")
    out = {}
    for ds in sel.unique("dataset"):
        rows = sel.filter(dataset=ds)
        domains = rows.unique("domain")
        if len(domains) != 1:
            continue
        eps = np.geomspace(min(rows.unique("epsilon")), max(rows.unique("epsilon")), 24)
        line = linear_bound(workload, int(domains[0]), eps)
        if line is not None:
            out[ds] = (eps, line)
    return out


def _draw_bound(ax, line) -> None:
    if line is not None:
        ax.plot(*line, color="black", ls="--", lw=1.2, zorder=2, label=BOUND_LABEL)


def bound_at(results: Results, metric: str, workload: str, epsilon, unattributed: bool) -> dict:
    """``{dataset: bound}`` at one epsilon (a skyline's): the value of :func:`bound_lines`' line there,
    under the same conditions (MSE, attributed releases, one domain size per dataset, a bounded workload)."""
    if metric != "mse" or unattributed or epsilon is None:
        return {}
    sel = analysis.comparable(results, unattributed).filter(metric=metric, workload=workload, reference="sample")
    out = {}
    for ds in sel.unique("dataset"):
        domains = sel.filter(dataset=ds).unique("domain")
        if len(domains) == 1:
            value = linear_bound(workload, int(domains[0]), float(epsilon))
            if value is not None:
                out[ds] = float(np.asarray(value).reshape(-1)[0])
    return out


def _draw_level(ax, value) -> None:
    """The bound at a skyline's epsilon: a horizontal dashed line across the panel (named in the figure's title:
    a panel's texts are its methods' names)."""
    if value is not None:
        ax.axhline(value, color="black", ls="--", lw=1.0, zorder=1, label=BOUND_LABEL)


#: the skylines' title note when they draw the bound
LEVEL_NOTE = ";\ndashed: the SVD lower bound of data-independent linear mechanisms at this epsilon"


def _epsilon_curves(results: Results, metric: str, workload: str, unattributed: bool) -> dict[str, dict]:
    """``{dataset: {algorithm: (epsilons, means, below, above)}}`` with the 95% t intervals of the means."""
    stats = analysis.mean_errors(analysis.comparable(results, unattributed), metric, workload,
                                 by=("dataset", "algorithm", "epsilon"))
    points: dict = {}
    for (ds, alg, eps), v in stats.items():
        points.setdefault(ds, {}).setdefault(alg, []).append((eps, v["mean"], *_interval(v["mean"], v["ci_low"],
                                                                                           v["ci_high"])))
    return {ds: {alg: tuple(map(np.array, zip(*sorted(pts)))) for alg, pts in curves.items()}
            for ds, curves in points.items()}


def _range_curves(results: Results, metric: str, epsilon, unattributed: bool) -> dict[str, dict]:
    """``{dataset: {algorithm: (range lengths, means, below, above)}}`` from the ``ranges-<r>%`` workloads."""
    sel = analysis.comparable(results if epsilon is None else results.filter(epsilon=float(epsilon)), unattributed)
    out = {}
    for ds in sel.unique("dataset"):
        curves = analysis.range_length_curve(sel, metric, dataset=ds)
        out[ds] = {alg: tuple(map(np.array, zip(*[(r, m, *_interval(m, lo, hi)) for r, m, _, lo, hi in pts])))
                   for alg, pts in curves.items()}
    return {ds: c for ds, c in out.items() if c}


def _best(panels: dict[str, dict], k: int) -> list[str]:
    """The ``k`` methods with the smallest mean log-ratio to the best curve at each drawn point."""
    ratios: dict[str, list] = {}
    for curves in panels.values():
        best: dict = {}
        for x, m, *_ in curves.values():
            for xi, mi in zip(x.tolist(), m.tolist()):
                best[xi] = min(best.get(xi, math.inf), mi)
        for alg, (x, m, *_) in curves.items():
            ratios.setdefault(alg, []).extend(np.log(max(mi, 1e-300) / max(best[xi], 1e-300))
                                              for xi, mi in zip(x.tolist(), m.tolist()))
    return sorted(ratios, key=lambda a: (float(np.mean(ratios[a])), a.lower()))[:k]


def _draw_curves(ax, curves: dict, named: list[str], colour_of: dict) -> None:
    """Named methods in colour with their confidence intervals (error bars); the others thin grey lines."""
    grey = [np.column_stack([x, m]) for alg, (x, m, *_) in curves.items() if alg not in named]
    if grey:   # one collection: dozens of separate lines per panel cost seconds per figure
        from matplotlib.collections import LineCollection
        ax.add_collection(LineCollection(grey, colors="0.78", linewidths=0.8, zorder=1, label="_others"))
        ax.autoscale_view()
    for alg in named:
        if alg in curves:
            x, m, below, above = curves[alg]
            ax.errorbar(x, m, yerr=np.vstack([below, above]), label=alg, capsize=2.5, lw=1.4, ms=4.5, zorder=3,
                        **colour_of[alg])


def _grey_proxy(n_grey: int):
    from matplotlib.lines import Line2D
    return Line2D([], [], color="0.78", lw=0.8, label=f"{n_grey} other method{'s' if n_grey != 1 else ''}")


def _highlighted_figure(panels: dict[str, dict], highlight: int, algorithms, xlabel: str, ylabel: str,
                        title_suffix: str = "", bounds: dict | None = None) -> Figure:
    """One panel per dataset; at most ``highlight`` methods named (the best overall), the rest grey."""
    if not panels:
        raise InvalidParameter("no results to draw (for error against range length: no ranges-<r>% workload)")
    everyone = sorted({a for c in panels.values() for a in c}, key=str.lower)
    named = list(algorithms) if algorithms else (everyone if len(everyone) <= highlight else _best(panels, highlight))
    grey = [a for a in everyone if a not in named]
    colour_of = {a: _style(i) for i, a in enumerate(named)}
    two_lines = any("\n" in _wrap(ds + title_suffix) for ds in panels)
    fig, axes = _grid(len(panels), legend=_legend_columns(len(named) + bool(grey), len(panels)),
                      title_space=0.25 if two_lines else 0.0)
    bounds = bounds or {}
    for ax, (ds, curves) in zip(axes, panels.items()):
        _draw_curves(ax, curves, named, colour_of)
        _draw_bound(ax, bounds.get(ds))
        ax.set(xscale="log", yscale="log", title=_wrap(ds + title_suffix), xlabel=xlabel, ylabel=ylabel)
        _finish(ax)
    handles = [h for h in _legend_handles(axes, named + ([BOUND_LABEL] if bounds else []))] + \
        ([_grey_proxy(len(grey))] if grey else [])
    if handles:
        fig.legend(handles=handles, loc="center right", fontsize="small", frameon=False,
                   ncol=math.ceil(len(handles) / max(8, int(fig.get_figheight() * 4.5))))
    return fig


def _wrap(title: str, width: int = 36) -> str:
    """A long panel title on two lines, broken at its last "(" or ", " before ``width`` characters."""
    if len(title) <= width:
        return title
    cut = max(title.rfind("(", 0, width), title.rfind(", ", 0, width))
    return title if cut <= 0 else title[:cut].rstrip() + "\n" + title[cut:].lstrip(", ")


def _legend_handles(axes, named: list[str]) -> list:
    """One handle per named method, in ``named`` order, from whichever panel drew it."""
    found = {}
    for ax in axes:
        for h, label in zip(*ax.get_legend_handles_labels()):
            found.setdefault(label, h)
    return [found[a] for a in named if a in found]


def _family_figure(curves: dict, families: dict, xlabel: str, ylabel: str, title: str, bound=None) -> Figure:
    """One panel per family (``{family: [method, ...]}``): its methods named in colour with error
    bars, every other method a grey line; methods in no family form the panel "other"."""
    members = {fam: [a for a in algs if a in curves] for fam, algs in families.items()}
    listed = {a for algs in members.values() for a in algs}
    members["other"] = members.get("other", []) + sorted((a for a in curves if a not in listed), key=str.lower)
    members = {fam: algs for fam, algs in members.items() if algs}
    if not members:
        raise InvalidParameter("no results to draw")
    fig, axes = _grid(len(members), width=4.2, height=3.4, max_cols=3, title_space=0.3)
    for ax, (fam, algs) in zip(axes, members.items()):
        _draw_curves(ax, curves, algs, {a: _style(i) for i, a in enumerate(algs)})
        _draw_bound(ax, bound)
        ax.set(xscale="log", yscale="log", title=f"{fam} ({len(algs)})")
        ax.set_xlabel(xlabel, fontsize="small")
        ax.set_ylabel(ylabel, fontsize="small")
        ax.legend(fontsize="small", ncol=1 if len(algs) <= 6 else 2, frameon=False, handlelength=1.5,
                  columnspacing=0.8, labelspacing=0.25)
        _finish(ax)
    fig.suptitle(title, fontsize="medium")
    return fig


def _pick_dataset(panels: dict, dataset):
    if not panels:
        raise InvalidParameter("no results to draw")
    dataset = next(iter(panels)) if dataset is None else dataset
    if dataset not in panels:
        raise InvalidParameter(f"no results for dataset {dataset!r}; have {', '.join(panels)}")
    return dataset


def error_vs_epsilon(results: Results, metric: str = "mse", workload: str = "all-ranges",
                     datasets=None, algorithms=None, unattributed: bool = False, highlight: int = HIGHLIGHT,
                     bound: bool = True) -> Figure:
    """Mean error against epsilon, one panel per dataset; error bars are the 95% Student-t confidence
    intervals of the means.  With more than ``highlight`` methods only the ``highlight`` best (smallest
    mean log-ratio to the best at each point) are named in colour, the others are grey lines;
    ``algorithms`` names a chosen set instead.  :func:`error_vs_epsilon_by_family` draws every method
    named, one panel per family.  With the MSE metric, a dashed line in each panel is the SVD lower bound of
    data-independent linear mechanisms on the workload (:func:`linear_bound`, :data:`BOUND_CAPTION`),
    absent where there is none; ``bound=False`` leaves it out."""
    panels = _epsilon_curves(results, metric, workload, unattributed)
    panels = {ds: panels[ds] for ds in (datasets or sorted(panels)) if ds in panels}
    bounds = bound_lines(results, metric, workload, unattributed) if bound else {}
    return _highlighted_figure(panels, highlight, algorithms, "epsilon", f"{metric} ({workload})", bounds=bounds)


def error_vs_epsilon_by_family(results: Results, families: dict, metric: str = "mse", workload: str = "all-ranges",
                               dataset: str | None = None, unattributed: bool = False, bound: bool = True) -> Figure:
    """Mean error against epsilon on one dataset (default: the first), one panel per family
    (``{family: [algorithm, ...]}``, e.g. :func:`dphist.experiments.demo.preset_families`), the
    family's methods named with 95% confidence intervals against the grey lines of all the others;
    the SVD bound's dashed line as in :func:`error_vs_epsilon`."""
    panels = _epsilon_curves(results, metric, workload, unattributed)
    dataset = _pick_dataset(panels, dataset)
    line = bound_lines(results, metric, workload, unattributed).get(dataset) if bound else None
    return _family_figure(panels[dataset], families, "epsilon", f"{metric} ({workload})",
                          f"error against epsilon by family, {dataset} (grey: the other families; "
                          "bars: 95% confidence intervals" + ("; dashed: the SVD bound of data-independent "
                                                              "linear mechanisms" if line is not None else "")
                          + ")", bound=line)


def error_vs_range_length(results: Results, metric: str = "mse", epsilon=None, datasets=None,
                          unattributed: bool = False, highlight: int = HIGHLIGHT, algorithms=None) -> Figure:
    """Mean error against range length (% of the domain), from the ``ranges-<r>%`` workloads; error
    bars and the choice of named methods as in :func:`error_vs_epsilon`."""
    panels = _range_curves(results, metric, epsilon, unattributed)
    panels = {ds: panels[ds] for ds in (datasets or list(panels)) if ds in panels}
    return _highlighted_figure(panels, highlight, algorithms, "range length (% of domain)", metric,
                               f", eps={epsilon:g}" if epsilon is not None else "")


def error_vs_range_length_by_family(results: Results, families: dict, metric: str = "mse", epsilon=None,
                                    dataset: str | None = None, unattributed: bool = False) -> Figure:
    """Mean error against range length on one dataset, one panel per family (as
    :func:`error_vs_epsilon_by_family`)."""
    panels = _range_curves(results, metric, epsilon, unattributed)
    dataset = _pick_dataset(panels, dataset)
    return _family_figure(panels[dataset], families, "range length (% of domain)", metric,
                          f"error against range length by family, {dataset}"
                          + (f", eps={epsilon:g}" if epsilon is not None else "")
                          + " (grey: the other families; bars: 95% confidence intervals)")


def error_vs_scale(results: Results, algorithms=None, metric: str = "scaled-l1", workload: str = "prefix",
                   dataset: str | None = None) -> Figure:
    """Error against scale x epsilon, one line per epsilon: overlapping lines = exchangeable (DPBench)."""
    sel = results.filter(metric=metric, workload=workload, reference="sample")
    if dataset is not None:
        sel = sel.filter(dataset=dataset)
    algorithms = algorithms or sel.unique("algorithm")
    fig, axes = _grid(len(algorithms))
    for ax, alg in zip(axes, algorithms):
        stats = sel.filter(algorithm=alg).aggregate(["epsilon", "scale"])
        for i, eps in enumerate(sorted({k[0] for k in stats})):
            pts = sorted((k[1] * eps, v["mean"]) for k, v in stats.items() if k[0] == eps)
            x, m = map(np.array, zip(*pts))
            ax.plot(x, m, label=f"eps={eps:g}", lw=1.2, ms=4, **_style(i))
        checks = analysis.exchangeability(sel, alg, metric, workload)
        worst = max((c["spread"] for c in checks), default=float("nan"))
        ax.set(xscale="log", yscale="log", xlabel="scale x epsilon", ylabel=f"{metric} ({workload})",
               title=f"{alg}: worst spread {worst:.2f}x")
        _finish(ax)
        ax.legend(fontsize="small")
    return fig


def _label_sides(pts: dict) -> dict:
    """Per point, the offset and alignment of its name: names of points in the right quarter of the
    panel's log-time range go to the left of the point, so that they stay inside the panel."""
    logs = {name: np.log10(max(t, 1e-12)) for name, (t, _) in pts.items()}
    lo, hi = min(logs.values(), default=0.0), max(logs.values(), default=0.0)
    cut = lo + 0.75 * (hi - lo) if hi > lo else np.inf
    return {name: ((-3, "right") if v > cut else (3, "left")) for name, v in logs.items()}


def _error_intervals(sel: Results, metric: str, workload: str, unattributed: bool, dataset: str) -> dict:
    """Per method on one dataset, the lengths below and above its mean error of the 95% t interval."""
    stats = analysis.mean_errors(analysis.comparable(sel.filter(dataset=dataset), unattributed), metric, workload,
                                 by=("algorithm",))
    return {a: _interval(v["mean"], v["ci_low"], v["ci_high"]) for (a,), v in stats.items()}


def skyline(results: Results, metric: str = "mse", workload: str = "all-ranges", epsilon=None,
            datasets=None, unattributed: bool = False, bound: bool = True) -> Figure:
    """Mean run time vs mean error per method; skyline methods filled and named, dominated ones hollow.
    With the MSE metric at one epsilon, a dashed horizontal line is the SVD lower bound of data-independent
    linear mechanisms there (:func:`bound_at`, :data:`BOUND_CAPTION`); ``bound=False`` leaves it out."""
    sel = results if epsilon is None else results.filter(epsilon=float(epsilon))
    datasets = datasets or sel.unique("dataset")
    levels = bound_at(results, metric, workload, epsilon, unattributed) if bound else {}
    fig, axes = _grid(len(datasets), width=4.4, height=3.6, title_space=0.55)
    for ax, ds in zip(axes, datasets):
        pts = analysis.time_error_points(sel, metric, workload, unattributed=unattributed, dataset=ds)
        on = analysis.skyline(pts)
        sides = _label_sides(pts)
        bars = _error_intervals(sel, metric, workload, unattributed, ds)
        for name, (t, e) in pts.items():
            dx, side = sides[name]
            ax.errorbar(t, e, yerr=np.array(bars[name])[:, None], fmt="none", ecolor="C3" if on[name] else "0.6",
                        elinewidth=0.8, capsize=2, zorder=2)
            if on[name]:
                ax.scatter(t, e, s=36, color="C3", zorder=3)
                ax.annotate(name, (t, e), fontsize=8, fontweight="bold", xytext=(dx, 3), textcoords="offset points",
                            ha=side)
            else:
                ax.scatter(t, e, s=30, facecolors="none", edgecolors="0.5", zorder=2)
                ax.annotate(name, (t, e), fontsize=8, color="0.45", xytext=(dx, -8), textcoords="offset points",
                            ha=side)
        front = sorted(pts[n] for n in pts if on[n])
        if front:
            ax.step(*zip(*front), where="post", color="C3", lw=0.8, alpha=0.6)
        _draw_level(ax, levels.get(ds))
        ax.set(xscale="log", yscale="log", xlabel="time per run (s)", ylabel=f"{metric} ({workload})",
               title=_wrap(ds + (f", eps={epsilon:g}" if epsilon is not None else "")))
        _finish(ax)
    fig.suptitle("time-error skyline (filled: on the skyline; hollow: dominated; bars: 95% confidence intervals "
                 "of the mean errors" + (LEVEL_NOTE if levels else "") + ")", fontsize="medium")
    return fig


def skyline_by_family(results: Results, families: dict, metric: str = "mse", workload: str = "all-ranges",
                      epsilon=None, dataset: str | None = None, unattributed: bool = False,
                      bound: bool = True) -> Figure:
    """One dataset's time-error skyline, one panel per family (``{family: [algorithm, ...]}``):
    the family's methods named and coloured (filled when on the skyline of ALL methods), every other
    method a grey dot, the overall skyline as a line.  Methods in no family form the panel "other".
    The SVD bound's dashed line as in :func:`skyline`."""
    sel = results if epsilon is None else results.filter(epsilon=float(epsilon))
    datasets = sel.unique("dataset")
    if not datasets:
        raise InvalidParameter("no results to draw")
    dataset = datasets[0] if dataset is None else dataset
    if dataset not in datasets:
        raise InvalidParameter(f"no results for dataset {dataset!r}; have {', '.join(datasets)}")
    pts = analysis.time_error_points(sel, metric, workload, unattributed=unattributed, dataset=dataset)
    on = analysis.skyline(pts)
    members = {fam: [a for a in algs if a in pts] for fam, algs in families.items()}
    listed = {a for algs in members.values() for a in algs}
    members["other"] = members.get("other", []) + sorted(a for a in pts if a not in listed)
    members = {fam: algs for fam, algs in members.items() if algs}
    level = bound_at(results, metric, workload, epsilon, unattributed).get(dataset) if bound else None
    fig, axes = _grid(len(members), width=3.6, height=3.0, max_cols=4, title_space=0.3 if level is None else 0.5)
    times = np.array([p[0] for p in pts.values()])
    errors = np.array([p[1] for p in pts.values()])
    front = sorted(pts[n] for n in pts if on[n])
    sides = _label_sides(pts)
    bars = _error_intervals(sel, metric, workload, unattributed, dataset)
    for ax, (fam, algs) in zip(axes, members.items()):
        ax.scatter(times, errors, s=8, color="0.82", zorder=1)
        ax.step(*zip(*front), where="post", color="C3", lw=0.8, alpha=0.5, zorder=2)
        _draw_level(ax, level)
        for i, name in enumerate(algs):
            t, e = pts[name]
            colour = f"C{i % 10}"
            ax.errorbar(t, e, yerr=np.array(bars[name])[:, None], fmt="none", ecolor=colour, elinewidth=0.8,
                        capsize=2, zorder=2)
            ax.scatter(t, e, s=30, zorder=3, color=colour if on[name] else "none", edgecolors=colour)
            dx, side = sides[name]
            ax.annotate(name, (t, e), fontsize=8, color=colour, xytext=(dx, 3),
                        textcoords="offset points", ha=side, fontweight="bold" if on[name] else "normal")
        # zoom on the family: from the best error of all to a little above the family's worst
        ax.set(xscale="log", yscale="log", title=fam,
               ylim=(min(errors.min(), level or np.inf) / 2, max(pts[a][1] for a in algs) * 4),
               xlim=(times.min() / 2, times.max() * 2))
        ax.set_xlabel("time per run (s)", fontsize="small")
        ax.set_ylabel(f"{metric} ({workload})", fontsize="small")
        _finish(ax)
    fig.suptitle(f"time-error skyline by family, {dataset}" + (f", eps={epsilon:g}" if epsilon is not None else "")
                 + " (filled: on the skyline of all methods; grey: the other families"
                 + (LEVEL_NOTE if level is not None else "") + ")", fontsize="medium")
    return fig


def error_table_data(results: Results, metric: str, workload: str, epsilon,
                     unattributed: bool = False) -> tuple[list, list, np.ndarray]:
    """Algorithms, datasets and the mean-error matrix of one comparability class at one epsilon."""
    means = analysis.mean_errors(analysis.comparable(results.filter(epsilon=float(epsilon)), unattributed),
                                 metric, workload, by=("algorithm", "dataset"))
    algs = sorted({k[0] for k in means}, key=str.lower)
    dss = sorted({k[1] for k in means})
    table = np.full((len(algs), len(dss)), np.nan)
    for (a, d), v in means.items():
        table[algs.index(a), dss.index(d)] = v["mean"]
    return algs, dss, table


def error_table(results: Results, metric: str = "mse", workload: str = "all-ranges", epsilon: float = 0.1,
                unattributed: bool = False) -> Figure:
    """SORTaki-style table: algorithms x datasets, mean error as text, cells coloured by error
    relative to the best in the column (log scale: 1 = best)."""
    algs, dss, table = error_table_data(results, metric, workload, epsilon, unattributed)
    rel = table / np.nanmin(table, axis=0, keepdims=True)
    w, h = 2.6 + 1.3 * len(dss), 1.4 + 0.22 * len(algs)
    fig = Figure(figsize=(w, h))
    ax = fig.subplots()
    fig.subplots_adjust(left=1.3 / w, right=1 - 1.3 / w, bottom=0.9 / h, top=1 - 0.4 / h)
    hi = max(10.0, float(np.nanmax(rel))) if np.isfinite(rel).any() else 10.0
    im = ax.imshow(np.where(np.isfinite(rel), rel, np.nan), cmap="RdYlGn_r", norm=LogNorm(1, hi), aspect="auto")
    for i in range(len(algs)):
        for j in range(len(dss)):
            if np.isfinite(table[i, j]):
                ax.text(j, i, f"{table[i, j]:.3g}", ha="center", va="center", fontsize=8)
    ax.set_xticks(range(len(dss)), dss, rotation=20, ha="right", fontsize=8)
    ax.set_yticks(range(len(algs)), algs, fontsize=8)
    ax.set_title(f"mean {metric} on {workload}, eps={epsilon:g}", fontsize="medium")
    fig.colorbar(im, ax=ax, label="error / best in column")
    return fig


def regret(results: Results, metric: str = "mse", workload: str = "all-ranges", unattributed: bool = False) -> Figure:
    """Mean regret per algorithm (bars) with the worst setting marked (DPBench), within one comparability class."""
    reg = analysis.regret(results, metric, workload, unattributed=unattributed)
    order = sorted(reg, key=lambda a: reg[a]["mean"])
    h = 1.2 + 0.22 * len(order)
    fig = Figure(figsize=(6.5, h))
    ax = fig.subplots()
    fig.subplots_adjust(left=0.22, right=0.97, bottom=0.75 / h, top=1 - 0.2 / h)
    y = np.arange(len(order))
    ax.barh(y, [reg[a]["mean"] for a in order], color="C0", alpha=0.7, label="mean over settings")
    ax.scatter([reg[a]["max"] for a in order], y, color="C3", marker="|", s=120, label="worst setting")
    ax.set_yticks(y, order, fontsize=8)
    ax.invert_yaxis()
    ax.set(xscale="log", xlabel=f"regret: {metric} / best {metric} in the setting ({workload})")
    ax.axvline(1, color="k", lw=0.8)
    ax.legend(fontsize="x-small", loc="upper right")
    ax.minorticks_off()
    return fig


def dataset_shapes(datasets, log: bool = True) -> Figure:
    """One panel per :class:`~dphist.datasets.Dataset`: counts against bin index."""
    fig, axes = _grid(len(datasets), width=4.2, height=2.6, max_cols=3)
    for ax, ds in zip(axes, datasets):
        if np.ndim(ds.counts) == 2:
            _heat(ax, ds.counts, log)
            ax.set(title=f"{ds.name} ({'x'.join(map(str, ds.counts.shape))}, scale={ds.scale:,})")
            ax.title.set_fontsize(8)
            continue
        ax.plot(np.arange(ds.n), ds.counts, lw=0.6, color="C0")
        if log:
            ax.set_yscale("symlog", linthresh=1)
        ax.set(title=f"{ds.name} (n={ds.n}, scale={ds.scale:,})", xlabel="bin", ylabel="count")
        ax.title.set_fontsize(8)
        ax.minorticks_off()
    return fig


def release_bands(release, level: float = 0.95, method: str = "chebyshev"):
    """``(low, high, label)`` per bin from the release's stated error, or None with the reason.

    ``method`` ``"chebyshev"`` (guaranteed, ``sd / sqrt(1 - level)``) or ``"normal"`` (``z sd``, an
    approximation); the label names the method and the statement's kind (``noise only, bias
    unknown`` for a data-chosen partition, ``before post-processing`` after one)."""
    from .stated_error import check_level
    level = check_level(level)
    if method not in ("chebyshev", "normal"):
        raise InvalidParameter(f"a band method is 'chebyshev' or 'normal', got {method!r}")
    if release.stated is None:
        return None, release.stated_reason
    sd = np.sqrt(release.bin_variances())
    if method == "normal":
        from statistics import NormalDist
        half = NormalDist().inv_cdf(0.5 + level / 2.0) * sd
    else:
        half = sd / math.sqrt(1.0 - level)
    kind = {"exact": "exact variance", "noise-only": "noise only, bias unknown",
            "before-postprocessing": "before post-processing"}.get(release.stated.kind, release.stated.kind)
    label = f"{level:.0%} band ({'Chebyshev' if method == 'chebyshev' else 'normal approx.'}; {kind})"
    return (release.estimate - half, release.estimate + half, label), ""


def release(rel, truth=None, level: float = 0.95, method: str = "chebyshev", title: str | None = None) -> Figure:
    """The released histogram with a per-bin error band from its stated error
    (:func:`release_bands`; none, and the reason in the title, when the release states no error),
    and the true counts when given (research use only: never publish a figure of the truth)."""
    bands, reason = release_bands(rel, level, method)
    fig, (ax,) = _grid(1, width=7.0, height=3.0)
    x = np.arange(rel.estimate.size)
    if bands is not None:
        ax.fill_between(x, bands[0], bands[1], step="mid", color="C0", alpha=0.25, lw=0, label=bands[2])
    ax.step(x, rel.estimate, where="mid", color="C0", lw=1.0, label="release")
    if truth is not None:
        ax.step(x, np.asarray(truth, dtype=float), where="mid", color="k", lw=0.8, alpha=0.7, label="true counts")
    name = rel.spec.get("name", "release")
    ax.set(xlabel="bin", ylabel="count",
           title=title or (f"{name}, eps = {rel.epsilon:g}" + ("" if bands is not None else f" (no band: {reason})")))
    ax.legend(loc="upper right")
    _finish(ax)
    return fig


#: groups are outlined only when a release has at most this many (beyond, outlines hide the data)
MAX_OUTLINED_GROUPS = 4096


def _edge_runs(edges: np.ndarray):
    """Maximal runs of True along the last axis of a boolean 2-D array: (row, first, last) index arrays."""
    padded = np.zeros((edges.shape[0], edges.shape[1] + 2), dtype=np.int8)
    padded[:, 1:-1] = edges
    step = np.diff(padded, axis=1)
    r0, c0 = np.nonzero(step == 1)          # a run starts at c0 (row-major order: runs in order)
    _, c1 = np.nonzero(step == -1)          # and ends before c1, in the same order
    return r0, c0, c1 - 1


def group_outlines(labels) -> np.ndarray:
    """Segments ``(k, 2, 2)`` (x, y in image coordinates: column, row) along the edges between
    neighbouring cells of different groups of a 2-D label grid, each maximal straight run of such
    edges one segment (vectorised; the same lines as one segment per cell edge, several times fewer
    segments for the renderer to stroke)."""
    lab = np.asarray(labels)
    if lab.ndim != 2:
        raise InvalidParameter(f"group outlines need a 2-D grid of group labels, got shape {lab.shape}")
    r, c0, c1 = _edge_runs(lab[1:, :] != lab[:-1, :])          # edges below cells (r, c0..c1)
    horizontal = np.stack([np.stack([c0 - 0.5, r + 0.5], 1), np.stack([c1 + 0.5, r + 0.5], 1)], 1)
    c, r0, r1 = _edge_runs((lab[:, 1:] != lab[:, :-1]).T)      # edges right of cells (r0..r1, c)
    vertical = np.stack([np.stack([c + 0.5, r0 - 0.5], 1), np.stack([c + 0.5, r1 + 0.5], 1)], 1)
    return np.concatenate([horizontal, vertical]).astype(float)


def heat_norm(top: float):
    """The heat maps' symmetric log colour scale from ``-top`` to ``top`` (linear within 1 count of 0)."""
    from matplotlib.colors import SymLogNorm
    return SymLogNorm(linthresh=1.0, vmin=-top, vmax=top)


def _heat(ax, grid, log: bool, vmax=None):
    g = np.asarray(grid, dtype=float)
    top = float(vmax if vmax is not None else max(np.abs(g).max(), 1.0))
    norm = heat_norm(top) if log else None
    image = ax.imshow(g, cmap="RdBu_r" if log else "viridis", norm=norm, interpolation="nearest",
                      **({} if log else {"vmin": min(g.min(), 0.0), "vmax": top}))
    ax.set(xlabel="column", ylabel="row")
    return image


def release_heatmap(releases, truth=None, titles=None, outline: bool = True, log: bool = True) -> Figure:
    """2-D releases (:class:`~dphist.Release` with a 2-D ``shape``) as heat maps, one panel each
    (the true grid first when ``truth`` is given), on one colour scale (symmetric log by default:
    negative noisy cells show blue), the partition's groups outlined in black when a release has
    at most :data:`MAX_OUTLINED_GROUPS` groups (the title says when they are not)."""
    items = list(releases) if isinstance(releases, (list, tuple)) else [releases]
    for rel in items:
        if len(getattr(rel, "shape", ())) != 2:
            raise InvalidParameter(f"release_heatmap draws 2-D releases; got shape {getattr(rel, 'shape', None)}")
    panels = ([("truth", np.asarray(truth), None)] if truth is not None else []) + [
        (t, rel.grid, rel) for t, rel in zip(titles or [rel.spec.get("name", "release") for rel in items], items)]
    top = max(max(float(np.abs(g).max()) for _, g, _ in panels), 1.0)
    fig, axes = _grid(len(panels), width=3.6, height=3.4, max_cols=3)
    for ax, (title, grid, rel) in zip(axes, panels):
        image, note = heat_panel(ax, grid, rel if outline else None, log, top)
        ax.set_title(_wrap(f"{title}{note}", 40))
    fig.colorbar(image, ax=list(axes), shrink=0.8, label="count")
    return fig


def heat_panel(ax, grid, release=None, log: bool = True, vmax=None):
    """One heat map of ``grid`` on ``ax`` (symmetric log scale up to ``vmax`` by default), ``release``'s
    groups outlined in black when it has at most :data:`MAX_OUTLINED_GROUPS`; returns the image and a
    title suffix saying how many groups (and when they are not outlined).  :func:`release_heatmap` and
    the explorer's grid view draw with it."""
    image = _heat(ax, grid, log, vmax)
    return image, outline_groups(ax, release) if release is not None else ""


def outline_groups(ax, release) -> str:
    """``release``'s groups outlined in black on ``ax`` (one ``LineCollection``, labelled "groups") when it
    has at most :data:`MAX_OUTLINED_GROUPS`; returns the title suffix saying how many groups."""
    from matplotlib.collections import LineCollection
    groups = release.partition.n_groups
    if groups > MAX_OUTLINED_GROUPS:
        return f" ({groups} groups, not outlined)"
    ax.add_collection(LineCollection(group_outlines(release.partition.labels().reshape(release.shape)),
                                     colors="black", linewidths=0.6, label="groups"))
    return f" ({groups} groups)"
