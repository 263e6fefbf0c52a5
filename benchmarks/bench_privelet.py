"""Privelet (plugin privelet): end to end at 2^20 bins (issue 18 target: 0.15 s).

Seeded synthetic histograms (10 records per bin on average).  The non-power-of-two case pads
10^6 bins to 2^20 (information only); the release-mode case draws exact discrete Laplace noise
on the 2^20 integer coefficients (information only).  The core's ``identity`` preset (one Laplace
draw per bin, no transform) is timed alongside for scale: on a loaded machine most of Privelet's time
is that noise and the pipeline's checks.
"""
from _cases import run_seeded, synthetic_setup

N_BIG = 2 ** 20


def _run_release(pipeline, counts, epsilon):
    pipeline.run(counts, epsilon)


CASES = [
    dict(name="Privelet, N=2^20, power law, eps=1", target=0.15,
         setup=synthetic_setup("Privelet", "zipf", N_BIG, 10 * N_BIG), run=run_seeded),
    dict(name="Privelet, N=2^20, uniform, eps=0.01", target=0.15,
         setup=synthetic_setup("Privelet", "uniform", N_BIG, 10 * N_BIG, epsilon=0.01), run=run_seeded),
    dict(name="Privelet, N=10^6 (padded to 2^20), power law, eps=1", target=None,
         setup=synthetic_setup("Privelet", "zipf", 10 ** 6, 10 ** 7), run=run_seeded),
    dict(name="identity (the Laplace mechanism alone, for scale), N=2^20, eps=1", target=None,
         setup=synthetic_setup("identity", "zipf", N_BIG, 10 * N_BIG), run=run_seeded),
    dict(name="Privelet release mode (exact discrete Laplace), N=2^20, eps=1", target=None,
         setup=synthetic_setup("Privelet", "zipf", N_BIG, 10 * N_BIG), run=_run_release),
]
