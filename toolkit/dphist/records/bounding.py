"""Contribution bounding: each person keeps at most ``k`` records, chosen without looking at values.

Person-level privacy (``user_id=``, ``max_contributions=k``): neighbouring tables
differ in *all* the records of one person.  Unbounded, one person could move a
histogram arbitrarily far; after bounding, by at most ``k`` in L1 (each kept record
lands in at most one bin), which is the sensitivity the kernel then charges
(:mod:`dphist.kernel.persons`).  The same bound-then-aggregate step is the first
stage of Google's differential-privacy libraries ("contribution bounding",
Wilson et al., PoPETs 2020, Section 3) and of OpenDP's and Tumult's person-level
counts.

Which records survive: for every person, a uniformly random subset of
``min(k, n_person)`` records.  Each record gets a random position (a random
permutation of the rows, from the run's seeded :class:`numpy.random.Generator`
or the operating system), and a person keeps the ``k`` records with the lowest
positions.  The choice depends only on the person's *number* of records and
the randomness, never on the values, so the kept records are an unbiased
sample of each person's records and the only bias is the one of dropping
persons' surplus records (measured in ``notebooks/04-records-to-release.ipynb``).

How (bounded memory, vectorised): a person is a 64-bit hash of the id (integers:
the splitmix64 mixer; text: :func:`pandas.util.hash_array`).  Rows are buffered
as (hash, bin) pairs; beyond ``memory_rows`` they are spilled to ``PARTS`` files by
the hash's low bits, so every person's rows are in one part.  Each part is then
permuted at random and sorted by one ``uint64`` key, the hash's high 42 bits
above the row's 22-bit position in the part (``numpy.sort`` of plain integers,
several times faster than a lexicographic sort); a row's rank inside its person
is its position minus its person's first position.  Two persons whose 42-bit
hashes collide in one part share one allowance of ``k`` (the expected number of
such pairs, ``persons_in_part**2 / 2**43``, is below one for 2 million persons
per part): that drops more records, never keeps more than ``k`` of a person.
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import numpy as np

from ..errors import InvalidParameter

#: spill files when the rows do not fit in memory (a power of two: selected by the hash's low bits)
PARTS = 64
#: rows held in memory before spilling (12 bytes each: hash and bin)
MEMORY_ROWS = 1 << 23
_POS_BITS = 22                      # positions inside a sorted block: blocks of at most 2^22 rows
_MASK64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def person_hash(ids: np.ndarray, column: str, row0: int = 0) -> np.ndarray:
    """uint64 hash of every person id; a missing id is an error naming the column and row."""
    ids = np.asarray(ids)
    kind = ids.dtype.kind
    if kind == "f":
        bad = np.isnan(ids)
        if bad.any():
            raise InvalidParameter(f"user id column {column!r}, row {row0 + int(np.flatnonzero(bad)[0])}: the id "
                                   "is missing; every record needs a person (drop or fill those rows first)")
        if np.any(ids != np.round(ids)):
            raise InvalidParameter(f"user id column {column!r} holds fractions; ids must be integers or text")
        ids = ids.astype(np.int64)
        kind = "i"
    if kind in "iub":
        return _splitmix64(ids.astype(np.int64).view(np.uint64))
    if kind in "OUS":
        missing = np.array([v is None or (isinstance(v, float) and v != v) for v in ids], dtype=bool)
        if missing.any():
            raise InvalidParameter(f"user id column {column!r}, row {row0 + int(np.flatnonzero(missing)[0])}: the "
                                   "id is missing; every record needs a person (drop or fill those rows first)")
        from pandas.util import hash_array
        return hash_array(ids.astype(object), categorize=False).astype(np.uint64, copy=False)
    raise InvalidParameter(f"user id column {column!r} has type {ids.dtype}; ids must be integers or text")


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """Steele, Lea & Flood's splitmix64 finaliser (OOPSLA 2014), vectorised: a bijection of uint64."""
    with np.errstate(over="ignore"):
        z = x + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def bounded_bins(hashes: np.ndarray, bins: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """The ``bins`` of the rows kept when each hash keeps at most ``k`` uniformly random rows."""
    m = hashes.size
    if m == 0:
        return bins[:0]
    if m > 1 << _POS_BITS:              # blocks of 2^22 rows; a person's rows may span blocks: split by hash
        part = (hashes >> np.uint64(21)) & np.uint64(PARTS - 1)
        order = np.argsort(part.astype(np.uint16), kind="stable")
        edges = np.searchsorted(part[order], np.arange(PARTS + 1, dtype=np.uint64))
        if np.diff(edges).max() == m:   # one person (or hash prefix) holds them all: a lexicographic sort
            return _bounded_lexsort(hashes, bins, k, rng)
        return np.concatenate([bounded_bins(hashes[order[a:b]], bins[order[a:b]], k, rng)
                               for a, b in zip(edges[:-1], edges[1:])])
    perm = rng.permutation(m)
    key = (hashes[perm] & (_MASK64 << np.uint64(_POS_BITS))) | np.arange(m, dtype=np.uint64)
    key.sort()
    pos = (key & np.uint64((1 << _POS_BITS) - 1)).astype(np.int64)
    person = key >> np.uint64(_POS_BITS)
    first = np.empty(m, dtype=bool)
    first[0] = True
    np.not_equal(person[1:], person[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    rank = np.arange(m) - np.repeat(starts, np.diff(np.append(starts, m)))
    return bins[perm[pos[rank < k]]]


def _bounded_lexsort(hashes, bins, k, rng):
    order = np.lexsort((rng.permutation(hashes.size), hashes))
    h = hashes[order]
    first = np.r_[True, h[1:] != h[:-1]]
    starts = np.flatnonzero(first)
    rank = np.arange(h.size) - np.repeat(starts, np.diff(np.append(starts, h.size)))
    return bins[order[rank < k]]


class Bounder:
    """Collects (person hash, bin) rows chunk by chunk; :meth:`counts` bounds and counts them.

    Memory stays below ``memory_rows`` buffered rows; beyond, rows go to spill
    files in ``spill_dir`` (a temporary folder, removed at the end).
    """

    def __init__(self, k: int, size: int, rng: np.random.Generator, memory_rows: int = MEMORY_ROWS,
                 spill_dir=None):
        self.k, self.size, self.rng = k, size, rng
        self.memory_rows = int(memory_rows)
        self.spill_dir = spill_dir
        self._h: list[np.ndarray] = []
        self._b: list[np.ndarray] = []
        self._rows = 0
        self._tmp: Path | None = None
        self.spilled = 0                # rows written to spill files (reported by the benchmark)

    def add(self, hashes: np.ndarray, bins: np.ndarray) -> None:
        self._h.append(np.asarray(hashes, dtype=np.uint64))
        self._b.append(np.asarray(bins, dtype=np.int32))
        self._rows += hashes.size
        if self._rows >= self.memory_rows:
            self._spill()

    def _spill(self) -> None:
        if self._tmp is None:
            self._tmp = Path(tempfile.mkdtemp(prefix="dphist-bound-", dir=self.spill_dir))
        h, b = np.concatenate(self._h), np.concatenate(self._b)
        self._h, self._b, self._rows = [], [], 0
        part = (h & np.uint64(PARTS - 1)).astype(np.uint16)
        order = np.argsort(part, kind="stable")      # radix sort of 16-bit keys
        edges = np.searchsorted(part[order], np.arange(PARTS + 1))
        h, b = h[order], b[order]
        for p in range(PARTS):
            a, z = edges[p], edges[p + 1]
            if z > a:
                with open(self._tmp / f"{p}.h", "ab") as fh:
                    h[a:z].tofile(fh)
                with open(self._tmp / f"{p}.b", "ab") as fb:
                    b[a:z].tofile(fb)
        self.spilled += h.size

    def counts(self) -> np.ndarray:
        out = np.zeros(self.size, dtype=np.int64)
        try:
            if self._tmp is None:
                if self._h:
                    self._add_counts(out, np.concatenate(self._h), np.concatenate(self._b))
                return out
            if self._rows:
                self._spill()
            for p in range(PARTS):
                hp = self._tmp / f"{p}.h"
                if hp.exists():
                    self._add_counts(out, np.fromfile(hp, dtype=np.uint64),
                                     np.fromfile(self._tmp / f"{p}.b", dtype=np.int32))
            return out
        finally:
            self.close()

    def _add_counts(self, out, h, b) -> None:
        kept = bounded_bins(h, b, self.k, self.rng)
        kept = kept[kept >= 0]
        out += np.bincount(kept, minlength=self.size)

    def close(self) -> None:
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

