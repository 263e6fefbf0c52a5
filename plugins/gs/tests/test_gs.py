"""Tests of the gs plugin (GS, reconstructed).  Each names the mutation it kills."""
import math

import numpy as np
import pytest

from dphist import InvalidParameter, make_algorithm, testing
from dphist.intervals import centred_prefix_sums
from dphist_gs import FixedWidthPartitioner
from dphist_gs.grouping import best_width, width_errors


def _brute(values, noise_each, correction):
    n = values.size
    out = [np.inf]
    for w in range(1, n + 1):
        total = 0.0
        for a in range(0, n, w):
            g = values[a:a + w]
            total += np.sum((g - g.mean()) ** 2) - correction * (g.size - 1) + noise_each / g.size
        out.append(total)
    return np.array(out)


@pytest.mark.parametrize("correction", [0.0, 3.0])
def test_width_errors_match_the_definition(correction):
    """Kills: a last (shorter) group charged as a full one, the noise term 2/eps_2^2 not divided by
    the group size, or the correction applied per bin instead of per group."""
    rng = np.random.default_rng(0)
    x = np.sort(rng.poisson(6, 37).astype(float))[::-1]
    p, p2 = centred_prefix_sums(x)
    got = width_errors(p, p2, 8.0, correction)
    np.testing.assert_allclose(got[1:], _brute(x, 8.0, correction)[1:], rtol=1e-9, atol=1e-9)


def test_best_width_trades_smoothing_against_noise():
    """Kills: an argmin over the wrong axis or an off-by-one in w: flat data at low eps_2 takes
    one group, distinct well-separated values at high eps_2 stay single."""
    assert best_width(np.full(64, 5.0), eps_2=0.1) == 64
    assert best_width(np.arange(64, 0, -1) * 100.0, eps_2=10.0) == 1
    # two plateaus of 16: w = 16 is exact smoothing with 4x less noise than w = 4
    assert best_width(np.repeat([50.0, 10.0], 16), eps_2=1.0) == 16


def test_groups_are_consecutive_in_the_sorted_order():
    """Kills: groups cut in domain order instead of the noisy sort (the sort would be wasted)."""
    x = np.zeros(64)
    x[::8] = 1000.0                                        # 8 large bins scattered over the domain
    r = make_algorithm("GS", w=8).run(x, 100.0, seed=1)
    big = np.flatnonzero(x > 0)
    labels = r.partition.labels()
    assert len(set(labels[big])) == 1                       # the 8 large bins share one group


def test_smoothing_divides_the_noise():
    """Kills: Laplace scale 1/eps_2 on each bin instead of each group's sum (no variance reduction):
    on a flat histogram with w = 16 the per-bin error is about 2/(16^2 eps_2^2) x 16 / 16."""
    x = np.full(256, 20.0)
    pipe = make_algorithm("GS", w=16, ratio=0.5)
    errs = [np.mean((pipe.run(x, 1.0, seed=s).estimate - x) ** 2) for s in range(300)]
    predicted = 2 / (16 ** 2 * 0.5 ** 2)                    # Var(Lap(1/eps_2)/w) per bin
    assert abs(np.mean(errs) / predicted - 1) < 0.15


@pytest.mark.parametrize("make, message", [
    (lambda: FixedWidthPartitioner(w=0), "w"),
    (lambda: FixedWidthPartitioner(w=2.5), "w"),
    (lambda: FixedWidthPartitioner(corrected="no"), "corrected"),
    (lambda: make_algorithm("GS", ratio=0), "ratio"),
    (lambda: make_algorithm("GS", ratio=1), "ratio"),
    (lambda: make_algorithm("GS", ratio="half"), "ratio"),
])
def test_bad_parameters_are_named(make, message):
    """Kills: a missing check, or an error that does not name the parameter."""
    with pytest.raises(InvalidParameter, match=message):
        make()


def test_component_and_preset_conform():
    """Kills: a partitioner that spends, or a preset that leaves budget unspent (the conformance kit)."""
    testing.check_component(FixedWidthPartitioner)
    testing.check_algorithm("GS", epsilon=1.0, n=64)
