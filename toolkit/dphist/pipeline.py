"""The pipeline: SORTaki Algorithm 2 (no sorter) and Algorithm 3 (with a sorter).

    H~  = Initializer(...)          budget gamma_in * eps
    V   = Identity(|H|)
    V   = Sorter(V, H~)             free (post-processing of H~); needs gamma_in > 0
    V   = Partitioner(V, ...)       budget gamma_p * eps
    H~f = Finalizer(V, ...)         budget gamma_f * eps

Sequential composition (Dwork & Roth 2014, Thm 3.14) makes the run
``eps``-DP when every stage is ``gamma * eps``-DP and the gammas sum to 1.
The kernel meters every measurement; :class:`Release` carries the ledger.
"""
from __future__ import annotations

import copy
import dataclasses
import functools
import math
import operator
import time
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from .components.base import KINDS, Component, Context, PublicGenerator
from .errors import DPHistError, InvalidParameter, PrivacyViolation
from .kernel import Ledger, NoiseSource, PrivateKernel, SeededLaplace, validate_epsilon
from .kernel.private import CheckedCounts, checked_partition_in_order, is_plain_partition, is_whole_partition
from .kernel.exact import GeneratorWords
from .kernel.noise import ExactNoise, check_mode
from .kernel.persons import check_contributions, unit_text
from .noise_model import NoiseModel
from .partition import Partition, SingletonPartition
from .partition_blocks import BlockPartition, checked_block_partition
from .validation import identity_vector, sole_float_vector
from . import postprocess as _post
from .registry import Registry, default_registry

STAGES = ("initializer", "sorter", "partitioner", "finalizer")
_SHARE_TOLERANCE = 1e-9
#: the warning every release of a component that is not differentially private carries
NOT_DP = "not differentially private"
#: ``dims`` value of a pipeline that runs on histograms of any number of axes
ANY_DIMS = "any"


def check_dims(dims, who: str = "pipeline"):
    """``dims`` as a sorted tuple of distinct axis counts >= 1, or :data:`ANY_DIMS`."""
    if dims == ANY_DIMS:
        return ANY_DIMS
    if isinstance(dims, (int, np.integer)) and not isinstance(dims, bool):
        dims = (dims,)
    ok = isinstance(dims, (tuple, list)) and len(dims) > 0 and all(
        isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d >= 1 for d in dims)
    out = tuple(sorted({int(d) for d in dims})) if ok else None
    if not ok:
        raise InvalidParameter(f"{who}: dims must be a tuple of supported numbers of axes (integers >= 1, "
                               f"e.g. (1,) or (1, 2)) or {ANY_DIMS!r}, got {dims!r}")
    return out


def dims_text(dims) -> str:
    """``"1-D"``, ``"1-D and 2-D"``, ``"any number of dimensions"``."""
    if dims == ANY_DIMS:
        return "histograms of any number of dimensions"
    names = [f"{d}-D" for d in dims]
    return (" and ".join(names) if len(names) <= 2 else ", ".join(names[:-1]) + " and " + names[-1]) + \
        " histograms" + (" only" if len(names) == 1 else "")


def supports_dims(dims, d: int) -> bool:
    """Does a pipeline or preset declaring ``dims`` run on ``d``-dimensional histograms?"""
    return dims == ANY_DIMS or int(d) in dims


def resolve_component(kind: str, spec, registry: Registry | None = None) -> Component | None:
    """A component instance from an instance, a class, a registry name, ``(name, params)`` or a dict."""
    if spec is None:
        return None
    registry = registry or default_registry
    base = KINDS[kind]
    if isinstance(spec, Component):
        obj = spec
    elif isinstance(spec, type) and issubclass(spec, Component):
        obj = spec()
    else:
        if isinstance(spec, str):
            name, params = spec, {}
        elif isinstance(spec, Mapping):
            name, params = spec.get("name"), dict(spec.get("params", {}))
        elif isinstance(spec, (tuple, list)) and len(spec) == 2:
            name, params = spec[0], dict(spec[1])
        else:
            raise InvalidParameter(f"cannot make a {kind} from {spec!r}")
        obj = registry.get(kind, name)(**params)  # construction validates the declared parameters
    if not isinstance(obj, base):
        raise InvalidParameter(f"{type(obj).__name__} is not a {base.__name__} but was given as the {kind}")
    return obj


#: names accepted by ``Pipeline.run(noise=...)``: the mode's exact sampler, or seeded float Laplace
NOISE_KINDS = ("exact", "float")


def _noise_kind(noise) -> str | None:
    if noise is None or not isinstance(noise, str):
        return None
    if noise not in NOISE_KINDS:
        raise InvalidParameter(f"unknown noise source {noise!r}; choose 'exact' (discrete Laplace, both modes) "
                               "or 'float' (seeded floating-point Laplace, research mode only), or pass a "
                               "NoiseSource object")
    return noise


def _is_dp(component: Component) -> bool:
    return bool(getattr(component, "differentially_private", True))


def _component_spec(c: Component | None):
    return None if c is None else {"name": c.name, "params": _plain(c.get_params())}


def _plain(value):
    """Parameters in a JSON-friendly form (numpy scalars and arrays become Python values)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value


#: numpy's native float64 dtype: a float64 array's ``dtype`` is this very object
_FLOAT64 = np.dtype(np.float64)

#: the parameter types :meth:`Pipeline._run_spec` keeps a spec for (immutable: identity implies the same spec)
_SCALARS = frozenset({int, float, str, bool, type(None), complex})


#: per component class, a function reading its parameters' values in one call (``operator.attrgetter``), or
#: None for a class with its own ``get_params``
_PARAM_GETTERS: dict = {}


def _param_values(component) -> tuple:
    """The values of ``component.get_params()``, in its order, read in one call where the class uses the
    base class's ``get_params`` (the attributes named by its constructor's parameters)."""
    cls = type(component)
    getter = _PARAM_GETTERS.get(cls, False)
    if getter is False:
        getter = None
        if cls.get_params is Component.get_params:
            names = tuple(cls.param_defaults())
            getter = (operator.attrgetter(*names) if len(names) > 1 else
                      (lambda c, name=names[0]: (getattr(c, name),)) if names else (lambda c: ()))
        _PARAM_GETTERS[cls] = getter
    return tuple(component.get_params().values()) if getter is None else getter(component)


def _spec_copy(spec: dict) -> dict:
    """A new dict of a spec whose parameters are scalars (its stage dicts, parameters and lists copied)."""
    out = dict(spec)
    for s in STAGES:
        c = out[s]
        if c is not None:
            out[s] = {"name": c["name"], "params": dict(c["params"])}
    for key in ("shares", "dims", "postprocess"):
        if type(out.get(key)) is list:
            out[key] = list(out[key])
    return out


def _json_safe(value):
    """A spec for export: callables (e.g. a custom error formula) become ``module:qualname``."""
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if callable(value):
        return f"{getattr(value, '__module__', '?')}:{getattr(value, '__qualname__', type(value).__name__)}"
    return value


@dataclass
class Release:
    """A differentially private histogram and the record of how it was made.

    ``mode`` is ``"research"`` (seeded: ``seed`` holds the root entropy and
    :meth:`rerun` repeats the run exactly; never publish such a release, its
    noise can be rebuilt from the seed) or ``"release"`` (exact noise from the
    operating system: ``seed`` is None and nothing reproduces the noise).
    ``warnings`` lists what a reader must know, e.g. ``"not differentially
    private"`` for a reference-code calibration.
    """

    estimate: np.ndarray              #: the published histogram, original domain order
    partition: Partition              #: the groups the finalizer measured
    noisy: np.ndarray | None          #: H~ (the initializer's output), None when gamma_in = 0
    ledger: Ledger                    #: every measurement and its epsilon
    timings: dict[str, float]         #: wall seconds per stage
    spec: dict[str, Any]              #: components, parameters and shares (Pipeline.from_spec)
    epsilon: float
    seed: int | None                  #: entropy of the root SeedSequence (research mode only)
    noise: str                        #: name of the noise source
    unattributed: bool = False        #: estimate is a sorted vector (Hay et al. 2010, Sec. 3)
    notes: dict[str, Any] = field(default_factory=dict)
    pipeline: "Pipeline | None" = field(default=None, repr=False, compare=False)
    mode: str = "research"            #: "research" or "release"
    warnings: list[str] = field(default_factory=list)
    contributions: int = 1            #: privacy unit: 1 record, or k records per person (person-level)
    binning: dict[str, Any] | None = None  #: the public binning spec of histograms built from records
    #: the histogram's public shape; ``estimate``, ``noisy`` and ``partition`` are over its cells
    #: flattened in row-major order (``grid`` is the estimate in this shape)
    shape: tuple[int, ...] | None = None

    def __post_init__(self):
        if self.shape is None:
            self.shape = (int(np.size(self.estimate)),)

    @property
    def dims(self) -> int:
        """The number of axes of the released histogram."""
        return len(self.shape)

    @property
    def grid(self) -> np.ndarray:
        """The estimate in the histogram's shape (a view of ``estimate``)."""
        return np.asarray(self.estimate).reshape(self.shape)
    #: where the statement of the estimate's error comes from: ``(statement, reason)`` or a function
    #: returning it, called on first use (a release nobody asks pays nothing); see :attr:`stated`
    statement_source: Any = field(default=(None, "no statement was made"), repr=False, compare=False)
    postprocess: list = field(default_factory=list)  #: declared post-processing applied, with methods

    # ------------------------------------------------------------- stated error
    def _resolved(self) -> tuple:
        if callable(self.statement_source):
            self.statement_source = self.statement_source()   # the function (and what it held) is dropped
        return self.statement_source

    @property
    def stated(self):
        """The statement of the estimate's error (:mod:`dphist.stated_error`), None when there is none."""
        return self._resolved()[0]

    @property
    def stated_reason(self) -> str:
        """Why there is no statement (empty when there is one)."""
        return self._resolved()[1]

    def _statement(self):
        if self.stated is None:
            raise InvalidParameter(f"this release states no error: {self.stated_reason}")
        return self.stated

    def variance(self, query):
        """Noise variance of a query's estimate (a float for one query, an array for several).

        ``query``: a vector of one weight per bin, a matrix (one query per row), a range
        ``(lo, hi)`` or a workload (a name such as ``"prefix"``, ``(starts, ends)``, ``(lo, hi)``
        pairs).  Exact for linear algorithms (``stated.kind == "exact"``); for a data-dependent
        partition the variance of the noise given the partition, the bias unknown
        (``stated.bias``); after non-linear post-processing the variance of the linear estimate
        before it.  Computed from public quantities only (:mod:`dphist.stated_error`)."""
        from .stated_error import query_matrix
        stated = self._statement()
        Q, one = query_matrix(query, self.estimate.size)
        out = stated.variance(Q)
        return float(out[0]) if one else out

    def bin_variances(self) -> np.ndarray:
        """Per-bin noise variance (original domain order); see :meth:`variance`."""
        return self._statement().bin_variances()

    def confidence_interval(self, query, level: float = 0.95, method: str = "auto"):
        """Interval(s) for the query's true answer at ``level`` in (0, 1): a
        :class:`~dphist.stated_error.ConfidenceInterval` naming its method (``"exact (...)"`` where
        the query's error is one noise term of known law, else ``"chebyshev"``, guaranteed;
        ``method="normal"`` for the normal approximation, not guaranteed) and its caveats."""
        from .stated_error import check_level, query_matrix
        level = check_level(level)
        stated = self._statement()
        Q, one = query_matrix(query, self.estimate.size)
        est = np.asarray(Q @ self.estimate, dtype=float).ravel()
        out = stated.intervals(Q, est, level, method)
        if one:
            out = type(out)(float(out.estimate[0]), float(out.low[0]), float(out.high[0]), out.level, out.method,
                            out.guaranteed, out.note)
        return out

    @property
    def privacy_unit(self) -> str:
        """``"1 record"`` (record level, the default) or ``"k records per person"``."""
        if self.binning is not None and "privacy_unit" in self.binning:
            return self.binning["privacy_unit"]     # a histogram bounded by person says so even at k = 1
        return unit_text(self.contributions)

    def rerun(self, histogram) -> "Release":
        """Run the same algorithm with the same seed (identical output on the same data).

        Research mode only: a release-mode run keeps nothing that could repeat its noise.
        Uses the pipeline object when the release still holds it (so unregistered
        components work), otherwise rebuilds it from ``spec`` through the registry.
        """
        if self.mode != "research" or self.seed is None:
            raise PrivacyViolation("a release-mode release cannot be rerun: no noise state was kept")
        pipeline = self.pipeline if self.pipeline is not None else Pipeline.from_spec(self.spec)
        return pipeline.run(histogram, self.epsilon, seed=self.seed, contributions=self.contributions)

    def to_dict(self) -> dict[str, Any]:
        """The release as plain data.  Release mode exports no seed and no timings: a stage's wall
        time depends on the data (a search's pruning, a sampler's rejections), so it is a side
        channel the ledger does not meter.  ``timings`` stays on the object for the caller."""
        out = {"algorithm": _json_safe(self.spec), "epsilon": self.epsilon, "mode": self.mode}
        if self.mode == "research":
            out["seed"] = self.seed
        out.update({"noise": self.noise, "warnings": list(self.warnings), "unattributed": self.unattributed})
        if self.mode == "research":
            out["timings"] = self.timings
        out.update({"ledger": self.ledger.to_records(), "n_groups": self.partition.n_groups,
                    "estimate": self.estimate.tolist(), "privacy_unit": self.privacy_unit})
        if len(self.shape) > 1:
            out["shape"] = list(self.shape)   # estimate: the cells flattened in row-major order
        if self.binning is not None:
            out["binning"] = self.binning
        out["stated_error"] = (self.stated.describe() if self.stated is not None
                               else {"kind": None, "reason": self.stated_reason})
        if self.postprocess:
            out["postprocess"] = [dict(p) for p in self.postprocess]
        return out


def checked_noise_model(initializer, ctx: Context):
    """``initializer.noise_model(ctx)``, refused unless it is a :class:`~dphist.noise_model.NoiseModel`
    (or None)."""
    model = initializer.noise_model(ctx)
    if model is not None and not isinstance(model, NoiseModel):
        raise InvalidParameter(f"initializer {initializer.name}: noise_model() must return a "
                               f"dphist.noise_model.NoiseModel or None, got {model!r}")
    return model


@dataclass
class PreparedRun:
    """A run's checked input and its kernel (:meth:`Pipeline.prepare`), before any stage ran."""
    kernel: PrivateKernel
    epsilon: float
    mode: str
    seed: int | None
    #: the run's public generator, made on first use (:class:`~dphist.components.base.PublicGenerator`;
    #: ``Context.rng`` reads it as the Generator)
    public_rng: "PublicGenerator | np.random.Generator"
    contributions: int
    binning: Any
    shape: tuple


class Pipeline:
    """An algorithm: four component slots and the budget shares (gamma_in, gamma_p, gamma_f).

    Components may be instances, classes, registry names, ``(name, params)``
    pairs or ``{"name": ..., "params": ...}`` dicts.  ``initializer`` and
    ``sorter`` may be None (SORTaki Algorithm 2).  ``postprocess`` declares
    free post-processing options applied to every release (:mod:`dphist.postprocess`:
    ``"nonnegative"``, ``"integer"``); an unknown option is refused here.
    """

    def __init__(self, initializer=None, sorter=None, partitioner="singleton", finalizer="group-mean",
                 shares=(0.0, 0.0, 1.0), name: str | None = None, registry: Registry | None = None,
                 dims=(1,), postprocess=()):
        self.postprocess = _post.check_options(postprocess)   # an unknown option is named, before any run
        self.initializer = resolve_component("initializer", initializer, registry)
        self.sorter = resolve_component("sorter", sorter, registry)
        self.partitioner = resolve_component("partitioner", partitioner, registry)
        self.finalizer = resolve_component("finalizer", finalizer, registry)
        if self.partitioner is None or self.finalizer is None:
            raise InvalidParameter("a pipeline needs a partitioner and a finalizer")
        self.shares = self._validate_shares(shares)
        self.name = name or "custom"
        #: the numbers of axes of the histograms this pipeline runs on: (1,) by default; a pipeline
        #: whose components are correct on any grid (they see ``ctx.shape``) declares more
        self.dims = check_dims(dims, f"pipeline {self.name!r}")

    #: records per person the pipeline's runs are calibrated to unless a run says otherwise (1: record level)
    contributions = 1

    def at_contributions(self, k: int) -> "Pipeline":
        """A copy whose runs are calibrated to ``k`` records per person (person-level privacy)."""
        other = copy.copy(self)
        other.contributions = check_contributions(k)
        return other

    def _validate_shares(self, shares) -> tuple[float, float, float]:
        if isinstance(shares, Mapping):
            unknown = set(shares) - {"gamma_in", "gamma_p", "gamma_f"}
            if unknown:
                raise InvalidParameter(f"unknown share name(s) {sorted(unknown)}; use gamma_in, gamma_p, gamma_f")
            shares = (shares.get("gamma_in", 0.0), shares.get("gamma_p", 0.0), shares.get("gamma_f", 0.0))
        try:
            g = tuple(float(s) for s in shares)
        except (TypeError, ValueError):
            raise InvalidParameter(f"shares must be three numbers (gamma_in, gamma_p, gamma_f), got {shares!r}") from None
        if len(g) != 3:
            raise InvalidParameter(f"shares must be three numbers (gamma_in, gamma_p, gamma_f), got {len(g)}")
        for label, s in zip(("gamma_in", "gamma_p", "gamma_f"), g):
            if not math.isfinite(s) or s < 0:
                raise InvalidParameter(f"{label} must be a non-negative number, got {s}")
        if abs(sum(g) - 1.0) > _SHARE_TOLERANCE:
            raise InvalidParameter(f"shares must sum to 1, got {g[0]} + {g[1]} + {g[2]} = {sum(g):.12g}")
        g_in, g_p, g_f = g
        if self.initializer is None and g_in > 0:
            raise InvalidParameter(f"gamma_in = {g_in} but the pipeline has no initializer")
        if self.initializer is not None and not self.initializer.spends and g_in > 0:
            raise InvalidParameter(f"initializer {self.initializer.name} spends nothing; gamma_in must be 0")
        if self.sorter is not None and not getattr(self.sorter, "data_independent", False) \
                and (g_in <= 0 or self.initializer is None):
            raise InvalidParameter("a sorter needs an initializer with gamma_in > 0: sorting must use noisy "
                                   "values (SORTaki Algorithm 3); only a data-independent sorter (a "
                                   "linearisation: hilbert, z-order, row-major) runs without one")
        if self.sorter is not None:
            for comp in (self.partitioner, self.finalizer):
                if comp.requires_domain_order:
                    raise InvalidParameter(f"{comp.kind} {comp.name} works only on bins in domain order; "
                                           "it cannot follow a sorter")
        if not self.partitioner.spends and g_p > 0:
            raise InvalidParameter(f"partitioner {self.partitioner.name} spends nothing; gamma_p must be 0, got {g_p}")
        if self.partitioner.spends and g_p <= 0:
            raise InvalidParameter(f"partitioner {self.partitioner.name} spends budget; gamma_p must be > 0")
        if self.finalizer.spends and g_f <= 0:
            raise InvalidParameter(f"finalizer {self.finalizer.name} spends budget; gamma_f must be > 0")
        if not self.finalizer.spends and g_f > 0:
            raise InvalidParameter(f"finalizer {self.finalizer.name} spends nothing; gamma_f must be 0, got {g_f}")
        return g

    # --------------------------------------------------------------- specs
    @property
    def spec(self) -> dict[str, Any]:
        out = {"name": self.name, **{s: _component_spec(getattr(self, s)) for s in STAGES},
               "shares": list(self.shares)}
        if self.contributions != 1:
            out["contributions"] = self.contributions
        if self.dims != (1,):
            out["dims"] = self.dims if self.dims == ANY_DIMS else list(self.dims)
        if self.postprocess:
            out["postprocess"] = list(self.postprocess)
        return out

    def _run_spec(self) -> dict[str, Any]:
        """:attr:`spec` for a run's release: a new dict equal to what :attr:`spec` returns at the run.  The last one
        built is kept with the state it was built from (this pipeline's name, shares, contributions, dims,
        post-processing, its component objects, their names and the objects of their parameters, compared
        by identity) and copied while that state holds; only while every parameter is an immutable scalar
        of Python's (int, float, complex, str, bool, None): a component given a new value between runs (``partitioner.c =
        3``) is seen by its new object, and a list or an array, which could change in place, means a
        rebuild every run; so does a subclass that defines its own :attr:`spec`
        (``tests/test_pipeline_fixed_cost.py``)."""
        if type(self).spec is not Pipeline.spec:     # a subclass's spec may read other state
            return self.spec
        state = [self.name, self.shares, self.contributions, self.dims, self.postprocess]
        for s in STAGES:
            c = getattr(self, s)
            state.append(c)
            if c is not None:
                values = _param_values(c)
                if not _SCALARS.issuperset(map(type, values)):
                    return self.spec      # a value that could change in place: built afresh
                state.append(c.name)
                state.extend(values)
        kept = self.__dict__.get("_kept_spec")
        if kept is None or len(kept[0]) != len(state) or not all(map(operator.is_, kept[0], state)):
            kept = (state, self.spec)
            self.__dict__["_kept_spec"] = kept
        return _spec_copy(kept[1])

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any], registry: Registry | None = None) -> "Pipeline":
        unknown = set(spec) - {"name", "shares", "contributions", "dims", "linearise", "postprocess", *STAGES}
        if unknown:
            raise InvalidParameter(f"unknown pipeline spec key(s) {sorted(unknown)}")
        if "linearise" in spec:   # a 1-D pipeline on a grid's cells in a public order (dphist.linearise)
            from .linearise import Linearised
            inner = {k: v for k, v in spec.items() if k != "linearise"}
            return Linearised(cls.from_spec(inner, registry), spec["linearise"])
        out = cls(**{s: spec.get(s) for s in STAGES}, shares=spec.get("shares", (0, 0, 1)),
                  name=spec.get("name"), registry=registry, dims=spec.get("dims", (1,)),
                  postprocess=spec.get("postprocess", ()))
        return out.at_contributions(spec["contributions"]) if "contributions" in spec else out

    def with_shares(self, shares) -> "Pipeline":
        other = Pipeline(self.initializer, self.sorter, self.partitioner, self.finalizer, shares, self.name,
                         dims=self.dims, postprocess=self.postprocess)
        return other.at_contributions(self.contributions) if self.contributions != 1 else other

    def __repr__(self) -> str:
        parts = [f"{s}={getattr(self, s)!r}" for s in STAGES if getattr(self, s) is not None]
        return f"Pipeline({self.name!r}, {', '.join(parts)}, shares={self.shares})"

    # ----------------------------------------------------------------- run
    def components(self) -> list[Component]:
        return [c for c in (self.initializer, self.sorter, self.partitioner, self.finalizer) if c is not None]

    def run(self, histogram, epsilon, seed=None, noise: NoiseSource | None = None, mode: str | None = None,
            contributions: int | None = None) -> Release:
        """Publish ``histogram`` under ``epsilon``-DP.

        With a ``seed`` (int) the run is in *research* mode: every draw comes
        from a :class:`numpy.random.SeedSequence` of that seed, the release
        stores it, and :meth:`Release.rerun` repeats the run exactly.  Without
        one it is in *release* mode: exact discrete noise from the operating
        system, nothing stored that could reproduce it.  ``mode`` may name the
        mode explicitly; it must agree with the seed.  ``noise`` is ``"exact"``
        (discrete samplers; in research mode driven by the seed), ``"float"``
        (seeded float Laplace, research mode's default, refused in release
        mode) or a :class:`~dphist.kernel.NoiseSource` declaring the run's mode.

        Privacy unit: by default one record (record level: every record is a
        different person).  ``histogram`` may be a :class:`dphist.records.Histogram`
        built from records: its bounding ``k`` (``max_contributions``) and its
        binning spec travel into the run and the release.  ``contributions=k``
        (or :meth:`at_contributions`) calibrates every measurement to ``k``
        records per person; it may not be below the histogram's own ``k``.
        """
        return self.execute(self.prepare(histogram, epsilon, seed, noise, mode, contributions), frees_counts=True)

    def prepare(self, histogram, epsilon, seed=None, noise: NoiseSource | None = None, mode: str | None = None,
                contributions: int | None = None) -> "PreparedRun":
        """The run's checked input, mode, noise source and kernel (:meth:`run`'s first half: nothing is
        spent).  :meth:`execute` runs this pipeline's stages on it; a meta-algorithm (the ``auto``
        preset) measures through the same kernel first and hands it on, so the input is validated and
        copied once and one ledger holds every part."""
        binning, bounded = None, 1
        if type(histogram) is not np.ndarray and hasattr(histogram, "release_input"):   # built from records
            histogram, bounded, binning = histogram.release_input()
        k = check_contributions(self.contributions if contributions is None else contributions)
        if contributions is None:
            if bounded > k:
                k = bounded
        elif k < bounded:
            raise InvalidParameter(f"contributions={k} is below the histogram's max_contributions={bounded}: "
                                   "its persons may each have moved it by that many records")
        checked = CheckedCounts(histogram)   # checked and copied once: the kernel takes it as it is
        shape = checked.shape
        self.check_dims(shape)
        eps = validate_epsilon(epsilon)
        kind = _noise_kind(noise)
        run_mode = self._run_mode(seed, None if kind else noise, mode)
        if run_mode == "release":
            self._check_release_safe()
            if kind == "float":
                raise InvalidParameter("release mode needs exact noise; floating-point Laplace noise is "
                                       "attackable (Mironov 2012): drop noise='float' or give a seed")
            seed = None
            noise = ExactNoise() if noise is None or kind else noise
            public_rng = PublicGenerator(None)  # OS entropy on first use, never stored
        else:
            if type(seed) is not int or seed < 0:   # a non-negative Python int (most seeds) as it is
                if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
                    raise InvalidParameter(f"seed must be a non-negative integer, got {seed!r}")
                seed = int(seed)
            # the children of SeedSequence(seed).spawn(2), built directly (the same streams, without the root
            # and its spawn bookkeeping: a measurable part of a small run): the noise's now, the public one's
            # when a component first reads ctx.rng (components.base.PublicGenerator)
            # Generator(PCG64(seq)) is what default_rng(seq) returns, without its wrapper's cost; the
            # sequence's four seeding words are kept per seed (_noise_seed: the same bit generator state)
            if kind == "exact":
                noise = ExactNoise(GeneratorWords(np.random.Generator(np.random.PCG64(_noise_seed(seed)))))
            elif noise is None or kind == "float":
                noise = SeededLaplace(np.random.Generator(np.random.PCG64(_noise_seed(seed))))
            public_rng = PublicGenerator(seed)   # public_seq's generator, made if a component reads ctx.rng
        kernel = PrivateKernel(checked, noise, contributions=k)   # the shape travels in the checked counts
        return PreparedRun(kernel=kernel, epsilon=eps, mode=run_mode, seed=seed,
                           public_rng=public_rng, contributions=k, binning=binning, shape=shape)

    def _check_release_safe(self) -> None:
        unsafe = [c.name for c in self.components() if not _is_dp(c)]
        if unsafe:
            raise PrivacyViolation(f"release mode refuses {', '.join(unsafe)}: {NOT_DP} "
                                   "(run it with a seed, in research mode, to reproduce published numbers)")

    def execute(self, prepared: "PreparedRun", epsilon: float | None = None, *, frees_counts: bool = False) -> Release:
        """This pipeline's stages on a prepared run (:meth:`prepare`) with ``epsilon`` (default: the
        run's).  With a smaller ``epsilon`` the kernel may already hold other parts' charges (a
        meta-algorithm's): each stage is held to its share of ``epsilon``, the whole ledger to the
        prepared run's epsilon.  ``frees_counts`` (:meth:`run`, whose run owns the kernel): the kernel frees its
        copy of the counts once the finalizer has spent its share (``PrivateKernel._frees_counts_after``), so
        the finalizer's work after its measurements runs without it (memory); the kernel then answers no
        primitive, so a meta-algorithm that measures after this part leaves it False."""
        kernel, shape, run_mode = prepared.kernel, prepared.shape, prepared.mode
        eps = prepared.epsilon if epsilon is None else validate_epsilon(epsilon)
        if eps > prepared.epsilon * (1 + _SHARE_TOLERANCE):
            raise InvalidParameter(f"a part of a run cannot spend {eps:.6g}, more than the run's {prepared.epsilon:.6g}")
        self.check_dims(shape)
        if run_mode == "release":
            self._check_release_safe()
        public_rng, noise, k, binning = prepared.public_rng, kernel.noise, prepared.contributions, prepared.binning
        n = kernel.n
        components = self.components()
        for c in components:   # parameters against the domain and its shape, before anything is spent
            cls = type(c)      # the base class's checks accept every domain: not called (_checks_nothing)
            if cls.check_input is not _CHECK_INPUT:
                c.check_input(n)
            if cls.check_shape is not _CHECK_SHAPE:
                c.check_shape(kernel.shape)
        g_in, g_p, g_f = self.shares
        ctx = Context(n=n, epsilon=eps, gamma_in=g_in, gamma_p=g_p, gamma_f=g_f, rng=public_rng, mode=run_mode,
                      shape=shape)
        for c in components:
            if not _is_dp(c):
                ctx.warn(f"{c.kind} {c.name}: {NOT_DP}")
        timings: dict[str, float] = {}

        t = time.perf_counter()
        if self.initializer is not None:
            ctx.data = kernel.handle(self.initializer.name, "initializer", g_in * eps,
                                     vetted=_declared_vetted(self.initializer))
            ctx.noisy = _owned_noisy(self.initializer.initialize(ctx))
            if ctx.noisy is not None:
                if ctx.noisy.shape != (n,):
                    raise InvalidParameter(f"initializer {self.initializer.name} returned shape "
                                           f"{ctx.noisy.shape}, expected ({n},)")
                ctx.noisy.setflags(write=False)  # later stages must not edit H~ in place
                ctx.data = None                  # the description of H~'s noise reads no data
                ctx.noise_model = checked_noise_model(self.initializer, ctx)
        timings["initializer"] = time.perf_counter() - t

        t = time.perf_counter()
        bins = Partition.singletons(n)
        if self.sorter is not None:
            ctx.data = None
            bins = checked_stage_partition(self.sorter.sort(bins, ctx), n, "sorter", self.sorter.name, kernel)
        timings["sorter"] = time.perf_counter() - t

        t = time.perf_counter()
        ctx.data = kernel.handle(self.partitioner.name, "partitioner", g_p * eps,
                                 vetted=_declared_vetted(self.partitioner))
        bins = checked_stage_partition(self.partitioner.partition(bins, ctx), n, "partitioner",
                                       self.partitioner.name, kernel)
        timings["partitioner"] = time.perf_counter() - t

        t = time.perf_counter()
        ctx.data = kernel.handle(self.finalizer.name, "finalizer", g_f * eps, vetted=_declared_vetted(self.finalizer))
        if frees_counts:   # the run's own kernel: its copy of the counts freed once the finalizer spent its share
            kernel._frees_counts_after(ctx.data)
        estimate = self.finalizer.finalize(bins, ctx)
        if type(estimate) is not np.ndarray or estimate.dtype is not _FLOAT64:   # a float64 ndarray as it is
            estimate = np.asarray(estimate, dtype=float)
        if estimate.shape != (n,):
            raise InvalidParameter(f"finalizer {self.finalizer.name} returned shape {estimate.shape}, expected ({n},)")
        timings["finalizer"] = time.perf_counter() - t
        ctx.data = None
        self._audit_books(kernel, eps, prepared.epsilon)
        # post-processing from here on: public quantities only, nothing charged
        source = self._statement_source(bins, ctx, kernel.noise)
        applied = []
        if self.postprocess:
            stated, reason = source() if callable(source) else source
            estimate, applied = _post.apply(self.postprocess, estimate, stated, bins)
            if stated is not None:
                stated = stated.marked("before-postprocessing",
                                       postprocess=stated.postprocess + tuple(a["option"] for a in applied))
            source = (stated, reason)

        return Release(estimate=estimate, partition=bins, noisy=ctx.noisy, ledger=kernel.ledger,
                       timings=timings, spec=self._run_spec(), epsilon=eps,
                       seed=prepared.seed, noise=getattr(noise, "name", type(noise).__name__),
                       unattributed=bool(self.finalizer.unattributed), notes=ctx.notes,
                       pipeline=self if run_mode == "research" else None, mode=run_mode,
                       warnings=list(ctx.warnings), contributions=k, binning=binning, shape=shape,
                       statement_source=source, postprocess=applied)

    def check_dims(self, shape) -> None:
        """Refuse, before anything is spent, a histogram whose number of axes the pipeline does not
        declare (``dims``); the error names the pipeline (the preset), what it supports and the way
        to run a 1-D algorithm on a grid (a linearisation)."""
        d = len(shape)
        if supports_dims(self.dims, d):
            return
        hint = ""
        if d >= 2 and self.dims != ANY_DIMS and 1 in self.dims:
            hint = (f"; run it on the grid's cells in a linear order: make_algorithm({self.name!r}, "
                    "linearise='hilbert') (or 'z-order', 'row-major'; dphist.linearise)")
        raise InvalidParameter(f"{self.name!r} supports {dims_text(self.dims)}; got a {d}-D histogram of "
                               f"shape {tuple(shape)}{hint}; nothing was spent")

    def _statement_source(self, bins: Partition, ctx: Context, noise):
        """A function returning ``(statement or None, why not)``: the finalizer's
        :meth:`~dphist.Finalizer.stated_error` with the run's noise law, marked by what the pipeline
        knows (groups of several bins, a partition chosen from the data).  It holds public quantities
        only: the noise law (not the source), the finalizer, the partition and a copy of the context
        without data handle or generator."""
        law = _noise_law(noise)
        if law is None:
            return (None, f"the noise source {getattr(noise, 'name', type(noise).__name__)} does not state its law")
        # the public context's fields but the data handle and the generator, read now in one call (notes and
        # warnings copied as they are at the end of the run); the Context itself is built on first use, by
        # _statement
        public = (_public_fields()[1](ctx.__dict__), dict(ctx.notes), list(ctx.warnings))
        chosen = (self.initializer is not None and ctx.gamma_in > 0) or ctx.gamma_p > 0 or self.sorter is not None
        return functools.partial(_statement, self.finalizer, bins, public, law, chosen)   # picklable


    @staticmethod
    def _run_mode(seed, noise, mode) -> str:
        """The run's mode from the seed; an explicit ``mode`` or the noise source's must agree."""
        implied = "release" if seed is None else "research"
        if mode is not None:
            check_mode(mode)
            if mode != implied:
                raise InvalidParameter("a seed in release mode: release mode draws from the operating system "
                                       "and takes no seed" if mode == "release" else
                                       "research mode needs a seed (an integer) to be reproducible")
        if noise is not None:
            declared = getattr(noise, "mode", None)
            if declared not in ("research", "release"):
                raise InvalidParameter(f"noise source {type(noise).__name__} declares no valid mode "
                                       f"(got {declared!r}); set mode = 'research' or 'release'")
            if declared != implied:
                raise InvalidParameter(f"noise source {getattr(noise, 'name', type(noise).__name__)} is for "
                                       f"{declared} mode but the run is in {implied} mode "
                                       f"({'a seed was given' if seed is not None else 'no seed was given'})")
        return implied

    def _audit_books(self, kernel: PrivateKernel, eps: float, total_eps: float | None = None) -> None:
        """Refuse a release whose ledger exceeds its budgets (each stage its share of ``eps``, the
        whole ledger ``total_eps``, by default ``eps``) or whose kernel saw a violation."""
        if kernel.violations:
            raise PrivacyViolation(f"the run read the data outside the kernel: {kernel.violations[0]}")
        by_stage, total = kernel.ledger.by_stage_and_total()
        for stage, share in zip(("initializer", "partitioner", "finalizer"), self.shares):
            if by_stage.get(stage, 0.0) > share * eps * (1 + _SHARE_TOLERANCE) + 1e-15:
                raise PrivacyViolation(f"the {stage} spent {by_stage[stage]:.6g}, more than its share "
                                       f"{share * eps:.6g}")
        limit = eps if total_eps is None else total_eps
        if total > limit * (1 + _SHARE_TOLERANCE) + 1e-15:
            raise PrivacyViolation(f"the ledger totals {total:.6g}, more than epsilon = {limit:.6g}")



@functools.lru_cache(maxsize=1)
def _seed_words_class():
    """:class:`dphist.seeds.SeedWords`, imported on first use (``numpy.random`` is not imported with dphist)."""
    from .seeds import SeedWords
    return SeedWords


def _noise_seed(seed: int):
    """The seed sequence of a research run's noise (``SeedSequence(seed).spawn(2)[0]``), its words kept:
    from the seeds :func:`prime_seeds` computed in advance, else hashed for this seed (and kept for the
    last 64 seeds)."""
    rows, words = _PRIMED   # one read: a priming in another thread replaces both together
    index = rows.get(seed)
    if index is not None:
        return _seed_words_class()(seed, NOISE_SPAWN_KEY, words[index])
    return _hashed_noise_seed(seed)


@functools.lru_cache(maxsize=64)
def _hashed_noise_seed(seed: int):
    return _seed_words_class()(seed, NOISE_SPAWN_KEY)


#: a research run's noise stream is the first child of its seed's sequence (SeedSequence(seed).spawn(2)[0])
NOISE_SPAWN_KEY = (0,)


#: the seeds of the runs about to be made and their noise seed words (prime_seeds): (seed -> row, rows)
_PRIMED: tuple[dict, Any] = ({}, None)


def prime_seeds(seeds) -> None:
    """Hash the noise seed sequences of research runs with these integer ``seeds`` all at once
    (:func:`dphist.seeds.pcg64_words`: the very words ``SeedSequence`` gives, in numpy passes), for the
    runs about to be made: the auditor's looped samples, whose hundreds of thousands of seeds are drawn
    in advance.  A run with a primed seed skips hashing its sequence (about a quarter of a small run); its
    stream is the same.  Replaces the previous priming; ``prime_seeds(())`` clears it."""
    from .seeds import pcg64_words
    seeds = np.asarray(seeds)
    global _PRIMED
    if seeds.size == 0:
        _PRIMED = ({}, None)
        return
    words = pcg64_words(seeds, NOISE_SPAWN_KEY)   # refuses what is not a 1-D array of non-negative integers
    words.setflags(write=False)
    _PRIMED = (dict(zip(seeds.tolist(), range(seeds.size))), words)


def _noise_law(noise):
    """:func:`dphist.stated_error.noise_law` of a run's noise source: for a source of exactly the class the
    pipeline makes (:class:`SeededLaplace` or :class:`ExactNoise`, no ``noise_law`` of its own on the object)
    the law of that class, made here; any other source (a subclass, a user's source, person-level noise)
    asks ``noise_law``."""
    cls = type(noise)
    if (cls is SeededLaplace or cls is ExactNoise) and "noise_law" not in noise.__dict__:
        return _law_classes()[cls]()
    from .stated_error import noise_law
    return noise_law(noise)


@functools.lru_cache(maxsize=1)
def _law_classes() -> dict:
    """The noise law class of each noise source class the pipeline makes (the stated-error module imported
    on first use)."""
    from .stated_error import DiscreteLaplaceLaw, LaplaceLaw
    return {SeededLaplace: LaplaceLaw, ExactNoise: DiscreteLaplaceLaw}


@functools.lru_cache(maxsize=1)
def _public_fields() -> tuple[tuple[str, ...], Any]:
    """The names of :class:`Context`'s fields a statement's public context copies from the run's (every
    field but the data handle, the generator, the noise law, notes and warnings, which it sets itself) and
    a function reading their values from a context's ``__dict__`` in one call."""
    import operator
    names = tuple(f.name for f in dataclasses.fields(Context)
                  if f.name not in ("data", "rng", "noise_law", "notes", "warnings"))
    return names, operator.itemgetter(*names)


def _statement(finalizer, bins: Partition, ctx, law, chosen: bool):
    """``(statement or None, why not)`` (see :meth:`Pipeline._statement_source`); ``ctx`` is the public
    :class:`Context` or its fields (a dict), from which it is built here."""
    from .stated_error import BIAS_UNKNOWN, LinearStatedError, LinearStrategy, StatedError, Unstated
    if type(ctx) is tuple:   # (the public fields' values, notes, warnings): Pipeline._statement_source's
        values, notes, warnings = ctx
        ctx = dict(zip(_public_fields()[0], values))
        ctx.update(data=None, rng=None, noise_law=law, notes=notes, warnings=warnings)
    if isinstance(ctx, dict):
        ctx = Context(**ctx)
    try:
        declared = finalizer.stated_error(bins, ctx)
    except DPHistError:
        raise
    except Exception as exc:   # a plugin's bug must not break an export of a release it already made
        return None, f"the finalizer {finalizer.name}'s stated_error failed ({type(exc).__name__}: {exc})"
    if declared is None:
        return None, f"the finalizer {finalizer.name} does not state its error (its stated_error declares nothing)"
    if isinstance(declared, Unstated):
        return None, f"the finalizer {finalizer.name} states no error: {declared.reason}"
    if isinstance(declared, LinearStrategy):
        stated = LinearStatedError(declared, law, bins)
        if declared.postprocess:
            stated = stated.marked("before-postprocessing", postprocess=tuple(declared.postprocess))
    elif isinstance(declared, StatedError):
        stated = declared
    else:
        raise InvalidParameter(f"finalizer {finalizer.name}: stated_error() must return a LinearStrategy, "
                               f"a StatedError, an Unstated or None, got {declared!r}")
    # the statement's own partition: a finalizer that estimates every bin (SF's trees in each group)
    # states over singletons and stays unbiased given the groups
    if stated.bias is None and stated.partition.n_groups < stated.partition.n_bins:
        bias = (BIAS_UNKNOWN if chosen else "unknown: averaging within a group of several bins is biased by "
                "the spread of the true counts in it, which is private and not stated")
        # after post-processing the kind stays "before-postprocessing"; the averaging's bias is named either way
        stated = stated.marked("noise-only" if stated.kind == "exact" else stated.kind, bias=bias)
    stated.conditional = bool(chosen) or stated.conditional   # a finalizer's own choice (EFPA's K) counts
    # singletons in a data-chosen order stay exact: given the order the estimate is unbiased
    return stated, ""


#: :class:`Component`'s own ``check_input`` and ``check_shape``, which check nothing (every domain and shape
#: accepted): :meth:`Pipeline.execute` calls a component's only when its class defines another
_CHECK_INPUT, _CHECK_SHAPE = Component.check_input, Component.check_shape


#: from this many bins an initializer's fresh H~ is kept without a copy (:func:`_owned_noisy`); below, the copy
#: costs less than the check
OWNED_NOISY_MIN_BINS = 1 << 16


def _owned_noisy(noisy):
    """An initializer's H~ as the pipeline keeps it: ``np.array(noisy, dtype=float)``, a float64 array that no
    component holds.  A C-contiguous, writeable float64 ``numpy.ndarray`` (exactly that type) of at least
    :data:`OWNED_NOISY_MIN_BINS` values that owns its memory and that nothing but this call references
    (:func:`dphist.validation.sole_float_vector`) is that
    copy already: it is returned as it is (the same values; no second array of N floats, whose fresh pages
    cost a fault each at large N).  Anything else is copied.  None stays None."""
    if noisy is None:
        return None
    # the one holder: this function's parameter (the initializer's return value, passed on directly)
    if type(noisy) is np.ndarray and noisy.size >= OWNED_NOISY_MIN_BINS and sole_float_vector(noisy, holders=1):
        return noisy
    return np.array(noisy, dtype=float)


def _declared_vetted(component) -> tuple:
    """The component's declared vetted mechanisms (its opt-in), checked to be a tuple of names."""
    names = getattr(component, "vetted_mechanisms", ())
    if names == () and type(names) is tuple:   # none declared (most components): nothing to check
        return names
    if isinstance(names, str) or not isinstance(names, (tuple, list)) or (
            names and not all(isinstance(v, str) for v in names)):
        raise InvalidParameter(f"{component.kind} {component.name}: vetted_mechanisms must be a tuple of "
                               f"mechanism names, got {names!r}")
    return tuple(names)


def checked_stage_partition(bins, n: int, stage: str, component: str, kernel=None) -> Partition:
    """The partition a stage hands on, validated before the next stage sees it (and before that
    stage is charged anything): a Partition of the ``n`` bins, every bin exactly once, bounds
    increasing strictly from 0 to ``n`` (the kernel's own check; with the run's ``kernel``, by it, so
    that its measurement of the same partition later needs one comparison pass, not a second check).
    Returns a fresh Partition of private copies, so the component cannot change what the next stage
    reads; an error names the stage and the component.  A block partition (boxes tiling the grid,
    :mod:`dphist.partition_blocks`) is checked from its description by the kernel, which hands on its own
    immutable copy (no permutation is built or checked)."""
    if isinstance(bins, BlockPartition):
        try:
            return kernel._checked_blocks(bins) if kernel is not None else checked_block_partition(bins, n)
        except InvalidParameter as exc:
            raise InvalidParameter(f"the {stage} {component} returned an invalid partition ({exc}); nothing of "
                                   "the next stage was run or charged") from None
    if is_plain_partition(bins, n):   # singletons in domain order: valid, and fresh arrays need no copy
        return Partition.singletons(n)
    if is_whole_partition(bins, n):   # one group in domain order (the kernel's own check): valid
        return Partition.whole(n)
    try:
        order, bounds, in_order = (checked_partition_in_order(bins, n) if kernel is None
                                   else kernel._checked_partition(bins))
    except InvalidParameter as exc:
        raise InvalidParameter(f"the {stage} {component} returned an invalid partition ({exc}); nothing of the "
                               "next stage was run or charged") from None
    if in_order:   # domain order: the shared immutable vector, recognised without a pass later
        order = identity_vector(n)
    if bounds is None:   # singletons (the kernel's None for 0..n): their bounds built only when read
        return SingletonPartition(order)
    return Partition(order, bounds, validate=False)
