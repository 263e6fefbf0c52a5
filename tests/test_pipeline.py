"""Pipeline: share validation, stage contracts, releases that rerun exactly."""
import numpy as np
import pytest

import dphist
from dphist.errors import PrivacyViolation
from dphist import BudgetExceeded, InvalidParameter, Partition, Partitioner, Pipeline, UnknownComponent

X = np.array([5, 3, 0, 0, 12, 40, 41, 39, 2, 1], dtype=np.int64)


@pytest.mark.parametrize("shares, words", [
    ((0.5, 0.0, 0.6), "sum to 1"),
    ((-0.1, 0.0, 1.1), "non-negative"),
    ((0.5, 0.5), "three numbers"),
    ((0.2, 0.0, 0.8), "no initializer"),
    ("abc", "three numbers"),
    ((0.0, 0.2, 0.8), "spends nothing"),
])
def test_bad_shares(shares, words):
    with pytest.raises(InvalidParameter, match=words):
        Pipeline(None, None, "singleton", "group-mean", shares)


def test_sorter_needs_gamma_in():
    with pytest.raises(InvalidParameter, match="sorter needs an initializer with gamma_in > 0"):
        Pipeline("laplace", "noisy-count", "singleton", "group-mean", (0.0, 0.0, 1.0))
    with pytest.raises(InvalidParameter, match="sorter needs"):
        Pipeline(None, "noisy-count", "singleton", "group-mean", (0.0, 0.0, 1.0))


def test_unknown_component_suggests():
    with pytest.raises(UnknownComponent, match="did you mean 'singleton'"):
        Pipeline(None, None, "singelton", "group-mean")
    with pytest.raises(InvalidParameter, match="no parameter"):
        Pipeline("laplace", ("noisy-count", {"descnding": False}), "singleton", "group-mean", (0.5, 0, 0.5))


@pytest.mark.parametrize("eps", [0, -1, float("nan"), float("inf")])
def test_bad_epsilon_in_run(eps):
    with pytest.raises(InvalidParameter, match="epsilon"):
        dphist.make_algorithm("identity").run(X, eps)


def test_release_is_complete_and_reruns_exactly():
    p = Pipeline("laplace", ("noisy-count", {"descending": False}), "whole", "group-mean", (0.25, 0, 0.75))
    r = p.run(X, 0.5, seed=42)
    assert r.estimate.shape == X.shape and r.noisy.shape == X.shape
    assert set(r.timings) == {"initializer", "sorter", "partitioner", "finalizer"}
    assert r.ledger.by_stage() == {"initializer": pytest.approx(0.125), "finalizer": pytest.approx(0.375)}
    assert r.spec["sorter"] == {"name": "noisy-count", "params": {"descending": False}}
    again = r.rerun(X)
    assert np.array_equal(again.estimate, r.estimate) and again.partition == r.partition
    assert np.array_equal(Pipeline.from_spec(r.spec).run(X, 0.5, seed=42).estimate, r.estimate)
    unseeded = p.run(X, 0.5)  # release mode: nothing kept that could repeat the noise
    assert unseeded.mode == "release" and unseeded.seed is None and unseeded.pipeline is None
    with pytest.raises(PrivacyViolation, match="cannot be rerun"):
        unseeded.rerun(X)


def test_sorter_produces_sorted_generalized_bins():
    r = Pipeline("laplace", "noisy-count", "singleton", "group-mean", (0.5, 0, 0.5)).run(X, 1e6, seed=1)
    assert np.array_equal(X[r.partition.order], np.sort(X)[::-1])  # huge epsilon: noisy order = true order


def test_component_over_budget_is_stopped():
    class Greedy(Partitioner):
        name = "greedy-test"
        citation = "test"
        spends = True

        def partition(self, bins, ctx):
            ctx.data.laplace_identity(ctx.budget * 2)
            return bins

    with pytest.raises(BudgetExceeded, match="greedy-test"):
        Pipeline(None, None, Greedy(), "group-mean", (0, 0.5, 0.5)).run(X, 1.0, seed=0)


def test_stage_outputs_are_checked_and_noisy_is_read_only():
    class Bad(Partitioner):
        name = "bad"
        citation = "test"

        def partition(self, bins, ctx):
            return Partition.singletons(3)

    # kills: a stage check that does not name the stage and component
    with pytest.raises(InvalidParameter, match=r"the partitioner bad returned an invalid partition "
                                               r"\(partition covers 3 bins, the domain has 10\)"):
        Pipeline(None, None, Bad(), "group-mean").run(X, 1.0)

    class Scribbler(Partitioner):
        name = "scribbler"
        citation = "test"

        def partition(self, bins, ctx):
            ctx.noisy[0] = 0.0
            return bins

    with pytest.raises(ValueError, match="read-only"):
        Pipeline("laplace", None, Scribbler(), "group-mean", (0.5, 0, 0.5)).run(X, 1.0)


def test_identity_preset_is_the_laplace_mechanism():
    x = np.zeros(50_000, dtype=np.int64)
    r = dphist.make_algorithm("identity").run(x, 0.5, seed=9)
    assert r.estimate.var() == pytest.approx(8.0, rel=0.05)
    assert r.partition.n_groups == x.size and len(r.ledger) == 1


def test_uniform_preset_spreads_a_noisy_total():
    r = dphist.make_algorithm("uniform").run(X, 1e6, seed=9)
    assert np.allclose(r.estimate, X.sum() / X.size, atol=1e-3)


def test_release_exports_to_json_even_with_callable_parameters():
    import json

    def my_rule(values):
        return values

    class WithCallable(Partitioner):
        name = "callable-param"
        citation = "test"

        def __init__(self, rule=my_rule):
            self.rule = rule

        def partition(self, bins, ctx):
            return bins

    p = Pipeline(None, None, WithCallable(), "group-mean")
    r = p.run(X, 1.0, seed=2)
    text = json.dumps(r.to_dict())
    assert "test_release_exports_to_json_even_with_callable_parameters.<locals>.my_rule" in text
    assert np.array_equal(r.rerun(X).estimate, r.estimate)  # rerun keeps the callable itself


def test_domain_order_components_are_refused_after_a_sorter():
    class Contiguous(Partitioner):
        name = "contiguous-only"
        citation = "test"
        requires_domain_order = True

        def partition(self, bins, ctx):
            return bins

    Pipeline("laplace", None, Contiguous(), "group-mean", (0.5, 0, 0.5))  # fine without a sorter
    with pytest.raises(InvalidParameter, match="contiguous-only works only on bins in domain order"):
        Pipeline("laplace", "noisy-count", Contiguous(), "group-mean", (0.5, 0, 0.5))
