"""The segmentation engine (dphist.segmentation, issue 14): every mode on its typical sizes.

Targets: the exact dynamic program at n = 8,192 must not be slower than ``AHP-optimal``'s end-to-end time
recorded before the engine existed (0.0929 s, BENCHMARKS.md 2026-11-22, which includes the
pipeline around the same DP); the power-of-two DP at n = 500,000 not slower than ``sDAHP``'s
recorded end-to-end time (0.1438 s).  The other cases are for information, among them the pure
numpy DP that was measured against numba before numba became a core dependency.
Inputs: sorted noisy power-law counts (AHP's and SORTaki's inputs), seeded.
"""
import numpy as np

from dphist import segmentation as S
from dphist.datasets import load
from dphist.intervals import centred_prefix_sums, interval_sse


def _noisy(n, sort=True, eps=1.0):
    counts = load("synthetic", shape="random", n=n, scale=10 * n, seed=1).counts
    x = counts + np.random.default_rng(3).laplace(0, 1 / eps, n)
    return np.sort(x)[::-1] if sort else x


def _sse(n, sort=True):
    return lambda: (S.SSEPenalty.inverse_size(_noisy(n, sort), 2.0),)


def _l1(n, sort=False, rounded=False):
    def setup():
        x = _noisy(n, sort)
        return (S.L1Deviation(np.round(x) if rounded else x).then(lambda d, m: d + 8.0),)
    return setup


def _numpy_exact(cost):
    """The same exact dynamic program in numpy, vectorised over the starts of each end (no compiler)."""
    x = cost.values
    p, p2 = centred_prefix_sums(x)
    pen = cost.penalty
    best = np.empty(x.size + 1)
    best[0] = 0.0
    for e in range(1, x.size + 1):
        s = np.arange(e)
        best[e] = np.min(best[:e] + (interval_sse(s, np.full(e, e), p, p2) + pen[e - s]))
    return best[-1]


CASES = [
    dict(name="optimal (a), SSE + 2/|g|, n=8,192 (AHP-optimal's dynamic program; target: its recorded end-to-end time)",
         target=0.0929, setup=_sse(8192), run=lambda c: S.optimal(c)),
    dict(name="optimal (b) power-of-two, SSE + 2/|g|, n=500,000 (sDAHP's dynamic program; target: its recorded end-to-end time)",
         target=0.1438, setup=_sse(500_000), run=lambda c: S.optimal(c, lengths="power-of-two")),
    dict(name="k_groups (d), SSE sorted (Monge, divide and conquer), k<=256, n=65,536", target=None,
         setup=_sse(65536), run=lambda c: S.k_groups(c, [16, 64, 256])),
    dict(name="greedy (e) look-ahead bound (AHP Alg. 3), sorted, n=2^20", target=None,
         setup=_sse(2 ** 20), run=lambda c: S.greedy(c, bound="lookahead")),
    dict(name="greedy (e) singleton bound (SORTaki GP), unsorted, n=2^20", target=None,
         setup=_sse(2 ** 20, sort=False), run=lambda c: S.greedy(c)),
    dict(name="tree (c), L1 deviation, binary, n=2^20", target=None,
         setup=_l1(2 ** 20), run=lambda c: S.tree(c)),
    dict(name="optimal (b) power-of-two, L1 deviation (DAWA-approx's search), n=32,768", target=None,
         setup=_l1(32768), run=lambda c: S.optimal(c, lengths="power-of-two")),
    dict(name="optimal (a), L1 deviation of fractional values (Fenwick route), n=4,096", target=None,
         setup=_l1(4096), run=lambda c: S.optimal(c)),
    dict(name="optimal (a), L1 deviation of integer values (DAWA's exact search, linked list), n=4,096",
         target=None, setup=_l1(4096, rounded=True), run=lambda c: S.optimal(c)),
    dict(name="optimal (a), user vectorised cost (numpy per row), n=4,096", target=None,
         setup=lambda: (S.IntervalCost(lambda s, e: np.sqrt(e - s) + (e - s) % 7, 4096),),
         run=lambda c: S.optimal(c)),
    dict(name="numpy-only exact dynamic program (the alternative to numba), SSE + 2/|g|, n=8,192", target=None,
         setup=_sse(8192), run=_numpy_exact, repeat=1),
]
