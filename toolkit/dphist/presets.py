"""Named algorithms: pipeline presets registered under ``dphist.algorithms``.

A preset is a factory ``f(**params) -> Pipeline`` decorated with
:func:`preset`, which records its name and citation and the constraints of
its own parameters (:mod:`dphist.params`, checked before the factory runs).
:func:`make_algorithm` takes the preset's parameters (e.g. ``gamma_in``) and
overrides of its components' parameters, ``<stage>__<parameter>``::

    make_algorithm("DAWA", ratio=0.3, partitioner__bucket_penalty=2)

Stages are ``initializer``, ``sorter``, ``partitioner``, ``finalizer``; an
override rebuilds that component with the new value (validated by its declared
constraints) after the preset has built the pipeline, so it wins over a preset
parameter that set the same value.
"""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Mapping

from .errors import InvalidParameter
from .params import normalize, validate_params
from .pipeline import STAGES, Pipeline, check_dims
from .registry import Registry, default_registry, parse_requirement

#: separates a stage from a component parameter in ``make_algorithm`` overrides
STAGE_SEPARATOR = "__"


def preset(name: str, citation: str = "", summary: str = "", params: Mapping[str, Any] | None = None,
           requires: tuple[str, ...] = (), dims=(1,)) -> Callable:
    """Mark a pipeline factory as the named algorithm ``name``.

    ``params`` declares the constraints of the factory's parameters (as a component's
    ``param_constraints``); calling the factory checks them first.  ``requires`` lists the
    registry names of components of *other* distributions the preset needs, as
    ``"kind:name"`` (e.g. ``"partitioner:dawa.l1"``): the registry lists the preset as
    unavailable, with the reason, when one of them is not installed.  ``dims`` declares the
    numbers of axes of the histograms the preset runs on (``(1,)`` by default; ``(1, 2)``, or
    ``"any"`` for a preset correct on every grid): its pipelines carry it, and a run on another
    shape is refused before anything is spent (``dphist list --dims 2`` lists the 2-D presets).
    """
    constraints = normalize(params or {})
    dims = check_dims(dims, f"preset {name!r}")
    for requirement in requires:
        parse_requirement(requirement)   # a malformed requirement fails at import, not when listed

    def wrap(factory: Callable[..., Pipeline]) -> Callable[..., Pipeline]:
        accepted = preset_params(factory)
        undeclared_keys = set(constraints) - set(accepted)
        if undeclared_keys:
            raise TypeError(f"preset {name!r} declares constraints for {sorted(undeclared_keys)}, "
                            "which are not parameters of its factory")

        @functools.wraps(factory)
        def checked(*args, **kwargs):
            bound = inspect.signature(factory).bind(*args, **kwargs)
            bound.apply_defaults()
            validate_params(f"preset {name!r}", constraints, bound.arguments)
            return factory(*args, **kwargs)

        checked.name = name
        checked.kind = "algorithm"
        checked.citation = citation
        checked.summary = summary or (inspect.getdoc(factory) or "").split("\n")[0]
        checked.param_constraints = constraints
        checked.requires = tuple(requires)
        checked.dims = dims
        return checked
    return wrap


def preset_params(factory: Callable) -> dict[str, Any]:
    """A preset factory's own parameters and their defaults."""
    return {p.name: p.default for p in inspect.signature(factory).parameters.values()
            if p.kind is p.KEYWORD_ONLY or p.default is not p.empty}


def split_overrides(factory: Callable, overrides: Mapping[str, Any]) -> tuple[dict, dict[str, dict]]:
    """``(preset parameters, {stage: component parameters})`` from ``make_algorithm``'s keywords."""
    own, per_stage = {}, {}
    accepted = preset_params(factory)
    for key, value in overrides.items():
        if STAGE_SEPARATOR in key:
            stage, param = key.split(STAGE_SEPARATOR, 1)
            if stage not in STAGES:
                raise InvalidParameter(f"preset {factory.name!r}: unknown stage {stage!r} in {key!r}; "
                                       f"stages are {', '.join(STAGES)} (write <stage>__<parameter>)")
            per_stage.setdefault(stage, {})[param] = value
        elif key in accepted:
            own[key] = value
        else:
            raise InvalidParameter(
                f"preset {factory.name!r} has no parameter {key!r}; its parameters are: "
                f"{', '.join(accepted) or 'none'}; a component's parameter is given as <stage>__<parameter> "
                f"(e.g. partitioner__{key}), stages {', '.join(STAGES)}")
    return own, per_stage


def override_components(pipe: Pipeline, per_stage: Mapping[str, Mapping[str, Any]], who: str) -> Pipeline:
    """``pipe`` with the given components rebuilt with new parameter values (validated at construction)."""
    if not per_stage:
        return pipe
    inner = getattr(pipe, "inner", None)
    if inner is not None:      # a Linearised preset (dphist.linearise): rebuild the inner pipeline, keep the curve
        return type(pipe)(override_components(inner, per_stage, who), pipe.curve)
    if getattr(pipe, "chooses_per_run", False):
        raise InvalidParameter(f"{who} chooses its preset per run; its stages cannot be overridden "
                               f"(got {', '.join(f'{s}__...' for s in per_stage)})")
    stages = {s: getattr(pipe, s) for s in STAGES}
    for stage, params in per_stage.items():
        component = stages[stage]
        if component is None:
            present = ", ".join(f"{s} ({c.name})" for s, c in stages.items() if c is not None)
            raise InvalidParameter(f"{who} has no {stage}; its stages are: {present}")
        try:
            stages[stage] = component.clone(**params)
        except InvalidParameter as exc:
            raise InvalidParameter(f"{who}, {stage} override: {exc}") from None
    return Pipeline(**stages, shares=pipe.shares, name=pipe.name, postprocess=pipe.postprocess, dims=pipe.dims)


def make_algorithm(name: str, registry: Registry | None = None, postprocess=None, *,
                   linearise: str | None = None, **overrides) -> Pipeline:
    """The pipeline of the preset ``name``, with preset parameters and ``<stage>__<parameter>`` overrides.

    ``postprocess``: declared post-processing options (:mod:`dphist.postprocess`:
    ``"nonnegative"``, ``"integer"``), free of budget, recorded in the release.
    Every value is validated (the preset's declared constraints, then each rebuilt component's)
    before a pipeline exists, so a refused override spends nothing.  The pipeline carries the
    preset's declared ``dims``.  ``linearise`` (``"hilbert"``, ``"z-order"``, ``"row-major"``) runs a
    1-D preset on d-dimensional histograms: the grid's cells in that public order become a 1-D
    histogram (:class:`dphist.linearise.Linearised`).
    """
    from .postprocess import check_options
    options = check_options(postprocess)
    factory = (registry or default_registry).get("algorithm", name)
    own, per_stage = split_overrides(factory, overrides)
    pipe = factory(**own)
    pipe = override_components(pipe, per_stage, f"preset {factory.name!r}")
    pipe.name = factory.name
    pipe.dims = check_dims(getattr(factory, "dims", (1,)), f"preset {factory.name!r}")
    if options:
        (pipe.inner if hasattr(pipe, "inner") else pipe).postprocess = options
    if linearise is not None:
        from .linearise import Linearised
        pipe = Linearised(pipe, linearise)
    return pipe


@preset("identity", citation="Dwork, McSherry, Nissim, Smith, TCC 2006 (Laplace mechanism)", dims="any")
def identity() -> Pipeline:
    """The Laplace mechanism: Laplace(1/eps) on every bin."""
    return Pipeline(None, None, "singleton", "group-mean", (0.0, 0.0, 1.0))


@preset("uniform", citation="Hay et al., DPBench, SIGMOD 2016 (Uniform)", dims="any")
def uniform() -> Pipeline:
    """A noisy total spread evenly over the domain."""
    return Pipeline(None, None, "whole", "group-mean", (0.0, 0.0, 1.0))
