"""The dawa plugin's compiled loops against numpy and against a plain one-node-at-a-time search."""
import numpy as np

from dphist_dawa._kernels import pairwise_sum, partition_deviation
from dphist_dawa.hierarchy import _best_split
from dphist_dawa.l1_partition import partition_costs


def test_pairwise_sum_is_numpys_sum():
    """Kills: a running sum, eight running sums combined in another order, halves not rounded to a multiple
    of 8 (numpy's pairwise summation; the exponential mechanism's scores depend on it)."""
    rng = np.random.default_rng(0)
    for n in [*range(1, 300), 1000, 4097, 65537]:
        a = rng.standard_normal(n) * 10.0 ** rng.uniform(-3, 12, n)
        assert pairwise_sum(a, 0, n) == a.sum(), n


def test_partition_costs_are_numpys():
    """Kills: a group mean summed in another order than ``add.reduceat`` (first + pairwise rest), the group
    count charged per bin, a deviation from the wrong mean."""
    rng = np.random.default_rng(1)
    x = np.round(rng.laplace(0, 30, 5000) * 10.0 ** rng.uniform(0, 4, 5000))
    cands = [np.array([0, 5000]), np.arange(5001), np.unique(np.r_[0, rng.integers(1, 5000, 300), 5000])]
    want = [np.abs(x - np.repeat(np.add.reduceat(x, b[:-1]) / np.diff(b), np.diff(b))).sum() + (b.size - 1) / 0.3
            for b in cands]
    assert np.array_equal(partition_costs(x, cands, 0.3), np.array(want))
    assert partition_deviation(x, cands[0], np.empty(x.size)) == want[0] - 1 / 0.3
    # more candidates (groups across numpy's blocks of 128) and values whose sums are not exact in any order
    cands.append(np.unique(np.r_[0, rng.integers(1, 5000, 40), 127, 128, 129, 256, 4999, 5000]))
    for y in (x, rng.random(x.size), x * 3.0 ** 30 + x):
        want = [np.abs(y - np.repeat(np.add.reduceat(y, b[:-1]) / np.diff(b), np.diff(b))).sum() + (b.size - 1) / 0.3
                for b in cands]
        assert np.array_equal(partition_costs(y, cands, 0.3), np.array(want))


def _best_split_one_by_one(sum_err, energy, self_energy, K, g, discount):
    """The search candidate by candidate over all of them, each node on its own (the same float operations
    per node as one node at a time, numpy across the nodes): the blocked kernel's reference, without blocks
    or early stops."""
    damped = discount * (energy - self_energy) + self_energy
    be, bp = np.full(sum_err.size, np.inf), np.ones(sum_err.size)
    for t in range(g):
        p = (g - t) / g
        q = discount * (1.0 - p) ** 2
        err = (sum_err - damped * q / (p * p + q * K)) / (p * p)
        lower = err < be
        be, bp = np.where(lower, err, be), np.where(lower, p, bp)
    q = (1.0 - bp) ** 2
    return bp, (sum_err - energy * q / (bp * bp + q * K)) / (bp * bp)


def test_blocked_weight_search_is_the_one_node_search():
    """Kills: the last minimum kept instead of the first (ties keep the largest p), a block boundary that
    skips or repeats a node, the exact error of another p than the chosen one, an early stop whose bound
    takes a piece's 1 / p^2 at its small end (stops before a better p)."""
    rng = np.random.default_rng(2)
    m = 1000                                                 # several blocks and a partial one
    args = [rng.random(m) * 10, rng.random(m) * 10, rng.random(m), rng.random(m) * 3]
    args[0][::7] = args[1][::7] = args[2][::7] = 0.0         # zero errors: every p ties
    for discount in (1.0, 0.5, 2 ** -4, 2 ** -9.5):           # the discounts of levels 0, 1, 8 and 19
        got = _best_split(*args, 100, discount)
        want = _best_split_one_by_one(*args, 100, discount)
        assert all(np.array_equal(a, b) for a, b in zip(got, want))
    assert np.all(_best_split(*args, 100, 1.0)[0][::7] == 1.0)
    # a grid of nodes whose best p lies anywhere in (0, 1]: damped energy from 0 to 1e4 times the error,
    # K from 1e-2 to 1e2, one block each (a block stops only when all its nodes are settled)
    D, K = np.meshgrid(np.geomspace(1e-3, 1e4, 32), np.geomspace(1e-2, 1e2, 8))
    D, K = D.ravel(), K.ravel()
    for discount in (1.0, 2 ** -4, 2 ** -9.5):
        # energy = self_energy = D: the damped term is D whatever the discount
        for v0 in range(0, D.size, 4):   # blocks of 4 neighbouring nodes, through the blocked kernel
            part = (np.ones(4), D[v0:v0 + 4], D[v0:v0 + 4], K[v0:v0 + 4])
            got = _best_split(*part, 100, discount)
            want = _best_split_one_by_one(*part, 100, discount)
            assert all(np.array_equal(a, b) for a, b in zip(got, want))


def test_partition_costs_of_all_zeros_are_numpys():
    """The all-zero histogram (the kernel's probe of the exponential mechanism's score) skips the deviations.
    Kills: a fast path that returns the group counts without ``/ eps_2``, ``-0.0`` or another bit pattern than
    numpy's sums, or one taken for a histogram that is not all zeros (a single non-zero count)."""
    x = np.zeros(3000)
    cands = [np.array([0, 3000]), np.arange(3001), np.array([0, 7, 1000, 3000])]
    want = [np.abs(x - np.repeat(np.add.reduceat(x, b[:-1]) / np.diff(b), np.diff(b))).sum() + (b.size - 1) / 0.3
            for b in cands]
    got = partition_costs(x, cands, 0.3)
    assert np.array_equal(got, np.array(want)) and not np.signbit(got).any()
    x[2999] = 1.0
    assert partition_costs(x, cands, 0.3)[0] == np.abs(x - x.mean()).sum() + 1 / 0.3
