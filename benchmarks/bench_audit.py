"""Privacy-audit speed targets.

* ``identity`` at eps = 1 with 10^6 estimation runs per side and pair (every pair of the
  ``FULL_PAIRS`` family given as its own pairs: 15 pairs, 2 x (10^6 + 5 x 10^4) runs each,
  batched sampling): under 10 s.
* The broken half-scale Laplace finalizer (dphist.testing.twins, declared batch-capable by
  dphist.audit.twins.BatchedHalfScaleLaplace), default audit of the component:
  witness found in under 30 s (the run asserts the failure).
* The default audit of one component, on the honest prototypes that run every case (a pass):
  the least-squares finalizer (its six pipelines) and the balanced-split partitioner: under 60 s.
* ``--thorough`` on the same two: under 300 s.
* The fast audit of every registered preset (what tests/test_audit_presets.py runs: ``audit_presets``, whole
  audits spread over the two workers, longest first): under 180 s.
"""
from dphist import default_registry
from dphist.audit import FULL_PAIRS, audit, audit_presets, prototypes, twins


def _identity():
    r = audit("identity", 1.0, samples=10**6, pairs=FULL_PAIRS, seed=1)
    assert r.passed and r.samples == 10**6 and r.pairs == 15, r


def _half_scale():
    r = audit(twins.BatchedHalfScaleLaplace(), seed=3)
    assert not r.passed and r.witness is not None, r


def _component(cls, level):
    def run():
        r = audit(cls(), seed=11, level=level)
        assert r.passed and r.complete, r
    return run


def _all_fast():
    names = sorted(default_registry.available_names("algorithm"))
    results = audit_presets(names, level="fast", seeds={n: i for i, n in enumerate(names)}).values()
    assert all(r.passed for r in results), [str(r) for r in results if not r.passed]


CASES = [
    {"name": "audit identity, eps 1, 10^6 samples per side and pair, 15 pairs", "target": 10.0,
     "setup": tuple, "run": _identity, "repeat": 2},
    {"name": "half-scale Laplace twin caught (default audit of the component)", "target": 30.0,
     "setup": tuple, "run": _half_scale, "repeat": 2},
    {"name": "default audit of a finalizer (least squares, 6 pipelines), a pass", "target": 60.0,
     "setup": tuple, "run": _component(prototypes.LeastSquaresFinalizer, "default"), "repeat": 1,
     "warmup": False},
    {"name": "default audit of a partitioner (balanced split, exponential mechanism), a pass", "target": 60.0,
     "setup": tuple, "run": _component(prototypes.BalancedSplitPartitioner, "default"), "repeat": 1,
     "warmup": False},
    {"name": "thorough audit of a finalizer (least squares, 6 pipelines), a pass", "target": 300.0,
     "setup": tuple, "run": _component(prototypes.LeastSquaresFinalizer, "thorough"), "repeat": 1,
     "warmup": False},
    {"name": "thorough audit of a partitioner (balanced split), a pass", "target": 300.0,
     "setup": tuple, "run": _component(prototypes.BalancedSplitPartitioner, "thorough"), "repeat": 1,
     "warmup": False},
    {"name": f"fast audit of every registered preset ({len(default_registry.available_names('algorithm'))})", "target": 180.0,
     "setup": tuple, "run": _all_fast, "repeat": 1, "warmup": False},
]
