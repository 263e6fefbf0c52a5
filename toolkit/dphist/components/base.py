"""The four component interfaces of SORTaki (Doudalis & Mehrotra, Section IV).

SORTaki's templates (Algorithms 1-3) are

    H~  = Initializer(H, eps, gamma_in, T)
    V   = Sorter(V, H~)
    V   = Partitioner(V, H, H~, eps, gamma_in, gamma_p, gamma_f, T)
    H~f = Finalizer(V, H, H~, eps, gamma_in, gamma_p, gamma_f, T)

Here ``H`` is never handed over: a component reaches the data only through
``ctx.data``, a :class:`~dphist.kernel.DataHandle` metered to its share.
``V`` is a :class:`~dphist.Partition`; ``eps``, the gammas and ``H~`` travel
in the :class:`Context`; ``T`` are the component's own constructor
parameters.

The contract every component honours (checked by :mod:`dphist.testing`):

* class attributes ``name`` (registry name), ``spends`` (does it use its
  stage's budget share?), ``citation`` (paper and section it implements);
* every parameter is a keyword argument of ``__init__`` with a default and is
  stored under the same attribute name (scikit-learn's convention), so
  :meth:`Component.get_params` and :meth:`Component.clone` work;
* every parameter is declared in ``param_constraints`` (:mod:`dphist.params`);
  construction validates the declared ones before ``__init__`` runs and raises
  :class:`~dphist.errors.InvalidParameter` naming class, parameter, value and
  what was expected (so nothing is spent on a bad parameter);
* all randomness comes from ``ctx.data`` (private) or ``ctx.rng`` (public
  post-processing); no global random state;
* a partitioner or finalizer works on sorted, non-contiguous bins too,
  unless it sets ``requires_domain_order = True``;
* inputs are not mutated; a spending component uses no more than
  ``ctx.budget`` (the kernel enforces it) and by convention all of it.
"""
from __future__ import annotations

import inspect
import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ..errors import InvalidParameter
from ..kernel import DataHandle
from ..noise_model import NoiseModel
from ..params import Constraint, normalize, validate_params
from ..partition import Partition


@dataclass
class Context:
    """What a stage sees besides the bins: budgets, H~, data handle, public RNG."""

    n: int                          #: domain size (public)
    epsilon: float                  #: total budget of the run
    gamma_in: float
    gamma_p: float
    gamma_f: float
    rng: np.random.Generator        #: for public randomness (tie-breaking, post-processing)
    data: DataHandle | None = None  #: metered data access; None for the sorter
    noisy: np.ndarray | None = None  #: H~, the initializer's output (original order)
    #: the law of the run's noise (:func:`dphist.stated_error.noise_law`): public, no random state;
    #: set for :meth:`Finalizer.stated_error`, None when the noise source does not declare it
    noise_law: Any = None
    #: public description of H~'s per-bin noise, set by the initializer that produced H~
    #: (:meth:`Initializer.noise_model`); None when there is no H~
    noise_model: NoiseModel | None = None
    notes: dict[str, Any] = field(default_factory=dict)  #: stage-to-stage public annotations
    mode: str = "research"          #: "research" (seeded) or "release" (exact noise, OS randomness)
    warnings: list[str] = field(default_factory=list)  #: copied into Release.warnings
    #: the histogram's public shape (d axes; ``(n,)`` for 1-D).  Bins are its cells flattened in
    #: row-major order: bin ``i`` is the cell ``numpy.unravel_index(i, shape)``
    shape: tuple[int, ...] | None = None

    def __post_init__(self):
        if self.shape is None:
            self.shape = (int(self.n),)
        else:
            self.shape = tuple(map(int, self.shape))
            if math.prod(self.shape) != int(self.n):   # exact integers (numpy's prod costs a reduction)
                raise InvalidParameter(f"Context: shape {self.shape} does not have n = {self.n} cells")

    @property
    def dims(self) -> int:
        """The number of axes of the histogram (1 for a vector)."""
        return len(self.shape)

    def _get_rng(self):
        rng = self.__dict__["_rng"]
        return rng.generator() if type(rng) is PublicGenerator else rng

    def _set_rng(self, value):
        self.__dict__["_rng"] = value

    def warn(self, message: str) -> None:
        """Add a warning to the release (e.g. "not differentially private"); shown by the CLI."""
        if str(message) not in self.warnings:
            self.warnings.append(str(message))

    @property
    def eps_in(self) -> float:
        return self.gamma_in * self.epsilon

    @property
    def eps_p(self) -> float:
        return self.gamma_p * self.epsilon

    @property
    def eps_f(self) -> float:
        return self.gamma_f * self.epsilon

    @property
    def budget(self) -> float:
        """This stage's share in epsilon (0 when the stage has no data handle)."""
        return self.data.budget if self.data is not None else 0.0


class PublicGenerator:
    """A run's public generator, made on first use: ``numpy.random.Generator(PCG64(seed sequence))`` of
    the run's public child seed sequence (research mode) or of the operating system's entropy (release
    mode).  Few components draw public randomness; a run whose components do not pays nothing for it.
    Made once and shared: every reader (every part of a run) continues one stream, as one Generator object
    handed to them all would."""

    __slots__ = ("_seed", "_made")

    def __init__(self, seed: int | None):
        self._seed = seed        # the run's seed (research mode), None for OS entropy (release mode)
        self._made = None

    def generator(self) -> np.random.Generator:
        if self._made is None:
            seq = (np.random.SeedSequence() if self._seed is None
                   else np.random.SeedSequence(self._seed, spawn_key=(1,)))   # SeedSequence(seed).spawn(2)[1]
            self._made = np.random.Generator(np.random.PCG64(seq))
        return self._made


# ``Context.rng`` reads a PublicGenerator as the generator it makes (on first read); set, it stores the value
Context.rng = property(Context._get_rng, Context._set_rng,
                       doc="for public randomness (tie-breaking, post-processing); made on first read")


class _ValidatedConstruction(type):
    """Metaclass of components: ``Cls(...)`` checks the declared parameters, then runs ``__init__``."""

    def __call__(cls, *args, **kwargs):
        cls.validate_params(cls.bind_params(args, kwargs))
        return super().__call__(*args, **kwargs)


class Component(metaclass=_ValidatedConstruction):
    """Base class: declared name, parameters (and their constraints), budget use and citation."""

    kind: ClassVar[str] = ""
    name: ClassVar[str] = ""
    spends: ClassVar[bool] = False
    citation: ClassVar[str] = ""
    #: True for a component that only works on bins in domain order (contiguous
    #: groups), e.g. a workload-aware finalizer; the pipeline refuses it after a sorter.
    requires_domain_order: ClassVar[bool] = False
    #: False for a component kept to reproduce published numbers whose calibration is
    #: not epsilon-DP (a class attribute, or a property depending on the parameters):
    #: its releases carry the warning "not differentially private" and release mode refuses it.
    differentially_private: ClassVar[bool] = True
    #: names of the :class:`~dphist.kernel.VettedMechanism` objects this component runs through
    #: ``ctx.data.custom``: the explicit opt-in to privacy proofs the kernel cannot check (the kernel
    #: refuses an undeclared one; the conformance kit reports every declared one as a warning)
    vetted_mechanisms: ClassVar[tuple[str, ...]] = ()
    #: the numbers of axes of the histograms the component is correct on (``ctx.shape``): ``(1,)`` by
    #: default, ``(1, 2)``, or ``"any"``.  The conformance kit's harness pipelines carry it, and runs
    #: the component on grids when it includes 2 (presets declare their own dims: ``@preset(dims=...)``)
    dims: ClassVar = (1,)
    #: what each constructor parameter accepts (:mod:`dphist.params`); merged along the class
    #: hierarchy, a subclass's entry replacing its parent's.  Every parameter must be declared.
    param_constraints: ClassVar[dict[str, Any]] = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        merged: dict[str, Any] = {}
        for klass in reversed(cls.__mro__):
            merged.update(klass.__dict__.get("param_constraints", None) or {})
        try:  # a malformed declaration fails when the class is defined, not at its first use
            cls._constraints_cache = normalize(merged)
        except TypeError as exc:
            raise TypeError(f"{cls.__name__}.param_constraints: {exc}") from None

    def check_input(self, n: int) -> None:
        """Check the parameters against the domain size ``n`` (e.g. a workload's ranges); the pipeline
        calls it for every component before any budget is spent.  Default: nothing to check."""

    def check_shape(self, shape: tuple[int, ...]) -> None:
        """Check the parameters against the histogram's public shape (e.g. a workload of rectangles
        over another grid); the pipeline calls it for every component, after :meth:`check_input`,
        before any budget is spent.  Default: nothing to check."""

    @classmethod
    def declared_constraints(cls) -> dict[str, tuple[Constraint, ...]]:
        """``{parameter: (accepted alternatives, ...)}`` of this class (inherited ones included)."""
        return cls.__dict__.get("_constraints_cache", {})

    @classmethod
    def _owner(cls) -> str:
        return f"{cls.__name__} ({cls.name})" if cls.name else cls.__name__

    @classmethod
    def bind_params(cls, args: tuple = (), kwargs: dict | None = None) -> dict[str, Any]:
        """Every constructor parameter's value for ``cls(*args, **kwargs)`` (defaults filled in).

        An unknown keyword or too many positional arguments raise InvalidParameter listing the
        parameters, instead of Python's TypeError.
        """
        kwargs = kwargs or {}
        sig = cls.__dict__.get("_signature_cache")
        if sig is None:
            sig = cls._signature_cache = inspect.signature(cls.__init__)
        names = list(cls.param_defaults())
        if cls.__init__ is object.__init__:
            if args or kwargs:
                raise InvalidParameter(f"{cls._owner()} takes no parameters, got "
                                       f"{', '.join([repr(a) for a in args] + list(kwargs))}")
            return {}
        takes_any = any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())
        unknown = [k for k in kwargs if k not in names]
        if unknown and not takes_any:
            raise InvalidParameter(f"{cls._owner()} has no parameter(s) {', '.join(map(repr, unknown))}; "
                                   f"its parameters are: {', '.join(names) or 'none'}")
        try:
            bound = sig.bind(None, *args, **kwargs)
        except TypeError as exc:
            raise InvalidParameter(f"{cls._owner()}: {exc}; its parameters are: {', '.join(names) or 'none'}") from None
        bound.apply_defaults()
        params: dict[str, Any] = {}
        for i, (k, v) in enumerate(bound.arguments.items()):
            kind = sig.parameters[k].kind
            if i == 0:
                continue  # self
            if kind is inspect.Parameter.VAR_KEYWORD:
                params.update(v)
            elif kind is not inspect.Parameter.VAR_POSITIONAL:
                params[k] = v
        return params

    @classmethod
    def validate_params(cls, params: dict[str, Any]) -> None:
        """Raise InvalidParameter for the first declared parameter whose value is not accepted."""
        validate_params(cls._owner(), cls.declared_constraints(), params)

    @classmethod
    def param_defaults(cls) -> dict[str, Any]:
        """The constructor's keyword parameters and their defaults (cached per class)."""
        cached = cls.__dict__.get("_param_defaults_cache")
        if cached is None:  # inspect.signature is slow; every release's spec needs this
            sig = inspect.signature(cls.__init__)
            cached = {p.name: p.default for p in sig.parameters.values()
                      if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
            cls._param_defaults_cache = cached
        return dict(cached)

    def get_params(self) -> dict[str, Any]:
        names = type(self).__dict__.get("_param_defaults_cache")   # param_defaults() without its copy
        return {k: getattr(self, k) for k in (self.param_defaults() if names is None else names)}

    def clone(self, **overrides) -> "Component":
        return type(self)(**{**self.get_params(), **overrides})

    def __repr__(self) -> str:
        defaults = self.param_defaults()
        changed = {k: v for k, v in self.get_params().items()
                   if not (isinstance(v, (int, float, str, bool, type(None))) and v == defaults.get(k))}
        inner = ", ".join(f"{k}={v!r}" for k, v in changed.items())
        return f"{type(self).__name__}({inner})"


class ReferenceCalibration:
    """Mixin for a component with a ``calibration`` parameter whose value ``"dpbench"`` reproduces a
    reference implementation's flawed calibration (kept to compare with published numbers).

    That value makes ``differentially_private`` False: research releases carry the warning "not
    differentially private" and release mode refuses the component.  Put the mixin before the
    component's kind: ``class MyFinalizer(ReferenceCalibration, Finalizer)``.
    """

    #: the ``calibration`` value that reproduces the reference code, flaw included
    NOT_DP_CALIBRATION: ClassVar[str] = "dpbench"

    @property
    def differentially_private(self) -> bool:
        return self.calibration != self.NOT_DP_CALIBRATION


class Initializer(Component):
    """Takes a noisy first look at the data with budget ``gamma_in * epsilon``."""

    kind = "initializer"
    spends = True

    def initialize(self, ctx: Context) -> np.ndarray | None:
        """Return H~ (length ``ctx.n``, original order) or None when gamma_in is 0."""
        raise NotImplementedError

    def noise_model(self, ctx: Context) -> NoiseModel | None:
        """The noise of the H~ this initializer returns, from public quantities only (the pipeline
        calls it with ``ctx.data = None``): by default Laplace(1/eps_in) on every bin, what SORTaki's
        WAF and UEE assume.  An initializer whose H~ is not that (e.g. AHP's thresholding) overrides it."""
        return NoiseModel.laplace(ctx.eps_in) if ctx.eps_in > 0 else None


class Sorter(Component):
    """Reorders the bins by noisy values; spends nothing (post-processing of H~)."""

    kind = "sorter"
    spends = False

    def sort(self, bins: Partition, ctx: Context) -> Partition:
        raise NotImplementedError


class Partitioner(Component):
    """Merges consecutive groups of ``bins`` (in their current order)."""

    kind = "partitioner"

    def partition(self, bins: Partition, ctx: Context) -> Partition:
        raise NotImplementedError


class Finalizer(Component):
    """Measures the groups with ``gamma_f * epsilon`` and post-processes.

    Returns the estimate in *original domain order*.  A finalizer whose
    release is unattributed (a sorted vector, Hay et al. 2010 Section 3)
    sets ``unattributed = True``.
    """

    kind = "finalizer"
    spends = True
    unattributed: ClassVar[bool] = False

    def finalize(self, bins: Partition, ctx: Context) -> np.ndarray:
        raise NotImplementedError

    def stated_error(self, bins: Partition, ctx: Context):
        """The error this finalizer's estimate carries, from public quantities only (the pipeline
        calls it after :meth:`finalize` with ``ctx.data = None``; it must not read the counts).

        Return a :class:`dphist.stated_error.LinearStrategy` (the measurements over the groups;
        the pipeline turns it into an exact statement with the run's noise law) when the
        estimate is the weighted least-squares solution of those measurements (an exact
        inverse when square), any :class:`dphist.stated_error.StatedError`, a
        :class:`dphist.stated_error.Unstated` (no statement, and why), or None (the default: no
        statement; the release says so).  See :mod:`dphist.stated_error`.
        """
        return None


KINDS = {"initializer": Initializer, "sorter": Sorter, "partitioner": Partitioner, "finalizer": Finalizer}
