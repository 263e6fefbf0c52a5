"""``dphist.histogram`` on a Dask DataFrame: binned partition by partition by its workers, counts summed.

Record level: each partition is binned where it lives (the same code as one
machine, :func:`.histogram.local_counts`) and only the count vectors travel.
Person level: the rows are first numbered in table order, then shuffled so that
every person's rows meet in one partition (``DataFrame.shuffle(on=user_id)``);
each partition restores table order and bounds its persons with the run's key.
The selection of a person's records depends only on that person's rows, their
order and the key (:mod:`.bounding`), so the counts are identical to the
single-machine path for the same seed (tested with a local scheduler and two worker
processes, ``tests/test_records_dask.py``).  A path glob becomes a Dask
DataFrame with ``dask.dataframe.read_parquet`` / ``read_csv``.
"""
from __future__ import annotations

import numpy as np

from ..errors import InvalidParameter

_ROW = "__dphist_row"


def _partition_counts(df, cols, spec, user_id, k, key, row_chunk) -> np.ndarray:
    from .histogram import local_counts
    if user_id is not None:
        df = df.sort_values(_ROW, kind="stable")
    return local_counts(df, cols, spec, user_id, k, key, None, row_chunk)


def _number_rows(df, offset):
    df = df.copy()
    df[_ROW] = np.arange(offset, offset + len(df), dtype=np.int64)
    return df


def dask_counts(ddf, cols, spec, user_id, k, key, row_chunk) -> np.ndarray:
    import dask
    import dask.dataframe as dd
    if not isinstance(ddf, dd.DataFrame):
        raise InvalidParameter(f"a Dask source must be a dask DataFrame, got {type(ddf).__name__}")
    for c in cols + ((user_id,) if user_id else ()):
        if c not in ddf.columns:
            raise InvalidParameter(f"column {c!r} is not in the Dask DataFrame (its columns: "
                                   f"{', '.join(map(str, list(ddf.columns)[:20]))})")
    frame = ddf[list(cols) + ([user_id] if user_id else [])]
    if user_id is not None:
        lengths = frame.map_partitions(len).compute()
        offsets = np.concatenate(([0], np.cumsum(np.asarray(lengths))[:-1]))
        parts = [dask.delayed(_number_rows)(p, int(o)) for p, o in zip(frame.to_delayed(), offsets)]
        frame = dd.from_delayed(parts, meta=_number_rows(frame._meta, 0))
        frame = frame.shuffle(on=user_id)
    tasks = [dask.delayed(_partition_counts)(p, cols, spec, user_id, k, key, row_chunk) for p in frame.to_delayed()]
    total = dask.delayed(sum)(tasks, np.zeros(spec.size, dtype=np.int64)).compute()
    return np.asarray(total, dtype=np.int64)
