"""dphist-structurefirst: NoiseFirst and StructureFirst (Xu, Zhang, Xiao, Yang, Yu, Winslett,
"Differentially private histogram publication", ICDE 2012 / VLDB Journal 22(6) 2013)."""
from .group_trees import GroupTreesFinalizer
from .noisefirst import ConditionalMeanFinalizer, NoiseFirstPartitioner
from .structurefirst import StructureFirstPartitioner

__all__ = ["ConditionalMeanFinalizer", "GroupTreesFinalizer", "NoiseFirstPartitioner", "StructureFirstPartitioner"]
