"""The CI privacy audit: every registered preset passes the fast audit (alpha = 1e-3, seeded).

The full audit (``make audit``, every pair, more samples) writes AUDIT.md.  The fast one uses
the six pairs of ``FAST_PAIRS`` and 300 estimation runs per side (batch-capable presets: 20,000).
Kills: a preset that leaks more than epsilon grossly (e.g. a partition read from the true counts,
see tests/test_audit.py for the twins this setting catches); a false alarm would fail it too.
"""
from __future__ import annotations

import zlib

import pytest

from dphist import default_registry
from dphist.audit import audit

PRESETS = sorted(default_registry.names("algorithm"))
UNAVAILABLE = default_registry.unavailable("algorithm")   # need a plugin that is not installed


@pytest.mark.parametrize("name", PRESETS)
def test_preset_passes_fast_audit(name):
    if name in UNAVAILABLE:
        pytest.skip(f"{name} {UNAVAILABLE[name]}")
    result = audit(name, epsilon=1.0, level="fast", seed=zlib.crc32(name.encode()))
    assert result.passed, str(result)
    assert result.tests > 0 and all(row["pair"] for row in result.rows)
