"""Reading histograms from files and writing releases, with errors that name the line.

Input formats:

* ``.npy``: a 1-D integer array of counts, or a 2-D grid of counts (a 2-D histogram);
* ``.csv`` / ``.txt``: one number per line; blank lines and ``#`` comments are
  skipped; a CSV may start with one header line.

With ``records=True`` each number is one record's value and the histogram is
built over a *public* domain given by the caller (``domain=(lo, hi)``, with
``bins`` equal-width bins, or unit bins for integers): deriving the domain
from the data would leak it.  Values outside the domain are an error unless
``clip=True``.

Outputs are written to a temporary file and renamed into place, so a failure
leaves nothing half-written; an existing file is refused unless ``force``.
Every file gets the mode the umask gives (0644 under umask 022), like a plainly opened one.
"""
from __future__ import annotations

import math
import json
import os
import tempfile
from pathlib import Path

import numpy as np

from .errors import InputFileError, InvalidParameter
from .kernel import validate_counts, validate_grid

SUFFIXES = (".npy", ".csv", ".txt")


def _read_numbers(path: Path) -> list[float]:
    values: list[float] = []
    header_allowed = path.suffix.lower() == ".csv"
    with open(path, encoding="utf-8") as fh:
        for lineno, raw in enumerate(fh, start=1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            try:
                values.append(float(line))
            except ValueError:
                if header_allowed and not values:
                    header_allowed = False
                    continue
                raise InputFileError(f"{path}: line {lineno}: {raw.strip()!r} is not a number "
                                     "(expected one value per line)") from None
            header_allowed = False
    return values


def read_histogram(path, records: bool = False, domain: tuple[float, float] | None = None,
                   bins: int | None = None, clip: bool = False) -> np.ndarray:
    """Counts from ``path`` (see module docstring); raises :class:`InputFileError` or :class:`InvalidHistogram`."""
    path = Path(path)
    if not path.is_file():
        raise InputFileError(f"input file {str(path)!r} does not exist")
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise InputFileError(f"{path}: unsupported file type {suffix!r}; use one of {', '.join(SUFFIXES)}")
    if suffix == ".npy":
        try:
            data = np.load(path, allow_pickle=False)
        except Exception as exc:
            raise InputFileError(f"{path}: not a readable .npy array ({exc})") from None
    else:
        data = np.array(_read_numbers(path))
        if data.size == 0:
            raise InputFileError(f"{path}: no values found")
    if not records:
        if data.ndim == 2 and suffix == ".npy":     # a grid: validated cell by cell, kept in its shape
            flat, shape = validate_grid(data)
            return flat.reshape(shape)
        return validate_counts(data)
    return bin_records(data, domain, bins, clip, str(path))


def bin_records(values, domain, bins=None, clip=False, what="records") -> np.ndarray:
    """Histogram of raw record values over the public ``domain = (lo, hi)``."""
    if domain is None:
        raise InvalidParameter("binning records needs a public domain (lo, hi); it must not come from the data")
    lo, hi = float(domain[0]), float(domain[1])
    if not (math.isfinite(lo) and math.isfinite(hi) and hi > lo):
        raise InvalidParameter(f"domain must be finite with lo < hi, got {domain}")
    values = np.asarray(values, dtype=float).ravel()
    if not np.all(np.isfinite(values)):
        raise InputFileError(f"{what}: record value #{int(np.flatnonzero(~np.isfinite(values))[0]) + 1} is not finite")
    if bins is None:
        if lo != int(lo) or hi != int(hi) or np.any(values != np.round(values)):
            raise InvalidParameter("non-integer records or domain need an explicit number of bins")
        n, width = int(hi - lo) + 1, 1.0       # unit bins lo, lo+1, ..., hi
        idx = (values - lo).astype(np.int64)
    else:
        n = int(bins)
        if n < 1:
            raise InvalidParameter(f"bins must be at least 1, got {bins}")
        width = (hi - lo) / n
        idx = np.floor((values - lo) / width).astype(np.int64)
        idx[values == hi] = n - 1              # the last bin is closed on the right
    outside = (idx < 0) | (idx >= n)
    if outside.any():
        if not clip:
            first = int(np.flatnonzero(outside)[0])
            raise InputFileError(f"{what}: record value #{first + 1} ({values[first]:g}) lies outside the "
                                 f"domain [{lo:g}, {hi:g}]; widen the domain or clip")
        idx = np.clip(idx, 0, n - 1)
    return np.bincount(idx, minlength=n).astype(np.int64)


def check_output(path, force: bool = False, header: bool = False) -> tuple[Path, Path | None]:
    """Refuse an output :func:`write_array` could not write: its type, a missing folder, an existing
    file (or ``.npy`` sidecar, when a ``header`` goes with it) without ``force``.  Returns the path and
    the sidecar (or None); callers check before any budget is spent."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise InvalidParameter(f"output {str(path)!r}: unsupported type {suffix or '(none)'!r}; "
                               f"use {', '.join(SUFFIXES)}")
    if path.exists() and not force:
        raise InvalidParameter(f"output file {str(path)!r} exists; pass --force to overwrite")
    if not path.parent.is_dir():
        raise InvalidParameter(f"output folder {str(path.parent)!r} does not exist")
    sidecar = path.with_name(path.name + ".json") if suffix == ".npy" and header else None
    if sidecar is not None and sidecar.exists() and not force:
        raise InvalidParameter(f"output file {str(sidecar)!r} exists; pass --force to overwrite")
    return path, sidecar


def write_array(path, values, force: bool = False, header: str = "") -> Path:
    """Write ``values`` to ``.npy`` or ``.csv``/``.txt`` (one per line) atomically.

    ``header`` (e.g. the release's mode) becomes ``#`` comment lines of a text
    file; a ``.npy`` file cannot hold it, so it goes to ``<path>.json`` beside it.
    """
    path, sidecar = check_output(path, force, bool(header))
    suffix = path.suffix.lower()
    if sidecar is not None:
        atomic_write(sidecar, lambda fh: fh.write(json.dumps({"header": header.splitlines()}, indent=1).encode()))
    try:
        if suffix == ".npy":
            atomic_write(path, lambda fh: np.save(fh, np.asarray(values)))
        else:
            atomic_write(path, lambda fh: np.savetxt(fh, np.asarray(values), fmt="%.10g", header=header))
    except BaseException:
        if sidecar is not None:
            sidecar.unlink(missing_ok=True)
        raise
    return path


def current_umask() -> int:
    """The process's file-mode creation mask (read from ``/proc`` on Linux, else set and restored)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def umask_mode(path, directory: bool = False) -> None:
    """Give ``path`` the mode an ordinary ``open``/``mkdir`` would: 0666 (0777 for a folder) less the umask.

    ``tempfile`` creates 0600 files and 0700 folders; every file dphist writes follows the umask
    instead, whichever way it was written (one rule for releases, results, reports and audits)."""
    os.chmod(path, (0o777 if directory else 0o666) & ~current_umask())


def atomic_write(path, write, text: bool = False) -> Path:
    """Call ``write(fh)`` on a temporary file beside ``path``, then rename it over ``path``.

    A crash or an error leaves either the old file or none, never half a file.
    ``text`` opens the file as UTF-8 text (no newline translation), else binary.
    The file's mode follows the umask (:func:`umask_mode`), not ``tempfile``'s 0600.
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with (os.fdopen(fd, "w", encoding="utf-8", newline="") if text else os.fdopen(fd, "wb")) as fh:
            write(fh)
        umask_mode(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
