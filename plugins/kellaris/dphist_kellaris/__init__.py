"""dphist-kellaris: Kellaris, Papadopoulos, Papadias, "Engineering Methods for Differentially Private
Histograms: Efficiency Beyond Utility" (IEEE TKDE).

* :mod:`.s2` - ``kellaris.s2`` / ``kellaris.s2-initial``: smoothing with the squared error metric in
  O(N^2) with the bias correction (Section 5.1), or restricted to full subtrees (Section 6);
* :mod:`.pruned_tree` - ``kellaris.pruned-tree``: hierarchical smoothing's pruned aggregate tree with
  averaged group roots (Section 6, Theorem 6.1);
* :mod:`.presets` - the 15 schemes of Table 1 (:func:`scheme`, :data:`TABLE_1`); S_1, S~, MM and PMM
  are the dawa plugin's ``dawa.l1`` and ``dawa.greedy-h``, H the boost plugin's
  ``boost.hierarchical``, all used by registry name.
"""
from .presets import TABLE_1, parse_label, scheme
from .pruned_tree import PrunedTreeFinalizer
from .s2 import S2OnInitialPartitioner, S2Partitioner, s2_cost, s2_grouping, s2_penalty

__all__ = ["TABLE_1", "PrunedTreeFinalizer", "S2OnInitialPartitioner", "S2Partitioner", "parse_label",
           "s2_cost", "s2_grouping", "s2_penalty", "scheme"]
