"""`dphist run` on 2-D histograms: a grid of counts (.npy), two columns of records, a 1-D-only preset refused.

Each test names the mutation of dphist/cli.py or dphist/io.py it kills."""
import numpy as np
import pytest

from dphist.cli import main


@pytest.fixture()
def grid_file(tmp_path):
    path = tmp_path / "grid.npy"
    np.save(path, np.arange(48, dtype=np.int64).reshape(6, 8))
    return path


def test_run_a_grid_of_counts_keeps_its_shape(grid_file, tmp_path, capsys):
    """Kills: a 2-D .npy refused as "not a 1-D vector" (io.read_histogram), the release saved flattened,
    the summary line without the grid's shape."""
    out = tmp_path / "release.npy"
    assert main(["run", "-a", "UG", "-i", str(grid_file), "-e", "1", "--seed", "3", "-o", str(out)]) == 0
    assert np.load(out).shape == (6, 8)
    assert "a 6 x 8 grid" in capsys.readouterr().err
    assert main(["run", "-a", "identity", "-i", str(grid_file), "-e", "1", "--seed", "3"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if not line.startswith("#")]
    assert len(rows) == 6 and all(len(r.split()) == 8 for r in rows)     # one grid row per line on stdout


def test_a_1d_preset_on_a_grid_is_refused_naming_it_and_nothing_is_written(grid_file, tmp_path, capsys):
    """Kills: a 1-D preset run on the flattened cells of a grid (silently wrong), an error that does not
    name the preset or what it supports, an output written before the refusal."""
    out = tmp_path / "release.npy"
    assert main(["run", "-a", "MWEM", "-i", str(grid_file), "-e", "1", "--seed", "3", "-o", str(out)]) != 0
    err = capsys.readouterr().err
    assert "'MWEM' supports 1-D" in err and "2-D histogram of shape (6, 8)" in err and "nothing was spent" in err
    assert not out.exists()


def test_two_columns_give_a_2d_histogram(tmp_path, capsys):
    """Kills: a second --column or --bins dropped (a 1-D histogram of the first column), the columns'
    specs paired in the wrong order (shape 3 x 4 instead of 4 x 3)."""
    rng = np.random.default_rng(1)
    path = tmp_path / "points.csv"
    xs, ys = rng.uniform(0, 4, 500), rng.uniform(0, 3, 500)
    path.write_text("x,y\n" + "\n".join(f"{a:.3f},{b:.3f}" for a, b in zip(xs, ys)) + "\n")
    out = tmp_path / "release.npy"
    assert main(["run", "-a", "UG", "-i", str(path), "--column", "x", "--column", "y", "--bins", "0:4:1",
                 "--bins", "0:3:1", "-e", "1", "--seed", "2", "-o", str(out)]) == 0
    assert np.load(out).shape == (4, 3)
    assert main(["run", "-a", "UG", "-i", str(path), "--column", "x", "--column", "y", "--bins", "0:4:1",
                 "-e", "1", "--seed", "2"]) != 0
    assert "two of each" in capsys.readouterr().err


@pytest.fixture()
def named_grid():
    """A 2-D dataset registered by name (as the built-in flights-delays is; tests/test_datasets.py checks
    that one): no CSV to parse in this file's worker."""
    from dphist import default_registry
    from dphist.datasets import Dataset

    def grid_loader():
        return Dataset("test-grid", np.arange(48, dtype=np.int64).reshape(6, 8), "a test grid", "6 x 8 cells")
    default_registry.register(grid_loader, kind="dataset", name="test-grid", replace=True)
    yield "test-grid"
    default_registry.unregister("dataset", "test-grid")


def test_run_takes_a_2d_dataset_by_name_and_saves_a_grid(named_grid, tmp_path, capsys):
    """Kills: --input read only as a file path (a dataset name "does not exist"), a named grid's release
    saved flattened, a misspelt name without the close match."""
    out = tmp_path / "release.npy"
    assert main(["run", "-a", "UG", "-i", named_grid, "-e", "1", "--seed", "3", "-o", str(out)]) == 0
    assert np.load(out).shape == (6, 8) and "a 6 x 8 grid" in capsys.readouterr().err
    assert main(["run", "-a", "UG", "-i", "test-grd", "-e", "1", "--seed", "3"]) == 2
    assert "did you mean 'test-grid'" in capsys.readouterr().err


def test_run_takes_a_dpbench_2d_name_from_a_data_directory(tmp_path, monkeypatch, capsys):
    """Kills: DPBench's 2-D names (GOWALLA is checkin_256_256.npy) not looked up in the data directories."""
    grid = np.arange(16, dtype=np.int64).reshape(4, 4)
    np.save(tmp_path / "checkin_256_256.npy", grid)
    monkeypatch.setenv("DPHIST_DATA", str(tmp_path))
    out = tmp_path / "release.npy"
    assert main(["run", "-a", "identity", "-i", "GOWALLA", "-e", "1", "--seed", "3", "-o", str(out)]) == 0
    assert np.load(out).shape == (4, 4)


def test_a_1d_preset_on_a_2d_name_exits_2_naming_it_and_writes_nothing(named_grid, tmp_path, capsys):
    """Kills: a 1-D preset run on a named grid's flattened cells, the output written before the refusal,
    an exit status other than the user-error 2."""
    out = tmp_path / "release.npy"
    assert main(["run", "-a", "DAWA", "-i", named_grid, "-e", "1", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "'DAWA' supports 1-D" in err and "(6, 8)" in err and "nothing was spent" in err
    assert not out.exists()
