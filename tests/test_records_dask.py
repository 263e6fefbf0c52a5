"""``dphist.histogram`` on a Dask DataFrame, on a real local cluster of 2 worker processes on 127.0.0.1.

Kills: partitions binned with their own bounding key (counts differ from one machine), a person's rows
split between partitions (no shuffle), or a partition's counts lost in the sum."""
import numpy as np
import pytest

import dphist

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")
pd = pytest.importorskip("pandas")


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                       dashboard_address=None)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


def test_dask_counts_equal_the_single_machine_path(client, tmp_path):
    rng = np.random.default_rng(12)
    n = 60_000
    df = pd.DataFrame({"v": rng.standard_normal(n) * 10, "u": rng.integers(0, 9_000, n)})
    assert len(client.scheduler_info()["workers"]) == 2
    ddf = dd.from_pandas(df, npartitions=6)
    one = dphist.histogram(df, "v", "-30:30:0.5").counts
    assert np.array_equal(dphist.histogram(ddf, "v", "-30:30:0.5").counts, one)
    bounded = dphist.histogram(df, "v", "-30:30:0.5", user_id="u", max_contributions=2, seed=8).counts
    on_cluster = dphist.histogram(ddf, "v", "-30:30:0.5", user_id="u", max_contributions=2, seed=8).counts
    assert np.array_equal(on_cluster, bounded) and bounded.sum() < n
    df.iloc[: n // 2].to_parquet(tmp_path / "p0.parquet")
    df.iloc[n // 2:].to_parquet(tmp_path / "p1.parquet")
    globbed = dd.read_parquet(str(tmp_path / "p*.parquet"))
    assert np.array_equal(dphist.histogram(globbed, "v", "-30:30:0.5").counts, one)


def test_dask_missing_column_is_named(client):
    ddf = dd.from_pandas(pd.DataFrame({"v": [1.0]}), npartitions=1)
    with pytest.raises(dphist.InvalidParameter, match="column 'w' is not in the Dask DataFrame"):
        dphist.histogram(ddf, "w", "0:1:1")
