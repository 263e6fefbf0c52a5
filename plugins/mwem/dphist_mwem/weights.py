"""The MWEM loop and its multiplicative-weights update (Hardt, Ligett, McSherry, NIPS 2012, Algorithm 1).

One round ``t`` of MWEM:

1. **select** a query ``q_t`` of the workload by the exponential mechanism with score
   ``|q(x) - q(A_{t-1})|`` (sensitivity 1 for a range count);
2. **measure** ``m_t = q_t(x) + Lap(1 / eps_measure)``;
3. **update**: ``A(i) <- A(i) exp(q(i) (m - q(A)) / (2 T))``, renormalised to the total ``T``, for
   every measurement so far, repeated ``updates`` times (the paper's Section 3.1 improvement
   "iterate the update over all measurements"; DPBench's ``mwemND_engine`` with
   ``updateround = 100``).

``A_0`` is uniform with total ``T``.  The estimate is the last ``A_T`` (DPBench; the paper's
Algorithm 1 returns the average of the ``A_t``, and its Section 3.1 notes the last iterate works
better in practice).  As in DPBench, a measured query leaves the candidates (the paper's Algorithm 1
may select a query again); DPBench refuses more rounds than queries, we cap the rounds at the
workload's size (:func:`effective_rounds`).

A total below 1 (an empty histogram, a negative noisy total) is raised to 1: post-processing in the
private calibration; in the dpbench one it replaces the reference code's division by zero.

Select and measure are callables, so the same loop runs on the kernel's primitives (the private
calibration) and inside the reference calibration's vetted mechanism (true total).
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np
from numba import njit

#: bound on |m - q(A)| / (2 T) in one update: exp(30) = 1e13 keeps every weight finite when a noisy
#: total is tiny against the noisy answers (only then is it reached; DPBench's code would overflow)
MAX_EXPONENT = 30.0


@njit(cache=True, nogil=True)
def _raw_sum(est):
    total = 0.0
    for i in range(est.size):
        total += est[i]
    return total


@njit(cache=True, nogil=True)
def _mw_passes(est, lo, hi, answers, passes, total, max_exponent):
    # est holds weights whose true values are scale * est, with scale = T / raw and raw the sum of est.
    # An update multiplies its range by f in O(hi - lo) and moves raw by (f - 1) * inside.  When that
    # would lose more than half of raw (f small on a range holding most of the mass), raw is summed
    # again instead: "raw - (1 - f) inside" cancels catastrophically there (the audit's spike pair
    # drifted to a total of 90 with it).  raw is summed again after every pass (O(n) per pass, not per
    # update): the raw weights can shrink by orders of magnitude over the passes while an incremental
    # raw would keep its absolute rounding errors, so its relative error would grow (1e-5 after 100
    # passes on that pair).
    n = est.size
    raw = _raw_sum(est)
    for _ in range(passes):
        raw = _raw_sum(est)
        for r in range(lo.size):
            inside = 0.0
            for i in range(lo[r], hi[r]):
                inside += est[i]
            z = (answers[r] - total / raw * inside) / (2.0 * total)
            z = min(max(z, -max_exponent), max_exponent)
            f = math.exp(z)
            for i in range(lo[r], hi[r]):
                est[i] *= f
            moved = raw + (f - 1.0) * inside
            raw = moved if moved >= 0.5 * raw else _raw_sum(est)
            if raw <= 0.0 or not math.isfinite(raw):   # all mass underflowed: restart from uniform
                for i in range(n):
                    est[i] = 1.0
                raw = float(n)
            if raw < 1e-150 or raw > 1e150:             # keep the raw weights in range
                for i in range(n):
                    est[i] *= total / raw
                raw = total
    for i in range(n):
        est[i] *= total / raw


def multiplicative_weights(estimate, lo, hi, answers, passes: int, total: float) -> np.ndarray:
    """``passes`` sweeps of the MW update over the measured ranges ``[lo, hi)`` with noisy ``answers``.

    Matches DPBench's ``_update`` (``A * exp(q * (m - q(A)) / (2 T))`` then rescale to ``T``) update by
    update; ``T`` is the estimate's total, kept fixed.
    """
    est = np.array(estimate, dtype=np.float64, copy=True)
    _mw_passes(est, np.asarray(lo, dtype=np.int64), np.asarray(hi, dtype=np.int64),
               np.asarray(answers, dtype=np.float64), int(passes), float(total), MAX_EXPONENT)
    return est


def effective_rounds(rounds: int, n_queries: int) -> int:
    """Rounds actually run: at most one per query of the workload (public: the workload is)."""
    return max(1, min(int(rounds), int(n_queries)))


def mwem_loop(k: int, total: float, lo: np.ndarray, hi: np.ndarray, rounds: int, updates: int,
              select: Callable[[np.ndarray, np.ndarray], int], measure: Callable[[int, int], float]) -> np.ndarray:
    """MWEM over ``k`` units with workload ranges ``[lo, hi)`` (in units), starting from ``total``.

    ``select(estimate, candidates)`` returns a position in ``candidates`` (indices into the
    workload); ``measure(lo, hi)`` returns the noisy sum of units ``[lo, hi)``.  Everything else is
    arithmetic on public values.
    """
    total = max(float(total), 1.0)   # weights need a positive total (an empty histogram's is 0)
    estimate = np.full(k, total / k)
    open_ = np.ones(lo.size, dtype=bool)
    chosen: list[int] = []
    answers: list[float] = []
    for _ in range(rounds):
        candidates = np.flatnonzero(open_)
        j = int(candidates[select(estimate, candidates)])
        open_[j] = False
        chosen.append(j)
        answers.append(float(measure(int(lo[j]), int(hi[j]))))
        estimate = multiplicative_weights(estimate, lo[chosen], hi[chosen], answers, updates, total)
    return estimate


def range_errors(unit_sums: np.ndarray, estimate: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``|q(x) - q(A)|`` for every range, from prefix sums of ``x - A`` (O(k + m))."""
    diff = np.concatenate(([0.0], np.cumsum(np.asarray(unit_sums, dtype=np.float64) - estimate)))
    return np.abs(diff[hi] - diff[lo])
