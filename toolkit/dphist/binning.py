"""Binning specifications that are public by construction.

A :class:`Bins` object says what the bins of a histogram are *before any record
is read*: its domain and edges come from the caller, never from the data
(a domain read from the data would publish the smallest and largest value).
It maps a column's values to bin indices with numpy, chunk by chunk, so every
reader (arrays, data frames, Arrow, CSV, Parquet, Dask partitions) shares one
binning code path.

Kinds (constructors, and the string form :func:`parse` accepts):

* :func:`width` ``"lo:hi:width"``, equal-width bins ``[lo + i w, lo + (i+1) w)``;
  :func:`count` ``"lo:hi/n"``: ``n`` equal-width bins;
* :func:`edges` (a list of increasing numbers): explicit edges;
* :func:`integers` ``"int:lo..hi"``: one bin per integer ``lo, ..., hi`` (both included);
* :func:`categories` (a list): one bin per listed category, in the given order;
* :func:`calendar` ``"2013-01-01:2014-01-01:1d"``: timestamps or dates in calendar
  units of numpy ``datetime64`` (``1h``, ``15m``, ``1d``, ``1W``, ``1M`` months, ``1Y``);
* :class:`Grid` (two specs): a 2-D histogram of two columns, counts of shape ``(n1, n2)``.

Bins are half-open ``[left, right)``; the domain is ``[lo, hi)``.

**Values outside the domain** (``outside=``): ``"clamp"`` (the default) puts
them in the first or last bin; ``"drop"`` leaves them out.  Both keep the
sensitivity at one per record (a record lands in at most one bin either
way).  Clamp is the default because every record is then counted exactly
once, so the released total estimates the number of records and a tail
beyond the domain shows up, as mass in an edge bin, instead of vanishing
without trace.  Categories outside the list go to an ``"other"`` bin
(``outside="other"``, their default; the categorical form of clamping) or are
dropped.  Raising an error on an outside value is not offered: an error that
depends on one record's value would itself leak it.

**Missing values** (NaN, None, NaT, nulls; ``missing=``): ``"drop"`` (default)
or ``"bin"``: a bin of their own after the others.

Every spec serialises to JSON (:meth:`Bins.to_dict`, :func:`from_dict`) for
the release's metadata, with one label per bin (:meth:`Bins.labels`).
"""
from __future__ import annotations

import contextlib
import math
import re
from dataclasses import dataclass

import numpy as np

from .errors import InvalidParameter

OUTSIDE = ("clamp", "drop")
CATEGORY_OUTSIDE = ("other", "drop")
MISSING = ("drop", "bin")
_CAL_UNITS = {"y": "Y", "mo": "M", "M": "M", "w": "W", "W": "W", "d": "D", "D": "D", "h": "h",
              "min": "m", "m": "m", "s": "s", "ms": "ms", "us": "us", "ns": "ns"}


def _number(value, what: str) -> float:
    if isinstance(value, bool):
        raise InvalidParameter(f"{what} must be a number, got {value!r}")
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise InvalidParameter(f"{what} must be a number, got {value!r}") from None
    if not math.isfinite(out):
        raise InvalidParameter(f"{what} must be finite, got {value!r}")
    return out


def _choice(value, allowed, what):
    if value not in allowed:
        raise InvalidParameter(f"{what} must be one of {', '.join(map(repr, allowed))}, got {value!r}")
    return value


class Bins:
    """Base of every binning specification: ``n`` bins (plus a missing bin), ``index(values)``."""

    kind = ""
    outside = "clamp"
    missing = "drop"

    @property
    def n(self) -> int:
        """Bins of the domain (not counting the missing bin)."""
        raise NotImplementedError

    @property
    def size(self) -> int:
        """All bins: ``n`` plus one when missing values have a bin."""
        return self.n + (self.missing == "bin")

    @property
    def shape(self) -> tuple[int, ...]:
        return (self.size,)

    def index(self, values: np.ndarray, column: str = "values", row0: int = 0) -> np.ndarray:
        """int64 bin index of every value, ``-1`` for a dropped one.

        ``column`` and ``row0`` (the first value's row in its source) name a bad value's place in errors.
        """
        values = np.asarray(values)
        missing = _missing_mask(values)
        idx = self._index(values, missing, column, row0)
        if missing is not None:
            idx[missing] = self.n if self.missing == "bin" else -1
        return idx

    def count(self, values: np.ndarray, column: str = "values", row0: int = 0, out: np.ndarray | None = None
              ) -> np.ndarray:
        """Add the counts of ``values`` to ``out`` (a new zero vector of ``size`` when None); returns it."""
        out = np.zeros(self.size, dtype=np.int64) if out is None else out
        idx = self.index(values, column, row0)
        out += np.bincount(idx[idx >= 0], minlength=self.size)
        return out

    def _place(self, raw: np.ndarray) -> np.ndarray:
        """Apply the outside policy to raw indices (any int64, in place)."""
        if self.outside == "clamp":
            np.clip(raw, 0, self.n - 1, out=raw)
        else:
            raw[(raw < 0) | (raw >= self.n)] = -1
        return raw

    def labels(self) -> list[str]:
        out = self._labels()
        return out + (["missing"] if self.missing == "bin" else [])

    def to_dict(self) -> dict:
        raise NotImplementedError

    def describe(self) -> str:
        return f"{self.kind}: {self.n} bins, outside={self.outside}, missing={self.missing}"


def _missing_mask(values: np.ndarray) -> np.ndarray | None:
    kind = values.dtype.kind
    if kind == "f":
        mask = np.isnan(values)
    elif kind in "mM":
        mask = np.isnat(values)
    elif kind == "O":
        mask = np.array([v is None or (isinstance(v, float) and v != v) for v in values], dtype=bool)
    else:
        return None
    return mask if mask.any() else None


def _numeric(values: np.ndarray, column: str, row0: int) -> np.ndarray:
    """``values`` as a numeric array, or an error naming the column and the first bad row."""
    kind = values.dtype.kind
    if kind in "iuf":
        return values
    if kind == "b":
        return values.astype(np.int64)
    if kind in "mM":
        raise InvalidParameter(f"column {column!r} holds timestamps; numeric bins do not match its type "
                               "(use dphist.binning.calendar)")
    if kind in "OUS":
        out = np.empty(values.shape, dtype=float)
        for i, v in enumerate(values):  # only reached for text columns, to name the bad row
            if v is None or (isinstance(v, float) and v != v):
                out[i] = np.nan
                continue
            try:
                out[i] = float(v)
            except (TypeError, ValueError):
                raise InvalidParameter(f"column {column!r}, row {row0 + i}: {v!r} is not a number (numeric bins "
                                       "need a numeric column)") from None
        return out
    raise InvalidParameter(f"column {column!r} has type {values.dtype}; numeric bins do not match it")


@dataclass(frozen=True, eq=True)
class Edges(Bins):
    """Bins between increasing edges ``e_0 < e_1 < ... < e_n``; equal width when built by :func:`width`."""

    edges: tuple[float, ...]
    outside: str = "clamp"
    missing: str = "drop"
    equal_width: bool = False

    def __post_init__(self):
        e = np.asarray(self.edges, dtype=float)
        if e.ndim != 1 or e.size < 2:
            raise InvalidParameter("bins: edges need at least two numbers")
        if not np.all(np.isfinite(e)):
            raise InvalidParameter("bins: edges must be finite")
        bad = np.flatnonzero(np.diff(e) <= 0)
        if bad.size:
            i = int(bad[0])
            raise InvalidParameter(f"bins: edges must increase strictly; edge {i + 1} ({e[i + 1]:g}) is not above "
                                   f"edge {i} ({e[i]:g})")
        _choice(self.outside, OUTSIDE, "outside")
        _choice(self.missing, MISSING, "missing")
        object.__setattr__(self, "kind", "width" if self.equal_width else "edges")

    @property
    def n(self) -> int:
        return len(self.edges) - 1

    @property
    def lo(self) -> float:
        return self.edges[0]

    def _compiled(self, values) -> bool:
        """Equal-width bins of a numeric column go through the one-pass loop of :mod:`dphist.binkernels`."""
        return self.equal_width and values.dtype.kind in "fiu" and values.ndim == 1

    def _kernel_args(self):
        return np.asarray(self.edges, dtype=float), self.outside == "clamp", self.n if self.missing == "bin" else -1

    def index(self, values, column="values", row0=0):
        values = np.asarray(values)
        if self._compiled(values):
            from . import binkernels
            return binkernels.index(np.ascontiguousarray(values), *self._kernel_args())
        return super().index(values, column, row0)

    def count(self, values, column="values", row0=0, out=None):
        values = np.asarray(values)
        if not self._compiled(values):
            return super().count(values, column, row0, out)
        from . import binkernels
        out = np.zeros(self.size, dtype=np.int64) if out is None else out
        binkernels.count(np.ascontiguousarray(values), *self._kernel_args(), out)
        return out

    @property
    def hi(self) -> float:
        return self.edges[-1]

    def _index(self, values, missing, column, row0):
        v = _numeric(values, column, row0)
        e = np.asarray(self.edges)
        raw = np.searchsorted(e, v, side="right").astype(np.int64) - 1
        raw[v >= e[-1]] = self.n                        # [lo, hi): hi itself is outside
        if missing is not None:
            raw[missing] = 0
        return self._place(raw)

    def _labels(self):
        e = self.edges
        return [f"[{e[i]:g}, {e[i + 1]:g})" for i in range(self.n)]

    def to_dict(self):
        if self.equal_width:
            base = {"kind": "width", "lo": self.lo, "hi": self.hi, "width": (self.hi - self.lo) / self.n,
                    "n": self.n}
        else:
            base = {"kind": "edges", "edges": list(self.edges)}
        return {**base, "outside": self.outside, "missing": self.missing}


@dataclass(frozen=True)
class Categories(Bins):
    """One bin per listed category (strings or integers), in the order given."""

    values: tuple
    outside: str = "other"
    missing: str = "drop"

    def __post_init__(self):
        vals = tuple(self.values)
        if not vals:
            raise InvalidParameter("bins: categories need at least one value")
        if len(set(vals)) != len(vals):
            raise InvalidParameter("bins: categories must not repeat")
        kinds = {type(v) is str for v in vals}
        if len(kinds) != 1 or not all(isinstance(v, (str, int, np.integer)) and not isinstance(v, bool)
                                      for v in vals):
            raise InvalidParameter("bins: categories must be all strings or all integers")
        object.__setattr__(self, "values", vals)
        _choice(self.outside, CATEGORY_OUTSIDE, "outside (for categories)")
        _choice(self.missing, MISSING, "missing")
        object.__setattr__(self, "kind", "categories")

    @property
    def n(self) -> int:
        return len(self.values) + (self.outside == "other")

    @property
    def text(self) -> bool:
        return isinstance(self.values[0], str)

    def _index(self, values, missing, column, row0):
        kind = values.dtype.kind
        if self.text and kind not in "OUS":
            raise InvalidParameter(f"column {column!r} has type {values.dtype}; text categories do not match it")
        if not self.text and kind not in "iuO":
            raise InvalidParameter(f"column {column!r} has type {values.dtype}; integer categories do not match it")
        cats = np.array(self.values, dtype=object if self.text else np.int64)
        order = np.argsort(cats, kind="stable")
        srt = cats[order]
        if kind == "O":
            present = ~missing if missing is not None else np.ones(values.size, dtype=bool)
            bad = [i for i in np.flatnonzero(present)[:1000] if not isinstance(values[i], str if self.text else
                                                                             (int, np.integer))]
            if bad:
                raise InvalidParameter(f"column {column!r}, row {row0 + bad[0]}: {values[bad[0]]!r} does not match the "
                                       f"{'text' if self.text else 'integer'} categories")
            v = np.where(present, values, srt[0])
        else:
            v = values
        pos = np.searchsorted(srt, v)
        pos = np.minimum(pos, srt.size - 1)
        hit = srt[pos] == v
        raw = np.where(hit, order[pos], -1).astype(np.int64)
        if self.outside == "other":
            raw[raw < 0] = len(self.values)
        if missing is not None:
            raw[missing] = -1
        return raw

    def _labels(self):
        return [str(v) for v in self.values] + (["other"] if self.outside == "other" else [])

    def to_dict(self):
        return {"kind": "categories", "values": [v if isinstance(v, str) else int(v) for v in self.values],
                "outside": self.outside, "missing": self.missing}


@dataclass(frozen=True)
class Calendar(Bins):
    """Timestamps or dates in bins of ``step`` calendar units from ``start`` to ``stop``.

    ``step`` is a count and a numpy datetime64 unit (``"1h"``, ``"15m"``, ``"1D"``, ``"1M"``):
    a value's bin is ``(value in that unit - start in that unit) // count``.  Times are UTC: a
    string with an offset (``2024-01-01T11:30+01:00``, ``...Z``) is converted to UTC, and a naive one is
    read as UTC (as are ``start`` and ``stop``).
    """

    start: str
    stop: str
    step: str
    outside: str = "clamp"
    missing: str = "drop"

    def __post_init__(self):
        count, unit = _calendar_step(self.step)
        try:
            with _offsets_to_utc():
                a = np.datetime64(self.start, unit)
                b = np.datetime64(self.stop, unit)
        except (ValueError, TypeError):
            raise InvalidParameter(f"bins: calendar start/stop must be dates or timestamps, got "
                                   f"{self.start!r}, {self.stop!r}") from None
        span = int((b - a).astype(np.int64))
        if span <= 0:
            raise InvalidParameter(f"bins: calendar stop {self.stop} must be after start {self.start}")
        if span % count:
            raise InvalidParameter(f"bins: {self.start}..{self.stop} is not a whole number of {self.step} steps")
        _choice(self.outside, OUTSIDE, "outside")
        _choice(self.missing, MISSING, "missing")
        object.__setattr__(self, "kind", "calendar")
        object.__setattr__(self, "_unit", (count, unit, a))

    @property
    def n(self) -> int:
        count, unit, a = self._unit
        with _offsets_to_utc():
            return int((np.datetime64(self.stop, unit) - a).astype(np.int64)) // count

    def _index(self, values, missing, column, row0):
        count, unit, a = self._unit
        if values.dtype.kind != "M":
            if values.dtype.kind in "OU":
                try:
                    values = _utc_timestamps(values)
                except (ValueError, TypeError):
                    raise InvalidParameter(f"column {column!r} holds values that are not timestamps; calendar "
                                           "bins do not match its type") from None
            else:
                raise InvalidParameter(f"column {column!r} has type {values.dtype}; calendar bins need "
                                       "timestamps or dates")
        t = values.astype(f"datetime64[{unit}]")
        raw = (t - a).astype(np.int64) // count
        if missing is not None:
            raw[missing] = 0
        return self._place(raw)

    def _labels(self):
        count, unit, a = self._unit
        return [str(a + i * count) for i in range(self.n)]

    def to_dict(self):
        return {"kind": "calendar", "start": str(self.start), "stop": str(self.stop), "step": self.step,
                "outside": self.outside, "missing": self.missing}


@contextlib.contextmanager
def _offsets_to_utc():
    """numpy's parser moves an ISO 8601 string with an offset (``...Z``, ``...+01:00``) to UTC and warns
    that it keeps no time zone: what calendar bins want (their times are UTC), so the warning is silenced
    here and the rule is documented on :class:`Calendar`."""
    import warnings
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*timezone", category=UserWarning)
        warnings.filterwarnings("ignore", message=".*timezone", category=DeprecationWarning)
        yield


def _utc_timestamps(values: np.ndarray) -> np.ndarray:
    """ISO 8601 strings to ``datetime64[ns]`` in UTC."""
    with _offsets_to_utc():
        return values.astype("datetime64[ns]")


def _calendar_step(step) -> tuple[int, str]:
    m = re.fullmatch(r"\s*(\d*)\s*([A-Za-z]+)\s*", str(step))
    unit = _CAL_UNITS.get(m.group(2)) if m else None
    if unit is None:
        unit = _CAL_UNITS.get(m.group(2).lower()) if m else None
    if m is None or unit is None:
        raise InvalidParameter(f"bins: calendar width {step!r} is not a count and a unit "
                               "(1Y, 1M months, 1W, 1d, 1h, 15m minutes, 1s)")
    count = int(m.group(1) or 1)
    if count <= 0:
        raise InvalidParameter(f"bins: calendar width {step!r} must be positive")
    return count, unit


@dataclass(frozen=True)
class Grid(Bins):
    """Two columns' specs: a 2-D histogram with counts of shape ``(rows.size, cols.size)``."""

    rows: Bins
    cols: Bins

    def __post_init__(self):
        if not isinstance(self.rows, Bins) or not isinstance(self.cols, Bins) or isinstance(self.rows, Grid) \
                or isinstance(self.cols, Grid):
            raise InvalidParameter("a Grid takes two one-column binning specifications")
        object.__setattr__(self, "kind", "grid")

    @property
    def n(self) -> int:
        return self.rows.size * self.cols.size

    @property
    def size(self) -> int:
        return self.n

    @property
    def shape(self):
        return (self.rows.size, self.cols.size)

    def index2(self, a, b, columns=("values", "values"), row0: int = 0) -> np.ndarray:
        """Flat index ``i * cols.size + j`` of every pair of values, ``-1`` when either is dropped."""
        i = self.rows.index(a, columns[0], row0)
        j = self.cols.index(b, columns[1], row0)
        out = i * self.cols.size + j
        out[(i < 0) | (j < 0)] = -1
        return out

    def labels(self):
        return [f"{r} x {c}" for r in self.rows.labels() for c in self.cols.labels()]

    def to_dict(self):
        return {"kind": "grid", "rows": self.rows.to_dict(), "cols": self.cols.to_dict()}

    def describe(self):
        return f"grid {self.shape}: ({self.rows.describe()}) x ({self.cols.describe()})"


# ------------------------------------------------------------------ constructors
def width(lo, hi, w, *, outside="clamp", missing="drop") -> Edges:
    """Equal-width bins of width ``w`` over ``[lo, hi)``; ``hi - lo`` must be a whole number of widths."""
    lo, hi, w = _number(lo, "bins: lo"), _number(hi, "bins: hi"), _number(w, "bins: width")
    if w <= 0:
        raise InvalidParameter(f"bins: width must be positive, got {w:g}")
    if hi <= lo:
        raise InvalidParameter(f"bins: hi ({hi:g}) must be above lo ({lo:g})")
    n = round((hi - lo) / w)
    if n < 1 or abs(n * w - (hi - lo)) > 1e-9 * max(abs(hi - lo), 1.0):
        raise InvalidParameter(f"bins: {hi:g} - {lo:g} is not a whole number of widths {w:g}")
    return count(lo, hi, n, outside=outside, missing=missing)


def count(lo, hi, n, *, outside="clamp", missing="drop") -> Edges:
    """``n`` equal-width bins over ``[lo, hi)``."""
    lo, hi = _number(lo, "bins: lo"), _number(hi, "bins: hi")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise InvalidParameter(f"bins: the number of bins must be a positive integer, got {n!r}")
    if hi <= lo:
        raise InvalidParameter(f"bins: hi ({hi:g}) must be above lo ({lo:g})")
    e = lo + (hi - lo) * np.arange(n + 1) / n
    e[-1] = hi
    return Edges(tuple(float(x) for x in e), outside, missing, equal_width=True)


def edges(values, *, outside="clamp", missing="drop") -> Edges:
    """Bins between explicit increasing edges."""
    try:
        e = tuple(_number(v, "bins: edge") for v in values)
    except TypeError:
        raise InvalidParameter(f"bins: edges must be a list of numbers, got {values!r}") from None
    return Edges(e, outside, missing)


def integers(lo, hi, *, outside="clamp", missing="drop") -> Edges:
    """One bin per integer ``lo, lo+1, ..., hi`` (both included)."""
    a, b = _number(lo, "bins: lo"), _number(hi, "bins: hi")
    if a != int(a) or b != int(b):
        raise InvalidParameter(f"bins: integer bins need integer ends, got {lo!r}..{hi!r}")
    return width(a, b + 1, 1, outside=outside, missing=missing)


def categories(values, *, outside="other", missing="drop") -> Categories:
    return Categories(tuple(values), outside, missing)


def calendar(start, stop, step, *, outside="clamp", missing="drop") -> Calendar:
    return Calendar(str(start), str(stop), str(step), outside, missing)


def parse(spec, *, outside=None, missing="drop") -> Bins:
    """A :class:`Bins` from a spec object, a dict (:meth:`Bins.to_dict`) or a string (module docstring)."""
    if isinstance(spec, Bins):
        return spec
    if isinstance(spec, dict):
        return from_dict(spec)
    kw = {"missing": missing} if outside is None else {"missing": missing, "outside": outside}
    if isinstance(spec, str):
        s = spec.strip()
        m = re.fullmatch(r"int:\s*(-?\d+)\s*\.\.\s*(-?\d+)", s)
        if m:
            return integers(int(m.group(1)), int(m.group(2)), **kw)
        m = re.fullmatch(r"([^:/]+):([^:/]+)/\s*(\d+)", s)
        if m:
            return count(m.group(1), m.group(2), int(m.group(3)), **kw)
        parts = s.split(":")
        if len(parts) == 3:
            if re.fullmatch(r"\d+\s*[A-Za-z]+", parts[2].strip()) and re.match(r"\d{4}-", parts[0].strip()):
                return calendar(parts[0].strip(), parts[1].strip(), parts[2].strip(), **kw)
            return width(*parts, **kw)
        raise InvalidParameter(f"bins: cannot read {spec!r}; use 'lo:hi:width', 'lo:hi/n', 'int:lo..hi', "
                               "'2013-01-01:2014-01-01:1d', a list of edges, or dphist.binning's constructors")
    if isinstance(spec, (list, tuple, np.ndarray)):
        return edges(spec, **kw)
    raise InvalidParameter(f"bins: cannot make bins from {type(spec).__name__} {spec!r}")


def from_dict(d: dict) -> Bins:
    """The inverse of :meth:`Bins.to_dict`."""
    try:
        kind = d["kind"]
        if kind == "grid":
            return Grid(from_dict(d["rows"]), from_dict(d["cols"]))
        kw = {"outside": d["outside"], "missing": d["missing"]}
        if kind == "width":
            return count(d["lo"], d["hi"], int(d["n"]), **kw)
        if kind == "edges":
            return edges(d["edges"], **kw)
        if kind == "categories":
            return categories(d["values"], **kw)
        if kind == "calendar":
            return calendar(d["start"], d["stop"], d["step"], **kw)
    except KeyError as exc:
        raise InvalidParameter(f"bins: the spec {d!r} lacks {exc}") from None
    raise InvalidParameter(f"bins: unknown kind {d.get('kind')!r}")
