"""The :class:`Dataset` record and name lookup."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import UnknownComponent
from ..kernel import validate_counts
from ..registry import default_registry


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


def names() -> list[str]:
    """Registered dataset names plus the histograms found in the data directories.

    DPBench sources found in a data directory are listed under their DPBench
    name (``SEARCHLOGS``) as well as their file name.
    """
    from .files import DPBENCH_FILES, directory_datasets
    found = directory_datasets()
    aliases = [k for k, stem in DPBENCH_FILES.items() if stem in found and k not in found]
    return default_registry.names("dataset") + sorted(found) + aliases


def load(name: str, **params) -> Dataset:
    """The dataset ``name``: a registered loader, an ``.npy`` file in a data directory, a DPBench
    name (``SEARCHLOGS``) whose file is in a data directory, or a path to a histogram file
    (``.npy``/``.csv``/``.txt`` counts; ``params`` are passed to :func:`.files.load_file`)."""
    from .files import DPBENCH_FILES, directory_datasets, dpbench, is_file_spec, load_file, load_npy_dataset
    if is_file_spec(name):
        return load_file(name, **params)
    found = directory_datasets()
    if name in found:
        return load_npy_dataset(name, found[name])
    if name in DPBENCH_FILES and DPBENCH_FILES[name] in found:
        return dpbench(name)
    try:
        loader = default_registry.get("dataset", name)
    except UnknownComponent as exc:
        if found:
            raise UnknownComponent(f"{exc} Data-directory datasets: {', '.join(sorted(found))}.") from None
        raise
    return loader(**params)
