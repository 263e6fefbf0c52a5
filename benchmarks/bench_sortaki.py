"""SORTaki (plugin sortaki): the speed targets of issue 7.

* ``sDAHP`` (power-of-two DPP) end to end at N = 500,000: under 10 s.
* ``sGAHP`` (GP) end to end at N = 2^20: under 3 s.
* DPP exact (Algorithm 6, O(n^2)) at N = 8,192: under 10 s.
* ``DPC`` (DPCube kd-tree) end to end at N = 2^20: under 3 s (DPBench's DPCube: 65 s).

Histograms are dphist's seeded synthetic shapes at SORTaki's scale (15 records
per bin on average: 7.5 M records on 500,000 bins, Table I); epsilon = 1 and
gamma_in = 0.9 (the presets' defaults).  Informational cases time the
partitioners alone and the generic (plain callable EF) code paths.
"""
import numpy as np

from dphist import make_algorithm
from dphist.datasets import load
from dphist.intervals import centred_prefix_sums
from dphist_sortaki import dp_cuts, greedy_cuts, resolve_error_formula

N_SORTAKI = 500_000
N_BIG = 2 ** 20
N_DP = 8192


def _counts(shape, n):
    return load("synthetic", shape=shape, n=n, scale=15 * n, seed=1).counts


def _setup(algorithm, shape, n, epsilon=1.0, **params):
    def setup():
        return make_algorithm(algorithm, **params), _counts(shape, n), epsilon
    return setup


def _run(pipeline, counts, epsilon):
    pipeline.run(counts, epsilon, seed=7)


def _noisy_sorted(shape, n, eps_in=0.9):
    def setup():
        x = _counts(shape, n) + np.random.default_rng(3).laplace(0, 1 / eps_in, n)
        p, p2 = centred_prefix_sums(np.sort(x)[::-1])
        return p, p2, np.arange(n + 1)
    return setup


def _generic(name):
    ef = resolve_error_formula(name)
    return lambda s, e, p, p2, a, b: ef(s, e, p, p2, a, b)


CASES = [
    dict(name=f"sDAHP (power-of-two DPP) end to end, N=500,000, {label}, eps=1", target=10.0,
         setup=_setup("sDAHP", shape, N_SORTAKI), run=_run)
    for shape, label in [("random", "shuffled power law"), ("zipf", "power law")]
] + [
    dict(name="sDWF (power-of-two DPP, UEE + WAF) end to end, N=500,000, shuffled power law", target=10.0,
         setup=_setup("sDWF", "random", N_SORTAKI), run=_run),
    dict(name="sGAHP (GP) end to end, N=2^20, shuffled power law, eps=1", target=3.0,
         setup=_setup("sGAHP", "random", N_BIG), run=_run),
    dict(name="GAHP (GP, unsorted) end to end, N=2^20, gaussian mixture, eps=1", target=3.0,
         setup=_setup("GAHP", "gaussian-mixture", N_BIG), run=_run),
    dict(name="DPP exact (UEE), N=8,192, sorted noisy shuffled power law", target=10.0,
         setup=_noisy_sorted("random", N_DP),
         run=lambda p, p2, b: dp_cuts("uee", p, p2, b, 0.9, 0.1, "exact")),
    dict(name="DPP exact (AHP EF), N=8,192, sorted noisy shuffled power law", target=10.0,
         setup=_noisy_sorted("random", N_DP),
         run=lambda p, p2, b: dp_cuts("ahp", p, p2, b, 0.9, 0.1, "exact")),
    dict(name="DPC (DPCube, median split) end to end, N=2^20, shuffled power law, eps=1", target=3.0,
         setup=_setup("DPC", "random", N_BIG), run=_run),
    dict(name="DPC (DPCube, median split) end to end, N=2^20, gaussian mixture, eps=1", target=3.0,
         setup=_setup("DPC", "gaussian-mixture", N_BIG), run=_run),
    dict(name="sDPC end to end, N=2^20, shuffled power law, eps=1", target=3.0,
         setup=_setup("sDPC", "random", N_BIG), run=_run),
    # informational: other rules and the generic (plain callable EF) code paths
    dict(name="DPC with v-optimal split (DPBench's rule), N=2^16, gaussian mixture", target=None,
         setup=_setup("DPC", "gaussian-mixture", 2 ** 16, split="v-optimal"), run=_run),
    dict(name="GP, generic callable EF (numpy blocks), N=2^16", target=None,
         setup=_noisy_sorted("random", 2 ** 16),
         run=lambda p, p2, b: greedy_cuts(_generic("uee"), p, p2, b, 0.9, 0.1)),
    dict(name="DPP power-of-two, generic callable EF (cost matrix), N=500,000", target=None,
         setup=_noisy_sorted("random", N_SORTAKI),
         run=lambda p, p2, b: dp_cuts(_generic("uee"), p, p2, b, 0.9, 0.1, "power-of-two")),
    dict(name="DPP exact, generic callable EF (numpy per end), N=8,192", target=None,
         setup=_noisy_sorted("random", N_DP),
         run=lambda p, p2, b: dp_cuts(_generic("uee"), p, p2, b, 0.9, 0.1, "exact")),
]
