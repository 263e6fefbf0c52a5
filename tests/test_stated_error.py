"""Releases that state their error (dphist.stated_error), and declared post-processing (dphist.postprocess).

Two independent checks of every stated variance:

* *probe* (exact, cheap): a noise source that adds 1 to one answer at a time reads the release's
  linear map ``x^ = x + C z`` column by column from the pipeline itself; with the ledger's
  sensitivity and epsilon per answer (``2 (Delta / eps)^2``) it gives the release's covariance
  ``C diag(var) C^T``, which the statement must match to rounding;
* *simulation* (the noise law in the loop): 2,000 seeded runs, each stated variance within 5
  standard errors of the simulated one (the standard error of a mean of squared errors,
  ``sqrt((m4 - m2^2) / N)``, estimated from the same runs).

The 10^4-run, 3 % check of every linear preset is ``benchmarks/bench_stated_error.py``.
"""
from __future__ import annotations

import numpy as np
import pytest

import dphist
from dphist.errors import InvalidParameter
from dphist.kernel.exact import GeneratorWords
from dphist.kernel.noise import ExactNoise, SeededLaplace
from dphist.stated_error import DiscreteLaplaceLaw, LaplaceLaw, noise_law
from dphist.testing.stated import UnitNoise, probed_covariance

X13 = np.array([5, 0, 3, 8, 1, 1, 0, 20, 7, 2, 0, 0, 9])


LINEAR = [("identity", {}), ("uniform", {}), ("H", {}), ("H", {"level_budgets": "geometric"}),
          ("H", {"branching": 3}), ("Hb", {}), ("H-tilde", {}), ("Privelet", {}), ("GreedyH", {}),
          ("GreedyH", {"finalizer__workload": "all-ranges"}), ("OPT-prefix", {}), ("OPT-ranges", {}),
          ("OPT", {"workload": [(0, 5), (3, 13)], "p": 2})]


@pytest.mark.parametrize("name,params", LINEAR, ids=[f"{n}-{p}" for n, p in LINEAR])
def test_every_linear_preset_states_the_variance_of_its_own_release(name, params):
    """Kills: a missing level weight in H's least squares (geometric budgets: the inference's R no longer
    matches the stated weights), a wrong Haar matrix or padding, a GreedyH strategy off its tree, a wrong
    spreading of group totals.  Checked by hand: dropping ``variances`` in boost's weighted_inference
    (unit weights) fails the geometric case; LaplaceLaw.variance returning b^2 fails every case."""
    pipe = dphist.make_algorithm(name, **params)
    cov = probed_covariance(pipe, X13, 0.7)
    release = pipe.run(X13, 0.7, seed=3)
    # OPT on two ranges barely measures single bins: a nearly singular strategy turns the measurements'
    # variance of about 4 into 2e10 on bins 3-12, where the closed form and the probe agree to 1.2e-9 with
    # numpy 2.4; each mutation named above moves a variance by far more than 1e-7
    rtol = 1e-7 if name == "OPT" else 1e-9
    np.testing.assert_allclose(release.bin_variances(), np.diag(cov), rtol=rtol)
    Q = np.random.default_rng(1).normal(size=(4, X13.size))
    np.testing.assert_allclose(release.variance(Q), np.einsum("ij,jk,ik->i", Q, cov, Q), rtol=rtol)
    assert release.variance((2, 9)) == pytest.approx(cov[2:9, 2:9].sum(), rel=rtol)
    expected_kind = "noise-only" if name == "uniform" else "exact"
    assert release.stated.kind == expected_kind


def _within_sampling_error(errors, stated, z=5.0):
    """Mean squared error of ``errors`` (runs x queries) within ``z`` standard errors of ``stated``."""
    m2 = (errors ** 2).mean(axis=0)
    se = np.sqrt(((errors ** 4).mean(axis=0) - m2 ** 2) / errors.shape[0])
    return np.abs(m2 - stated) <= z * se, m2, se


@pytest.mark.parametrize("name,noise", [("identity", "exact"), ("Privelet", None)])
def test_stated_variances_match_simulation(name, noise):
    """2,000 runs: per bin and for two ranges; release mode's discrete law (identity, exact noise) and the
    float law with sensitivity 1 + log2 N (Privelet).  Kills a wrong factor 2 in a noise law (100 % off;
    5 standard errors are ~16 % here), the continuous law stated for discrete noise at eps = 2 (28 %), and
    Privelet's sensitivity left out (9x)."""
    x = np.array([4, 0, 9, 2])
    pipe = dphist.make_algorithm(name)
    kw = {} if noise is None else {"noise": noise}
    est = np.array([pipe.run(x, 2.0, seed=s, **kw).estimate for s in range(2000)])
    release = pipe.run(x, 2.0, seed=0, **kw)
    Q = np.vstack([np.eye(4), [[1, 1, 1, 0], [0, 1, 1, 1]]])
    ok, m2, se = _within_sampling_error((est - x) @ Q.T, release.variance(Q))
    assert ok.all(), (m2, release.variance(Q), se)


@pytest.mark.parametrize("source,law,sens,eps,integral", [
    (lambda: SeededLaplace(np.random.default_rng(2)), LaplaceLaw(), 1.0, 2.0, True),
    (lambda: ExactNoise(GeneratorWords(np.random.default_rng(3))), DiscreteLaplaceLaw(), 1.0, 2.0, True),
    (lambda: ExactNoise(GeneratorWords(np.random.default_rng(4))), DiscreteLaplaceLaw(), 2.0, 0.7, True),
    (lambda: ExactNoise(GeneratorWords(np.random.default_rng(5))), DiscreteLaplaceLaw(), 1.5, 1.0, False),
])
def test_noise_laws_match_the_sources(source, law, sens, eps, integral):
    """The variance and the exact quantile of one noise term against 10,000 draws of the source itself.
    Kills a factor 2 in either law, 2 b^2 stated for discrete noise (eps = 2: 0.5 against 0.362), a grid
    route without the grid, and a quantile off by one step (coverage below the level)."""
    n = 10_000
    zeros = np.zeros(n, dtype=np.int64) if integral else np.zeros(n)
    z = source().laplace_mechanism(zeros, sens, eps, integral=integral, support=1)
    ok, m2, se = _within_sampling_error(z[:, None], law.variance(sens, eps, integral, 1))
    assert ok.all(), (m2, law.variance(sens, eps, integral, 1), se)
    h = law.half_width(sens, eps, 0.9, integral, 1)
    assert (np.abs(z) <= h).mean() >= 0.9 - 5 * np.sqrt(0.09 / n)
    if isinstance(law, LaplaceLaw):
        assert h == pytest.approx(sens / eps * np.log(10.0))


def test_discrete_quantile_is_the_smallest_step_reaching_the_level():
    """The discrete interval's half-width m: P(|Z| <= m) >= level > P(|Z| <= m - 1) (from the pmf).
    Kills an off-by-one in the quantile."""
    law = DiscreteLaplaceLaw()
    for eps, level in [(1.0, 0.9), (0.3, 0.95), (2.0, 0.5)]:
        m = law.half_width(1.0, eps, level)
        tau, _ = law._scale(1.0, eps, True, 1)
        q = np.exp(-1.0 / tau)
        cover = lambda k: 1.0 - 2.0 * q ** (k + 1) / (1.0 + q)
        assert cover(m) >= level and (m == 0 or cover(m - 1) < level)


def test_noise_law_follows_the_source_and_the_privacy_unit():
    """Kills a release mode stated with the research law, and person-level runs stated at k = 1."""
    from dphist.kernel.persons import PersonLevelNoise
    assert isinstance(noise_law(SeededLaplace(np.random.default_rng(0))), LaplaceLaw)
    assert isinstance(noise_law(ExactNoise()), DiscreteLaplaceLaw)
    person = noise_law(PersonLevelNoise(SeededLaplace(np.random.default_rng(0)), 3))
    assert person.variance(1.0, 1.0) == pytest.approx(2 * 9.0)
    release = dphist.make_algorithm("identity").run(X13, 1.0, seed=1, contributions=3)
    assert release.bin_variances() == pytest.approx(np.full(X13.size, 18.0))
    assert noise_law(UnitNoise(None)) is None
    r = dphist.make_algorithm("identity").run(X13, 1.0, seed=1, noise=UnitNoise(None))
    assert r.stated is None and "does not state its law" in r.stated_reason


def test_the_statement_reads_no_data():
    """Two histograms, one preset: the same stated variances (the statement is built from the strategy,
    the shares and the partition only).  Kills a variance computed on the true (or noisy) counts."""
    other = X13[::-1] * 3
    for name in ("H", "Privelet", "GreedyH"):
        pipe = dphist.make_algorithm(name)
        a, b = pipe.run(X13, 0.5, seed=1), pipe.run(other, 0.5, seed=2)
        np.testing.assert_array_equal(a.bin_variances(), b.bin_variances())
        np.testing.assert_array_equal(a.variance("prefix"), b.variance("prefix"))


def test_data_dependent_presets_state_the_noise_given_the_partition_and_name_the_bias():
    """AHP: group means of a data-chosen partition: 2 / (eps_f^2 |g|^2) per bin, kind noise-only, the bias
    named unknown, the interval's note says so.  A finalizer with no exact noise part (MWEM's multiplicative
    weights) states nothing and says why.  Kills a data-dependent release stated as exact (unbiased)."""
    x = np.r_[np.zeros(20, int), np.full(20, 50), np.arange(24)]
    release = dphist.make_algorithm("AHP").run(x, 1.0, seed=4)
    stated = release.stated
    assert stated.kind == "noise-only" and not stated.exact and stated.conditional
    assert "unknown" in stated.bias
    eps_f = release.ledger.by_stage()["finalizer"]
    per_bin = 2.0 / eps_f ** 2 / release.partition.sizes.astype(float) ** 2
    np.testing.assert_allclose(release.bin_variances(), release.partition.expand(per_bin), rtol=1e-12)
    assert "bias" in release.confidence_interval((0, 10), 0.9).note
    assert release.to_dict()["stated_error"]["kind"] == "noise-only"
    mwem = dphist.make_algorithm("MWEM").run(x, 1.0, seed=4)
    assert mwem.stated is None
    with pytest.raises(InvalidParameter, match="states no error.*mwem.mw states no error: MWEM"):
        mwem.variance((0, 3))


def test_confidence_intervals_name_their_method():
    """Exact for one Laplace term (an identity bin), Chebyshev otherwise (guaranteed), normal on request
    (not guaranteed); an exact interval refused where the error is several terms.  Kills an interval
    that claims exactness for a sum of noise terms."""
    release = dphist.make_algorithm("identity").run(X13, 1.0, seed=2)
    one = release.confidence_interval((3, 4), 0.9)
    assert one.method.startswith("exact") and one.guaranteed
    assert one.high - one.estimate == pytest.approx(np.log(10.0))
    several = release.confidence_interval((3, 6), 0.9)
    assert several.method == "chebyshev" and several.guaranteed
    assert several.high - several.estimate == pytest.approx(np.sqrt(6.0 / 0.1))
    normal = release.confidence_interval((3, 6), 0.9, method="normal")
    assert normal.method == "normal approximation" and not normal.guaranteed
    with pytest.raises(InvalidParameter, match="single noise term"):
        release.confidence_interval((3, 6), 0.9, method="exact")
    lo, hi = release.confidence_interval("prefix", 0.5)
    assert lo.shape == (X13.size,) and np.all(hi > lo)
    exact = dphist.make_algorithm("identity").run(X13, 1.0)          # release mode: discrete quantile, integer
    interval = exact.confidence_interval((0, 1), 0.9)
    assert interval.method == "exact (discrete-laplace quantile)" and float(interval.high - interval.low) % 2 == 0


@pytest.mark.parametrize("bad", [0, 1, 1.5, -0.1, True, "0.9", float("nan")])
def test_a_confidence_level_outside_the_open_unit_interval_is_named(bad):
    release = dphist.make_algorithm("identity").run(X13, 1.0, seed=2)
    with pytest.raises(InvalidParameter, match="confidence level"):
        release.confidence_interval((0, 2), bad)


@pytest.mark.parametrize("query,match", [((0, 14), "outside the domain"), ((5, 5), "outside the domain"),
                                         (np.ones(12), "outside the domain"), ([(0, 20)], "beyond the domain"),
                                         (np.array([np.nan] * 13), "finite"), ("no-such-workload", "cannot read")])
def test_a_query_outside_the_domain_is_named(query, match):
    release = dphist.make_algorithm("H").run(X13, 1.0, seed=2)
    with pytest.raises(InvalidParameter, match=match):
        release.variance(query)


def test_release_mode_statement_carries_nothing_that_reproduces_the_noise():
    """The statement holds the strategy, the law and the partition: no noise source, generator or kernel.
    Kills a statement that keeps the run's noise source (its state would rebuild the noise)."""
    import numpy.random as npr

    from dphist.kernel import NoiseSource, PrivateKernel
    release = dphist.make_algorithm("H").run(X13, 1.0)
    assert callable(release.statement_source)           # nothing built until asked
    release.bin_variances()
    assert not callable(release.statement_source)      # resolved: the function that made it is gone
    seen, todo = set(), [release.stated, release.statement_source]
    while todo:
        obj = todo.pop()
        if id(obj) in seen or isinstance(obj, (str, bytes, int, float, np.ndarray)):
            continue
        seen.add(id(obj))
        assert not isinstance(obj, (npr.Generator, npr.SeedSequence, PrivateKernel, ExactNoise, SeededLaplace))
        assert not (isinstance(obj, NoiseSource) and hasattr(obj, "laplace_mechanism"))
        todo.extend(vars(obj).values() if hasattr(obj, "__dict__") else
                    obj if isinstance(obj, (list, tuple)) else ())
    assert "seed" not in release.to_dict() and release.to_dict()["stated_error"]["exact"]


# ----------------------------------------------------------------------------- post-processing
def test_postprocessing_is_free_recorded_and_marks_the_statement():
    """Same seed with and without ("nonnegative", "integer"): the same ledger (free of budget), a
    non-negative integer estimate, the options and methods recorded, the statement marked as no longer
    exact, the spec round trip keeping them.  Kills a post-processing that spends, or leaves the
    statement claiming exactness."""
    x = np.array([0, 0, 1, 0, 30, 2, 0, 0])
    plain = dphist.make_algorithm("H").run(x, 0.5, seed=7)
    post = dphist.make_algorithm("H", postprocess=("integer", "nonnegative")).run(x, 0.5, seed=7)
    assert post.ledger.to_records() == plain.ledger.to_records()
    assert np.all(post.estimate >= 0) and np.array_equal(post.estimate, np.rint(post.estimate))
    assert [p["option"] for p in post.postprocess] == ["nonnegative", "integer"]
    assert post.postprocess[0]["method"] == "weighted non-negative least squares"
    assert post.stated.kind == "before-postprocessing" and not post.stated.exact
    assert not post.confidence_interval((0, 3), 0.9).guaranteed
    np.testing.assert_allclose(post.bin_variances(), plain.bin_variances())
    assert dphist.Pipeline.from_spec(post.spec).postprocess == ("nonnegative", "integer")
    assert post.to_dict()["postprocess"][1]["option"] == "integer"
    zeroed = dphist.make_algorithm("H", nonnegative=True).run(x, 0.5, seed=7)
    assert zeroed.stated.kind == "before-postprocessing" and "zeroing" in zeroed.stated.postprocess[0]


def test_weighted_nonnegative_least_squares_meets_its_optimality_conditions():
    """g >= 0 minimises (g - g^)^T M (g - g^): the gradient M (g - g^) is 0 where g > 0 and >= 0 where
    g = 0 (KKT).  Kills a plain clip presented as least squares (it breaks the conditions on H)."""
    x = np.array([0, 0, 1, 0, 30, 2, 0, 0, 0, 5, 0, 0])
    plain = dphist.make_algorithm("H").run(x, 0.3, seed=11)
    post = dphist.make_algorithm("H", postprocess="nonnegative").run(x, 0.3, seed=11)
    assert plain.estimate.min() < 0
    A = plain.stated.A
    M = (A.T @ (plain.stated.row_weight[:, None] * A.toarray()))
    grad = M @ (post.estimate - plain.estimate)
    scale = np.abs(M).max() * np.abs(plain.estimate).max()
    assert np.all(post.estimate >= 0)
    assert np.all(np.abs(grad[post.estimate > 1e-9]) <= 1e-7 * scale)
    assert np.all(grad[post.estimate <= 1e-9] >= -1e-7 * scale)
    clipped = np.maximum(plain.estimate, 0)
    assert not np.allclose(clipped, post.estimate)


@pytest.mark.parametrize("bad", ["positive", ("nonnegative", "round"), 3])
def test_an_unknown_postprocessing_option_is_named_before_anything_runs(bad):
    with pytest.raises(InvalidParameter, match="post-processing option|postprocess must be"):
        dphist.make_algorithm("H", postprocess=bad)
    with pytest.raises(InvalidParameter, match="post-processing option|postprocess must be"):
        dphist.Pipeline(postprocess=bad)


# ----------------------------------------------------------------------------- views and solvers
def test_the_explorer_and_the_release_figure_show_the_stated_error():
    """The explorer's snapshot carries the Chebyshev band and the stated expected MSE on the workload
    (identity: 2 / eps^2 per bin, prefix i: 2 (i + 1) / eps^2), renders them, and says why there is no
    band for a release that states nothing; the release figure draws the band.  Kills a band that is
    not the stated variance, and a missing reason."""
    from dphist import plots
    from dphist.widgets import model, render
    x = np.random.default_rng(3).integers(0, 100, 64)
    data = model.DataCache(x)
    snap = model.evaluate(model.Settings(dataset=model.ARRAY, algorithm="identity", epsilon=0.5, seed="1",
                                         workload="prefix"), data)
    assert snap.ok and snap.stated["kind"] == "exact"
    assert snap.stated["mse"] == pytest.approx(np.mean(8.0 * np.arange(1, 65)))
    np.testing.assert_allclose(snap.stated["high"] - snap.release.estimate, np.sqrt(8.0 / 0.05))
    assert "stated by the release" in render.errors_html(snap)
    view = render.HistogramFigure()
    view.update(snap)
    assert view.lines["original", "high"].get_ydata().size == 64
    names, shares = model.preset_stage_names("MWEM")
    mwem = model.evaluate(model.Settings(dataset=model.ARRAY, algorithm="MWEM", components=names, shares=shares,
                                         epsilon=0.5, seed="1"), data)
    assert "states no error: MWEM" in mwem.stated["reason"] and "states no error" in render.errors_html(mwem)
    fig = plots.release(snap.release, truth=x)
    assert "Chebyshev" in fig.axes[0].get_legend().get_texts()[0].get_text()
    fig = plots.release(mwem.release)
    assert "no band" in fig.axes[0].get_title()


def test_the_sparse_route_agrees_with_the_dense_one():
    """Beyond 1,024 columns queries are solved by a sparse LU of the augmented system: the same variances
    as the dense Cholesky route (GreedyH: no structure-specific solver).  Kills a sign or block error in the
    augmented system.  (H and Privelet use their own ``inverse_gram``, checked by the probe test above.)"""
    import dphist.stated_error as se
    x = np.zeros(1100, dtype=np.int64)
    release = dphist.make_algorithm("GreedyH").run(x, 1.0, seed=1)
    Q = np.random.default_rng(2).normal(size=(3, 1100))
    sparse = release.variance(Q)
    assert release.stated._solver is not None and getattr(release.stated, "_cholesky", None) is None
    dense = se.LinearStatedError(release.stated.strategy, release.stated.law, release.partition)
    dense.cholesky()
    np.testing.assert_allclose(sparse, dense.variance(Q), rtol=1e-9)


def test_a_failing_hook_is_reported_not_raised_by_an_export():
    """A finalizer whose stated_error raises: the release still exports, and says why it states nothing.
    Kills an export that crashes on a plugin's bug in the statement."""
    from dphist.components.builtin import GroupMeanFinalizer

    class Broken(GroupMeanFinalizer):
        name = "test.broken-statement"

        def stated_error(self, bins, ctx):
            raise ZeroDivisionError("oops")

    release = dphist.Pipeline(finalizer=Broken()).run(X13, 1.0, seed=1)
    assert release.to_dict()["stated_error"]["kind"] is None
    assert "ZeroDivisionError" in release.stated_reason


def test_a_release_that_stated_its_error_still_pickles():
    """Kills a statement holding closures or solver factors (a Release could no longer cross processes)."""
    import pickle
    for name in ("H", "Privelet", "GreedyH"):
        release = dphist.make_algorithm(name).run(X13, 1.0, seed=1)
        before = release.variance("prefix")
        again = pickle.loads(pickle.dumps(release))
        np.testing.assert_allclose(again.variance("prefix"), before, rtol=1e-12)
