"""Constrained inference on the tree (Hay et al. PVLDB 2010, Theorem 3, weighted form).

:func:`weighted_inference` is the generalised least-squares estimate of every
node when level ``j`` is measured with variance ``var[j]`` (``inf`` for an
unmeasured level): the two passes of Hay et al.'s Theorem 3 with the weights
made explicit.

* bottom-up: ``z[v]`` is the inverse-variance weighted average of the node's
  own measurement and the sum of its children's ``z``; ``V[v]`` its variance:
  ``1/V[v] = 1/var(v) + 1/sum_c V[c]``;
* top-down: ``hbar[root] = z[root]`` and each child gets
  ``hbar[c] = z[c] + V[c] / sum_c' V[c'] * (hbar[parent] - sum_c' z[c'])``.

With equal variances on a complete tree ``V[c]`` is the same for all siblings,
the split is ``1/k`` and the bottom-up weight on ``h~[v]`` at height ``l`` is
``(k**l - k**(l-1)) / (k**l - 1)``: exactly Theorem 3.  Each pass is a loop
over the ``ell`` levels with one numpy reshape-and-sum per level: O(G) work.

Padding nodes (see :mod:`.tree`) are known zeros: ``z = 0`` and ``V = 0``, so
they take no share of a parent's discrepancy.  The derivation (each subtree's
part of the objective is ``(t - z[v])**2 / V[v]`` plus a constant in its total
``t``, then a sum-constrained quadratic at every parent) is written out in
``notebooks/boost.ipynb``, Section 3, and checked there and in the tests against
dense and sparse least-squares solvers.
"""
from __future__ import annotations

import math

import numpy as np

from dphist.errors import InvalidParameter

from .tree import child_sums


def _level_sizes(values, k: int) -> list[int]:
    """Nodes per level of the ``k``-ary tree that ``values`` (one entry per level, leaves first) describe,
    or :class:`InvalidParameter` when the leaves are not measured or the levels do not end in a root."""
    if values[0] is None:
        raise InvalidParameter("the leaf level must be measured")
    sizes = [values[0].size]
    while len(sizes) < len(values):
        sizes.append(-(-sizes[-1] // k))
    if sizes[-1] != 1:
        raise InvalidParameter(f"{len(values)} levels do not make a {k}-ary tree over {sizes[0]} leaves")
    return sizes


def bottom_up(values, variances, branching: int) -> tuple[list[np.ndarray], list[np.ndarray], list[int]]:
    """First pass of Theorem 3 (weighted form): ``z`` and its variance ``V`` per level, and level sizes.

    ``z[v]`` is the best linear unbiased estimate of node ``v``'s count from
    the measurements inside ``v``'s subtree; ``V[v]`` is its variance.  ``z[0]`` is the leaves' values
    themselves and ``V[0]`` a read-only view of their variance (one number repeated, no copy: memory).
    """
    k = int(branching)
    height = len(values)
    sizes = _level_sizes(values, k)
    z = [np.asarray(values[0], dtype=float)]
    V = [np.broadcast_to(np.asarray(variances[0], dtype=float), (sizes[0],))]
    for j in range(1, height):
        s = child_sums(z[-1], sizes[j], k)
        S = child_sums(V[-1], sizes[j], k)
        var = np.broadcast_to(np.asarray(variances[j], dtype=float), (sizes[j],))
        if values[j] is None or np.all(np.isinf(var)):
            z.append(s)
            V.append(S)
            continue
        y = np.asarray(values[j], dtype=float)
        # inverse-variance weighting; the weight on the node's own measurement is S / (var + S).  The
        # expressions w * y + (1 - w) * s and var * S / (var + S), each operation in its order, written
        # into arrays of this level already made (s, S and two more): memory
        total = np.add(var, S)                       # var + S
        w_own = np.divide(S, total)                  # S / (var + S)
        np.multiply(var, S, out=S)
        np.divide(S, total, out=S)                   # V = var * S / (var + S)
        np.multiply(w_own, y, out=total)             # w * y
        np.subtract(1.0, w_own, out=w_own)
        np.multiply(w_own, s, out=w_own)             # (1 - w) * s
        np.add(total, w_own, out=total)
        del w_own, s
        z.append(total)
        V.append(S)
    return z, V, sizes


def weighted_inference(values, variances, branching: int, leaves_only: bool = False) -> list[np.ndarray]:
    """Generalised least squares over the tree (Hay et al. Theorem 3, weighted form).

    ``values[j]``: noisy counts of level ``j`` (leaves first; ``None`` when the
    level is not measured); ``variances[j]``: their noise variance (a scalar
    per level or one value per node; ``inf`` when unmeasured).  Returns the
    consistent estimate ``hbar`` per level: every parent equals the sum of
    its children.  ``leaves_only``: each level above the leaves is dropped once its children are
    estimated, and the list holds the leaves' estimate alone (``[hbar[0]]``; memory).
    Post-processing of public noisy values (free).
    """
    k = int(branching)
    if all(np.ndim(v) == 0 for v in variances):
        return _level_scalar_inference(values, [np.float64(v) for v in variances], k, leaves_only)
    z, V, sizes = bottom_up(values, variances, k)
    # top-down: split each parent's discrepancy among its children in proportion to V; each level's
    # z and V are dropped once its estimate is made, and the children's share is built in place
    # (V[c] * gap[parent] + z[c]: the same products and sums as with the parent's value repeated,
    # operands swapped: exact in IEEE arithmetic) - memory
    hbar = [None] * len(sizes)
    hbar[-1] = z[-1]
    z[-1] = V[-1] = None
    for j in range(len(sizes) - 2, -1, -1):
        n_par, size = sizes[j + 1], sizes[j]
        gap = child_sums(z[j], n_par, k)
        np.subtract(hbar[j + 1], gap, out=gap)
        np.divide(gap, child_sums(V[j], n_par, k), out=gap)   # (hbar[parent] - sum z) / sum V
        if leaves_only:
            hbar[j + 1] = None
        share = np.empty(size)
        full = size // k
        np.multiply(V[j][:full * k].reshape(full, k), gap[:full, None], out=share[:full * k].reshape(full, k))
        if full < n_par:                             # the last parent's children short of k (padding)
            np.multiply(V[j][full * k:], gap[full], out=share[full * k:])
        del gap
        np.add(share, z[j], out=share)               # z[j] + V[j] * gap[parent]
        hbar[j] = share
        del share                                    # a parent level dropped above is freed before the next
        z[j] = V[j] = None
    return hbar[:1] if leaves_only else hbar


#: parents (or nodes) per block of the level-wise passes of :func:`_level_scalar_inference`
_BLOCK = 1 << 16


def _pair_sums(full: float, last: float, size: int, k: int) -> tuple[float, float]:
    """:func:`child_sums` of a level of ``size`` values, all ``full`` but the last one ``last``: the sum
    of a parent's ``k`` children (every parent but the last) and of the last parent's (fewer children,
    padded with zeros), each by :func:`child_sums` itself on those children alone (the same additions
    in the same order as on the whole level)."""
    parents = -(-size // k)
    children = np.full(size - (parents - 1) * k, full)
    children[-1] = last
    last_sum = child_sums(children, 1, k)[0]
    return (child_sums(np.full(k, full), 1, k)[0] if parents > 1 else last_sum), last_sum


def _child_sums_into(values: np.ndarray, n_parents: int, k: int, out: np.ndarray) -> None:
    """:func:`child_sums` of ``values`` written into ``out`` (``n_parents`` floats): the full parents by
    the same strided additions, the last parent short of ``k`` children by :func:`child_sums` itself on
    its children (its zero padding added as there); no padded copy of ``values``."""
    full = min(values.size // k, n_parents)
    if k > 8:
        np.sum(values[:full * k].reshape(full, k), axis=1, out=out[:full])
    else:
        np.copyto(out[:full], values[0:full * k:k])
        for i in range(1, k):
            out[:full] += values[i:full * k:k]
    if full < n_parents:
        out[full:] = child_sums(values[full * k:], n_parents - full, k)


def _level_scalar_inference(values, variances: list, k: int, leaves_only: bool) -> list[np.ndarray]:
    """:func:`weighted_inference` when every level's variance is one number (a uniform or geometric
    budget): the same floats with the node-level arrays of variances never built.

    By induction over the levels, every node's ``V`` is one number on a level except the last node's
    (the only node whose subtree can hold padding): each level's ``V``, ``w = S / (var + S)`` and the
    children's shares are two numbers (numpy float64 scalars: the arrays' arithmetic, a division by
    zero included), computed by the same operations in the same order as on the
    arrays (:func:`_pair_sums`); the arrays are the node values alone, updated in place (``s *= 1 - w;
    s += w y`` is ``w y + (1 - w) s``, the operands of IEEE addition and multiplication swapped: exact),
    and the last node is recomputed with its own numbers.

    Memory: the levels above the leaves are views of one flat buffer, level 1 at its end, each level
    above it just before its children; the top-down pass writes each level's estimate over its own ``z``
    (block by block: a block's children are read before they are written).  With ``leaves_only`` the
    leaves' estimate is written into the same buffer from its start, by blocks of parents in increasing
    order: the block of parents ``[a, b)`` writes children ``[k a, k b)``, which hold level 1's values of
    parents below ``b`` only (level 1 starts at ``L - s_1`` of a buffer of ``L >= s_0`` floats and
    ``s_0 - s_1 >= (k - 1) (s_1 - 1)``), all read before: the estimate needs no array of its own beside
    level 1's (a tree keeps one buffer of the leaves' size, not 1.5)."""
    height = len(values)
    sizes = _level_sizes(values, k)
    if height == 1:
        return [np.asarray(values[0], dtype=float)]
    upper = sum(sizes[1:])
    flat = np.empty(max(sizes[0], upper) if leaves_only else upper)
    ends = [flat.size]                          # level j (j >= 1) is flat[ends[j] - sizes[j]:ends[j]]
    for size in sizes[1:]:
        ends.append(ends[-1] - size)
    z = [np.asarray(values[0], dtype=float)] + [flat[e - s:e] for e, s in zip(ends[:-1], sizes[1:])]
    V = [(variances[0], variances[0])]          # (every node but the last, the last node)
    S = [None]                                  # the children's summed V per level: (full parent, last)
    for j in range(1, height):
        s = z[j]
        _child_sums_into(z[j - 1], sizes[j], k, s)
        S.append(_pair_sums(*V[-1], sizes[j - 1], k))
        var = variances[j]
        if values[j] is None or math.isinf(var):
            V.append(S[-1])
            continue
        y = np.asarray(values[j], dtype=float)
        numbers = []
        for S_v in S[-1]:
            total = var + S_v
            w = S_v / total
            numbers.append((w, 1.0 - w, var * S_v / total))
        (w, rest, v_full), (w_last, rest_last, v_last) = numbers
        last = w_last * y[-1] + rest_last * s[-1]
        np.multiply(s, rest, out=s)
        for a in range(0, s.size, _BLOCK):          # w y by blocks: no temporary of the level's size (memory)
            s[a:a + _BLOCK] += np.multiply(y[a:a + _BLOCK], w)
        s[-1] = last
        V.append((v_full, v_last))
    for j in range(height - 2, -1, -1):
        n_par, size = sizes[j + 1], sizes[j]
        parents = z[j + 1]                          # the parents' estimates (hbar), in place of their z
        if j > 0:
            share = z[j]                            # this level's estimate over its own z
        elif leaves_only:
            share = flat[:size]
        else:
            share = np.empty(size)
        step = max(1, _BLOCK // k)                 # parents per block: _BLOCK children (memory)
        for a in range(0, n_par, step):             # by blocks of parents: no gap of the parents' size (memory)
            b = min(a + step, n_par)
            children = z[j][a * k:b * k]
            gap = child_sums(children, b - a, k)
            np.subtract(parents[a:b], gap, out=gap)
            last = gap[-1] / S[j + 1][1]
            np.divide(gap, S[j + 1][0], out=gap)     # (hbar[parent] - sum z) / sum V
            if b == n_par:
                gap[-1] = last                       # the last parent's own sum of V
            out = np.empty(children.size) if j > 0 else share[a * k:b * k]
            full = children.size // k
            np.multiply(gap[:full, None], V[j][0], out=out[:full * k].reshape(full, k))
            if full < b - a:                         # the last parent's children short of k
                np.multiply(gap[full], V[j][0], out=out[full * k:])
            if b == n_par:
                out[-1] = V[j][1] * gap[-1]          # the last node's own V
            np.add(out, children, out=share[a * k:b * k])   # z[j] + V[j] * gap[parent]
            del gap, out, children
    if leaves_only:
        return [flat[:sizes[0]]]
    return [share] + z[1:]


def zero_nonpositive_subtrees(levels: list[np.ndarray], branching: int) -> list[np.ndarray]:
    """Hay et al. Section 4.2 heuristic: zero every subtree whose root estimate is <= 0.

    Post-processing (free).  Top-down, a node is zeroed when it or any
    ancestor is <= 0.  The result is no longer consistent where a zeroed
    node had a positive sibling; that is the paper's heuristic.
    """
    k = int(branching)
    out = [None] * len(levels)
    dead = levels[-1] <= 0
    out[-1] = np.where(dead, 0.0, levels[-1])
    for j in range(len(levels) - 2, -1, -1):
        dead = np.repeat(dead, k)[:levels[j].size] | (levels[j] <= 0)
        out[j] = np.where(dead, 0.0, levels[j])
    return out
