"""Every primitive's noise has scale sensitivity / epsilon, in both modes.

Kills the mutation that made the scale ignore the sensitivity (``sensitivity/eps``
-> ``1/eps``): each case below has a sensitivity other than 1, and the measured
variance must match 2 (Delta/eps)^2 (float Laplace) or the discrete Laplace's
2q/(1-q)^2 with q = exp(-eps/Delta) within 3 % (2 x 10^5 draws: the standard
error of a Laplace variance estimate is about 1.1 %).
"""
import math

import numpy as np
import pytest
import scipy.sparse as sp

from dphist import Partition
from dphist.kernel import IntervalQueries, PrivateKernel, SeededLaplace
from dphist.kernel.exact import GeneratorWords, dyadic_scale_at_least
from dphist.kernel.noise import ExactNoise

BLOCKS = 50_000  # the 4-bin example repeated on disjoint blocks: 10^5 - 2 x 10^5 noise draws per case
EPS = 0.8
X = np.tile(np.array([3, 0, 7, 2]), BLOCKS)
OFF = 4 * np.arange(BLOCKS)


def handle(mode, seed):
    noise = (SeededLaplace(np.random.default_rng(seed)) if mode == "float"
             else ExactNoise(GeneratorWords(np.random.default_rng(seed))))
    return PrivateKernel(X, noise).handle("t", "finalizer", EPS)


def expected_variance(mode, sens, integral):
    if mode == "float" or not integral:  # the real-valued route's grid is 2^-20 sensitivity: continuous
        return 2 * (sens / EPS) ** 2
    t, s = dyadic_scale_at_least(sens / EPS)
    q = math.exp(-s / t)
    return 2 * q / (1 - q) ** 2


def tiled(starts, ends):
    return (np.add.outer(OFF, starts).ravel(), np.add.outer(OFF, ends).ravel())


def block_sums(x4, rows):
    """Answers of the 4-bin query rows on every block."""
    return (x4.reshape(BLOCKS, 4) @ np.asarray(rows, dtype=float).T).ravel()


ORDER = np.add.outer(OFF, [2, 0, 3, 1]).ravel()
A = np.array([[1, 1, 0, 0], [1, 0, 2, 0], [0, 0, 1, 1]])
W = np.array([[0.5, 0.5, 0, 0], [0, 0.25, 0.75, 0]])
CASES = {
    # name: (measure(handle) -> answers, exact answers, sensitivity, integral)
    "intervals-overlapping": (lambda h: h.laplace_intervals(*tiled([0, 0, 1, 2], [4, 2, 3, 4]), EPS),
                              block_sums(X, [[1, 1, 1, 1], [1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1]]), 3.0, True),
    "intervals-sorted-order": (lambda h: h.laplace_intervals(*tiled([0, 0, 2], [4, 2, 4]), EPS, order=ORDER),
                               block_sums(X, [[1, 1, 1, 1], [1, 0, 1, 0], [0, 1, 0, 1]]), 2.0, True),
    "linear-sparse-integer": (lambda h: h.laplace_linear(sp.kron(sp.identity(BLOCKS), sp.csr_matrix(A)), EPS),
                              block_sums(X, A), 3.0, True),
    "linear-sparse-weighted": (lambda h: h.laplace_linear(sp.kron(sp.identity(BLOCKS), sp.csr_matrix(W)), EPS),
                               block_sums(X, W), 0.75, False),
    "interval-queries-weighted": (lambda h: h.laplace_linear(IntervalQueries(*tiled([0, 0, 2], [4, 2, 4]),
                                                                             np.tile([1.0, 1.5, 1.5], BLOCKS)), EPS),
                                  block_sums(X, [[1, 1, 1, 1], [1.5, 1.5, 0, 0], [0, 0, 1.5, 1.5]]), 2.5, False),
    "partition": (lambda h: h.laplace_partition(Partition(ORDER, np.arange(0, 4 * BLOCKS + 1, 2)), EPS),
                  block_sums(X, [[1, 0, 1, 0], [0, 1, 0, 1]]), 1.0, True),
    "sorted-counts": (lambda h: h.sorted_counts(EPS), np.sort(X), 1.0, True),
    "identity": (lambda h: h.laplace_identity(EPS), X, 1.0, True),
}


@pytest.mark.parametrize("mode", ["float", "exact"])
@pytest.mark.parametrize("case", list(CASES))
def test_noise_variance_is_sensitivity_over_epsilon(case, mode):
    measure, truth, sens, integral = CASES[case]
    h = handle(mode, seed=sorted(CASES).index(case))
    noise = measure(h) - truth
    assert h.spent == pytest.approx(EPS)
    assert h._kernel.ledger.entries[-1].sensitivity == pytest.approx(sens)  # computed by the kernel
    var = expected_variance(mode, sens, integral)
    assert noise.var() == pytest.approx(var, rel=0.03)
    assert abs(noise.mean()) < 4 * math.sqrt(var / noise.size)


def test_small_dense_matrix_is_measured_at_its_column_norm():
    h = PrivateKernel(np.array([3, 0, 7, 2]), SeededLaplace(np.random.default_rng(9))).handle("t", "f", 1e9)
    noise = np.array([h.laplace_linear(A, EPS) for _ in range(20_000)]) - A @ np.array([3, 0, 7, 2])
    assert noise.var() == pytest.approx(2 * (3.0 / EPS) ** 2, rel=0.03)
