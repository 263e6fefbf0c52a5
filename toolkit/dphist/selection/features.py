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
``w_W eps`` (Dwork & Roth 2014, Thm 3.6 and 3.14).  The counts are integers, so the statistics are
computed from exact integers (:func:`_exact_vector`): with ``T = q n + r`` (``0 <= r < n``) a bin above
``q`` is above the mean and any other at or below it, so ``D = sum |x_i - q| + r (#{x_i <= q} - #{x_i >
q}) / n``, ``W`` likewise per fine block with the block's own quotient, ``C = sum_j |n X_j - T s_j| / n``;
each is the float nearest its exact value (one correctly rounded division of Python integers).  The
integers come from one compiled call over the counts (their coarse block sums, then two passes;
:mod:`._statistics_jit`, numba: once a process has measured 2^27 bins of domains of 2^14 bins or more, when
the time saved has paid for starting numba's compiler, :func:`_compiled`) or from int64 numpy passes (the
same integers); the kernel's public probe histogram is recognised without a pass.  The selector's overhead:
one kernel call, no float copy of the counts.

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
import sys
import weakref
from functools import lru_cache

import numpy as np

from ..errors import InvalidParameter
from ..kernel.private import VettedMechanism, count_cap

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
    return float(_vector(counts)[1])


def coarse_l1(counts, blocks: int | None = None) -> float:
    """``C(x)``: the L1 distance of the block sums over ``min(blocks, n)`` contiguous blocks to the
    uniform histogram's block sums ``T s_j / n``."""
    return float(_vector(counts, coarse=blocks)[2])


def within_block_l1(counts, k: int | None = None) -> float:
    """``W(x)``: the L1 distance of every bin to the mean of its block of ``k`` neighbouring bins (the
    last block may be shorter)."""
    return float(_vector(counts, k=k)[3])


def _bounds(n: int, blocks: int) -> np.ndarray:
    """Start of each of ``blocks`` contiguous blocks of ``n`` bins (sizes differ by at most one), and ``n``."""
    return (np.arange(blocks + 1) * n) // blocks


def l1_sensitivity(n: int) -> float:
    """The L1 distance to uniform's sensitivity on ``n`` bins, ``2 (1 - 1/n)`` (module docstring)."""
    return 2.0 * (1.0 - 1.0 / n)


def statistic_sensitivities(n: int) -> np.ndarray:
    """The sensitivities of ``(D, C, W)`` on ``n >= 2`` bins (module docstring)."""
    b = _bounds(n, min(COARSE_BLOCKS, n))
    return np.array([l1_sensitivity(n), 2.0 * (1.0 - np.diff(b).min() / n), l1_sensitivity(min(FINE_BLOCK, n))])


def _frozen(a: np.ndarray) -> np.ndarray:
    """``a`` as int64 and read-only (the compiled passes are compiled for read-only arrays only: the
    kernel's counts are)."""
    a = np.asarray(a, dtype=np.int64)
    if a.flags.writeable:
        a = a.view()
        a.flags.writeable = False
    return a


@lru_cache(maxsize=16)
def _layout(n: int, shape, k: int, coarse: int, fine_side: int, coarse_side: int) -> tuple:
    """The blocks of a vector of ``n`` bins (``shape`` None: a grid of one row, fine blocks of ``k`` bins,
    ``coarse`` coarse blocks) or of a grid of ``shape`` (fine blocks of ``fine_side`` cells a side,
    ``coarse_side`` coarse blocks an axis): ``(grid shape, fine row bounds, fine column bounds (None for a
    vector), coarse row bounds, coarse column bounds, the coarse blocks' cell counts as Python ints)`` after
    whether it is a grid, per domain (public)."""
    grid = shape is not None
    if not grid:        # a vector's fine bounds (n/k of them) are made only where needed: _fine_bounds
        fine = [np.array([0, 1]), None]
        cuts = [np.array([0, 1]), _bounds(n, max(1, min(coarse, n)))]
        shape = (1, n)
    else:
        fine = [np.append(np.arange(0, s, fine_side), s) for s in shape]
        cuts = [_bounds(s, min(coarse_side, s)) for s in shape]
    sizes = np.outer(np.diff(cuts[0]), np.diff(cuts[1])).ravel().tolist()
    return (grid, shape, *[None if b is None else _frozen(b) for b in fine + cuts], sizes)


def _fine_bounds(fc, n: int, k: int) -> np.ndarray:
    """The fine blocks' column bounds: ``fc`` of a grid's layout, else runs of ``k`` of the ``n`` bins."""
    return fc if fc is not None else np.append(np.arange(0, n, max(1, min(k, n))), n)


#: the compiled passes serve domains of at least ``COMPILED_MIN`` bins once the process has measured
#: ``COMPILED_BINS`` bins of such domains by the numpy route (about the numba start's cost in what the
#: numpy route loses on them: ski rental, never more than twice the better choice made in hindsight)
COMPILED_MIN, COMPILED_BINS = 1 << 14, 1 << 27
_numpy_bins = 0
_jit = None     # the compiled passes' module, once imported
_INT64 = np.dtype(np.int64)


def _compiled(n: int, first: bool):
    """The compiled passes (:mod:`._statistics_jit`, numba) for ``n`` bins, or None for the numpy route
    (the same integers).  ``first``: asked before the counts are read (the kernel's probe histogram does
    not count); after, a measurement of ``n >= COMPILED_MIN`` bins by the numpy route counts towards
    ``COMPILED_BINS``.  The first compiled call of a process costs about 0.5 s (numba's compiler started
    and the cache loaded; seconds into an empty cache), the numpy route about 2.5 ns a bin more than the
    compiled pass (``benchmarks/notes/selection.md``): 2^27 bins (2,048 runs at 2^16 bins, 128 at 2^20)
    before the switch pays for it."""
    global _numpy_bins, _jit
    if not COMPILED_MIN <= n < 1 << 31:
        return None
    if _jit is None:
        if first:
            return None
        if _numpy_bins < COMPILED_BINS:
            _numpy_bins += n
            return None
        from . import _statistics_jit
        _jit = _statistics_jit
    return _jit


def _numpy_parts(g: np.ndarray, total: int, grid: bool, k: int, fr, fc) -> tuple[int, int, int, int]:
    """The numpy route's ``(ad, gd, num, den)`` (``W = num / den``): fine blocks of four cells (a vector's
    runs of 4 bins, an even grid's 2 x 2 blocks) by :func:`_view_parts`, a shorter last run of bins in
    Python integers; other blocks by :func:`_exact_parts`."""
    n, q = g.size, total // g.size
    if total < 1 << 60 and (g.shape[0] % 2 == 0 and g.shape[1] % 2 == 0 if grid else k == 4 and n >= 4):
        if grid:
            views = [g[i::2, j::2] for i in (0, 1) for j in (0, 1)]
            tail = []
        else:
            full = n - n % 4
            blocks = g[0, :full].reshape(-1, 4)
            views = [blocks[:, j] for j in range(4)]
            tail = g[0, full:].tolist()
        ad, gd, w4 = _view_parts(g.reshape(-1), views, q, total)
        if not tail:
            return ad, gd, w4, 4
        t = len(tail)
        head = sum(tail)
        return ad, gd, w4 * t + 4 * sum(abs(t * v - head) for v in tail), 4 * t
    return _exact_parts(g, q, fr, _fine_bounds(fc, n, k))


def _exact_parts(g: np.ndarray, q: int, fr, fc) -> tuple[int, int, int, int]:
    """The numpy route of the compiled passes: ``(ad, gd, num, den)`` with ``ad = sum |x - q|``, ``gd`` the
    number of cells above ``q``, and ``W = num / den`` over the fine blocks ``fr`` x ``fc`` (module docstring
    of :mod:`._statistics_jit`; ``den`` the least common multiple of the blocks' cell counts)."""
    dev = g - q
    gd = int(np.count_nonzero(dev > 0))
    ad = int(np.abs(dev, out=dev).sum())
    rows, cols = np.diff(fr), np.diff(fc)
    sums = _block_sums(g, (fr, fc))
    sizes = np.outer(rows, cols)
    qb = sums // sizes
    np.subtract(g, np.repeat(np.repeat(qb, rows, axis=0), cols, axis=1), out=dev)
    above = _block_sums((dev > 0).astype(np.int64), (fr, fc))
    aw = int(np.abs(dev, out=dev).sum())
    den = math.lcm(*set(sizes.ravel().tolist()))
    return ad, gd, aw * den + int(((sums - qb * sizes) * (sizes - 2 * above) * (den // sizes)).sum()), den


def _view_parts(flat: np.ndarray, views, q: int, total: int) -> tuple[int, int, int]:
    """``(ad, gd, w4)`` of the counts ``flat`` (total ``total < 2**60``) whose fine blocks of four cells are
    given as four equal-shaped views (block ``b``'s cells are ``views[j][b]``; cells outside them left to
    the caller's ``w4``): ``ad = sum |x - q| = 2 sum max(x, q) - total - n q`` and ``gd`` the cells above
    ``q``, in contiguous passes over ``flat``; ``w4 = sum_b sum_i |4 x_i - X_b| = 2 sum max(4 x_i, X_b) -
    8 sum_b X_b`` (``4 W``) in int64 passes of one block per element."""
    buf = np.empty_like(flat)
    top = int(np.maximum(flat, q, out=buf).sum())
    gd = int(np.count_nonzero(np.greater(flat, q, out=buf.view(bool)[:flat.size])))
    sums = views[0] + views[1]
    sums += views[2]
    sums += views[3]
    part = buf[:sums.size].reshape(sums.shape)
    high = 0
    for v in views:
        np.multiply(v, 4, out=part)
        high += int(np.maximum(part, sums, out=part).sum())
    return 2 * top - total - flat.size * q, gd, 2 * high - 8 * int(sums.sum())


def _exact_vector(x: np.ndarray, layout, k: int) -> np.ndarray:
    """``(T, D, C, W)`` of non-negative integer counts of total below ``2**62`` (int64, flat), from exact
    integers: with ``T = q n + r`` (``0 <= r < n``) every bin above ``q`` is above the mean ``T/n`` and every
    other at or below it, so ``D = sum |x_i - q| + r (#{x_i <= q} - #{x_i > q}) / n``; likewise ``W`` per
    fine block with its own quotient and remainder, and ``C = sum_j |n X_j - T s_j| / n``.  Python's
    division of integers rounds correctly, so each statistic is the float nearest its exact value,
    whichever route computed the integers."""
    grid, shape, fr, fc, cr, cc, sizes = layout
    n = x.size
    g = _frozen(x).reshape(shape)
    compiled = FINE_SIDE == 2 if grid else k == 4      # the block sizes the compiled passes are written for
    jit = _compiled(n, True) if compiled else None
    if jit is None:
        coarse = _block_sums(g, (cr, cc)) if grid else np.add.reduceat(x, cc[:-1])
        total = int(coarse.sum())
        if total == 0:              # non-negative counts: every bin 0 (the kernel's probe)
            return np.zeros(4)
        jit = _compiled(n, False) if compiled else None
        if jit is None:
            ad, gd, num, den = _numpy_parts(g, total, grid, k, fr, fc)
            c = sum(abs(n * b - total * s) for b, s in zip(coarse.ravel().tolist(), sizes))
            return np.array(_statistics_of(n, total, ad, gd, c, num, den))
    return np.array(_compiled_statistics(jit, g, layout))


def _compiled_statistics(jit, g: np.ndarray, layout) -> tuple[float, float, float, float]:
    """``(T, D, C, W)`` from the compiled passes' integers over ``g`` (the counts in the layout's shape,
    read-only int64; the packaged blocks)."""
    grid, _, _, _, cr, cc, _ = layout
    # Python integers from here: no int64 overflow in the products below
    total, cv, cb, ad, gd, vh, vl, last = map(int, (jit.grid_statistics if grid else jit.line_statistics)(g, cr, cc))
    if total == 0:
        return 0.0, 0.0, 0.0, 0.0
    n = g.size
    tail = 1 if grid else n % 4     # W = (4 vh + vl) / 2 + e on a grid, + wt / k over a vector's last k bins
    num, den = ((4 * vh + vl) * tail + 2 * last, 2 * tail) if tail else (4 * vh + vl, 2)
    return _statistics_of(n, total, ad, gd, n * cv + cb, num, den)


def _statistics_of(n: int, total: int, ad: int, gd: int, c: int, num: int, den: int) -> tuple:
    """``(T, D, C, W)`` as the floats nearest ``T``, ``D = (n ad + r (n - 2 gd)) / n`` (``r = T mod n``),
    ``C = c / n`` and ``W = num / den`` (Python's division of integers rounds correctly)."""
    return float(total), (n * ad + total % n * (n - 2 * gd)) / n, c / n, num / den


def _float_vector(x: np.ndarray, layout, k: int) -> np.ndarray:
    """``(T, D, C, W)`` from the definitions in floating point (counts that are not non-negative integers
    below the kernel's cap: the public helpers' other inputs)."""
    _, shape, fr, fc, cr, cc, sizes = layout
    fc = _fine_bounds(fc, x.size, k)
    g = np.array(x, dtype=float).reshape(shape)
    n, total = g.size, g.sum()
    d = np.abs(g - total / n).sum()
    rows, cols = np.diff(fr), np.diff(fc)
    means = _block_sums(g, (fr, fc)) / np.outer(rows, cols)
    w = np.abs(g - np.repeat(np.repeat(means, rows, axis=0), cols, axis=1)).sum()
    c = np.abs(_block_sums(g, (cr, cc)).ravel() - total * np.array(sizes) / n).sum()
    return np.array([total, d, c, w], dtype=float)


def _vector(counts, shape=None, *, k: int | None = None, coarse: int | None = None,
            checked: bool = False, layout=None) -> np.ndarray:
    """``(T, D, C, W)`` of a vector (``shape`` None or one axis; fine blocks of ``k`` bins, ``coarse``
    coarse blocks, the packaged ones by default) or a grid of ``shape``.  Non-negative integer counts
    (``checked``: the kernel's, int64 and clamped so that their total stays below ``2**62``; else checked
    here against the kernel's cap) take the exact route (:func:`_exact_vector`), others the floating-point
    one.  ``layout``: the packaged blocks' :func:`_layout` of the counts' domain, when the caller keeps it."""
    global _zero_counts
    if checked and _zero_counts is not None and _zero_counts() is counts and not counts.flags.writeable:
        return np.zeros(4)
    x = np.asarray(counts).ravel()
    n = x.size
    k = FINE_BLOCK if k is None else int(k)
    if layout is None:
        grid = shape is not None and len(shape) >= 2
        layout = _layout(n, tuple(int(v) for v in shape) if grid else None, k,
                         COARSE_BLOCKS if coarse is None else int(coarse), FINE_SIDE, COARSE_SIDE)
    if (checked and x.dtype == np.int64) or (x.dtype.kind in "iu" and n and np.minimum.reduce(x) >= 0
                                             and np.maximum.reduce(x) <= count_cap(n)):
        out = _exact_vector(x, layout, k)
        if checked and out[0] == 0 and isinstance(counts, np.ndarray) and counts.base is None \
                and not counts.flags.writeable:
            _zero_counts = weakref.ref(counts)
        return out
    return _float_vector(x, layout, k)


#: the last read-only counts owning their memory that :func:`_vector` found all zero with ``checked``: the
#: kernel's probe histogram, kept per domain size and never written, recognised by identity (and its flag)
#: at the next probe without a pass over it
_zero_counts = None


def statistics(counts) -> np.ndarray:
    """``(D, C, W)`` of a histogram (public helper; the private measurement is :class:`ShapeStatistics`)."""
    return _vector(counts)[1:]


def _grid(counts, shape) -> np.ndarray:
    x = np.asarray(counts).ravel()
    shape = tuple(int(v) for v in shape)
    if len(shape) != 2 or x.size != shape[0] * shape[1]:
        raise InvalidParameter(f"the grid statistics take a 2-D shape matching the counts; got {shape} for "
                               f"{x.size} cells")
    return x


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
    #: its run on the probe histogram (all zeros: four zeros scaled, four noise draws) is fixed by the
    #: domain and epsilon, and the object never changes: the kernel probes it once per domain and epsilon
    probe_once = True

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
        self.scale.setflags(write=False)
        self._scale = tuple(self.scale.tolist())
        self._layout = _layout(self.n, self.shape, FINE_BLOCK, COARSE_BLOCKS, FINE_SIDE, COARSE_SIDE)
        #: the blocks the compiled passes are written for (:func:`_exact_vector`)
        self._compiled_blocks = FINE_SIDE == 2 if self.shape is not None else FINE_BLOCK == 4
        #: whether the compiled passes serve this domain once imported (:func:`_compiled`)
        self._compiled_domain = self._compiled_blocks and COMPILED_MIN <= self.n < 1 << 31

    def check(self, n: int, **arguments) -> dict:
        if n != self.n:
            raise InvalidParameter(f"{self.name} was built for {self.n} bins, the data has {n}")
        return arguments

    def answers(self, n: int, **arguments) -> int:
        return 4

    def run(self, counts, epsilon, noise, **arguments):
        layout = self._layout
        jit = _jit if self._compiled_domain else None
        if jit is not None and type(counts) is np.ndarray and counts.dtype is _INT64 and counts.size == self.n \
                and not counts.flags.writeable:
            # the kernel's counts, the compiled pass serving (the same test as _compiled's once it is
            # imported): its integers used directly
            v = _compiled_statistics(jit, counts.reshape(layout[1]), layout)
        else:
            jit = (_compiled(self.n, True) if type(counts) is np.ndarray and counts.dtype == np.int64
                   and counts.size == self.n and not counts.flags.writeable and self._compiled_blocks else None)
            if jit is not None:
                v = _compiled_statistics(jit, counts.reshape(layout[1]), layout)
            else:
                v = _vector(counts, checked=True, layout=layout).tolist()
        s = self._scale
        y = noise.laplace_mechanism(np.array([v[0] / s[0], v[1] / s[1], v[2] / s[2], v[3] / s[3]]), 1.0, epsilon)
        return np.multiply(y, self.scale, dtype=float)


@lru_cache(maxsize=8)
def _shape_statistics(n: int, shape, *blocks) -> ShapeStatistics:
    """The mechanism for a domain (public; ``blocks``, the block constants, are part of the key)."""
    return ShapeStatistics(n, shape)


def measure(data, n: int, epsilon: float, shape=None) -> dict:
    """``{"total": T~, "stats": (D~, C~, W~)}`` measured through ``data`` (a kernel handle) with
    ``epsilon`` in all (:data:`WEIGHTS`: 0.4 of it on the total); ``shape`` a grid's (public) shape for
    the grid statistics, None (or one axis) for a vector."""
    if n < 2:
        total = data.laplace_intervals(np.array([0]), np.array([n]), epsilon)
        return {"total": float(total[0]), "stats": (0.0, 0.0, 0.0)}
    shape = None if shape is None or len(shape) < 2 else tuple(int(v) for v in shape)
    mechanism = _shape_statistics(n, shape, COARSE_BLOCKS, FINE_BLOCK, COARSE_SIDE, FINE_SIDE)
    total, d, c, w = data.custom(mechanism, epsilon).tolist()      # the kernel checked: four finite floats
    return {"total": total, "stats": (d, c, w)}


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
    half, (d, c, w) = 2.0 * t, stats
    return [math.log10(t), math.log10(t * e), math.log10(t * e / n), min(max(float(d) / half, 0.0), 1.0),
            min(max(float(c) / half, 0.0), 1.0), min(max(float(w) / half, 0.0), 1.0), math.log2(n), math.log10(e)]
