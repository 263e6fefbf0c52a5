"""Histogram files and the command line: formats, errors that name the line, nothing half-written."""
import numpy as np
import pytest

from dphist import InputFileError, InvalidHistogram, InvalidParameter
from dphist.cli import main
from dphist.io import bin_records, read_histogram, write_array


def test_read_formats(tmp_path):
    np.save(tmp_path / "h.npy", np.array([1, 2, 3]))
    (tmp_path / "h.txt").write_text("1\n\n# comment\n2\n3\n")
    (tmp_path / "h.csv").write_text("count\n1\n2\n3\n")
    for name in ("h.npy", "h.txt", "h.csv"):
        assert np.array_equal(read_histogram(tmp_path / name), [1, 2, 3])


def test_parse_errors_name_the_line(tmp_path):
    (tmp_path / "bad.txt").write_text("1\n2\nthree\n")
    with pytest.raises(InputFileError, match="line 3: 'three'"):
        read_histogram(tmp_path / "bad.txt")
    (tmp_path / "neg.txt").write_text("1\n-2\n")
    with pytest.raises(InvalidHistogram, match="bin 1 is -2"):
        read_histogram(tmp_path / "neg.txt")
    (tmp_path / "x.json").write_text("[]")
    with pytest.raises(InputFileError, match="unsupported"):
        read_histogram(tmp_path / "x.json")
    with pytest.raises(InputFileError, match="does not exist"):
        read_histogram(tmp_path / "missing.npy")
    np.save(tmp_path / "m.npy", np.ones((2, 2, 2), dtype=int))     # a grid is 2-D at most (a 2-D one is read)
    with pytest.raises(InvalidHistogram, match="3 dimensions"):
        read_histogram(tmp_path / "m.npy")


def test_records_need_a_public_domain(tmp_path):
    (tmp_path / "r.txt").write_text("3\n5\n5\n9\n")
    assert np.array_equal(read_histogram(tmp_path / "r.txt", records=True, domain=(3, 9)),
                          [1, 0, 2, 0, 0, 0, 1])
    with pytest.raises(InvalidParameter, match="public domain"):
        read_histogram(tmp_path / "r.txt", records=True)
    with pytest.raises(InputFileError, match=r"#4 \(9\) lies outside"):
        read_histogram(tmp_path / "r.txt", records=True, domain=(0, 8))
    assert np.array_equal(bin_records([0.0, 0.5, 1.0], (0, 1), bins=2), [1, 2])


def test_write_is_atomic_and_refuses_existing(tmp_path):
    out = tmp_path / "o.csv"
    write_array(out, [1.5, 2.5])
    with pytest.raises(InvalidParameter, match="exists; pass --force"):
        write_array(out, [0.0])
    write_array(out, [0.0], force=True)
    assert np.loadtxt(out).tolist() == 0.0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.csv"]  # no temporary left behind


def test_cli_run_end_to_end(tmp_path, capsys):
    (tmp_path / "h.txt").write_text("\n".join(map(str, range(20))))
    out = tmp_path / "out.npy"
    assert main(["run", "-a", "identity", "-i", str(tmp_path / "h.txt"), "-e", "1", "--seed", "3",
                 "-o", str(out)]) == 0
    est = np.load(out)
    assert est.shape == (20,)
    assert main(["run", "-a", "identity", "-i", str(tmp_path / "h.txt"), "-e", "1", "--seed", "3",
                 "-o", str(out)]) == 2
    assert "exists" in capsys.readouterr().err
    assert main(["run", "-a", "identity", "-i", str(tmp_path / "h.txt"), "-e", "1", "--seed", "3",
                 "-o", str(tmp_path / "again.npy")]) == 0
    assert np.array_equal(np.load(tmp_path / "again.npy"), est)  # same seed, same release


@pytest.mark.parametrize("args, words", [
    (["-e", "0"], "epsilon"),
    (["-e", "nan"], "epsilon"),
    (["-e", "1", "-a", "idnetity"], "did you mean 'identity'"),
    (["-e", "1", "--param", "x"], "NAME=VALUE"),
])
def test_cli_errors(tmp_path, capsys, args, words):
    (tmp_path / "h.txt").write_text("1\n2\n")
    base = ["run", "-i", str(tmp_path / "h.txt"), "-o", str(tmp_path / "o.csv")]
    if "-a" not in args:
        base += ["-a", "identity"]
    assert main(base + args) == 2
    assert words in capsys.readouterr().err
    assert not (tmp_path / "o.csv").exists()


def test_cli_list_and_describe(capsys):
    assert main(["list", "--kind", "algorithm"]) == 0
    assert "identity" in capsys.readouterr().out
    assert main(["describe", "group-mean"]) == 0
    out = capsys.readouterr().out
    assert "spends: gamma_f" in out and "AHP" in out
    assert main(["describe", "uniform"]) == 0
    assert "whole" in capsys.readouterr().out
