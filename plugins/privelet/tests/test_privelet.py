"""The privelet plugin: the weighted Haar transform, its noise, the component in the pipeline, bad input.

Each test names the mutation it kills.
"""
import numpy as np
import pytest

from dphist import InvalidParameter, Partitioner, Pipeline, make_algorithm, testing
from dphist.kernel import SeededLaplace
from dphist.partition import Partition
from dphist_privelet.finalizer import PriveletFinalizer, WeightedHaarMeasurement
from dphist_privelet.haar import (inverse_weighted_haar, levels, padded_size, range_variance_bound,
                                  range_variance_factors, weighted_haar)


def _dense_weighted_haar(n):
    """The weighted Haar matrix built row by row from the paper's definition (slow, for checks)."""
    rows = [np.ones(n)]
    h = 1
    while h < n:
        width = n // h
        for k in range(h):
            r = np.zeros(n)
            r[k * width:k * width + width // 2] = 1
            r[k * width + width // 2:(k + 1) * width] = -1
            rows.append(r)
        h *= 2
    return np.array(rows)


@pytest.mark.parametrize("n", [1, 2, 8, 64])
def test_transform_matches_the_definition_and_inverts_exactly(n):
    """Kills: a swapped left/right difference, a wrong coefficient layout, a halving missing in the inverse."""
    x = np.random.default_rng(n).integers(0, 100, n)
    y = weighted_haar(x)
    assert y.dtype == x.dtype                       # integers stay integers (release mode's integral route)
    assert np.array_equal(y, _dense_weighted_haar(n) @ x)
    assert np.allclose(inverse_weighted_haar(y), x, atol=1e-9)


def test_sensitivity_of_the_weighted_coefficients_is_one_plus_log2_n():
    """Kills: a weight that makes some column's L1 norm exceed 1 + m (e.g. weight 2|v| on a level)."""
    for n in (2, 16, 256):
        A = _dense_weighted_haar(n)
        assert np.abs(A).sum(axis=0).max() == 1 + levels(n) == np.abs(A).sum(axis=0).min()


def test_padding_to_a_power_of_two():
    """Kills: padding to the next power when n already is one, or not padding at all."""
    assert [padded_size(k) for k in (1, 2, 3, 4, 5, 1000, 1024, 1025)] == [1, 2, 4, 4, 8, 1024, 1024, 2048]
    assert [levels(k) for k in (1, 2, 3, 1000)] == [0, 1, 2, 10]


def test_closed_form_variance_matches_the_dense_strategy_and_the_bound():
    """Kills: a wrong overlap term in range_variance_factors (checked against the inverse of the dense
    matrix, all 528 ranges of 32 bins), or a bound that some range exceeds."""
    n = 32
    inv = np.linalg.inv(_dense_weighted_haar(n))
    worst = 0.0
    for lo in range(n):
        for hi in range(lo + 1, n + 1):
            q = np.zeros(n)
            q[lo:hi] = 1
            exact = float(np.sum((q @ inv) ** 2))
            assert range_variance_factors(lo, hi, n) == pytest.approx(exact, rel=1e-12)
            worst = max(worst, exact)
    assert worst <= range_variance_bound(n) + 1e-12
    assert worst > 1.0   # not vacuous: some range pays more than the total's term alone


def test_noise_scale_by_simulation():
    """Kills: noise of scale 1/eps (the unweighted Haar, variance / 25) or (1 + m)/(2 eps) (variance / 4):
    4,000 seeded runs; tolerance 4 standard errors of a sample variance of Laplace-like draws,
    4 sqrt(5 / 4000) = 14 %, on the variance of one range's estimate against the closed form."""
    n, eps = 16, 1.0
    x = np.arange(n)
    pipe = make_algorithm("Privelet")
    est = np.array([pipe.run(x, eps, seed=s).estimate[3:11].sum() for s in range(4000)])
    predicted = 2 * ((1 + levels(n)) / eps) ** 2 * range_variance_factors(3, 11, n)
    assert est.mean() == pytest.approx(x[3:11].sum(), abs=4 * np.sqrt(predicted / 4000))
    assert est.var() == pytest.approx(predicted, rel=4 * np.sqrt(5 / 4000))


def test_conformance():
    """Kills: reading counts outside the kernel, a ledger that differs from the share, failing on sorted
    (non-contiguous) bins, a release-mode failure, too little noise in the vetted mechanism (replayed)."""
    testing.check_component(PriveletFinalizer)


def test_preset_conforms():
    """Kills: a preset whose shares do not add up to epsilon."""
    testing.check_algorithm("Privelet")


class _UnweightedHaar(WeightedHaarMeasurement):
    """Broken twin: noise calibrated to sensitivity 1 (ignores the 1 + m levels a record moves)."""

    def run(self, counts, epsilon, noise, order=None, bounds=None):
        padded = np.zeros(1 << self.levels, dtype=np.int64)
        padded[:counts.size] = counts
        return noise.laplace_mechanism(weighted_haar(padded), 1.0, epsilon)


def test_kit_rejects_the_unweighted_twin_and_accepts_the_mechanism():
    """Kills: a vetted-mechanism replay that cannot see a (1 + m)-fold under-calibration."""
    x = testing.example_histograms(64)["power-law"]
    args = dict(order=np.arange(64), bounds=np.arange(65))
    testing.check_vetted_mechanism(WeightedHaarMeasurement(levels(64)), 1.0, x, args)
    with pytest.raises(AssertionError, match="too little noise"):
        testing.check_vetted_mechanism(_UnweightedHaar(levels(64)), 1.0, x, args)


def test_groups_are_measured_as_units_and_spread():
    """Kills: measuring bins instead of the groups (wrong number of coefficients) or not spreading evenly."""
    x = np.arange(12)
    bins = Partition.from_sizes([3, 3, 6])
    mech = WeightedHaarMeasurement(levels(3))
    args = mech.check(12, order=bins.order, bounds=bins.bounds)
    out = mech.run(x, 1e9, SeededLaplace(np.random.default_rng(0)), **args)   # ~ no noise
    assert out.size == 4
    assert np.allclose(inverse_weighted_haar(out)[:3], [3, 12, 51], atol=1e-6)


def test_mechanism_refuses_a_partition_of_another_size_before_the_charge():
    """Kills: a mechanism whose ledger sensitivity (1 + m) does not match the partition it measures."""
    with pytest.raises(InvalidParameter, match="pad"):
        WeightedHaarMeasurement(2).check(64)
    with pytest.raises(InvalidParameter, match="levels"):
        WeightedHaarMeasurement(-1)


def test_release_mode_gives_integer_noise_on_integer_coefficients():
    """Kills: the float route in release mode (the coefficients must go through the integral sampler)."""
    r = make_algorithm("Privelet").run(np.arange(8), 1.0)
    assert r.ledger.total == pytest.approx(1.0) and r.ledger.mode == "release"
    coeffs = weighted_haar(r.estimate)               # the noisy weighted coefficients, back from the estimate
    assert np.allclose(coeffs, np.round(coeffs), atol=1e-9)
    research = weighted_haar(make_algorithm("Privelet").run(np.arange(8), 1.0, seed=1).estimate)
    assert not np.allclose(research, np.round(research), atol=1e-9)   # the check can fail: float noise


def test_no_share_is_refused():
    """Kills: a finalizer that runs (and releases noise-free data) with gamma_f = 0."""
    with pytest.raises(InvalidParameter):
        Pipeline("laplace", None, "singleton", PriveletFinalizer(), (1.0, 0.0, 0.0)).run(np.arange(8), 1.0, seed=1)


def test_sorted_bins_are_measured_in_their_sorted_order():
    """Kills: taking the domain-order shortcut for sorted singletons (e.g. ``is_identity_order`` read as
    an attribute, always true): after a sorter the wavelet must run over the bins' current order."""
    from dphist.kernel.private import recording_custom_calls
    x = testing.example_histograms(64)["power-law"]
    pipe = Pipeline("laplace", "noisy-count", "singleton", PriveletFinalizer(), (0.5, 0.0, 0.5))
    with recording_custom_calls() as calls:
        r = pipe.run(x, 1.0, seed=3)
    (mechanism, _, args), = calls
    assert not r.partition.is_identity_order()
    assert np.array_equal(args["order"], r.partition.order)
    with recording_custom_calls() as calls:
        make_algorithm("Privelet").run(x, 1.0, seed=3)
    assert calls[0][2] == {}   # the preset's plain case: no arguments (no re-validation; its probe kept)


def test_grid_transform_is_the_tensor_product_and_inverts():
    """Kills: the 2-D transform applied along one axis only, or the axes' inverses in the wrong place
    (the tensor product of the dense 1-D matrices, on an 8 x 4 grid; the inverse recovers the grid)."""
    from dphist_privelet.haar import inverse_weighted_haar_grid, weighted_haar_grid
    x = np.random.default_rng(3).integers(0, 50, (8, 4))
    y = weighted_haar_grid(x)
    dense = np.kron(_dense_weighted_haar(8), _dense_weighted_haar(4))
    assert y.dtype == x.dtype and np.array_equal(y.ravel(), dense @ x.ravel())
    assert np.allclose(inverse_weighted_haar_grid(y), x, atol=1e-9)


def test_grid_sensitivity_is_the_product():
    """Kills: a grid mechanism declaring 1 + m1 + m2 (the sum) instead of (1 + m1)(1 + m2): every column of
    the tensor-product matrix has L1 norm exactly the product, and padding 5 x 3 to 8 x 4 gives 4 * 3."""
    from dphist_privelet.finalizer import GridHaarMeasurement
    dense = np.kron(_dense_weighted_haar(8), _dense_weighted_haar(4))
    assert np.abs(dense).sum(axis=0).min() == np.abs(dense).sum(axis=0).max() == 12
    assert GridHaarMeasurement((5, 3)).sensitivity == 12.0
    assert GridHaarMeasurement((5, 3)).answers(15) == 32
    with pytest.raises(InvalidParameter, match="does not have 16 cells"):
        GridHaarMeasurement((5, 3)).check(16)


def test_privelet_2d_noise_and_padding():
    """Kills: the 2-D preset measuring with the 1-D sensitivity 1 + m (too little noise) or with the sum of
    the axes' levels, and padding that keeps the padded cells in the release: one ledger row of
    (1 + 3)(1 + 2) = 12 per coefficient on a 5 x 3 grid (padded to 8 x 4), a release of 5 x 3 cells."""
    rel = make_algorithm("Privelet-2D").run(np.arange(15).reshape(5, 3), 1.0, seed=2)
    (row,) = list(rel.ledger)
    assert row.sensitivity == 12 and row.answers == 32 and rel.grid.shape == (5, 3)


def test_privelet_on_a_grid_with_groups_takes_the_1d_route():
    """Kills: the grid route run on merged groups (it would measure cells the partition merged): a grid
    handed as one group is measured by the 1-D transform of that group (1 coefficient, sensitivity 1)."""
    from dphist_privelet.finalizer import PriveletFinalizer
    pipe = Pipeline("laplace", None, "whole", PriveletFinalizer(), (0.5, 0.0, 0.5), dims=(2,))
    rows = [r for r in pipe.run(np.ones((4, 4), dtype=int), 1.0, seed=1).ledger if r.stage == "finalizer"]
    assert [(r.answers, r.sensitivity) for r in rows] == [(1, 1.0)]


def test_privelet_2d_conformance():
    """Kills: a 2-D preset that mis-spends or releases the wrong shape on grids (the kit)."""
    testing.check_algorithm("Privelet-2D")


def test_the_shared_measurement_is_probed_once_per_size_epsilon_and_noise_kind(monkeypatch):
    """The finalizer runs one immutable measurement per number of levels, declared ``probe_once``: the kernel
    probes it on the first run of a domain size, epsilon and noise kind, not on the next (the release the
    same), and again for another epsilon.  Kills: a new measurement object per run (the probe kept by the
    object's identity is never found again), ``check`` returning ``order=None, bounds=None`` for the bins in
    domain order (arguments: never kept)."""
    from dphist.kernel import private
    from dphist_privelet.finalizer import weighted_haar_measurement
    calls = []
    real = private._probe_counts
    monkeypatch.setattr(private, "_probe_counts", lambda *a, **k: calls.append(a) or real(*a, **k))
    x = testing.example_histograms(64)["power-law"]
    pipe = make_algorithm("Privelet")
    first = pipe.run(x, 0.7131, seed=3)      # an epsilon no other test runs: probed here
    assert len(calls) == 1
    second = pipe.run(x, 0.7131, seed=3)
    assert np.array_equal(first.estimate, second.estimate) and len(calls) == 1
    pipe.run(x, 0.3127, seed=3)
    assert len(calls) == 2
    assert weighted_haar_measurement(6) is weighted_haar_measurement(6)
    assert weighted_haar_measurement(6).check(64) == {}


class _ThreeGroups(Partitioner):
    """Groups of 3, 3 and 6 bins (public, spends nothing)."""

    name = "test.three-groups"

    def partition(self, bins, ctx):
        return Partition.from_sizes([3, 3, 6])


def test_the_shared_measurement_is_immutable_and_groups_are_probed_every_time(monkeypatch):
    """The shared measurement's levels cannot change (the kept probe's structure stays its own), and a
    measurement of groups (``order`` and ``bounds`` arguments) takes the generic route: probed before every
    charge.  Kills: a writable shared measurement, a probe kept for a call with arguments."""
    from dphist.kernel import private
    from dphist_privelet.finalizer import weighted_haar_measurement
    with pytest.raises(AttributeError):
        weighted_haar_measurement(3).levels = 4
    calls = []
    real = private._probe_counts
    monkeypatch.setattr(private, "_probe_counts", lambda *a, **k: calls.append(a) or real(*a, **k))
    x = np.arange(12)
    pipe = Pipeline(partitioner=_ThreeGroups(), finalizer="privelet.haar", shares=(0, 0, 1))
    for _ in range(2):
        pipe.run(x, 1.0, seed=1)
    assert len(calls) == 2
