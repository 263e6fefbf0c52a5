"""Named algorithms: pipeline presets registered under ``dphist.algorithms``.

A preset is a factory ``f(**overrides) -> Pipeline`` decorated with
:func:`preset`, which records its name and citation.  Keyword arguments let
a user vary a preset's parameters (e.g. ``gamma_in``) without rewriting it.
"""
from __future__ import annotations

import inspect
from typing import Any, Callable

from .pipeline import Pipeline
from .registry import Registry, default_registry


def preset(name: str, citation: str = "", summary: str = "") -> Callable:
    """Mark a pipeline factory as the named algorithm ``name``."""
    def wrap(factory: Callable[..., Pipeline]) -> Callable[..., Pipeline]:
        factory.name = name
        factory.kind = "algorithm"
        factory.citation = citation
        factory.summary = summary or (inspect.getdoc(factory) or "").split("\n")[0]
        return factory
    return wrap


def preset_params(factory: Callable) -> dict[str, Any]:
    return {p.name: p.default for p in inspect.signature(factory).parameters.values()
            if p.kind is p.KEYWORD_ONLY or p.default is not p.empty}


def make_algorithm(name: str, registry: Registry | None = None, **overrides) -> Pipeline:
    """The pipeline of the preset ``name`` (with parameter overrides)."""
    factory = (registry or default_registry).get("algorithm", name)
    pipe = factory(**overrides)
    pipe.name = factory.name
    return pipe


@preset("identity", citation="Dwork, McSherry, Nissim, Smith, TCC 2006 (Laplace mechanism)")
def identity() -> Pipeline:
    """The Laplace mechanism: Laplace(1/eps) on every bin."""
    return Pipeline(None, None, "singleton", "group-mean", (0.0, 0.0, 1.0))


@preset("uniform", citation="Hay et al., DPBench, SIGMOD 2016 (Uniform)")
def uniform() -> Pipeline:
    """A noisy total spread evenly over the domain."""
    return Pipeline(None, None, "whole", "group-mean", (0.0, 0.0, 1.0))
