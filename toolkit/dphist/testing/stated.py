"""Simulating a data-dependent release with its structure held fixed (checks of stated error).

A data-dependent release states the noise of its last measurement *given* what was chosen before it
(:mod:`dphist.stated_error`).  To check such a statement by simulation the structure must not move:
:func:`finalizer_alone` runs the preset once (its groups, their order, H~, a grid's shape and the
notes of earlier stages, such as AG's level-1 counts, are then fixed), then only its finalizer, many
times, on that structure and the same counts, each time with a fresh kernel and fresh Laplace
noise.  A choice the finalizer makes itself through the exponential mechanism (EFPA's number of
coefficients) is drawn from one fixed generator in every run (:class:`FixedChoices`), so it
repeats; the statement returned is built, as the pipeline builds a release's, from the public
context after such a run.  Used by
``tests/test_stated_error_data_dependent.py``, ``benchmarks/stated_error_accuracy.py`` and
``notebooks/stated-error.ipynb``.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..kernel import PrivateKernel
from ..kernel.noise import SeededLaplace


class UnitNoise:
    """A research-mode noise source adding 1 to the answer at global position ``j`` (None: no noise):
    run once per answer, it reads a linear finalizer's map from its noise to its estimate, column by
    column (the exact check of a linear statement, beside simulation)."""

    name, mode = "unit", "research"

    def __init__(self, j):
        self.j, self.at = j, 0

    def laplace_mechanism(self, values, sensitivity, epsilon, *, integral=False, support=None):
        v = np.asarray(values, dtype=float).copy()
        flat = v.reshape(-1)
        if self.j is not None and self.at <= self.j < self.at + flat.size:
            flat[self.j - self.at] += 1.0
        self.at += flat.size
        return v

    def exponential_mechanism(self, *args, **kwargs):
        raise AssertionError("a linear finalizer draws no exponential mechanism")

    def laplace(self, scale, size):
        raise AssertionError("a linear finalizer draws no raw noise")


def probed_covariance(pipe, x, eps):
    """The covariance of ``pipe``'s release on ``x`` at ``eps``, read from the pipeline itself: one run
    per answer with :class:`UnitNoise` (its column of the linear map), scaled by the ledger's
    ``2 (Delta / eps)^2`` per answer (research mode's float Laplace variance)."""
    base = pipe.run(x, eps, seed=0, noise=UnitNoise(None))
    rows = [(e.sensitivity, e.epsilon) for e in base.ledger.entries for _ in range(e.answers)]
    cols = np.array([pipe.run(x, eps, seed=0, noise=UnitNoise(j)).estimate - base.estimate
                     for j in range(len(rows))])
    var = np.array([2.0 * (s / e) ** 2 for s, e in rows])
    return cols.T @ (var[:, None] * cols)


class FixedChoices(SeededLaplace):
    """Laplace noise from the run's generator; every exponential-mechanism draw from a generator seeded
    with ``choice_seed``, fresh per instance, so one instance per run repeats the same choices."""

    def __init__(self, rng: np.random.Generator, choice_seed: int = 11):
        super().__init__(rng)
        self.choice_seed, self._choices = choice_seed, None

    def exponential_mechanism(self, scores, sensitivity, epsilon, *, monotonic=False):
        if self._choices is None:            # built on first use: most finalizers choose nothing
            self._choices = SeededLaplace(np.random.default_rng(self.choice_seed))
        return self._choices.exponential_mechanism(scores, sensitivity, epsilon, monotonic=monotonic)


def finalizer_alone(pipeline, counts, epsilon: float, runs: int, seed: int = 5):
    """``(release, estimates, statement)``: the pipeline's release at ``seed`` (the structure), the
    estimates of ``runs`` runs of its finalizer alone on that structure (``runs x n``), and the
    statement of those runs (research mode's float Laplace law).  ``pipeline``: a Pipeline or a
    preset name."""
    from .. import make_algorithm
    from ..components.base import Context
    from ..pipeline import Pipeline, _statement, checked_noise_model
    from ..stated_error import LaplaceLaw
    pipe = pipeline if isinstance(pipeline, Pipeline) else make_algorithm(pipeline)
    counts = np.asarray(counts)
    release = pipe.run(counts, epsilon, seed=seed)
    bins, fin = release.partition, pipe.finalizer
    shape = counts.shape if counts.ndim > 1 else None            # a grid's public shape (2-D presets)
    ctx = Context(counts.size, epsilon, *pipe.shares, rng=np.random.default_rng(0), noisy=release.noisy,
                  shape=shape)
    ctx.notes.update(release.notes)        # what earlier stages published (AG's level 1): held fixed too
    if pipe.initializer is not None and ctx.noisy is not None:
        ctx.noise_model = checked_noise_model(pipe.initializer, ctx)
    rng = np.random.default_rng(seed + 1)
    vetted = tuple(getattr(fin, "vetted_mechanisms", ()))
    out = np.empty((int(runs), counts.size))
    for r in range(int(runs)):
        ctx.data = PrivateKernel(counts, FixedChoices(rng)).handle(fin.name, "finalizer", ctx.eps_f, vetted=vetted)
        out[r] = fin.finalize(bins, ctx)
    ctx.data = None
    law = LaplaceLaw()
    public = dataclasses.replace(ctx, rng=None, noise_law=law, notes=dict(ctx.notes))
    chosen = (pipe.initializer is not None and ctx.gamma_in > 0) or ctx.gamma_p > 0 or pipe.sorter is not None
    stated, reason = _statement(fin, bins, public, law, chosen)
    if stated is None:
        raise ValueError(f"{pipe.name}: no statement to check ({reason})")
    return release, out, stated
