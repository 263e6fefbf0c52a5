"""Privacy-audit speed targets (issue 12).

* ``identity`` at eps = 1 with 10^6 estimation runs per side and pair (every pair of the full
  family: 15 pairs, 2 x (10^6 + 5 x 10^4) runs each, batched sampling): under 10 s.
* The broken half-scale Laplace finalizer (dphist.testing.twins, declared batch-capable by
  dphist.audit.twins.BatchedHalfScaleLaplace), default audit of the component:
  witness found in under 30 s (the run asserts the failure).
* The fast audit of every registered preset (what tests/test_audit_presets.py runs): under 180 s.
"""
from dphist import default_registry
from dphist.audit import audit, twins


def _identity():
    r = audit("identity", 1.0, samples=10**6, seed=1)
    assert r.passed and r.samples == 10**6 and r.pairs == 15, r


def _half_scale():
    r = audit(twins.BatchedHalfScaleLaplace(), seed=3)
    assert not r.passed and r.witness is not None, r


def _all_fast():
    names = sorted(default_registry.available_names("algorithm"))
    results = [audit(n, level="fast", seed=i) for i, n in enumerate(names)]
    assert all(r.passed for r in results), [str(r) for r in results if not r.passed]


CASES = [
    {"name": "audit identity, eps 1, 10^6 samples per side and pair, 15 pairs", "target": 10.0,
     "setup": tuple, "run": _identity, "repeat": 2},
    {"name": "half-scale Laplace twin caught (default audit of the component)", "target": 30.0,
     "setup": tuple, "run": _half_scale, "repeat": 2},
    {"name": "fast audit of every registered preset (31)", "target": 180.0,
     "setup": tuple, "run": _all_fast, "repeat": 1, "warmup": False},
]
