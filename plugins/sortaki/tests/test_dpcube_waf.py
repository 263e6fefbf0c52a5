"""DPCube's kd-tree partitioner and the WAF finalizer."""
import numpy as np
import pytest

from dphist import Partition, Partitioner, Pipeline
from dphist.errors import InvalidParameter
from dphist.intervals import centred_prefix_sums
from dphist_sortaki import DPCubePartitioner, kd_cuts, sse, waf_weights


def _reference_kd(x, xi, split):
    """The kd-tree grown recursively, one node at a time (the textbook form)."""
    x = np.asarray(x, float)
    mass = np.clip(x, 0, None)
    leaves = []

    def grow(a, b):
        v = x[a:b]
        if b - a < 2 or not np.mean((v - v.mean()) ** 2) > xi:
            leaves.append(a)
            return
        if split == "middle" or (split == "median" and mass[a:b].sum() <= 0):
            m = (a + b) // 2
        elif split == "median":
            c = np.cumsum(mass[a:b])
            m = a + 1 + int(np.argmax(c >= c[-1] / 2))
        else:
            costs = [np.sum((x[a:k] - x[a:k].mean()) ** 2) + np.sum((x[k:b] - x[k:b].mean()) ** 2)
                     for k in range(a + 1, b)]
            m = a + 1 + int(np.argmin(costs))
        m = min(max(m, a + 1), b - 1)
        grow(a, m)
        grow(m, b)
    grow(0, x.size)
    return np.array(sorted(leaves))


@pytest.mark.parametrize("split", ["median", "middle", "v-optimal"])
def test_kd_tree_levels_match_the_recursive_tree(split):
    rng = np.random.default_rng(11)
    for trial in range(25):
        n = int(rng.integers(1, 120))
        x = np.repeat(rng.integers(0, 60, 12), 10)[:n] + rng.laplace(0, 2, n)
        xi = float(rng.choice([0.5, 4.0, 30.0]))
        p, p2 = centred_prefix_sums(x)
        mass = np.r_[0, np.cumsum(np.clip(x, 0, None))]
        got = kd_cuts(p, p2, mass, np.arange(n + 1), xi, split)
        assert np.array_equal(got, _reference_kd(x, xi, split)), (trial, split)


def test_kd_tree_leaves_are_uniform_enough_or_single():
    x = np.random.default_rng(2).laplace(0, 5, 500) + np.repeat([0, 100, 20, 60], 125)
    p, p2 = centred_prefix_sums(x)
    mass = np.r_[0, np.cumsum(np.clip(x, 0, None))]
    cuts = kd_cuts(p, p2, mass, np.arange(501), 100.0, "median")
    ends = np.r_[cuts[1:], 500]
    var = sse(cuts, ends, p, p2) / (ends - cuts)
    assert np.all((var <= 100.0) | (ends - cuts == 1))
    assert 4 <= cuts.size < 100  # the four steps are found, noise alone does not split


def test_dpcube_threshold_options():
    x = np.full(64, 50)
    with pytest.raises(InvalidParameter, match="threshold"):
        DPCubePartitioner(threshold="huge")
    with pytest.raises(InvalidParameter, match="threshold"):
        DPCubePartitioner(threshold=-1.0)
    with pytest.raises(InvalidParameter, match="split"):
        DPCubePartitioner(split="mean")
    # a uniform histogram: with xi = 2/eps_in^2 (noise variance) few splits; with xi = 0 singletons
    few = Pipeline("laplace", None, DPCubePartitioner(threshold="noise"), "sortaki.waf", (0.9, 0, 0.1))
    none = Pipeline("laplace", None, DPCubePartitioner(threshold=0.0), "sortaki.waf", (0.9, 0, 0.1))
    assert few.run(x, 1.0, seed=3).partition.n_groups < 16
    assert none.run(x, 1.0, seed=3).partition.n_groups == 64


class FixedWidth(Partitioner):
    name = "test.fixed-width"
    citation = "test"

    def __init__(self, width: int = 8):
        self.width = width

    def partition(self, bins, ctx):
        return bins.merge(np.arange(0, bins.n_groups, self.width))


def test_waf_weights_minimise_the_variance_of_an_unbiased_combination():
    for size, eps_in, eps_f in [(1, 0.9, 0.1), (10, 0.5, 0.5), (1000, 0.3, 0.05)]:
        a = np.linspace(0, 1, 100001)
        variance = 2 * a ** 2 / (size * eps_in ** 2) + 2 * (1 - a) ** 2 / (size ** 2 * eps_f ** 2)  # Eq. 2
        assert abs(a[np.argmin(variance)] - waf_weights(size, eps_in, eps_f)) < 2e-5


def test_waf_is_unbiased_with_the_predicted_variance():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 100, 32)
    eps, g = 1.0, 0.6
    pipe = Pipeline("laplace", None, FixedWidth(8), "sortaki.waf", (g, 0.0, 1 - g))
    runs = np.array([pipe.run(x, eps, seed=s).estimate for s in range(600)])
    truth = Partition.from_sizes([8] * 4).expand(x.reshape(4, 8).mean(1))
    mean, sd = runs.mean(0), runs.std(0)
    assert np.all(np.abs(mean - truth) < 5 * sd / np.sqrt(len(runs)))
    e_in, e_f = g * eps, (1 - g) * eps
    predicted = 2 / (8 * (e_in ** 2 + 8 * e_f ** 2))  # per-bin variance of the WAF average
    assert abs(sd.mean() ** 2 / predicted - 1) < 0.15


def test_waf_reduces_to_the_ahp_finalizer_as_eps_in_vanishes():
    x = np.random.default_rng(4).integers(0, 200, 40)
    gaps = []
    for g in (0.5, 0.05, 1e-3, 1e-6):
        waf = Pipeline("laplace", None, FixedWidth(5), "sortaki.waf", (g, 0, 1 - g)).run(x, 1.0, seed=9)
        ahp = Pipeline("laplace", None, FixedWidth(5), "group-mean", (g, 0, 1 - g)).run(x, 1.0, seed=9)
        gaps.append(np.max(np.abs(waf.estimate - ahp.estimate)))
    assert all(b < a for a, b in zip(gaps, gaps[1:]))
    assert gaps[-1] < 1e-6
    # with no initializer at all, WAF is AHP's finalizer exactly
    a = Pipeline(None, None, FixedWidth(5), "sortaki.waf", (0, 0, 1)).run(x, 1.0, seed=2).estimate
    b = Pipeline(None, None, FixedWidth(5), "group-mean", (0, 0, 1)).run(x, 1.0, seed=2).estimate
    assert np.array_equal(a, b)
