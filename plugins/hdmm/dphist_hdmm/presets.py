"""Presets of the hdmm plugin: an optimised p-Identity strategy on singleton bins, the whole budget.

``OPT-prefix`` (the prefix workload ``[0, t)``), ``OPT-ranges`` (all ``n(n+1)/2`` ranges) and ``OPT``
(``workload=`` any form :func:`dphist.workloads.resolve` takes; all ranges by default).  On grids
(2-D): ``OPT-2D-prefix``, ``OPT-2D-ranges`` (all rectangles) and ``OPT-2D`` (``workload=`` any grid
form of :func:`dphist_hdmm.kron.resolve_grid`), a Kronecker product of per-axis strategies.
"""
from __future__ import annotations

from dphist import Pipeline, preset
from dphist.params import Interval

from .finalizer import CITATION, OptimizedFinalizer
from .kron_finalizer import KRON_CITATION, KroneckerFinalizer

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


_K = KroneckerFinalizer.param_constraints
_TUNING_2D = {"p": _K["p"], "seed": _K["seed"], "iterations": _K["iterations"]}


def _pipeline_2d(workload, p, seed, iterations) -> Pipeline:
    return Pipeline(None, None, "singleton", KroneckerFinalizer(workload=workload, p=p, seed=seed,
                                                                iterations=iterations), (0.0, 0.0, 1.0), dims=(2,))


@preset("OPT-2D", citation=KRON_CITATION, params={"workload": _K["workload"], **_TUNING_2D}, dims=(2,))
def opt_2d(workload="all-rectangles", p=None, seed: int = 0, iterations: int = 150) -> Pipeline:
    """A Kronecker product of p-Identity strategies optimised for a grid ``workload`` (HDMM's OPT_x),
    measured once, least squares; ``dpbench-random-<m>`` through its Kronecker surrogate."""
    return _pipeline_2d(workload, p, seed, iterations)


@preset("OPT-2D-prefix", citation=KRON_CITATION, params=_TUNING_2D, dims=(2,))
def opt_2d_prefix(p=None, seed: int = 0, iterations: int = 150) -> Pipeline:
    """Per-axis p-Identity strategies optimised for the 2-D prefix workload (prefix x prefix), measured once."""
    return _pipeline_2d("prefix", p, seed, iterations)


@preset("OPT-2D-ranges", citation=KRON_CITATION, params=_TUNING_2D, dims=(2,))
def opt_2d_ranges(p=None, seed: int = 0, iterations: int = 150) -> Pipeline:
    """Per-axis p-Identity strategies optimised for all rectangles (all ranges x all ranges), measured once."""
    return _pipeline_2d("all-rectangles", p, seed, iterations)
