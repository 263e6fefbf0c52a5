"""Speed targets of the boost plugin (issue 4): H and Hb end to end, isotonic regression, weighted inference."""
import numpy as np

import dphist
from dphist_boost import level_epsilons, level_sizes, pava, weighted_inference

N_BIG = 2 ** 20


def _histogram(n):
    return np.random.default_rng(0).integers(0, 1000, n)


def _run_preset(pipeline, x):
    pipeline.run(x, 1.0, seed=1)


def _noisy_tree(n, k, budgets):
    rng = np.random.default_rng(2)
    sizes = level_sizes(n, k)
    eps = level_epsilons(budgets, len(sizes), 1.0)
    return [rng.normal(100, 10, s) for s in sizes], [2 / e ** 2 for e in eps], k


def _sorted_noisy(n):
    rng = np.random.default_rng(3)
    return (np.sort(rng.zipf(1.8, n).clip(max=10 ** 6)) + rng.laplace(0, 10, n),)


CASES = [
    dict(name="H (binary, inference) end to end, N = 2^20", target=0.5,
         setup=lambda: (dphist.make_algorithm("H"), _histogram(N_BIG)), run=_run_preset),
    dict(name="Hb (auto branching, inference) end to end, N = 2^20", target=0.5,
         setup=lambda: (dphist.make_algorithm("Hb"), _histogram(N_BIG)), run=_run_preset),
    dict(name="isotonic regression (PAVA), n = 10^6", target=0.5,
         setup=lambda: _sorted_noisy(10 ** 6), run=pava),
    dict(name="weighted (geometric) inference only, N = 2^20", target=1.0,
         setup=lambda: _noisy_tree(N_BIG, 2, "geometric"), run=weighted_inference),
    dict(name="H with geometric budgets end to end, N = 2^20", target=None,
         setup=lambda: (dphist.make_algorithm("H", level_budgets="geometric"), _histogram(N_BIG)), run=_run_preset),
    dict(name="unattributed-S-bar end to end, N = 2^20", target=None,
         setup=lambda: (dphist.make_algorithm("unattributed-S-bar"), _histogram(N_BIG)), run=_run_preset),
]
