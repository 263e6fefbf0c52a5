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


def presets_at_epsilon(names: list[str], settings: Settings, data: DataCache) -> dict:
    """Run each preset once at ``settings.epsilon``; MSE on the chosen workload and a panel per preset."""
    if not names:
        raise DPHistError("choose at least one preset to compare")
    names = list(names)[:MAX_PANELS]
    eps = parse_epsilon(settings.epsilon)
    seed = parse_seed(settings.seed)
    x = data.get(settings.dataset).counts
    w = workloads.make(settings.workload, x.size)
    rows = {}
    for name in names:
        rel = make_algorithm(name).run(x, eps, seed=seed)
        truth = np.sort(x) if rel.unattributed else x
        rows[name] = {"estimate": rel.estimate, "groups": rel.partition.n_groups,
                      "mse": metrics.mse(w, truth, rel.estimate), "charged": rel.ledger.total,
                      "seconds": sum(rel.timings.values())}
    cols = min(4, len(names))
    nrows = math.ceil(len(names) / cols) + 1
    fig = Figure(figsize=(3.1 * cols, 2.2 * nrows))
    fig.subplots_adjust(left=0.07, right=0.98, top=0.93, bottom=0.08, hspace=0.7, wspace=0.3)
    bar_ax = fig.add_subplot(nrows, 1, 1)
    mses = [rows[n]["mse"] for n in names]
    bar_ax.bar(range(len(names)), mses, color=[f"C{i % 10}" for i in range(len(names))])
    bar_ax.set_xticks(range(len(names)), names, fontsize=8)
    bar_ax.set_yscale("log")
    bar_ax.set_title(f"MSE on {settings.workload} at eps = {eps:.4g} (one run each)", fontsize=9)
    for i, name in enumerate(names):
        ax = fig.add_subplot(nrows, cols, cols + i + 1)
        truth = np.sort(x) if make_algorithm(name).finalizer.unattributed else x
        ax.plot(truth, color="#222222", lw=0.6, antialiased=False)
        ax.plot(rows[name]["estimate"], color=f"C{i % 10}", lw=0.6, alpha=0.75, antialiased=False)
        ax.set_title(f"{name}: {rows[name]['groups']} groups", fontsize=8)
        ax.tick_params(labelsize=6)
    table = "".join(f"<tr><td>{html.escape(n)}</td><td>{r['mse']:.4g}</td><td>{r['groups']}</td>"
                    f"<td>{r['charged']:.4g}</td><td>{1000 * r['seconds']:.1f}</td></tr>" for n, r in rows.items())
    out = {"kind": "presets", "rows": rows, "png": _png(fig),
           "html": (f"<table style='font-size:12px'><tr><th>preset</th><th>MSE ({html.escape(settings.workload)})"
                    f"</th><th>groups</th><th>eps charged</th><th>ms</th></tr>{table}</table>")}
    return out


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
    dataset = _sweep_dataset(settings, data)
    config = SweepConfig.from_mapping({
        "algorithms": list(names), "datasets": [dataset], "epsilons": [float(e) for e in epsilons],
        "trials": int(trials), "workloads": [settings.workload], "metrics": ["mse"],
        "executor": "serial", "seed": 0 if seed is None else seed})
    outcome = run_sweep(config, output=False, progress=progress)
    fig = error_vs_epsilon(outcome.results, metric="mse", workload=settings.workload)
    res = outcome.results
    means = {}
    for name in names:
        for eps in epsilons:
            sel = res.filter(algorithm=name, epsilon=float(eps), workload=settings.workload, metric="mse")
            means[name, float(eps)] = float(np.mean(sel["value"]))
    head = "".join(f"<th>{e:g}</th>" for e in epsilons)
    body = "".join(f"<tr><td>{html.escape(n)}</td>" + "".join(f"<td>{means[n, float(e)]:.3g}</td>" for e in epsilons)
                   + "</tr>" for n in names)
    return {"kind": "sweep", "means": means, "results": res, "png": _png(fig),
            "seconds": outcome.wall_seconds,
            "html": (f"<div>mean MSE on {html.escape(settings.workload)} over {trials} trial(s), "
                     f"{outcome.wall_seconds:.1f} s</div><table style='font-size:12px'><tr><th>eps</th>{head}</tr>"
                     f"{body}</table>")}
