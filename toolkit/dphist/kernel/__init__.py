"""The private kernel: true counts, measurement primitives, ledger, noise seam."""
from .ledger import Ledger, LedgerEntry
from .noise import NoiseSource, SeededLaplace
from .private import DataHandle, PrivateKernel, VettedMechanism, validate_counts, validate_epsilon
from .queries import ImplicitQueries

__all__ = ["DataHandle", "ImplicitQueries", "Ledger", "LedgerEntry", "NoiseSource", "PrivateKernel",
           "SeededLaplace", "VettedMechanism", "validate_counts", "validate_epsilon"]
