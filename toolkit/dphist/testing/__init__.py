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
* vetted mechanisms: every custom mechanism a run used is replayed on
  neighbouring histograms with coupled seeds; when its output is a continuous
  vector, the shift one record causes, measured in units of the output's own
  noise spread, must stay within epsilon (:func:`check_vetted_mechanism`);
* sorters with a ``descending`` parameter order groups by their noisy means in
  the declared direction.

:mod:`dphist.testing.twins` holds broken twins, components that cheat in one
known way each; the core's tests check that this kit rejects every one.
"""
from __future__ import annotations

import inspect
import math

import numpy as np

from ..components.base import Component, Finalizer, Initializer, Partitioner, Sorter
from ..errors import PrivacyViolation
from ..kernel import SeededLaplace
from ..kernel.private import VettedMechanism, recording_custom_calls
from ..partition import Partition
from ..pipeline import Pipeline, Release
from ..presets import make_algorithm, preset_params
from ..registry import RUNTIME, default_registry, parse_requirement

_TOL = 1e-9


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
    }


def harness_pipelines(component: Component) -> list[Pipeline]:
    """The simplest pipelines that exercise ``component`` in its slot.

    Partitioners and finalizers run twice: on bins in domain order (SORTaki
    Algorithm 2) and on sorted, non-contiguous bins (Algorithm 3), since a
    component must honour both.
    """
    if isinstance(component, Initializer):
        return [Pipeline(component, None, "singleton", "group-mean", (0.5, 0.0, 0.5))]
    if isinstance(component, Sorter):
        return [Pipeline("laplace", component, "singleton", "group-mean", (0.5, 0.0, 0.5))]
    sorters = (None,) if component.requires_domain_order else (None, "noisy-count")
    if isinstance(component, Partitioner):
        shares = (0.4, 0.2, 0.4) if component.spends else (0.5, 0.0, 0.5)
        return [Pipeline("laplace", sorter, component, "group-mean", shares) for sorter in sorters]
    if isinstance(component, Finalizer):
        return [Pipeline("laplace", sorter, "singleton", component, (0.5, 0.0, 0.5)) for sorter in sorters]
    raise TypeError(f"{component!r} is not a dphist component")


def harness_pipeline(component: Component) -> Pipeline:
    """The first (domain-order) harness pipeline of ``component``."""
    return harness_pipelines(component)[0]


def check_ledger(release: Release, pipeline: Pipeline) -> None:
    """Total <= epsilon; each spending stage charged exactly its share; others nothing."""
    eps = release.epsilon
    assert release.ledger.total <= eps * (1 + _TOL), f"ledger total {release.ledger.total} exceeds epsilon {eps}"
    by_stage = release.ledger.by_stage()
    for stage, share in zip(("initializer", "partitioner", "finalizer"), pipeline.shares):
        comp = getattr(pipeline, stage)
        spent = by_stage.get(stage, 0.0)
        if comp is None or not comp.spends or share == 0:
            assert spent == 0.0, f"{stage} {getattr(comp, 'name', None)} spent {spent} with no share"
        else:
            assert math.isclose(spent, share * eps, rel_tol=1e-9), (
                f"{stage} {comp.name} was given {share * eps:.6g} but used {spent:.6g} (charged != used)")
    for e in release.ledger:
        assert e.epsilon > 0 and e.sensitivity >= 0 and e.answers >= 0, f"malformed ledger row {e}"


def check_release(release: Release, n: int) -> None:
    assert release.estimate.shape == (n,), f"estimate has shape {release.estimate.shape}, expected ({n},)"
    assert np.all(np.isfinite(release.estimate)), "estimate has non-finite values"
    release.partition.validate()
    assert release.partition.n_bins == n


def check_pipeline(pipeline: Pipeline, epsilon: float = 1.0, n: int = 64,
                   histograms: dict[str, np.ndarray] | None = None) -> None:
    """Run ``pipeline`` on every example histogram and check ledger, determinism, hygiene, modes."""
    histograms = histograms or example_histograms(n)
    for label, x in histograms.items():
        original = x.copy()
        with recording_custom_calls() as calls:
            first = pipeline.run(x, epsilon, seed=11)
        assert np.array_equal(x, original), f"{pipeline.name} mutated the input histogram ({label})"
        assert x.flags.writeable == original.flags.writeable, f"{pipeline.name} changed the input's flags"
        check_release(first, x.size)
        check_ledger(first, pipeline)
        again = pipeline.run(x, epsilon, seed=11)
        assert np.array_equal(first.estimate, again.estimate), f"{pipeline.name} is not reproducible ({label})"
        assert first.partition == again.partition, f"{pipeline.name} partition not reproducible ({label})"
        if first.ledger.total > 0 and label == "power-law":
            # on a non-degenerate histogram (all-zero data may legitimately give the same
            # clipped or rounded release for every seed)
            other = pipeline.run(x, epsilon, seed=12)
            assert not np.array_equal(first.estimate, other.estimate), (
                f"{pipeline.name}: a different seed gave the same estimate ({label}); is the noise seeded?")
            for mechanism, eps, arguments in calls:
                check_vetted_mechanism(mechanism, eps, x, arguments)
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
    check_release(release, x.size)
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


def check_vetted_mechanism(mechanism: VettedMechanism, epsilon: float, x: np.ndarray, arguments: dict,
                           trials: int = 300, tolerance: float = 1.5) -> None:
    """Replay a vetted mechanism on ``x`` and neighbours with coupled seeds; flag too little noise.

    For an additive-noise mechanism, the same seed on ``x`` and on a neighbour
    ``x'`` moves output ``j`` by the query's change ``d_j``; the noise spread
    ``b_j`` (mean absolute deviation from the median over seeds, the Laplace
    scale) is measured on ``x``.  Independent Laplace coordinates are
    epsilon-DP only if ``sum_j |d_j| / b_j <= epsilon``; the check fails above
    ``tolerance * epsilon``.  It is a screen, not a proof: mechanisms whose
    output is not a continuous vector of fixed shape are skipped (the privacy
    auditor covers them).
    """
    n = x.size
    for i in sorted({0, n // 2}):
        neighbour = x.copy()
        neighbour[i] += 1
        base, moved = [], []
        for t in range(trials):
            a = mechanism.run(x.copy(), epsilon, SeededLaplace(np.random.default_rng(t)), **arguments)
            b = mechanism.run(neighbour, epsilon, SeededLaplace(np.random.default_rng(t)), **arguments)
            a, b = np.asarray(a), np.asarray(b)
            if a.dtype.kind != "f" or a.shape != b.shape or a.ndim != 1:
                return
            base.append(a)
            moved.append(b)
        base, moved = np.array(base), np.array(moved)
        distinct = np.array([np.unique(col).size for col in base.T]) >= 0.9 * trials
        if not distinct.all():
            return
        shift = np.abs(np.median(moved - base, axis=0))
        spread = np.mean(np.abs(base - np.median(base, axis=0)), axis=0)
        loss = float(np.sum(shift / spread))
        assert loss <= tolerance * epsilon, (
            f"vetted mechanism {mechanism.name}: one record at bin {i} moves the output by {loss:.3g} noise "
            f"scales, more than epsilon = {epsilon:.3g} allows (too little noise for its sensitivity)")


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
        check_pipeline(pipe, **kwargs)


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
    check_pipeline(pipeline, epsilon=epsilon, n=n)
    r = pipeline.run(example_histograms(n)["power-law"], epsilon, seed=3)
    assert math.isclose(r.ledger.total, epsilon, rel_tol=1e-9), (
        f"preset {name} spent {r.ledger.total} of epsilon {epsilon}")
