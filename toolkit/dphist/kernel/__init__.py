"""The private kernel: true counts, measurement primitives, ledger, noise seam."""
from .ledger import Ledger, LedgerEntry
from .noise import ExactNoise, NoiseSource, SeededLaplace
from .private import (DataHandle, PrivateKernel, VettedMechanism, positive_number, validate_counts,
                      validate_epsilon)
from .queries import ImplicitQueries, IntervalQueries

__all__ = ["DataHandle", "ExactNoise", "ImplicitQueries", "IntervalQueries", "Ledger", "LedgerEntry", "NoiseSource",
           "PrivateKernel", "SeededLaplace", "positive_number", "VettedMechanism", "validate_counts", "validate_epsilon"]
