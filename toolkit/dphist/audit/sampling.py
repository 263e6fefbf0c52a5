"""Many independent runs of an algorithm on one histogram: a batched path and a looped one.

What the auditor records of each run: the published estimate, the partition
(as canonical group labels: bins numbered by the group's first bin, so equal
set partitions get equal labels) and H~ when there is one.

Two paths give the same distribution; neither re-implements a component.

* **Batched** (every component declares ``batch_capable = True``): the
  pipeline's stages run ONCE through the ordinary kernel and the component
  code, but the noise source is :class:`BatchedLaplace`, which returns a
  ``(trials, m)`` array wherever the kernel asks for ``m`` Laplace draws, so
  every noisy answer carries a leading trials axis.  The kernel still charges
  and meters each call (the ledger is checked after the run).  Only
  components whose control flow does not depend on noisy values may declare
  themselves batch-capable (their partition must be the same for every
  trial); the noise source refuses the exponential mechanism.
* **Looped**: ``Pipeline.run`` per trial, with seeds drawn from the phase's
  :class:`numpy.random.SeedSequence`: ``noise="float"`` (research mode's seeded float
  Laplace), ``"exact"`` (research mode, exact samplers) or ``"release"`` (release mode:
  the exact samplers on seeded words, :class:`~dphist.audit.harness.ReleaseNoise`; the
  components see ``ctx.mode == "release"``, exactly as in a published run).

The auditor spreads whole pairs over forked processes (:func:`forked_pool`);
with a single pair, a looped sample is split over them instead.  Results do
not depend on the number of processes: every run's seed is fixed in advance.

The batched path draws float Laplace noise from a seeded generator: it audits
the research-mode mechanism.  Release mode is audited looped (``noise="release"``).
"""
from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from ..components.base import Context
from ..errors import DPHistError
from ..kernel import PrivateKernel
from ..partition import Partition
from ..pipeline import Pipeline, checked_noise_model, prime_seeds

#: trials per vectorised block (bounds memory: block x n floats per array) ...
BLOCK = 1 << 17
#: ... and at most this many floats per array on large domains
BLOCK_ELEMENTS = 1 << 22
#: the modes a looped run can be audited in
NOISES = ("float", "exact", "release")


class NotBatchable(DPHistError):
    """A component asked the batched noise source for something only a looped run can answer."""


@dataclass
class Outputs:
    """What ``trials`` runs published; every array has the trials on axis 0."""

    estimate: np.ndarray               #: (trials, n) float
    labels: np.ndarray                 #: (trials, n) canonical group labels (may be a broadcast view)
    noisy: np.ndarray | None           #: (trials, n) H~, None when the pipeline has no initializer

    @property
    def trials(self) -> int:
        return int(self.estimate.shape[0])


def canonical_labels(partition: Partition) -> np.ndarray:
    """Group labels numbered by order of first appearance in the domain (equal set partitions -> equal labels).

    Computed once per audited run, so without sorting the labels: a group's first bin is the smallest
    index in its slice of the order (its bounds increase strictly, so no slice is empty)."""
    n, k = partition.n_bins, partition.n_groups
    if k == n:       # singletons: the group of bin i is the i-th to appear
        return np.arange(n, dtype=np.int64)
    if k == 1:
        return np.zeros(n, dtype=np.int64)
    first = np.minimum.reduceat(partition.order, partition.bounds[:-1])
    rank = np.empty(k, dtype=np.int64)
    rank[np.argsort(first)] = np.arange(k)   # the first bins are distinct: any sort gives the same ranks
    out = np.empty(n, dtype=np.int64)
    out[partition.order] = np.repeat(rank, partition.sizes)
    return out


class BatchedLaplace:
    """A noise source that answers every request for ``m`` draws with a ``(trials, m)`` array."""

    name = "batched-seeded-float-laplace"
    mode = "research"

    def __init__(self, rng: np.random.Generator, trials: int):
        self.rng = rng
        self.trials = int(trials)

    def laplace(self, scale, size):
        # Laplace(0, b) is b times the difference of two independent Exp(1) draws; numpy's ziggurat
        # exponential sampler makes this 1.5x faster than Generator.laplace (same distribution)
        shape = (self.trials, int(size))
        draws = self.rng.standard_exponential(shape)
        draws -= self.rng.standard_exponential(shape)
        draws *= np.asarray(scale, dtype=float)
        return draws

    def laplace_mechanism(self, values, sensitivity, epsilon, *, integral=False, support=None):
        values = np.asarray(values, dtype=float)
        return values.reshape(-1) + self.laplace(float(sensitivity) / float(epsilon), values.size)

    def probe(self) -> "BatchedLaplace":
        """A throwaway batched source for the kernel's probes of user code (the run's draws untouched)."""
        return BatchedLaplace(np.random.default_rng(0), self.trials)

    def exponential_mechanism(self, scores, sensitivity, epsilon, *, monotonic=False):
        raise NotBatchable("the exponential mechanism draws one index; run this component looped")


def batch_capable(pipeline: Pipeline) -> bool:
    """True when every component of ``pipeline`` declares ``batch_capable`` (and there is no sorter)."""
    if pipeline.sorter is not None:
        return False
    comps = [c for c in (pipeline.initializer, pipeline.partitioner, pipeline.finalizer) if c is not None]
    return all(getattr(c, "batch_capable", False) for c in comps)


def _trials_array(value, trials: int, n: int, what: str) -> np.ndarray:
    arr = np.asarray(value, dtype=float)
    if arr.shape == (n,):
        return np.broadcast_to(arr, (trials, n))
    if arr.shape != (trials, n):
        raise NotBatchable(f"{what} returned shape {arr.shape} in a batched run, expected ({trials}, {n})")
    return arr


def run_batched(pipeline: Pipeline, counts: np.ndarray, epsilon: float, trials: int,
                rng: np.random.Generator) -> Outputs:
    """``trials`` runs of a batch-capable pipeline in one pass (the stage order of :meth:`Pipeline.run`)."""
    kernel = PrivateKernel(counts, BatchedLaplace(rng, trials), contributions=pipeline.contributions)
    n = kernel.n
    g_in, g_p, g_f = pipeline.shares
    ctx = Context(n=n, epsilon=epsilon, gamma_in=g_in, gamma_p=g_p, gamma_f=g_f, rng=rng, mode="research",
                  shape=kernel.shape)
    noisy = None
    if pipeline.initializer is not None:
        ctx.data = kernel.handle(pipeline.initializer.name, "initializer", g_in * epsilon,
                                 vetted=pipeline.initializer.vetted_mechanisms)
        out = pipeline.initializer.initialize(ctx)
        if out is not None:
            noisy = _trials_array(out, trials, n, f"initializer {pipeline.initializer.name}")
            noisy.setflags(write=False)
            ctx.noisy = noisy
            ctx.data = None
            ctx.noise_model = checked_noise_model(pipeline.initializer, ctx)
    bins = Partition.singletons(n)
    ctx.data = kernel.handle(pipeline.partitioner.name, "partitioner", g_p * epsilon,
                             vetted=pipeline.partitioner.vetted_mechanisms)
    bins = pipeline.partitioner.partition(bins, ctx)
    if not isinstance(bins, Partition) or bins.n_bins != n:
        raise NotBatchable(f"partitioner {pipeline.partitioner.name} did not return one partition of {n} bins")
    bins.validate()
    ctx.data = kernel.handle(pipeline.finalizer.name, "finalizer", g_f * epsilon,
                             vetted=pipeline.finalizer.vetted_mechanisms)
    estimate = _trials_array(pipeline.finalizer.finalize(bins, ctx), trials, n,
                             f"finalizer {pipeline.finalizer.name}")
    pipeline._audit_books(kernel, epsilon)   # the same books check as Pipeline.run (per stage and in total)
    labels = np.broadcast_to(canonical_labels(bins), (trials, n))
    return Outputs(estimate=estimate, labels=labels, noisy=noisy)


def run_once(pipeline: Pipeline, counts: np.ndarray, epsilon: float, seed: int, noise: str = "float"):
    """One run: research mode (``"float"``, ``"exact"``) seeded by ``seed``, or release mode
    (``"release"``) with the exact samplers on words seeded by ``seed``."""
    if noise == "release":
        from .harness import ReleaseNoise
        return pipeline.run(counts, epsilon, noise=ReleaseNoise(np.random.default_rng(int(seed))))
    return pipeline.run(counts, epsilon, seed=int(seed), noise=noise)


def _runs(pipeline: Pipeline, counts: np.ndarray, epsilon: float, seeds: np.ndarray, noise: str):
    """:func:`run_once` for each seed in turn, the seeds' sequences hashed all at once first
    (:mod:`dphist.seeds`; the same streams, without a quarter of a small run's cost)."""
    if noise == "release":
        from ..seeds import generators
        from .harness import ReleaseNoise
        for rng in generators(seeds):   # np.random.default_rng(seed) for each seed
            yield pipeline.run(counts, epsilon, noise=ReleaseNoise(rng))
        return
    prime_seeds(seeds)
    for s in seeds.tolist():
        yield pipeline.run(counts, epsilon, seed=s, noise=noise)


def _run_seeds(pipeline: Pipeline, counts: np.ndarray, epsilon: float, seeds: np.ndarray,
               noise: str = "float") -> Outputs:
    n = counts.size
    est = np.empty((seeds.size, n))
    labels = np.empty((seeds.size, n), dtype=np.int64)
    noisy = None
    for i, rel in enumerate(_runs(pipeline, counts, epsilon, seeds, noise)):
        est[i] = rel.estimate
        labels[i] = canonical_labels(rel.partition)
        if rel.noisy is not None:
            if noisy is None:
                noisy = np.full((seeds.size, n), np.nan)
            noisy[i] = rel.noisy
    return Outputs(est, labels, noisy)


_FORKED: dict = {}


def _forked_run(args) -> Outputs:
    index, counts, epsilon, seeds, noise = args
    return _run_seeds(_FORKED["pipelines"][index], counts, epsilon, seeds, noise)


@contextmanager
def forked_pool(workers: int, **shared):
    """A pool of ``workers`` forked processes that inherit ``shared`` (None when 1 worker or no fork).

    Nothing is pickled on the way in: the workers are forked after ``shared`` is in place (the
    audit's ``pipelines``), so unregistered and locally defined components work.
    """
    if workers <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        yield None
        return
    from ..experiments.executors import blas_threads_limited
    _FORKED.update(shared)
    try:
        with blas_threads_limited(1), ProcessPoolExecutor(
                workers, mp_context=multiprocessing.get_context("fork"),
                initializer=_forked_worker_init, initargs=(os.getpid(),)) as pool:
            yield pool
    finally:
        _FORKED.clear()


def _forked_worker_init(parent: int) -> None:
    from ..experiments.executors import one_search_thread
    from ..experiments.lifeline import exit_with_parent   # workers end with their parent
    exit_with_parent(parent)
    one_search_thread()


def forked(name: str):
    """What :func:`forked_pool` shared under ``name`` (inside a worker)."""
    return _FORKED[name]


def run_looped(pipeline: Pipeline, counts: np.ndarray, epsilon: float, seeds: np.ndarray,
               pool: ProcessPoolExecutor | None = None, noise: str = "float", index: int = 0) -> Outputs:
    """One :meth:`Pipeline.run` per seed (``noise``: one of :data:`NOISES`); with a
    :func:`forked_pool` sharing ``pipelines`` (``pipeline`` is ``pipelines[index]``), the seeds
    are split over its workers (from 64 seeds on: a fast audit's 100 selection runs are worth splitting,
    a few dozen are not worth a round trip)."""
    if pool is None or seeds.size < 64:
        return _run_seeds(pipeline, counts, epsilon, seeds, noise)
    chunks = np.array_split(seeds, pool._max_workers)
    parts = list(pool.map(_forked_run, [(index, counts, epsilon, c, noise) for c in chunks]))
    noisy = None if parts[0].noisy is None else np.concatenate([p.noisy for p in parts])
    return Outputs(np.concatenate([p.estimate for p in parts]), np.concatenate([p.labels for p in parts]), noisy)


def sample(pipeline: Pipeline, counts: np.ndarray, epsilon: float, trials: int,
           seed_seq: np.random.SeedSequence, *, batched: bool, pool: ProcessPoolExecutor | None = None,
           noise: str = "float", index: int = 0):
    """Yield :class:`Outputs` blocks totalling ``trials`` runs, all randomness from ``seed_seq``."""
    if batched:
        rng = np.random.default_rng(seed_seq)
        block = max(1024, min(BLOCK, BLOCK_ELEMENTS // max(counts.size, 1)))
        done = 0
        while done < trials:
            size = min(block, trials - done)
            yield run_batched(pipeline, counts, epsilon, size, rng)
            done += size
    else:
        seeds = seed_seq.generate_state(trials, dtype=np.uint64)
        yield run_looped(pipeline, counts, epsilon, seeds, pool, noise, index)


def default_workers() -> int:
    """Processes for looped runs: the cores this process may use, at most 2."""
    try:
        return max(1, min(2, len(os.sched_getaffinity(0))))
    except AttributeError:  # not Linux
        return max(1, min(2, os.cpu_count() or 1))
