"""EFPA and P-HP (plugin acs2012, Acs, Castelluccia, Chen, ICDM 2012).

Targets from issue 18: ``EFPA`` at N = 2^20 under 0.5 s; ``PHP`` at N = 32,768 under 0.5 s (the
DPBench code: 7.5 s).  Histograms are dphist's seeded synthetic shapes (10 records per bin on
average); research mode (seeded), as every benchmark.  P-HP's time grows with the number of
bisection decisions, so the cases cover few groups (eps = 0.1) and many (eps = 1, up to the
2,000-group cap) and a sparse histogram.
"""
from _cases import run_seeded, synthetic_setup

N_EFPA = 2 ** 20
N_PHP = 32768

CASES = [
    dict(name=f"EFPA, N=2^20, {label}, eps={eps:g}{tag}", target=0.5,
         setup=synthetic_setup("EFPA", shape, N_EFPA, 10 * N_EFPA, epsilon=eps, **params), run=run_seeded)
    for shape, label in [("zipf", "power law"), ("gaussian-mixture", "gaussian mixture")]
    for eps in (1.0, 0.01)
    for tag, params in [("", {}), (" (entrywise)", {"calibration": "entrywise"})]
] + [
    dict(name=f"PHP, N=32768, {label}, eps={eps:g}", target=0.5,
         setup=synthetic_setup("PHP", shape, N_PHP, 10 * N_PHP, epsilon=eps), run=run_seeded)
    for shape, label in [("zipf", "power law"), ("gaussian-mixture", "gaussian mixture"), ("spikes", "sparse spikes")]
    for eps in (1.0, 0.1)
] + [
    dict(name="PHP, N=4096, power law, eps=1", target=None,
         setup=synthetic_setup("PHP", "zipf", 4096, 10 * 4096), run=run_seeded),
]
