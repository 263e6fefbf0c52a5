"""The sreb_gca components and presets in the pipeline: conformance, ledger, privacy hygiene, bad input."""
import types

import numpy as np
import pytest

import dphist
from dphist import InvalidParameter, Partitioner, PrivacyViolation, make_algorithm, testing
from dphist.partition import Partition
from dphist_sreb_gca.partitioners import GGSPartitioner, OptimalPartitioner


@pytest.mark.parametrize("cls", [GGSPartitioner, OptimalPartitioner])
def test_conformance(cls):
    # kills: spending without a share, non-reproducible groups, reading counts outside the kernel,
    # failing on domain-order (unsorted) or descending input, a release-mode failure
    testing.check_component(cls)


@pytest.mark.parametrize("name", ["SReB_GCA", "SReB_GCA-optimal"])
def test_presets_conform(name):
    # kills: a preset whose shares do not add up to epsilon, or with a sorter ignoring its direction
    testing.check_algorithm(name)


@pytest.mark.parametrize("switch", [dict(threshold=True), dict(form="exact"), dict(ascending=False),
                                    dict(delta_fraction=0.001), dict(ties="split")])
def test_switches_conform(switch):
    # kills: a switch that breaks the pipeline (e.g. the AHP initializer named wrongly, the exact form
    # failing in release mode, delta_fraction on a negative noisy total)
    testing.check_algorithm("SReB_GCA", **switch)


@pytest.mark.parametrize("alpha", [0.2, 0.85])
def test_ledger_eps1_plus_eps2_is_eps(alpha):
    # kills: eps_2 taken as eps (double spending), or alpha applied to the wrong stage
    x = testing.example_histograms(128)["power-law"]
    r = make_algorithm("SReB_GCA", alpha=alpha).run(x, 0.5, seed=1)
    stages = r.ledger.by_stage()
    assert stages["initializer"] == pytest.approx(alpha * 0.5, rel=1e-12)
    assert stages["finalizer"] == pytest.approx((1 - alpha) * 0.5, rel=1e-12)
    assert stages.get("partitioner", 0.0) == 0.0
    assert r.ledger.total == pytest.approx(0.5, rel=1e-12)


def test_preset_sorts_ascending_by_default():
    # kills: the preset keeping the core sorter's default (descending, AHP's order)
    assert make_algorithm("SReB_GCA").sorter.descending is False
    assert make_algorithm("SReB_GCA", ascending=False).sorter.descending is True
    x = testing.example_histograms(64)["power-law"]
    r = make_algorithm("SReB_GCA").run(x, 1.0, seed=2)
    assert np.all(np.diff(r.noisy[r.partition.order]) >= 0)


class _NoData:
    def __getattr__(self, name):
        raise AssertionError(f"the partitioner touched ctx.data.{name}")


def _context(noisy, eps_f=0.5):
    return types.SimpleNamespace(noisy=np.asarray(noisy, dtype=float), eps_f=eps_f, notes={}, data=_NoData(),
                                 mode="research", budget=0.0)


@pytest.mark.parametrize("cls", [GGSPartitioner, OptimalPartitioner])
@pytest.mark.parametrize("fraction", [None, 0.01])
def test_groups_depend_on_the_noisy_histogram_only(cls, fraction):
    # kills: any read of the data handle (the true counts or the true total), e.g. delta from
    # ctx.data; and delta_fraction applied to anything but the noisy total
    rng = np.random.default_rng(3)
    noisy = np.sort(rng.laplace(20, 15, 200))
    bins = Partition(np.arange(200), np.arange(201))
    ctx = _context(noisy)
    out = cls(delta_fraction=fraction).partition(bins, ctx)
    expected = 1.0 if fraction is None else max(fraction * noisy.sum(), 1.0)
    assert ctx.notes[f"{cls.name}.delta"] == pytest.approx(expected)
    assert out == cls(delta_fraction=fraction).partition(bins, _context(noisy))


def test_a_delta_from_the_true_total_is_rejected():
    # the mutation the privacy rule forbids: Acs et al.'s 0.001 |D| computed on the true data
    # inside the algorithm; the kernel's gate refuses the read
    class Twin(GGSPartitioner):
        name = "twin.sreb-true-total"

        def partition(self, bins, ctx):
            self.delta = 0.001 * float(ctx.data._kernel._true_counts().sum())
            return super().partition(bins, ctx)

    with pytest.raises(PrivacyViolation, match="true counts"):
        testing.check_component(Twin)


@pytest.mark.parametrize("alpha", [0, 1, -0.1, 1.5, float("nan"), "half"])
def test_alpha_outside_the_open_interval_is_refused(alpha):
    with pytest.raises(InvalidParameter, match="alpha"):
        make_algorithm("SReB_GCA", alpha=alpha)


@pytest.mark.parametrize("delta", [0, -1.0, float("nan"), float("inf")])
def test_delta_must_be_positive(delta):
    with pytest.raises(InvalidParameter, match="delta"):
        make_algorithm("SReB_GCA", delta=delta)
    with pytest.raises(InvalidParameter, match="delta"):
        OptimalPartitioner(delta=delta)


@pytest.mark.parametrize("fraction", [0, -0.1, 1.5])
def test_delta_fraction_must_lie_in_unit_interval(fraction):
    with pytest.raises(InvalidParameter, match="delta_fraction"):
        GGSPartitioner(delta_fraction=fraction)


def test_unknown_error_form_and_tie_rule_are_refused():
    with pytest.raises(InvalidParameter, match="'form' = 'absolute' is invalid; expected one of 'bound', 'exact'"):
        make_algorithm("SReB_GCA", form="absolute")
    with pytest.raises(InvalidParameter, match="'form' = 'mse' is invalid"):
        make_algorithm("SReB_GCA-optimal", form="mse")
    with pytest.raises(InvalidParameter, match="'ties' = 'maybe' is invalid; expected one of 'join', 'split'"):
        GGSPartitioner(ties="maybe")


def test_size_limits_are_refused_with_a_clear_error():
    x = np.random.default_rng(4).poisson(5, 3000)
    with pytest.raises(InvalidParameter, match="max_bins"):
        make_algorithm("SReB_GCA-optimal", max_bins=1000).run(x, 1.0, seed=1)
    with pytest.raises(InvalidParameter, match="unsorted"):
        dphist.Pipeline("laplace", None, GGSPartitioner(unsorted_limit=100), "group-mean",
                        (0.5, 0.0, 0.5)).run(x, 1.0, seed=1)
    with pytest.raises(InvalidParameter, match="exact"):
        make_algorithm("SReB_GCA-optimal", form="exact").run(x, 1.0, seed=1)


def test_release_mode_runs():
    # kills: a partitioner that needs a seed (e.g. draws from ctx.rng without one)
    x = testing.example_histograms(64)["power-law"]
    r = make_algorithm("SReB_GCA").run(x, 1.0)
    assert r.mode == "release" and r.ledger.total == pytest.approx(1.0)
