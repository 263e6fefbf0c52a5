"""The audit: search neighbouring pairs and output events for a privacy loss above epsilon.

For every pair ``(x, x')`` of the family (:mod:`.pairs`):

1. **Selection.**  ``selection`` runs on ``x`` and ``selection`` runs on ``x'``
   (their own seeds); for every feature (:mod:`.events`) and both directions
   (``x`` over ``x'``, ``x'`` over ``x``) the event with the best projected bound
   is chosen.
2. **Estimation.**  ``samples`` fresh runs on each side (independent seeds);
   each chosen event's hits are counted on both sides and turned into a
   Clopper-Pearson lower bound on the privacy loss (:mod:`.bounds`).

The number of tests ``m = pairs x features x 2`` is fixed before any run (the
features on H~ are dropped when the pipeline has no initializer);
each bound uses level ``alpha / (2 m)`` per one-sided interval (Bonferroni), so
the chance that an epsilon-DP algorithm gets ANY bound above epsilon is at most
``alpha``.  The audit fails the algorithm when the largest bound exceeds
epsilon; that test and its counts are the witness.

Randomness: one :class:`numpy.random.SeedSequence` (from ``seed``, or from the
OS when ``seed`` is None; its entropy is recorded in the result either way);
pair ``i`` uses child ``i``, split into four independent streams (selection and
estimation, on ``x`` and on ``x'``).  ``audit(..., seed=result.seed)``
reproduces a result exactly (same pairs, samples and batched/looped path).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ..components.base import Component
from ..errors import InvalidParameter
from ..kernel import validate_epsilon
from ..pipeline import Pipeline
from ..presets import make_algorithm
from .bounds import cp_lower, cp_upper, detectable_epsilon, epsilon_lower_bound, per_side_level
from .events import Event, features_for, describe_row, extract, select_categorical, select_joint, select_real
from ..kernel.persons import check_contributions
from .pairs import Pair, pair_family
from .sampling import Outputs, batch_capable, default_workers, forked, forked_pool, sample

#: default estimation runs per side and pair: (batched, looped), by pair family
DEFAULT_SAMPLES = {"full": (200_000, 1_000), "fast": (20_000, 300)}
MIN_SAMPLES = 100
#: per pair, estimate the events whose projected bound is within this margin of the best (nats) ...
PRUNE_MARGIN = 0.5
#: ... and at most this many
MAX_ESTIMATED = 4


@dataclass
class Witness:
    """The test with the largest bound: a pair, an event and the counts on both sides."""

    pair: Pair
    event: Event
    direction: str               #: "x over x'" (P[E|x] > P[E|x']) or "x' over x"
    hits: tuple[int, int]        #: (hits on the favoured side, hits on the other side)
    samples: int                 #: runs per side
    bounds: tuple[float, float]  #: (CP lower bound of the favoured side, CP upper bound of the other)
    epsilon_lower_bound: float

    def to_dict(self) -> dict[str, Any]:
        return {"pair": self.pair.to_dict(), "event": self.event.text, "feature": self.event.feature,
                "direction": self.direction, "hits": list(self.hits), "samples": self.samples,
                "bounds": list(self.bounds), "epsilon_lower_bound": self.epsilon_lower_bound}

    def describe(self) -> str:
        k1, k2 = self.hits
        return (f"{self.pair.describe()}; event [{self.event.text}] ({self.direction}): "
                f"{k1}/{self.samples} vs {k2}/{self.samples}")


@dataclass
class AuditResult:
    """The outcome of :func:`audit`."""

    algorithm: str
    epsilon: float
    alpha: float
    epsilon_lower_bound: float   #: largest lower confidence bound over all tests (>= 0)
    passed: bool                 #: epsilon_lower_bound <= epsilon
    witness: Witness | None      #: the test behind the bound (None if no event ever separated the sides)
    samples: int                 #: estimation runs per side and pair
    selection_samples: int       #: selection runs per side and pair (discarded before estimation)
    pairs: int
    tests: int                   #: m = pairs x features x 2 directions
    level: float                 #: per one-sided interval, alpha / (2 m)
    detectable: float            #: the largest bound these sample sizes can give at all
    seed: int                    #: entropy of the root SeedSequence (reproduces the audit)
    batched: bool                #: vectorised sampling (True) or one run per trial
    seconds: float
    rows: list[dict[str, Any]] = field(default_factory=list, repr=False)  #: every test

    def to_dict(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in ("algorithm", "epsilon", "alpha", "epsilon_lower_bound", "passed",
                                            "samples", "selection_samples", "pairs", "tests", "level",
                                            "detectable", "seed", "batched", "seconds")}
        out["seed"] = str(self.seed)  # 128-bit entropy does not fit JSON numbers
        out["witness"] = self.witness.to_dict() if self.witness else None
        out["rows"] = self.rows
        return out

    def __str__(self) -> str:
        verdict = "PASS" if self.passed else "FAIL"
        head = (f"{verdict} {self.algorithm}: epsilon = {self.epsilon:g}, lower bound = "
                f"{self.epsilon_lower_bound:.3f} (alpha = {self.alpha:g}, {self.tests} tests, "
                f"{self.samples} samples per side, {self.seconds:.1f} s)")
        return head + (f"\n  witness: {self.witness.describe()}" if self.witness else "")


def resolve_algorithm(algorithm) -> tuple[Pipeline, str]:
    """A pipeline and its display name from a preset name, a Pipeline or a component (instance or class)."""
    if isinstance(algorithm, str):
        return make_algorithm(algorithm), algorithm
    if isinstance(algorithm, Pipeline):
        return algorithm, algorithm.name
    if isinstance(algorithm, type) and issubclass(algorithm, Component):
        algorithm = algorithm()
    if isinstance(algorithm, Component):
        from ..testing import harness_pipeline
        pipe = harness_pipeline(algorithm)
        pipe.name = f"{algorithm.kind} {algorithm.name}"
        return pipe, pipe.name
    raise InvalidParameter(f"cannot audit {algorithm!r}: give a preset name, a Pipeline or a component")


def validate_settings(epsilon, alpha, samples, selection) -> tuple[float, float]:
    eps = validate_epsilon(epsilon)
    try:
        a = float(alpha)
    except (TypeError, ValueError):
        raise InvalidParameter(f"alpha must be a number in (0, 1), got {alpha!r}") from None
    if not (0.0 < a < 1.0):
        raise InvalidParameter(f"alpha must be in (0, 1), got {alpha!r}")
    for what, value in (("samples", samples), ("selection", selection)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise InvalidParameter(f"{what} must be an integer, got {value!r}")
        if value < MIN_SAMPLES:
            raise InvalidParameter(f"{what} must be at least {MIN_SAMPLES}, got {value}")
    return eps, a


def _select(features, fx: dict, fy: dict, sel_x: Outputs, sel_y: Outputs, j: int, n_est: int, level: float,
            prune: bool):
    """One event (or None) per (feature, direction) from the selection features (``prune``: see below)."""
    chosen = {}
    for feature, kind in features:
        for direction, (a, b, oa, ob) in (("x over x'", (fx, fy, sel_x, sel_y)),
                                          ("x' over x", (fy, fx, sel_y, sel_x))):
            va, vb = a[feature], b[feature]
            if kind == "real":
                cand = select_real(feature, va, vb, n_est, level)
            elif kind == "joint":
                cand = select_joint(feature, va, vb, n_est, level)
            else:
                def describe(row, oa=oa, ob=ob, feature=feature):
                    out, r = (oa, row) if row < oa.trials else (ob, row - oa.trials)
                    return describe_row(feature, out, r, j)
                cand = select_categorical(feature, va, vb, n_est, level, describe)
            chosen[(feature, direction)] = cand
    if not prune:
        return {key: (c.event if c is not None else None) for key, c in chosen.items()}
    # Batched audits: estimate only the promising events, because there the features of 10^6 runs
    # cost more than the runs.  The choice uses the selection runs alone, so the bounds stay valid;
    # the unestimated tests still count in m (which only makes alpha / (2m) smaller).  Looped audits
    # estimate every event: counting is cheap next to the runs, and a union of many categories can
    # look better on the selection runs than it is (the order feature on DAWA's twin did).
    scores = [c.projected for c in chosen.values() if c is not None and np.isfinite(c.projected)]
    cutoff = max(scores) - PRUNE_MARGIN if scores else np.inf
    kept = sorted((c.projected for c in chosen.values() if c is not None and c.projected >= cutoff),
                  reverse=True)[:MAX_ESTIMATED]
    floor = kept[-1] if kept else np.inf
    return {key: (c.event if c is not None and c.projected >= max(cutoff, floor) else None)
            for key, c in chosen.items()}


def _count(pipeline, counts, epsilon, n, seq, batched, pool, j, events, noise) -> dict:
    needed = sorted({e.feature for e in events})
    hits = {e: 0 for e in events}
    if not events:
        return hits
    for block in sample(pipeline, counts, epsilon, n, seq, batched=batched, pool=pool, noise=noise):
        feats = extract(block, j, needed)
        for e in events:
            hits[e] += e.hits(feats[e.feature])
    return hits


def _collect(pipeline, counts, epsilon, n, seq, batched, pool, noise) -> Outputs:
    blocks = list(sample(pipeline, counts, epsilon, n, seq, batched=batched, pool=pool, noise=noise))
    if len(blocks) == 1:
        return blocks[0]
    noisy = None if blocks[0].noisy is None else np.concatenate([b.noisy for b in blocks])
    return Outputs(np.concatenate([b.estimate for b in blocks]), np.concatenate([b.labels for b in blocks]), noisy)


@dataclass(frozen=True)
class _Job:
    """Everything one pair's audit needs (shared with forked workers, never pickled)."""

    pipeline: Pipeline
    family: tuple
    seqs: tuple
    features: tuple
    epsilon: float
    n_sel: int
    n_est: int
    level: float
    batched: bool
    noise: str


def _audit_pair(job: _Job, index: int, pool=None) -> tuple[list[dict[str, Any]], Witness | None]:
    """Selection, then estimation, for pair ``index``: its rows and its strongest test."""
    pipeline, pair, eps, noise, batched = job.pipeline, job.family[index], job.epsilon, job.noise, job.batched
    n_sel, n_est, level = job.n_sel, job.n_est, job.level
    x, y, j = pair.counts, pair.counts_prime, pair.bin
    sel_x_seq, sel_y_seq, est_x_seq, est_y_seq = job.seqs[index].spawn(4)
    sel_x = _collect(pipeline, x, eps, n_sel, sel_x_seq, batched, pool, noise)
    sel_y = _collect(pipeline, y, eps, n_sel, sel_y_seq, batched, pool, noise)
    names = [f for f, _ in job.features]
    chosen = _select(job.features, extract(sel_x, j, names), extract(sel_y, j, names), sel_x, sel_y, j,
                     n_est, level, prune=batched)
    del sel_x, sel_y   # selection runs are never reused for estimation
    events = sorted({e for e in chosen.values() if e is not None}, key=lambda e: e.text)
    hx = _count(pipeline, x, eps, n_est, est_x_seq, batched, pool, j, events, noise)
    hy = _count(pipeline, y, eps, n_est, est_y_seq, batched, pool, j, events, noise)
    rows: list[dict[str, Any]] = []
    best: Witness | None = None
    for (feature, direction), event in chosen.items():
        if event is None:   # no candidate, or pruned on the selection runs
            rows.append({"pair": pair.name, "feature": feature, "direction": direction, "event": None,
                         "hits": None, "epsilon_lower_bound": None})
            continue
        k1, k2 = (hx[event], hy[event]) if direction == "x over x'" else (hy[event], hx[event])
        lb = float(epsilon_lower_bound(k1, n_est, k2, n_est, level))
        rows.append({"pair": pair.name, "feature": feature, "direction": direction, "event": event.text,
                     "hits": [k1, k2], "epsilon_lower_bound": lb if math.isfinite(lb) else None})
        if math.isfinite(lb) and (best is None or lb > best.epsilon_lower_bound):
            best = Witness(pair, event, direction, (k1, k2), n_est,
                           (float(cp_lower(k1, n_est, level)), float(cp_upper(k2, n_est, level))), lb)
    return rows, best


def _forked_pair(index: int):
    return _audit_pair(forked("job"), index)


def audit(algorithm, epsilon: float = 1.0, *, samples: int | None = None, alpha: float = 1e-3,
          seed: int | None = None, selection: int | None = None, pairs: str | Sequence[Pair] = "full",
          workers: int | None = None, noise: str = "float", contributions: int = 1) -> AuditResult:
    """Audit ``algorithm`` (preset name, :class:`~dphist.Pipeline` or component) for ``epsilon``-DP.

    ``samples``: estimation runs per side and pair (default 200,000 when the
    pipeline is batch-capable, else 1,000; with ``pairs="fast"`` 20,000 and 300);
    ``selection``: selection runs per
    side and pair (default ``samples // 4``, between 100 and 50,000);
    ``pairs``: ``"full"``, ``"fast"`` or a list of :class:`Pair`;
    ``workers``: processes (default: up to 2 cores): whole pairs in parallel, or, with one
    pair, a looped sample split over them; results do not depend on it;
    ``noise``: ``"float"`` (research mode's seeded float Laplace; batched when the
    components allow) or ``"exact"`` (release mode's exact discrete samplers, driven by
    the audit's seeds; always looped);
    ``contributions``: audit person-level privacy at ``k`` records per person: the
    pipeline runs calibrated to ``k`` (:meth:`~dphist.Pipeline.at_contributions`) and
    every pair differs by ``k`` records in its changed bin (:meth:`Pair.scaled`,
    L1 distance ``k``).
    """
    t0 = time.perf_counter()
    eps, a = validate_settings(epsilon, alpha, samples, selection)
    pipeline, name = resolve_algorithm(algorithm)
    family = pair_family(pairs) if isinstance(pairs, str) else tuple(pairs)
    if not family or not all(isinstance(p, Pair) for p in family):
        raise InvalidParameter("pairs must be 'full', 'fast' or a non-empty list of dphist.audit.Pair")
    k = check_contributions(contributions)
    if k != 1:
        pipeline = pipeline.at_contributions(k)
        family = tuple(p.scaled(k) for p in family)
    if noise not in ("float", "exact"):
        raise InvalidParameter(f"noise must be 'float' or 'exact', got {noise!r}")
    batched = batch_capable(pipeline) and noise == "float"
    batched_default, looped_default = DEFAULT_SAMPLES["fast" if pairs == "fast" else "full"]
    n_est = int(samples) if samples is not None else (batched_default if batched else looped_default)
    n_sel = int(selection) if selection is not None else int(min(max(n_est // 4, MIN_SAMPLES), 50_000))
    workers = default_workers() if workers is None else max(1, int(workers))
    features = features_for(pipeline.initializer is not None)
    tests = len(family) * len(features) * 2
    level = per_side_level(a, tests)
    root = np.random.SeedSequence(seed)

    job = _Job(pipeline, family, tuple(root.spawn(len(family))), features, eps, n_sel, n_est, level,
               batched, noise)
    rows: list[dict[str, Any]] = []
    best: Witness | None = None
    if workers > 1 and len(family) > 1:      # whole pairs in parallel
        with forked_pool(workers, job=job) as pool:
            outcomes = list(pool.map(_forked_pair, range(len(family)))) if pool else None
    else:
        outcomes = None
    if outcomes is None:                     # pairs in turn; a looped sample split over the workers
        with forked_pool(1 if batched else workers, pipeline=pipeline) as pool:
            outcomes = [_audit_pair(job, i, pool) for i in range(len(family))]
    for pair_rows, pair_best in outcomes:
        rows.extend(pair_rows)
        if pair_best is not None and (best is None or pair_best.epsilon_lower_bound > best.epsilon_lower_bound):
            best = pair_best
    bound = max(best.epsilon_lower_bound, 0.0) if best is not None else 0.0
    return AuditResult(algorithm=name, epsilon=eps, alpha=a, epsilon_lower_bound=bound, passed=bound <= eps,
                       witness=best, samples=n_est, selection_samples=n_sel, pairs=len(family), tests=tests,
                       level=level, detectable=detectable_epsilon(n_est, level), seed=int(root.entropy),
                       batched=batched, seconds=time.perf_counter() - t0, rows=rows)
