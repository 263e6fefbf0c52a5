"""Record sources read in bounded memory: one chunk of rows at a time, as numpy arrays.

:func:`chunks` turns any supported source into an iterator of ``(row0, {column: array})``
(``row0``: the first row's number in the source, for error messages).  One code path
per kind of source; the binning downstream is the same for all of them.

===========================  ==============================================================
source                       how it is read
===========================  ==============================================================
``.parquet`` path / glob     pyarrow ``ParquetFile.iter_batches`` (only the named columns)
``.csv`` path / glob         pyarrow's streaming CSV reader (``open_csv``, only the named columns)
``.npy`` path                ``numpy.load(mmap_mode="r")``, sliced
numpy array / dict of them   sliced (a 1-D array is the column itself)
pandas DataFrame / Series    ``to_numpy`` of slices
Polars DataFrame / Series    ``to_numpy`` of slices; a LazyFrame is collected column by column
Arrow Table / RecordBatch    ``to_batches``; Arrow arrays become numpy per batch
===========================  ==============================================================

Why pyarrow (measured, BENCHMARKS.md "records"): its Parquet batches and streaming
CSV parser keep memory at a few batches whatever the file size, and its arrays
become numpy without a copy, so the one numpy binning path serves every source.
pyarrow, pandas and polars are imported only when a source needs them.
"""
from __future__ import annotations

import glob as _glob
from functools import partial
from pathlib import Path
from typing import Iterator

import numpy as np

from ..errors import InputFileError, InvalidParameter

#: rows per chunk (and per Arrow batch): 2^20 rows of a float64 column are 8 MiB
CHUNK_ROWS = 1 << 20
#: bytes of CSV text parsed per block (pyarrow infers the column types from the first block)
CSV_BLOCK = 8 << 20
SUFFIXES = (".parquet", ".pq", ".csv", ".npy")


def _need(module: str):
    try:
        return __import__(module, fromlist=["_"])
    except ImportError:
        raise InvalidParameter(f"reading this source needs {module.split('.')[0]}: "
                               "pip install 'dphist[records]'") from None


def arrow_to_numpy(arr) -> np.ndarray:
    """An Arrow array (or chunked array) as numpy: nulls become NaN / NaT / None."""
    pa = _need("pyarrow")
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if (pa.types.is_integer(arr.type) or pa.types.is_boolean(arr.type)) and arr.null_count:
        arr = arr.cast(pa.float64())
    return arr.to_numpy(zero_copy_only=False)


def _paths(source) -> list[Path]:
    text = str(source)
    if any(ch in text for ch in "*?["):
        found = sorted(Path(p) for p in _glob.glob(text))
        if not found:
            raise InputFileError(f"no file matches {text!r}")
        return found
    path = Path(source)
    if not path.is_file():
        raise InputFileError(f"input file {text!r} does not exist")
    return [path]


def _kind(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise InputFileError(f"{path}: unsupported record file type {suffix!r}; use .parquet, .csv or .npy")
    return {".pq": ".parquet"}.get(suffix, suffix)


def _check_columns(available, columns, what) -> None:
    for c in columns:
        if c not in available:
            shown = ", ".join(map(str, list(available)[:20]))
            raise InvalidParameter(f"column {c!r} is not in {what} (its columns: {shown})")


def _slices(n: int, arrays: dict, row_chunk: int):
    for start in range(0, n, row_chunk):
        yield start, {c: a[start:start + row_chunk] for c, a in arrays.items()}


def _parquet(path: Path, columns, row_chunk, row0):
    pq = _need("pyarrow.parquet")
    try:
        # no pre-buffering: pyarrow would otherwise read column chunks ahead and hold them (measured:
        # memory grows with the file, 1.2 GiB for 10^8 rows; buffered reads keep it flat)
        pf = pq.ParquetFile(path, pre_buffer=False, buffer_size=1 << 20)
    except Exception as exc:  # noqa: BLE001 - any reader failure names the file
        raise InputFileError(f"{path}: not a readable Parquet file ({exc})") from None
    _check_columns(pf.schema_arrow.names, columns, str(path))
    row = row0
    for batch in pf.iter_batches(batch_size=row_chunk, columns=list(columns), use_threads=False):
        yield row, {c: arrow_to_numpy(batch.column(c)) for c in columns}
        row += batch.num_rows


def _csv_row_of(path: Path, column: str, bad: str) -> int | None:
    """Error path only: the first data row (0-based) whose ``column`` reads ``bad``."""
    pa, csv = _need("pyarrow"), _need("pyarrow.csv")
    reader = csv.open_csv(path, convert_options=csv.ConvertOptions(include_columns=[column],
                                                                   column_types={column: pa.string()}))
    row = 0
    for batch in reader:
        hits = np.flatnonzero(batch.column(0).to_numpy(zero_copy_only=False) == bad)
        if hits.size:
            return row + int(hits[0])
        row += batch.num_rows
    return None


def _csv(path: Path, columns, row_chunk, row0, numeric=()):
    pa, csv = _need("pyarrow"), _need("pyarrow.csv")
    import csv as _stdcsv
    with open(path, encoding="utf-8", errors="replace", newline="") as fh:
        header = next(_stdcsv.reader(fh), [])
    _check_columns(header, columns, str(path))
    try:
        # columns binned by number are read as float64: no type inference (measured: a third less CPU),
        # and a text value is an error naming its row (_csv_error)
        types = {c: pa.float64() for c in numeric}
        reader = csv.open_csv(path, read_options=csv.ReadOptions(block_size=CSV_BLOCK, use_threads=True),
                              convert_options=csv.ConvertOptions(include_columns=list(columns), column_types=types))
    except pa.ArrowInvalid as exc:
        raise _csv_error(path, header, str(exc)) from None
    row = row0
    while True:
        try:
            batch = reader.read_next_batch()
        except StopIteration:
            return
        except pa.ArrowInvalid as exc:
            raise _csv_error(path, header, str(exc)) from None
        yield row, {c: arrow_to_numpy(batch.column(c)) for c in columns}
        row += batch.num_rows


def _csv_error(path: Path, header, text: str) -> InvalidParameter:
    import re
    m = re.search(r"column #(\d+).*?invalid value '([^']*)'", text)
    if not m:
        return InputFileError(f"{path}: {text}")
    column, bad = header[int(m.group(1))] if int(m.group(1)) < len(header) else "?", m.group(2)
    row = _csv_row_of(path, column, bad) if column != "?" else None
    where = f", row {row}" if row is not None else ""
    return InvalidParameter(f"{path}: column {column!r}{where}: {bad!r} is not a number (numeric bins need "
                            "a numeric column)")


def _npy(path: Path, columns, row_chunk, row0):
    try:
        arr = np.load(path, mmap_mode="r", allow_pickle=False)
    except Exception as exc:  # noqa: BLE001
        raise InputFileError(f"{path}: not a readable .npy array ({exc})") from None
    yield from _array(arr, columns, row_chunk)


def _array(arr: np.ndarray, columns, row_chunk):
    if arr.dtype.names:                       # a structured array: its fields are the columns
        _check_columns(arr.dtype.names, columns, "the array's fields")
        yield from _slices(arr.shape[0], {c: arr[c] for c in columns}, row_chunk)
        return
    if arr.ndim != 1:
        raise InvalidParameter(f"a record array must be 1-D (one value per record), got shape {arr.shape}")
    if len(columns) != 1:
        raise InvalidParameter("a plain array is one column; pass a dict of arrays or a data frame for more")
    yield from _slices(arr.shape[0], {columns[0]: arr}, row_chunk)


def chunks(source, columns: tuple[str, ...], row_chunk: int = CHUNK_ROWS, numeric=()
           ) -> Iterator[tuple[int, dict]]:
    """``(row0, {column: numpy array})`` chunks of ``source`` (module docstring); errors name the column.

    ``numeric``: columns binned by number (a CSV reader parses them as floats without inferring a type).
    """
    columns = tuple(columns)
    if isinstance(source, (str, Path)):
        row = 0
        for path in _paths(source):
            kind = _kind(path)
            reader = {".parquet": _parquet, ".csv": partial(_csv, numeric=numeric), ".npy": _npy}[kind]
            for row, part in reader(path, columns, row_chunk, row):
                yield row, part
                row += len(next(iter(part.values())))
        return
    if isinstance(source, np.ndarray):
        yield from _array(source, columns, row_chunk)
        return
    if isinstance(source, dict):
        _check_columns(source, columns, "the dict of arrays")
        arrays = {c: np.asarray(source[c]) if not hasattr(source[c], "to_numpy") else source[c] for c in columns}
        lengths = {len(a) for a in arrays.values()}
        if len(lengths) != 1:
            raise InvalidParameter(f"the columns {list(columns)} have different lengths {sorted(lengths)}")
        yield from ((r, {c: _as_numpy(a) for c, a in part.items()})
                    for r, part in _slices(lengths.pop(), arrays, row_chunk))
        return
    module = type(source).__module__.split(".")[0]
    if module == "pandas":
        yield from _pandas(source, columns, row_chunk)
    elif module == "polars":
        yield from _polars(source, columns, row_chunk)
    elif module == "pyarrow":
        yield from _arrow(source, columns, row_chunk)
    else:
        raise InvalidParameter(f"cannot read records from a {type(source).__name__}; pass a path (.csv, .parquet, "
                               ".npy, a glob), a numpy array, a dict of arrays, a pandas, Polars or Arrow table")


def _as_numpy(part) -> np.ndarray:
    if isinstance(part, np.ndarray):
        return part
    return np.asarray(part.to_numpy())


def _pandas(source, columns, row_chunk):
    import pandas as pd
    if isinstance(source, pd.Series):
        if len(columns) != 1 or (source.name is not None and source.name != columns[0]):
            raise InvalidParameter(f"column {columns[-1]!r} is not this Series (named {source.name!r})")
        source = source.to_frame(columns[0])
    _check_columns(source.columns, columns, "the data frame")
    for start in range(0, len(source), row_chunk):
        part = source.iloc[start:start + row_chunk]
        yield start, {c: _pandas_column(part[c]) for c in columns}


def _pandas_column(s) -> np.ndarray:
    kind = getattr(s.dtype, "kind", "O")
    if kind in "iub":          # numpy or nullable (Int64, boolean) integers: NA becomes NaN
        return s.to_numpy(dtype=float, na_value=np.nan) if s.hasnans else s.to_numpy(dtype=np.int64)
    if kind == "f":
        return s.to_numpy(dtype=float, na_value=np.nan)
    if kind in "mM":
        return s.to_numpy()
    return s.to_numpy(dtype=object, na_value=None)


def _polars(source, columns, row_chunk):
    import polars as pl
    if isinstance(source, pl.LazyFrame):
        names = source.collect_schema().names()
        _check_columns(names, columns, "the lazy frame")
        source = source.select(list(columns)).collect()
    if isinstance(source, pl.Series):
        if len(columns) != 1 or source.name not in ("", columns[0]):
            raise InvalidParameter(f"column {columns[-1]!r} is not this Series (named {source.name!r})")
        source = source.to_frame(columns[0])
    _check_columns(source.columns, columns, "the data frame")
    for start in range(0, source.height, row_chunk):
        part = source.slice(start, row_chunk)
        yield start, {c: part.get_column(c).to_numpy() for c in columns}   # nulls: NaN / None


def _arrow(source, columns, row_chunk):
    import pyarrow as pa
    if isinstance(source, (pa.Array, pa.ChunkedArray)):
        if len(columns) != 1:
            raise InvalidParameter("an Arrow array is one column; pass a table for more")
        source = pa.table({columns[0]: source})
    if isinstance(source, pa.RecordBatch):
        source = pa.Table.from_batches([source])
    if not isinstance(source, pa.Table):
        raise InvalidParameter(f"cannot read records from an Arrow {type(source).__name__}")
    _check_columns(source.column_names, columns, "the Arrow table")
    row = 0
    for batch in source.select(list(columns)).to_batches(max_chunksize=row_chunk):
        yield row, {c: arrow_to_numpy(batch.column(c)) for c in columns}
        row += batch.num_rows
