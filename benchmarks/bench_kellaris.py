"""Speed targets of the kellaris plugin (issue 15): the Table 1 schemes end to end.

Inputs: ``dphist.datasets.synthetic`` steps histograms (piecewise constant, 10^7 records), so that
the grouping stages form groups of many sizes; research mode (seeded), eps = 1.

S1+PMM's time is S1, the dawa plugin's exact L1 grouping (``dawa.l1`` variant "exact"): every one of the
5.4e8 candidate groups of 32,768 bins gets its deviation from :class:`dphist.segmentation.L1Deviation`'s
linked list over distinct values (amortised O(1) per candidate on integer counts; 29 s with a Fenwick
query per candidate before 2026-11-23).
"""
import dphist
from dphist.datasets import synthetic

from dphist_kellaris import TABLE_1

N_BIG = 2 ** 20
N_LOG = 32_768   # the paper's Log dataset size


def _case(label, n, target, warmup=True):
    def setup():
        return dphist.make_algorithm(TABLE_1[label]), synthetic("steps", n=n, scale=10 ** 7, seed=0).counts

    def run(pipeline, x):
        pipeline.run(x, 1.0, seed=1)

    return dict(name=f"{label} end to end, N = {n:,}", target=target, setup=setup, run=run, warmup=warmup)


CASES = [
    _case("S2", N_LOG, 3.0),
    _case("S2+H", N_BIG, 1.0),
    _case("S1+H", N_BIG, 3.0),
    _case("S1+PMM", N_LOG, 5.0),
    _case("H", N_BIG, 0.5),
    _case("S~", N_LOG, None),
    _case("S~+PMM", N_LOG, None),
    _case("O+S2", N_LOG, None),
]
