"""Matplotlib figures for experiment results (see :mod:`dphist.experiments.analysis`).

Every function returns a :class:`matplotlib.figure.Figure` built without
pyplot's global state (safe with the Agg backend in worker processes and
when saving files); in a notebook the figure displays inline.

* :func:`error_vs_epsilon` - one panel per dataset, log-log;
* :func:`error_vs_range_length` - Kellaris et al. (TKDE) Figures 15-18;
* :func:`error_vs_scale` - DPBench's scale-epsilon exchangeability check;
* :func:`skyline` - time vs error, dominated methods hollow (Kellaris et al. Sec. 7.2);
* :func:`skyline_by_family` - the same for one dataset, one panel per family of methods (e.g. per
  plugin) against the grey cloud of all the others: readable with dozens of presets;
* :func:`error_table` - a SORTaki-style table of mean errors on a colour (error) scale;
* :func:`regret` - DPBench regret per algorithm;
* :func:`dataset_shapes` - the histograms themselves;
* :func:`use_style` - the notebooks' one figure style (:data:`STYLE`): readable at the committed size.

Figures that put methods side by side (error against epsilon or range length,
skyline, error table, regret) draw one comparability class at a time
(:func:`dphist.experiments.analysis.comparable`): attributed releases by
default; ``unattributed=True`` draws the unattributed ones (scored against the
sorted truth) on their own.
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


def _legend(fig, axes):
    handles, labels = axes[0].get_legend_handles_labels()
    if handles:
        rows_fit = max(8, int(fig.get_figheight() * 5.5))
        ncol = math.ceil(len(labels) / rows_fit)
        fig.legend(handles, labels, loc="center right", fontsize="x-small", frameon=False, ncol=ncol)


def save(fig: Figure, path, dpi: int = 100) -> Path:
    """Write ``fig`` as PNG (Agg canvas; no display needed)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    FigureCanvasAgg(fig)
    path = Path(path)
    fig.savefig(path, dpi=dpi)
    return path


def error_vs_epsilon(results: Results, metric: str = "mse", workload: str = "all-ranges",
                     datasets=None, algorithms=None, unattributed: bool = False) -> Figure:
    """Mean error against epsilon, per dataset (error bars: standard error of the mean over trials)."""
    means = analysis.mean_errors(analysis.comparable(results, unattributed), metric, workload,
                                 by=("dataset", "algorithm", "epsilon"))
    datasets = datasets or sorted({k[0] for k in means})
    algorithms = algorithms or sorted({k[1] for k in means}, key=str.lower)
    fig, axes = _grid(len(datasets), legend=_legend_columns(len(algorithms), len(datasets)))
    for ax, ds in zip(axes, datasets):
        for i, alg in enumerate(algorithms):
            pts = sorted((k[2], v["mean"], v["std"] / math.sqrt(v["count"]))
                         for k, v in means.items() if k[0] == ds and k[1] == alg)
            if pts:
                e, m, s = map(np.array, zip(*pts))
                ax.errorbar(e, m, yerr=s, label=alg, capsize=2, lw=1.2, ms=4, **_style(i))
        ax.set(xscale="log", yscale="log", title=ds, xlabel="epsilon", ylabel=f"{metric} ({workload})")
        _finish(ax)
    _legend(fig, axes)
    return fig


def error_vs_range_length(results: Results, metric: str = "mse", epsilon=None, datasets=None,
                          unattributed: bool = False) -> Figure:
    """Mean error against range length (% of the domain), from the ``ranges-<r>%`` workloads."""
    sel = analysis.comparable(results if epsilon is None else results.filter(epsilon=float(epsilon)), unattributed)
    datasets = datasets or sel.unique("dataset")
    algs = sel.unique("algorithm")
    fig, axes = _grid(len(datasets), legend=_legend_columns(len(algs), len(datasets)))
    for ax, ds in zip(axes, datasets):
        curves = analysis.range_length_curve(sel, metric, dataset=ds)
        for i, alg in enumerate(algs):
            if alg in curves:
                r, m, s = map(np.array, zip(*curves[alg]))
                ax.plot(r, m, label=alg, lw=1.2, ms=4, **_style(i))
        ax.set(xscale="log", yscale="log", title=ds + (f", eps={epsilon:g}" if epsilon is not None else ""),
               xlabel="range length (% of domain)", ylabel=metric)
        _finish(ax)
    _legend(fig, axes)
    return fig


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


def skyline(results: Results, metric: str = "mse", workload: str = "all-ranges", epsilon=None,
            datasets=None, unattributed: bool = False) -> Figure:
    """Mean run time vs mean error per method; skyline methods filled and named, dominated ones hollow."""
    sel = results if epsilon is None else results.filter(epsilon=float(epsilon))
    datasets = datasets or sel.unique("dataset")
    fig, axes = _grid(len(datasets), width=4.4, height=3.6, title_space=0.3)
    for ax, ds in zip(axes, datasets):
        pts = analysis.time_error_points(sel, metric, workload, unattributed=unattributed, dataset=ds)
        on = analysis.skyline(pts)
        sides = _label_sides(pts)
        for name, (t, e) in pts.items():
            dx, side = sides[name]
            if on[name]:
                ax.scatter(t, e, s=36, color="C3", zorder=3)
                ax.annotate(name, (t, e), fontsize=7, fontweight="bold", xytext=(dx, 3), textcoords="offset points",
                            ha=side)
            else:
                ax.scatter(t, e, s=30, facecolors="none", edgecolors="0.5", zorder=2)
                ax.annotate(name, (t, e), fontsize=6, color="0.45", xytext=(dx, -8), textcoords="offset points",
                            ha=side)
        front = sorted(pts[n] for n in pts if on[n])
        if front:
            ax.step(*zip(*front), where="post", color="C3", lw=0.8, alpha=0.6)
        ax.set(xscale="log", yscale="log", xlabel="time per run (s)", ylabel=f"{metric} ({workload})",
               title=ds + (f", eps={epsilon:g}" if epsilon is not None else ""))
        _finish(ax)
    fig.suptitle("time-error skyline (filled: on the skyline; hollow: dominated)", fontsize="medium")
    return fig


def skyline_by_family(results: Results, families: dict, metric: str = "mse", workload: str = "all-ranges",
                      epsilon=None, dataset: str | None = None, unattributed: bool = False) -> Figure:
    """One dataset's time-error skyline, one panel per family (``{family: [algorithm, ...]}``):
    the family's methods named and coloured (filled when on the skyline of ALL methods), every other
    method a grey dot, the overall skyline as a line.  Methods in no family form the panel "other"."""
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
    fig, axes = _grid(len(members), width=3.6, height=3.0, max_cols=4, title_space=0.3)
    times = np.array([p[0] for p in pts.values()])
    errors = np.array([p[1] for p in pts.values()])
    front = sorted(pts[n] for n in pts if on[n])
    sides = _label_sides(pts)
    for ax, (fam, algs) in zip(axes, members.items()):
        ax.scatter(times, errors, s=8, color="0.82", zorder=1)
        ax.step(*zip(*front), where="post", color="C3", lw=0.8, alpha=0.5, zorder=2)
        for i, name in enumerate(algs):
            t, e = pts[name]
            colour = f"C{i % 10}"
            ax.scatter(t, e, s=30, zorder=3, color=colour if on[name] else "none", edgecolors=colour)
            dx, side = sides[name]
            ax.annotate(name, (t, e), fontsize=6.5, color=colour, xytext=(dx, 3),
                        textcoords="offset points", ha=side, fontweight="bold" if on[name] else "normal")
        # zoom on the family: from the best error of all to a little above the family's worst
        ax.set(xscale="log", yscale="log", title=fam,
               ylim=(errors.min() / 2, max(pts[a][1] for a in algs) * 4), xlim=(times.min() / 2, times.max() * 2))
        ax.set_xlabel("time per run (s)", fontsize="small")
        ax.set_ylabel(f"{metric} ({workload})", fontsize="small")
        _finish(ax)
    fig.suptitle(f"time-error skyline by family, {dataset}" + (f", eps={epsilon:g}" if epsilon is not None else "")
                 + " (filled: on the skyline of all methods; grey: the other families)", fontsize="medium")
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
                ax.text(j, i, f"{table[i, j]:.3g}", ha="center", va="center", fontsize=7)
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
        ax.plot(np.arange(ds.n), ds.counts, lw=0.6, color="C0")
        if log:
            ax.set_yscale("symlog", linthresh=1)
        ax.set(title=f"{ds.name} (n={ds.n}, scale={ds.scale:,})", xlabel="bin", ylabel="count")
        ax.title.set_fontsize(8)
        ax.minorticks_off()
    return fig
