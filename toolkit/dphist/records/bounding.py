"""Contribution bounding: each person keeps at most ``k`` records, chosen without looking at values.

Person-level privacy (``user_id=``, ``max_contributions=k``): neighbouring tables
differ in *all* the records of one person.  Unbounded, one person could move a
histogram arbitrarily far; after bounding, by at most ``k`` in L1 (each kept record
lands in at most one bin), which is the sensitivity the kernel then charges
(:mod:`dphist.kernel.persons`).  The same bound-then-aggregate step is the first
stage of Google's differential-privacy libraries ("contribution bounding",
Wilson et al., PoPETs 2020, Section 3) and of OpenDP's and Tumult's person-level
counts.

Which records survive: for every person with more than ``k`` records, the ``k``
records of lowest *priority*, where a record's priority is a keyed hash
(splitmix64) of the person and the record's occurrence number among that
person's records (first, second, ... in table order), under 64 random key bits
drawn from the run's seeded :class:`numpy.random.Generator` (or the operating
system).  The choice depends on no value and on nobody else's records: on two
tables that differ in one person's records, every other person keeps exactly
the same records for the same key, so the bounded histograms differ by at most
``k`` in L1 (the test ``test_neighbouring_tables_differ_by_at_most_k``).  The
kept records are a pseudo-random subset of each person's records, so the only
bias is the one of dropping persons' surplus records (measured in
``notebooks/04-records-to-release.ipynb``).

How (bounded memory, vectorised): a person is a 64-bit hash of the id (integers:
the splitmix64 mixer, a bijection; text: :func:`pandas.util.hash_array`).  Rows are
buffered as (hash, bin) pairs in table order; beyond ``memory_rows`` they are
spilled to ``PARTS`` files by the hash's low bits, so each person's rows are in
one file, in table order.  A block of at most 2^22 rows is grouped by person with
one ``numpy.sort`` of plain ``uint64`` keys (the hash's high 42 bits above the
row's 22-bit position: several times faster than a lexicographic sort; persons
sharing the high bits are separated by a lexicographic sort when it happens); only
the rows of persons above ``k`` are sorted by priority.  Persons whose full 64-bit
hashes collide would share one allowance of ``k`` (probability about
``persons**2 / 2**65``).
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


def bounded_bins(hashes: np.ndarray, bins: np.ndarray, k: int, key: int) -> np.ndarray:
    """The ``bins`` of the rows kept when each person (hash) keeps at most ``k`` rows (module docstring).

    ``key``: 64 random bits from the run's Generator; the rows must be in the table's order.
    """
    m = hashes.size
    if m == 0:
        return bins[:0]
    if m > 1 << _POS_BITS:              # blocks of at most 2^22 rows, split by other hash bits: persons stay whole
        part = ((hashes >> np.uint64(21)) & np.uint64(PARTS - 1)).astype(np.uint16)
        order = np.argsort(part, kind="stable")       # radix sort of 16-bit keys; keeps the table's order
        edges = np.searchsorted(part[order], np.arange(PARTS + 1))
        if np.diff(edges).max() == m:   # all rows share those bits: one block by a stable lexicographic sort
            return _bounded_block(hashes, bins, k, key, np.lexsort((np.arange(m), hashes)))
        return np.concatenate([bounded_bins(hashes[order[a:b]], bins[order[a:b]], k, key)
                               for a, b in zip(edges[:-1], edges[1:])])
    # group by person, each person's rows in table order: one sort of (high 42 hash bits | row position)
    packed = (hashes & (_MASK64 << np.uint64(_POS_BITS))) | np.arange(m, dtype=np.uint64)
    packed.sort()
    order = (packed & np.uint64((1 << _POS_BITS) - 1)).astype(np.int64)
    h = hashes[order]
    high = packed >> np.uint64(_POS_BITS)
    if np.any((h[1:] != h[:-1]) & (high[1:] == high[:-1])):
        order = order[np.lexsort((order, h))]   # two persons share the high bits (rare): separate them
    return _bounded_block(hashes, bins, k, key, order)


def _groups(sorted_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Group number of every element of a sorted array, and each element's rank inside its group."""
    first = np.empty(sorted_keys.size, dtype=bool)
    first[0] = True
    np.not_equal(sorted_keys[1:], sorted_keys[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    group = np.cumsum(first) - 1
    return group, np.arange(sorted_keys.size) - starts[group]


def _bounded_block(hashes, bins, k, key, order) -> np.ndarray:
    """``order`` lists each person's rows together, in table order: keep at most ``k`` per person.

    A person with more than ``k`` rows keeps the ``k`` of lowest priority, a keyed hash of
    (person, occurrence): it depends on nobody else's rows and on no value.
    """
    h = hashes[order]
    group, occurrence = _groups(h)
    sizes = np.bincount(group)
    heavy = sizes[group] > k
    if not heavy.any():
        return bins[order]
    # one sort of plain uint64 keys: group (22 bits) | priority's top 20 bits | index in the heavy rows (22 bits);
    # equal 20-bit priorities (probability about n_p^2 / 2^21 for a person) fall back on table order
    hh, gg = h[heavy], group[heavy]
    m = hh.size
    priority = _splitmix64(hh ^ _splitmix64(occurrence[heavy].astype(np.uint64) ^ np.uint64(key)))
    gg = gg - gg[0]                                   # group numbers of heavy rows: below 2^22
    packed = (gg.astype(np.uint64) << np.uint64(42)) | ((priority >> np.uint64(44)) << np.uint64(_POS_BITS)) \
        | np.arange(m, dtype=np.uint64)
    packed.sort()
    pick = (packed & np.uint64((1 << _POS_BITS) - 1)).astype(np.int64)
    _, rank = _groups(packed >> np.uint64(42))
    chosen = order[heavy][pick[rank < k]]
    return bins[np.concatenate([order[~heavy], chosen])]


def draw_key(rng: np.random.Generator) -> int:
    """The 64 random key bits of one bounding, from the run's Generator."""
    return int(rng.integers(0, 2 ** 64 - 1, dtype=np.uint64, endpoint=True))


class Bounder:
    """Collects (person hash, bin) rows chunk by chunk; :meth:`counts` bounds and counts them.

    Memory stays below ``memory_rows`` buffered rows; beyond, rows go to spill
    files in ``spill_dir`` (a temporary folder, removed at the end).
    """

    def __init__(self, k: int, size: int, key: int, memory_rows: int = MEMORY_ROWS, spill_dir=None):
        self.k, self.size, self.key = k, size, int(key)
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
        kept = bounded_bins(h, b, self.k, self.key)
        kept = kept[kept >= 0]
        out += np.bincount(kept, minlength=self.size)

    def close(self) -> None:
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

