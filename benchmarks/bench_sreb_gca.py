"""SReB_GCA (plugin sreb_gca): GGS end to end at N = 2^20, the optimal variant at N = 8,192.

Targets from issue 16: ``SReB_GCA`` under 2 s at N = 2^20; ``SReB_GCA-optimal`` under 5 s at
N = 8,192.  Histograms are dphist's seeded synthetic shapes (10 records per bin on average);
epsilon = 1 and 0.01 (more noise: coarser groups, longer bound searches).
"""
from _cases import run_seeded, synthetic_setup

N_BIG = 2 ** 20
N_DP = 8192


CASES = [
    dict(name=f"SReB_GCA (GGS), N=2^20, {label}, eps={eps:g}", target=2.0,
         setup=synthetic_setup("SReB_GCA", shape, N_BIG, 10 * N_BIG, epsilon=eps), run=run_seeded)
    for shape, label in [("uniform", "uniform"), ("zipf", "power law"), ("spikes", "sparse spikes")]
    for eps in (1.0, 0.01)
] + [
    dict(name="SReB_GCA-optimal (O(n^2) dynamic program), N=8192, power law, eps=1", target=5.0,
         setup=synthetic_setup("SReB_GCA-optimal", "zipf", N_DP, 10 * N_DP), run=run_seeded),
    dict(name="SReB_GCA-optimal (O(n^2) dynamic program), N=8192, uniform, eps=0.01", target=5.0,
         setup=synthetic_setup("SReB_GCA-optimal", "uniform", N_DP, 10 * N_DP, epsilon=0.01), run=run_seeded),
    dict(name="SReB_GCA exact error form, N=65536, power law, eps=1", target=None,
         setup=synthetic_setup("SReB_GCA", "zipf", 65536, 10 * 65536, form="exact"), run=run_seeded),
]
