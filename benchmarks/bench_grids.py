"""UG and AG (plugin grids) and the linearisations, on 2-D histograms of 256^2 and 1024^2 cells.

Targets: every 2-D preset under 1 s at 256 x 256 and under 10 s at 1024 x 1024 (2 cores).  The
histogram is a seeded field of Gaussian bumps on a faint background, 10 records per cell on average;
eps = 1 and 0.01 (the grid sizes, and so the numbers of groups, differ by 10x).  The Hilbert and
Z-order orders of a 1024^2 grid are information (vectorised index computations; `curve_order`
caches them per shape, so a linearised preset pays once per shape).

Against the DPBench code (paired cases, ``factor`` 0.1: at least 10 times faster; the reference's
``UG_engine`` / ``AG_engine`` timed in its own process by ``dpbench_timer.py``, configured as in
``bench_peers.py``, the same counts on both sides): UG and AG at eps = 0.01 on the field at 256^2 and
1024^2, and at 128^2 with 10^4 and 10^6 records (the field's shape resampled; DPBench's scales),
where a few hundred blocks or fewer make the reference's per-block loop short and dphist's fixed
costs (the kernel's checks of the partition, one pass each) count most.  At eps = 1 the reference
loops over tens of thousands of blocks (25 s at 256^2): not paired.
"""
import numpy as np

from dphist import make_algorithm
from dphist.linearise import curve_positions
from _cases import run_seeded


def field(side: int, records_per_cell: int = 10, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    i, j = np.indices((side, side)) / side
    p = np.full((side, side), 0.05)
    for _ in range(8):
        ci, cj, s = rng.uniform(0.1, 0.9), rng.uniform(0.1, 0.9), rng.uniform(0.02, 0.15)
        p += rng.uniform(0.2, 1.0) * np.exp(-((i - ci) ** 2 + (j - cj) ** 2) / (2 * s * s))
    return rng.multinomial(records_per_cell * side * side, (p / p.sum()).ravel()).reshape(side, side)


def grid_setup(algorithm, side, epsilon):
    def setup():
        return make_algorithm(algorithm), field(side), epsilon
    return setup


CASES = [
    dict(name=f"{alg}, {side}x{side}, eps={eps:g}", target=1.0 if side == 256 else 10.0,
         setup=grid_setup(alg, side, eps), run=run_seeded)
    for side in (256, 1024) for alg in ("UG", "AG") for eps in (1.0, 0.01)
] + [
    dict(name=f"{curve} order of a 1024x1024 grid (uncached)", target=None, setup=lambda c=curve: ((1024, 1024), c),
         run=lambda shape, c: np.argsort(curve_positions(shape, c), kind="stable"))
    for curve in ("hilbert", "z-order")
]


def paired_with_dpbench(algorithm: str, counts_of, label: str, epsilon: float = 0.01, repeat: int = 15) -> dict:
    """A paired case: dphist's ``algorithm`` on ``counts_of()`` against the DPBench engine of that name, timed in the
    reference's process (``bench_peers.PEERS``); target a tenth of the reference's time."""
    from bench_peers import PEERS
    REFERENCE = PEERS["DPBench"]
    case: dict = {}

    def setup():
        return make_algorithm(algorithm), counts_of(), epsilon

    def reference_seconds(pipeline, counts, eps):
        if not REFERENCE.configured:
            case["note"] = "DPBench code not configured: DPHIST_DPBENCH, DPHIST_DPBENCH_PYTHON"
            return None
        seconds, note = REFERENCE.seconds(algorithm, counts, eps, 1)
        if note:
            case["note"] = note
        return seconds

    case.update(name=f"{algorithm}, {label}, eps={epsilon:g}: dphist vs DPBench", setup=setup, run=run_seeded,
                reference_seconds=reference_seconds, factor=0.1, repeat=repeat)
    return case


def resampled(side: int, records: int, seed: int = 2):
    """The field's shape at ``side``^2 cells with ``records`` records (a seeded multinomial draw)."""
    def counts():
        shape = field(side).astype(float)
        rng = np.random.default_rng(seed)
        return rng.multinomial(records, (shape / shape.sum()).ravel()).reshape(side, side)
    return counts


CASES += [
    paired_with_dpbench(alg, counts_of, label, repeat=5 if "1024" in label else 15)   # best of 15: cheap runs on a loaded machine
    for alg in ("UG", "AG")
    for counts_of, label in ((lambda: field(256), "256x256 field"), (lambda: field(1024), "1024x1024 field"),
                             (resampled(128, 10_000), "128x128, 10^4 records"),
                             (resampled(128, 1_000_000), "128x128, 10^6 records"))
]


def _ug_numpy_floor(pipeline, counts, epsilon):
    """The numpy operations a UG run cannot do without, and nothing else (no pipeline, no checks, no ledger; a
    timing, not a release: the grid is sized from the true total): a copy of the counts and its largest value,
    a noisy total, the block sums by two ``reduceat``s, their noise, the block means spread back by two
    ``repeat``s.  Paired with the same DPBench run as UG's case, its ratio is the least any numpy code of UG can
    read there (the run / reference target is 0.1)."""
    from dphist.pipeline import _noise_seed
    from dphist_grids.grid import DEFAULT_C, cell_side
    rng = np.random.Generator(np.random.PCG64(_noise_seed(7)))   # seeded as a run is: the seed's words kept
    private = counts.flatten()
    bits = private.view(np.uint64)
    int(bits[bits.argmax()])
    total = float(np.add.reduce(private)) + rng.laplace(0.0, 1.0 / (0.05 * epsilon))
    side = cell_side(counts.shape, total * 0.95 * epsilon / DEFAULT_C)
    starts = [np.arange(0, n, side) for n in counts.shape]
    sums = np.add.reduceat(np.add.reduceat(private.reshape(counts.shape), starts[1], axis=1), starts[0], axis=0)
    noisy = sums + rng.laplace(0.0, 1.0 / (0.95 * epsilon), size=sums.shape)
    widths = [np.minimum(side, n - s) for s, n in zip(starts, counts.shape)]
    means = noisy / np.multiply.outer(widths[0], widths[1])
    return np.repeat(np.repeat(means, widths[0], axis=0), widths[1], axis=1)


_FLOOR = paired_with_dpbench("UG", resampled(128, 10_000), "128x128, 10^4 records", repeat=15)
_FLOOR.update(name="UG's numpy operations alone (no pipeline: the floor), 128x128, 10^4 records, eps=0.01: "
                   "vs DPBench's UG (information; UG's target applied: a tenth of its time)", run=_ug_numpy_floor)
CASES.append(_FLOOR)
