"""Eight broken prototypes (dphist.audit.prototypes) are each rejected by the conformance kit or by
the DEFAULT audit of the component; the two honest ones pass both (their audits, which run every case
to the end, are in ``test_audit_prototypes_honest.py``: a file of its own, so that pytest-xdist's
``--dist loadfile`` can give it to the other worker).

No pair is written for any prototype: the audit is ``audit(component, seed=...)``, its default
level, pipelines, families, search, confirmations and release-mode cases.  Each test names the
part of the auditor whose removal lets its prototype through (checked by hand: see the report
of the change that added them).
"""
from __future__ import annotations

import pytest

from dphist import BudgetExceeded, PrivacyViolation, testing
from dphist.audit import audit, prototypes

REJECTED = (AssertionError, PrivacyViolation, BudgetExceeded)

#: prototype -> the part of the audit that catches it (the mutation the test kills)
CATCHES = {
    prototypes.SSESplitPartitioner: "structured pairs with spikes at both ends (ends*) / the search",
    prototypes.NoisyMinPartitioner: "partition events on the fixed pairs",
    prototypes.GroupScaledFinalizer: "the finalizer's multi-bin pipelines (harness.audit_pipelines)",
    prototypes.PeekingSorter: "the sorter followed by groups of 2 and 4 (harness.FixedWidth)",
    prototypes.UnderNoisedInitializer: "the initializer with the whole budget (harness.PublishNoisy) "
                                       "and the confirmation batch",
    prototypes.ReleaseOnlyLeakFinalizer: "release-mode cases (harness.ReleaseNoise)",
    prototypes.LargeDomainLeakPartitioner: "structured pairs of more than 16 bins",
    prototypes.TenthNoiseFinalizer: "bin and total events on the fixed pairs",
}


def _kit_rejects(cls) -> str | None:
    try:
        testing.check_component(cls)
    except REJECTED as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


@pytest.mark.parametrize("cls", prototypes.BROKEN, ids=lambda c: c.name)
def test_broken_prototype_is_rejected_by_the_kit_or_the_default_audit(cls):
    """Kills, per prototype, the audit part named in CATCHES (when the kit does not reject it)."""
    if _kit_rejects(cls) is not None:
        return
    result = audit(cls(), seed=2026)
    assert not result.passed, f"{cls.name} passed the default audit ({CATCHES[cls]}): {result}"
    assert result.witness is not None and result.witness.epsilon_lower_bound > 1.0


def test_release_only_leak_is_invisible_to_a_research_mode_audit():
    """The release-mode cases are the detector: the same audit in research mode alone passes it.

    Kills: release-mode cases that run in research mode (a ReleaseNoise declaring "research").
    """
    cls = prototypes.ReleaseOnlyLeakFinalizer
    assert audit(cls(), seed=7, level="fast", noise="float").passed
    caught = audit(cls(), seed=7, level="fast")
    assert not caught.passed and caught.witness.mode == "release", str(caught)


def test_group_scaled_finalizer_leaks_only_in_multi_bin_pipelines():
    """Kills: an audit of a finalizer in its singleton harness only."""
    r = audit(prototypes.GroupScaledFinalizer(), seed=3, level="fast")
    assert not r.passed and ("groups of" in r.witness.pipeline or "whole" in r.witness.pipeline), str(r)
