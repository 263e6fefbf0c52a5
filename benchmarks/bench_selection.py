"""The `auto` preset's overhead at N = 2^16: feature measurement and the tree's choice against the
chosen preset's own run.

Target: the features and the choice add at most 10 % to the run time of the preset `auto` chooses
(a paired case: the chosen preset with the epsilon it gets inside `auto`, ``(1 - share) eps``, against
the whole `auto` run on the same input).  `auto` validates and copies the input once and runs the
chosen preset's stages on the same kernel (``Pipeline.prepare`` / ``execute``), so what it adds is the
skip rule's lookup, one vetted mechanism's passes over the counts (its public probe kept by the kernel per
domain and epsilon after the first), and the tree walk.
Inputs: dphist's seeded synthetic shapes at 2^16 bins with 10 records per bin; the cases are chosen
so that the chosen presets include the fastest ones (Hb, identity, AHP: a few O(n) passes each,
where a fixed cost weighs most) and one data-dependent partitioner (DAWA-approx); NF, which `auto`
also chooses, takes tens of seconds a run at 2^16 bins (a dynamic program), so its case is left out.
On a 256 x 256 grid (2^16 cells; the grid statistics and the 2-D model) the CPU-time cases time `auto`
against HB-2D, AG and AHP-2D (a linearised preset, run on `auto`'s kernel reordered along its curve).

The statistics come from the numpy route until a process has measured ``features.COMPILED_BINS`` (2^27)
bins of large domains, then from the compiled pass (numba; the same integers, the same bits).  Every case
measures that steady state of a process that runs `auto` often: its set-up measures the statistics until
the switch (:func:`steady_state`, about 0.5 s once a process) and checks that both routes give the same
statistics on the case's input.
"""
import numpy as np

from dphist import make_algorithm
from dphist.datasets import load

N = 2 ** 16


def grid(shape: str):
    """A seeded 256 x 256 grid (2^16 cells): ``"flat"`` (Poisson 10 a cell) or ``"bump"`` (a Gaussian bump on
    a floor of 5)."""
    import numpy as np
    i, j = np.indices((256, 256))
    rate = 10.0 + 0 * i if shape == "flat" else 40 * np.exp(-((i - 80) ** 2 + (j - 170) ** 2) / 2000) + 5
    return np.random.default_rng(1).poisson(rate)


def steady_state(counts, shape=None):
    """Measure the statistics of ``counts`` until the compiled pass serves them (``features._compiled``),
    then check that the numpy route and the compiled pass give the same statistics (exit otherwise)."""
    from unittest import mock

    import numpy as np
    from dphist.selection import features
    flat = np.ascontiguousarray(counts, dtype=np.int64).ravel()
    flat.setflags(write=False)
    while features._compiled(flat.size, True) is None:
        features._vector(flat, shape, checked=True)
    compiled = features._vector(flat, shape, checked=True)
    with mock.patch.object(features, "_compiled", lambda n, first: None):
        if not np.array_equal(features._vector(flat, shape, checked=True), compiled):
            raise SystemExit("the compiled pass and the numpy route disagree: the statistics are not exact")


def setup_for(shape, epsilon, workload, expected):
    def setup():
        counts = grid(shape) if shape in ("flat", "bump") else load("synthetic", shape=shape, n=N, scale=10 * N,
                                                                    seed=1).counts
        steady_state(counts, counts.shape)
        auto = make_algorithm("auto", workload=workload)
        _, choice = auto.select(counts, epsilon, seed=7)
        if choice["preset"] != expected:    # the case's name says which preset is timed
            raise SystemExit(f"auto chose {choice['preset']}, the case names {expected}: update the case")
        return auto, auto.chosen_pipeline(choice), counts, epsilon
    return setup


def paired_setup_for(shape, epsilon, workload, expected):
    """:func:`setup_for`, and a check that :func:`run_chosen_same_noise` releases what `auto` does."""
    def setup():
        args = setup_for(shape, epsilon, workload, expected)()
        if not (run_chosen_same_noise(*args).estimate == run_auto(*args).estimate).all():
            raise SystemExit("the chosen preset's run on auto's noise differs from auto's release: not paired")
        return args
    return setup


def run_auto(auto, chosen, counts, epsilon):
    return auto.run(counts, epsilon, seed=7)


def _share(auto, counts) -> float:
    """The feature share `auto` spends on ``counts``: its model's for the workload, 1-D or grid."""
    return auto.feature_shares[np.ndim(counts)]


def run_chosen(auto, chosen, counts, epsilon):
    chosen.run(counts, epsilon * (1 - _share(auto, counts)), seed=7)


def run_chosen_same_noise(auto, chosen, counts, epsilon):
    """The chosen preset's run as inside `auto`: prepared with the run's seed and epsilon, the features'
    four Laplace draws taken from its noise source first (no data read), then the preset's stages with
    ``(1 - share) epsilon``: the same noise, so a data-dependent preset (AHP, AG) does the same work as in
    `auto` and the difference is `auto`'s alone."""
    prepared = chosen.prepare(counts, epsilon, seed=7)
    prepared.kernel.noise.laplace_mechanism(_FOUR, 1.0, epsilon)
    return chosen.execute(prepared, epsilon * (1 - _share(auto, counts)))


_FOUR = [0.0] * 4


def _case(workload, shape, eps, expected, repeat):
    return dict(name=f"auto ({workload}) vs the preset it chooses ({expected}), N=2^16, {shape}, eps={eps:g}",
                setup=setup_for(shape, eps, workload, expected), run=run_auto, reference=run_chosen, factor=1.10,
                repeat=repeat)


CASES = [
    _case("prefix", "zipf", 1.0, "Hb", 21),
    _case("prefix", "steps", 1.0, "Hb", 21),
    _case("dpbench-random-2000", "spikes", 1.0, "Hb", 21),
    _case("identity", "uniform", 1.0, "identity", 21),
    _case("identity", "spikes", 0.1, "AHP", 11),
    _case("prefix", "uniform", 1.0, "DAWA-approx", 2),   # an input on which auto picks DAWA-approx (zipf at 0.1 gets Hb)
]


def cpu_overhead(setup, repeat=21):
    """``(auto's CPU seconds / the chosen preset's - 1, 0.10)``, the preset run on `auto`'s noise
    (:func:`run_chosen_same_noise`): both timed with ``time.process_time``
    (the process's own CPU time, which other sessions' load inflates far less than wall time),
    alternating, the least of ``repeat`` each (about a second of runs a case)."""
    import time

    def measure():
        args = setup()
        run_chosen_same_noise(*args), run_auto(*args)      # warm
        best = [float("inf"), float("inf")]
        for _ in range(repeat):
            for i, f in enumerate((run_chosen_same_noise, run_auto)):
                t = time.process_time()
                f(*args)
                best[i] = min(best[i], time.process_time() - t)
        return round(best[1] / best[0] - 1, 3), 0.10
    return measure


CASES += [
    dict(name=f"auto ({wl}) CPU time over the preset it chooses ({expected}), minus 1, N=2^16, {shape}, eps={eps:g}",
         measure=cpu_overhead(paired_setup_for(shape, eps, wl, expected), repeat=repeat))
    for wl, shape, eps, expected, repeat in (("prefix", "zipf", 1.0, "Hb", 101), ("prefix", "steps", 1.0, "Hb", 101),
                                             ("identity", "uniform", 1.0, "identity", 151),
                                             ("identity", "spikes", 0.1, "AHP", 41))
] + [
    dict(name=f"auto ({wl}) CPU time over the preset it chooses ({expected}), minus 1, 256 x 256 grid, {shape}, "
              f"eps={eps:g}", measure=cpu_overhead(paired_setup_for(shape, eps, wl, expected), repeat=repeat))
    for wl, shape, eps, expected, repeat in (("prefix", "flat", 1.0, "HB-2D", 61), ("prefix", "bump", 1.0, "AG", 61),
                                             ("identity", "flat", 1.0, "AHP-2D", 21))
]
