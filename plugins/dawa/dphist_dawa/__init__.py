"""DAWA (Li, Hay, Miklau, Wang, "A Data- and Workload-Aware Algorithm for Range Queries
Under Differential Privacy", PVLDB 7(12), 2014) as dphist components.

* :class:`~dphist_dawa.l1_partition.L1Partitioner` (``dawa.l1``) - the private L1 partition
  (DAWA Section 3), exact, power-of-two (Kellaris et al.'s S~) and k-ary-tree variants;
* :class:`~dphist_dawa.greedy_h.GreedyHFinalizer` (``dawa.greedy-h``) - the workload-aware
  second stage (DAWA Section 4): weighted hierarchy chosen greedily, least squares;
* presets ``DAWA``, ``DAWA-approx``, ``GreedyH``.
"""
from .greedy_h import GreedyHFinalizer
from .l1_partition import L1Partitioner

__all__ = ["GreedyHFinalizer", "L1Partitioner"]
