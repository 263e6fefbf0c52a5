"""Conformance kit: the checks every component and preset must pass.

Like scikit-learn's ``check_estimator``: a plugin's test suite calls
:func:`check_component` on each of its classes and :func:`check_algorithm`
on each preset; the core's own suite runs both over everything registered.

What is checked

* the declared contract: ``name``, ``citation``, ``kind``; every constructor
  parameter has a default, is declared in ``param_constraints`` (which names
  nothing else, and accepts the default) and round-trips through
  ``get_params``/``clone``; every parameter of a preset is declared too, and
  so is every component of another plugin its pipeline uses (``requires``);
* privacy accounting, on several histogram shapes: the ledger total never
  exceeds epsilon; a spending stage is charged exactly its share
  (charged = used); a non-spending stage has no ledger rows;
* reproducibility: the same seed gives the identical release, and a
  different seed a different one (when anything is random);
* hygiene: the input histogram is not mutated; outputs are finite, of the
  right shape, and partitions cover every bin exactly once;
* release mode: the pipeline runs without a seed (exact noise, nothing kept),
  or, for a component declared not differentially private, is refused;
* data access: the true counts are read only by kernel primitives (the kernel's
  gate turns any other read into a :class:`~dphist.errors.PrivacyViolation`);
* domains: every check runs on small domains (1, 2 bins), on ``n`` bins (64 by
  default) and on 257 bins (``power-law-257``: above 16 bins, and not a power
  of two), so a component that misbehaves only on larger domains is seen;
* grids: a preset or component declaring 2-D support (``dims``) passes the same
  checks on :func:`example_grids` (single cell, one row, one column, 8 x 8
  shapes, a 5 x 7 grid that is neither square nor a power of two, 17 x 16), and
  its release has the grid's shape; a preset that does not support 2-D must
  refuse a grid before anything is spent;
* vetted mechanisms: every custom mechanism a run used is replayed on
  neighbouring histograms (:func:`check_vetted_mechanism`).  A continuous
  vector output: coupled seeds, and the shift one record causes, measured in
  units of the output's own noise spread, must stay within epsilon.  Any other
  output (integers, cut points, orders, group bounds, partitions, tuples of
  them): a distributional test, as the auditor does it, on the run's histogram
  and on a flat one (ties, where selections are decided); one batch of runs
  chooses an output event per neighbouring pair, a fresh batch bounds its
  probabilities (Clopper-Pearson), and a certified loss above epsilon fails;
* vetted mechanisms are an opt-in: a component that runs one it did not
  declare (``vetted_mechanisms``; possible only under
  :func:`dphist.kernel.enable_vetted_mechanisms`) fails; a declared one is
  reported as a :class:`VettedMechanismWarning` (its privacy rests on its own
  proof, which the kit screens but cannot prove);
* declared sensitivities: the score of every ``exponential`` call and the cost
  of every ``noisy_min_segmentation`` call are evaluated on neighbours of the
  run's histogram and of a flat one; a change above the declared sensitivity
  fails (:func:`check_declared_sensitivity`);
* sorters with a ``descending`` parameter order groups by their noisy means in
  the declared direction.

The pipeline itself validates the partition each stage hands on (a sorter's
duplicated or lost bin, an out-of-range group) before the next stage runs or
is charged; a broken twin shows it.

:mod:`dphist.testing.twins` holds broken twins, components that cheat in one
known way each; the core's tests check that this kit rejects every one.
"""
from __future__ import annotations

import inspect
import math
import warnings

import numpy as np

from ..components.base import Component, Finalizer, Initializer, Partitioner, Sorter
from ..errors import InvalidParameter, PrivacyViolation
from ..kernel import SeededLaplace
from ..kernel.private import VettedMechanism, recording_custom_calls, recording_kernel_calls
from ..partition import Partition
from ..pipeline import Pipeline, Release, supports_dims
from ..presets import make_algorithm, preset_params
from ..registry import RUNTIME, default_registry, parse_requirement

_TOL = 1e-9
#: the larger domain every check also runs on (above 16 bins, not a power of two)
LARGE_N = 257
#: labels of the example histograms on which the randomised checks (other seed, release mode,
#: vetted-mechanism replay, declared sensitivities) run
PROBED = ("power-law", f"power-law-{LARGE_N}")


class VettedMechanismWarning(UserWarning):
    """The kit's finding for a component that runs a declared vetted mechanism: allowed, but its
    privacy rests on the mechanism's own proof (the replay screens it; it cannot prove it)."""


def example_histograms(n: int = 64, seed: int = 0) -> dict[str, np.ndarray]:
    """Small histograms of distinct shape classes for conformance runs."""
    rng = np.random.default_rng(seed)
    spiky = np.zeros(n, dtype=np.int64)
    spiky[rng.choice(n, size=max(1, n // 16), replace=False)] = rng.integers(50, 500, size=max(1, n // 16))
    steps = np.repeat(rng.integers(0, 200, size=4), -(-n // 4))[:n]
    return {
        "zeros": np.zeros(n, dtype=np.int64),
        "uniform": np.full(n, 37, dtype=np.int64),
        "power-law": np.floor(2000.0 / np.arange(1, n + 1) ** 1.1).astype(np.int64),
        "shuffled": rng.permutation(np.floor(2000.0 / np.arange(1, n + 1) ** 1.1).astype(np.int64)),
        "spiky": spiky,
        "steps": steps.astype(np.int64),
        "single-bin": np.array([42], dtype=np.int64),
        "two-bins": np.array([0, 5], dtype=np.int64),
        f"power-law-{LARGE_N}": np.floor(2000.0 / np.arange(1, LARGE_N + 1) ** 1.1).astype(np.int64),
    }


def example_grids(seed: int = 0) -> dict[str, np.ndarray]:
    """Small 2-D histograms for conformance runs: degenerate shapes (one cell, one row, one column),
    8 x 8 shape classes, a grid neither square nor a power of two, and one above 256 cells."""
    rng = np.random.default_rng(seed)
    i, j = np.indices((8, 8))
    blob = np.floor(900.0 / (1 + (i - 2) ** 2 + (j - 5) ** 2)).astype(np.int64)
    spiky = np.zeros((8, 8), dtype=np.int64)
    spiky[rng.integers(0, 8, 4), rng.integers(0, 8, 4)] = rng.integers(50, 500, 4)
    a, b = np.indices((17, 16))
    return {
        "zeros": np.zeros((8, 8), dtype=np.int64),
        "uniform": np.full((8, 8), 37, dtype=np.int64),
        "power-law": blob,
        "spiky": spiky,
        "single-cell": np.array([[42]], dtype=np.int64),
        "one-row": rng.integers(0, 40, (1, 6)),
        "one-column": rng.integers(0, 40, (5, 1)),
        "ragged-5x7": rng.integers(0, 60, (5, 7)),
        f"power-law-{LARGE_N}": np.floor(3000.0 / (1 + a ** 2 + (b - 3) ** 2) ** 0.8).astype(np.int64),
    }


def harness_pipelines(component: Component) -> list[Pipeline]:
    """The simplest pipelines that exercise ``component`` in its slot.

    Partitioners and finalizers run twice: on bins in domain order (SORTaki
    Algorithm 2) and on sorted, non-contiguous bins (Algorithm 3), since a
    component must honour both.
    """
    dims = component.dims     # the other slots hold the core's built-ins, which run on any grid
    if isinstance(component, Initializer):
        return [Pipeline(component, None, "singleton", "group-mean", (0.5, 0.0, 0.5), dims=dims)]
    if isinstance(component, Sorter):
        return [Pipeline("laplace", component, "singleton", "group-mean", (0.5, 0.0, 0.5), dims=dims)]
    sorters = (None,) if component.requires_domain_order else (None, "noisy-count")
    if isinstance(component, Partitioner):
        shares = (0.4, 0.2, 0.4) if component.spends else (0.5, 0.0, 0.5)
        return [Pipeline("laplace", sorter, component, "group-mean", shares, dims=dims) for sorter in sorters]
    if isinstance(component, Finalizer):
        return [Pipeline("laplace", sorter, "singleton", component, (0.5, 0.0, 0.5), dims=dims)
                for sorter in sorters]
    raise TypeError(f"{component!r} is not a dphist component")


def harness_pipeline(component: Component) -> Pipeline:
    """The first (domain-order) harness pipeline of ``component``."""
    return harness_pipelines(component)[0]


def expected_books(pipeline: Pipeline, epsilon: float) -> dict[str, float]:
    """``{stage: epsilon}`` a run of ``pipeline`` must charge: each spending stage its share, others
    nothing (stages absent from the result)."""
    out = {}
    for stage, share in zip(("initializer", "partitioner", "finalizer"), pipeline.shares):
        comp = getattr(pipeline, stage)
        if comp is not None and comp.spends and share > 0:
            out[stage] = share * epsilon
    return out


def check_ledger(release: Release, pipeline: Pipeline) -> None:
    """Total <= epsilon; each spending stage charged exactly its share; others nothing.

    A pipeline whose stages are chosen per run (``auto``) states the books of a run itself
    (``pipeline.books(release)``: ``{stage: epsilon}``)."""
    eps = release.epsilon
    assert release.ledger.total <= eps * (1 + _TOL), f"ledger total {release.ledger.total} exceeds epsilon {eps}"
    by_stage = release.ledger.by_stage()
    books = pipeline.books(release) if hasattr(pipeline, "books") else expected_books(pipeline, eps)
    for stage in sorted(set(by_stage) | set(books)):
        spent, given = by_stage.get(stage, 0.0), books.get(stage, 0.0)
        if given == 0:
            assert spent == 0.0, f"{pipeline.name}: stage {stage} spent {spent} with no share"
        else:
            assert math.isclose(spent, given, rel_tol=1e-9), (
                f"{pipeline.name}: stage {stage} was given {given:.6g} but used {spent:.6g} (charged != used)")
    for e in release.ledger:
        assert e.epsilon > 0 and e.sensitivity >= 0 and e.answers >= 0, f"malformed ledger row {e}"


def check_release(release: Release, n: int, shape: tuple[int, ...] | None = None) -> None:
    assert release.estimate.shape == (n,), f"estimate has shape {release.estimate.shape}, expected ({n},)"
    if shape is not None:
        assert tuple(release.shape) == tuple(shape), f"release has shape {release.shape}, the histogram {shape}"
    assert np.all(np.isfinite(release.estimate)), "estimate has non-finite values"
    release.partition.validate()
    assert release.partition.n_bins == n


def check_pipeline(pipeline: Pipeline, epsilon: float = 1.0, n: int = 64,
                   histograms: dict[str, np.ndarray] | None = None) -> None:
    """Run ``pipeline`` on every example histogram and check ledger, determinism, hygiene, modes."""
    histograms = histograms or example_histograms(n)
    vetted: set[str] = set()
    for label, x in histograms.items():
        original = x.copy()
        with recording_custom_calls() as calls, recording_kernel_calls() as private_calls:
            first = pipeline.run(x, epsilon, seed=11)
        for finding in sorted(check_vetted_opt_in(private_calls) - vetted):    # each reported once
            warnings.warn(VettedMechanismWarning(finding), stacklevel=2)
            vetted.add(finding)
        assert np.array_equal(x, original), f"{pipeline.name} mutated the input histogram ({label})"
        assert x.flags.writeable == original.flags.writeable, f"{pipeline.name} changed the input's flags"
        check_release(first, x.size, x.shape)
        check_ledger(first, pipeline)
        again = pipeline.run(x, epsilon, seed=11)
        assert np.array_equal(first.estimate, again.estimate), f"{pipeline.name} is not reproducible ({label})"
        assert first.partition == again.partition, f"{pipeline.name} partition not reproducible ({label})"
        if first.ledger.total > 0 and label in PROBED:
            # on a non-degenerate histogram (all-zero data may legitimately give the same
            # clipped or rounded release for every seed)
            other = pipeline.run(x, epsilon, seed=12)
            assert not np.array_equal(first.estimate, other.estimate), (
                f"{pipeline.name}: a different seed gave the same estimate ({label}); is the noise seeded?")
            flat = x.reshape(-1)           # the kernel measures a grid's cells flattened (row-major)
            if label == PROBED[0]:         # the replays are costly: on n bins (64 by default) only
                for mechanism, eps, arguments in calls:
                    check_vetted_mechanism(mechanism, eps, flat, arguments)
            for call in private_calls:
                check_declared_sensitivity(call, flat)
            check_release_mode(pipeline, x, epsilon)
    if pipeline.sorter is not None:
        check_sorter_direction(pipeline.sorter)


def check_release_mode(pipeline: Pipeline, x: np.ndarray, epsilon: float) -> None:
    """Without a seed the run uses exact noise and keeps nothing; a non-DP pipeline is refused."""
    if not all(getattr(c, "differentially_private", True) for c in pipeline.components()):
        try:
            pipeline.run(x, epsilon)
        except PrivacyViolation:
            return
        raise AssertionError(f"{pipeline.name} is declared not differentially private but release mode ran it")
    release = pipeline.run(x, epsilon)
    assert release.mode == "release" and release.seed is None, f"{pipeline.name}: release mode kept a seed"
    assert release.pipeline is None, f"{pipeline.name}: a release-mode Release holds its pipeline"
    check_release(release, x.size, x.shape)
    check_ledger(release, pipeline)


def check_sorter_direction(sorter: Sorter, n: int = 32) -> None:
    """A sorter with a ``descending`` parameter orders groups by noisy mean in that direction."""
    if "descending" not in sorter.param_defaults():
        return
    from ..components.base import Context
    noisy = np.random.default_rng(5).permutation(np.arange(n, dtype=float) * 3.0)
    noisy.setflags(write=False)
    for descending in (True, False):
        ctx = Context(n=n, epsilon=1.0, gamma_in=0.5, gamma_p=0.0, gamma_f=0.5,
                      rng=np.random.default_rng(0), noisy=noisy)
        out = sorter.clone(descending=descending).sort(Partition.singletons(n), ctx)
        keys = out.means(noisy)
        steps = np.diff(keys)
        ok = np.all(steps <= 0) if descending else np.all(steps >= 0)
        assert ok, f"sorter {sorter.name} with descending={descending} did not sort in that direction"


def neighbours(x: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """Neighbours of ``x`` (one record added, or removed where there is one) at the first, middle
    and last bin and at the largest count: ``(bin, neighbour)`` pairs."""
    n = x.size
    out = []
    for i in sorted({0, n // 2, n - 1, int(np.argmax(x))}):
        for step in (1, -1):
            if x[i] + step >= 0:
                y = x.copy()
                y[i] += step
                out.append((i, y))
    return out


def _flat(x: np.ndarray) -> np.ndarray:
    """A flat histogram over ``x``'s domain: every selection among bins is a tie there."""
    return np.full(x.size, max(int(np.median(x)), 8), dtype=np.int64)


def check_vetted_mechanism(mechanism: VettedMechanism, epsilon: float, x: np.ndarray, arguments: dict,
                           trials: int = 300, tolerance: float = 1.5, alpha: float = 1e-6) -> None:
    """Replay a vetted mechanism on ``x`` and neighbours; flag too little noise, whatever its output.

    *Continuous vector outputs* (floats, almost every value distinct across seeds): coupled
    seeds.  For an additive-noise mechanism, the same seed on ``x`` and on a neighbour ``x'``
    moves output ``j`` by the query's change ``d_j``; the noise spread ``b_j`` (mean absolute
    deviation from the median over seeds, the Laplace scale) is measured on ``x``.  Independent
    Laplace coordinates are epsilon-DP only if ``sum_j |d_j| / b_j <= epsilon``; the check fails
    above ``tolerance * epsilon``.  A screen, not a proof.

    *Every other output* (integers, cut points, orders, group bounds, a Partition, tuples of
    them): :func:`check_discrete_outputs`, a certified distributional test.  A mechanism
    declared ``differentially_private = False`` (a reference calibration) is not replayed.
    """
    if not getattr(mechanism, "differentially_private", True):
        return
    first = mechanism.run(x.copy(), epsilon, SeededLaplace(np.random.default_rng(0)), **arguments)
    if not _continuous_candidate(first):
        check_discrete_outputs(mechanism, epsilon, x, arguments, alpha=alpha)
        return
    n = x.size
    for i in sorted({0, n // 2}):
        neighbour = x.copy()
        neighbour[i] += 1
        base, moved = [], []
        for t in range(trials):
            a = mechanism.run(x.copy(), epsilon, SeededLaplace(np.random.default_rng(t)), **arguments)
            b = mechanism.run(neighbour, epsilon, SeededLaplace(np.random.default_rng(t)), **arguments)
            if not (_continuous_candidate(a) and _continuous_candidate(b)):
                check_discrete_outputs(mechanism, epsilon, x, arguments, alpha=alpha)
                return
            a, b = np.atleast_1d(a), np.atleast_1d(b)
            if a.shape != b.shape:
                check_discrete_outputs(mechanism, epsilon, x, arguments, alpha=alpha)
                return
            base.append(a)
            moved.append(b)
        base, moved = np.array(base), np.array(moved)
        distinct = np.array([np.unique(col).size for col in base.T]) >= 0.9 * trials
        if not distinct.all():     # rounded or clipped values: not a continuous output
            check_discrete_outputs(mechanism, epsilon, x, arguments, alpha=alpha)
            return
        shift = np.abs(np.median(moved - base, axis=0))
        spread = np.mean(np.abs(base - np.median(base, axis=0)), axis=0)
        loss = float(np.sum(shift / spread))
        assert loss <= tolerance * epsilon, (
            f"vetted mechanism {mechanism.name}: one record at bin {i} moves the output by {loss:.3g} noise "
            f"scales, more than epsilon = {epsilon:.3g} allows (too little noise for its sensitivity)")


def _continuous_candidate(out) -> bool:
    arr = np.asarray(out) if isinstance(out, (np.ndarray, float, np.floating)) else None
    return arr is not None and arr.dtype.kind == "f" and arr.ndim <= 1


def _parts(out) -> list[np.ndarray]:
    """An output as a list of 1-D numeric arrays (a Partition: order and bounds; tuples flattened)."""
    from ..partition import Partition
    if isinstance(out, Partition):
        return [np.asarray(out.order), np.asarray(out.bounds)]
    if isinstance(out, (tuple, list)) and any(isinstance(v, (np.ndarray, tuple, list, Partition)) for v in out):
        return [p for v in out for p in _parts(v)]
    if isinstance(out, dict):
        return [p for k in sorted(out, key=str) for p in _parts(out[k])]
    return [np.asarray(out, dtype=float).reshape(-1)]


class _Outcomes:
    """The outputs of a batch of runs: each a list of 1-D parts, and a key for the whole output."""

    def __init__(self, outputs):
        self.outputs = [_parts(o) for o in outputs]
        self.keys = np.array([hash(tuple(p.tobytes() for p in parts)) for parts in self.outputs])

    def part(self, j) -> list[np.ndarray]:
        return [parts[j] if j < len(parts) else np.zeros(0) for parts in self.outputs]


def _best_event(a: _Outcomes, b: _Outcomes):
    """The event of largest selection-batch loss ``log((k_a + 1) / (k_b + 1))`` among: the whole
    output equal to one value; per part of fixed length, a coordinate above or below a threshold;
    per part of varying length, a value in it or not, or its length.  Returns a predicate on a
    batch (a boolean per run) and its description; every predicate is defined on any output."""
    best = [-np.inf, None, ""]

    def consider(ka, kb, event, text):
        score = math.log((ka + 1) / (kb + 1))
        if score > best[0]:
            best[:] = [score, event, text]

    keys, ka = np.unique(a.keys, return_counts=True)
    kb = np.array([np.count_nonzero(b.keys == k) for k in keys])
    i = int(np.argmax(np.log((ka + 1) / (kb + 1))))
    consider(ka[i], kb[i], _equal_key(keys[i]), "the whole output equal to one value")
    size = len(a.outputs)
    for j in range(max(len(parts) for parts in a.outputs + b.outputs)):
        va, vb = a.part(j), b.part(j)
        lengths = {v.size for v in va + vb}
        if len(lengths) == 1:
            ma, mb = np.array(va, dtype=float), np.array(vb, dtype=float)
            for col in range(ma.shape[1]):
                for v in np.unique(np.concatenate((ma[:, col], mb[:, col])))[:256]:
                    for sign in (1, -1):
                        consider(np.count_nonzero(sign * ma[:, col] >= sign * v),
                                 np.count_nonzero(sign * mb[:, col] >= sign * v), _threshold(j, col, v, sign),
                                 f"part {j}: coordinate {col} {'>=' if sign > 0 else '<='} {v:g}")
            continue
        for v in np.unique(np.concatenate([np.asarray(x, dtype=float) for x in va + vb]))[:512]:
            ka = sum(bool(np.any(x == v)) for x in va)
            kb = sum(bool(np.any(x == v)) for x in vb)
            consider(ka, kb, _member(j, v, True), f"part {j}: {v:g} in the output")
            consider(size - ka, size - kb, _member(j, v, False), f"part {j}: {v:g} not in the output")
        for L in lengths:
            consider(sum(x.size == L for x in va), sum(x.size == L for x in vb), _length(j, L), f"part {j}: length {L}")
    return best[1], best[2]


def _equal_key(key):
    return lambda o: o.keys == key


def _threshold(j, col, v, sign):
    return lambda o: np.array([x.size > col and sign * x[col] >= sign * v for x in o.part(j)])


def _member(j, v, has):
    return lambda o: np.array([bool(np.any(x == v)) == has for x in o.part(j)])


def _length(j, L):
    return lambda o: np.array([x.size == L for x in o.part(j)])


def check_discrete_outputs(mechanism: VettedMechanism, epsilon: float, x: np.ndarray, arguments: dict,
                           selection: int = 100, estimation: int = 300, alpha: float = 1e-6) -> None:
    """A certified distributional test of a vetted mechanism with any output (the auditor's method,
    in small): for neighbouring pairs around ``x`` and around a flat histogram of ``x``'s size
    (:func:`neighbours`), ``selection`` runs per side choose the output event of largest estimated
    loss, in both directions; ``estimation`` fresh runs per side count it, and one-sided
    Clopper-Pearson bounds at level ``alpha / (2 m)`` (``m`` tests, Bonferroni) give a lower
    confidence bound on the loss.  A bound above ``epsilon`` fails: a correct epsilon-DP mechanism
    fails with probability at most ``alpha``.  Seeds are fixed (the kit is reproducible)."""
    from ..audit.bounds import epsilon_lower_bound
    n = x.size
    flat = _flat(x)
    pairs = []
    for label, hist, bins in (("the run's histogram", x, (0, n // 2)),
                              (f"a flat histogram of {n} bins", flat, (n // 2,))):
        for i in sorted(set(bins)):
            y = hist.copy()
            y[i] += 1
            pairs.append((f"{label}, bin {i} +1", hist, y))
    level = alpha / (2 * 2 * len(pairs))
    seeds = iter(np.random.SeedSequence(20261126).spawn(4 * len(pairs)))

    def batch(hist, size):
        rng = np.random.default_rng(next(seeds))
        return _Outcomes([mechanism.run(hist.copy(), epsilon, SeededLaplace(rng), **arguments) for _ in range(size)])

    for what, a_hist, b_hist in pairs:
        sel_a, sel_b = batch(a_hist, selection), batch(b_hist, selection)
        events = [_best_event(sel_a, sel_b), _best_event(sel_b, sel_a)]   # fixed before the estimation runs
        est_a, est_b = batch(a_hist, estimation), batch(b_hist, estimation)
        for (event, described), first, second in zip(events, (est_a, est_b), (est_b, est_a)):
            k1 = int(np.count_nonzero(event(first)))
            k2 = int(np.count_nonzero(event(second)))
            bound = float(epsilon_lower_bound(k1, estimation, k2, estimation, level))
            assert bound <= epsilon * (1 + _TOL), (
                f"vetted mechanism {mechanism.name}: on {what}, the event '{described}' has {k1} vs {k2} hits in "
                f"{estimation} runs each: a privacy loss of at least {bound:.3g} (confidence 1 - {alpha:g}), more "
                f"than epsilon = {epsilon:.3g} (too little noise for its sensitivity)")


def check_vetted_opt_in(calls) -> set[str]:
    """A vetted mechanism runs only when its component declared it: fail an undeclared use (possible
    only under the global switch); return the findings for every declared one, which
    :func:`check_pipeline` reports once each as a :class:`VettedMechanismWarning`."""
    findings = set()
    for call in calls:
        if call.primitive != "custom":
            continue
        name = call.details["mechanism"].name
        assert call.details["declared"], (
            f"{call.stage} {call.component} runs the vetted mechanism {name!r} without declaring it: add "
            f"vetted_mechanisms = ({name!r},) to the component (dphist.kernel.enable_vetted_mechanisms() is for "
            "prototypes, not for a component that ships)")
        findings.add(f"{call.stage} {call.component} runs the vetted mechanism {name!r}: its privacy rests on the "
                     "mechanism's own proof, which the kit's replay screens but cannot prove")
    return findings


def check_declared_sensitivity(call, x: np.ndarray, candidates: int = 4096) -> None:
    """The score of an ``exponential`` call, or the cost of a ``noisy_min_segmentation`` call, moves
    by at most its declared sensitivity between ``x`` and each neighbour, and between a flat
    histogram and its neighbours (deterministic: no noise is involved).  Other calls pass."""
    if call.primitive not in ("exponential", "noisy-min"):
        return
    d = call.details
    sens = d["sensitivity"]
    for base in (x, _flat(x)):
        here = _evaluated(call, base, candidates)
        for i, y in neighbours(base):
            gap = float(np.max(np.abs(_evaluated(call, y, candidates) - here)))
            what = "score" if call.primitive == "exponential" else "cost of a candidate group"
            assert gap <= sens * (1 + 1e-9) + 1e-12, (
                f"{call.stage} {call.component}: one record at bin {i} moves the {what} by {gap:.4g}, more than the "
                f"declared sensitivity {sens:.4g} ({call.primitive}); the noise is calibrated to the declaration")


def _evaluated(call, hist: np.ndarray, candidates: int) -> np.ndarray:
    d = call.details
    if call.primitive == "exponential":
        return np.asarray(d["score"](hist.copy()), dtype=float).reshape(-1)
    order, bounds = d["order"], d["bounds"]
    cost = d["cost"](hist[order].astype(np.float64))
    k = bounds.size - 1
    a, b = np.triu_indices(k + 1, 1)
    if a.size > candidates:            # a fixed, public sample of the candidate groups
        pick = np.random.default_rng(0).choice(a.size, candidates, replace=False)
        a, b = a[pick], b[pick]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.nan_to_num(np.asarray(cost.intervals(bounds[a], bounds[b]), dtype=float), nan=np.inf)


def check_contract(cls: type) -> None:
    """Declared name, kind, citation; parameters with defaults that round-trip."""
    assert issubclass(cls, (Initializer, Sorter, Partitioner, Finalizer)), f"{cls} is not a component"
    assert cls.name, f"{cls.__name__} declares no name"
    assert cls.citation, f"{cls.__name__} ({cls.name}) declares no citation"
    defaults = cls.param_defaults()
    missing = [k for k, v in defaults.items() if v is inspect.Parameter.empty]
    assert not missing, f"{cls.name}: parameters without defaults: {missing}"
    check_declared(f"{cls.__name__} ({cls.name})", defaults, cls.declared_constraints())
    obj = cls()  # validates the defaults against the declarations
    params = obj.get_params()
    assert set(params) == set(defaults), f"{cls.name}: get_params keys differ from __init__ parameters"
    clone = obj.clone()
    assert type(clone) is cls and _same(clone.get_params(), params), f"{cls.name}: clone() changes parameters"


def check_declared(owner: str, defaults: dict, constraints: dict) -> None:
    """Every parameter declared (:mod:`dphist.params`), nothing declared that is not a parameter."""
    undeclared = [k for k in defaults if k not in constraints]
    assert not undeclared, (f"{owner}: parameter(s) {undeclared} not declared in param_constraints "
                            "(see dphist.params: every parameter says what it accepts)")
    extra = [k for k in constraints if k not in defaults]
    assert not extra, f"{owner}: param_constraints names {extra}, which are not constructor parameters"


def check_requirements(name: str, pipeline: Pipeline, registry=None) -> None:
    """Every component of preset ``name``'s pipeline that another plugin registers is declared in
    ``@preset(requires=...)`` (so the preset is listed as unavailable without that plugin)."""
    registry = registry or default_registry
    own = {e.name: e.distribution for e in registry.entries("algorithm")}.get(name)
    declared = {parse_requirement(r) for r in getattr(registry.get("algorithm", name), "requires", ())}
    for c in pipeline.components():
        source = {e.name: e.distribution for e in registry.entries(c.kind)}.get(c.name)
        if source in (None, own, "dphist", RUNTIME):
            continue
        assert (c.kind, c.name) in declared, (
            f"preset {name!r} ({own}) uses {c.kind} {c.name!r} of {source} without declaring it: "
            f"add requires=(\"{c.kind}:{c.name}\",) to its @preset")


def _same(a, b) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray):
        return np.array_equal(a, b)
    return a == b or (callable(a) and a is b)


def check_component(cls: type, pipeline: Pipeline | None = None, **kwargs) -> None:
    """The full conformance check of one component class (default parameters).

    ``pipeline`` replaces the harness pipelines (for a component that needs
    particular neighbours); ``kwargs`` go to :func:`check_pipeline`.
    """
    check_contract(cls)
    for pipe in [pipeline] if pipeline is not None else harness_pipelines(cls()):
        if supports_dims(pipe.dims, 1) or "histograms" in kwargs:
            check_pipeline(pipe, **kwargs)
        if supports_dims(pipe.dims, 2) and "histograms" not in kwargs:
            check_pipeline(pipe, **{**kwargs, "histograms": example_grids()})


def check_algorithm(name: str, epsilon: float = 1.0, n: int = 64, **overrides) -> None:
    """Conformance of a registered preset: its parameters declared; the whole epsilon is spent, exactly,
    and reproducibly."""
    factory = default_registry.get("algorithm", name)
    check_declared(f"preset {name!r}", preset_params(factory), getattr(factory, "param_constraints", {}))
    pipeline = make_algorithm(name, **overrides)
    # requirements are about the preset as registered: a component reached only through a parameter
    # value (SReB_GCA's threshold=True -> ahp.threshold) is not one; without its plugin that value fails
    # with an error naming the plugin
    check_requirements(name, make_algorithm(name) if overrides else pipeline)
    examples = []
    if supports_dims(pipeline.dims, 1):
        check_pipeline(pipeline, epsilon=epsilon, n=n)
        examples.append(example_histograms(n)["power-law"])
    if supports_dims(pipeline.dims, 2):
        check_pipeline(pipeline, epsilon=epsilon, histograms=example_grids())
        examples.append(example_grids()["power-law"])
    else:
        check_refuses_grid(pipeline)
    assert examples, f"preset {name} declares dims {pipeline.dims}: the kit checks 1-D and 2-D presets"
    for x in examples:
        r = pipeline.run(x, epsilon, seed=3)
        assert math.isclose(r.ledger.total, epsilon, rel_tol=1e-9), (
            f"preset {name} spent {r.ledger.total} of epsilon {epsilon} on shape {x.shape}")


def check_refuses_grid(pipeline: Pipeline) -> None:
    """A pipeline that does not declare 2-D support refuses a grid, naming what it supports (the
    refusal comes before the kernel exists: nothing is spent)."""
    try:
        pipeline.run(example_grids()["uniform"], 1.0, seed=1)
    except InvalidParameter as exc:
        assert "supports" in str(exc), f"{pipeline.name}: a grid was refused without saying why: {exc}"
    else:
        raise AssertionError(f"{pipeline.name} declares dims {pipeline.dims} but ran on a 2-D histogram")
