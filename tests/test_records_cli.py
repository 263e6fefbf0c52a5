"""`dphist run --column ... --bins SPEC [--user-id U --max-contributions K]`: a column of records to a release.

Each test names the mutation of dphist/cli.py it kills."""
import json

import numpy as np
import pytest

from dphist.cli import main

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


@pytest.fixture()
def trips(tmp_path):
    rng = np.random.default_rng(1)
    path = tmp_path / "trips.parquet"
    pq.write_table(pa.table({"pickup_hour": rng.integers(0, 24, 3000), "rider": rng.integers(0, 300, 3000)}), path)
    return path


def test_run_a_column_at_person_level(trips, tmp_path):
    """Kills: --user-id / --max-contributions not reaching dphist.histogram (record-level noise), or the
    output header without the privacy unit and the bins."""
    out = tmp_path / "release.csv"
    assert main(["run", "-a", "identity", "-i", str(trips), "--column", "pickup_hour", "--bins", "0:24:1",
                 "--user-id", "rider", "--max-contributions", "5", "-e", "0.5", "--seed", "2", "-o", str(out)]) == 0
    text = out.read_text().splitlines()
    assert "# privacy unit: 5 records per person" in text
    spec = json.loads(next(line for line in text if line.startswith("# bins: "))[len("# bins: "):])
    assert spec["bins"]["n"] == 24 and spec["user_id"] == "rider" and spec["column"] == "pickup_hour"
    assert np.loadtxt(out).shape == (24,)


@pytest.mark.parametrize("extra, words", [
    (["--column", "nope", "--bins", "0:24:1"], "column 'nope' is not in"),
    (["--column", "pickup_hour", "--bins", "24:0:1"], "must be above lo"),
    (["--column", "pickup_hour", "--bins", "0:24:0"], "width must be positive"),
    (["--column", "pickup_hour"], "--column needs --bins"),
    (["--column", "pickup_hour", "--bins", "0:24:1", "--user-id", "rider", "--max-contributions", "0"],
     "max_contributions must be a positive integer"),
    (["--column", "pickup_hour", "--bins", "0:24:1", "--user-id", "rider"], "needs both user_id="),
    (["--column", "pickup_hour", "--bins", "0:24:1", "--records"], "--records, --domain and --clip belong"),
])
def test_bad_column_options_write_nothing(trips, tmp_path, capsys, extra, words):
    """Kills: an option error found after the run (budget spent, file written) or a traceback instead of
    one line naming the parameter."""
    out = tmp_path / "o.csv"
    assert main(["run", "-a", "identity", "-i", str(trips), "-e", "1", "-o", str(out)] + extra) == 2
    assert words in capsys.readouterr().err
    assert not out.exists()


def test_records_with_a_bin_count_still_work(tmp_path, capsys):
    """Kills: --bins read as a spec for one-value-per-line files (the existing --records --bins N)."""
    (tmp_path / "r.txt").write_text("0.5\n1.5\n1.7\n")
    assert main(["run", "-a", "identity", "-i", str(tmp_path / "r.txt"), "--records", "--domain", "0:2",
                 "--bins", "2", "-e", "1", "--seed", "1", "-o", str(tmp_path / "o.csv")]) == 0
    assert np.loadtxt(tmp_path / "o.csv").shape == (2,)
    assert main(["run", "-a", "identity", "-i", str(tmp_path / "r.txt"), "--records", "--domain", "0:2",
                 "--bins", "0:2:1", "-e", "1", "--seed", "1", "-o", str(tmp_path / "p.csv")]) == 2
    assert "needs --column" in capsys.readouterr().err


def test_audit_command_at_k_records_per_person(capsys):
    """Kills: --contributions parsed but not passed to the auditor (its pairs would stay one record apart),
    or a K <= 0 accepted."""
    assert main(["audit", "identity", "--fast", "--samples", "3000", "--seed", "1", "--contributions", "0"]) == 2
    assert "max_contributions must be a positive integer" in capsys.readouterr().err
    from dphist.audit import auditor
    seen = []
    real = auditor.audit

    def spy(*args, **kwargs):
        seen.append(kwargs.get("contributions"))
        return real(*args, **{**kwargs, "pairs": [p for p in auditor.pair_family("fast")][:1]})
    import dphist.audit.auditor as mod
    mod.audit = spy
    try:
        assert main(["audit", "identity", "--fast", "--samples", "3000", "--seed", "1", "--contributions", "3"]) == 0
    finally:
        mod.audit = real
    assert seen == [3] and "-k3" in capsys.readouterr().out


def test_bounds_proposes_a_spec_that_run_accepts(trips, tmp_path, capsys):
    """Kills: `dphist bounds` not wired into the parser, a printed spec that `run --bins` cannot parse or
    that does not reproduce the proposal, the ledger line missing, or person-level sensitivity not reaching
    the proposal (k = 5 must show sensitivity 5)."""
    assert main(["bounds", "-i", str(trips), "--column", "pickup_hour", "-e", "1", "--seed", "4",
                 "--bins", "8", "--user-id", "rider", "--max-contributions", "5"]) == 0
    out = capsys.readouterr().out
    assert "sensitivity=5 (5 records per person)" in out and "total is the sum" in out
    spec = next(line for line in out.splitlines() if line.startswith("bins spec: "))[len("bins spec: "):]
    lo, rest = spec.split(":")
    hi, n = rest.split("/")
    assert float(lo) < float(hi) and n == "8"
    # the hours 0..23 lie in the magnitude bins [0, 32): a proposal must cover them (5 records per person
    # at epsilon 1 leave a threshold far below the ~1,000 records per occupied magnitude bin)
    assert float(hi) >= 16
    release = tmp_path / "r.csv"
    assert main(["run", "-a", "identity", "-i", str(trips), "--column", "pickup_hour", "--bins", spec,
                 "-e", "1", "--seed", "1", "-o", str(release)]) == 0
    assert np.loadtxt(release).shape == (8,)


@pytest.mark.parametrize("extra, words", [
    (["--column", "nope", "-e", "1"], "column 'nope' is not in"),
    (["--column", "pickup_hour", "-e", "-1"], "epsilon"),
    (["--column", "pickup_hour", "-e", "1", "--bins", "0"], "--bins must be a positive"),
    (["--column", "pickup_hour", "-e", "1", "--beta", "2"], "beta must be between 0 and 1"),
])
def test_bad_bounds_options(trips, capsys, extra, words):
    """Kills: a bad epsilon, bin count, beta or column reaching the kernel (a charge, a traceback) instead of
    one line naming it."""
    assert main(["bounds", "-i", str(trips)] + extra) == 2
    assert words in capsys.readouterr().err
