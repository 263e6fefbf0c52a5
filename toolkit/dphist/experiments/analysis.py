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
* **Statistical verdicts** (:func:`paired_comparison`): "A beats B" only from a
  paired two-sided Wilcoxon signed-rank test on the log errors of the cells the
  two share (same setting, trial and root seed), with Holm's correction over
  every comparison made; the means themselves carry Student-t confidence
  intervals (:meth:`Results.aggregate`).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

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


def range_length_curve(results: Results, metric: str = "mse", **setting) -> dict[str, list[tuple]]:
    """Per algorithm, ``(range length as % of n, mean error, std, ci_low, ci_high)`` over the
    ``ranges-<r>%`` workloads (the 95% Student-t interval of the mean, :meth:`Results.aggregate`)."""
    sel = results.filter(metric=metric, reference="sample", **setting)
    out: dict[str, list] = {}
    for (alg, wl), s in sel.aggregate(["algorithm", "workload"]).items():
        m = _PERCENT.match(wl)
        if m:
            out.setdefault(alg, []).append((float(m.group(1)), s["mean"], s["std"], s["ci_low"], s["ci_high"]))
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


# ------------------------------------------------------------------ statistical verdicts
#: rows with at most this many non-zero differences (and no tied magnitudes) get the exact null
#: distribution of the signed-rank statistic; larger ones the normal approximation with tie correction
EXACT_MAX_N = 50
#: the columns that identify one observation of a method: the cell without its algorithm
OBSERVATION = (*SETTING, "trial", "seed")


def holm(pvalues) -> np.ndarray:
    """Holm's step-down adjusted p-values (Holm, Scand. J. Statist. 1979): sorted ascending,
    ``p_(i)`` becomes ``max_{j <= i} min(1, (m - j + 1) p_(j))``; rejecting where the adjusted value is
    at most ``alpha`` controls the family-wise error rate at ``alpha`` under any dependence."""
    p = np.asarray(pvalues, dtype=float).ravel()
    if p.size == 0:
        return p.copy()
    if np.isnan(p).any() or (p < 0).any() or (p > 1).any():
        raise InvalidParameter("p-values must lie in [0, 1]")
    order = np.argsort(p, kind="stable")
    m = p.size
    adjusted = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    out = np.empty(m)
    out[order] = adjusted
    return out


_EXACT_COUNTS: dict[int, np.ndarray] = {}


def _signed_rank_null(n: int) -> np.ndarray:
    """P(W+ = k), k = 0 .. n(n+1)/2, for n untied non-zero differences symmetric about 0: the number of
    subsets of {1..n} with sum k over 2^n (a dynamic program over the ranks, kept per n)."""
    if n not in _EXACT_COUNTS:
        counts = np.zeros(n * (n + 1) // 2 + 1)
        counts[0] = 1.0
        for r in range(1, n + 1):
            counts[r:] = counts[r:] + counts[:-r].copy()
        _EXACT_COUNTS[n] = counts / 2.0 ** n
    return _EXACT_COUNTS[n]


def signed_rank_test(differences) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Two-sided Wilcoxon signed-rank test of "symmetric about 0" for each row of ``differences``.

    NaN marks an absent observation; zero differences are dropped (Wilcoxon's rule).  Returns
    ``(n, r_plus, p)`` per row: the number of non-zero differences, the sum of the ranks of |d| over
    the positive ones (average ranks for ties) and the p-value: exact for ``n <= EXACT_MAX_N`` without
    tied magnitudes, else the normal approximation with the tie-corrected variance (no continuity
    correction, as ``scipy.stats.wilcoxon(method="asymptotic")``).  Rows with ``n = 0`` get ``p = 1``.
    Vectorised over rows (one call per comparison table, not per pair).
    """
    from scipy import stats
    d = np.atleast_2d(np.asarray(differences, dtype=float))
    d = np.where(d == 0, np.nan, d)
    valid = np.isfinite(d)
    n = valid.sum(axis=1)
    ranks = stats.rankdata(np.abs(d), axis=1, nan_policy="omit")
    r_plus = np.where(valid & (d > 0), ranks, 0.0).sum(axis=1)
    p = np.ones(len(d))
    # tie term sum(t^3 - t) of each row's tied magnitudes (rows with ties are rare: continuous errors)
    ties = np.zeros(len(d))
    sorted_abs = np.sort(np.abs(d), axis=1)
    has_tie = (np.diff(sorted_abs, axis=1) == 0).any(axis=1)
    for i in np.flatnonzero(has_tie):
        _, t = np.unique(sorted_abs[i][np.isfinite(sorted_abs[i])], return_counts=True)
        ties[i] = float((t ** 3 - t).sum())
    exact = (n > 0) & (n <= EXACT_MAX_N) & ~has_tie
    for i in np.flatnonzero(exact):
        null = _signed_rank_null(int(n[i]))
        w = int(round(min(r_plus[i], n[i] * (n[i] + 1) / 2 - r_plus[i])))
        p[i] = min(1.0, 2.0 * null[:w + 1].sum())
    approx = (n > 0) & ~exact
    if approx.any():
        m = n[approx].astype(float)
        var = m * (m + 1) * (2 * m + 1) / 24.0 - ties[approx] / 48.0
        z = (r_plus[approx] - m * (m + 1) / 4.0) / np.sqrt(np.maximum(var, 1e-300))
        p[approx] = np.minimum(1.0, 2.0 * stats.norm.sf(np.abs(z)))
    return n, r_plus, p


@dataclass
class PairedComparison:
    """Every pair of methods compared on their common cells (:func:`paired_comparison`).

    ``pairs``: one dict per compared pair and group, ``{"group", "a", "b", "n", "r_plus", "p",
    "p_adjusted", "ratio", "winner"}`` (``ratio``: the median of error_a / error_b over the common
    cells; ``winner``: ``a``, ``b`` or ``None`` for "no significant difference").  ``records``:
    per group, ``{algorithm: {"wins", "ties", "losses"}}``.
    """

    metric: str
    workload: str
    alpha: float
    by: tuple
    pairs: list[dict] = field(default_factory=list)
    records: dict = field(default_factory=dict)

    def verdict(self, a: str, b: str, group: tuple = ()) -> dict:
        """The comparison of ``a`` and ``b`` in ``group`` (either order)."""
        for pair in self.pairs:
            if pair["group"] == tuple(group) and {pair["a"], pair["b"]} == {a, b}:
                return pair
        raise InvalidParameter(f"{a!r} and {b!r} were not compared in group {tuple(group)}")

    def unbeaten(self, group: tuple = ()) -> list[str]:
        """The methods no other method beats significantly in ``group``."""
        return sorted((a for a, r in self.records.get(tuple(group), {}).items() if r["losses"] == 0), key=str.lower)


def paired_comparison(results: Results, metric: str, workload: str, reference: str = "sample",
                      unattributed: bool = False, alpha: float = 0.05, by=()) -> PairedComparison:
    """Which method beats which, with a family-wise error rate of ``alpha`` (Holm).

    **Pairing.** Two methods are compared on the cells they share: same dataset, domain, scale,
    epsilon, trial and root seed (:data:`OBSERVATION`).  In a sweep those cells share their data
    (the trial's sample, :meth:`~dphist.experiments.cells.Cell.data_seed`), while each method's
    noise comes from its own stream; the pairs are independent across trials and settings.
    Cells only one method ran (per-algorithm limits, the demo's budget) are left out of that pair.

    **Test.** The two-sided Wilcoxon signed-rank test (:func:`signed_rank_test`) on
    ``d = log(error_a) - log(error_b)``.  Why this test: (1) errors of one method span orders of
    magnitude across settings (epsilon 0.01 to 1 moves the MSE by 10^4), so raw differences would be
    decided by the smallest epsilon alone; on the log scale a difference is a ratio, the quantity the
    report's "Nx the best" speaks of, and settings weigh alike; (2) under the null hypothesis that
    the two methods' errors have the same distribution in each cell (exchangeable, e.g. one algorithm
    under two names), every d is symmetric about 0, which is exactly the signed-rank test's null,
    whatever the shape of the error distribution and even though settings differ, so its level is
    exact without normality; a paired t-test on the same log errors assumes their mean difference is
    nearly normal, which the heavy right tails of data-dependent methods (a rare bad partition)
    break at 10 trials; (3) it is insensitive to those few outlying trials, which a t statistic lets
    decide.  Errors of 0 are floored at the smallest positive float before the log.

    **Multiplicity.** Holm's step-down correction (:func:`holm`) over every comparison made (all
    pairs, in every group of ``by``), so "A beats B" anywhere in the table is wrong with probability
    at most ``alpha`` in total.  ``by`` (a subset of :data:`SETTING`, e.g. ``("epsilon",)``) compares
    within each group instead of pooling every setting.

    Only one comparability class is compared (:func:`comparable`); two values for one cell and
    method are refused.
    """
    if not 0.0 < alpha < 1.0:
        raise InvalidParameter(f"alpha must be in (0, 1), got {alpha!r}")
    by = tuple(by)
    if set(by) - set(SETTING):
        raise InvalidParameter(f"by: group by columns of the setting {SETTING}, got {by}")
    sel = comparable(_select(results, metric, workload, reference), unattributed)
    algs = sel.unique("algorithm")
    keys = list(zip(*(sel[c].tolist() for c in OBSERVATION)))
    column: dict[tuple, int] = {}
    cols = np.array([column.setdefault(k, len(column)) for k in keys], dtype=np.int64)
    index = {a: i for i, a in enumerate(algs)}
    rows = np.array([index[a] for a in sel["algorithm"].tolist()], dtype=np.int64)
    seen = np.zeros((len(algs), len(column)), dtype=np.int64)
    np.add.at(seen, (rows, cols), 1)
    if (seen > 1).any():
        i, j = np.argwhere(seen > 1)[0]
        key = next(k for k, c in column.items() if c == j)
        raise InvalidParameter(f"{algs[i]!r} has several {metric} values on {workload} for the cell "
                               f"{dict(zip(OBSERVATION, key))}; give the runs different seeds or names")
    logs = np.full((len(algs), len(column)), np.nan)
    logs[rows, cols] = np.log(np.maximum(sel["value"], np.finfo(float).tiny))
    group_of = {}
    for k, c in column.items():
        group_of.setdefault(tuple(k[OBSERVATION.index(b)] for b in by), []).append(c)
    ia, ib = np.triu_indices(len(algs), k=1)
    pairs, p_all = [], []
    for group, members in sorted(group_of.items(), key=lambda kv: str(kv[0])):
        members = np.array(members)
        d = logs[ia][:, members] - logs[ib][:, members]
        common = np.isfinite(d).any(axis=1)
        n, r_plus, p = signed_rank_test(d[common])
        with np.errstate(all="ignore"):
            ratio = np.exp(np.nanmedian(d[common], axis=1)) if common.any() else np.zeros(0)
        for k, (a, b) in enumerate(zip(ia[common], ib[common])):
            pairs.append({"group": group, "a": algs[a], "b": algs[b], "n": int(n[k]), "r_plus": float(r_plus[k]),
                          "p": float(p[k]), "ratio": float(ratio[k])})
        p_all.append(p)
    adjusted = holm(np.concatenate(p_all)) if pairs else np.zeros(0)
    records: dict = {}
    for pair, q in zip(pairs, adjusted):
        pair["p_adjusted"] = float(q)
        half = pair["n"] * (pair["n"] + 1) / 4.0
        pair["winner"] = None if q > alpha else (pair["a"] if pair["r_plus"] < half else pair["b"])
        rec = records.setdefault(pair["group"], {})
        for alg in (pair["a"], pair["b"]):
            rec.setdefault(alg, {"wins": 0, "ties": 0, "losses": 0})
        if pair["winner"] is None:
            rec[pair["a"]]["ties"] += 1
            rec[pair["b"]]["ties"] += 1
        else:
            loser = pair["b"] if pair["winner"] == pair["a"] else pair["a"]
            rec[pair["winner"]]["wins"] += 1
            rec[loser]["losses"] += 1
    return PairedComparison(metric, workload, alpha, by, pairs, records)
