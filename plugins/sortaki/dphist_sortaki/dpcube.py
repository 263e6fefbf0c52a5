"""DPCube's kd-tree partitioner in one dimension (Xiao, Xiong & Yuan 2010; Xiao et al. 2014).

DPCube first publishes a noisy cell histogram (SORTaki's initializer with
gamma_in > 0), then splits the domain as a kd-tree built *on the noisy
counts*: a node is split while its noisy variance exceeds a threshold xi
(SORTaki Section IV-A, "DPCube").  It reads H~ only, so it spends nothing
(gamma_p = 0, the budget split of SORTaki Section IV-A).

In one dimension a kd-tree node is an interval of groups and a split cuts it
in two.  The tree is grown breadth-first, one vectorised step per level
(all nodes of a level at once; O(k) work per level).

Parameters

* ``threshold`` - xi.  ``"sortaki"``: xi = 2 / eps^2, SORTaki Section VII's
  setting, with eps the run's total budget as written there; ``"noise"``:
  xi = 2 / eps_in^2, the variance of one noisy cell (split when a node varies
  more than noise alone would); or a positive number.
* ``split`` - where a node is cut.  ``"median"`` (default): the standard
  kd-tree rule used by DPCube, at the median of the node's mass (noisy counts
  clipped at 0, post-processing); ``"middle"``: the middle group;
  ``"v-optimal"``: the cut minimising the two halves' squared error (the rule
  of DPBench's 1-D DPCube, Hay et al. 2016).
"""
from __future__ import annotations

import numpy as np

from dphist import Partitioner
from dphist.errors import InvalidParameter
from dphist.params import Interval, Options

from .error_formulas import sse
from .partitioners import noisy_prefix_sums

SPLITS = ("median", "middle", "v-optimal")
THRESHOLDS = ("sortaki", "noise")


def resolve_threshold(threshold, epsilon: float, eps_in: float) -> float:
    if isinstance(threshold, str):
        if threshold == "sortaki":
            return 2.0 / epsilon ** 2
        if threshold == "noise":
            return 2.0 / eps_in ** 2
        raise InvalidParameter(f"unknown DPCube threshold {threshold!r}; use {', '.join(THRESHOLDS)} or a number > 0")
    try:
        xi = float(threshold)
    except (TypeError, ValueError):
        raise InvalidParameter(f"DPCube threshold must be {', '.join(THRESHOLDS)} or a number > 0, got {threshold!r}") from None
    if not np.isfinite(xi) or xi < 0:
        raise InvalidParameter(f"DPCube threshold must be a non-negative number, got {threshold!r}")
    return xi


def kd_cuts(prefix, prefix_sq, mass_prefix, bounds, xi: float, split: str = "median") -> np.ndarray:
    """Group indices where the leaves of the 1-D kd-tree start.

    ``prefix``/``prefix_sq``: prefix sums of the values and squares (positions);
    ``mass_prefix``: prefix sums of the non-negative masses used by the median rule.
    """
    if split not in SPLITS:
        raise InvalidParameter(f"unknown DPCube split rule {split!r}; use one of {', '.join(SPLITS)}")
    bounds = np.asarray(bounds, dtype=np.int64)
    k = bounds.size - 1
    singletons = bool(bounds[-1] == k)  # every group is one position: group index = position
    a = np.array([0], dtype=np.int64)
    b = np.array([k], dtype=np.int64)
    leaves = []
    while a.size:
        pa, pb = bounds[a], bounds[b]
        variance = sse(pa, pb, prefix, prefix_sq) / (pb - pa)
        grow = (b - a >= 2) & (variance > xi)
        leaves.append(a[~grow])
        a, b = a[grow], b[grow]
        if not a.size:
            break
        pa, pb = bounds[a], bounds[b]
        if split == "middle":
            m = (a + b) // 2
        elif split == "median":
            half = mass_prefix[pa] + 0.5 * (mass_prefix[pb] - mass_prefix[pa])
            cut = np.searchsorted(mass_prefix, half, side="left")  # first position whose prefix reaches half
            m = cut if singletons else np.searchsorted(bounds, cut, side="left")
            m = np.where(mass_prefix[pb] > mass_prefix[pa], m, (a + b) // 2)  # no mass: middle
        else:
            m = _v_optimal_cuts(a, b, bounds, prefix, prefix_sq)
        m = np.clip(m, a + 1, b - 1)
        # children interleaved, so that nodes stay sorted by position (searchsorted is much faster on sorted keys)
        a, b = np.stack([a, m], axis=1).ravel(), np.stack([m, b], axis=1).ravel()
    return np.sort(np.concatenate(leaves))


def _v_optimal_cuts(a, b, bounds, prefix, prefix_sq):
    """Per node, the interior cut minimising SSE(left) + SSE(right), all nodes at once."""
    counts = b - a - 1  # interior cut candidates per node
    node = np.repeat(np.arange(a.size), counts)
    first = np.cumsum(counts) - counts
    cand = a[node] + 1 + (np.arange(node.size) - first[node])
    cost = (sse(bounds[a[node]], bounds[cand], prefix, prefix_sq)
            + sse(bounds[cand], bounds[b[node]], prefix, prefix_sq))
    order = np.lexsort((cand, cost, node))  # per node: cheapest first, ties to the leftmost cut
    starts = np.r_[0, np.flatnonzero(np.diff(node[order])) + 1]
    return cand[order[starts]]


class DPCubePartitioner(Partitioner):
    """DPCube's kd-tree partitioning of H~ (Xiao et al. 2010/2014) as a SORTaki partitioner."""

    name = "sortaki.dpcube"
    citation = ("Xiao, Xiong & Yuan, SDM workshop 2010 / TDP 2014 (DPCube kd-tree partitioning); "
                "SORTaki Sections IV-A and VII (threshold 2/eps^2)")
    spends = False
    param_constraints = {"threshold": [Options(*THRESHOLDS), Interval(float, 0, None)], "split": Options(*SPLITS)}

    def __init__(self, threshold="sortaki", split: str = "median"):
        self.threshold = threshold
        self.split = split

    def partition(self, bins, ctx):
        p, p2 = noisy_prefix_sums(bins, ctx, self.name)
        xi = resolve_threshold(self.threshold, ctx.epsilon, ctx.eps_in)
        # median rule: masses are H~ clipped at 0 (post-processing, free)
        mass = np.zeros(bins.n_bins + 1)
        np.cumsum(np.clip(bins.in_order(ctx.noisy), 0.0, None), out=mass[1:])
        return bins.merge(kd_cuts(p, p2, mass, bins.bounds, xi, self.split))
