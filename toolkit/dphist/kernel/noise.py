"""Noise sources: the one seam through which the kernel draws randomness.

The kernel never calls numpy's random functions itself; it asks a
:class:`NoiseSource`.  The default, :class:`SeededLaplace`, draws
floating-point Laplace noise from a seeded :class:`numpy.random.Generator`
(research mode: reproducible, but floating-point Laplace sampling is
vulnerable to Mironov's (CCS 2012) attack and must not guard real data).
A production source (e.g. exact discrete Laplace from OS randomness,
Canonne-Kamath-Steinke 2020) implements the same three methods and is passed
to :class:`~dphist.Pipeline.run` as ``noise=``; no component changes.
"""
from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class NoiseSource(Protocol):
    """What the kernel needs from a source of randomness."""

    #: short name recorded in every release
    name: str

    def laplace(self, scale: float | np.ndarray, size: int) -> np.ndarray:
        """``size`` independent draws of Laplace(0, scale) as float64."""

    def exponential_choice(self, scores: np.ndarray, coefficient: float) -> int:
        """Index i drawn with probability proportional to exp(coefficient * scores[i])."""

    def uniform(self, size: int) -> np.ndarray:
        """Independent U(0, 1) draws (for mechanisms that need them)."""


class SeededLaplace:
    """Float Laplace noise from a seeded :class:`numpy.random.Generator` (research mode)."""

    name = "seeded-float-laplace"

    def __init__(self, rng: np.random.Generator):
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"SeededLaplace needs a numpy.random.Generator, got {type(rng).__name__}")
        self.rng = rng

    def laplace(self, scale, size):
        return self.rng.laplace(0.0, scale, size=size)

    def exponential_choice(self, scores, coefficient):
        # Gumbel-max trick: argmax(c*s + Gumbel) is distributed as the exponential mechanism.
        logits = coefficient * np.asarray(scores, dtype=float)
        return int(np.argmax(logits + self.rng.gumbel(size=logits.shape)))

    def uniform(self, size):
        return self.rng.random(size)
