"""H~'s noise model on the context (issue 14 item 6): the closed form, the pipeline's wiring, the
privacy rule (built from public quantities only) and WAF / UEE reading it."""
from __future__ import annotations

import math

import numpy as np
import pytest

import dphist
from dphist import InvalidParameter, Pipeline
from dphist.noise_model import NoiseModel
from dphist.registry import default_registry


def test_zeroed_variance_is_the_flat_prior_second_moment():
    """E[x^2 | x + Z < theta] under a flat prior on x >= 0, by numerical integration.
    Kills: a wrong closed form (e.g. theta^2 / 3, or dropping the tail above theta)."""
    for b, theta in ((1.0, 0.0), (1.0, 2.9), (0.25, 1.3), (3.0, 10.0)):
        x = np.linspace(0, theta + 60 * b, 2_000_001)
        t = theta - x
        p_zeroed = np.where(t >= 0, 1 - 0.5 * np.exp(-np.abs(t) / b), 0.5 * np.exp(-np.abs(t) / b))
        want = np.trapezoid(x ** 2 * p_zeroed, x) / np.trapezoid(p_zeroed, x)
        got = NoiseModel.laplace(1 / b, zeroed_below=theta).zeroed_variance
        assert got == pytest.approx(want, rel=1e-5)
    assert NoiseModel.laplace(2.0, zeroed_below=0.0).zeroed_variance == pytest.approx(2 * 0.5 ** 2)


def test_variances_mark_only_zeroed_bins():
    """Kills: thresholded models ignoring zeros, plain models treating zeros as zeroed."""
    h = np.array([0.0, 5.0, 0.0, 12.0])
    plain = NoiseModel.laplace(0.5)
    assert np.array_equal(plain.variances(h), np.full(4, 8.0)) and not plain.thresholded
    thr = NoiseModel.laplace(0.5, zeroed_below=4.0)
    v = thr.variances(h)
    assert v[1] == v[3] == 8.0 and v[0] == v[2] == thr.zeroed_variance > 8.0


@pytest.mark.parametrize("bad", [dict(scale=0.0), dict(scale=float("inf")), dict(scale=1.0, family="gauss"),
                                 dict(scale=1.0, zeroed_below=-1.0)])
def test_bad_models_are_refused(bad):
    with pytest.raises(InvalidParameter):
        NoiseModel(**bad)


def _context_of(pipeline, x, eps=1.0, seed=3):
    """The context the finalizer sees (captured by a finalizer wrapper)."""
    seen = {}
    fin = pipeline.finalizer

    class Spy(type(fin)):
        def finalize(self, bins, ctx):
            seen["model"] = ctx.noise_model
            return super().finalize(bins, ctx)

    spy = Spy(**fin.get_params())
    Pipeline(pipeline.initializer, pipeline.sorter, pipeline.partitioner, spy, pipeline.shares).run(x, eps, seed=seed)
    return seen["model"]


def test_pipeline_puts_the_initializers_model_on_the_context():
    """Kills: the pipeline not setting the model, ahp.threshold not declaring its threshold."""
    x = np.arange(64) % 7
    plain = _context_of(Pipeline("laplace", None, "singleton", "group-mean", (0.4, 0, 0.6)), x, eps=0.5)
    assert plain == NoiseModel.laplace(0.2)
    thr = _context_of(Pipeline("ahp.threshold", None, "singleton", "group-mean", (0.4, 0, 0.6)), x, eps=0.5)
    assert thr.thresholded and thr.zeroed_below == pytest.approx(0.35 * math.log(64) / 0.2)
    assert _context_of(Pipeline(None, None, "singleton", "group-mean", (0, 0, 1)), x) is None


@pytest.mark.parametrize("name", sorted(default_registry.names("initializer")))
def test_every_initializers_model_is_public(name):
    """The same model for two different histograms (same size, seed, budget): it depends on public
    quantities only.  Kills: a model estimated from the data (e.g. from H~'s spread)."""
    pipe = Pipeline(name, None, "singleton", "group-mean", (0.5, 0, 0.5))
    a = _context_of(pipe, np.zeros(50, dtype=int))
    b = _context_of(pipe, np.arange(50) * 100)
    assert a == b


def test_a_model_cannot_read_the_data():
    """The pipeline asks for the model with ``ctx.data = None``.  Kills: handing it the initializer's
    handle (a model could then spend or read)."""
    class Peeking(dphist.Initializer):
        name = "test.peeking"
        spends = True

        def initialize(self, ctx):
            return ctx.data.laplace_identity(ctx.budget)

        def noise_model(self, ctx):
            ctx.data.laplace_identity(ctx.budget)

    with pytest.raises(AttributeError):
        Pipeline(Peeking(), None, "singleton", "group-mean", (0.5, 0, 0.5)).run(np.ones(8, dtype=int), 1.0, seed=0)


def test_a_wrong_model_type_is_refused():
    class Wrong(dphist.Initializer):
        name = "test.wrong-model"
        spends = True

        def initialize(self, ctx):
            return ctx.data.laplace_identity(ctx.budget)

        def noise_model(self, ctx):
            return 2.0 / ctx.eps_in ** 2

    with pytest.raises(InvalidParameter, match="noise_model"):
        Pipeline(Wrong(), None, "singleton", "group-mean", (0.5, 0, 0.5)).run(np.ones(8, dtype=int), 1.0, seed=0)
