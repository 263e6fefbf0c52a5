"""The conformance kit, the kernel and the pipeline reject every broken twin.

Each test names the mutation it kills: if the check it relies on were switched
off (``check_ledger`` reduced to ``return``, the reproducibility assertion
removed, the kernel's gate or the pipeline's books audit deleted, the
vetted-mechanism replay skipped, the sorter-direction check dropped), the kit
would accept the twin and the test would fail.
"""
import numpy as np
import pytest

from dphist import BudgetExceeded, InvalidParameter, Pipeline, PrivacyViolation, testing
from dphist.kernel import enable_vetted_mechanisms
from dphist.testing import twins

# InvalidParameter: the pipeline's check of a stage's partition, and the kernel's refusal of an
# undeclared vetted mechanism (both before anything of the offending call is spent)
REJECTED = (AssertionError, PrivacyViolation, BudgetExceeded, InvalidParameter)


@pytest.mark.parametrize("twin", twins.ALL_TWINS, ids=lambda t: t.name)
def test_the_kit_rejects_every_twin(twin):
    with pytest.raises(REJECTED):
        testing.check_component(twin)


def test_honest_builtins_pass_the_same_kit():
    # the kit is not simply failing everything: the honest neighbours of the twins pass
    from dphist.components.builtin import GroupMeanFinalizer, NoisyCountSorter, SingletonPartitioner
    for cls in (GroupMeanFinalizer, NoisyCountSorter, SingletonPartitioner):
        testing.check_component(cls)


@pytest.mark.parametrize("twin, words", [
    (twins.HalfScaleLaplaceFinalizer, "too little noise"),
    (twins.ShamVettedFinalizer, "too little noise"),
    (twins.IgnoresSensitivityFinalizer, "too little noise"),
    (twins.UnderspendingFinalizer, "charged != used"),
    (twins.GlobalRandomPartitioner, "not reproducible"),
    (twins.GlobalRandomFinalizer, "is not reproducible"),
    (twins.DirectionIgnoringSorter, "did not sort in that direction"),
    (twins.UndeclaredParamPartitioner, r"\['width'\] not declared in param_constraints"),
    (twins.RoundedShamFinalizer, "privacy loss of at least"),
    (twins.NoisyArgmaxCutPartitioner, "privacy loss of at least"),
    (twins.LargeDomainLeakFinalizer, "too little noise"),
    (twins.LyingScorePartitioner, "more than the declared sensitivity 1"),
    (twins.UnderstatedCostPartitioner, "more than the declared sensitivity 2"),
])
def test_each_kit_check_names_its_finding(twin, words):
    # kills: the vetted-mechanism replay, check_ledger, the reproducibility assert, the
    # sorter-direction check and the declared-parameters check, each switched off on its own;
    # the distributional replay of integer outputs (RoundedSham: the float-only replay returned on
    # them) and of cut points (NoisyArgmaxCut, found on the flat histogram), the replay on 64 bins
    # (LargeDomainLeak), check_declared_sensitivity for exponential scores (LyingScore) and
    # noisy-min costs (UnderstatedCost)
    with pytest.raises(AssertionError, match=words):
        testing.check_component(twin)


def test_reading_the_counts_outside_a_primitive_is_stopped():
    pipe = Pipeline("laplace", None, twins.RawCountsPartitioner(), "group-mean", (0.5, 0, 0.5))
    with pytest.raises(PrivacyViolation, match="kernel primitive"):
        pipe.run(np.arange(10), 1.0, seed=1)


def test_a_swallowed_gate_error_still_stops_the_release():
    # kills: dropping the pipeline's check of kernel.violations
    pipe = Pipeline("laplace", None, twins.QuietRawCountsPartitioner(), "group-mean", (0.5, 0, 0.5))
    with pytest.raises(PrivacyViolation, match="outside the kernel"):
        pipe.run(np.arange(10), 1.0, seed=1)


def test_a_forged_ledger_row_stops_the_release():
    # kills: removing the pipeline's audit of the ledger against the shares and epsilon
    pipe = Pipeline(None, None, "singleton", twins.LedgerForgingFinalizer(), (0, 0, 1))
    with pytest.raises(PrivacyViolation, match="more than its share"):
        pipe.run(np.arange(10), 0.5, seed=1)


def test_raw_float_noise_is_refused_in_release_mode():
    pipe = Pipeline(None, None, "singleton", twins.FloatNoiseFinalizer(), (0, 0, 1))
    assert pipe.run(np.arange(10), 1.0, seed=1).mode == "research"
    with pytest.raises(PrivacyViolation):
        pipe.run(np.arange(10), 1.0)


def test_a_sorter_duplicating_a_bin_is_stopped_before_the_partitioner_is_charged():
    """Kills: the pipeline's validation of the partition a stage hands on (without it the duplicated
    bin reaches the partitioner's private score, and laplace.identity is charged first)."""
    from dphist import Partitioner

    class Spy(Partitioner):
        """Measures its bins' group sums (a private score of the partition it is handed)."""
        name = "test.spy"
        citation = "test"
        spends = True
        handed = []

        def partition(self, bins, ctx):
            Spy.handed.append(bins)
            ctx.data.laplace_partition(bins, ctx.budget)
            return bins

    pipe = Pipeline("laplace", twins.DuplicatingSorter(), Spy(), "group-mean", (0.3, 0.3, 0.4))
    with pytest.raises(InvalidParameter, match=r"the sorter twin.duplicating-sorter returned an invalid "
                                               r"partition \(partition order is not a permutation: bin \d+ "
                                               r"appears twice\); nothing of the next stage"):
        pipe.run(np.arange(40), 1.0, seed=1)
    assert Spy.handed == []          # the partitioner never ran, so nothing of its share was charged


@pytest.mark.parametrize("order, bounds, words", [
    ([0, 1, 2, 3], [0, 2, 4], "covers 4 bins"),                 # a lost bin
    ([0, 1, 2, 3, 4], [0, 2, 7], "bounds must increase"),       # a group beyond the domain
    ([0, 1, 2, 3, 4], [0, 3, 3, 5], "bounds must increase"),    # an empty group
    ([0, 1, 2, 3, 9], [0, 2, 5], "a bin outside the domain"),
])
def test_a_partitioners_bad_partition_is_stopped_before_the_finalizer(order, bounds, words):
    """Kills: the same validation after the partitioner (the finalizer would measure a bad partition)."""
    from dphist import Partition, Partitioner

    class Bad(Partitioner):
        name = "test.bad-partition"
        citation = "test"

        def partition(self, bins, ctx):
            return Partition(np.array(order), np.array(bounds), validate=False)

    with pytest.raises(InvalidParameter, match=f"the partitioner test.bad-partition .*{words}"):
        Pipeline(None, None, Bad(), "group-mean").run(np.arange(5), 1.0, seed=1)


def test_the_rounded_sham_has_integer_outputs_that_the_float_replay_skipped():
    """The twin's output is an integer vector: the coupled float replay cannot judge it, only the
    distributional one (kills: routing integer outputs back to "return" without a verdict)."""
    from dphist.kernel import SeededLaplace
    out = twins._RoundedLaplace(0.1).run(np.arange(8), 1.0, SeededLaplace(np.random.default_rng(0)))
    assert out.dtype.kind == "i"
    with pytest.raises(AssertionError, match="privacy loss of at least"):
        testing.check_vetted_mechanism(twins._RoundedLaplace(0.1), 0.5, np.arange(64), {})
    testing.check_vetted_mechanism(twins._RoundedLaplace(1.0), 0.5, np.arange(64), {})   # honest noise passes


def test_the_large_domain_leak_passes_a_kit_limited_to_16_bins():
    """Kills: running the kit's replay on small domains only (the default domain of 64 bins and the
    257-bin histogram are what make the kit see this twin)."""
    pipe = testing.harness_pipeline(twins.LargeDomainLeakFinalizer())
    small = {k: v for k, v in testing.example_histograms(16).items() if v.size <= 16}
    testing.check_pipeline(pipe, histograms=small)
    with pytest.raises(AssertionError, match="too little noise"):
        testing.check_pipeline(pipe)


def test_an_undeclared_vetted_mechanism_is_refused_and_flagged_under_the_switch():
    """Kills: the kernel's opt-in (custom running an undeclared mechanism), and the kit's check that a
    component relying on the global switch fails; a declared one is a warning-level finding."""
    x = np.arange(20)
    pipe = testing.harness_pipeline(twins.UndeclaredVettedFinalizer())
    with pytest.raises(InvalidParameter, match="without opting in"):
        pipe.run(x, 1.0, seed=1)
    enable_vetted_mechanisms()
    try:
        assert pipe.run(x, 1.0, seed=1).ledger.total == pytest.approx(1.0)
        with pytest.raises(AssertionError, match="without declaring it"):
            testing.check_pipeline(pipe)
    finally:
        enable_vetted_mechanisms(False)
    with pytest.warns(testing.VettedMechanismWarning, match="twin.scaled-laplace"):
        with pytest.raises(AssertionError):          # declared, but half the noise: the replay still fails it
            testing.check_component(twins.HalfScaleLaplaceFinalizer)


def test_an_honest_argmax_cut_passes_the_distributional_replay():
    """The replay is not simply failing every cut-point output: with the noise report noisy max needs
    (scale 2 / epsilon covers any one count changing by 1), the same mechanism passes."""
    testing.check_vetted_mechanism(twins._NoisyArgmaxCut(2.0), 0.5, testing.example_histograms(64)["power-law"], {})
