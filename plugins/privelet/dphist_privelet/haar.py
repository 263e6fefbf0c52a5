"""The weighted Haar transform of Privelet (Xiao, Wang, Gehrke, ICDE 2010, Section IV-A) in O(N).

Privelet's Haar coefficients over ``N = 2^m`` leaves: the base coefficient ``c_0`` is the mean of
all leaves; the coefficient of an internal node ``v`` of the complete binary tree is
``c_v = (a_L - a_R) / 2``, with ``a_L``, ``a_R`` the mean leaf values of its left and right
subtrees.  The paper's weight function gives ``c_0`` the weight ``N`` and ``c_v`` the weight
``|v|`` (the number of leaves under ``v``); Laplace noise of scale ``lambda / W(c)`` per coefficient
with ``lambda = (1 + log2 N) / epsilon`` is epsilon-DP (the HWT's generalized sensitivity is
``1 + log2 N``, the paper's Lemma on the Haar weights).

We work with the *weighted* coefficients ``W(c) * c`` directly:

* ``y_0 = N * mean = total``;
* ``y_v = |v| (a_L - a_R) / 2 = sum_L - sum_R``.

They are integers on integer counts, one record moves exactly one coefficient per level by 1 plus
the total, so their L1 sensitivity is ``1 + m`` (``m = log2 N`` levels of internal nodes), and
"Laplace(lambda / W(c)) on ``c``" is "Laplace(lambda) on ``W(c) c``": the same mechanism.  The
DPBench code (``privelet.py``, read, not copied) keeps the same unnormalised coefficients.

Layout (the usual Haar ordering): ``y[0]`` is the total, ``y[1]`` the root's difference, and
``y[h:2h]`` the ``h`` differences of the level with ``h`` nodes, left to right.

Exact inverse: a leaf is ``total / N`` plus, for each ancestor ``v``, ``+- y_v / |v|`` (``+`` when
the leaf is in ``v``'s left subtree).  Computed top-down level by level in O(N).
"""
from __future__ import annotations

import numpy as np

from dphist import InvalidParameter


def padded_size(k: int) -> int:
    """``N = 2^ceil(log2 k)``: Privelet's domain is padded with empty bins to a power of two
    (as DPBench's code does; the paper assumes ``N`` is a power of two)."""
    if k < 1:
        raise InvalidParameter(f"the Haar transform needs at least one value, got {k}")
    return 1 << (int(k) - 1).bit_length()


def levels(k: int) -> int:
    """``m = log2 N``: the number of levels of internal nodes over ``k`` padded values."""
    return padded_size(k).bit_length() - 1


def weighted_haar(x: np.ndarray) -> np.ndarray:
    """Weighted Haar coefficients ``W(c) c`` of ``x`` along its last axis (length a power of two);
    leading axes are independent rows; dtype kept (int stays int)."""
    x = np.asarray(x)
    n = x.shape[-1] if x.ndim else 0
    if n < 1 or n & (n - 1):
        raise InvalidParameter(f"weighted_haar needs a power-of-two length, got {n}")
    lead = x.shape[:-1]
    out = np.empty_like(x)
    sums = x
    while sums.shape[-1] > 1:
        pairs = sums.reshape(lead + (-1, 2))
        h = pairs.shape[-2]
        left, right = pairs[..., 0], pairs[..., 1]
        np.subtract(left, right, out=out[..., h:2 * h])
        sums = np.add(left, right)
    out[..., 0] = sums[..., 0]
    return out


def haar_matrix(n: int):
    """The matrix of :func:`weighted_haar` over ``n = 2^m`` values (sparse, ``n (1 + m)`` non-zeros):
    row 0 all ones, row ``h + j`` (level with ``h`` nodes) +1 on the left half of node ``j``, -1 on
    its right half.  For the stated error (``weighted_haar(x) == haar_matrix(n) @ x``)."""
    import scipy.sparse as sp
    if n < 1 or n & (n - 1):
        raise InvalidParameter(f"haar_matrix needs a power-of-two size, got {n}")
    rows, cols, vals = [np.zeros(n, dtype=np.int64)], [np.arange(n)], [np.ones(n)]
    h = 1
    while h < n:
        width = n // h
        col = np.arange(n)
        rows.append(h + col // width)
        cols.append(col)
        vals.append(np.where(col % width < width // 2, 1.0, -1.0))
        h *= 2
    return sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n, n))


def haar_row_norms(n: int) -> np.ndarray:
    """Squared norms of :func:`haar_matrix`'s rows, which are orthogonal: ``N`` for the total, ``|v|``
    (the leaves under node ``v``) for a difference; so ``A A^T = diag(haar_row_norms(n))``."""
    out = np.empty(n)
    out[0] = n
    h = 1
    while h < n:
        out[h:2 * h] = n // h
        h *= 2
    return out


def inverse_weighted_haar(y: np.ndarray) -> np.ndarray:
    """The exact inverse of :func:`weighted_haar` along the last axis (float64)."""
    y = np.asarray(y, dtype=np.float64)
    n = y.shape[-1] if y.ndim else 0
    if n < 1 or n & (n - 1):
        raise InvalidParameter(f"inverse_weighted_haar needs a power-of-two length, got {n}")
    lead = y.shape[:-1]
    # top-down: the subtree sums of the level with h nodes, from the level above and its differences
    sums = y[..., :1].copy()
    h = 1
    while h < n:
        d = y[..., h:2 * h]
        nxt = np.empty(lead + (h, 2))                  # written in place: no temporaries (memory)
        np.add(sums, d, out=nxt[..., 0])               # sum_L = (S + (sum_L - sum_R)) / 2
        np.subtract(sums, d, out=nxt[..., 1])
        np.multiply(nxt, 0.5, out=nxt)                 # both halves of the level in one call
        sums = nxt.reshape(lead + (2 * h,))
        h *= 2
    return sums


def weighted_haar_grid(x: np.ndarray) -> np.ndarray:
    """The tensor-product weighted Haar transform of a grid (every axis a power of two): the 1-D
    transform along each axis in turn (Xiao et al. ICDE 2010, Section V, multi-dimensional Privelet;
    DPBench's ``privelet2D``: rows, then columns)."""
    y = np.asarray(x)
    for axis in range(y.ndim):
        y = np.moveaxis(weighted_haar(np.moveaxis(y, axis, -1)), -1, axis)
    return y


def inverse_weighted_haar_grid(y: np.ndarray) -> np.ndarray:
    """The exact inverse of :func:`weighted_haar_grid` (float64)."""
    x = np.asarray(y, dtype=np.float64)
    for axis in range(x.ndim - 1, -1, -1):
        x = np.moveaxis(inverse_weighted_haar(np.moveaxis(x, axis, -1)), -1, axis)
    return x


def range_variance_factors(lo: int, hi: int, n_padded: int) -> float:
    """``sum_c (dq / dy_c)^2`` for the range ``[lo, hi)``: its noise variance under Privelet divided by
    the variance ``2 lambda^2`` of one weighted coefficient's noise (exact, O(N)).

    The estimate of the range is ``(hi - lo) / N * y_0 + sum_v y_v (|q & L_v| - |q & R_v|) / |v|``
    (linear in the noisy coefficients, which are independent), so its variance is ``2 lambda^2``
    times the sum of squared coefficients of that linear form.
    """
    lo, hi, n = int(lo), int(hi), int(n_padded)
    if not 0 <= lo < hi <= n:
        raise InvalidParameter(f"a range needs 0 <= lo < hi <= {n}, got [{lo}, {hi})")
    total = ((hi - lo) / n) ** 2
    h = 1
    while h < n:
        width = n // h
        start = np.arange(h) * width
        mid, end = start + width // 2, start + width
        left = np.clip(np.minimum(hi, mid) - np.maximum(lo, start), 0, None)
        right = np.clip(np.minimum(hi, end) - np.maximum(lo, mid), 0, None)
        total += float(np.sum(((left - right) / width) ** 2))
        h *= 2
    return total


def range_variance_bound(n_padded: int) -> float:
    """Upper bound on :func:`range_variance_factors` over all ranges: ``1 + log2(N) / 2``.

    The base term is at most 1; on each of the ``m`` levels at most two nodes straddle an end of
    the range (nodes inside it have ``|q & L| = |q & R|``, nodes outside have 0), each with
    ``||q & L| - |q & R|| <= |v| / 2``, so a level adds at most ``2 (1/2)^2 = 1/2``.  Times
    ``2 lambda^2 = 2 (1 + m)^2 / epsilon^2``: a range's variance is at most
    ``(2 + m)(1 + m)^2 / epsilon^2``, the O(log^3 N / epsilon^2) of the paper's Section IV.
    """
    m = int(n_padded).bit_length() - 1
    return 1.0 + m / 2.0
