"""Neighbouring histogram pairs the auditor tries.

Two histograms are neighbours when one is the other with one record added
(``x' = x + e_j``) or removed (``x' = x - e_j``, ``x_j > 0``).  The auditor
compares the output distributions on both members of every pair, in both
directions, so a pair also covers its swap.

The family is crafted, not random (the inputs where histogram mechanisms
have been found to leak): tiny domains (1-8 bins), flat histograms (a change
breaks a perfect group), spikes and zeros around the changed bin, large
counts, the changed bin at the edges and in the middle, step histograms with
the change on a group boundary (data-dependent partitions), and a longer
flat domain (the DPBench calibration of DAWA leaks more as n grows).
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

    def __post_init__(self):
        if self.change not in (+1, -1):
            raise InvalidParameter(f"pair {self.name}: change must be +1 or -1, got {self.change}")
        if isinstance(self.size, bool) or not isinstance(self.size, (int, np.integer)) or self.size < 1:
            raise InvalidParameter(f"pair {self.name}: size must be a positive integer, got {self.size!r}")
        if not 0 <= self.bin < len(self.x):
            raise InvalidParameter(f"pair {self.name}: bin {self.bin} outside a domain of {len(self.x)} bins")
        if min(self.x) < 0 or (self.change < 0 and self.x[self.bin] < self.size):
            raise InvalidParameter(f"pair {self.name}: counts must stay non-negative")

    @property
    def counts(self) -> np.ndarray:
        return np.array(self.x, dtype=np.int64)

    @property
    def counts_prime(self) -> np.ndarray:
        y = self.counts
        y[self.bin] += self.change * self.size
        return y

    def scaled(self, k: int) -> "Pair":
        """The same pair with ``k`` records added or removed (person-level audits); removals keep
        the counts non-negative by raising the changed bin to at least ``k``."""
        x = list(self.x)
        if self.change < 0:
            x[self.bin] = max(x[self.bin], int(k))
        return Pair(self.name if k == 1 else f"{self.name}-k{k}", tuple(x), self.bin, self.change, int(k))

    def to_dict(self) -> dict:
        return {"name": self.name, "x": list(self.x), "x_prime": self.counts_prime.tolist(),
                "bin": self.bin, "change": "add" if self.change > 0 else "remove", "records": self.size}

    def describe(self) -> str:
        verb = f"{'+' if self.change > 0 else '-'}{self.size} at"
        return f"{self.name}: {list(self.x)} vs {verb} bin {self.bin}"


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


def pair_family(name: str) -> tuple[Pair, ...]:
    """``"full"`` or ``"fast"``."""
    families = {"full": FULL_PAIRS, "fast": FAST_PAIRS}
    if name not in families:
        raise InvalidParameter(f"unknown pair family {name!r}; use one of {', '.join(families)}")
    return families[name]
