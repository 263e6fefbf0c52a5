"""AHP (plugin ahp): greedy end to end at N = 2^20, optimal and empirical at N = 8,192.

Targets from issue 5: ``AHP`` (greedy) under 3 s at N = 2^20 on every shape class
(uniform, power law, shuffled power law, sparse spikes); ``AHP-optimal`` under 10 s
at N = 8,192.  Histograms are dphist's seeded synthetic shapes (10 records per bin
on average unless stated); epsilon = 1 (small scan lengths are not favoured: larger
epsilon means less noise and finer groups).
"""

from _cases import run_seeded, synthetic_setup

N_BIG = 2 ** 20
N_DP = 8192


CASES = [
    dict(name=f"AHP greedy, N=2^20, {label}, eps=1", target=3.0,
         setup=synthetic_setup("AHP", shape, N_BIG, 10 * N_BIG), run=run_seeded)
    for shape, label in [("uniform", "uniform"), ("zipf", "power law"), ("random", "shuffled power law"),
                         ("spikes", "sparse spikes")]
] + [
    dict(name="AHP greedy, N=2^20, uniform, eps=0.01", target=3.0,
         setup=synthetic_setup("AHP", "uniform", N_BIG, 10 * N_BIG, epsilon=0.01), run=run_seeded),
    dict(name="AHP greedy, N=2^20, uniform, 100 records/bin, eps=1", target=3.0,
         setup=synthetic_setup("AHP", "uniform", N_BIG, 100 * N_BIG), run=run_seeded),
    dict(name="AHP greedy ascending sort, N=2^20, sparse spikes, eps=1", target=3.0,
         setup=synthetic_setup("AHP", "spikes", N_BIG, 10 * N_BIG, descending=False), run=run_seeded),
    dict(name="AHP-optimal (O(n^2) dynamic program), N=8192, power law, eps=1", target=10.0,
         setup=synthetic_setup("AHP-optimal", "zipf", N_DP, 10 * N_DP), run=run_seeded),
    dict(name="AHP-optimal (O(n^2) dynamic program), N=8192, uniform, eps=1", target=10.0,
         setup=synthetic_setup("AHP-optimal", "uniform", N_DP, 10 * N_DP), run=run_seeded),
    dict(name="AHP-empirical (k-group dynamic program, k<=91), N=8192, power law, eps=1", target=None,
         setup=synthetic_setup("AHP-empirical", "zipf", N_DP, 10 * N_DP), run=run_seeded),
    dict(name="AHP-empirical (k-group dynamic program, k<=256), N=65536, power law, eps=1", target=None,
         setup=synthetic_setup("AHP-empirical", "zipf", 65536, 10 * 65536), run=run_seeded),
    dict(name="AHP-optimal (O(n^2) dynamic program), N=32768 (its max_bins), power law, eps=1", target=None,
         setup=synthetic_setup("AHP-optimal", "zipf", 32768, 10 * 32768), run=run_seeded, repeat=1),
]
