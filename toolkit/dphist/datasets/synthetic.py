"""Synthetic shapes at any domain size (for tests, benchmarks and teaching).

Each function returns a probability vector (a *shape*, DPBench's term);
:func:`synthetic` turns a shape into counts by multinomial sampling of
``scale`` records from a seeded generator.
"""
from __future__ import annotations

import numpy as np

from ..errors import InvalidParameter
from .dataset import Dataset


def _normalise(w: np.ndarray) -> np.ndarray:
    return w / w.sum()


def uniform_shape(n: int, rng=None) -> np.ndarray:
    return np.full(n, 1.0 / n)


def zipf_shape(n: int, rng=None, exponent: float = 1.1) -> np.ndarray:
    return _normalise(1.0 / np.arange(1, n + 1) ** exponent)


def gaussian_mixture_shape(n: int, rng: np.random.Generator, components: int = 5) -> np.ndarray:
    x = np.arange(n)[:, None]
    mu = rng.uniform(0, n, components)
    sd = rng.uniform(n / 100, n / 10, components)
    w = rng.dirichlet(np.ones(components))
    return _normalise((w * np.exp(-0.5 * ((x - mu) / sd) ** 2) / sd).sum(axis=1) + 1e-12)


def steps_shape(n: int, rng: np.random.Generator, pieces: int = 8) -> np.ndarray:
    cuts = np.sort(rng.choice(np.arange(1, n), size=min(pieces - 1, n - 1), replace=False))
    levels = rng.exponential(1.0, size=cuts.size + 1)
    return _normalise(np.repeat(levels, np.diff(np.r_[0, cuts, n])))


def spikes_shape(n: int, rng: np.random.Generator, density: float = 0.02) -> np.ndarray:
    w = np.zeros(n)
    k = max(1, int(round(density * n)))
    w[rng.choice(n, size=k, replace=False)] = rng.pareto(1.5, size=k) + 1
    return _normalise(w)


def random_shape(n: int, rng: np.random.Generator) -> np.ndarray:
    """A shuffled power law: heavy variability between neighbours (SORTaki's "random")."""
    return rng.permutation(zipf_shape(n))


SHAPES = {"uniform": uniform_shape, "zipf": zipf_shape, "gaussian-mixture": gaussian_mixture_shape,
          "steps": steps_shape, "spikes": spikes_shape, "random": random_shape}


def synthetic(shape: str = "zipf", n: int = 4096, scale: int = 100_000, seed: int = 0) -> Dataset:
    """``scale`` records drawn from ``shape`` over ``n`` bins (multinomial, seeded)."""
    if shape not in SHAPES:
        raise InvalidParameter(f"unknown synthetic shape {shape!r}; known: {', '.join(SHAPES)}")
    if int(n) < 1:
        raise InvalidParameter(f"domain size n must be at least 1, got {n}")
    if int(scale) <= 0:
        raise InvalidParameter(f"scale must be positive, got {scale}")
    rng = np.random.default_rng(seed)
    p = SHAPES[shape](int(n), rng)
    counts = rng.multinomial(int(scale), p)
    return Dataset(f"synthetic-{shape}", counts, f"{scale:,} records from a {shape} shape",
                   f"{n} abstract bins", "synthetic (dphist.datasets.synthetic)", shape,
                   meta={"seed": seed, "scale": scale})
