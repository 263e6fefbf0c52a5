"""Analyses of a results table: summaries, regret, the time-error skyline, exchangeability.

* **Regret** (DPBench, Hay et al. SIGMOD 2016, Sec. 6): in each setting
  (dataset, domain, scale, epsilon) the regret of an algorithm is its mean
  error divided by the smallest mean error of any algorithm in that setting
  (1 = best).  We report the mean and the worst regret over settings.
* **Skyline** (Kellaris et al., TKDE, Sec. 7.2): a method is dominated when
  another is at least as fast *and* at least as accurate, and strictly better
  in one; the skyline is the set of non-dominated methods.
* **Scale-epsilon exchangeability** (DPBench, Sec. 5, Principle 9 / Def. of
  scaled error): for the scaled error, an algorithm is exchangeable when its
  error at (scale m, epsilon) equals its error at (scale c*m, epsilon/c), i.e.
  depends on the product m*epsilon only.  The Laplace mechanism is: its
  scaled error is ||W noise|| / (|W| m) with noise ~ Lap(1/epsilon), a function
  of m*epsilon alone (checked in the notebook).
* **Comparable releases only.** An unattributed release (``Release.unattributed``,
  e.g. ``unattributed-S-bar``: a sorted vector, Hay et al. 2010, Sec. 3) is
  scored against the *sorted* true histogram, so its range errors answer a
  different question than an attributed histogram's.  Every ranking here
  (regret, skyline points, error tables) ranks one class at a time: attributed
  releases by default, unattributed ones (``unattributed=True``) only among
  themselves.
"""
from __future__ import annotations

import math
import re

import numpy as np

from ..errors import InvalidParameter
from .results import Results

SETTING = ("dataset", "domain", "scale", "epsilon")


def _select(results: Results, metric: str, workload: str, reference: str = "sample") -> Results:
    sel = results.filter(metric=metric, workload=workload, reference=reference)
    if len(sel) == 0:
        raise InvalidParameter(f"no results for metric {metric!r} on workload {workload!r} ({reference}); "
                               f"metrics: {results.unique('metric')}, workloads: {results.unique('workload')}")
    return sel


def comparable(results: Results, unattributed: bool = False) -> Results:
    """The rows of one comparability class: attributed releases (default) or unattributed ones.

    An algorithm whose rows carry both flags cannot be placed in one class and is refused.
    """
    flags = results["unattributed"].astype(bool)
    algs = results["algorithm"]
    both = sorted(set(algs[flags].tolist()) & set(algs[~flags].tolist()))
    if both:
        raise InvalidParameter(f"algorithm(s) {both} have both attributed and unattributed releases in these "
                               "results; give the two configurations different names to rank them")
    return results.where(flags == bool(unattributed))


def unattributed_algorithms(results: Results) -> list[str]:
    """Names of the algorithms whose releases are unattributed (scored against the sorted truth)."""
    return comparable(results, unattributed=True).unique("algorithm")


def mean_errors(results: Results, metric: str, workload: str, by=("algorithm", *SETTING),
                reference: str = "sample") -> dict[tuple, dict]:
    """Mean / std / count of the error per group (default: per algorithm and setting)."""
    return _select(results, metric, workload, reference).aggregate(by)


def regret(results: Results, metric: str, workload: str, reference: str = "sample",
           unattributed: bool = False) -> dict[str, dict]:
    """Per algorithm: ``{"mean": ..., "max": ..., "settings": n, "per_setting": {setting: ratio}}``.

    Only one comparability class is ranked (:func:`comparable`): attributed releases by default,
    unattributed ones among themselves with ``unattributed=True``; an empty class gives ``{}``.
    """
    results = comparable(results, unattributed)
    if len(results) == 0:
        return {}
    means = mean_errors(results, metric, workload, reference=reference)
    best: dict[tuple, float] = {}
    for (alg, *setting), s in means.items():
        best[tuple(setting)] = min(best.get(tuple(setting), math.inf), s["mean"])
    out: dict[str, dict] = {}
    for (alg, *setting), s in means.items():
        b = best[tuple(setting)]
        ratio = s["mean"] / b if b > 0 else (1.0 if s["mean"] == 0 else math.inf)
        out.setdefault(alg, {"per_setting": {}})["per_setting"][tuple(setting)] = ratio
    for alg, d in out.items():
        r = np.array(list(d["per_setting"].values()))
        d.update(mean=float(r.mean()), max=float(r.max()), settings=int(r.size))
    return out


def skyline(points: dict[str, tuple[float, float]]) -> dict[str, bool]:
    """``{name: on_skyline}`` for ``points = {name: (time, error)}`` (smaller is better in both)."""
    names = list(points)
    t = np.array([points[n][0] for n in names], dtype=float)
    e = np.array([points[n][1] for n in names], dtype=float)
    no_worse = (t[None, :] <= t[:, None]) & (e[None, :] <= e[:, None])   # [i, j]: j no worse than i
    better = (t[None, :] < t[:, None]) | (e[None, :] < e[:, None])
    dominated = (no_worse & better).any(axis=1)
    return {n: not d for n, d in zip(names, dominated)}


def time_error_points(results: Results, metric: str, workload: str, unattributed: bool = False,
                      **setting) -> dict[str, tuple[float, float]]:
    """Mean run time and mean error per algorithm in one setting (for the skyline), of one
    comparability class (:func:`comparable`: attributed releases unless ``unattributed=True``)."""
    sel = comparable(_select(results, metric, workload).filter(**setting), unattributed)
    err = sel.aggregate(["algorithm"])
    tim = sel.aggregate(["algorithm"], value="time_total")
    return {a: (tim[(a,)]["mean"], err[(a,)]["mean"]) for (a,) in err}


def exchangeability(results: Results, algorithm: str, metric: str = "scaled-l1", workload: str = "prefix",
                    dataset: str | None = None, reference: str = "sample") -> list[dict]:
    """Groups of (scale, epsilon) settings with the same product scale*epsilon and their mean errors.

    Each group reports ``spread`` = max/min of the mean errors in the group
    (1 for a perfectly exchangeable algorithm) and the pooled standard error
    of the log means, so a caller can judge a spread against noise.
    """
    sel = _select(results, metric, workload, reference).filter(algorithm=algorithm)
    if dataset is not None:
        sel = sel.filter(dataset=dataset)
    stats = sel.aggregate(["scale", "epsilon"])
    groups: dict[float, list] = {}
    for (scale, eps), s in stats.items():
        groups.setdefault(float(f"{scale * eps:.9g}"), []).append((scale, eps, s))
    out = []
    for product, members in sorted(groups.items()):
        if len(members) < 2:
            continue
        means = np.array([m[2]["mean"] for m in members])
        # relative standard error of each mean: std / (mean sqrt(count))
        rse = np.array([m[2]["std"] / (m[2]["mean"] * math.sqrt(m[2]["count"])) if m[2]["mean"] > 0 else 0.0
                        for m in members])
        out.append({"product": product, "settings": [(m[0], m[1]) for m in members], "means": means.tolist(),
                    "spread": float(means.max() / means.min()) if means.min() > 0 else math.inf,
                    "relative_se": float(np.sqrt((rse ** 2).sum()))})
    return out


_PERCENT = re.compile(r"^ranges-([0-9.]+)%$")


def range_length_curve(results: Results, metric: str = "mse", **setting) -> dict[str, list[tuple[float, float, float]]]:
    """Per algorithm, ``(range length as % of n, mean error, std)`` over the ``ranges-<r>%`` workloads."""
    sel = results.filter(metric=metric, reference="sample", **setting)
    out: dict[str, list] = {}
    for (alg, wl), s in sel.aggregate(["algorithm", "workload"]).items():
        m = _PERCENT.match(wl)
        if m:
            out.setdefault(alg, []).append((float(m.group(1)), s["mean"], s["std"]))
    return {a: sorted(v) for a, v in out.items()}


def split_settings(results: Results) -> Results:
    """The same rows with ``dataset`` relabelled ``name [m=scale, n=domain]`` wherever a dataset was
    run at more than one (scale, domain): tables and per-dataset figures then never average over
    different scales or domain sizes."""
    ds, sc, dm = results["dataset"], results["scale"], results["domain"]
    variants: dict[str, set] = {}
    for d, s, n in zip(ds.tolist(), sc.tolist(), dm.tolist()):
        variants.setdefault(d, set()).add((s, n))
    if all(len(v) == 1 for v in variants.values()):
        return results
    labels = np.array([d if len(variants[d]) == 1 else f"{d} [m={s:,}, n={n}]"
                       for d, s, n in zip(ds.tolist(), sc.tolist(), dm.tolist())], dtype=object)
    cols = dict(results.columns)
    cols["dataset"] = labels
    return Results(cols)
