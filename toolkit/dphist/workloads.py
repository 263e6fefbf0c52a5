"""Range-query workloads, answered in O(1) per query from prefix sums.

A workload is a list of half-open ranges ``[lo, hi)`` over the ``n`` bins of
the original domain.  :class:`AllRanges` is implicit (all ``n(n+1)/2``
ranges): metrics use closed forms for it instead of enumerating.

Workloads used by the papers:

* identity, prefix (DPBench default for 1-D), all ranges (Hay et al. 2010);
* SORTaki Section VI: small ranges (lengths 1-10) and big ranges (lengths
  100-1000, step 100), each at every position;
* ranges of length r% of n (Kellaris et al., Figures 15-18), seeded random ranges;
* DPBench's 1-D random ranges (Hay et al., SIGMOD 2016; ``dpbench-random-<m>``): a length uniform
  in 1..n, then a start uniform among the places it fits, query after query, from the public seed
  9001 of DPBench's ``RandomRange`` (numpy's ``RandomState``), so the same queries as DPBench's.
"""
from __future__ import annotations

import numpy as np

from .errors import InvalidParameter


def prefix_sums(x) -> np.ndarray:
    """``P`` with ``P[0] = 0`` and ``P[i] = x[0] + ... + x[i-1]`` (float64)."""
    x = np.asarray(x, dtype=float)
    out = np.empty(x.size + 1)
    out[0] = 0.0
    np.cumsum(x, out=out[1:])
    return out


class RangeWorkload:
    """An explicit list of ranges ``[lo[i], hi[i])`` over ``n`` bins."""

    def __init__(self, n: int, lo, hi, name: str = "ranges"):
        n = int(n)
        lo = np.asarray(lo, dtype=np.int64)
        hi = np.asarray(hi, dtype=np.int64)
        if n < 1:
            raise InvalidParameter(f"a workload needs a domain of at least 1 bin, got {n}")
        if lo.shape != hi.shape or lo.ndim != 1:
            raise InvalidParameter("range bounds lo and hi must be 1-D arrays of equal length")
        if lo.size == 0:
            raise InvalidParameter(f"workload {name!r} is empty: it has no queries")
        if lo.min() < 0 or hi.max() > n or np.any(hi <= lo):
            raise InvalidParameter(f"every range must satisfy 0 <= lo < hi <= {n}")
        self.n, self.lo, self.hi, self.name = n, lo, hi, name

    def __len__(self) -> int:
        return int(self.lo.size)

    @property
    def lengths(self) -> np.ndarray:
        return self.hi - self.lo

    def check_domain(self, x) -> np.ndarray:
        x = np.asarray(x)
        if x.shape != (self.n,):
            raise InvalidParameter(f"workload {self.name!r} is over {self.n} bins, the vector has shape {x.shape}")
        return x

    def answer(self, x) -> np.ndarray:
        """All query answers on ``x`` (length ``n``), O(n + m)."""
        p = prefix_sums(self.check_domain(x))
        return p[self.hi] - p[self.lo]

    def errors_from_prefix(self, x, prefix) -> np.ndarray:
        """:meth:`answer` of ``x`` when its prefix sums are already known (shared across workloads)."""
        return prefix[self.hi] - prefix[self.lo]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, n={self.n}, queries={len(self)})"


class AllRanges(RangeWorkload):
    """All ``n(n+1)/2`` ranges, kept implicit (Hay et al. 2010's range workload)."""

    def __init__(self, n: int):
        n = int(n)
        if n < 1:
            raise InvalidParameter(f"a workload needs a domain of at least 1 bin, got {n}")
        self.n, self.name = n, "all-ranges"

    def __len__(self) -> int:
        return self.n * (self.n + 1) // 2

    @property
    def lo(self):  # materialised only on request (O(n^2) memory)
        return np.triu_indices(self.n + 1, 1)[0]

    @property
    def hi(self):
        return np.triu_indices(self.n + 1, 1)[1]

    def answer(self, x) -> np.ndarray:
        if self.n > 4096:
            raise InvalidParameter(f"refusing to enumerate all {len(self)} ranges; "
                                   "use dphist.metrics, which has closed forms for AllRanges")
        p = prefix_sums(self.check_domain(x))
        i, j = np.triu_indices(self.n + 1, 1)
        return p[j] - p[i]


class IdentityWorkload(RangeWorkload):
    """Every single bin; answers are the vector itself (no prefix sums needed)."""

    def __init__(self, n: int):
        super().__init__(n, np.arange(n), np.arange(1, n + 1), "identity")

    def answer(self, x) -> np.ndarray:
        return np.asarray(self.check_domain(x), dtype=float).copy()

    def errors_from_prefix(self, x, prefix) -> np.ndarray:
        return np.asarray(x, dtype=float)


class PrefixWorkload(RangeWorkload):
    """``[0, i)`` for i = 1..n; answers are the running sums."""

    def __init__(self, n: int):
        super().__init__(n, np.zeros(n, dtype=np.int64), np.arange(1, n + 1), "prefix")

    def answer(self, x) -> np.ndarray:
        return np.cumsum(self.check_domain(x), dtype=float)

    def errors_from_prefix(self, x, prefix) -> np.ndarray:
        return prefix[1:]


def identity(n: int) -> RangeWorkload:
    """Every single bin."""
    return IdentityWorkload(n)


def prefix(n: int) -> RangeWorkload:
    """``[0, i)`` for i = 1..n (DPBench's 1-D workload)."""
    return PrefixWorkload(n)


def all_ranges(n: int) -> AllRanges:
    return AllRanges(n)


def fixed_lengths(n: int, lengths, name: str = "ranges") -> RangeWorkload:
    """Every range whose length is in ``lengths``, at every position (lengths > n are dropped)."""
    lengths = np.asarray([int(L) for L in lengths if 1 <= int(L) <= n], dtype=np.int64)
    if lengths.size == 0:
        raise InvalidParameter(f"no requested range length fits a domain of {n} bins")
    counts = n - lengths + 1
    lo = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    return RangeWorkload(n, lo, lo + np.repeat(lengths, counts), name)


def small_ranges(n: int) -> RangeWorkload:
    """SORTaki Section VI: lengths 1-10 at every position."""
    return fixed_lengths(n, range(1, 11), "small-ranges")


def big_ranges(n: int) -> RangeWorkload:
    """SORTaki Section VI: lengths 100, 200, ..., 1000 at every position."""
    return fixed_lengths(n, range(100, 1001, 100), "big-ranges")


def percent_ranges(n: int, percent: float) -> RangeWorkload:
    """Every range of length ``round(percent/100 * n)`` (at least 1)."""
    if not 0 < percent <= 100:
        raise InvalidParameter(f"percent must be in (0, 100], got {percent}")
    return fixed_lengths(n, [max(1, round(percent / 100 * n))], f"ranges-{percent:g}%")


def random_ranges(n: int, m: int, rng: np.random.Generator) -> RangeWorkload:
    """``m`` ranges with uniformly random distinct endpoints, from a seeded generator."""
    if not isinstance(rng, np.random.Generator):
        raise InvalidParameter("random_ranges needs a numpy.random.Generator (seeded) for reproducibility")
    a = rng.integers(0, n + 1, size=m)
    b = rng.integers(0, n, size=m)
    b = b + (b >= a)  # b uniform over the n values != a
    return RangeWorkload(n, np.minimum(a, b), np.maximum(a, b), f"random-{m}")


#: the public seed of DPBench's RandomRange workload
DPBENCH_RANDOM_SEED = 9001


def dpbench_random_ranges(n: int, m: int, seed: int = DPBENCH_RANDOM_SEED) -> RangeWorkload:
    """DPBench's 1-D random-range workload: ``m`` queries, each a length uniform in 1..n then a start
    uniform in 0..n - length, drawn in that order from ``numpy.random.RandomState(seed)`` (Hay et
    al., SIGMOD 2016; dpcomp_core ``workload.RandomRange``, read, not copied).  Public: no data."""
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 1:
        raise InvalidParameter(f"the number of random ranges must be a positive integer, got {m!r}")
    rs = np.random.RandomState(seed)
    lo = np.empty(m, dtype=np.int64)
    length = np.empty(m, dtype=np.int64)
    for i in range(m):          # interleaved draws (length, start) per query, as the reference: O(m)
        length[i] = rs.randint(1, n + 1)
        lo[i] = rs.randint(0, n - length[i] + 1)
    return RangeWorkload(n, lo, lo + length, f"dpbench-random-{m}")


def explicit(n: int, ranges) -> RangeWorkload:
    """From a list of ``(lo, hi)`` pairs (half-open)."""
    arr = np.asarray(ranges, dtype=np.int64).reshape(-1, 2)
    return RangeWorkload(n, arr[:, 0], arr[:, 1], "explicit")


BUILTIN = {"identity": identity, "prefix": prefix, "all-ranges": all_ranges,
           "small-ranges": small_ranges, "big-ranges": big_ranges}


def _percent(name: str) -> float | None:
    """r of a name ``ranges-<r>%`` (None when the name has another form)."""
    if not (name.startswith("ranges-") and name.endswith("%")):
        return None
    try:
        return float(name[7:-1])
    except ValueError:
        return None


def _dpbench_random(name: str) -> int | None:
    """m of a name ``dpbench-random-<m>`` (None when the name has another form)."""
    if not name.startswith("dpbench-random-") or not name[15:].isdigit():
        return None
    m = int(name[15:])
    return m if m >= 1 else None


def is_name(name) -> bool:
    """True when :func:`make` knows ``name`` (whatever the domain size: a parameter check)."""
    if not isinstance(name, str):
        return False
    percent = _percent(name)
    return name in BUILTIN or (percent is not None and 0 < percent <= 100) or _dpbench_random(name) is not None


def make(name: str, n: int) -> RangeWorkload:
    """A workload by name: identity, prefix, all-ranges, small-ranges, big-ranges, ranges-<r>% or
    dpbench-random-<m>."""
    if name in BUILTIN:
        return BUILTIN[name](n)
    percent = _percent(name)
    if percent is not None:
        return percent_ranges(n, percent)
    m = _dpbench_random(name)
    if m is not None:
        return dpbench_random_ranges(n, m)
    raise InvalidParameter(f"unknown workload {name!r}; known: {', '.join(BUILTIN)}, ranges-<r>%, dpbench-random-<m>")
