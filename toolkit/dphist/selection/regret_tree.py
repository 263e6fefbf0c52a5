"""A decision tree that minimises regret, fitted and evaluated with numpy alone.

Pythia's tree (Kotsogiannis et al., SIGMOD 2017) is fitted to choose, in each region of feature
space, the algorithm of least regret over the training inputs there.  A classification tree
(scikit-learn's) fits labels, not regrets: a cell where two algorithms are within 1 % of each other
and a cell where the runner-up is 100x worse count the same.  This tree is fitted to the regret matrix
directly (``R[c, a]``: algorithm ``a``'s error over the best error in training cell ``c``):

* a node's cost is ``min_a sum_{c in node} R[c, a]``, its label that ``a``;
* a split on feature ``f`` at threshold ``t`` is chosen greedily to minimise the children's summed
  cost; every feature's every split point is scored at once from the cumulative sums of ``R`` in
  that feature's order (O(cells x algorithms) per feature and node, no Python loop over cells);
* growth stops at ``max_depth``, below ``2 min_leaf`` cells, or when no split lowers the cost.

Prediction walks arrays (``feature``, ``threshold``, ``left``, ``right``, ``label``) for all rows at
once; :meth:`RegretTree.path` gives the tests taken, for the release's explanation.  Neither step
needs scikit-learn (not a dependency of dphist at all).
"""
from __future__ import annotations

import numpy as np

from ..errors import InvalidParameter

LEAF = -1


class RegretTree:
    """A fitted tree: parallel node arrays, the candidate labels and the feature names."""

    def __init__(self, feature, threshold, left, right, label, cells, regret, labels, feature_names):
        self.feature = np.asarray(feature, dtype=np.int64)
        self.threshold = np.asarray(threshold, dtype=float)
        self.left = np.asarray(left, dtype=np.int64)
        self.right = np.asarray(right, dtype=np.int64)
        self.label = np.asarray(label, dtype=np.int64)
        self.cells = np.asarray(cells, dtype=np.int64)
        self.regret = np.asarray(regret, dtype=float)
        self.labels = list(labels)
        self.feature_names = list(feature_names)
        m = self.feature.size
        if not (self.threshold.size == self.left.size == self.right.size == self.label.size == m) or m == 0:
            raise InvalidParameter("a selector tree needs equally long, non-empty node arrays")
        inner = self.feature != LEAF
        if (inner & ((self.left <= np.arange(m)) | (self.right <= np.arange(m)) | (self.left >= m)
                     | (self.right >= m))).any():
            raise InvalidParameter("a selector tree's children must come after their parent and exist")
        if (self.feature[inner] >= len(self.feature_names)).any() or (self.label < 0).any() \
                or (self.label >= len(self.labels)).any():
            raise InvalidParameter("a selector tree names a feature or label it does not have")

    # ------------------------------------------------------------------ use
    def leaves(self, X) -> np.ndarray:
        """The leaf index of every row of ``X`` (rows: cells, columns: :attr:`feature_names`)."""
        X = np.atleast_2d(np.asarray(X, dtype=float))
        if X.shape[1] != len(self.feature_names):
            raise InvalidParameter(f"the tree takes {len(self.feature_names)} features, got {X.shape[1]}")
        node = np.zeros(X.shape[0], dtype=np.int64)
        rows = np.arange(X.shape[0])
        for _ in range(self.feature.size):            # at most depth steps change anything
            f = self.feature[node]
            inner = f != LEAF
            if not inner.any():
                break
            go_left = X[rows[inner], f[inner]] <= self.threshold[node[inner]]
            node[inner] = np.where(go_left, self.left[node[inner]], self.right[node[inner]])
        return node

    def predict(self, X) -> np.ndarray:
        """Label indices for the rows of ``X``."""
        return self.label[self.leaves(X)]

    def walk(self, x) -> tuple[int, list[str]]:
        """``(leaf, path)`` of one input in one walk over plain Python lists (the ``auto`` preset's choice:
        no array operations for a single row; the same tests as :meth:`leaves` and :meth:`path`)."""
        nodes = self.__dict__.get("_lists")
        if nodes is None:
            nodes = self._lists = (self.feature.tolist(), self.threshold.tolist(), self.left.tolist(),
                                   self.right.tolist())
        feature, threshold, left, right = nodes
        node, out = 0, []
        while feature[node] != LEAF:
            f, t = feature[node], threshold[node]
            v = float(x[f])
            if v <= t:
                out.append(f"{self.feature_names[f]} = {v:.4g} <= {t:.4g}")
                node = left[node]
            else:
                out.append(f"{self.feature_names[f]} = {v:.4g} > {t:.4g}")
                node = right[node]
        out.append(f"leaf {node}: {self.labels[self.label[node]]} (training regret {self.regret[node]:.3g} "
                   f"over {self.cells[node]} training rows)")
        return node, out

    def path(self, x) -> list[str]:
        """The tests one input passed, root to leaf, e.g. ``"log10_total_eps <= 2.31"``."""
        x = np.asarray(x, dtype=float).ravel()
        node, out = 0, []
        while self.feature[node] != LEAF:
            f, t = self.feature[node], self.threshold[node]
            name = self.feature_names[f]
            if x[f] <= t:
                out.append(f"{name} = {x[f]:.4g} <= {t:.4g}")
                node = self.left[node]
            else:
                out.append(f"{name} = {x[f]:.4g} > {t:.4g}")
                node = self.right[node]
        out.append(f"leaf {node}: {self.labels[self.label[node]]} (training regret {self.regret[node]:.3g} "
                   f"over {self.cells[node]} training rows)")
        return out

    @property
    def depth(self) -> int:
        depth = np.zeros(self.feature.size, dtype=np.int64)
        for i in range(self.feature.size):
            if self.feature[i] != LEAF:
                depth[self.left[i]] = depth[self.right[i]] = depth[i] + 1
        return int(depth.max())

    # ---------------------------------------------------------------- files
    def to_dict(self) -> dict:
        return {"labels": self.labels, "feature_names": self.feature_names,
                "nodes": {"feature": self.feature.tolist(), "threshold": [float(t) for t in self.threshold],
                          "left": self.left.tolist(), "right": self.right.tolist(), "label": self.label.tolist(),
                          "cells": self.cells.tolist(), "regret": [round(float(r), 6) for r in self.regret]}}

    @classmethod
    def from_dict(cls, d: dict) -> "RegretTree":
        try:
            nodes = d["nodes"]
            return cls(nodes["feature"], nodes["threshold"], nodes["left"], nodes["right"], nodes["label"],
                       nodes["cells"], nodes["regret"], d["labels"], d["feature_names"])
        except (KeyError, TypeError) as exc:
            raise InvalidParameter(f"a selector tree is missing {exc}") from None


def _best_split(X: np.ndarray, R: np.ndarray, min_leaf: int):
    """``(cost, feature, threshold)`` of the best split of the cells ``X``, ``R``, or None."""
    n = X.shape[0]
    best = None
    total = R.sum(axis=0)
    for f in range(X.shape[1]):
        order = np.argsort(X[:, f], kind="stable")
        xs = X[order, f]
        left = np.cumsum(R[order], axis=0)[:-1]            # left child = first i + 1 cells
        cost = left.min(axis=1) + (total - left).min(axis=1)
        sizes = np.arange(1, n)
        ok = (sizes >= min_leaf) & (n - sizes >= min_leaf) & (xs[:-1] < xs[1:])
        if not ok.any():
            continue
        cost = np.where(ok, cost, np.inf)
        i = int(np.argmin(cost))
        if best is None or cost[i] < best[0]:
            best = (float(cost[i]), f, float((xs[i] + xs[i + 1]) / 2))
    return best


def fit(X, R, labels, feature_names, max_depth: int = 5, min_leaf: int = 20) -> RegretTree:
    """The greedy regret-minimising tree of ``X`` (cells x features) and ``R`` (cells x labels)."""
    X = np.asarray(X, dtype=float)
    R = np.asarray(R, dtype=float)
    if X.ndim != 2 or R.ndim != 2 or X.shape[0] != R.shape[0] or X.shape[0] == 0:
        raise InvalidParameter(f"fit needs X (cells x features) and R (cells x labels) with the same cells, "
                               f"got {X.shape} and {R.shape}")
    if R.shape[1] != len(labels) or X.shape[1] != len(feature_names):
        raise InvalidParameter("fit: the labels and feature names must match R's and X's columns")
    if not np.isfinite(R).all() or not np.isfinite(X).all():
        raise InvalidParameter("fit: regrets and features must be finite")
    nodes = {k: [] for k in ("feature", "threshold", "left", "right", "label", "cells", "regret")}

    def add(idx, depth) -> int:
        me = len(nodes["feature"])
        sums = R[idx].sum(axis=0)
        a = int(np.argmin(sums))
        for k, v in (("feature", LEAF), ("threshold", 0.0), ("left", LEAF), ("right", LEAF), ("label", a),
                     ("cells", idx.size), ("regret", sums[a] / idx.size)):
            nodes[k].append(v)
        if depth >= max_depth or idx.size < 2 * min_leaf:
            return me
        split = _best_split(X[idx], R[idx], min_leaf)
        if split is None or split[0] >= sums[a] * (1 - 1e-9):
            return me
        _, f, t = split
        go_left = X[idx, f] <= t
        nodes["feature"][me], nodes["threshold"][me] = f, t
        nodes["left"][me] = add(idx[go_left], depth + 1)
        nodes["right"][me] = add(idx[~go_left], depth + 1)
        return me

    add(np.arange(X.shape[0]), 0)
    return RegretTree(**nodes, labels=labels, feature_names=feature_names)
