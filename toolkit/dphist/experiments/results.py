"""The tidy results table: one row per trial x workload x metric (x reference).

Kept as plain columns (a dict of numpy arrays) so the engine needs no pandas
(``pandas.DataFrame(results.columns)`` converts).  The CSV written
during a sweep is the resumption record: a cell counts as finished only when
all its rows are present.
"""
from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Iterable

import numpy as np

from ..errors import InvalidParameter
from ..io import atomic_write

#: Identifying coordinates of a cell (one pipeline run).
CELL_KEYS = ("algorithm", "dataset", "domain", "scale", "epsilon", "trial", "seed")
TIME_COLUMNS = ("time_total", "time_initializer", "time_sorter", "time_partitioner", "time_finalizer")
COLUMNS = (*CELL_KEYS, "sampled", "unattributed", "workload", "metric", "reference", "value", *TIME_COLUMNS)
_INT = {"domain", "scale", "trial", "seed"}
_FLOAT = {"epsilon", "value", *TIME_COLUMNS}
_BOOL = {"sampled", "unattributed"}


def _convert(column: str, values: list) -> np.ndarray:
    if column in _INT:
        return np.array([int(v) for v in values], dtype=np.int64)
    if column in _FLOAT:
        return np.array([float(v) for v in values], dtype=float)
    if column in _BOOL:
        return np.array([v in (True, "True", "true", "1", 1) for v in values], dtype=bool)
    return np.array([str(v) for v in values], dtype=object)


def cell_key(row) -> tuple:
    """The coordinates of the cell a row belongs to (floats compared exactly: repr round-trips)."""
    return (str(row["algorithm"]), str(row["dataset"]), int(row["domain"]), int(row["scale"]),
            float(row["epsilon"]), int(row["trial"]), int(row["seed"]))


class Results:
    """Columns of equal length; filtering and grouped means for the analysis and plots."""

    def __init__(self, columns: dict[str, np.ndarray] | None = None):
        columns = columns or {c: [] for c in COLUMNS}
        self.columns = {c: _convert(c, list(v)) if not isinstance(v, np.ndarray) else v
                        for c, v in columns.items()}
        sizes = {len(v) for v in self.columns.values()}
        if len(sizes) > 1:
            raise InvalidParameter(f"result columns differ in length: {sorted(sizes)}")

    @classmethod
    def from_rows(cls, rows: Iterable[dict]) -> "Results":
        rows = list(rows)
        return cls({c: _convert(c, [r[c] for r in rows]) for c in COLUMNS})

    def __len__(self) -> int:
        return len(next(iter(self.columns.values()))) if self.columns else 0

    def __getitem__(self, column: str) -> np.ndarray:
        if column not in self.columns:
            raise InvalidParameter(f"no result column {column!r}; columns are {', '.join(self.columns)}")
        return self.columns[column]

    def rows(self) -> list[dict]:
        cols = list(self.columns)
        return [dict(zip(cols, (self.columns[c][i].item() if isinstance(self.columns[c][i], np.generic)
                                else self.columns[c][i] for c in cols))) for i in range(len(self))]

    def where(self, mask) -> "Results":
        return Results({c: v[mask] for c, v in self.columns.items()})

    def filter(self, **equal) -> "Results":
        """Rows whose columns equal the given values (a list/tuple value means "any of")."""
        mask = np.ones(len(self), dtype=bool)
        for c, want in equal.items():
            col = self[c]
            mask &= np.isin(col, list(want)) if isinstance(want, (list, tuple, set)) else (col == want)
        return self.where(mask)

    def unique(self, column: str) -> list:
        """Distinct values, sorted (names case-insensitively)."""
        vals = self[column]
        seen = list(dict.fromkeys(vals.tolist()))
        return sorted(seen, key=lambda v: (str(v).lower(), str(v))) if vals.dtype == object else sorted(seen)

    def cells(self) -> Results:
        """One row per cell (the first row of each), e.g. for timings."""
        seen, first = set(), []
        for i, key in enumerate(zip(*(self[c].tolist() for c in CELL_KEYS))):
            if key not in seen:
                seen.add(key)
                first.append(i)
        return self.where(np.array(first, dtype=np.int64))

    def aggregate(self, by: Iterable[str], value: str = "value") -> dict[tuple, dict]:
        """Mean, standard deviation and count of ``value`` per group of ``by`` columns."""
        by = list(by)
        keys = list(zip(*(self[c].tolist() for c in by))) if by else [()] * len(self)
        index: dict[tuple, list[int]] = {}
        for i, k in enumerate(keys):
            index.setdefault(k, []).append(i)
        vals = self[value]
        out = {}
        for k, idx in index.items():
            v = vals[idx]
            mean, half = mean_confidence_interval(v)
            out[k] = {"mean": mean, "std": float(v.std(ddof=1)) if v.size > 1 else 0.0,
                      "count": int(v.size), "median": float(np.median(v)),
                      "ci_low": mean - half, "ci_high": mean + half}
        return out

    # ------------------------------------------------------------------ files
    def to_json(self, path, meta: dict | None = None) -> Path:
        payload = {"meta": meta or {}, "columns": list(self.columns), "rows": self.rows()}
        # one dumps + one write: json.dump streams many small chunks and is several times slower
        return _atomic_write(Path(path), lambda fh: fh.write(json.dumps(payload, default=_json_default)))

    @classmethod
    def read_csv(cls, path) -> "Results":
        rows, _ = read_csv_rows(path)
        return cls.from_rows(rows)


def mean_confidence_interval(values, level: float = 0.95) -> tuple[float, float]:
    """``(mean, half_width)`` of the Student-t confidence interval for the mean of ``values``.

    The trials of one cell are independent runs (their seeds are spawned apart), so the t interval
    on ``n - 1`` degrees of freedom is the textbook one; one value has an infinite half-width (no
    spread can be estimated from it).  ``scipy.stats`` is imported here, not at module import, to
    keep the command line's start-up light.
    """
    if not 0.0 < level < 1.0:
        raise InvalidParameter(f"confidence level must be in (0, 1), got {level!r}")
    v = np.asarray(values, dtype=float).ravel()
    if v.size == 0:
        raise InvalidParameter("confidence interval of no values")
    mean = float(v.mean())
    if v.size == 1:
        return mean, float("inf")
    from scipy import stats
    half = float(stats.t.ppf(0.5 + level / 2.0, v.size - 1) * v.std(ddof=1) / np.sqrt(v.size))
    return mean, half


def _json_default(obj):
    if isinstance(obj, np.generic):
        return obj.item()
    raise TypeError(f"{type(obj).__name__} is not JSON serialisable")


def _write_csv(fh, rows, header: bool):
    w = csv.writer(fh, lineterminator="\n")
    if header:
        w.writerow(COLUMNS)
    floats = [c in _FLOAT for c in COLUMNS]
    # repr keeps every float exactly (round-trip); plain writer rows are several times cheaper than DictWriter
    w.writerows([repr(float(r[c])) if f else r.get(c, "") for c, f in zip(COLUMNS, floats)] for r in rows)


def _atomic_write(path: Path, write) -> Path:
    """Text files of the engine, written through the one atomic writer of :mod:`dphist.io`."""
    return atomic_write(path, write, text=True)


def read_csv_rows(path) -> tuple[list[dict], int]:
    """Rows of a results CSV and the number of malformed lines dropped (e.g. a line cut by a crash)."""
    rows, bad = [], 0
    with open(path, encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if header is None:
            return [], 0
        if tuple(header) != COLUMNS:
            raise InvalidParameter(f"{path} is not a dphist results file (its columns are {header}); "
                                   "choose another output folder or pass --force to replace it")
        for line in reader:
            if len(line) != len(COLUMNS):
                bad += 1
                continue
            row = dict(zip(COLUMNS, line))
            try:
                cell_key(row), float(row["value"])
            except ValueError:
                bad += 1
                continue
            rows.append(row)
    return rows, bad


class CsvAppender:
    """Appends finished cells' rows to the sweep CSV, one ``write`` and flush per cell batch."""

    def __init__(self, path: Path):
        self.path = path
        new = not path.exists() or path.stat().st_size == 0
        self.fh = open(path, "a", encoding="utf-8", newline="")
        if new:
            _write_csv(self.fh, [], header=True)
            self.fh.flush()

    def append(self, rows: list[dict]) -> None:
        import io
        buf = io.StringIO()
        _write_csv(buf, rows, header=False)
        self.fh.write(buf.getvalue())
        self.fh.flush()

    def close(self) -> None:
        self.fh.close()
