"""MWEM (plugin mwem): 10 rounds at 4,096 bins (issue 18 target: 0.2 s).

Seeded synthetic histograms with 100,000 records (DPBench's scale range); DPBench defaults
(10 rounds, ratio 0.5, 100 update passes, prefix workload) with the noisy total.  Larger
domains and more rounds are information only.

MWEM-2D (DPBench defaults, 2,000 random rectangles, noisy total) on the 2-D field of
``bench_grids.py`` (Gaussian bumps, 10 records per cell): targets 1 s at 256 x 256 and 10 s at
1024 x 1024 (the issue's 2-D targets), research and release mode.
"""
from dphist import make_algorithm
from _cases import run_seeded, synthetic_setup


def grid_setup(side, epsilon=1.0, **params):
    def setup():
        from bench_grids import field
        return make_algorithm("MWEM-2D", **params), field(side), epsilon
    return setup


def run_release(pipeline, counts, epsilon):
    return pipeline.run(counts, epsilon)

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
    dict(name="MWEM-2D (10 rounds, 2,000 rectangles), 256x256, eps=1", target=1.0,
         setup=grid_setup(256), run=run_seeded),
    dict(name="MWEM-2D (10 rounds, 2,000 rectangles), 256x256, eps=1, release mode", target=1.0,
         setup=grid_setup(256), run=run_release),
    dict(name="MWEM-2D (10 rounds, 2,000 rectangles), 1024x1024, eps=1", target=10.0,
         setup=grid_setup(1024), run=run_seeded),
    dict(name="MWEM-2D (10 rounds, 2,000 rectangles), 1024x1024, eps=0.01, release mode", target=10.0,
         setup=grid_setup(1024, 0.01), run=run_release),
]
