"""dphist-gs: GS (Kellaris & Papadopoulos, "Practical differential privacy via grouping and smoothing",
PVLDB 2013), reconstructed from the abstract and secondary descriptions (see dphist_gs.grouping)."""
from .grouping import FixedWidthPartitioner

__all__ = ["FixedWidthPartitioner"]
