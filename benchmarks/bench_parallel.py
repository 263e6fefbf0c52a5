"""The quadratic dynamic programs on 2 threads against 1 thread (the exact searches of dphist.segmentation).

Target: each at least 1.7x faster on 2 cores than on 1, i.e. the 2-thread time at most 1 / 1.7 =
0.588 x the 1-thread time, measured side by side in one process (paired cases: the runner
alternates the two).  Sizes where one thread takes about 0.5-5 s on a quiet machine.  The results
are the same bits on both sides (tests/test_segmentation_threads.py); here only time is measured.

Cases: the SSE + penalty search of AHP-optimal (sorted H~, 2 / (|g| eps^2)), NoiseFirst (NF: H~ in
domain order, a constant per group), Kellaris et al.'s S_2 (``s2_grouping``) and SORTaki's exact DPP
(``dp_cuts``, the AHP error formula summed penalty-last); the row-by-row search of DAWA's exact L1
partition (``least_cost_partition`` with the postprocess calibration's cost on rounded noisy counts:
the search of ``DAWA`` with variant "exact" and of Kellaris et al.'s S_1), StructureFirst (``SF``,
end to end: its own layered dynamic program, filled by a wavefront on threads) and the kernel's
report-noisy-min (``calibration="noisy-min"``: its candidates' noise drawn in parts of the seeded stream
by the threads, the same values).  How each runs on threads: benchmarks/notes/parallel.md.
"""
import numpy as np

from dphist import Pipeline
from dphist import segmentation as S
from dphist.datasets import load
from dphist.segmentation import parallel

from _cases import machine_ceiling, synthetic_setup

FACTOR = 1 / 1.7


def _noisy(n, sort=False, eps=0.1, rounded=False):
    counts = load("synthetic", shape="random", n=n, scale=10 * n, seed=1).counts
    x = counts + np.random.default_rng(3).laplace(0, 1 / eps, n)
    x = np.round(x) if rounded else x
    return np.sort(x)[::-1].copy() if sort else x


def _paired(name, setup, call):
    """A case timing ``call(args, threads)`` with 2 threads against 1."""
    return dict(name=name + " (target: 2 threads <= 1/1.7 x 1 thread)", setup=setup, factor=FACTOR,
                reference=lambda *a: call(a, 1), run=lambda *a: call(a, 2), repeat=2)


def _ahp(n):
    return lambda: (S.SSEPenalty.inverse_size(_noisy(n, sort=True), 2.0 / 0.1 ** 2),)


def _nf(n):
    return lambda: (S.SSEPenalty(_noisy(n), np.full(n + 1, 4.0 / 0.1 ** 2)),)


def _s2(args, threads):
    from dphist_kellaris.s2 import s2_grouping
    parallel.set_threads(threads)
    try:
        s2_grouping(args[0], 0.05, 0.05)
    finally:
        parallel.set_threads(None)


def _dpp(args, threads):
    from dphist.intervals import centred_prefix_sums
    from dphist_sortaki.segmentation import dp_cuts
    p, p2 = centred_prefix_sums(args[0])
    parallel.set_threads(threads)
    try:
        dp_cuts("ahp", p, p2, np.arange(args[0].size + 1), 0.05, 0.05, variant="exact")
    finally:
        parallel.set_threads(None)


def _dawa_exact(args, threads):
    from dphist_dawa.l1_partition import DebiasedCosts, least_cost_partition
    parallel.set_threads(threads)
    try:
        least_cost_partition(args[0], None, "exact", 2, DebiasedCosts(1 / 0.05, 1 / 0.05 + 1 / 0.05, 1.0))
    finally:
        parallel.set_threads(None)


def _preset(args, threads):
    from _cases import run_seeded
    parallel.set_threads(threads)
    try:
        run_seeded(*args)
    finally:
        parallel.set_threads(None)


def _noisy_min(args, threads):
    parallel.set_threads(threads)
    try:
        Pipeline(None, None, ("dawa.l1", {"variant": "exact", "calibration": "noisy-min"}), "group-mean",
                 (0.0, 0.25, 0.75)).run(args[0], 0.1, seed=1)
    finally:
        parallel.set_threads(None)


CASES = [
    machine_ceiling("NF's search on 1 thread, n=32,768", _nf(32768), lambda a: S.optimal(a, threads=1)),
    _paired("AHP-optimal's search, SSE + 2/(|g| eps^2), sorted, n=32,768", _ahp(32768),
            lambda a, t: S.optimal(a[0], threads=t)),
    _paired("NF's search, SSE + 4/eps^2, domain order, n=32,768", _nf(32768),
            lambda a, t: S.optimal(a[0], threads=t)),
    _paired("S_2 (kellaris s2_grouping, optimal), n=32,768", lambda: (_noisy(32768),), _s2),
    _paired("SORTaki DPP exact (error formula AHP), sorted, n=32,768", lambda: (_noisy(32768, sort=True),), _dpp),
    machine_ceiling("DAWA exact / S_1 search on 1 thread, n=8,192", lambda: (_noisy(8192, rounded=True),),
                    lambda x: _dawa_exact((x,), 1)),
    _paired("DAWA exact / S_1 search (postprocess cost, rounded H~), n=8,192",
            lambda: (_noisy(8192, rounded=True),), _dawa_exact),
    _paired("SF (preset, end to end: its prefix-cost layers), power law, n=4,096, eps=0.1",
            synthetic_setup("SF", "zipf", 4096, 40960, epsilon=0.1), _preset),
    _paired("DAWA exact, calibration noisy-min (kernel report-noisy-min), n=8,192",
            lambda: (load("synthetic", shape="random", n=8192, scale=81920, seed=1).counts,), _noisy_min),
    machine_ceiling("SF on 1 thread, power law, n=4,096, eps=0.1",
                    synthetic_setup("SF", "zipf", 4096, 40960, epsilon=0.1), lambda *a: _preset(a, 1)),
]
