"""External data directories: every ``.npy`` histogram in them becomes a dataset.

Directories come from ``DPHIST_DATA`` (``os.pathsep``-separated) or are added
with :func:`add_data_dir` (the CLI's ``--data-dir``).  A file ``X.npy`` is the
dataset named ``X``.  Library code knows no fixed folder: tests, notebooks and benchmarks find
the DPBench sources themselves (``tests/conftest.py`` documents the search: ``DPHIST_SHARED``, else
the ``shared`` folder beside the repository) and pass the path here; the sources are never copied
into the repository.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..errors import InvalidParameter
from ..io import read_histogram
from .dataset import Dataset

_extra_dirs: list[Path] = []

#: DPBench's names for its 1-D sources (Hay et al., SIGMOD 2016, Table 2) and their files.
DPBENCH_FILES = {
    "ADULT": "ADULTFRANK.n4096", "HEPTH": "HEPTH.n4096", "INCOME": "INCOME.n4096",
    "MEDCOST": "MEDCOST.n4096", "NETTRACE": "NETTRACE.n4096", "PATENT": "PATENT.n4096",
    "SEARCHLOGS": "SEARCHLOGS.n4096", "BIDS-ALL": "bids", "BIDS-FJ": "bids_j", "BIDS-FM": "bids_m",
    "MD-SAL": "GrossCompenMDSalary1", "MD-SAL-FA": "GrossCompenMDSalary2_filtered",
    "LC-REQ-ALL": "RejectStats_0_4096_no_outliers", "LC-REQ-F1": "RejectStats_0_4096_no_outliers_filter_7_1",
    "LC-REQ-F2": "RejectStats_0_4096_no_outliers_filter_7_2", "LC-DTIR-ALL": "RejectStats_4_4096_no_outliers",
    "LC-DTIR-F1": "RejectStats_4_4096_no_outliers_filter_7_1",
    "LC-DTIR-F2": "RejectStats_4_4096_no_outliers_filter_7_2",
}


#: DPBench's names for its 2-D sources (Hay et al., SIGMOD 2016, Table 3) and their 256 x 256 files.
DPBENCH_2D_FILES = {
    "BJ-CABS-S": "BeijingTaxiS_256_256", "BJ-CABS-E": "BeijingTaxiE_256_256", "GOWALLA": "checkin_256_256",
    "ADULT-2D": "Adult_2D_256_256", "SF-CABS-S": "cabspottingS_256_256", "SF-CABS-E": "cabspottingE_256_256",
    "MD-SAL-2D": "MDSalary2D_256_256", "LC-2D": "Loan_2D_256_256", "STROKE": "Stroke_2D_256_256",
    "TWITTER": "twitter_256_256",
}


def add_data_dir(path) -> Path:
    p = Path(path).expanduser()
    if not p.is_dir():
        raise InvalidParameter(f"data directory {str(p)!r} does not exist or is not a directory")
    if p not in _extra_dirs:
        _extra_dirs.append(p)
    return p


def data_dirs() -> list[Path]:
    env = os.environ.get("DPHIST_DATA", "")
    dirs = [Path(d).expanduser() for d in env.split(os.pathsep) if d]
    missing = [str(d) for d in dirs if not d.is_dir()]
    if missing:
        raise InvalidParameter(f"DPHIST_DATA names directories that do not exist: {', '.join(missing)}")
    return dirs + [d for d in _extra_dirs if d not in dirs]


def directory_datasets() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for d in data_dirs():
        for f in sorted(d.glob("*.npy")):
            out.setdefault(f.stem, f)
    return out


def load_npy_dataset(name: str, path: Path) -> Dataset:
    counts = np.load(path, allow_pickle=False)
    return Dataset(name, counts.ravel() if counts.ndim == 1 else counts, f"histogram file {path.name}",
                   f"{counts.size} bins as stored", source=str(path))


def dpbench(name: str) -> Dataset:
    """A DPBench source by its DPBench name (e.g. ``SEARCHLOGS``; 2-D: ``GOWALLA``), from a data directory."""
    if name in DPBENCH_2D_FILES:
        return dpbench_2d(name)
    if name not in DPBENCH_FILES:
        raise InvalidParameter(f"unknown DPBench dataset {name!r}; known: {', '.join(DPBENCH_FILES)}, "
                               f"{', '.join(DPBENCH_2D_FILES)}")
    return _dpbench_file(name, DPBENCH_FILES[name], "1-D", "4,096 bins")


def dpbench_2d(name: str) -> Dataset:
    """A DPBench 2-D source (256 x 256 cells) by its DPBench name (e.g. ``GOWALLA``), from a data
    directory holding DPBench's 2-D ``.npy`` sources (stored as floats; integral counts)."""
    if name not in DPBENCH_2D_FILES:
        raise InvalidParameter(f"unknown DPBench 2-D dataset {name!r}; known: {', '.join(DPBENCH_2D_FILES)}")
    return _dpbench_file(name, DPBENCH_2D_FILES[name], "2-D", "256 x 256 cells")


def _dpbench_file(name: str, stem: str, dims: str, domain: str) -> Dataset:
    found = directory_datasets()
    if stem not in found:
        raise FileNotFoundError(f"DPBench file {stem}.npy not found; set DPHIST_DATA to (or add_data_dir) "
                                f"the folder holding DPBench's {dims} .npy sources")
    ds = load_npy_dataset(stem, found[stem])
    return Dataset(name, ds.counts, f"DPBench {name}", domain, source=ds.source)


def load_file(path, records: bool = False, domain=None, bins=None, clip: bool = False,
              name: str | None = None) -> Dataset:
    """A dataset from a ``.npy`` / ``.csv`` / ``.txt`` file of counts, or of raw record values.

    Parsing is :func:`dphist.io.read_histogram` (the same reader as ``dphist
    run``): with ``records=True`` the values are binned over the *public*
    ``domain=(lo, hi)`` given by the caller (``bins`` equal-width bins, or
    unit bins for integer values); the domain is never taken from the data.
    """
    p = Path(path).expanduser()
    counts = read_histogram(p, records=records, domain=domain, bins=bins, clip=clip)
    what = "record values binned" if records else "counts"
    dom = f"{counts.size} bins" + (f" over [{domain[0]}, {domain[1]}]" if records and domain else "")
    return Dataset(name or p.stem, counts, f"{what} from {p.name}", dom, source=str(p))


def is_file_spec(name: str) -> bool:
    """Whether a dataset name is a path to a histogram file (ends in .npy, .csv or .txt)."""
    return str(name).lower().endswith((".npy", ".csv", ".txt"))
