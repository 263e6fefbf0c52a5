"""AHP (plugin ahp): greedy end to end at N = 2^20, optimal and empirical at N = 8,192.

Targets from issue 5: ``AHP`` (greedy) under 3 s at N = 2^20 on every shape class
(uniform, power law, shuffled power law, sparse spikes); ``AHP-optimal`` under 10 s
at N = 8,192.  Histograms are dphist's seeded synthetic shapes (10 records per bin
on average unless stated); epsilon = 1 (small scan lengths are not favoured: larger
epsilon means less noise and finer clusters).
"""
import numpy as np

from dphist import make_algorithm
from dphist.datasets import load

N_BIG = 2 ** 20
N_DP = 8192


def _setup(algorithm, shape, n, scale, epsilon=1.0, **params):
    def setup():
        counts = load("synthetic", shape=shape, n=n, scale=scale, seed=1).counts
        return make_algorithm(algorithm, **params), counts, epsilon
    return setup


def _run(pipeline, counts, epsilon):
    pipeline.run(counts, epsilon, seed=7)


CASES = [
    dict(name=f"AHP greedy, N=2^20, {label}, eps=1", target=3.0,
         setup=_setup("AHP", shape, N_BIG, 10 * N_BIG), run=_run)
    for shape, label in [("uniform", "uniform"), ("zipf", "power law"), ("random", "shuffled power law"),
                         ("spikes", "sparse spikes")]
] + [
    dict(name="AHP greedy, N=2^20, uniform, eps=0.01", target=3.0,
         setup=_setup("AHP", "uniform", N_BIG, 10 * N_BIG, epsilon=0.01), run=_run),
    dict(name="AHP greedy, N=2^20, uniform, 100 records/bin, eps=1", target=3.0,
         setup=_setup("AHP", "uniform", N_BIG, 100 * N_BIG), run=_run),
    dict(name="AHP greedy ascending sort, N=2^20, sparse spikes, eps=1", target=3.0,
         setup=_setup("AHP", "spikes", N_BIG, 10 * N_BIG, descending=False), run=_run),
    dict(name="AHP-optimal (O(n^2) DP), N=8192, power law, eps=1", target=10.0,
         setup=_setup("AHP-optimal", "zipf", N_DP, 10 * N_DP), run=_run),
    dict(name="AHP-optimal (O(n^2) DP), N=8192, uniform, eps=1", target=10.0,
         setup=_setup("AHP-optimal", "uniform", N_DP, 10 * N_DP), run=_run),
    dict(name="AHP-empirical (k-cluster DP, k<=91), N=8192, power law, eps=1", target=None,
         setup=_setup("AHP-empirical", "zipf", N_DP, 10 * N_DP), run=_run),
    dict(name="AHP-empirical (k-cluster DP, k<=256), N=65536, power law, eps=1", target=None,
         setup=_setup("AHP-empirical", "zipf", 65536, 10 * 65536), run=_run),
    dict(name="AHP-optimal (O(n^2) DP), N=32768 (its max_bins), power law, eps=1", target=None,
         setup=_setup("AHP-optimal", "zipf", 32768, 10 * 32768), run=_run, repeat=1),
]
