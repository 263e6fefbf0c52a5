"""MWEM (plugin mwem): 10 rounds at 4,096 bins (issue 18 target: 0.2 s).

Seeded synthetic histograms with 100,000 records (DPBench's scale range); DPBench defaults
(10 rounds, ratio 0.5, 100 update passes, prefix workload) with the noisy total.  Larger
domains and more rounds are information only.
"""
from _cases import run_seeded, synthetic_setup

CASES = [
    dict(name="MWEM (10 rounds), N=4096, power law, eps=1", target=0.2,
         setup=synthetic_setup("MWEM", "zipf", 4096, 100_000), run=run_seeded),
    dict(name="MWEM (10 rounds), N=4096, steps, eps=0.1", target=0.2,
         setup=synthetic_setup("MWEM", "steps", 4096, 100_000, epsilon=0.1), run=run_seeded),
    dict(name="MWEM (10 rounds), N=4096, dpbench calibration (true total), eps=1", target=None,
         setup=synthetic_setup("MWEM", "zipf", 4096, 100_000, calibration="dpbench"), run=run_seeded),
    dict(name="MWEM (50 rounds), N=4096, power law, eps=1", target=None,
         setup=synthetic_setup("MWEM", "zipf", 4096, 100_000, rounds=50), run=run_seeded),
    dict(name="MWEM (10 rounds), N=65536, power law, eps=1", target=None,
         setup=synthetic_setup("MWEM", "zipf", 65536, 10 * 65536), run=run_seeded),
]
