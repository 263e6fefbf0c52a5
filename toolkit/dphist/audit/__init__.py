"""``dphist.audit``: a statistical privacy auditor (issue 12).

    from dphist.audit import audit
    result = audit("identity", epsilon=1.0, seed=1)
    result.passed, result.epsilon_lower_bound, result.witness

Modules, one idea each: :mod:`.pairs` (neighbouring histograms),
:mod:`.sampling` (batched and looped runs), :mod:`.events` (output features
and the adaptive choice of events), :mod:`.bounds` (Clopper-Pearson lower
bound on epsilon, Bonferroni), :mod:`.auditor` (the search, :class:`AuditResult`),
:mod:`.report` (JSON, Markdown, AUDIT.md), :mod:`.twins` (broken mechanisms the
auditor must catch), :mod:`.cli` (``dphist audit``).

A pass is evidence, not a proof: the audit only looks at the pairs and events
it tries, with finitely many samples.  A failure is a proof up to the stated
confidence: with probability at least ``1 - alpha`` the algorithm is not
epsilon-DP, and the witness says where.
"""
from .auditor import AuditResult, Witness, audit, resolve_algorithm
from .pairs import FAST_PAIRS, FULL_PAIRS, Pair

__all__ = ["AuditResult", "FAST_PAIRS", "FULL_PAIRS", "Pair", "Witness", "audit", "resolve_algorithm"]
