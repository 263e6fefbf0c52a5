"""``dphist.histogram``: from a column of records to counts with their public binning spec.

::

    h = dphist.histogram("trips.parquet", column="pickup_hour", bins="0:24:1",
                         user_id="rider", max_contributions=5, seed=1)
    h.counts, h.spec()                   # true counts (private input!) and what the bins are
    dphist.make_algorithm("AHP").run(h, epsilon=0.1)   # the release carries the spec and "5 records per person"

The counts are the *true* histogram, an input to a pipeline, never to be
published themselves.  Nothing here spends budget; the pipeline does.

**Privacy unit.**  Without ``user_id`` the histogram is *record level*: every
record is treated as a different person, so a person with several records
is protected only as far as each record is.  With ``user_id`` and
``max_contributions=k`` each person keeps at most ``k`` records
(:mod:`.bounding`), the histogram's sensitivity becomes ``k``, and a pipeline
run on it is calibrated to ``k`` records per person.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import binning as _binning
from ..errors import InvalidParameter
from ..kernel.persons import check_contributions, unit_text
from . import sources
from .bounding import Bounder, draw_key, person_hash

RECORD_LEVEL_NOTE = ("record level: each record is treated as a different person; if a person can have "
                     "several records, pass user_id= and max_contributions=")


@dataclass
class Histogram:
    """True counts (shape ``bins.shape``) of a column, and the public description of their bins."""

    counts: np.ndarray
    bins: _binning.Bins
    column: str | tuple[str, str]
    user_id: str | None = None
    max_contributions: int = 1
    notes: list[str] = field(default_factory=list)

    @property
    def size(self) -> int:
        """Number of bins (of the flattened counts a pipeline measures)."""
        return int(self.counts.size)

    @property
    def privacy_unit(self) -> str:
        return unit_text(self.max_contributions, person=self.user_id is not None)

    def spec(self) -> dict[str, Any]:
        """The public description for a release's metadata (JSON-ready; no count, no data)."""
        return {"column": self.column if isinstance(self.column, str) else list(self.column),
                "bins": self.bins.to_dict(), "shape": list(self.bins.shape), "labels": self.bins.labels(),
                "user_id": self.user_id, "privacy_unit": self.privacy_unit}

    def release_input(self) -> tuple[np.ndarray, int, dict]:
        """What :meth:`dphist.Pipeline.run` takes from a histogram: the counts in their shape (a 2-D
        ``Grid`` gives a 2-D histogram, run only by presets that support two dimensions), ``k``, the spec."""
        return self.counts, self.max_contributions, self.spec()


def _columns(column) -> tuple[str, ...]:
    cols = (column,) if isinstance(column, str) else tuple(column) if isinstance(column, (list, tuple)) else None
    if not cols or len(cols) > 2 or not all(isinstance(c, str) and c for c in cols):
        raise InvalidParameter(f"column must be a column name or a pair of names (2-D), got {column!r}")
    return cols


def _spec(bins, cols, outside, missing) -> _binning.Bins:
    if bins is None:
        raise InvalidParameter("bins are required and must be public: a domain and edges you choose, never "
                               "read from the data (dphist.records.private_bounds proposes one privately)")
    if len(cols) == 2:
        if isinstance(bins, _binning.Grid):
            return bins
        if not isinstance(bins, (list, tuple)) or len(bins) != 2:
            raise InvalidParameter("two columns need two binning specs (one per column) or a binning.Grid")
        return _binning.Grid(*(_binning.parse(b, outside=outside, missing=missing) for b in bins))
    spec = _binning.parse(bins, outside=outside, missing=missing)
    if isinstance(spec, _binning.Grid):
        raise InvalidParameter("a Grid needs two columns")
    return spec


def _rng(seed, rng) -> np.random.Generator:
    if rng is not None:
        if not isinstance(rng, np.random.Generator):
            raise InvalidParameter(f"rng must be a numpy Generator, got {type(rng).__name__}")
        return rng
    return np.random.default_rng(seed)   # seed None: OS randomness


def bin_chunk(spec: _binning.Bins, part: dict, cols: tuple[str, ...], row0: int) -> np.ndarray:
    """Bin indices of one chunk (-1: dropped), errors naming the column and row."""
    if isinstance(spec, _binning.Grid):
        return spec.index2(part[cols[0]], part[cols[1]], cols, row0)
    return spec.index(part[cols[0]], cols[0], row0)


def histogram(source, column, bins, *, user_id: str | None = None, max_contributions: int | None = None,
              outside: str | None = None, missing: str = "drop", seed: int | None = None,
              rng: np.random.Generator | None = None, spill_dir=None,
              row_chunk: int = sources.CHUNK_ROWS) -> Histogram:
    """Counts of ``column`` of ``source`` over public ``bins`` (module docstring).

    ``source``: a ``.csv`` / ``.parquet`` / ``.npy`` path or glob, a numpy array or dict of arrays,
    a pandas or Polars DataFrame / Series, an Arrow table, or a Dask DataFrame (binned partition
    by partition on its workers).  ``column``: a name, or two names for a 2-D histogram (``bins``
    then a pair of specs).  ``bins``: a :mod:`dphist.binning` spec or its string form
    (``"0:100:1"``).  ``outside`` / ``missing``: the policies of :mod:`dphist.binning` (defaults:
    clamp, drop).  ``user_id`` + ``max_contributions=k``: person-level bounding, each person's
    records chosen uniformly at random from ``rng`` / ``seed`` (None: the operating system).
    ``spill_dir``: where bounding spills rows that do not fit in memory (a temporary folder).
    Every parameter is checked before the first row is read.
    """
    cols = _columns(column)
    spec = _spec(bins, cols, outside, missing)
    if (user_id is None) != (max_contributions is None):
        raise InvalidParameter("person-level bounding needs both user_id= and max_contributions= "
                               f"(got user_id={user_id!r}, max_contributions={max_contributions!r})")
    k = 1
    if user_id is not None:
        k = check_contributions(max_contributions)
        if not isinstance(user_id, str) or not user_id:
            raise InvalidParameter(f"user_id must be a column name, got {user_id!r}")
        if user_id in cols:
            raise InvalidParameter(f"user_id {user_id!r} is also the binned column")
    key = draw_key(_rng(seed, rng)) if user_id is not None else 0
    if type(source).__module__.split(".")[0] == "dask":
        from .distributed import dask_counts
        counts = dask_counts(source, cols, spec, user_id, k, key, row_chunk)
    else:
        counts = local_counts(source, cols, spec, user_id, k, key, spill_dir, row_chunk)
    notes = [] if user_id is not None else [RECORD_LEVEL_NOTE]
    return Histogram(counts.reshape(spec.shape), spec, cols[0] if len(cols) == 1 else cols, user_id, k, notes)


def _numeric_columns(spec, cols) -> tuple[str, ...]:
    axes = (spec.rows, spec.cols) if isinstance(spec, _binning.Grid) else (spec,)
    return tuple(c for c, axis in zip(cols, axes) if isinstance(axis, _binning.Edges))


def local_counts(source, cols, spec, user_id, k, key, spill_dir=None, row_chunk=sources.CHUNK_ROWS) -> np.ndarray:
    """Counts of one source on this machine (a Dask partition is one such source)."""
    wanted = cols + ((user_id,) if user_id else ())
    numeric = _numeric_columns(spec, cols)
    if user_id is None:
        total = np.zeros(spec.size, dtype=np.int64)
        for row0, part in sources.chunks(source, wanted, row_chunk, numeric):
            if len(cols) == 1:
                spec.count(part[cols[0]], cols[0], row0, total)
            else:
                idx = bin_chunk(spec, part, cols, row0)
                total += np.bincount(idx[idx >= 0], minlength=spec.size)
        return total
    bounder = Bounder(k, spec.size, key, spill_dir=spill_dir)
    try:
        for row0, part in sources.chunks(source, wanted, row_chunk, numeric):
            bounder.add(person_hash(part[user_id], user_id, row0), bin_chunk(spec, part, cols, row0))
        return bounder.counts()
    finally:
        bounder.close()
