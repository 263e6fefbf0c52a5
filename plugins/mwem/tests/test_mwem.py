"""The mwem plugin: the multiplicative-weights update, the budget, the calibrations, bad input.

Each test names the mutation it kills.
"""
import numpy as np
import pytest

from dphist import InvalidParameter, Pipeline, make_algorithm, testing
from dphist.audit import FULL_PAIRS, audit
from dphist_mwem.finalizer import MWEMFinalizer
from dphist_mwem.weights import effective_rounds, multiplicative_weights, range_errors


def _naive_update(est, lo, hi, answer, total):
    # Hardt et al. 2012, Algorithm 1, one update in O(n): A * exp(q (m - q(A)) / 2T), rescaled to T
    q = np.zeros(est.size)
    q[lo:hi] = 1
    new = est * np.exp(q * (answer - est[lo:hi].sum()) / (2 * total))
    return new * total / new.sum()


def test_update_matches_the_naive_formula():
    """Kills: the deferred renormalisation folded wrongly (scale), a missing factor 2 in the exponent,
    passes over the measurements in the wrong order."""
    rng = np.random.default_rng(3)
    est = rng.uniform(1, 10, 50)
    total = est.sum()
    lo, hi = np.array([0, 10, 5]), np.array([20, 50, 6])
    answers = np.array([300.0, 100.0, 40.0])
    expected = est.copy()
    for _ in range(7):
        for a, b, m in zip(lo, hi, answers):
            expected = _naive_update(expected, a, b, m, total)
    got = multiplicative_weights(est, lo, hi, answers, 7, total)
    assert np.allclose(got, expected, rtol=1e-10)
    assert got.sum() == pytest.approx(total, rel=1e-12)


def test_update_keeps_the_total_when_a_range_holds_almost_all_the_mass():
    """Kills: a running total "T - inside + f inside" that cancels catastrophically (the audit's spike pair:
    8 bins, total 50, measurements far below the truth; the sum then drifted to 90)."""
    est = np.array([1e-30, 1e-30, 1e-30, 50.0, 1e-30, 1e-30, 1e-30, 1e-30])
    lo, hi = np.array([0, 3, 0]), np.array([8, 4, 3])
    answers = np.array([50.0, -60.0, 30.0])
    got = multiplicative_weights(est, lo, hi, answers, 100, 50.0)
    assert got.sum() == pytest.approx(50.0, rel=1e-9)
    expected = est.copy()
    for _ in range(100):
        for a, b, m in zip(lo, hi, answers):
            expected = _naive_update(expected, a, b, m, 50.0)
    assert np.allclose(got, expected, rtol=1e-8, atol=1e-12)


def test_range_errors_and_rounds_cap():
    """Kills: errors computed on the wrong prefix offsets; more rounds than queries (DPBench asserts)."""
    x, est = np.array([1.0, 2, 3, 4]), np.array([2.5, 2.5, 2.5, 2.5])
    assert np.allclose(range_errors(x, est, np.array([0, 1, 0]), np.array([1, 3, 4])), [1.5, 0, 0])
    assert effective_rounds(10, 4) == 4 and effective_rounds(10, 4096) == 10


def test_conformance():
    """Kills: reading counts outside the kernel, a ledger that does not add up to the share, failing on
    sorted (non-contiguous) bins or in release mode."""
    testing.check_component(MWEMFinalizer)


@pytest.mark.parametrize("overrides", [{}, dict(public_total=1000), dict(rounds=3, ratio=0.2, updates=1),
                                       dict(workload="identity")])
def test_preset_conforms(overrides):
    """Kills: a switch that breaks the pipeline or the ledger (e.g. public_total still spending)."""
    testing.check_algorithm("MWEM", **overrides)


def test_ledger_split():
    """Kills: the total's share, the ratio or the per-round split applied wrongly (double spending)."""
    x = testing.example_histograms(64)["power-law"]
    r = make_algorithm("MWEM", rounds=4, ratio=0.25, total_ratio=0.2).run(x, 2.0, seed=1)
    rows = r.ledger.entries
    eps = [(e.primitive, e.epsilon) for e in rows]
    assert eps[0] == ("laplace.partition", pytest.approx(0.4))
    assert [p for p, _ in eps[1:]] == ["exponential", "laplace.intervals"] * 4
    assert all(e == pytest.approx(0.25 * 1.6 / 4) for p, e in eps[1:] if p == "exponential")
    assert all(e == pytest.approx(0.75 * 1.6 / 4) for p, e in eps[1:] if p == "laplace.intervals")
    assert r.ledger.total == pytest.approx(2.0)
    r = make_algorithm("MWEM", rounds=4, public_total=float(x.sum())).run(x, 2.0, seed=1)
    assert "laplace.partition" not in [e.primitive for e in r.ledger.entries]


def test_estimate_keeps_the_noisy_total_and_learns():
    """Kills: an update that drifts the total, or one that does not move towards the measurements
    (10 rounds at eps = 1 on a step histogram must beat the uniform start on prefixes)."""
    x = np.repeat([500, 0, 200, 0], 64)
    r = make_algorithm("MWEM").run(x, 1.0, seed=5)
    noisy_total = r.estimate.sum()
    assert abs(noisy_total - x.sum()) < 400           # Lap(20): 400 = 20 scales
    uniform = np.full(x.size, x.sum() / x.size)
    err = lambda e: np.mean((np.cumsum(e) - np.cumsum(x)) ** 2)
    assert err(r.estimate) < 0.1 * err(uniform)


def test_dpbench_calibration_is_flagged_and_keeps_the_true_total():
    """Kills: the dpbench variant losing its not-DP flag (release mode must refuse it), or not reproducing
    the reference's true-total start."""
    x = testing.example_histograms(64)["power-law"]
    pipe = make_algorithm("MWEM", calibration="dpbench")
    assert pipe.finalizer.differentially_private is False
    r = pipe.run(x, 1.0, seed=2)
    assert r.estimate.sum() == pytest.approx(x.sum(), rel=1e-9)
    assert any("not differentially private" in w for w in r.warnings)
    with pytest.raises(Exception, match="differentially private"):
        pipe.run(x, 1.0)


def test_auditor_catches_the_dpbench_calibration():
    """The reference's true total, audited with the fast pairs and the CI preset setting (300 runs a side).

    Kills: an auditor without the total feature (the release's sum is the true count, exactly), and a
    dpbench calibration that silently became private.
    """
    pipe = make_algorithm("MWEM", calibration="dpbench", rounds=3)
    result = audit(pipe, epsilon=1.0, level="fast", seed=11)
    assert not result.passed, str(result)
    assert result.epsilon_lower_bound > 1.0


def test_auditor_passes_the_private_default():
    """Kills: a noisy-total variant that leaks through the total (same setting as the catch above)."""
    result = audit(make_algorithm("MWEM", rounds=3), epsilon=1.0, level="fast", seed=11)
    assert result.passed, str(result)


@pytest.mark.parametrize("kwargs, message", [
    (dict(rounds=0), "rounds"), (dict(rounds=-2), "rounds"), (dict(rounds=2.5), "rounds"), (dict(rounds=True), "rounds"),
    (dict(ratio=0), "ratio"), (dict(ratio=1), "ratio"), (dict(ratio=1.5), "ratio"), (dict(ratio="0.5"), "ratio"),
    (dict(updates=0), "updates"), (dict(workload="prefixx"), "workload"), (dict(workload=3), "workload"),
    (dict(calibration="exact"), "calibration"), (dict(total_ratio=0), "total_ratio"),
    (dict(total_ratio=1), "total_ratio"), (dict(public_total=-1), "public_total"),
    (dict(public_total=float("nan")), "public_total"), (dict(calibration="dpbench", public_total=5), "public_total"),
])
def test_bad_parameters_are_refused_before_anything_is_spent(kwargs, message):
    """Kills: a missing check (the run would spend budget, then fail or release garbage)."""
    with pytest.raises(InvalidParameter, match=message):
        MWEMFinalizer(**kwargs)
    with pytest.raises(InvalidParameter, match=message):
        make_algorithm("MWEM", **kwargs)


def test_no_share_is_refused():
    """Kills: a finalizer that runs without budget."""
    with pytest.raises(InvalidParameter):
        Pipeline("laplace", None, "singleton", MWEMFinalizer(), (1.0, 0.0, 0.0)).run(np.arange(8), 1.0, seed=1)


def test_true_total_is_kept_exactly_on_the_audits_spike_pair():
    """Kills: a running raw total that cancels (sums from -4 to 93 on this pair) or that is not re-summed
    after each pass (its absolute error stays while the raw weights shrink: 1e-5 relative after 100 passes).
    100 seeded runs of the dpbench calibration on [0, 0, 0, 50, 0, 0, 0, 0]: every sum is 50 to 1e-12."""
    x = np.array([0, 0, 0, 50, 0, 0, 0, 0])
    pipe = make_algorithm("MWEM", calibration="dpbench")
    sums = np.array([pipe.run(x, 1.0, seed=s).estimate.sum() for s in range(100)])
    assert np.allclose(sums, 50.0, rtol=1e-12, atol=0)


# ------------------------------------------------------------------ workloads given as data
@pytest.mark.parametrize("form", ["workload", "ranges", "pairs", "matrix", "sparse"])
def test_explicit_workloads_through_make_algorithm(form):
    """The same ranges in every accepted form give the same release (same seed), different from the default
    prefix workload's.  Kills: a form converted to other ranges (the matrix's last column off by one), a form
    silently replaced by the default workload."""
    import scipy.sparse as sp
    from dphist import workloads as wl
    rng = np.random.default_rng(8)
    x = rng.integers(0, 40, 48)
    lo = rng.integers(0, 40, 25)
    hi = lo + rng.integers(1, 8, 25)
    dense = wl.RangeWorkload(48, lo, hi).matrix()
    spec = {"workload": wl.RangeWorkload(48, lo, hi), "ranges": (lo, hi), "pairs": list(zip(lo.tolist(), hi.tolist())),
            "matrix": dense, "sparse": sp.csc_matrix(dense)}[form]
    want = make_algorithm("MWEM", workload=wl.RangeWorkload(48, lo, hi)).run(x, 1.0, seed=3).estimate
    np.testing.assert_array_equal(make_algorithm("MWEM", workload=spec).run(x, 1.0, seed=3).estimate, want)
    assert not np.array_equal(make_algorithm("MWEM").run(x, 1.0, seed=3).estimate, want)


@pytest.mark.parametrize("spec, message", [
    ([], "empty"), ([(4, 4)], "zero sensitivity"), (np.zeros((2, 16)), "all zeros"),
    ([(0, 17)], "beyond the domain of 16 bins"), (np.ones((1, 15)), "15 columns"),
    (np.array([[1, 1, 0, 1] + [0] * 12]), "not one range"),
])
def test_bad_explicit_workloads_spend_nothing(spec, message):
    """Refused with a message naming the problem, before the finalizer runs (so before the noisy total).
    Kills: a check left to finalize (the total would be spent first), or no check at all."""
    calls = []

    class Spy(MWEMFinalizer):
        def finalize(self, bins, ctx):
            calls.append(ctx.budget)
            return super().finalize(bins, ctx)

    with pytest.raises(InvalidParameter, match=message):
        Pipeline(None, None, "singleton", Spy(workload=spec), (0, 0, 1)).run(np.arange(16), 1.0, seed=0)
    assert calls == []


def test_explicit_workload_needs_singleton_groups():
    """Ranges over bins cannot be answered over merged groups.  Kills: ranges over bins applied to group
    indices (a silently wrong release)."""
    pipe = Pipeline("laplace", None, "whole", MWEMFinalizer(workload=[(0, 4)]), (0.5, 0, 0.5))
    with pytest.raises(InvalidParameter, match="every bin in its own group"):
        pipe.run(np.arange(16), 1.0, seed=0)
