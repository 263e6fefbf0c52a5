"""The selector's features: private ones measured through the kernel, public ones from the request.

Pythia (Kotsogiannis, Machanavajjhala, Hay, Miklau, SIGMOD 2017) spends a small share of epsilon on
low-sensitivity properties of the input (the scale, measures of non-uniformity) and adds the public
ones (domain size, epsilon, the task); a tree trained offline maps them to an algorithm.  The private
features here, all over the bins in domain order ``x_0 .. x_{n-1}`` with total ``T``:

* **the noisy total** ``T~ = T + Laplace(1/eps_T)`` (L1 sensitivity 1: one record moves the total by one);
* **three non-uniformity statistics at three granularities**:

  - ``D(x) = sum_i |x_i - T/n|``, the L1 distance to uniform over the whole domain;
  - ``C(x) = sum_j |X_j - T s_j/n|`` over ``b`` contiguous blocks ``j`` (sizes ``s_j``, block sums
    ``X_j``): the distance to uniform at a coarse granularity (is the mass spread over the domain?);
  - ``W(x) = sum_i |x_i - m_j(i)|`` with ``m_j`` the mean of the block of ``k`` neighbouring bins that
    holds bin ``i``: the deviation from local uniformity at a fine granularity (is the histogram
    smooth within small blocks, what partitioning algorithms such as DAWA exploit?).

  Sensitivity of each: adding one record to bin ``i`` in a group of ``s`` bins (the whole domain for
  ``D``; a block for ``W``; for ``C`` the block sums play the bins' part with the target ``T s_j/n``)
  moves that group's mean by ``1/s``: the term of bin ``i`` moves by at most ``1 - 1/s``, each of the
  ``s - 1`` others by at most ``1/s``, terms outside the group not at all (``W``) or by their share
  (``C``: block ``l``'s target moves by ``s_l/n``, block ``j``'s term by at most ``1 - s_j/n``).  So
  ``D`` moves by at most ``2 (1 - 1/n)``, ``W`` by ``2 (1 - 1/k')`` (``k'`` the largest block) and ``C``
  by ``2 (1 - s_min/n)`` (``s_min`` the smallest block); removing a record is the same pair read
  backwards.  Each bound is attained (all records in one bin, one more added there), and at the same
  pair for all three, so they are the sensitivities, not just bounds (``tests/test_selection.py``
  checks them by brute force on neighbouring pairs).

All four are measured together by one vetted mechanism, :class:`ShapeStatistics`: it adds Laplace noise
of scale ``1/eps`` to the vector ``(w_T T, w_D D / s_D, w_C C / s_C, w_W W / s_W)`` (weights summing to 1),
whose L1 sensitivity is ``w_T + w_D + w_C + w_W = 1`` (every part's bound is attained at the same pair),
and divides back: the same as four Laplace mechanisms with ``w_T eps``, ``w_D eps``, ``w_C eps`` and
``w_W eps`` (Dwork & Roth 2014, Thm 3.6 and 3.14), from one sum over the counts and, per column of
the ``(n/4, 4)`` view of the counts, one elementwise maximum each for ``D`` and ``W`` into one buffer of
``n/4`` values (the selector's overhead: no float copy of the counts, no prefix sums,
one kernel call, one public probe).

Normalising by the true total first would make the sensitivities depend on the data (``D / T``
changes by up to ``~2/T``, unbounded at small ``T``); dividing by the *noisy* total afterwards is
post-processing: ``tvd~ = D~ / (2 max(T~, 1))`` (the total-variation distance of the shape to
uniform), likewise ``coarse_tvd~`` from ``C~`` and ``fine_dev~`` from ``W~``, each clipped to
``[0, 1]``.  Blocks: ``C`` over :data:`COARSE_BLOCKS` (16) blocks, ``W`` over blocks of
:data:`FINE_BLOCK` (4) bins; on fewer bins than that, one bin per block (``C = D``) or one block
(``W = D``).

Budget of the features, ``share * eps``: :data:`TOTAL_WEIGHT` (0.4) on the total, the rest split
evenly over the three statistics (0.2 each).  The total gets the most because the signal level
``T eps`` decides most choices (at low signal the uniform estimate or a coarse partition wins, at high
signal the data-independent trees and identity).  On one bin every statistic is identically 0
(public), so only the total is measured (the kernel's ``laplace_intervals`` on ``[0, 1)``), with the
whole feature budget.

**On a grid** (``r x c`` cells, flattened row-major by the kernel; the shape is public) the same three
statistics are taken over blocks of the grid instead of runs of the vector: ``D`` over every cell (the
order of the cells does not matter to it), ``C`` over :data:`COARSE_SIDE` x :data:`COARSE_SIDE` (4 x 4)
rectangular blocks (each axis split as the 1-D blocks are; 16 blocks, as in 1-D), ``W`` within blocks
of :data:`FINE_SIDE` x :data:`FINE_SIDE` (2 x 2) neighbouring cells (4 cells, as in 1-D; the last row
or column of blocks thinner on an odd side).  The argument above used only that the blocks partition
the bins, never that they are contiguous runs, so it holds word for word with the blocks' cell counts:
``D`` ``2 (1 - 1/n)``, ``C`` ``2 (1 - s_min/n)`` with ``s_min`` the product of the two axes' smallest
block lengths, ``W`` ``2 (1 - 1/k')`` with ``k'`` the largest block's cell count
(:func:`grid_statistic_sensitivities`; ``tests/test_selection.py`` checks them by brute force on small
grids).  A grid of ``n >= 2`` cells has an axis of length >= 2, so ``k' >= 2`` and ``s_min < n``: every
sensitivity is positive.

The tree sees derived values (:func:`feature_vector`), all functions of the noisy measurements and
public numbers: ``log10 T~``, ``log10 (T~ eps_run)`` (the signal against the chosen algorithm's noise,
Pythia's scale times epsilon), ``log10 (T~ eps_run / n)`` (per bin), ``tvd~``, ``coarse_tvd~``,
``fine_dev~``, ``log2 n`` and ``log10 eps_run``, where ``eps_run`` is the epsilon the chosen preset
runs with.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import InvalidParameter
from ..kernel.private import VettedMechanism

#: names of the tree's inputs, in the order of :func:`feature_vector`
FEATURE_NAMES = ("log10_total", "log10_total_eps", "log10_total_eps_per_bin", "tvd", "coarse_tvd", "fine_dev",
                 "log2_domain", "log10_eps")
#: the share of the feature budget spent on the total; the statistics split the rest evenly
TOTAL_WEIGHT = 0.4
#: blocks of the coarse statistic ``C`` and bins per block of the fine one ``W``
COARSE_BLOCKS, FINE_BLOCK = 16, 4
#: on a grid: coarse blocks per axis (``C``) and cells per axis of a fine block (``W``)
COARSE_SIDE, FINE_SIDE = 4, 2


def l1_to_uniform(counts) -> float:
    """``D(x) = sum_i |x_i - T/n|``: the unnormalised L1 distance of a histogram to the uniform one of
    the same total (public helper; the private measurement is :class:`ShapeStatistics`)."""
    x = _numbers(counts)
    dev = np.subtract(x, x.sum() / x.size, dtype=float)
    return float(np.abs(dev, out=dev).sum())


def _numbers(counts) -> np.ndarray:
    """The counts as a flat numeric array, integers kept (no conversion pass: the arithmetic below
    produces floats where it needs them)."""
    x = np.asarray(counts).ravel()
    return x if x.dtype.kind in "iuf" else x.astype(float)


def _bounds(n: int, blocks: int) -> np.ndarray:
    """Start of each of ``blocks`` contiguous blocks of ``n`` bins (sizes differ by at most one), and ``n``."""
    return (np.arange(blocks + 1) * n) // blocks


def coarse_l1(counts, blocks: int | None = None) -> float:
    """``C(x)``: the L1 distance of the block sums over ``min(blocks, n)`` contiguous blocks to the
    uniform histogram's block sums ``T s_j / n``."""
    x = _numbers(counts)
    b = _bounds(x.size, min(COARSE_BLOCKS if blocks is None else blocks, x.size))
    sums = np.add.reduceat(x, b[:-1])
    return float(np.abs(sums - x.sum() * np.diff(b) / x.size).sum())


def _line_statistics(x: np.ndarray, total, k: int, coarse_blocks: int) -> tuple[float, float, float]:
    """``(D, C, W)`` of the flat ``x`` (total ``total``) with fine blocks of ``k`` bins (the last one shorter)
    and ``coarse_blocks`` coarse blocks, in column passes over the ``(n/k, k)`` view: its ``k`` strided
    columns give the block sums (``k - 1`` adds of ``n/k`` values), then per column one elementwise maximum
    with the uniform mean (for ``D``) and one with the block means (for ``W``), each into one buffer of
    ``n/k`` floats and summed, using ``|a - b| = 2 max(a, b) - a - b``: summed over a block's bins against
    its mean, ``sum |x_i - m| = 2 sum max(x_i, m) - 2 X_j``.  No float copy of the counts, no temporary of
    ``n`` values and no absolute-value pass (at ``2^16`` bins about 0.4 of the time of whole-vector passes of
    ``x - mean``, ``abs`` and ``sum``).  The subtraction ``2 sum max - 2 T`` loses about ``1e-16 T / D`` of
    ``D`` in relative terms: far below the Laplace noise added to it.  The coarse sums come from the block
    sums when the coarse cuts fall between blocks, else from the counts."""
    n = x.size
    k = max(1, min(k, n))
    full = n - n % k
    blocks = x[:full].reshape(-1, k)
    sums = blocks[:, 0].copy() if k == 1 else blocks[:, 0] + blocks[:, 1]
    for j in range(2, k):
        sums += blocks[:, j]
    means = sums / k
    mu = total / n
    buf = np.empty(blocks.shape[0])
    above_mu = above_means = 0.0
    for j in range(k):
        column = blocks[:, j]
        above_mu += float(np.maximum(column, mu, out=buf).sum())
        above_means += float(np.maximum(column, means, out=buf).sum())
    inside = float(total) if full == n else float(sums.sum())       # the counts of the whole blocks
    d = 2.0 * above_mu - inside - full * mu
    w = 2.0 * above_means - 2.0 * inside
    if full < n:                                    # a shorter last block
        tail = x[full:]
        d += float(np.abs(tail - mu).sum())
        w += l1_to_uniform(tail)
    b = _bounds(n, max(1, min(coarse_blocks, n)))
    if full == n and not (b % k).any():
        coarse = np.add.reduceat(sums, b[:-1] // k)
    else:
        coarse = np.add.reduceat(x, b[:-1])
    c = float(np.abs(coarse - total * np.diff(b) / n).sum())
    return max(d, 0.0), c, max(w, 0.0)


def within_block_l1(counts, k: int | None = None) -> float:
    """``W(x)``: the L1 distance of every bin to the mean of its block of ``k`` neighbouring bins (the
    last block may be shorter)."""
    x = _numbers(counts)
    return _line_statistics(x, x.sum(), FINE_BLOCK if k is None else k, COARSE_BLOCKS)[2]


def l1_sensitivity(n: int) -> float:
    """The L1 distance to uniform's sensitivity on ``n`` bins, ``2 (1 - 1/n)`` (module docstring)."""
    return 2.0 * (1.0 - 1.0 / n)


def statistic_sensitivities(n: int) -> np.ndarray:
    """The sensitivities of ``(D, C, W)`` on ``n >= 2`` bins (module docstring)."""
    b = _bounds(n, min(COARSE_BLOCKS, n))
    return np.array([l1_sensitivity(n), 2.0 * (1.0 - np.diff(b).min() / n), l1_sensitivity(min(FINE_BLOCK, n))])


def _vector(counts, shape=None) -> np.ndarray:
    """``(T, D, C, W)`` of a vector (``shape`` None or one axis: :func:`_line_statistics`) or a grid (even
    sides: the same route with the four cells of each 2 x 2 block as four strided views; odd sides: one
    float copy, deviations from the uniform and the block means, block sums for ``C``)."""
    x = _numbers(counts)
    total = x.sum()
    if total == 0 and not x.any():      # every bin 0 (the kernel's probe): every statistic 0
        return np.zeros(4)
    n = x.size
    if shape is None or len(shape) < 2:
        return np.array([float(total), *_line_statistics(x, total, FINE_BLOCK, COARSE_BLOCKS)])
    g = _grid(x, shape)
    r, k = g.shape
    cb = _grid_blocks(g.shape, coarse=True)
    sizes = np.outer(np.diff(cb[0]), np.diff(cb[1]))
    if FINE_SIDE == 2 and r % 2 == 0 and k % 2 == 0:
        # whole 2 x 2 blocks: the four cells of every block as four strided views (the 1-D route's columns),
        # their sums the block sums, the coarse sums from them when the coarse cuts fall between blocks;
        # D and W from each view's maxima with the uniform mean and the block means (2 max(a, b) - a - b)
        views = [g[i::2, j::2] for i in (0, 1) for j in (0, 1)]
        fine = views[0] + views[1]
        fine += views[2]
        fine += views[3]
        means, mu = fine / 4.0, total / n
        buf = np.empty(fine.shape)
        above_mu = above_means = 0.0
        for v in views:
            above_mu += float(np.maximum(v, mu, out=buf).sum())
            above_means += float(np.maximum(v, means, out=buf).sum())
        d, w = max(2.0 * (above_mu - float(total)), 0.0), max(2.0 * (above_means - float(total)), 0.0)
        if not (cb[0] % 2).any() and not (cb[1] % 2).any():
            coarse = np.add.reduceat(np.add.reduceat(fine, cb[0][:-1] // 2, axis=0), cb[1][:-1] // 2, axis=1)
        else:
            coarse = _block_sums(g, cb)
    else:
        xf = g.astype(float)
        dev = np.subtract(xf, total / n)
        d = float(np.abs(dev, out=dev).sum())
        coarse = _block_sums(xf, cb)
        fb = _grid_blocks(g.shape, coarse=False)
        rows, cols = np.diff(fb[0]), np.diff(fb[1])
        means = _block_sums(xf, fb) / np.outer(rows, cols)
        np.subtract(xf, np.repeat(np.repeat(means, rows, axis=0), cols, axis=1), out=dev)
        w = float(np.abs(dev, out=dev).sum())
    c = float(np.abs(coarse - total * sizes / n).sum())
    return np.array([float(total), d, c, w])


def statistics(counts) -> np.ndarray:
    """``(D, C, W)`` of a histogram (public helper; the private measurement is :class:`ShapeStatistics`)."""
    return _vector(counts)[1:]


def _grid(counts, shape) -> np.ndarray:
    x = _numbers(counts)
    shape = tuple(int(v) for v in shape)
    if len(shape) != 2 or x.size != shape[0] * shape[1]:
        raise InvalidParameter(f"the grid statistics take a 2-D shape matching the counts; got {shape} for "
                               f"{x.size} cells")
    return x.reshape(shape)


def _grid_blocks(shape, coarse: bool):
    """Per axis, the start of each block and the axis length: ``min(COARSE_SIDE, side)`` near-equal blocks
    (``coarse``) or runs of ``FINE_SIDE`` cells (the last one shorter on an odd side)."""
    if coarse:
        return [_bounds(s, min(COARSE_SIDE, s)) for s in shape]
    return [np.append(np.arange(0, s, FINE_SIDE), s) for s in shape]


def _block_sums(x: np.ndarray, bounds) -> np.ndarray:
    return np.add.reduceat(np.add.reduceat(x, bounds[0][:-1], axis=0), bounds[1][:-1], axis=1)


def grid_statistics(counts, shape) -> np.ndarray:
    """``(D, C, W)`` of a grid of ``shape`` (counts flattened row-major or in that shape; module
    docstring): ``C`` over 4 x 4 blocks, ``W`` within 2 x 2 blocks.  Public helper; the private
    measurement is :class:`ShapeStatistics` built with the shape."""
    shape = tuple(int(v) for v in shape)
    return _vector(_grid(counts, shape), shape)[1:]


def grid_statistic_sensitivities(shape) -> np.ndarray:
    """The sensitivities of the grid's ``(D, C, W)`` on ``n >= 2`` cells (module docstring)."""
    shape = tuple(int(v) for v in shape)
    n = shape[0] * shape[1]
    cb = _grid_blocks(shape, coarse=True)
    s_min = float(np.diff(cb[0]).min() * np.diff(cb[1]).min())
    k = min(FINE_SIDE, shape[0]) * min(FINE_SIDE, shape[1])
    return np.array([l1_sensitivity(n), 2.0 * (1.0 - s_min / n), l1_sensitivity(k)])


#: the weights of ``(T, D, C, W)`` in the features' budget (they sum to 1)
WEIGHTS = np.array([TOTAL_WEIGHT] + [(1 - TOTAL_WEIGHT) / 3] * 3)


class ShapeStatistics(VettedMechanism):
    """``(T, D, C, W)`` on ``n >= 2`` bins (or cells of a grid of ``shape``), each with Laplace noise of
    scale ``s_i / (w_i eps)``: one Laplace mechanism on the vector scaled to L1 sensitivity 1 (module
    docstring)."""

    name = "selection.shape-statistics"
    proof = ("Laplace mechanism on (0.4 T, 0.2 D/s_D, 0.2 C/s_C, 0.2 W/s_W): the total and three L1 distances to "
             "uniform at three granularities, scaled by their sensitivities (vector: 2(1-1/n), 2(1-s_min/n), "
             "2(1-1/k); grid: the same with the blocks' cell counts), each bound attained at the same pair: L1 "
             "sensitivity 1 (dphist.selection.features, module docstring)")
    sensitivity = 1.0

    def __init__(self, n: int, shape=None):
        if n < 2:
            raise InvalidParameter("the shape statistics are identically 0 on one bin; they are not measured")
        self.n = int(n)
        self.shape = None if shape is None or len(shape) < 2 else tuple(int(v) for v in shape)
        if self.shape is not None and (len(self.shape) != 2 or self.shape[0] * self.shape[1] != self.n):
            raise InvalidParameter(f"{self.name}: shape {self.shape} is not a 2-D grid of {self.n} cells")
        sens = statistic_sensitivities(self.n) if self.shape is None else grid_statistic_sensitivities(self.shape)
        #: y = (T, D, C, W) / scale has L1 sensitivity 1
        self.scale = np.concatenate([[1.0], sens]) / WEIGHTS

    def check(self, n: int, **arguments) -> dict:
        if n != self.n:
            raise InvalidParameter(f"{self.name} was built for {self.n} bins, the data has {n}")
        return arguments

    def answers(self, n: int, **arguments) -> int:
        return 4

    def run(self, counts, epsilon, noise, **arguments):
        y = noise.laplace_mechanism(_vector(counts, self.shape) / self.scale, 1.0, epsilon)
        return np.asarray(y, dtype=float) * self.scale


def measure(data, n: int, epsilon: float, shape=None) -> dict:
    """``{"total": T~, "stats": (D~, C~, W~)}`` measured through ``data`` (a kernel handle) with
    ``epsilon`` in all (:data:`WEIGHTS`: 0.4 of it on the total); ``shape`` a grid's (public) shape for
    the grid statistics, None (or one axis) for a vector."""
    if n < 2:
        total = data.laplace_intervals(np.array([0]), np.array([n]), epsilon)
        return {"total": float(total[0]), "stats": (0.0, 0.0, 0.0)}
    v = np.asarray(data.custom(ShapeStatistics(n, shape), epsilon), dtype=float).ravel()
    return {"total": float(v[0]), "stats": (float(v[1]), float(v[2]), float(v[3]))}


def feature_matrix(total, stats, n, eps_run) -> np.ndarray:
    """The tree's input (:data:`FEATURE_NAMES`), one row per measurement: ``total`` (m,), ``stats``
    (m, 3) noisy ``(D, C, W)``, ``n`` and ``eps_run`` public (scalars or (m,))."""
    t = np.maximum(np.atleast_1d(np.asarray(total, dtype=float)), 1.0)
    stats = np.atleast_2d(np.asarray(stats, dtype=float))
    n = np.broadcast_to(np.asarray(n, dtype=float), t.shape)
    e = np.broadcast_to(np.asarray(eps_run, dtype=float), t.shape)
    shape = np.clip(stats / (2.0 * t[:, None]), 0.0, 1.0)
    return np.column_stack([np.log10(t), np.log10(t * e), np.log10(t * e / n), shape, np.log2(n), np.log10(e)])


def feature_vector(total: float, stats, n: int, eps_run: float) -> np.ndarray:
    """:func:`feature_matrix` of one measurement."""
    return feature_matrix(total, np.asarray(stats, dtype=float)[None, :], n, eps_run)[0]


def feature_row(total: float, stats, n: int, eps_run: float) -> list[float]:
    """:func:`feature_vector` as a list of floats, computed with scalar arithmetic (one run's choice:
    no array set-up; the same formulas, ``tests/test_selection.py`` compares the two)."""
    t = max(float(total), 1.0)
    e = float(eps_run)
    shape = [min(max(float(v) / (2.0 * t), 0.0), 1.0) for v in stats]
    return [math.log10(t), math.log10(t * e), math.log10(t * e / n), *shape, math.log2(n), math.log10(e)]
