"""Filling numba's cache before the first run (``dphist warm``; ``make install`` runs it).

Every available preset runs once on a small synthetic histogram, in research and in release mode, so
that each kernel a run uses is compiled and written to :func:`~dphist.cache.numba_cache_dir`; then a
run loads it instead of compiling.  numba compiles on one thread, so the work is spread over processes:

1. this process compiles what every preset shares (the kernel's exact samplers and Laplace loops, the
   loops through an order) by running ``identity`` and the large-input paths;
2. forked workers take the presets plugin by plugin (the presets of one distribution share most of
   their kernels, so one worker compiles them once), the plugins with the most presets first;
3. this process runs every preset again.  Each kernel is now loaded from the cache the workers wrote;
   one that is not (two workers writing one function's cache index at the same moment keep only one of
   the entries) is compiled here, so the cache is complete when :func:`warm` returns.

The releases of these runs are discarded; nothing in them touches a user's data.
"""
from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor

import numpy as np

#: the preset run first, alone, to compile what every preset shares
SHARED_FIRST = "identity"


def synthetic_inputs(bins: int) -> tuple[np.ndarray, np.ndarray]:
    """The histogram every 1-D preset runs on (``bins`` Poisson counts) and the square grid of about as
    many cells that 2-D-only presets run on."""
    rng = np.random.default_rng(0)
    counts = rng.poisson(20, bins)
    side = max(2, int(round(bins ** 0.5)))
    return counts, rng.poisson(20, (side, side))


def run_preset(name: str, bins: int) -> None:
    """``name`` once in research mode and, when every component is differentially private, once in
    release mode (the exact samplers), on :func:`synthetic_inputs`."""
    from .pipeline import supports_dims
    from .presets import make_algorithm

    counts, grid = synthetic_inputs(bins)
    pipeline = make_algorithm(name)
    data = counts if supports_dims(getattr(pipeline, "dims", (1,)), 1) else grid
    pipeline.run(data, 1.0, seed=0)
    if all(getattr(c, "differentially_private", True) for c in pipeline.components()):
        pipeline.run(data, 1.0)


def order_loops() -> None:
    """Compile the loops through an order that runs of 2^16 bins and more use (``dphist._order_jit``), for the
    arrays they meet: int64 counts and float64 values, each writeable and read-only (the kernel's counts and
    checked orders are immutable; numba compiles each kind apart)."""
    from ._order_jit import is_permutation_bits
    from .partition import gather_run, scatter_run

    order = np.array([1, 0], dtype=np.int64)
    frozen = order.copy()
    frozen.setflags(write=False)
    for dtype in (np.int64, np.float64):
        writeable, read_only = np.zeros(2, dtype=dtype), np.zeros(2, dtype=dtype)
        read_only.setflags(write=False)
        for vals in (writeable, read_only):
            for ordr in (order, frozen):
                gather_run(vals, ordr, 0, np.empty(2, dtype=dtype))
                scatter_run(vals, ordr, 0, np.empty(2, dtype=dtype))
    for ordr in (order, frozen):
        is_permutation_bits(ordr, 2)


def large_input_paths() -> None:
    """The kernels only runs larger than :func:`synthetic_inputs` reach: research mode's compiled Laplace
    loops (from 4,096 draws), the sorter's packed argsort (from 2^15 keys) and :func:`order_loops` (from
    2^16 bins)."""
    from .kernel.noise import COMPILED_IMPORT_DRAWS, _compiled
    from .partition import packed_stable_argsort

    _compiled(COMPILED_IMPORT_DRAWS)
    packed_stable_argsort(np.array([1.0, 0.0]))
    order_loops()


def plugin_groups(names: list[str], registry=None) -> list[list[str]]:
    """``names`` grouped by the distribution that registers each preset, the largest group first (ties in
    order of first appearance; within a group, the order of ``names``)."""
    from .registry import default_registry

    registry = default_registry if registry is None else registry
    owner = {e.name: e.distribution for e in registry.entries("algorithm")}
    groups: dict[str, list[str]] = {}
    for name in names:
        groups.setdefault(owner.get(name, ""), []).append(name)
    return sorted(groups.values(), key=len, reverse=True)


def _warm_group(names: list[str], bins: int) -> None:
    for name in names:
        run_preset(name, bins)


def _worker_init(parent: int) -> None:
    from .experiments.executors import one_search_thread
    from .experiments.lifeline import exit_with_parent
    exit_with_parent(parent)
    one_search_thread()   # the workers already share the cores


def default_jobs() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def warm(bins: int = 256, jobs: int | None = None, names: list[str] | None = None) -> list[str]:
    """Compile and cache the kernels of ``names`` (default: every available preset) over ``jobs`` processes
    (default: the cores available; 1 runs everything here, as does a platform without ``fork``).  Returns
    the presets warmed."""
    import numba  # noqa: F401 - first, so that the loops small inputs run interpreted are compiled too

    from .registry import default_registry

    if names is None:
        unavailable = default_registry.unavailable("algorithm")
        names = [n for n in default_registry.names("algorithm") if n not in unavailable]
    jobs = default_jobs() if jobs is None else jobs
    if SHARED_FIRST in names:
        run_preset(SHARED_FIRST, bins)
    large_input_paths()
    groups = plugin_groups([n for n in names if n != SHARED_FIRST])
    if jobs > 1 and len(groups) > 1 and "fork" in multiprocessing.get_all_start_methods():
        with ProcessPoolExecutor(min(jobs, len(groups)), mp_context=multiprocessing.get_context("fork"),
                                 initializer=_worker_init, initargs=(os.getpid(),)) as pool:
            for done in [pool.submit(_warm_group, group, bins) for group in groups]:
                done.result()   # a preset that fails to run fails the warm-up, naming it
    _warm_group([n for group in groups for n in group], bins)   # loads what the workers cached
    return names

