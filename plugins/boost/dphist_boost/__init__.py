"""dphist-boost: Hay, Rastogi, Miklau, Suciu, PVLDB 2010 (hierarchical and unattributed histograms)."""
from .branching import best_branching, qardaji_variance
from .budgets import level_epsilons
from .cover import answer_by_cover, cover
from .finalizers import TREE_NOTE, HierarchicalFinalizer, UnattributedFinalizer
from .inference import bottom_up, weighted_inference, zero_nonpositive_subtrees
from .isotonic import minmax_isotonic, pava, sort_and_round
from .tree import NoisyTree, level_sizes, tree_matrix, tree_sums

__all__ = ["HierarchicalFinalizer", "NoisyTree", "TREE_NOTE", "UnattributedFinalizer", "answer_by_cover",
           "best_branching", "bottom_up", "cover", "level_epsilons", "level_sizes", "minmax_isotonic", "pava",
           "qardaji_variance", "sort_and_round", "tree_matrix", "tree_sums", "weighted_inference",
           "zero_nonpositive_subtrees"]
