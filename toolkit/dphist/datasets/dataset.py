"""The :class:`Dataset` record: a histogram over a public domain and its description."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..kernel import validate_counts


@dataclass(frozen=True)
class Dataset:
    """A histogram over a public domain, with what a reader needs to judge results on it."""

    name: str
    counts: np.ndarray          #: int64 counts, one per bin
    description: str            #: what is counted
    domain: str                 #: what the bins are (public)
    source: str = ""            #: where the data come from, and its licence
    shape: str = ""             #: shape class: time series, heavy tail, categorical, sparse...
    meta: dict = field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "counts", validate_counts(self.counts))

    @property
    def n(self) -> int:
        return int(self.counts.size)

    @property
    def scale(self) -> int:
        """Total count (evaluation only: algorithms never see it)."""
        return int(self.counts.sum())

    @property
    def zero_fraction(self) -> float:
        return float(np.mean(self.counts == 0))

    def summary(self) -> str:
        return (f"{self.name}: {self.n} bins ({self.domain}), scale {self.scale:,}, "
                f"{100 * self.zero_fraction:.1f}% zero bins; {self.shape}")
