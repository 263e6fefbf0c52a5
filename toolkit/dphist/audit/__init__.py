"""``dphist.audit``: a statistical privacy auditor.

    from dphist.audit import audit
    result = audit("identity", epsilon=1.0, seed=1)              # level="default"
    result.passed, result.epsilon_lower_bound, result.witness
    audit(MyPartitioner(), level="thorough")                     # a component, in its pipelines
    audit("AHP", pairs=["0,3,5:+1@2"], time_budget=30)           # your own pairs
    audit_presets(["H", "Hb", "AHP"], level="fast", seeds={"H": 1})  # whole audits over the workers

Modules, one idea each: :mod:`.pairs` (neighbouring histograms, the families,
``"0,3,5:+1@2"``), :mod:`.search` (random restarts and local moves over pairs),
:mod:`.harness` (the pipelines a component is audited in; release-mode noise),
:mod:`.sampling` (batched and looped runs), :mod:`.events` (output features
and the adaptive choice of events), :mod:`.bounds` (Clopper-Pearson lower
bound on epsilon, Bonferroni), :mod:`.auditor` (levels, cases, search,
confirmations, :class:`AuditResult`), :mod:`.many` (many presets' audits
spread over the workers, longest first), :mod:`.report` (JSON, Markdown,
AUDIT.md), :mod:`.twins` and :mod:`.prototypes` (broken mechanisms the auditor
must catch, honest ones it must pass), :mod:`.cli` (``dphist audit``).

A pass is evidence, not a proof: the audit only looks at the pairs and events
it tries, with finitely many samples.  A failure is a proof up to the stated
confidence: with probability at least ``1 - alpha`` the algorithm is not
epsilon-DP, and the witness says where.
"""
from .auditor import LEVELS, AuditResult, Witness, audit, resolve_algorithm
from .many import audit_presets
from .pairs import FAST_PAIRS, FULL_PAIRS, STRUCTURED_PAIRS, THOROUGH_PAIRS, Pair, parse_pair

__all__ = ["AuditResult", "FAST_PAIRS", "FULL_PAIRS", "LEVELS", "Pair", "STRUCTURED_PAIRS", "THOROUGH_PAIRS",
           "Witness", "audit", "audit_presets", "parse_pair", "resolve_algorithm"]
