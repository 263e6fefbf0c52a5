"""The `auto` preset's overhead at N = 2^16: feature measurement and the tree's choice against the
chosen preset's own run.

Target: the features and the choice add at most 10 % to the run time of the preset `auto` chooses
(a paired case: the chosen preset with the epsilon it gets inside `auto`, ``(1 - share) eps``, against
the whole `auto` run on the same input and seed).  Inputs: dphist's seeded synthetic shapes at 2^16
bins with 10 records per bin, epsilon 1 and 0.1, workload prefix.
"""
from dphist import make_algorithm
from dphist.datasets import load

N = 2 ** 16


def setup_for(shape, epsilon, workload="prefix"):
    def setup():
        counts = load("synthetic", shape=shape, n=N, scale=10 * N, seed=1).counts
        auto = make_algorithm("auto", workload=workload)
        _, choice, seeds = auto.select(counts, epsilon, seed=7)
        return auto, auto.chosen_pipeline(choice), counts, epsilon, seeds[1]
    return setup


def run_auto(auto, chosen, counts, epsilon, seed):
    auto.run(counts, epsilon, seed=7)


def run_chosen(auto, chosen, counts, epsilon, seed):
    chosen.run(counts, epsilon * (1 - auto.share), seed=seed)


CASES = [
    dict(name=f"auto (prefix) vs the preset it chooses, N=2^16, {shape}, eps={eps:g}", setup=setup_for(shape, eps),
         run=run_auto, reference=run_chosen, factor=1.10)
    for shape in ("zipf", "steps", "spikes") for eps in (1.0, 0.1)
]
