"""The Markdown report of a sweep: tables with an error scale, regret, skyline, figures (PNG).

Attributed and unattributed releases are never ranked together: an unattributed
release (e.g. ``unattributed-S-bar``) is scored against the sorted truth, so its
errors answer another question.  The headline tables, regret, skyline and
figures rank the attributed releases; the unattributed ones get a section of
their own, ranked only among themselves (:func:`dphist.experiments.analysis.comparable`).
"""
from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np

from .. import plots
from ..errors import InvalidParameter
from . import analysis
from .results import Results

REPORT_MD = "report.md"


def primary_axes(results: Results) -> tuple[str, str]:
    """The metric and workload the headline tables use: the first metric, all-ranges if measured."""
    metrics = [m for m in results.unique("metric") if m != "kl"] or results.unique("metric")
    metric = "mse" if "mse" in metrics else metrics[0]
    workloads = results.filter(metric=metric).unique("workload")
    workload = "all-ranges" if "all-ranges" in workloads else workloads[0]
    return metric, workload


def _fmt(x: float) -> str:
    if not math.isfinite(x):
        return "-"
    return f"{x:.3g}" if abs(x) < 1e5 else f"{x:.2e}"


def error_table_markdown(results: Results, metric: str, workload: str, epsilon: float,
                         unattributed: bool = False) -> str:
    """Mean error per algorithm and dataset of one comparability class, with the ratio to the
    column's best in that class (the error scale)."""
    algs, dss, table = plots.error_table_data(results, metric, workload, epsilon, unattributed)
    best = np.nanmin(table, axis=0)
    lines = ["| algorithm | " + " | ".join(dss) + " |", "|---|" + "---|" * len(dss)]
    order = np.argsort(np.nanmean(np.log(table / best), axis=1))
    for i in order:
        cells = []
        for j in range(len(dss)):
            v = table[i, j]
            if not math.isfinite(v):
                cells.append("not run")
                continue
            r = v / best[j] if best[j] > 0 else math.inf
            mark = "**" if r == 1 else ""
            cells.append(f"{mark}{_fmt(v)}{mark} ({r:.2g}x)")
        lines.append(f"| {algs[i]} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _ranking_sections(results: Results, metric: str, workload: str, add, unattributed: bool,
                      families: dict | None = None) -> list[str]:
    """Error tables, figures, regret and skyline of ONE comparability class (Markdown lines)."""
    epsilons = results.unique("epsilon")
    mid_eps = epsilons[len(epsilons) // 2]
    tag, prefix = ("unattributed-", "### ") if unattributed else ("", "## ")
    sub = "#### " if unattributed else "### "
    against = " (against the sorted truth)" if unattributed else ""
    algorithms = results.unique("algorithm")
    md = ["", f"{prefix}Mean {metric} on {workload}{against}", "",
          "Each cell: mean over trials, and in brackets the ratio to the best method on that dataset "
          "(the error scale: 1x = best, in bold). Rows are ordered by their geometric-mean ratio."]
    for eps in epsilons:
        md += ["", f"{sub}epsilon = {eps:g}", "", error_table_markdown(results, metric, workload, eps, unattributed)]
    if unattributed and len(algorithms) < 2:
        return md + ["", f"Only one unattributed release ({algorithms[0]}): there is nothing to rank it against, so "
                         "it has no figures, regret or skyline."]
    add(f"{tag}error-table", plots.error_table(results, metric, workload, mid_eps, unattributed=unattributed),
        f"Mean {metric} ({workload}{against}) at epsilon={mid_eps:g}, coloured by ratio to the best per dataset.")
    if len(epsilons) > 1:
        add(f"{tag}error-vs-epsilon", plots.error_vs_epsilon(results, metric, workload, unattributed=unattributed),
            f"Mean {metric} ({workload}{against}) against epsilon; bars are standard errors of the mean over trials.")
    if any(w.startswith("ranges-") for w in results.unique("workload")):
        add(f"{tag}error-vs-range-length", plots.error_vs_range_length(results, metric, mid_eps,
                                                                       unattributed=unattributed),
            f"Mean {metric}{against} against range length at epsilon={mid_eps:g} (Kellaris et al., Figs. 15-18).")
    add(f"{tag}skyline", plots.skyline(results, metric, workload, mid_eps, unattributed=unattributed),
        f"Time-error skyline{against} at epsilon={mid_eps:g} (Kellaris et al., Sec. 7.2).")
    if families and not unattributed and len(algorithms) > 1:
        first = results.filter(epsilon=mid_eps).unique("dataset")[0]
        add("skyline-by-family", plots.skyline_by_family(results, families, metric, workload, mid_eps, dataset=first),
            f"The skyline on {first} at epsilon={mid_eps:g}, one panel per family of methods (filled: on the "
            "skyline of all methods).")
    if len(algorithms) > 1:
        add(f"{tag}regret", plots.regret(results, metric, workload, unattributed=unattributed),
            f"Regret{against}: {metric} divided by the best {metric} in each setting (dataset, domain, scale, epsilon).")
        reg = analysis.regret(results, metric, workload, unattributed=unattributed)
        md += ["", f"{prefix}Regret (DPBench){against}", "",
               f"Regret of a method in a setting = its mean {metric} / the smallest mean {metric} of any method "
               "in that setting; averaged (and worst) over the settings it ran in.", "",
               "| algorithm | mean regret | worst regret | settings |", "|---|---|---|---|"]
        md += [f"| {a} | {reg[a]['mean']:.3g} | {reg[a]['max']:.3g} | {reg[a]['settings']} |"
               for a in sorted(reg, key=lambda a: reg[a]["mean"])]
    md += ["", f"{prefix}Skyline at epsilon = {mid_eps:g}{against}", "",
           "Methods no other method beats in both mean run time and mean error (Kellaris et al., Sec. 7.2).", ""]
    sel = results.filter(epsilon=mid_eps)
    for ds in sel.unique("dataset"):
        on = analysis.skyline(analysis.time_error_points(sel, metric, workload, unattributed=unattributed, dataset=ds))
        md.append(f"- {ds}: {', '.join(sorted(a for a, v in on.items() if v))}")
    return md


def write_report(results: Results, out_dir, title: str = "dphist benchmark", notes: list[str] | None = None,
                 meta: dict | None = None, datasets=None, families: dict | None = None) -> Path:
    """Figures in ``out_dir/figures`` and ``out_dir/report.md``; returns the report path.
    ``families`` (``{family: [algorithm, ...]}``, e.g. :func:`.demo.preset_families`) adds a
    per-family skyline of the first dataset."""
    if len(results) == 0:
        raise InvalidParameter("no results to report")
    full = results
    results = analysis.split_settings(results)   # one table column / figure panel per (dataset, scale, domain)
    out = Path(out_dir)
    fig_dir = out / "figures"
    fig_dir.mkdir(parents=True, exist_ok=True)
    metric, workload = primary_axes(results)
    epsilons = results.unique("epsilon")
    algorithms = results.unique("algorithm")
    md = [f"# {title}", "", f"Generated {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}."]
    if meta:
        md += ["", f"Wall time {meta.get('wall_seconds', float('nan')):.1f} s; summed pipeline time "
               f"{meta.get('algorithm_seconds', float('nan')):.1f} s; {meta.get('cells_run', 0)} cells run, "
               f"{meta.get('cells_resumed', 0)} resumed from an earlier run; machine {meta.get('machine', '?')}."]
    md += ["", f"Algorithms ({len(algorithms)}): {', '.join(algorithms)}.", "",
           f"Epsilons: {', '.join(f'{e:g}' for e in epsilons)}; trials per cell: up to "
           f"{int(results['trial'].max()) + 1}; workloads: {', '.join(results.unique('workload'))}; "
           f"metrics: {', '.join(results.unique('metric'))}."]
    if datasets:
        md += ["", "## Datasets", ""] + [f"- {ds.summary()}" for ds in datasets]
    notes = list(notes or [])
    unattributed = analysis.unattributed_algorithms(results)
    attributed = analysis.comparable(results)
    if unattributed:
        notes.append(f"{', '.join(unattributed)} publish unattributed (sorted) histograms (Hay et al. 2010, Sec. 3); "
                     "they are scored against the sorted true histogram, so their range-query errors answer a "
                     "different question than the other methods': they are ranked only among themselves, in "
                     "the section 'Unattributed releases', never in the tables, regret or skyline of the "
                     "attributed methods")
    if notes:
        md += ["", "## Notes", ""] + [f"- {n}" for n in notes]

    figures = []

    def add(name, fig, caption):
        plots.save(fig, fig_dir / f"{name}.png")
        figures.append((name, caption))

    if len(attributed):
        md += _ranking_sections(attributed, metric, workload, add, unattributed=False, families=families)
    if unattributed:
        md += ["", "## Unattributed releases (against the sorted truth)", "",
               "These releases are sorted vectors (no bin identities); each is scored against the sorted true "
               "histogram and ranked only against the other unattributed releases, never with the attributed "
               "methods above."]
        md += _ranking_sections(analysis.comparable(results, unattributed=True), metric, workload, add,
                                unattributed=True)
    several_scales = any(len(full.filter(dataset=d).unique("scale")) > 1 for d in full.unique("dataset"))
    if several_scales and len(full.filter(metric="scaled-l1")):
        wl = "prefix" if "prefix" in full.unique("workload") else workload
        add("error-vs-scale", plots.error_vs_scale(full, metric="scaled-l1", workload=wl),
            "Scaled L1 error against scale x epsilon: lines that overlap show scale-epsilon exchangeability.")
    md += ["", "## Figures", ""]
    for name, caption in figures:
        md += [f"![{name}](figures/{name}.png)", "", caption, ""]
    md += ["## Files", "", "- `results.csv`, `results.json`: the tidy table (one row per trial x workload x metric, "
           "with wall time per pipeline stage)", "- `config.json`: the sweep configuration", ""]
    path = out / REPORT_MD
    path.write_text("\n".join(md), encoding="utf-8")
    return path
