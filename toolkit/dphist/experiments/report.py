"""The Markdown report of a sweep: tables with an error scale, regret, skyline, figures (PNG).

Every mean error is printed with the half-width of its 95% Student-t confidence interval, the
figures draw those intervals as error bars, and the ranking says "A beats B" only from a paired
signed-rank test with Holm's correction (:func:`dphist.experiments.analysis.paired_comparison`).

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


def _half_width(s: dict) -> str:
    """The half-width of a mean's 95% Student-t interval, as a percentage of the mean ("±12%")."""
    half = (s["ci_high"] - s["ci_low"]) / 2
    if not math.isfinite(half):
        return "±? (1 trial)"
    if s["mean"] <= 0:
        return f"±{_fmt(half)}"
    pct = 100 * half / s["mean"]
    return f"±{pct:.0f}%" if pct >= 10 else f"±{pct:.2g}%"


def verdict_lines(comparison: analysis.PairedComparison, order: list[str]) -> list[str]:
    """Markdown: the methods nothing beats, then the verdict between each two neighbours of ``order``."""
    n_tests = len(comparison.pairs)
    lines = [f"\"A beats B\" below only when a paired two-sided Wilcoxon signed-rank test on the log "
             f"{comparison.metric} of the cells both methods ran (same dataset, domain, scale, epsilon, trial "
             f"and seed) rejects \"same error distribution\" at {comparison.alpha:g} after Holm's correction "
             f"over all {n_tests} comparisons (`dphist.experiments.analysis.paired_comparison`). A tie means the "
             "runs cannot tell the two apart, not that they are equal. The ratio is the median of A's error "
             "over B's on the common cells.", "",
             f"Not beaten by any method: {', '.join(comparison.unbeaten()) or '-'}.", "",
             "Neighbours in the ranking above:", ""]
    for a, b in zip(order, order[1:]):
        try:
            v = comparison.verdict(a, b)
        except InvalidParameter:
            lines.append(f"- {a} / {b}: no common cells, not compared")
            continue
        ratio = v["ratio"] if v["a"] == a else 1 / v["ratio"]
        stats = f"median error ratio {ratio:.2g}, adjusted p = {v['p_adjusted']:.2g}, {v['n']} common cells"
        if v["winner"] is None:
            lines.append(f"- {a} / {b}: no significant difference ({stats})")
        else:
            loser = b if v["winner"] == a else a
            lines.append(f"- **{v['winner']} beats {loser}** ({stats})")
    return lines


def error_table_markdown(results: Results, metric: str, workload: str, epsilon: float,
                         unattributed: bool = False) -> str:
    """Mean error per algorithm and dataset of one comparability class, with the ratio to the
    column's best in that class (the error scale)."""
    algs, dss, table = plots.error_table_data(results, metric, workload, epsilon, unattributed)
    stats = analysis.mean_errors(analysis.comparable(results.filter(epsilon=float(epsilon)), unattributed),
                                 metric, workload, by=("algorithm", "dataset"))
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
            cells.append(f"{mark}{_fmt(v)}{mark} {_half_width(stats[(algs[i], dss[j])])} ({r:.2g}x)")
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
    first = results.filter(epsilon=mid_eps).unique("dataset")[0]
    md = ["", f"{prefix}Mean {metric} on {workload}{against}", "",
          "Each cell: mean over trials, ± the half-width of its 95% Student-t confidence interval (as a "
          "percentage of the mean), and in brackets the ratio to the lowest mean on that dataset (the error "
          "scale: 1x = lowest, in bold; which differences are significant is in the paired tests below). "
          "Rows are ordered by their geometric-mean ratio."]
    for eps in epsilons:
        md += ["", f"{sub}epsilon = {eps:g}", "", error_table_markdown(results, metric, workload, eps, unattributed)]
    if unattributed and len(algorithms) < 2:
        return md + ["", f"Only one unattributed release ({algorithms[0]}): there is nothing to rank it against, so "
                         "it has no figures, regret or skyline."]
    add(f"{tag}error-table", plots.error_table(results, metric, workload, mid_eps, unattributed=unattributed),
        f"Mean {metric} ({workload}{against}) at epsilon={mid_eps:g}, coloured by ratio to the best per dataset.")
    if len(epsilons) > 1:
        lines = plots.bound_lines(results, metric, workload, unattributed)
        bound = (" " + plots.BOUND_CAPTION) if lines else ""
        add(f"{tag}error-vs-epsilon", plots.error_vs_epsilon(results, metric, workload, unattributed=unattributed),
            f"Mean {metric} ({workload}{against}) against epsilon; bars are 95% Student-t confidence intervals "
            f"of the means; {_named(len(algorithms))}.{bound}")
        if families and not unattributed and len(algorithms) > 1:
            add("error-vs-epsilon-by-family", plots.error_vs_epsilon_by_family(results, families, metric, workload,
                                                                                dataset=first),
                f"Mean {metric} ({workload}) against epsilon on {first}, one panel per family of methods "
                f"(grey: the other families; bars: 95% confidence intervals)."
                + (" " + plots.BOUND_CAPTION if first in lines else ""))
    if any(w.startswith("ranges-") for w in results.unique("workload")):
        add(f"{tag}error-vs-range-length", plots.error_vs_range_length(results, metric, mid_eps,
                                                                       unattributed=unattributed),
            f"Mean {metric}{against} against range length at epsilon={mid_eps:g} (Kellaris et al., Figs. 15-18); "
            f"bars are 95% confidence intervals; {_named(len(algorithms))}.")
        if families and not unattributed and len(algorithms) > 1:
            add("error-vs-range-length-by-family",
                plots.error_vs_range_length_by_family(results, families, metric, mid_eps, dataset=first),
                f"Mean {metric} against range length on {first} at epsilon={mid_eps:g}, one panel per family.")
    levels = plots.bound_at(results, metric, workload, mid_eps, unattributed)
    add(f"{tag}skyline", plots.skyline(results, metric, workload, mid_eps, unattributed=unattributed),
        f"Time-error skyline{against} at epsilon={mid_eps:g} (Kellaris et al., Sec. 7.2)."
        + (" " + plots.BOUND_CAPTION if levels else ""))
    if families and not unattributed and len(algorithms) > 1:
        add("skyline-by-family", plots.skyline_by_family(results, families, metric, workload, mid_eps, dataset=first),
            f"The skyline on {first} at epsilon={mid_eps:g}, one panel per family of methods (filled: on the "
            "skyline of all methods)." + (" Dashed: the SVD bound at that epsilon." if first in levels else ""))
    if len(algorithms) > 1:
        add(f"{tag}regret", plots.regret(results, metric, workload, unattributed=unattributed),
            f"Regret{against}: {metric} divided by the best {metric} in each setting (dataset, domain, scale, epsilon).")
        reg = analysis.regret(results, metric, workload, unattributed=unattributed)
        tests = analysis.paired_comparison(results, metric, workload, unattributed=unattributed)
        record = tests.records.get((), {})
        order = sorted(reg, key=lambda a: reg[a]["mean"])
        md += ["", f"{prefix}Regret (DPBench){against}", "",
               f"Regret of a method in a setting = its mean {metric} / the smallest mean {metric} of any method "
               "in that setting; averaged (and worst) over the settings it ran in. Wins, ties and losses: the "
               "paired tests below against every other method.", "",
               "| algorithm | mean regret | worst regret | settings | wins | ties | losses |",
               "|---|---|---|---|---|---|---|"]
        blank = {"wins": "-", "ties": "-", "losses": "-"}
        md += [f"| {a} | {reg[a]['mean']:.3g} | {reg[a]['max']:.3g} | {reg[a]['settings']} | "
               f"{record.get(a, blank)['wins']} | {record.get(a, blank)['ties']} | {record.get(a, blank)['losses']} |"
               for a in order]
        md += ["", f"{prefix}Which method beats which{against}", ""] + verdict_lines(tests, order)
    md += ["", f"{prefix}Skyline at epsilon = {mid_eps:g}{against}", "",
           "Methods no other method beats in both mean run time and mean error (Kellaris et al., Sec. 7.2).", ""]
    sel = results.filter(epsilon=mid_eps)
    for ds in sel.unique("dataset"):
        on = analysis.skyline(analysis.time_error_points(sel, metric, workload, unattributed=unattributed, dataset=ds))
        md.append(f"- {ds}: {', '.join(sorted(a for a, v in on.items() if v))}")
    return md


def _named(n: int) -> str:
    if n <= plots.HIGHLIGHT:
        return "every method named"
    return f"the {plots.HIGHLIGHT} with the lowest errors named, the other {n - plots.HIGHLIGHT} grey"


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
