"""Optimal segmentation of an ordered sequence into contiguous groups minimising a sum of group costs.

Every partitioner of the AHP / SORTaki / DAWA family solves

    min over segmentations G of  sum_{g in G} cost(g),   g a run of consecutive units,

on a public (noisy, or noisy-cost) sequence.  This package is the one engine for it; plugins
choose a cost (:mod:`.costs`) and a search mode (:mod:`.search`):

=======================================  ====================  =========================================
mode                                     function              time (k units, O(1) cost)
=======================================  ====================  =========================================
(a) every run of units                   ``optimal``           O(k^2)  (Jagadish et al. 1998)
(b) runs of 2^j units                    ``optimal(lengths=    O(k log k)  (DAWA, SORTaki Alg. 6 scalable)
                                         "power-of-two")``
(c) aligned subtrees of a b-ary tree     ``tree``              O(k)  (Kellaris et al. Sec. 6)
(d) exactly k groups                     ``k_groups``          O(K k log k) if Monge, else O(K k^2)
(e) one greedy scan with a bound         ``greedy``            O(k); AHP's look-ahead bound: O(k log k)
                                                               typical on sorted values (AHP Alg. 3)
=======================================  ====================  =========================================

A *unit* is a run of positions given by ``bounds`` (a group of an earlier partition); a group is a
run of units, and its cost is that of its positions.  Results are :class:`Segmentation` objects
whose ``bounds`` (unit indices from 0 to k) go straight to :meth:`dphist.Partition.merge`.

Ties (exact float equality of totals; they do occur, e.g. a sorted run of thresholded zeros of
272 bins splits as 256 + 16 or 16 + 256 in the power-of-two mode) are broken by one documented
rule per mode, pinned by tests.  The rules are those of the DP copies the engine replaces (AHP,
SORTaki, DAWA); changing one changes recorded releases (``plugins/*/tests/test_release_fixture.py``).
One exception to "one way": SORTaki's power-of-two DPP kept the shortest last group where DAWA's
(and DAWA's C code) keep the longest; ``optimal(longest_on_ties=False)`` serves SORTaki:

==================================  =============================================================
mode                                among equal totals
==================================  =============================================================
(a) all runs, (b) power-of-two,     the last group with the earliest start (the longest),
(d) exactly k                       recursively; (b) takes ``longest_on_ties=False`` for the
                                    shortest (SORTaki's DPP in the power-of-two variant)
(c) tree                            the children, when they cost exactly what their parent costs
(e) greedy                          a new group (a unit joins only when strictly cheaper: "<" in
                                    AHP Algorithm 3 line 8 and SORTaki Algorithm 5 line 5)
==================================  =============================================================

Compiled: the loops are numba kernels (:mod:`.kernels`); numba is a dependency of the core (the
kernel's exact samplers use it too).  Measured before keeping it (2 cores, shared machine;
``benchmarks/bench_segmentation.py``): the exact DP on 8,192 values with SSE + 2/|g| takes 0.046 s
compiled and 0.43 s as the same DP in numpy, vectorised over the starts of each end (9x); the
power-of-two DP on 500,000 values takes 0.062 s compiled, while numpy, which cannot vectorise
across ends (each needs the previous ones), took 0.91 s for the first 20,000 ends alone (about
23 s extrapolated, measured under load).  A pure-numpy core would miss ``AHP-optimal``'s and
``sDAHP``'s recorded times by these factors.

Interpreted: mode (e) with the look-ahead bound on sorted values (AHP's greedy grouping) runs as plain
Python on up to ``search.INTERPRETED_MAX`` positions while numba is not imported yet (:mod:`._lookahead`,
the same source the kernels compile; the same cuts and total, bit for bit): ``dphist run -a AHP`` on
4,096 bins then never imports numba (about 0.05 s of scan against 0.3-0.5 s for numba's import and cache).
Compiled, the same scan reads sorted values through their order (:func:`.search.greedy_lookahead_taken`: no
gathered copy, prefix sums without the run of zeros).
``import dphist.segmentation`` itself imports no numba (:mod:`._lazy`).

Threads: the exact mode (a) on at least ``search.PARALLEL_MIN_UNITS`` units runs on every core
(:mod:`.parallel`: ``threads=``, ``DPHIST_THREADS``, ``NUMBA_NUM_THREADS``).  Every candidate's total is
computed by the same arithmetic and compared in the same order as on one thread, so the tie rules
above and every release are unchanged by the thread count; ``benchmarks/bench_parallel.py`` measures
the speed-up on 2 cores.  The power-of-two mode (b) with streamed windows on at least
``search.STREAM_THREADS_MIN`` units counts the next block's windows on one thread while the searches run
over the current block on another (same numbers: each block in order for the stream and for every search).

Privacy: the engine is arithmetic on the values it is given.  Running it on H~ (noisy counts) is
post-processing; running it on true counts is allowed only inside the kernel, whose
:meth:`dphist.kernel.DataHandle.noisy_min_segmentation` perturbs every candidate's cost (through
:meth:`Cost.then`) and returns only the cut points (DAWA's ``calibration="noisy-min"``).
"""
from .costs import (Cost, GroupCost, IntervalCost, L1Deviation, Perturbed, RelativeError, SSEPenalty,
                    as_cost)
from . import parallel
from .search import (Segmentation, greedy, greedy_lookahead_taken, k_groups, lookahead_bounds, monge_violation,
                     optimal, power_of_two_shared, total_cost, tree, units_of)

__all__ = [
    "Cost", "GroupCost", "IntervalCost", "L1Deviation", "Perturbed", "RelativeError", "SSEPenalty",
    "Segmentation", "as_cost", "greedy", "greedy_lookahead_taken", "parallel", "k_groups", "lookahead_bounds", "monge_violation", "optimal",
    "power_of_two_shared", "total_cost", "tree", "units_of",
]
