"""The explorer's comparison view: several presets at one eps, and error against eps (the experiment engine).

Both are evaluation on the true data (research): every preset's run is an
independent run on the same histogram, not a publication.
"""
from __future__ import annotations

import html
import math

import numpy as np
from matplotlib.figure import Figure

from .. import metrics, workloads
from ..errors import DPHistError
from ..presets import make_algorithm
from ..registry import default_registry
from .model import ARRAY, DataCache, Settings, parse_epsilon, parse_seed

MAX_PANELS = 8


def _png(fig: Figure, dpi: int = 72) -> bytes:
    import io
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


def _trial_seeds(seed: int | None, preset_index: int, trials: int) -> list[int | None]:
    """One seed per trial, independent across presets and trials (research mode); None in release mode."""
    if seed is None:
        return [None] * trials
    children = np.random.SeedSequence([seed, preset_index]).spawn(trials)
    return [int(c.generate_state(1, dtype=np.uint64)[0] >> np.uint64(1)) for c in children]


def _vector(x: np.ndarray) -> np.ndarray:
    """``x`` when it is a vector; a grid is refused (the comparison draws 1-D panels and range workloads)."""
    if x.ndim != 1:
        raise DPHistError(f"the comparison draws 1-D histograms; this dataset is a {' x '.join(map(str, x.shape))} "
                          "grid (compare grid presets with `dphist bench` or dphist.plots.release_heatmap)")
    return x


def presets_at_epsilon(names: list[str], settings: Settings, data: DataCache, trials: int = 1,
                       level: float = 0.95) -> dict:
    """Run each preset ``trials`` times at ``settings.epsilon``: mean MSE on the chosen workload with its
    Student-t confidence interval (:func:`dphist.experiments.results.mean_confidence_interval`), a bar per
    preset with that interval as its error bar, and a panel per preset (its first trial's release)."""
    from ..experiments.results import mean_confidence_interval
    if not names:
        raise DPHistError("choose at least one preset to compare")
    trials = int(trials)
    if trials < 1:
        raise DPHistError(f"trials must be a whole number >= 1, got {trials}")
    names = list(names)[:MAX_PANELS]
    eps = parse_epsilon(settings.epsilon)
    seed = parse_seed(settings.seed)
    x = _vector(data.get(settings.dataset).counts)
    w = workloads.make(settings.workload, x.size)
    rows = {}
    for i, name in enumerate(names):
        pipe = make_algorithm(name)
        mses, seconds, first = [], 0.0, None
        for s in _trial_seeds(seed, i, trials):
            rel = pipe.run(x, eps, seed=s)
            truth = np.sort(x) if rel.unattributed else x
            mses.append(metrics.mse(w, truth, rel.estimate))
            seconds += sum(rel.timings.values())
            first = first or rel
        mean, half = mean_confidence_interval(mses, level)
        rows[name] = {"estimate": first.estimate, "groups": first.partition.n_groups, "mse": mean,
                      "mse_trials": np.array(mses), "ci_half_width": half, "trials": trials,
                      "charged": first.ledger.total, "seconds": seconds / trials,
                      "unattributed": first.unattributed}
    cols = min(4, len(names))
    nrows = math.ceil(len(names) / cols) + 1
    fig = Figure(figsize=(3.1 * cols, 2.3 * nrows))
    fig.subplots_adjust(left=0.08, right=0.98, top=0.93, bottom=0.08, hspace=0.75, wspace=0.3)
    bar_ax = fig.add_subplot(nrows, 1, 1)
    mses = np.array([rows[n]["mse"] for n in names])
    halves = np.array([rows[n]["ci_half_width"] for n in names])
    finite = np.isfinite(halves)
    # a log axis cannot show an interval reaching 0 or below: the lower arm stops at 1% of the mean
    lower = np.where(finite, np.minimum(halves, 0.99 * mses), 0.0)
    upper = np.where(finite, halves, 0.0)
    bar_ax.bar(range(len(names)), mses, color=[f"C{i % 10}" for i in range(len(names))],
               yerr=np.vstack([lower, upper]), capsize=4, error_kw={"lw": 1.2})
    bar_ax.set_xticks(range(len(names)), names, fontsize=9)
    bar_ax.set_yscale("log")
    what = (f"mean of {trials} trials, {int(100 * level)}% t interval" if trials > 1 else "one run each: "
            "no interval")
    bar_ax.set_title(f"MSE on {settings.workload} at eps = {eps:.4g} ({what})", fontsize=10)
    for i, name in enumerate(names):
        ax = fig.add_subplot(nrows, cols, cols + i + 1)
        truth = np.sort(x) if rows[name]["unattributed"] else x
        ax.plot(truth, color="#222222", lw=0.6, antialiased=False)
        ax.plot(rows[name]["estimate"], color=f"C{i % 10}", lw=0.6, alpha=0.75, antialiased=False)
        ax.set_title(f"{name}: {rows[name]['groups']} groups", fontsize=9)
        ax.tick_params(labelsize=8)
    table = "".join(f"<tr><td>{html.escape(n)}</td><td>{r['mse']:.4g}</td><td>{_interval(r)}</td>"
                    f"<td>{r['groups']}</td><td>{r['charged']:.4g}</td><td>{1000 * r['seconds']:.1f}</td></tr>"
                    for n, r in rows.items())
    out = {"kind": "presets", "rows": rows, "png": _png(fig), "figure": fig, "trials": trials, "level": level,
           "html": (f"<div>{trials} trial(s) per preset, independent runs{_mode_note(seed)}</div>"
                    f"<table style='font-size:12px'><tr><th>preset</th><th>mean MSE ({html.escape(settings.workload)})"
                    f"</th><th>{int(100 * level)}% interval</th><th>groups (trial 1)</th><th>eps charged</th>"
                    f"<th>ms per run</th></tr>{table}</table>")}
    return out


def _interval(row: dict) -> str:
    h = row["ci_half_width"]
    return "- (one trial)" if not np.isfinite(h) else f"&plusmn; {h:.3g}"


def _mode_note(seed) -> str:
    return " (release mode: fresh randomness)" if seed is None else f" (research mode, seeds spawned from {seed})"


def _sweep_dataset(settings: Settings, data: DataCache) -> str:
    """A name the experiment engine can load: the array passed in is registered at runtime for it."""
    if settings.dataset != ARRAY:
        data.get(settings.dataset)            # unknown names fail here, with the loader's message
        return settings.dataset
    ds = data.array
    name = "explorer-array"

    def loader():
        return ds
    default_registry.register(loader, kind="dataset", name=name, replace=True)
    return name


def sweep(names: list[str], settings: Settings, data: DataCache, trials: int, epsilons, progress=True) -> dict:
    """Mean error against eps for ``names`` on the current dataset, through :func:`run_sweep` (serial)."""
    from ..experiments import SweepConfig, run_sweep
    from ..plots import error_vs_epsilon
    if not names:
        raise DPHistError("choose at least one preset for the sweep")
    seed = parse_seed(settings.seed)
    _vector(data.get(settings.dataset).counts)
    dataset = _sweep_dataset(settings, data)
    config = SweepConfig.from_mapping({
        "algorithms": list(names), "datasets": [dataset], "epsilons": [float(e) for e in epsilons],
        "trials": int(trials), "workloads": [settings.workload], "metrics": ["mse"],
        "executor": "serial", "seed": 0 if seed is None else seed})
    outcome = run_sweep(config, output=False, progress=progress)
    fig = error_vs_epsilon(outcome.results, metric="mse", workload=settings.workload)
    from ..plots import BOUND_CAPTION, BOUND_LABEL, linear_bound
    n = int(outcome.results["domain"][0]) if len(outcome.results) else 0
    bound = linear_bound(settings.workload, n, [float(e) for e in epsilons]) if n else None
    from ..experiments.results import mean_confidence_interval
    res = outcome.results
    means, halves = {}, {}
    for name in names:
        for eps in epsilons:
            sel = res.filter(algorithm=name, epsilon=float(eps), workload=settings.workload, metric="mse")
            means[name, float(eps)], halves[name, float(eps)] = mean_confidence_interval(sel["value"])
    head = "".join(f"<th>{e:g}</th>" for e in epsilons)

    def cell(n, e):
        h = halves[n, float(e)]
        return f"<td>{means[n, float(e)]:.3g}" + (f" &plusmn; {h:.2g}" if np.isfinite(h) else "") + "</td>"
    body = "".join(f"<tr><td>{html.escape(n)}</td>" + "".join(cell(n, e) for e in epsilons) + "</tr>"
                   for n in names)
    caption = ""
    if bound is not None:
        body += (f"<tr><td><i>{html.escape(BOUND_LABEL)}</i></td>"
                 + "".join(f"<td><i>{b:.3g}</i></td>" for b in bound) + "</tr>")
        caption = f"<div style='font-size:11px;max-width:640px'>{html.escape(BOUND_CAPTION)}</div>"
    return {"kind": "sweep", "means": means, "results": res, "png": _png(fig),
            "seconds": outcome.wall_seconds,
            "halves": halves,
            "bound": None if bound is None else dict(zip((float(e) for e in epsilons), bound.tolist())),
            "html": (f"<div>mean MSE on {html.escape(settings.workload)} over {trials} trial(s) &plusmn; the 95% "
                     f"t interval, "
                     f"{outcome.wall_seconds:.1f} s</div><table style='font-size:12px'><tr><th>eps</th>{head}</tr>"
                     f"{body}</table>{caption}")}
