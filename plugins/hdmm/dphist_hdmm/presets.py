"""Presets of the hdmm plugin: an optimised p-Identity strategy on singleton bins, the whole budget.

``OPT-prefix`` (the prefix workload ``[0, t)``), ``OPT-ranges`` (all ``n(n+1)/2`` ranges) and ``OPT``
(``workload=`` any form :func:`dphist.workloads.resolve` takes; all ranges by default).
"""
from __future__ import annotations

from dphist import Pipeline, preset
from dphist.params import Interval

from .finalizer import CITATION, OptimizedFinalizer

_F = OptimizedFinalizer.param_constraints
_TUNING = {"p": _F["p"], "seed": Interval(int, 0, None), "iterations": Interval(int, 1, None)}


def _pipeline(workload, p, seed, iterations) -> Pipeline:
    return Pipeline(None, None, "singleton", OptimizedFinalizer(workload=workload, p=p, seed=seed,
                                                                iterations=iterations), (0.0, 0.0, 1.0))


@preset("OPT", citation=CITATION, params={"workload": _F["workload"], **_TUNING})
def opt(workload="all-ranges", p=None, seed: int = 0, iterations: int = 150) -> Pipeline:
    """A p-Identity strategy optimised for ``workload`` (HDMM's OPT_0), measured once, least squares."""
    return _pipeline(workload, p, seed, iterations)


@preset("OPT-prefix", citation=CITATION, params=_TUNING)
def opt_prefix(p=None, seed: int = 0, iterations: int = 150) -> Pipeline:
    """A p-Identity strategy optimised for the prefix workload, measured once, least squares."""
    return _pipeline("prefix", p, seed, iterations)


@preset("OPT-ranges", citation=CITATION, params=_TUNING)
def opt_ranges(p=None, seed: int = 0, iterations: int = 150) -> Pipeline:
    """A p-Identity strategy optimised for all range queries, measured once, least squares."""
    return _pipeline("all-ranges", p, seed, iterations)
