"""The dask engine on a process-based ``LocalCluster``: graphs and Stores must pickle."""

from __future__ import annotations

import dask
import dask.dataframe as dd
import pandas as pd
import pytest
from dask_helpers import canonical, data_keys, header_bytes, sales, write_sales

import kartoframe as kf


@pytest.mark.slow
def test_read_write_update_on_worker_processes(file_store) -> None:
    distributed = pytest.importorskip("distributed")
    expected = write_sales(file_store)
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster, set_as_default=False) as client,
    ):
        # reads: pruning, projection, known categories and divisions, all on other processes
        ddf = kf.read_dataset_as_ddf(
            "ds",
            file_store,
            predicates=[[("product", "in", [1, 2])]],
            categoricals=["country"],
            dask_index_on="product",
        )
        got = ddf[["units", "country"]].compute(scheduler=client)
        want = expected[expected["product"].isin([1, 2])]
        assert sorted(got["units"]) == sorted(want["units"])
        assert list(got["country"].cat.categories) == ["DE", "FR", "IT"]
        assert sorted(got.index.unique()) == [1, 2]

        # a shuffled write and an update with a delete scope, committed on a worker
        frames = [sales(12, 12 * i) for i in range(3)]
        with dask.config.set({"dataframe.convert-string": False}):
            source = dd.from_pandas(pd.concat(frames, ignore_index=True), npartitions=3)
        job = kf.store_dataset_from_ddf(
            source,
            file_store,
            "w",
            partition_on=["country"],
            shuffle=True,
            secondary_indices=["product"],
        )
        assert client.compute(job).result().uuid == "w"
        assert len(kf.read_dataset_metadata("w", file_store).partitions) == 3
        update = kf.update_dataset_from_ddf(
            kf.read_dataset_as_ddf("ds", file_store, predicates=[[("country", "==", "DE")]]),
            file_store,
            "w",
            delete_scope=[{"country": "FR"}],
        )
        client.compute(update).result()
        result = kf.read_table("w", file_store)
        assert set(result["country"]) == {"DE", "IT"}
        assert len(result) == 12 + 12 + 12

        # a failing partition on a worker: the error comes back, nothing changes
        before, keys = header_bytes(file_store, "w"), data_keys(file_store, "w", indices=True)
        bad = kf.update_dataset_from_ddf(
            source.map_partitions(
                lambda d: d.assign(units=d["units"].astype(str)), meta=source._meta
            ),
            file_store,
            "w",
        )
        with pytest.raises(kf.SchemaError):
            client.compute(bad).result()
        assert header_bytes(file_store, "w") == before
        assert data_keys(file_store, "w", indices=True) == keys
    assert canonical(kf.read_table("ds", file_store)).equals(
        canonical(expected[kf.read_table("ds", file_store).columns])
    )
