"""The conformance kit, the kernel and the pipeline reject every broken twin.

Each test names the mutation it kills: if the check it relies on were switched
off (``check_ledger`` reduced to ``return``, the reproducibility assertion
removed, the kernel's gate or the pipeline's books audit deleted, the
vetted-mechanism replay skipped, the sorter-direction check dropped), the kit
would accept the twin and the test would fail.
"""
import numpy as np
import pytest

from dphist import BudgetExceeded, Pipeline, PrivacyViolation, testing
from dphist.testing import twins

REJECTED = (AssertionError, PrivacyViolation, BudgetExceeded)


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
])
def test_each_kit_check_names_its_finding(twin, words):
    # kills: the vetted-mechanism replay, check_ledger, the reproducibility assert, the
    # sorter-direction check and the declared-parameters check, each switched off on its own
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
