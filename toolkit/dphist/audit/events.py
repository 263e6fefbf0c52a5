"""Output events: what the auditor looks at in each run, and how it picks one event per test.

Features of one run, for a pair whose changed bin is ``j`` (:data:`FEATURES`):

* ``bin``        - the published estimate of bin ``j`` (real);
* ``total``      - the sum of the estimate, the widest range query (real);
* ``noisy-bin``  - H~ at bin ``j``, the initializer's output (real; absent without one);
* ``bin-and-noisy`` - the pair (estimate at ``j``, H~ at ``j``) on a 16 x 16 grid of
  quantile cells (joint: two independent noisy views of bin ``j`` leak more
  together than either alone, e.g. a finalizer that cheats behind an honest
  initializer);
* ``partition``  - the set partition of the domain (categorical);
* ``group``      - which bins share ``j``'s group (categorical);
* ``order``      - the sorted order of the estimate (a stable argsort; categorical); on
  domains of more than :data:`FULL_ORDER_BINS` bins, where every full order is
  new, the rank of bin ``j`` in it (how many bins publish less than ``j``);
* ``shape``      - which neighbouring bins publish equal values, i.e. the level
  sets of the output (categorical; shows a partition or a truncated transform
  even when it is not reported).

Choosing the event (in the spirit of DP-Sniper, Bichsel et al. S&P 2021, and
StatDP, Ding et al. CCS 2018).  For a real feature the candidate events are
``{f > t}`` and ``{f <= t}`` for ``t`` on a grid of 127 quantiles of the pooled
selection samples: for the Laplace family these are exactly the likelihood
ratio's level sets.  For a categorical feature the categories are ranked by
their estimated likelihood ratio ``P[c | x] / P[c | x']`` (counts + 1/2) and the
candidates are the unions of the top ``k``; the joint feature is treated the
same way, its categories being the grid cells (edges from the selection batch).  Each candidate is scored by the
bound :func:`~dphist.audit.bounds.epsilon_lower_bound` it WOULD give if the
estimation batch showed the selection frequencies, and the best one is kept.
The selection samples are then discarded: the bound is computed on a fresh,
independent batch, so the choice cannot bias it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .bounds import epsilon_lower_bound
from .sampling import Outputs

#: (name, kind) of every feature, in a fixed order (the number of tests is fixed before any run)
FEATURES: tuple[tuple[str, str], ...] = (
    ("bin", "real"), ("total", "real"), ("noisy-bin", "real"), ("bin-and-noisy", "joint"),
    ("partition", "categorical"), ("group", "categorical"), ("order", "categorical"), ("shape", "categorical"),
)
#: the features that need H~
NOISY_FEATURES = frozenset({"noisy-bin", "bin-and-noisy"})


def features_for(has_initializer: bool) -> tuple[tuple[str, str], ...]:
    """The features an audit uses: all of them, minus those on H~ when the pipeline has no initializer.

    Decided from the pipeline's structure (public) before any run, so the number of tests is fixed.
    """
    return tuple(f for f in FEATURES if has_initializer or f[0] not in NOISY_FEATURES)


#: above this many bins the order feature is the rank of the changed bin
FULL_ORDER_BINS = 16
_QUANTILES = np.arange(1, 128) / 128.0
_MAX_CATEGORIES = 512
_MULTIPLIERS = np.random.default_rng(0x5EED_A0D1).integers(1, 2**63, size=1 << 12, dtype=np.uint64) | np.uint64(1)


def row_hash(rows: np.ndarray) -> np.ndarray:
    """A 64-bit hash of every row of a small-integer matrix (random linear form mod 2^64)."""
    rows = np.asarray(rows)
    if rows.shape[1] == 0:
        return np.zeros(rows.shape[0], dtype=np.uint64)
    if rows.shape[1] > _MULTIPLIERS.size:
        raise ValueError(f"row_hash supports up to {_MULTIPLIERS.size} columns")
    with np.errstate(over="ignore"):
        return ((rows.astype(np.uint64) + np.uint64(1)) * _MULTIPLIERS[:rows.shape[1]]).sum(axis=1, dtype=np.uint64)


def _level_sets(estimate: np.ndarray) -> np.ndarray:
    d = np.abs(np.diff(estimate, axis=1))
    return d <= 1e-9 * (1.0 + np.abs(estimate[:, :-1]))


def extract(outputs: Outputs, j: int, names=None) -> dict[str, np.ndarray]:
    """The features ``names`` (default: all) of every run; ``j`` is the pair's changed bin."""
    est = outputs.estimate
    labels = outputs.labels
    rows = est.shape[0]
    if labels.strides[0] == 0:   # one partition for every trial (batched runs): hash it once
        labels = labels[:1]

    def per_trial(values):
        return np.broadcast_to(values, (rows,)) if values.shape[0] != rows else values

    makers = {
        "bin": lambda: est[:, j],
        "total": lambda: est.sum(axis=1),
        "noisy-bin": lambda: outputs.noisy[:, j] if outputs.noisy is not None else np.zeros(est.shape[0]),
        "bin-and-noisy": lambda: np.column_stack(
            (est[:, j], outputs.noisy[:, j] if outputs.noisy is not None else np.zeros(est.shape[0]))),
        "partition": lambda: per_trial(row_hash(labels)),
        "group": lambda: per_trial(row_hash(labels == labels[:, j:j + 1])),
        "order": lambda: (row_hash(np.argsort(est, axis=1, kind="stable")) if est.shape[1] <= FULL_ORDER_BINS
                          else np.count_nonzero(est < est[:, j:j + 1], axis=1).astype(np.uint64)),
        "shape": lambda: row_hash(_level_sets(est)),
    }
    return {name: makers[name]() for name in (names if names is not None else makers)}


def describe_row(feature: str, outputs: Outputs, row: int, j: int) -> str:
    """A readable form of the categorical value the ``row``-th run took."""
    labels = np.asarray(outputs.labels[row])
    est = outputs.estimate[row]
    if feature == "partition":
        return "groups " + str([np.flatnonzero(labels == g).tolist() for g in range(labels.max() + 1)])
    if feature == "group":
        return f"group of bin {j} = {np.flatnonzero(labels == labels[j]).tolist()}"
    if feature == "order":
        if est.size > FULL_ORDER_BINS:
            return f"bin {j} has rank {int(np.count_nonzero(est < est[j]))}"
        return "order " + str(np.argsort(est, kind="stable").tolist())
    if feature == "shape":
        eq = _level_sets(est[None, :])[0]
        return "equal neighbours " + "".join("=" if e else "|" for e in eq)
    raise ValueError(feature)


_GRID = 16


def grid_edges(values: np.ndarray) -> tuple[tuple[float, ...], ...]:
    """Inner edges of ``_GRID`` quantile cells for each column of ``values`` (from selection runs)."""
    qs = np.arange(1, _GRID) / _GRID
    return tuple(tuple(np.unique(np.quantile(values[:, c], qs)).tolist()) for c in range(values.shape[1]))


def grid_cells(values: np.ndarray, edges) -> np.ndarray:
    """The cell number of every row: mixed-radix digits of each column's cell index."""
    cell = np.zeros(values.shape[0], dtype=np.int64)
    for c, e in enumerate(edges):
        cell = cell * (_GRID + 1) + np.searchsorted(np.asarray(e), values[:, c], side="right")
    return cell


def _member(values: np.ndarray, members: np.ndarray) -> np.ndarray:
    """``values`` in ``members`` by binary search (np.isin sorts the long side: slower here)."""
    members = np.sort(members)
    idx = np.minimum(np.searchsorted(members, values), members.size - 1)
    return members[idx] == values


@dataclass(frozen=True)
class Event:
    """A set of outputs, fixed before the estimation batch is drawn."""

    feature: str
    kind: str                                   #: "above", "at-most", "in" or "cells"
    threshold: float = 0.0
    values: tuple[int, ...] = ()                #: category hashes ("in") or cell numbers ("cells")
    text: str = ""                              #: a readable description
    edges: tuple[tuple[float, ...], ...] = ()   #: inner cell edges of each column ("cells")

    def indicator(self, values: np.ndarray) -> np.ndarray:
        if self.kind == "above":
            return values > self.threshold
        if self.kind == "at-most":
            return values <= self.threshold
        if self.kind == "cells":
            return _member(grid_cells(values, self.edges), np.array(self.values, dtype=np.int64))
        return _member(values, np.array(self.values, dtype=np.uint64))

    def hits(self, values: np.ndarray) -> int:
        return int(np.count_nonzero(self.indicator(values)))


@dataclass(frozen=True)
class Candidate:
    event: Event
    projected: float        #: the bound the selection frequencies would give


def _best(k1: np.ndarray, n1: int, k2: np.ndarray, n2: int, n_est: int, level: float) -> tuple[int, float]:
    """Index and projected bound of the best candidate, frequencies scaled to the estimation size."""
    scores = epsilon_lower_bound(k1 * (n_est / n1), n_est, k2 * (n_est / n2), n_est, level)
    i = int(np.argmax(scores))
    return i, float(scores[i])


def select_real(feature: str, a: np.ndarray, b: np.ndarray, n_est: int, level: float) -> Candidate | None:
    """The threshold event on a real feature that most separates ``a`` (more likely) from ``b``."""
    finite_a, finite_b = a[np.isfinite(a)], b[np.isfinite(b)]
    if finite_a.size == 0 or finite_b.size == 0:
        return None
    grid = np.unique(np.quantile(np.concatenate([finite_a, finite_b]), _QUANTILES))
    sa, sb = np.sort(a), np.sort(b)
    at_most_a = np.searchsorted(sa, grid, side="right")
    at_most_b = np.searchsorted(sb, grid, side="right")
    k1 = np.concatenate([a.size - at_most_a, at_most_a])
    k2 = np.concatenate([b.size - at_most_b, at_most_b])
    i, score = _best(k1, a.size, k2, b.size, n_est, level)
    kind = "above" if i < grid.size else "at-most"
    t = float(grid[i % grid.size])
    op = ">" if kind == "above" else "<="
    return Candidate(Event(feature, kind, threshold=t, text=f"{feature} {op} {t:.6g}"), score)


def select_categorical(feature: str, a: np.ndarray, b: np.ndarray, n_est: int, level: float,
                       describe) -> Candidate | None:
    """The union of the categories most likelier under ``a`` than under ``b`` (top-k by ratio).

    ``describe(row)`` names the value of row ``row`` of ``concatenate([a, b])``.
    """
    cats, inverse = np.unique(np.concatenate([a, b]), return_inverse=True)
    if cats.size < 2:
        return None
    ca = np.bincount(inverse[:a.size], minlength=cats.size)
    cb = np.bincount(inverse[a.size:], minlength=cats.size)
    ratio = ((ca + 0.5) / a.size) / ((cb + 0.5) / b.size)
    rank = np.argsort(-ratio, kind="stable")[:_MAX_CATEGORIES]
    k1, k2 = np.cumsum(ca[rank]), np.cumsum(cb[rank])
    i, score = _best(k1, a.size, k2, b.size, n_est, level)
    chosen = rank[:i + 1]
    order = np.argsort(inverse, kind="stable")
    first_rows = order[np.searchsorted(inverse[order], chosen)]
    shown = [describe(int(r)) for r in first_rows[:3]]
    more = f" (+{chosen.size - 3} more)" if chosen.size > 3 else ""
    text = f"{feature} in {{{'; '.join(shown)}{more}}}"
    return Candidate(Event(feature, "in", values=tuple(int(c) for c in cats[chosen]), text=text), score)


def select_joint(feature: str, a: np.ndarray, b: np.ndarray, n_est: int, level: float) -> Candidate | None:
    """The union of quantile-grid cells most likelier under ``a`` than under ``b`` (top-k by ratio)."""
    edges = grid_edges(np.concatenate([a, b]))
    if all(len(e) == 0 for e in edges):
        return None
    cand = select_categorical(feature, grid_cells(a, edges).astype(np.uint64),
                              grid_cells(b, edges).astype(np.uint64), n_est, level, lambda row: "")
    if cand is None:
        return None
    cells = cand.event.values
    text = f"{feature} in {len(cells)} of {(_GRID) ** len(edges)} quantile cells"
    return Candidate(Event(feature, "cells", values=cells, text=text, edges=edges), cand.projected)
