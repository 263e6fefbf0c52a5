"""Neighbouring histogram pairs the auditor tries.

Two histograms are neighbours when one is the other with one record added
(``x' = x + e_j``) or removed (``x' = x - e_j``, ``x_j > 0``).  The auditor
compares the output distributions on both members of every pair, in both
directions, so a pair also covers its swap.

The families are crafted, not random (the inputs where histogram mechanisms
have been found to leak).  :data:`FULL_PAIRS`: tiny domains (1-8 bins), flat
histograms (a change breaks a perfect group), spikes and zeros around the
changed bin, large counts, the changed bin at the edges and in the middle, step
histograms with the change on a group boundary (data-dependent partitions), and
a longer flat domain (the DPBench calibration of DAWA leaks more as n grows).
:data:`STRUCTURED_PAIRS` adds the shapes where a data-dependent choice flips:
ties and near-ties (a record makes or breaks a tie where a selection is
decided), symmetric and mirrored histograms, two spikes, spikes at both ends,
long zero runs, domains from 1 to 256 bins and counts from 0 to 2^20.  The
auditor's search (:mod:`dphist.audit.search`) moves from these to pairs nobody wrote down.

Grids.  A pair may carry a ``shape`` (its counts are then the grid's cells in row-major order and
``bin`` a flattened cell index): :data:`GRID_FAST_PAIRS` and :data:`GRID_PAIRS` are spikes, corners
and blocks on 2-D grids (a spike removed or touched beside, a record at a corner, at a block's edge,
in a flat or empty grid, one that is neither square nor a power of two).  The auditor tries them
instead of the 1-D families on a pipeline that does not run on 1-D histograms (a preset declaring
``dims=(2,)``); :func:`grid_pair` builds your own.

Your own pairs: :func:`parse_pair` reads ``"0,3,5:+1@2"`` (the histogram, then
``+1`` or ``-1`` at a bin, numbered from 0), and :meth:`Pair.between` takes the
two histograms.  Malformed pairs (not neighbours, negative counts, different
lengths, a bin outside the domain) raise :class:`~dphist.errors.InvalidParameter`
naming the problem.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidParameter


@dataclass(frozen=True)
class Pair:
    """A neighbouring pair: ``x_prime`` is ``x`` with one record added at or removed from ``bin``."""

    name: str
    x: tuple[int, ...]
    bin: int
    change: int = +1            #: +1 adds a record at ``bin``, -1 removes one
    #: records added or removed at once: ``k`` audits person-level privacy at k records per person
    #: (one person's k records, all in one bin: the pair at L1 distance k that moves one count most)
    size: int = 1
    #: a grid's shape (``x`` its cells in row-major order, ``bin`` a flattened cell); None: a vector
    shape: tuple | None = None

    def __post_init__(self):
        if self.change not in (+1, -1):
            raise InvalidParameter(f"pair {self.name}: change must be +1 or -1 (one record added or "
                                   f"removed), got {self.change}")
        if isinstance(self.size, bool) or not isinstance(self.size, (int, np.integer)) or self.size < 1:
            raise InvalidParameter(f"pair {self.name}: size must be a positive integer, got {self.size!r}")
        if len(self.x) == 0:
            raise InvalidParameter(f"pair {self.name}: the histogram is empty")
        if self.shape is not None and (not all(isinstance(v, (int, np.integer)) and v >= 1 for v in self.shape)
                                       or int(np.prod(self.shape)) != len(self.x)):
            raise InvalidParameter(f"pair {self.name}: shape {self.shape} does not hold its {len(self.x)} cells")
        if not 0 <= self.bin < len(self.x):
            raise InvalidParameter(f"pair {self.name}: bin {self.bin} outside a domain of {len(self.x)} bins "
                                   f"(bins are numbered 0 to {len(self.x) - 1})")
        if min(self.x) < 0:
            raise InvalidParameter(f"pair {self.name}: negative count {min(self.x)} at bin "
                                   f"{list(self.x).index(min(self.x))}; counts are non-negative")
        if self.change < 0 and self.x[self.bin] < self.size:
            raise InvalidParameter(f"pair {self.name}: cannot remove {self.size} record(s) from bin {self.bin}, "
                                   f"its count is {self.x[self.bin]} (counts must stay non-negative)")

    @classmethod
    def between(cls, x, x_prime, name: str | None = None) -> "Pair":
        """The pair of two neighbouring histograms (same length, one record apart)."""
        a, b = _counts(x, "x"), _counts(x_prime, "x'")
        label = name or "user"
        if a.size != b.size:
            raise InvalidParameter(f"pair {label}: the histograms have {a.size} and {b.size} bins; "
                                   "neighbours have the same domain")
        d = b - a
        changed = np.flatnonzero(d)
        if changed.size != 1 or abs(int(d[changed[0]])) != 1:
            raise InvalidParameter(f"pair {label}: not neighbours (they differ by {int(np.abs(d).sum())} records "
                                   f"in {changed.size} bins; neighbours differ by one record in one bin)")
        return cls(label, tuple(int(v) for v in a), int(changed[0]), int(d[changed[0]]))

    @property
    def counts(self) -> np.ndarray:
        """The histogram (in its grid's shape when the pair has one)."""
        x = np.array(self.x, dtype=np.int64)
        return x if self.shape is None else x.reshape(self.shape)

    @property
    def counts_prime(self) -> np.ndarray:
        y = np.array(self.x, dtype=np.int64)
        y[self.bin] += self.change * self.size
        return y if self.shape is None else y.reshape(self.shape)

    def scaled(self, k: int) -> "Pair":
        """The same pair with ``k`` records added or removed (person-level audits); removals keep
        the counts non-negative by raising the changed bin to at least ``k``."""
        x = list(self.x)
        if self.change < 0:
            x[self.bin] = max(x[self.bin], int(k))
        return Pair(self.name if k == 1 else f"{self.name}-k{k}", tuple(x), self.bin, self.change, int(k),
                    self.shape)

    def to_dict(self) -> dict:
        out = {"name": self.name, "x": list(self.x), "x_prime": self.counts_prime.reshape(-1).tolist(),
               "bin": self.bin, "change": "add" if self.change > 0 else "remove", "records": self.size}
        if self.shape is not None:
            out["shape"] = list(self.shape)
        return out

    def describe(self) -> str:
        verb = f"{'+' if self.change > 0 else '-'}{self.size} at"
        if self.shape is not None:
            cell = tuple(int(i) for i in np.unravel_index(self.bin, self.shape))
            return f"{self.name}: {'x'.join(map(str, self.shape))} grid vs {verb} cell {cell}"
        return f"{self.name}: {list(self.x)} vs {verb} bin {self.bin}"


def _counts(values, what: str) -> np.ndarray:
    try:
        arr = np.asarray(values)
        if arr.ndim != 1 or arr.size == 0 or not np.all(np.isfinite(arr.astype(float))) \
                or not np.all(arr.astype(float) == np.round(arr.astype(float))):
            raise ValueError
    except (TypeError, ValueError):
        raise InvalidParameter(f"{what} must be a non-empty list of integer counts, got {values!r}") from None
    arr = arr.astype(np.int64)
    if arr.min() < 0:
        raise InvalidParameter(f"{what}: negative count {int(arr.min())} at bin {int(np.argmin(arr))}; "
                               "counts are non-negative")
    return arr


def parse_pair(text: str, name: str | None = None) -> Pair:
    """``"0,3,5:+1@2"``: the histogram (0, 3, 5) and the same with one record added at bin 2
    (``-1@j`` removes one).  Also ``"0,3,5;0,3,6"``: the two histograms."""
    label = name or str(text)
    if not isinstance(text, str):
        raise InvalidParameter(f"a pair is a string such as '0,3,5:+1@2', got {text!r}")
    s = text.replace(" ", "")
    try:
        if ";" in s:
            left, right = s.split(";")
            x, y = [int(v) for v in left.split(",")], [int(v) for v in right.split(",")]
        else:
            counts, change = s.split(":")
            step, at = change.split("@")
            values = [int(v) for v in counts.split(",")]
            step_value, bin_value = int(step), int(at)
    except ValueError:
        raise InvalidParameter(f"cannot read the pair {text!r}: write COUNTS:+1@BIN or COUNTS:-1@BIN, e.g. "
                               "'0,3,5:+1@2' (one record added at bin 2, bins numbered from 0), or "
                               "'0,3,5;0,3,6'") from None
    if ";" in s:
        return Pair.between(x, y, label)
    _counts(values, f"pair {label}")
    return Pair(label, tuple(values), bin_value, step_value)


def as_pair(item, index: int = 0) -> Pair:
    """A :class:`Pair` from a Pair, a string (:func:`parse_pair`) or two histograms ``(x, x')``."""
    if isinstance(item, Pair):
        return item
    if isinstance(item, str):
        return parse_pair(item)
    if isinstance(item, (tuple, list)) and len(item) == 2:
        return Pair.between(item[0], item[1], f"user-{index}")
    raise InvalidParameter(f"cannot read pair {item!r}: give a dphist.audit.Pair, a string such as "
                           "'0,3,5:+1@2', or two histograms (x, x')")


def _p(name, x, j, change=+1) -> Pair:
    return Pair(name, tuple(int(v) for v in x), j, change)


#: every pair of the full audit, in the order they are tried
FULL_PAIRS: tuple[Pair, ...] = (
    _p("one-bin-zero", [0], 0),
    _p("one-bin-large-remove", [1000], 0, -1),
    _p("two-bins", [0, 5], 0),
    _p("flat5-middle", [5] * 5, 2),                      # DAWA's reference calibration leaks here
    _p("flat8-edge", [5] * 8, 0),
    _p("flat8-remove-last", [5] * 8, 7, -1),
    _p("zeros8-middle", [0] * 8, 3),
    _p("zeros3-edge", [0] * 3, 2),
    _p("spike8-remove", [0, 0, 0, 50, 0, 0, 0, 0], 3, -1),
    _p("spike8-beside", [0, 0, 0, 50, 0, 0, 0, 0], 4),
    _p("large4", [100_000] * 4, 1),
    _p("steps8-boundary-add", [2, 2, 2, 2, 30, 30, 30, 30], 3),
    _p("steps8-boundary-remove", [2, 2, 2, 2, 30, 30, 30, 30], 4, -1),
    _p("alternating6", [0, 10, 0, 10, 0, 10], 2),
    _p("flat16-middle", [5] * 16, 8),
)

#: the fast audit (CI): the pairs that caught every known broken mechanism in the tests
FAST_PAIRS: tuple[Pair, ...] = tuple(p for p in FULL_PAIRS if p.name in {
    "one-bin-zero", "flat5-middle", "zeros8-middle", "spike8-remove", "steps8-boundary-add", "flat16-middle"})


def _power_law(n: int, top: int = 1000) -> list[int]:
    return [int(top / (i + 1) ** 1.1) for i in range(n)]


#: ties, mirrors, two spikes, spikes at both ends, long zero runs, 1-256 bins, counts 0-2^20
STRUCTURED_PAIRS: tuple[Pair, ...] = (
    _p("tie2-break", [5, 5], 0),                                     # a tie broken
    _p("near-tie2-make", [5, 6], 0),                                 # a near-tie made a tie
    _p("near-ties8", [10, 11, 10, 11, 10, 11, 10, 11], 2),
    _p("tie-pairs8-remove", [9, 9, 3, 3, 9, 9, 3, 3], 1, -1),
    _p("symmetric5", [1, 4, 9, 4, 1], 1),                            # symmetry broken off the centre
    _p("symmetric7-centre", [2, 6, 12, 20, 12, 6, 2], 3, -1),
    _p("ramp4", [1, 4, 9, 16], 0),
    _p("ramp4-mirrored", [16, 9, 4, 1], 3),
    _p("two-spikes8", [0, 0, 40, 0, 0, 40, 0, 0], 2, -1),
    _p("ends8", [10, 0, 0, 0, 0, 0, 0, 10], 0),                      # spikes at both ends
    _p("ends32", [10] + [0] * 30 + [10], 0),
    _p("ends32-remove-last", [10] + [0] * 30 + [10], 31, -1),
    _p("zero-run32-spike", [0] * 31 + [20], 15),                     # long zero run
    _p("zero-run64-between", [3] + [0] * 62 + [3], 32),
    _p("flat32-middle", [5] * 32, 16),
    _p("steps64-boundary", [2] * 32 + [30] * 32, 31),
    _p("power-law128-top", _power_law(128), 0, -1),
    _p("zeros256-middle", [0] * 256, 128),
    _p("flat256-edge", [5] * 256, 255),
    _p("huge3", [1 << 20] * 3, 1, -1),                                # counts far from 0
    _p("huge-and-zero4", [0, 1 << 20, 0, 1 << 20], 0),
)

#: the thorough level adds these (larger domains, more shapes)
THOROUGH_PAIRS: tuple[Pair, ...] = (
    _p("ends256", [10] + [0] * 254 + [10], 0),
    _p("two-spikes256", [0] * 64 + [40] + [0] * 127 + [40] + [0] * 63, 64, -1),
    _p("steps256-boundary", [2] * 128 + [30] * 128, 128),
    _p("power-law256-tail", _power_law(256), 200),
    _p("ties16", [7] * 8 + [8] * 8, 7),
    _p("alternating32", [0, 10] * 16, 16),
)


def grid_pair(name: str, grid, cell, change: int = +1) -> Pair:
    """A pair on a grid: ``grid`` (a 2-D array of counts) and one record added (``+1``) or removed
    (``-1``) at ``cell`` (a tuple of indices)."""
    g = np.asarray(grid)
    if g.ndim < 2:
        raise InvalidParameter(f"pair {name}: a grid pair takes a grid of at least 2 axes, got shape {g.shape}")
    try:
        flat = int(np.ravel_multi_index(tuple(int(i) for i in cell), g.shape))
    except (ValueError, TypeError):
        raise InvalidParameter(f"pair {name}: cell {cell!r} is outside the grid of shape {g.shape}") from None
    return Pair(name, tuple(int(v) for v in g.reshape(-1)), flat, change, 1, tuple(int(v) for v in g.shape))


def _grid(shape, fill=0, **cells):
    g = np.full(shape, fill, dtype=np.int64)
    for value, where in cells.get("set", ()):
        g[where] = value
    return g


#: 2-D pairs of the fast audit: a spike removed, a corner of a flat grid, a block's edge, an empty grid
#: that is neither square nor a power of two
GRID_FAST_PAIRS: tuple[Pair, ...] = (
    grid_pair("grid-spike4-remove", _grid((4, 4), set=[(50, (1, 2))]), (1, 2), -1),
    grid_pair("grid-corner8", _grid((8, 8), 5), (0, 0)),
    grid_pair("grid-block8-edge", _grid((8, 8), 2, set=[(30, (slice(0, 4), slice(0, 4)))]), (3, 3)),
    grid_pair("grid-zeros5x7", _grid((5, 7)), (2, 3)),
)

#: 2-D pairs of the default and thorough audits (the fast ones first)
GRID_PAIRS: tuple[Pair, ...] = GRID_FAST_PAIRS + (
    grid_pair("grid-one-cell", _grid((1, 1)), (0, 0)),
    grid_pair("grid-corners8-remove", _grid((8, 8), set=[(10, (0, 0)), (10, (0, 7)), (10, (7, 0)), (10, (7, 7))]),
              (7, 7), -1),
    grid_pair("grid-spike16-beside", _grid((16, 16), set=[(200, (5, 9))]), (5, 10)),
    grid_pair("grid-flat16-middle", _grid((16, 16), 5), (8, 8)),
    grid_pair("grid-blocks16-boundary", _grid((16, 16), 2, set=[(30, (slice(0, 8), slice(8, 16))),
                                                                (30, (slice(8, 16), slice(0, 8)))]), (7, 8), -1),
    grid_pair("grid-large4", _grid((4, 4), 100_000), (1, 1)),
)


def pair_family(name: str) -> tuple[Pair, ...]:
    """``"full"``, ``"fast"``, ``"structured"``, ``"thorough"`` (the extra pairs of that level),
    ``"grid-fast"`` or ``"grid"`` (2-D)."""
    families = {"full": FULL_PAIRS, "fast": FAST_PAIRS, "structured": STRUCTURED_PAIRS,
                "thorough": THOROUGH_PAIRS, "grid-fast": GRID_FAST_PAIRS, "grid": GRID_PAIRS}
    if name not in families:
        raise InvalidParameter(f"unknown pair family {name!r}; use one of {', '.join(families)}")
    return families[name]
