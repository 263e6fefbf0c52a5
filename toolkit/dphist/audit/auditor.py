"""The audit: search neighbouring pairs and output events for a privacy loss above epsilon.

What is audited (:func:`audit`): a preset or a pipeline as it is, or a component
inside every pipeline of :func:`~dphist.audit.harness.audit_pipelines` (a
finalizer with multi-bin groups, a sorter followed by a grouping partitioner,
an initializer with the whole budget, ...).  The work is a list of *cases*
(pipeline, pair, mode), fixed by the level (:data:`LEVELS`) or by the user's
own pairs, and run in this order:

1. **Fixed cases**: the level's pairs on the first pipeline in research mode,
   the release-mode cases (release mode's exact samplers: what is published),
   the remaining pairs, the component's other pipelines on their pairs.
2. **Search** (:mod:`dphist.audit.search`): random restarts and local moves on an estimated
   loss, on runs of its own; the ``keep`` best pairs become cases.
3. **Confirmations**: the ``confirm`` events whose estimation counts came
   closest to a failure are counted again on fresh batches ``confirm_factor``
   times larger (one test each), which is how a leak slightly above epsilon
   (an initializer with 1/1.4 of its noise) is certified.

Each case is a selection batch on both sides, from which one event per
feature and direction is chosen (:mod:`.events`), then a fresh estimation batch
whose counts give a Clopper-Pearson lower bound (:mod:`dphist.audit.bounds`).  No run is
ever used twice: the search's and the selection's runs only choose; the bound
comes from runs drawn after the choice.  The number of tests
``m = sum over cases of features x 2 + keep x features x 2 + confirm`` is fixed
before any run; each bound uses level ``alpha / (2 m)`` per one-sided interval
(Bonferroni), so the chance that an epsilon-DP algorithm gets ANY bound above
epsilon is at most ``alpha``.  The audit fails the algorithm when the largest
bound exceeds epsilon; that test and its counts are the witness.  Tests not
run (a time budget, or ``stop_on_failure`` after a certified failure) still
count in ``m``: the bound stays valid.

Randomness: one :class:`numpy.random.SeedSequence` (from ``seed``, or from the
OS when ``seed`` is None; its entropy is recorded in the result either way);
case ``i`` uses child ``i`` (split into four streams: selection and estimation
on ``x`` and on ``x'``), the search and the confirmations children of their own.
``audit(..., seed=result.seed)`` reproduces a result exactly (without a time
budget, which makes the cut depend on the machine's speed).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from typing import Any, Sequence

import numpy as np

from ..components.base import Component
from ..errors import InvalidParameter
from ..kernel import validate_epsilon
from ..pipeline import Pipeline, supports_dims
from ..presets import make_algorithm
from .bounds import cp_lower, cp_upper, detectable_epsilon, epsilon_lower_bound, per_side_level
from .events import Event, features_for, describe_row, extract, select_categorical, select_joint, select_real
from ..kernel.persons import check_contributions
from .pairs import (FAST_PAIRS, FULL_PAIRS, GRID_FAST_PAIRS, GRID_PAIRS, STRUCTURED_PAIRS,  # noqa: F401
                    THOROUGH_PAIRS, Pair, as_pair, pair_family)
from .search import hill_climb, random_grid_pair, random_pair
from .sampling import NOISES, Outputs, batch_capable, default_workers, forked, forked_pool, sample

MIN_SAMPLES = 100
#: per pair, estimate the events whose projected bound is within this margin of the best (nats) ...
PRUNE_MARGIN = 0.5
#: ... and at most this many
MAX_ESTIMATED = 4
#: a batched case draws at most this many values per side (n_est x bins), unless samples= is given
BATCHED_ELEMENTS = 1 << 24
#: the search ranks pairs by the bound their best event would give at this loose level
SEARCH_LEVEL = 0.05
#: spawn keys of the search's and the confirmations' seeds (cases use their index)
_SEARCH_KEY, _CONFIRM_KEY, _MOVES_KEY = 1 << 20, (1 << 20) + 1, (1 << 20) + 2


@dataclass(frozen=True)
class Level:
    """What one audit level tries (see :data:`LEVELS`)."""

    name: str
    pairs: tuple          #: pairs of the first pipeline, in research mode
    secondary: tuple      #: pairs of the component's other pipelines (:mod:`.harness`)
    release: tuple        #: pairs of the first pipeline in release mode
    samples: tuple        #: estimation runs per side and pair: (batched, looped)
    search: int           #: search evaluations (0: no search)
    keep: int             #: pairs the search hands to the audit
    restarts: int         #: random restarts of the search
    search_samples: tuple  #: runs per side of one search evaluation: (batched, looped)
    confirm: int          #: confirmation tests (fresh runs on the most suspicious events)
    confirm_factor: int   #: confirmation runs = this x the estimation runs


_RELEASE_EXTRA = ("near-ties8", "ends8", "flat32-middle")
#: the audit levels: ``fast`` (CI), ``default``, ``thorough`` (wall time in BENCHMARKS.md)
LEVELS: dict[str, Level] = {
    "fast": Level("fast", FAST_PAIRS, FAST_PAIRS[:2], FAST_PAIRS[1:2], (20_000, 300), 0, 0, 0, (0, 0), 0, 0),
    "default": Level("default", FULL_PAIRS + STRUCTURED_PAIRS, FAST_PAIRS, FAST_PAIRS, (200_000, 1_000),
                     24, 4, 8, (20_000, 200), 2, 10),
    "thorough": Level("thorough", FULL_PAIRS + STRUCTURED_PAIRS + THOROUGH_PAIRS, FAST_PAIRS,
                      FAST_PAIRS + tuple(p for p in STRUCTURED_PAIRS if p.name in _RELEASE_EXTRA),
                      (1_000_000, 2_000), 80, 8, 16, (50_000, 300), 4, 10),
}
#: the old ``pairs=`` spellings of a level
_OLD_PAIRS = {"fast": "fast", "full": "default"}


@dataclass(frozen=True)
class Case:
    """One pipeline, one pair, one mode: selection then estimation, ``features x 2`` tests."""

    pipeline: int         #: index into the audit's pipelines
    pair: Pair | None     #: None for a search slot not filled (the time budget ran out)
    noise: str            #: "float", "exact" (research mode) or "release"
    origin: str           #: "family", "user", "search" or "release"


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
    pipeline: str = ""           #: the pipeline the runs went through
    mode: str = "float"          #: "float", "exact" (research mode) or "release"
    origin: str = "family"       #: "family", "user", "search", "release" or "confirm"

    def to_dict(self) -> dict[str, Any]:
        return {"pair": self.pair.to_dict(), "event": self.event.text, "feature": self.event.feature,
                "direction": self.direction, "hits": list(self.hits), "samples": self.samples,
                "bounds": list(self.bounds), "epsilon_lower_bound": self.epsilon_lower_bound,
                "pipeline": self.pipeline, "mode": self.mode, "origin": self.origin}

    def describe(self) -> str:
        k1, k2 = self.hits
        where = f" in {self.pipeline}" if self.pipeline else ""
        mode = " (release mode)" if self.mode == "release" else ""
        return (f"{self.pair.describe()}{where}{mode}; event [{self.event.text}] ({self.direction}): "
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
    audit_level: str = "default"   #: "fast", "default", "thorough", or "pairs" (the user's own)
    pipelines: list[str] = field(default_factory=list)   #: the pipelines audited
    skipped: int = 0               #: cases not run (time budget); their tests still count in m
    searched: list[dict[str, Any]] = field(default_factory=list, repr=False)  #: the search's picks
    notes: list[str] = field(default_factory=list)       #: pipelines or modes left out, and why

    @property
    def complete(self) -> bool:
        """Every planned case ran (False when the time budget ended the audit early)."""
        return self.skipped == 0

    def to_dict(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in ("algorithm", "epsilon", "alpha", "epsilon_lower_bound", "passed",
                                            "samples", "selection_samples", "pairs", "tests", "level",
                                            "detectable", "seed", "batched", "seconds", "audit_level",
                                            "pipelines", "skipped", "searched", "notes")}
        out["seed"] = str(self.seed)  # 128-bit entropy does not fit JSON numbers
        out["witness"] = self.witness.to_dict() if self.witness else None
        out["rows"] = self.rows
        return out

    def __str__(self) -> str:
        verdict = "PASS" if self.passed else "FAIL"
        head = (f"{verdict} {self.algorithm}: epsilon = {self.epsilon:g}, lower bound = "
                f"{self.epsilon_lower_bound:.3f} (alpha = {self.alpha:g}, {self.tests} tests, "
                f"{self.samples} samples per side, {self.audit_level}, {self.seconds:.1f} s)")
        if self.skipped:
            head += f"\n  incomplete: {self.skipped} cases not run (time budget); they count in the tests"
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


def _count(pipeline, counts, epsilon, n, seq, batched, pool, j, events, noise, index=0) -> dict:
    needed = sorted({e.feature for e in events})
    hits = {e: 0 for e in events}
    if not events:
        return hits
    for block in sample(pipeline, counts, epsilon, n, seq, batched=batched, pool=pool, noise=noise, index=index):
        feats = extract(block, j, needed)
        for e in events:
            hits[e] += e.hits(feats[e.feature])
    return hits


def _collect(pipeline, counts, epsilon, n, seq, batched, pool, noise, index=0) -> Outputs:
    blocks = list(sample(pipeline, counts, epsilon, n, seq, batched=batched, pool=pool, noise=noise, index=index))
    if len(blocks) == 1:
        return blocks[0]
    noisy = None if blocks[0].noisy is None else np.concatenate([b.noisy for b in blocks])
    return Outputs(np.concatenate([b.estimate for b in blocks]), np.concatenate([b.labels for b in blocks]), noisy)


@dataclass(frozen=True)
class _Job:
    """Everything the audit's runs need (shared with forked workers, never pickled)."""

    pipelines: tuple
    features: tuple          #: per pipeline
    batched: tuple           #: per pipeline, for research float noise
    epsilon: float
    samples: int | None      #: the user's estimation runs, or None (the level's)
    selection: int | None
    level_samples: tuple     #: (batched, looped)
    level: float             #: alpha / (2m)
    search_samples: tuple
    contributions: int = 1   #: records per person: every pair is scaled to it (Pair.scaled)


def _scaled(job: _Job, pair: Pair) -> Pair:
    return pair if job.contributions == 1 else pair.scaled(job.contributions)


def _sizes(job: _Job, case: Case) -> tuple[bool, int, int]:
    """(batched, estimation runs, selection runs) of a case."""
    batched = job.batched[case.pipeline] and case.noise == "float"
    n_est = int(job.samples) if job.samples is not None else job.level_samples[0 if batched else 1]
    if batched and job.samples is None:     # large domains: at most BATCHED_ELEMENTS values per side
        n_est = min(n_est, max(20_000, BATCHED_ELEMENTS // len(case.pair.x)))
    n_sel = int(job.selection) if job.selection is not None else int(min(max(n_est // 4, MIN_SAMPLES), 50_000))
    if batched and job.selection is None:   # large domains: bound the selection batch's memory
        n_sel = min(n_sel, max(10 * MIN_SAMPLES, (1 << 23) // len(case.pair.x)))
    return batched, n_est, n_sel


def check_workers(workers) -> None:
    """Refuse a ``workers`` that is not None or a positive integer."""
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, (int, np.integer))
                                or workers < 1):
        raise InvalidParameter(f"workers must be a positive integer, got {workers!r}")


def _seq(entropy: int, *key: int) -> np.random.SeedSequence:
    return np.random.SeedSequence(entropy, spawn_key=key)


def _audit_case(job: _Job, case: Case, seq: np.random.SeedSequence, pool=None):
    """Selection, then estimation, for one case: its rows, its strongest test, and its estimated events."""
    pipeline, pair, eps, noise = job.pipelines[case.pipeline], _scaled(job, case.pair), job.epsilon, case.noise
    batched, n_est, n_sel = _sizes(job, case)
    level, features, index = job.level, job.features[case.pipeline], case.pipeline
    x, y, j = pair.counts, pair.counts_prime, pair.bin
    sel_x_seq, sel_y_seq, est_x_seq, est_y_seq = seq.spawn(4)
    sel_x = _collect(pipeline, x, eps, n_sel, sel_x_seq, batched, pool, noise, index)
    sel_y = _collect(pipeline, y, eps, n_sel, sel_y_seq, batched, pool, noise, index)
    names = [f for f, _ in features]
    chosen = _select(features, extract(sel_x, j, names), extract(sel_y, j, names), sel_x, sel_y, j,
                     n_est, level, prune=batched)
    del sel_x, sel_y   # selection runs are never reused for estimation
    events = sorted({e for e in chosen.values() if e is not None}, key=lambda e: e.text)
    hx = _count(pipeline, x, eps, n_est, est_x_seq, batched, pool, j, events, noise, index)
    hy = _count(pipeline, y, eps, n_est, est_y_seq, batched, pool, j, events, noise, index)
    rows: list[dict[str, Any]] = []
    best: Witness | None = None
    estimated = []
    base = {"pair": pair.name, "pipeline": pipeline.name, "mode": noise, "origin": case.origin}
    for (feature, direction), event in chosen.items():
        if event is None:   # no candidate, or pruned on the selection runs
            rows.append({**base, "feature": feature, "direction": direction, "event": None,
                         "hits": None, "epsilon_lower_bound": None})
            continue
        k1, k2 = (hx[event], hy[event]) if direction == "x over x'" else (hy[event], hx[event])
        lb = float(epsilon_lower_bound(k1, n_est, k2, n_est, level))
        rows.append({**base, "feature": feature, "direction": direction, "event": event.text,
                     "hits": [k1, k2], "epsilon_lower_bound": lb if math.isfinite(lb) else None})
        estimated.append((event, direction, k1, k2, n_est))
        if math.isfinite(lb) and (best is None or lb > best.epsilon_lower_bound):
            best = Witness(pair, event, direction, (k1, k2), n_est,
                           (float(cp_lower(k1, n_est, level)), float(cp_upper(k2, n_est, level))), lb,
                           pipeline.name, noise, case.origin)
    return rows, best, estimated


def _score(job: _Job, pair: Pair, seq: np.random.SeedSequence) -> float:
    """The search's estimate for ``pair`` on the first pipeline: events chosen on one half of a
    small batch, their loose bound (level :data:`SEARCH_LEVEL`) on the other half (an in-sample
    score would reward unions of categories seen once)."""
    pipeline, eps = job.pipelines[0], job.epsilon
    pair = _scaled(job, pair)
    batched = job.batched[0]
    n = job.search_samples[0 if batched else 1]
    features = job.features[0]
    ax, ay, bx, by = seq.spawn(4)
    j, names = pair.bin, [f for f, _ in features]
    out_x = _collect(pipeline, pair.counts, eps, n, ax, batched, None, "float")
    out_y = _collect(pipeline, pair.counts_prime, eps, n, ay, batched, None, "float")
    chosen = _select(features, extract(out_x, j, names), extract(out_y, j, names), out_x, out_y, j, n,
                     SEARCH_LEVEL, prune=False)
    events = sorted({e for e in chosen.values() if e is not None}, key=lambda e: e.text)
    hx = _count(pipeline, pair.counts, eps, n, bx, batched, None, j, events, "float")
    hy = _count(pipeline, pair.counts_prime, eps, n, by, batched, None, j, events, "float")
    best = 0.0
    for (_, direction), event in chosen.items():
        if event is not None:
            k1, k2 = (hx[event], hy[event]) if direction == "x over x'" else (hy[event], hx[event])
            lb = float(epsilon_lower_bound(k1, n, k2, n, SEARCH_LEVEL))
            best = max(best, lb) if math.isfinite(lb) else best
    return best


def _confirm(job: _Job, case: Case, event: Event, direction: str, n: int, seq: np.random.SeedSequence,
             pool=None):
    """Fresh runs on both sides of a case for one event fixed before they are drawn: one test."""
    pipeline, pair = job.pipelines[case.pipeline], _scaled(job, case.pair)
    batched = job.batched[case.pipeline] and case.noise == "float"
    sx, sy = seq.spawn(2)
    hx = _count(pipeline, pair.counts, job.epsilon, n, sx, batched, pool, pair.bin, [event], case.noise,
                case.pipeline)[event]
    hy = _count(pipeline, pair.counts_prime, job.epsilon, n, sy, batched, pool, pair.bin, [event], case.noise,
                case.pipeline)[event]
    k1, k2 = (hx, hy) if direction == "x over x'" else (hy, hx)
    lb = float(epsilon_lower_bound(k1, n, k2, n, job.level))
    row = {"pair": pair.name, "pipeline": pipeline.name, "mode": case.noise, "origin": "confirm",
           "feature": event.feature, "direction": direction, "event": event.text, "hits": [k1, k2],
           "epsilon_lower_bound": lb if math.isfinite(lb) else None}
    witness = None
    if math.isfinite(lb):
        witness = Witness(pair, event, direction, (k1, k2), n, (float(cp_lower(k1, n, job.level)),
                                                                float(cp_upper(k2, n, job.level))), lb,
                          pipeline.name, case.noise, f"confirm ({case.origin})")
    return row, witness


def _forked_case(args):
    case, seq = args
    return _audit_case(forked("job"), case, seq)


def _forked_score(args):
    pair, seq = args
    return _score(forked("job"), pair, seq)


def _forked_confirm(args):
    return _confirm(forked("job"), *args)


def grid_level(level: Level) -> Level:
    """The level for a pipeline that runs on grids only: the 2-D families in place of the 1-D ones
    (:data:`GRID_FAST_PAIRS` at the fast level, :data:`GRID_PAIRS` otherwise); the level's search
    moves over grid pairs (:func:`~dphist.audit.search.random_grid_pair`, local moves in two
    dimensions), with the same evaluations, restarts and kept pairs as on 1-D."""
    pairs = GRID_FAST_PAIRS if level.name == "fast" else GRID_PAIRS
    return replace(level, pairs=pairs, secondary=GRID_FAST_PAIRS[:2], release=GRID_FAST_PAIRS[:1])


def _on_grids(level: Level) -> bool:
    return bool(level.pairs) and level.pairs[0].shape is not None


def resolve_level(level, pairs) -> tuple[str, tuple | None]:
    """The level's name and the user's own pairs (None: the level's families); the old
    ``pairs="fast"`` / ``pairs="full"`` still work, with a DeprecationWarning."""
    if isinstance(pairs, str):
        if pairs not in _OLD_PAIRS:
            raise InvalidParameter(f"pairs={pairs!r}: give your own pairs (a list of dphist.audit.Pair, strings "
                                   "such as '0,3,5:+1@2', or (x, x') histograms); the families are chosen by "
                                   f"level= ({', '.join(LEVELS)})")
        import warnings
        warnings.warn(f"audit(pairs={pairs!r}) is deprecated: use level={_OLD_PAIRS[pairs]!r} "
                      f"(the command line's --level {_OLD_PAIRS[pairs]})", DeprecationWarning, stacklevel=3)
        level, pairs = _OLD_PAIRS[pairs], None
    if level not in LEVELS:
        raise InvalidParameter(f"unknown audit level {level!r}; use one of {', '.join(LEVELS)}")
    if pairs is None:
        return level, None
    if isinstance(pairs, (Pair, str)) or not hasattr(pairs, "__iter__"):
        pairs = [pairs]
    family = tuple(as_pair(p, i) for i, p in enumerate(pairs))
    if not family:
        raise InvalidParameter("pairs is empty: give at least one pair, or leave it out for the level's families")
    return level, family


def validate_time_budget(time_budget) -> float | None:
    """``None`` (no limit) or a positive number of seconds."""
    if time_budget is None:
        return None
    try:
        t = float(time_budget)
    except (TypeError, ValueError):
        raise InvalidParameter(f"time budget must be a number of seconds, got {time_budget!r}") from None
    if isinstance(time_budget, bool) or not math.isfinite(t) or t <= 0:
        raise InvalidParameter(f"time budget must be a positive number of seconds, got {time_budget!r}")
    return t


def _plan(pipelines, level: Level, user_pairs, noise, releasable) -> list[Case]:
    """The fixed cases, in the order they run (a time budget cuts the tail)."""
    if user_pairs is not None:
        mode = noise or "float"
        return [Case(i, p, mode, "user") for i in range(len(pipelines)) for p in user_pairs]
    mode = noise or "float"
    fast = FAST_PAIRS + GRID_FAST_PAIRS
    cases = [Case(0, p, mode, "family") for p in level.pairs if p in fast]
    if noise is None and releasable:
        cases += [Case(0, p, "release", "release") for p in level.release]
    cases += [Case(0, p, mode, "family") for p in level.pairs if p not in fast]
    cases += [Case(i, p, mode, "family") for i in range(1, len(pipelines)) for p in level.secondary]
    return cases


class _Stopped:
    """Marks an item not run because the audit had already failed (``stop_on_failure``)."""


def _pool_map(pool, fn, local, items, deadline, stop, on_result, split=None):
    """``[fn(item)]`` in order, ``workers`` at a time; items not started before ``deadline`` give
    None, items not started once ``stop()`` holds give :class:`_Stopped`.  ``local`` runs an item
    in this process (no pool, or a chunk of one).  ``split``, if given, runs an item in this process
    with its looped runs split over the pool's workers: a last chunk smaller than the pool (one case
    of seven on two workers) then keeps every worker busy instead of running on one core.  The
    outcomes do not depend on which path ran them (the same seeds, concatenated in order).
    ``on_result(index, outcome)`` takes each outcome as its chunk ends."""
    width = pool._max_workers if pool is not None else 1
    for i in range(0, len(items), width):
        chunk = items[i:i + width]
        if stop():
            outs = [_Stopped] * len(chunk)
        elif time.perf_counter() > deadline:
            outs = [None] * len(chunk)
        elif pool is not None and split is not None and len(chunk) < width:
            outs = [split(a) for a in chunk]
        else:
            outs = list(pool.map(fn, chunk)) if pool is not None and len(chunk) > 1 else [local(a) for a in chunk]
        for k, out in enumerate(outs):
            on_result(i + k, out)


def audit(algorithm, epsilon: float = 1.0, *, level: str = "default", pairs=None, samples: int | None = None,
          alpha: float = 1e-3, seed: int | None = None, selection: int | None = None,
          workers: int | None = None, noise: str | None = None, time_budget: float | None = None,
          stop_on_failure: bool = True, contributions: int = 1) -> AuditResult:
    """Audit ``algorithm`` (preset name, :class:`~dphist.Pipeline` or component) for ``epsilon``-DP.

    ``level``: ``"fast"`` (CI), ``"default"`` or ``"thorough"`` (:data:`LEVELS`: pairs, runs,
    search, confirmations, release mode); the command line's ``--level`` (``--fast``, ``--thorough``).
    ``pairs``: your own neighbouring pairs instead of the level's families and search (a list of
    :class:`Pair`, strings such as ``"0,3,5:+1@2"``, or ``(x, x')`` histograms; ``--pair``).
    A component is audited in every pipeline of :func:`~dphist.audit.harness.audit_pipelines`.
    ``samples``: estimation runs per side and case (default: the level's, batched or looped);
    ``selection``: selection runs per side and case (default ``samples // 4``, 100 to 50,000);
    ``workers``: processes (default: up to 2 cores); results do not depend on it;
    ``noise``: None (research mode's float noise, batched where the components allow, plus
    release mode on the level's release pairs), or one mode for every case: ``"float"``,
    ``"exact"`` (research mode, exact samplers) or ``"release"`` (release mode, exact samplers on
    the audit's seeded words: what is published);
    ``time_budget``: seconds; the search stops at a third of it and cases not started when it is
    spent are skipped (``result.skipped``; their tests still count in ``m``, so the bound stays valid);
    ``stop_on_failure``: end the audit at the first certified bound above epsilon (the verdict
    cannot change; the reported bound is then the largest found so far);
    ``contributions``: audit person-level privacy at ``k`` records per person: every pipeline
    runs calibrated to ``k`` (:meth:`~dphist.Pipeline.at_contributions`) and every pair, fixed,
    searched or your own, differs by ``k`` records in its changed bin (:meth:`Pair.scaled`).
    """
    t0 = time.perf_counter()
    eps, a = validate_settings(epsilon, alpha, samples, selection)
    level_name, user_pairs = resolve_level(level, pairs)
    budget = validate_time_budget(time_budget)
    if noise is not None and noise not in NOISES:
        raise InvalidParameter(f"noise must be one of {', '.join(NOISES)} (or None: the level's plan), got {noise!r}")
    check_workers(workers)
    k = check_contributions(contributions)
    lvl = LEVELS[level_name]
    pipelines, name, notes = _resolve_pipelines(algorithm, noise or "float")
    if not supports_dims(pipelines[0].dims, 1):
        lvl = grid_level(lvl)
        if user_pairs is None:
            notes.append("2-D pipeline: the grid pair families (spikes, corners, blocks)"
                         + (", and the search over grid pairs" if lvl.search else ", no search"))
    if k != 1:
        pipelines = [p.at_contributions(k) for p in pipelines]
    releasable, why = _releasable(pipelines[0])
    if noise is None and user_pairs is None and not releasable:
        notes.append(f"release mode not audited: {why}")
    cases = _plan(pipelines, lvl, user_pairs, noise, releasable)
    keep = lvl.keep if user_pairs is None and (noise or "float") == "float" else 0
    confirm = lvl.confirm if user_pairs is None else 0
    features = tuple(features_for(p.initializer is not None) for p in pipelines)
    tests = sum(len(features[c.pipeline]) * 2 for c in cases) + keep * len(features[0]) * 2 + confirm
    lvl_a = per_side_level(a, tests)
    root = np.random.SeedSequence(seed)
    entropy = root.entropy
    batched = tuple(batch_capable(p) for p in pipelines)
    job = _Job(tuple(pipelines), features, batched, eps, samples, selection, lvl.samples, lvl_a,
               lvl.search_samples, k)
    workers = default_workers() if workers is None else int(workers)
    deadline = t0 + budget if budget is not None else np.inf
    rows: list[dict[str, Any]] = []
    best: Witness | None = None
    searched: list[dict[str, Any]] = []
    estimated = []
    skipped = 0

    stopped = 0

    def failed() -> bool:
        return stop_on_failure and best is not None and best.epsilon_lower_bound > eps

    def take(outcome, case):
        nonlocal best, skipped, stopped
        if outcome is _Stopped:
            stopped += 1
            return
        if outcome is None:
            skipped += 1
            return
        case_rows, case_best, case_events = outcome
        rows.extend(case_rows)
        estimated.extend((case, *e) for e in case_events)
        if case_best is not None and (best is None or case_best.epsilon_lower_bound > best.epsilon_lower_bound):
            best = case_best

    with forked_pool(workers, job=job, pipelines=job.pipelines) as pool:
        width = pool._max_workers if pool is not None else 1
        # 1. the fixed cases
        items = [(c, _seq(entropy, i)) for i, c in enumerate(cases)]
        _pool_map(pool, _forked_case, lambda arg: _audit_case(job, *arg), items, deadline, failed,
                  lambda k, out: take(out, cases[k]), split=lambda arg: _audit_case(job, *arg, pool=pool))
        # 2. the search, then its pairs audited like the fixed ones (fresh seeds)
        if keep and not failed():
            search_deadline = min(deadline, t0 + budget / 3) if budget is not None else np.inf
            moves = np.random.default_rng(_seq(entropy, _MOVES_KEY))

            def evaluate(batch, first):
                args = [(p, _seq(entropy, _SEARCH_KEY, first + k)) for k, p in enumerate(batch)]
                if pool is not None and len(args) > 1:
                    return list(pool.map(_forked_score, args))
                return [_score(job, *arg) for arg in args]

            starts = _search_starts(rows, lvl)
            found = hill_climb(evaluate, starts, moves, lvl.search, keep, lvl.restarts, width, search_deadline,
                               propose=random_grid_pair if _on_grids(lvl) else random_pair)
            searched = [{"pair": p.to_dict(), "estimated_loss": sc} for p, sc in found]
            slots = [Case(0, p, "float", "search") for p, _ in found]
            items = [(c, _seq(entropy, len(cases) + k)) for k, c in enumerate(slots)]
            _pool_map(pool, _forked_case, lambda arg: _audit_case(job, *arg), items, deadline, failed,
                      lambda k, out: take(out, slots[k]), split=lambda arg: _audit_case(job, *arg, pool=pool))
            skipped += keep - len(slots)
        elif keep:
            stopped += keep
        # 3. confirmations: fresh, larger batches on the events that came closest
        if confirm and failed():
            stopped += confirm
        elif confirm:
            chosen = _suspects(estimated, confirm, lvl.confirm_factor, lvl_a)
            items = [(c, e, d, n, _seq(entropy, _CONFIRM_KEY, k)) for k, (c, e, d, n) in enumerate(chosen)]

            def confirmed(k, out):
                nonlocal best, skipped, stopped
                if out is None or out is _Stopped:
                    skipped += out is None
                    stopped += out is _Stopped
                    return
                row, w = out
                rows.append(row)
                if w is not None and (best is None or w.epsilon_lower_bound > best.epsilon_lower_bound):
                    best = w

            _pool_map(pool, _forked_confirm, lambda arg: _confirm(job, *arg, pool=None), items, deadline, failed,
                      confirmed, split=lambda arg: _confirm(job, *arg, pool=pool))
            skipped += confirm - len(chosen)
    if stopped:
        notes.append(f"stopped at the first certified failure: {stopped} planned cases not run "
                     "(stop_on_failure=False runs them all)")
    bound = max(best.epsilon_lower_bound, 0.0) if best is not None else 0.0
    first_case = cases[0] if cases else Case(0, FAST_PAIRS[0], "float", "family")
    _, n_est, n_sel = _sizes(job, first_case)
    return AuditResult(algorithm=name, epsilon=eps, alpha=a, epsilon_lower_bound=bound, passed=bound <= eps,
                       witness=best, samples=n_est, selection_samples=n_sel,
                       pairs=len({c.pair for c in cases}) + keep, tests=tests,
                       level=lvl_a, detectable=detectable_epsilon(n_est, lvl_a), seed=int(entropy),
                       batched=batched[0] and (noise or "float") == "float", seconds=time.perf_counter() - t0,
                       rows=rows, audit_level=level_name if user_pairs is None else "pairs",
                       pipelines=[p.name for p in pipelines], skipped=skipped, searched=searched, notes=notes)


def _resolve_pipelines(algorithm, noise: str) -> tuple[list[Pipeline], str, list[str]]:
    """The pipelines to audit: one for a preset or a pipeline, the harness's for a component."""
    if isinstance(algorithm, type) and issubclass(algorithm, Component):
        algorithm = algorithm()
    if isinstance(algorithm, Component):
        from .harness import audit_pipelines, runnable
        pipes = audit_pipelines(algorithm)
        kept, notes = [pipes[0]], []
        for p in pipes[1:]:
            why = runnable(p, noise)
            if why is None:
                kept.append(p)
            else:
                notes.append(f"pipeline {p.name} left out: it does not run on a public probe ({why})")
        return kept, f"{algorithm.kind} {algorithm.name}", notes
    pipe, name = resolve_algorithm(algorithm)
    return [pipe], name, []


def _releasable(pipeline: Pipeline) -> tuple[bool, str]:
    """Release mode runs this pipeline (decided from declarations and a public probe)."""
    unsafe = [c.name for c in pipeline.components() if not getattr(c, "differentially_private", True)]
    if unsafe:
        return False, f"{', '.join(unsafe)} declared not differentially private (release mode refuses it)"
    from .harness import runnable
    why = runnable(pipeline, "release")
    return (why is None), (why or "")


def _search_starts(rows, lvl: Level) -> list[Pair]:
    """Where the search starts besides its random restarts: two public shapes (a tie and spikes at
    both ends; on grids, spikes at four corners and a grid neither square nor a power of two), not
    the fixed cases' results, so the search's choice uses only its own runs."""
    if _on_grids(lvl):
        return [p for p in GRID_PAIRS if p.name in ("grid-corners8-remove", "grid-zeros5x7")]
    return [p for p in STRUCTURED_PAIRS if p.name in ("ends8", "near-ties8")]


def _suspects(estimated, count: int, factor: int, level: float):
    """The ``count`` most promising (case, event) pairs for a confirmation, one per case.

    Ranked by the bound the estimation frequencies would give with ``factor`` times the runs;
    the confirmation's own runs are fresh, so reusing the estimation counts to choose is valid.
    """
    ranked = []
    for case, event, direction, k1, k2, n in estimated:
        m = n * factor
        proj = float(epsilon_lower_bound(k1 * factor, m, k2 * factor, m, level))
        if math.isfinite(proj):
            ranked.append((proj, case, event, direction, m))
    ranked.sort(key=lambda t: -t[0])
    chosen, seen = [], set()
    for proj, case, event, direction, m in ranked:
        if case in seen:
            continue
        seen.add(case)
        chosen.append((case, event, direction, m))
        if len(chosen) == count:
            break
    return chosen
