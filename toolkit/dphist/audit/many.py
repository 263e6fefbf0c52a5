"""Audit many presets at once: whole audits spread over worker processes, the longest first.

One audit splits its cases over the workers in rounds (:func:`dphist.audit.audit`), and a round
waits for its slowest case; auditing every preset one after another pays that wait, and a fresh
pool of workers, per preset.  Here each worker runs whole audits on one process each (an audit's
result does not depend on its ``workers``), and the audits are started longest first (the
classic longest-processing-time rule), so that no long audit is left running alone at the end.
The length of an audit is estimated from one run of the preset on the fast level's first pair:
public input, and the run also loads the preset's compiled kernels in this process before the
workers are forked from it.
"""
from __future__ import annotations

import time
from typing import Iterable, Mapping

from ..errors import InvalidParameter
from ..pipeline import supports_dims
from ..presets import make_algorithm
from .auditor import AuditResult, audit, check_workers
from .pairs import FAST_PAIRS, GRID_FAST_PAIRS
from .sampling import default_workers, forked_pool


def run_seconds(name: str) -> float:
    """Seconds of one run of preset ``name`` on the fast level's first pair (after a warm-up run)."""
    pipeline = make_algorithm(name)
    pairs = FAST_PAIRS if supports_dims(pipeline.dims, 1) else GRID_FAST_PAIRS
    counts = pairs[0].counts
    pipeline.run(counts, 1.0, seed=0)
    t = time.perf_counter()
    pipeline.run(counts, 1.0, seed=1)
    return (time.perf_counter() - t) * (len(pairs) + 1)   # one case per pair and the release case


def _audit_one(name: str, epsilon: float, seed, settings: dict) -> AuditResult:
    return audit(name, epsilon, seed=seed, workers=1, **settings)


def audit_presets(names: Iterable[str], epsilon: float = 1.0, *, seeds: Mapping[str, int] | None = None,
                  workers: int | None = None, **settings) -> dict[str, AuditResult]:
    """:func:`~dphist.audit.audit` of every preset in ``names``, ``workers`` audits at a time.

    ``seeds``: the seed of each preset's audit (a preset left out draws its seed from the operating
    system); the other keyword arguments go to every audit (``level="fast"``, ``samples`` ...).
    Each result equals ``audit(name, epsilon, seed=seeds[name], **settings)``'s.  Returns the
    results in the order of ``names``."""
    names = list(dict.fromkeys(names))
    seeds = dict(seeds or {})
    if not names:
        raise InvalidParameter("name at least one preset to audit")
    if unknown := sorted(set(seeds) - set(names)):
        raise InvalidParameter(f"seeds given for presets not audited: {', '.join(unknown)}")
    if "workers" in settings or "algorithm" in settings:
        raise InvalidParameter("audit_presets runs each audit on one process: give workers= to it, not per audit")
    check_workers(workers)
    order = sorted(names, key=run_seconds, reverse=True)
    with forked_pool(min(workers or default_workers(), len(names))) as pool:
        if pool is None:   # one worker, or no fork on this system
            done = {n: _audit_one(n, epsilon, seeds.get(n), settings) for n in order}
        else:
            futures = {n: pool.submit(_audit_one, n, epsilon, seeds.get(n), settings) for n in order}
            done = {n: f.result() for n, f in futures.items()}
    return {n: done[n] for n in names}
