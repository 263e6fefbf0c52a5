"""Core speed targets: identity end to end, all-ranges MSE, pipeline overhead."""
import numpy as np

import dphist
from dphist import Finalizer, Initializer, Partitioner, Pipeline, Sorter
from dphist.metrics import mse
from dphist.workloads import all_ranges

N_BIG = 2 ** 20


def _histogram(n):
    return np.random.default_rng(0).integers(0, 1000, n)


class NoopInitializer(Initializer):
    name = "bench.noop-init"
    citation = "benchmark"

    def initialize(self, ctx):
        return None


class NoopSorter(Sorter):
    name = "bench.noop-sort"
    citation = "benchmark"

    def sort(self, bins, ctx):
        return bins


class NoopPartitioner(Partitioner):
    name = "bench.noop-part"
    citation = "benchmark"

    def partition(self, bins, ctx):
        return bins


class NoopFinalizer(Finalizer):
    name = "bench.noop-final"
    citation = "benchmark"
    spends = False

    def finalize(self, bins, ctx):
        return np.zeros(ctx.n)


def _noop_pipeline():
    # gamma_in = 1 goes to an initializer that measures nothing: only the pipeline's own work is timed
    return Pipeline(NoopInitializer(), None, NoopPartitioner(), NoopFinalizer(), (1.0, 0.0, 0.0))


CASES = [
    dict(name="identity preset end to end, N = 2^20", target=0.3,
         setup=lambda: (dphist.make_algorithm("identity"), _histogram(N_BIG)),
         run=lambda p, x: p.run(x, 1.0, seed=1)),
    dict(name="MSE over all ranges, N = 2^20", target=0.05,
         setup=lambda: (all_ranges(N_BIG), _histogram(N_BIG), _histogram(N_BIG) + 0.5),
         run=lambda w, x, y: mse(w, x, y)),
    dict(name="pipeline overhead, N = 1024, components doing nothing", target=0.002,
         setup=lambda: (_noop_pipeline(), _histogram(1024)),
         run=lambda p, x: p.run(x, 1.0, seed=1), repeat=50),
]
