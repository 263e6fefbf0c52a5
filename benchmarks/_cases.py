"""Shared pieces of the benchmark modules (imported by them; not a topic of its own)."""
from dphist import make_algorithm
from dphist.datasets import load


def synthetic_setup(algorithm, shape, n, scale, epsilon=1.0, **params):
    """A case's ``setup``: the preset and a seeded synthetic histogram (``shape``, ``n`` bins, ``scale`` records)."""
    def setup():
        counts = load("synthetic", shape=shape, n=n, scale=scale, seed=1).counts
        return make_algorithm(algorithm, **params), counts, epsilon
    return setup


def run_seeded(pipeline, counts, epsilon):
    """A case's ``run``: one research-mode run (seeded, as every benchmark times)."""
    pipeline.run(counts, epsilon, seed=7)
