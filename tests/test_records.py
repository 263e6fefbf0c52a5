"""From records to a histogram: readers, person-level bounding, the kernel at k records per person,
bad input.  Each test names the mutation it kills (in dphist/records/, kernel/persons.py, pipeline.py,
audit/)."""
import numpy as np
import pytest

import dphist
from dphist import InputFileError, InvalidParameter
from dphist.kernel import PrivateKernel, SeededLaplace
from dphist.kernel.persons import PersonLevelNoise
from dphist.records import bounding

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pd = pytest.importorskip("pandas")
pl = pytest.importorskip("polars")


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(7)
    n = 5_003                                    # not a multiple of the chunk size below
    return {"age": rng.integers(-5, 105, n), "user": rng.integers(0, 700, n),
            "w": rng.standard_normal(n)}


def _sources(table, tmp_path):
    df = pd.DataFrame(table)
    df.to_csv(tmp_path / "t.csv", index=False)
    pq.write_table(pa.table(table), tmp_path / "t.parquet", row_group_size=1000)
    half = len(df) // 2
    pq.write_table(pa.table(df.iloc[:half].reset_index(drop=True)), tmp_path / "part-0.parquet")
    pq.write_table(pa.table(df.iloc[half:].reset_index(drop=True)), tmp_path / "part-1.parquet")
    np.save(tmp_path / "age.npy", table["age"])
    return {"numpy": table["age"], "dict": table, "pandas": df, "pandas-series": df["age"],
            "polars": pl.DataFrame(table), "polars-series": pl.Series("age", table["age"]),
            "polars-lazy": pl.DataFrame(table).lazy(), "arrow": pa.table(table),
            "csv": str(tmp_path / "t.csv"), "parquet": tmp_path / "t.parquet",
            "glob": str(tmp_path / "part-*.parquet"), "npy": tmp_path / "age.npy"}


def test_every_reader_gives_the_same_counts(table, tmp_path):
    """Kills: a reader dropping the last partial chunk, or a glob reading one file only."""
    expected = np.bincount(np.clip(table["age"], 0, 99), minlength=100)
    for name, src in _sources(table, tmp_path).items():
        h = dphist.histogram(src, "age", "0:100:1", row_chunk=999)
        assert np.array_equal(h.counts, expected), name


def test_person_level_every_reader_agrees(table, tmp_path):
    """Kills: a reader that reorders rows (the selection follows each person's rows in table order)."""
    srcs = _sources(table, tmp_path)
    ref = dphist.histogram(table, "age", "0:100:1", user_id="user", max_contributions=2, seed=5).counts
    for name in ("pandas", "polars", "arrow", "csv", "parquet", "glob"):
        h = dphist.histogram(srcs[name], "age", "0:100:1", user_id="user", max_contributions=2, seed=5,
                             row_chunk=999)
        assert np.array_equal(h.counts, ref), name


def _own_bins(persons, per_person):
    """A table where every record of person p sits in bins p * per_person + r: counts reveal who kept what."""
    users = np.repeat(np.arange(persons), per_person)
    values = np.arange(persons * per_person)
    return {"v": values, "u": users}


def test_each_person_keeps_at_most_k_records():
    """Kills: rank <= k instead of rank < k (k + 1 records kept), or bounding skipped."""
    t = _own_bins(50, 6)
    h = dphist.histogram(t, "v", f"0:{300}:1", user_id="u", max_contributions=2, seed=1)
    per_person = h.counts.reshape(50, 6).sum(axis=1)
    assert per_person.max() == 2 and per_person.min() == 2
    assert h.max_contributions == 2 and h.privacy_unit == "2 records per person"


def test_neighbouring_tables_differ_by_at_most_k():
    """Kills: a table-wide random permutation (another person's choice would move with the table), or
    a bound that lets one person contribute more than k: L1 <= k for tables differing in one person."""
    rng = np.random.default_rng(3)
    users = rng.integers(0, 400, 6000)
    values = rng.integers(0, 50, 6000)
    k = 3
    for victim in (0, 17, 399):
        keep = users != victim
        a = dphist.histogram({"v": values, "u": users}, "v", "0:50:1", user_id="u", max_contributions=k,
                             seed=11).counts
        b = dphist.histogram({"v": values[keep], "u": users[keep]}, "v", "0:50:1", user_id="u",
                             max_contributions=k, seed=11).counts
        assert 0 < np.abs(a - b).sum() <= k
        assert np.all(a >= b)          # removing a person only removes that person's kept records


def test_selection_is_uniform_and_blind_to_values():
    """Kills: keeping each person's first k records, or the k smallest values (both biased)."""
    t = _own_bins(1, 6)
    kept = np.zeros(6)
    trials = 3000
    for s in range(trials):
        kept += dphist.histogram(t, "v", "0:6:1", user_id="u", max_contributions=2, seed=s).counts
    freq = kept / trials                              # each record kept with probability 2/6
    assert np.all(np.abs(freq - 1 / 3) < 4 * np.sqrt((1 / 3) * (2 / 3) / trials))
    # the same persons and seed with other values keep the same rows
    rows = np.arange(600)
    users = rows % 37
    a = dphist.histogram({"v": rows, "u": users}, "v", "0:600:1", user_id="u", max_contributions=2, seed=9)
    b = dphist.histogram({"v": rows[::-1].copy(), "u": users}, "v", "0:600:1", user_id="u",
                         max_contributions=2, seed=9)
    assert np.array_equal(np.flatnonzero(a.counts), np.sort(599 - np.flatnonzero(b.counts)))


def test_spilled_and_large_block_paths_match_memory(monkeypatch):
    """Kills: spill files keyed by a different hash than the blocks (a person split across parts), or
    the large-block split losing rows."""
    rng = np.random.default_rng(4)
    users = rng.integers(0, 2000, 40_000)
    values = rng.integers(0, 64, 40_000)
    src = {"v": values, "u": users}
    ref = dphist.histogram(src, "v", "0:64:1", user_id="u", max_contributions=2, seed=2).counts
    monkeypatch.setattr(bounding, "MEMORY_ROWS", 5_000)
    spilled = dphist.histogram(src, "v", "0:64:1", user_id="u", max_contributions=2, seed=2, row_chunk=3000)
    assert np.array_equal(spilled.counts, ref)
    monkeypatch.setattr(bounding, "_POS_BITS", 10)        # blocks of at most 1,024 rows
    small_blocks = dphist.histogram(src, "v", "0:64:1", user_id="u", max_contributions=2, seed=2).counts
    assert np.array_equal(small_blocks, ref)


def test_text_person_ids_and_2d():
    """Kills: text ids hashed per chunk (a person split by a chunk boundary), or a 2-D shape flattened."""
    t = {"a": np.array([0, 1, 1, 2] * 50), "b": np.array([0, 0, 1, 1] * 50),
         "u": np.array([f"p{i % 13}" for i in range(200)], dtype=object)}
    h = dphist.histogram(t, ("a", "b"), ("0:3:1", "0:2:1"), user_id="u", max_contributions=1, seed=0,
                         row_chunk=7)
    assert h.counts.shape == (3, 2) and h.counts.sum() == 13
    assert h.spec()["shape"] == [3, 2] and h.spec()["bins"]["kind"] == "grid"


def test_release_carries_spec_and_privacy_unit():
    """Kills: Pipeline.run ignoring a histogram's k (noise at record level), or the spec not recorded."""
    t = _own_bins(40, 4)
    h = dphist.histogram(t, "v", "0:160:1", user_id="u", max_contributions=3, seed=1)
    rel = dphist.make_algorithm("identity").run(h, 1.0, seed=4)
    base = dphist.make_algorithm("identity").run(h.counts, 1.0, seed=4)
    assert rel.contributions == 3 and rel.privacy_unit == "3 records per person"
    assert np.allclose(rel.estimate - h.counts, 3 * (base.estimate - h.counts))    # noise scale times k
    assert all(e.sensitivity == 3.0 and "3 records per person" in e.note for e in rel.ledger)
    assert "privacy unit: 3 records per person" in str(rel.ledger)
    d = rel.to_dict()
    assert d["privacy_unit"] == "3 records per person" and d["binning"]["bins"]["n"] == 160
    assert rel.rerun(h).estimate.tolist() == rel.estimate.tolist()
    with pytest.raises(InvalidParameter, match="below the histogram's max_contributions=3"):
        dphist.make_algorithm("identity").run(h, 1.0, seed=4, contributions=1)
    pipe = dphist.make_algorithm("identity").at_contributions(3)    # a pipeline calibrated to k itself
    assert pipe.spec["contributions"] == 3 and dphist.Pipeline.from_spec(pipe.spec).contributions == 3
    assert np.array_equal(pipe.run(h.counts, 1.0, seed=4).estimate, rel.estimate)
    assert "contributions" not in dphist.make_algorithm("identity").spec        # record level: spec unchanged
    record_level = dphist.histogram(t, "v", "0:160:1")
    assert record_level.privacy_unit == "1 record" and "record level" in record_level.notes[0]
    assert dphist.make_algorithm("identity").run(record_level, 1.0, seed=4).to_dict()["privacy_unit"] == "1 record"


class _Recorder:
    name, mode = "recorder", "research"

    def __init__(self):
        self.calls = []

    def laplace_mechanism(self, values, sensitivity, epsilon, *, integral=False, support=None):
        self.calls.append(("laplace", sensitivity, epsilon, support))
        return np.asarray(values, dtype=float)

    def exponential_mechanism(self, scores, sensitivity, epsilon, *, monotonic=False):
        self.calls.append(("exponential", sensitivity, epsilon))
        return 0

    def laplace(self, scale, size):
        self.calls.append(("raw", scale))
        return np.zeros(size)


def test_every_primitive_is_scaled_by_k():
    """Kills: scaling only laplace.identity (the exponential mechanism, intervals, raw draws at record level)."""
    rec = _Recorder()
    kernel = PrivateKernel(np.array([3, 1, 4, 1]), rec, contributions=4)
    h = kernel.handle("c", "finalizer", 10.0)
    h.laplace_identity(1.0)
    h.laplace_intervals([0, 0], [2, 4], 1.0)          # overlapping: coverage 2
    h.exponential(lambda x: x.astype(float), 4, 1.0, 1.0)
    kernel.noise.laplace(0.5, 3)
    assert rec.calls == [("laplace", 4.0, 1.0, 4), ("laplace", 8.0, 1.0, 8), ("exponential", 4.0, 1.0),
                         ("raw", 2.0)]
    assert [e.sensitivity for e in kernel.ledger] == [4.0, 8.0, 4.0]
    assert isinstance(kernel.noise, PersonLevelNoise)
    plain = PrivateKernel(np.array([1]), SeededLaplace(np.random.default_rng(0)))
    assert not isinstance(plain.noise, PersonLevelNoise) and plain.ledger.privacy_unit == "1 record"


def test_probes_at_k_keep_the_runs_kind_and_k():
    """Kills: a PersonLevelNoise without ``probe()`` (the kernel would probe user code with seeded float
    noise, so a release-mode component asking for raw float noise would pass the probe and fail only after
    the charge), or a probe that forgets k."""
    from dphist.kernel import ExactNoise
    from dphist.kernel.exact import GeneratorWords
    from dphist.errors import PrivacyViolation
    kernel = PrivateKernel(np.array([3, 1, 4]), ExactNoise(GeneratorWords(np.random.default_rng(0))),
                           contributions=2)
    probe = kernel.noise.probe()
    assert isinstance(probe, PersonLevelNoise) and probe.k == 2 and isinstance(probe.inner, ExactNoise)
    with pytest.raises(PrivacyViolation, match="raw floating-point"):
        probe.laplace(1.0, 3)


def test_audit_at_k_records_per_person():
    """Kills: an audit whose pairs differ by one record when contributions=k (it could not see a pipeline
    calibrated to one record leak on k-record neighbours), or at_contributions not reaching the kernel."""
    from dphist.audit import audit
    from dphist.audit.pairs import FULL_PAIRS
    pair = [p for p in FULL_PAIRS if p.name == "flat5-middle"]
    ok = audit("identity", epsilon=1.0, pairs=pair, contributions=3, samples=40_000, seed=1, workers=1)
    assert ok.passed and ok.witness.pair.counts_prime.sum() - ok.witness.pair.counts.sum() == 3
    leaky = audit("identity", epsilon=1.0, pairs=[p.scaled(3) for p in pair], samples=40_000, seed=1, workers=1)
    assert not leaky.passed and leaky.epsilon_lower_bound > 1.5   # record-level noise, 3-record neighbours


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("name", ["dict", "pandas", "polars", "arrow", "csv", "parquet", "npy-structured"])
def test_missing_column_is_named(table, tmp_path, name):
    """Kills: a reader that fails with a KeyError (or reads another column) when the column is absent."""
    srcs = _sources(table, tmp_path)
    srcs["npy-structured"] = np.zeros(3, dtype=[("age", int)])
    with pytest.raises(InvalidParameter, match="column 'agee' is not in"):
        dphist.histogram(srcs[name], "agee", "0:100:1")


@pytest.mark.parametrize("block", [8 << 20, 1 << 12])
def test_non_number_in_a_numeric_column_names_the_row(tmp_path, monkeypatch, block):
    """Kills: a CSV reader reporting Arrow's message without the row, naming the column by its place in
    the columns read instead of the file's (here the second), or coercing the value to missing."""
    from dphist.records import sources
    monkeypatch.setattr(sources, "CSV_BLOCK", block)
    p = tmp_path / "bad.csv"
    p.write_text("x,age\n" + "0,1\n" * 70_000 + "0,abc\n0,2\n")
    with pytest.raises(InvalidParameter, match=r"column 'age', row 70000: 'abc' is not a number"):
        dphist.histogram(str(p), "age", "0:10:1")
    df = pd.DataFrame({"age": ["1", "x"]})
    with pytest.raises(InvalidParameter, match=r"column 'age', row 1: 'x'"):
        dphist.histogram(df, "age", "0:10:1")


def test_domain_not_matching_the_column_type():
    """Kills: numeric bins accepting a text column (every value missing) or calendar bins a number."""
    with pytest.raises(InvalidParameter, match="column 'name'.*not a number"):
        dphist.histogram({"name": np.array(["ann", "bob"], dtype=object)}, "name", "0:10:1")
    with pytest.raises(InvalidParameter, match="column 'x'.*calendar"):
        dphist.histogram({"x": np.arange(3)}, "x", "2013-01-01:2013-02-01:1d")
    with pytest.raises(InvalidParameter, match="column 'x'.*categories"):
        dphist.histogram({"x": np.arange(3.0)}, "x", dphist.binning.categories(["a"]))


@pytest.mark.parametrize("kwargs, words", [
    ({"max_contributions": 0}, "max_contributions must be a positive integer, got 0"),
    ({"max_contributions": -2}, "max_contributions must be a positive integer"),
    ({"max_contributions": 1.5}, "max_contributions must be a positive integer"),
    ({"max_contributions": True}, "max_contributions must be a positive integer"),
    ({"max_contributions": None}, "needs both user_id= and max_contributions="),
])
def test_bad_max_contributions(kwargs, words):
    """Kills: accepting k <= 0 (sensitivity 0: no noise), a fractional k, or user_id without k."""
    with pytest.raises(InvalidParameter, match=words):
        dphist.histogram({"v": np.arange(3), "u": np.arange(3)}, "v", "0:3:1", user_id="u", **kwargs)
    with pytest.raises(InvalidParameter):
        dphist.make_algorithm("identity").run(np.array([1, 2]), 1.0, seed=1, contributions=kwargs.get(
            "max_contributions") or 0)


@pytest.mark.parametrize("users, row", [(np.array([1.0, np.nan, 2.0]), 1),
                                        (np.array(["a", "b", None], dtype=object), 2)])
def test_user_column_with_nulls(users, row):
    """Kills: null person ids hashed as one person (or dropped silently)."""
    with pytest.raises(InvalidParameter, match=f"user id column 'u', row {row}: the id is missing"):
        dphist.histogram({"v": np.arange(3), "u": users}, "v", "0:3:1", user_id="u", max_contributions=1)


def test_bins_are_required_and_never_read_from_the_data(tmp_path):
    """Kills: a default domain taken from the data's min and max."""
    with pytest.raises(InvalidParameter, match="bins are required and must be public"):
        dphist.histogram(np.arange(5), "v", None)
    with pytest.raises(InputFileError, match="does not exist"):
        dphist.histogram(str(tmp_path / "nope.parquet"), "v", "0:1:1")
    with pytest.raises(InputFileError, match="no file matches"):
        dphist.histogram(str(tmp_path / "nope-*.parquet"), "v", "0:1:1")


def test_private_bounds_are_charged_and_ignore_outliers():
    """Kills: bounds read from the data (the outlier 10^12 would set hi), an uncharged measurement, or a
    threshold without k (person level)."""
    from dphist.records import private_bounds
    rng = np.random.default_rng(0)
    x = np.append(rng.normal(40, 10, 50_000), 1e12)
    b = private_bounds(x, "age", 0.5, seed=1)
    assert b.lo >= 1 and 64 <= b.hi <= 128
    assert [(e.primitive, e.epsilon, e.sensitivity) for e in b.ledger] == [("laplace.identity", 0.5, 1.0)]
    users = rng.integers(0, 5000, x.size)
    bk = private_bounds({"age": x, "u": users}, "age", 0.5, user_id="u", max_contributions=4, seed=1)
    assert bk.ledger.entries[0].sensitivity == 4.0 and bk.threshold == pytest.approx(4 * b.threshold)
    assert b.bins(10).n == 10
    with pytest.raises(InvalidParameter, match="no magnitude bin clears the threshold"):
        private_bounds(np.array([1.0, 2.0]), "age", 0.1, seed=1)
