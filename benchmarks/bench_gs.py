"""GS (plugin gs, reconstructed) end to end at N = 2^20.

Target from issue 18: ``GS`` under 1 s at N = 2^20.  Histograms are dphist's seeded synthetic
shapes (10 records per bin on average); epsilon = 1 and 0.01.  The cost is the noisy sort and the
O(n log n) scan over every group size w.
"""
from _cases import run_seeded, synthetic_setup

N = 2 ** 20

CASES = [
    dict(name=f"GS, N=2^20, {label}, eps={eps:g}", target=1.0,
         setup=synthetic_setup("GS", shape, N, 10 * N, epsilon=eps), run=run_seeded)
    for shape, label in [("uniform", "uniform"), ("zipf", "power law"), ("spikes", "sparse spikes")]
    for eps in (1.0, 0.01)
]
