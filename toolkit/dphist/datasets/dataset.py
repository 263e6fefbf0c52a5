"""The :class:`Dataset` record: a histogram over a public domain and its description."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..kernel import validate_grid


@dataclass(frozen=True)
class Dataset:
    """A histogram over a public domain, with what a reader needs to judge results on it."""

    name: str
    counts: np.ndarray          #: int64 counts, one per bin (a grid of cells for a 2-D dataset)
    description: str            #: what is counted
    domain: str                 #: what the bins are (public)
    source: str = ""            #: where the data come from, and its licence
    shape: str = ""             #: shape class: time series, heavy tail, categorical, sparse...
    meta: dict = field(default_factory=dict)

    def __post_init__(self):
        flat, grid = validate_grid(self.counts)
        object.__setattr__(self, "counts", flat.reshape(grid))

    @property
    def n(self) -> int:
        return int(self.counts.size)

    @property
    def grid_shape(self) -> tuple[int, ...]:
        """The counts' shape: ``(n,)`` for a vector, ``(n1, n2)`` for a 2-D histogram."""
        return tuple(self.counts.shape)

    @property
    def scale(self) -> int:
        """Total count (evaluation only: algorithms never see it)."""
        return int(self.counts.sum())

    @property
    def zero_fraction(self) -> float:
        return float(np.mean(self.counts == 0))

    def summary(self) -> str:
        cells = f"{self.n} bins" if self.counts.ndim == 1 else "x".join(map(str, self.counts.shape)) + " cells"
        return (f"{self.name}: {cells} ({self.domain}), scale {self.scale:,}, "
                f"{100 * self.zero_fraction:.1f}% zero bins; {self.shape}")
