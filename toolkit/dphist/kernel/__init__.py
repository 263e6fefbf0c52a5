"""The private kernel: true counts, measurement primitives, ledger, noise seam."""
from .ledger import Ledger, LedgerEntry
from .noise import ExactNoise, NoiseSource, SeededLaplace
from .private import (COUNT_CAP, DataHandle, PrivateKernel, VettedMechanism, enable_vetted_mechanisms,
                      positive_number, validate_counts, validate_epsilon, validate_grid,
                      vetted_mechanisms_enabled)
from .queries import ImplicitQueries, IntervalQueries, KroneckerQueries

__all__ = ["COUNT_CAP", "DataHandle", "ExactNoise", "ImplicitQueries", "IntervalQueries", "KroneckerQueries", "Ledger", "LedgerEntry", "NoiseSource",
           "PrivateKernel", "SeededLaplace", "positive_number", "VettedMechanism", "enable_vetted_mechanisms",
           "validate_counts", "validate_epsilon", "validate_grid", "vetted_mechanisms_enabled"]
