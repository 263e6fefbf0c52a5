"""The two honest prototypes (dphist.audit.prototypes.HONEST) pass the conformance kit and the DEFAULT
audit of the component (``audit(component, seed=...)``, every case run to the end: no early stop on a
pass).  The broken prototypes' tests are in ``test_audit_prototypes.py``; the two files are one check,
split so that ``make test``'s two workers (``--dist loadfile``) can share it.
"""
from __future__ import annotations

import pytest

from dphist import testing
from dphist.audit import audit, prototypes


@pytest.mark.parametrize("cls", prototypes.HONEST, ids=lambda c: c.name)
def test_honest_prototype_passes_the_kit_and_the_default_audit(cls):
    """Kills: an auditor that rejects everything it is given (the rejections of the broken prototypes
    in test_audit_prototypes.py would be empty)."""
    testing.check_component(cls)
    result = audit(cls(), seed=2026)
    assert result.passed, str(result)
    assert result.complete and len(result.pipelines) >= 1
