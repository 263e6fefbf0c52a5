"""Error metrics.  All are linear-time; none enumerates the n(n+1)/2 ranges.

Histograms may be grids (d axes): they are compared as their row-major flattened cells, and
rectangle workloads (:class:`~dphist.workloads.RectangleWorkload`) answer from summed-area tables;
all rectangles (:class:`~dphist.workloads.AllRectangles`) have the closed form of the squared error
(``mse``, ``scaled-l2``) given in its docstring.

Closed form for all ranges: with ``P`` the prefix sums (length n+1, P[0]=0)
of the error vector e = x - x_hat, the error of range ``[i, j)`` is
``P[j] - P[i]`` and

    sum_{0<=i<j<=n} (P[j]-P[i])^2 = (n+1) * sum_k P[k]^2 - (sum_k P[k])^2,

the pairwise-difference identity (Lagrange).  Likewise
``sum_{i<j} |P[j]-P[i]| = sum_k (2k - n) P_(k)`` over the sorted P.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from .errors import InvalidParameter
from .workloads import AllRanges, AllRectangles, RangeWorkload, prefix_sums


def _pair(x, x_hat):
    """Both histograms as flat float vectors (a grid is flattened in row-major order, as a release's
    ``estimate``); their shapes must agree."""
    x = np.asarray(x, dtype=float)
    x_hat = np.asarray(x_hat, dtype=float)
    if x.ndim > 1 and x_hat.shape == (x.size,):
        x = x.reshape(-1)          # a grid against a release's flattened estimate
    if x_hat.ndim > 1 and x.shape == (x_hat.size,):
        x_hat = x_hat.reshape(-1)
    if x.shape != x_hat.shape or x.ndim < 1:
        raise InvalidParameter(f"true and estimated histograms differ in shape: {x.shape} vs {x_hat.shape}")
    return x.reshape(-1), x_hat.reshape(-1)


def all_ranges_sum_squared(error, prefix=None) -> float:
    """Sum over all ranges of the squared range error, O(n) (``prefix``: its prefix sums, if known)."""
    p = prefix_sums(error) if prefix is None else prefix
    return float((p.size) * np.dot(p, p) - p.sum() ** 2)


def all_ranges_sum_abs(error, prefix=None) -> float:
    """Sum over all ranges of the absolute range error, O(n log n)."""
    p = np.sort(prefix_sums(error) if prefix is None else prefix)
    return float(np.dot(_rank_weights(p.size), p))


@lru_cache(maxsize=8)
def _rank_weights(size: int) -> np.ndarray:
    """``2k - (size - 1)`` for k = 0..size-1: the weight of the k-th smallest P in the pairwise sum."""
    w = 2.0 * np.arange(size) - (size - 1)
    w.flags.writeable = False   # shared by every call of this size
    return w


def mse(workload: RangeWorkload, x, x_hat) -> float:
    """Mean squared error per query (AHP Section 3.3; Hay et al. 2010)."""
    x, x_hat = _pair(x, x_hat)
    if isinstance(workload, AllRanges):
        workload.check_domain(x)
        return all_ranges_sum_squared(x_hat - x) / len(workload)
    if isinstance(workload, AllRectangles):
        return workload.sum_squared(x_hat - x) / len(workload)
    e = workload.answer(x_hat - x)
    return float(np.dot(e, e) / e.size)


def scaled_error(workload: RangeWorkload, x, x_hat, norm: int = 2) -> float:
    """DPBench's scaled average per-query error ``||Wx - W x_hat||_p / (|W| * scale)``.

    Hay et al., SIGMOD 2016, Definition 4 (SORTaki Definition VI.1); ``scale``
    is the true total ``||x||_1`` (a public evaluation quantity, never an
    algorithm input).  ``norm`` is 1 or 2.
    """
    x, x_hat = _pair(x, x_hat)
    scale = x.sum()
    if scale <= 0:
        raise InvalidParameter("scaled error is undefined for an all-zero histogram")
    if norm not in (1, 2):
        raise InvalidParameter(f"norm must be 1 or 2, got {norm}")
    if isinstance(workload, AllRanges):
        workload.check_domain(x)
        total = (np.sqrt(all_ranges_sum_squared(x_hat - x)) if norm == 2
                 else all_ranges_sum_abs(x_hat - x))
    elif isinstance(workload, AllRectangles) and norm == 2:
        total = np.sqrt(workload.sum_squared(x_hat - x))
    else:
        e = workload.answer(x_hat - x)
        total = np.linalg.norm(e, ord=norm)
    return float(total / (len(workload) * scale))


def max_error(workload: RangeWorkload, x, x_hat) -> float:
    """Largest absolute query error."""
    x, x_hat = _pair(x, x_hat)
    if isinstance(workload, AllRanges):
        p = prefix_sums(x_hat - x)
        return float(p.max() - p.min())  # the largest |P[j]-P[i]|
    return float(np.abs(workload.answer(x_hat - x)).max())


def mean_relative_error(workload: RangeWorkload, x, x_hat, delta: float = 1.0) -> float:
    """Mean of ``|Q(x) - Q(x_hat)| / max(Q(x), delta)`` (the sanity bound delta, SReB_GCA Sec. 3.4).

    ``delta`` keeps queries with tiny true answers from dominating; Xiao et al.
    (iReduct, SIGMOD 2011) and Chen et al. (2024) use a small constant.
    """
    if delta <= 0:
        raise InvalidParameter(f"the sanity bound delta must be positive, got {delta}")
    x, x_hat = _pair(x, x_hat)
    truth = workload.answer(x)
    err = np.abs(workload.answer(x_hat) - truth)
    return float(np.mean(err / np.maximum(truth, delta)))


#: Floor for sanitised estimates in the KL divergence (see :func:`kl_divergence`).
KL_FLOOR = 1e-10


def kl_divergence(x, x_hat, floor: float = KL_FLOOR) -> float:
    """KL(H || H_hat) of the normalised histograms (AHP, Zhang et al. 2014, Section 3.3).

    AHP defines ``sum_i H_i ln(H_i / H_hat_i)`` with 0 ln 0 = 0 but is silent
    on non-positive estimates, where it is undefined.  Our sanitisation
    (post-processing, free): clip estimates at 0, normalise both vectors to
    probability distributions, then raise every estimated probability to at
    least ``floor`` and renormalise.  An all-non-positive estimate becomes
    uniform.
    """
    x, x_hat = _pair(x, x_hat)
    if x.sum() <= 0:
        raise InvalidParameter("KL divergence is undefined for an all-zero true histogram")
    p = x / x.sum()
    q = np.clip(x_hat, 0.0, None)
    q = q / q.sum() if q.sum() > 0 else np.full(q.size, 1.0 / q.size)
    q = np.maximum(q, floor)
    q /= q.sum()
    mask = p > 0
    return float(np.sum(p[mask] * np.log(p[mask] / q[mask])))


def evaluate(workload: RangeWorkload, x, x_hat, names, delta: float = 1.0) -> dict[str, float]:
    """Several workload metrics at once, computing the query errors only once.

    ``names`` are keys of :data:`METRICS`; the values equal the single-metric
    functions (tested), which is what the experiment engine relies on.
    """
    return evaluate_workloads({"w": workload}, x, x_hat, names, delta)["w"]


def evaluate_workloads(workloads: dict, x, x_hat, names, delta: float = 1.0) -> dict[str, dict[str, float]]:
    """:func:`evaluate` for several workloads over one domain, sharing one prefix sum of the error."""
    x, x_hat = _pair(x, x_hat)
    unknown = [n for n in names if n not in METRICS]
    if unknown:
        raise InvalidParameter(f"unknown metric(s) {unknown}; known: {', '.join(METRICS)}")
    scale = float(x.sum())
    if any(n.startswith("scaled") for n in names) and scale <= 0:
        raise InvalidParameter("scaled error is undefined for an all-zero histogram")
    error = x_hat - x
    p = prefix_sums(error)
    return {label: _evaluate(w, x, x_hat, error, p, names, scale, delta) for label, w in workloads.items()}


def _evaluate(workload, x, x_hat, error, p, names, scale, delta) -> dict[str, float]:
    workload.check_domain(x)
    out: dict[str, float] = {}
    m = len(workload)
    if isinstance(workload, AllRanges):
        ss = all_ranges_sum_squared(error, p) if ("mse" in names or "scaled-l2" in names) else None
        for n in names:
            if n == "mse":
                out[n] = ss / m
            elif n == "scaled-l2":
                out[n] = float(np.sqrt(ss) / (m * scale))
            elif n == "scaled-l1":
                out[n] = all_ranges_sum_abs(error, p) / (m * scale)
            elif n == "max":
                out[n] = float(p.max() - p.min())
            else:
                out[n] = float(METRICS[n](workload, x, x_hat))
        return out
    if isinstance(workload, AllRectangles):
        ss = workload.sum_squared(error) if ("mse" in names or "scaled-l2" in names) else None
        for n in names:
            if n == "mse":
                out[n] = ss / m
            elif n == "scaled-l2":
                out[n] = float(np.sqrt(ss) / (m * scale))
            else:
                out[n] = float(METRICS[n](workload, x, x_hat))
        return out
    q = workload.errors_from_prefix(error, p)
    for n in names:
        if n == "mse":
            out[n] = float(np.dot(q, q) / q.size)
        elif n == "scaled-l2":
            out[n] = float(np.sqrt(np.dot(q, q)) / (m * scale))
        elif n == "scaled-l1":
            out[n] = float(np.abs(q).sum() / (m * scale))
        elif n == "max":
            out[n] = float(np.abs(q).max())
        elif n == "mre":
            out[n] = mean_relative_error(workload, x, x_hat, delta)
    return out


METRICS = {"mse": mse, "scaled-l1": lambda w, x, y: scaled_error(w, x, y, 1),
           "scaled-l2": lambda w, x, y: scaled_error(w, x, y, 2), "max": max_error,
           "mre": mean_relative_error}
