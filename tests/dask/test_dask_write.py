"""``store_dataset_from_ddf`` / ``update_dataset_from_ddf``: lazy graphs with one commit."""

from __future__ import annotations

import dask
import dask.dataframe as dd
import pandas as pd
import pyarrow.parquet as pq
import pytest
from dask_helpers import canonical, data_keys, header_bytes, sales, write_sales

import kartoframe as kf
from kartoframe.format import naming


def from_frames(frames: list[pd.DataFrame]):
    """One dask partition per frame, dtypes untouched."""
    with dask.config.set({"dataframe.convert-string": False}):
        return dd.from_map(lambda i: frames[i], range(len(frames)), meta=frames[0].iloc[:0])


def files_per_value(store: kf.Store, uuid: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for label in kf.read_dataset_metadata(uuid, store).partitions:
        value = naming.parse_label(label)[0][1]
        counts[value] = counts.get(value, 0) + 1
    return counts


def test_nothing_is_written_before_compute(store) -> None:
    ddf = from_frames([sales(6), sales(6, 6), sales(6, 12)])
    job = kf.store_dataset_from_ddf(ddf, store, "w", partition_on=["country"])
    assert list(store.iter_keys()) == []
    graph = dict(job.__dask_graph__())
    writes = [k for k in graph if isinstance(k, tuple) and str(k[0]).startswith("kartoframe-write")]
    commits = [k for k in graph if str(k).startswith("kartoframe-commit")]
    assert len(writes) == 3 and len(commits) == 1
    result = job.compute()
    assert isinstance(result, kf.DatasetMetadataResult) and result.uuid == "w"
    assert len(result.partitions) == 9
    assert canonical(kf.read_table("w", store)).equals(
        canonical(sales(18)[kf.read_table("w", store).columns])
    )


def test_shuffle_gives_at_most_num_buckets_files_per_value(store) -> None:
    frames = [sales(12, offset=12 * i) for i in range(6)]
    plain = from_frames(frames)
    kf.store_dataset_from_ddf(plain, store, "plain", partition_on=["country"]).compute()
    assert files_per_value(store, "plain") == {"DE": 6, "FR": 6, "IT": 6}
    kf.store_dataset_from_ddf(plain, store, "one", partition_on=["country"], shuffle=True).compute()
    assert files_per_value(store, "one") == {"DE": 1, "FR": 1, "IT": 1}
    kf.store_dataset_from_ddf(
        plain,
        store,
        "buckets",
        partition_on=["country"],
        shuffle=True,
        num_buckets=4,
        bucket_by=["units"],
        secondary_indices=["product"],
    ).compute()
    counts = files_per_value(store, "buckets")
    assert set(counts) == {"DE", "FR", "IT"} and all(1 <= n <= 4 for n in counts.values())
    assert sum(counts.values()) > 3
    everything = pd.concat(frames, ignore_index=True)
    for uuid in ("plain", "one", "buckets"):
        got = kf.read_table(uuid, store)
        assert canonical(got).equals(canonical(everything[got.columns])), uuid
        assert "__kartoframe_bucket__" not in got.columns
    got = kf.read_table("buckets", store, predicates=[[("product", "==", 1)]])
    assert sorted(got["units"]) == sorted(everything.loc[everything["product"] == 1, "units"])


def test_bucketing_is_deterministic(store) -> None:
    ddf = from_frames([sales(24), sales(24, 24)])
    kwargs = {"partition_on": ["country"], "shuffle": True, "num_buckets": 3, "bucket_by": "units"}
    kf.store_dataset_from_ddf(ddf, store, "a", **kwargs).compute()
    kf.store_dataset_from_ddf(ddf, store, "b", **kwargs).compute()
    rows = [
        sorted(tuple(sorted(f["units"])) for f in kf.read_dataset_as_dataframes(u, store))
        for u in ("a", "b")
    ]
    assert rows[0] == rows[1]


def test_write_options_are_checked_when_building(store) -> None:
    ddf = from_frames([sales(6)])
    with pytest.raises(kf.InvalidInputError, match="partition_on"):
        kf.store_dataset_from_ddf(ddf, store, "w", shuffle=True)
    with pytest.raises(kf.InvalidInputError, match="num_buckets"):
        kf.store_dataset_from_ddf(
            ddf, store, "w", partition_on=["country"], shuffle=True, num_buckets=0
        )
    with pytest.raises(kf.InvalidInputError, match="shuffle=True"):
        kf.store_dataset_from_ddf(ddf, store, "w", partition_on=["country"], bucket_by=["units"])
    with pytest.raises(kf.ColumnNotFoundError):
        kf.store_dataset_from_ddf(
            ddf, store, "w", partition_on=["country"], shuffle=True, bucket_by=["x"]
        )
    with pytest.raises(kf.ColumnNotFoundError):
        kf.store_dataset_from_ddf(ddf, store, "w", partition_on=["nope"])
    with pytest.raises(kf.InvalidTypeError):
        kf.store_dataset_from_ddf(sales(6), store, "w")
    with pytest.raises(kf.InvalidUUIDError):
        kf.store_dataset_from_ddf(ddf, store, "../w")
    write_sales(store, "exists")
    with pytest.raises(kf.DatasetExistsError):
        kf.store_dataset_from_ddf(ddf, store, "exists")
    assert [k for k in store.iter_keys() if not k.startswith("exists")] == []


def test_a_failing_partition_leaves_no_trace(store) -> None:
    frames = [sales(6), sales(6, 6), sales(6, 12).assign(country=pd.array([None] * 6, dtype="str"))]
    job = kf.store_dataset_from_ddf(from_frames(frames), store, "w", partition_on=["country"])
    with pytest.raises(kf.NullPartitionValueError):
        job.compute()
    assert header_bytes(store, "w") is None
    assert data_keys(store, "w", indices=True) == []


def test_a_failing_update_changes_nothing(store) -> None:
    write_sales(store)
    before, keys = header_bytes(store, "ds"), data_keys(store, "ds", indices=True)
    bad = sales(6, 100).assign(units="x")
    job = kf.update_dataset_from_ddf(from_frames([sales(6, 100), bad]), store, "ds")
    with pytest.raises(kf.SchemaError, match="dask partition 1"):
        job.compute()
    assert header_bytes(store, "ds") == before
    assert data_keys(store, "ds", indices=True) == keys


def test_incompatible_meta_is_refused_when_building(store) -> None:
    write_sales(store)
    with pytest.raises(kf.SchemaError, match="meta"):
        kf.update_dataset_from_ddf(from_frames([sales(6).assign(units="x")]), store, "ds")


def test_a_failure_upstream_leaves_the_dataset_unchanged(store) -> None:
    write_sales(store)
    before = header_bytes(store, "ds")

    def explode(df: pd.DataFrame) -> pd.DataFrame:
        if (df["units"] >= 106).any():
            raise RuntimeError("boom")
        return df

    ddf = from_frames([sales(6, 100), sales(6, 106)]).map_partitions(explode)
    with pytest.raises(RuntimeError, match="boom"):
        kf.update_dataset_from_ddf(ddf, store, "ds").compute(scheduler="sync")
    assert header_bytes(store, "ds") == before
    assert len(kf.read_table("ds", store)) == 36


def test_concurrent_commits_rebase_or_conflict(store) -> None:
    write_sales(store)
    # an append committed meanwhile does not conflict with another append: both are kept
    job = kf.update_dataset_from_ddf(from_frames([sales(3, 500)]), store, "ds")
    kf.update_dataset_from_dataframes([sales(3, 900)], store=store, dataset_uuid="ds")
    job.compute()
    assert sorted(kf.read_table("ds", store)["units"])[-6:] == [500, 501, 502, 900, 901, 902]
    # replacing FR while another writer adds FR rows is a conflict
    job = kf.update_dataset_from_ddf(
        from_frames([sales(3, 600)]), store, "ds", delete_scope=[{"country": "FR"}]
    )
    kf.update_dataset_from_dataframes([sales(3, 700)], store=store, dataset_uuid="ds")
    after_other = header_bytes(store, "ds")
    keys = data_keys(store, "ds")
    with pytest.raises(kf.CommitConflictError, match="country=FR"):
        job.compute()
    assert header_bytes(store, "ds") == after_other
    assert data_keys(store, "ds") == keys  # the failed commit removed the files it wrote
    assert 600 not in set(kf.read_table("ds", store)["units"])


def test_update_without_data(store) -> None:
    write_sales(store)
    with pytest.raises(kf.EmptyInputError):
        kf.update_dataset_from_ddf(None, store, "ds")
    with pytest.raises(kf.EmptyInputError):
        kf.update_dataset_from_ddf(None, store, "missing", delete_scope=[{"country": "DE"}])
    job = kf.update_dataset_from_ddf(None, store, "ds", metadata={"k": "v"})
    assert len(job.__dask_graph__()) == 1
    job.compute()
    assert kf.read_dataset_metadata("ds", store).metadata["k"] == "v"


def test_empty_partitions_write_no_files(store) -> None:
    ddf = from_frames([sales(6), sales(0), sales(6, 6).iloc[:0], sales(3, 12)])
    kf.store_dataset_from_ddf(ddf, store, "w").compute()
    assert len(kf.read_dataset_metadata("w", store).partitions) == 2
    assert sorted(kf.read_table("w", store)["units"]) == [0, 1, 2, 3, 4, 5, 12, 13, 14]


def test_repartition_sort_and_serializer(file_store) -> None:
    frames = [sales(10, 10 * i).sample(frac=1.0, random_state=i) for i in range(4)]
    kf.store_dataset_from_ddf(
        from_frames(frames),
        file_store,
        "w",
        repartition_ratio=2,
        sort_partitions_by=["units"],
        df_serializer=kf.ParquetSerializer(compression="ZSTD", chunk_size=5),
        metadata={"source": "dask"},
        metadata_storage_format="msgpack",
    ).compute()
    md = kf.read_dataset_metadata("w", file_store)
    assert len(md.partitions) == 2 and md.metadata["source"] == "dask"
    assert md.metadata_storage_format == "msgpack"
    for key in md.partitions.values():
        meta = pq.ParquetFile(file_store.path(key)).metadata
        assert meta.num_row_groups == 4
        assert meta.row_group(0).column(0).compression == "ZSTD"
    for frame in kf.read_dataset_as_dataframes("w", file_store):
        assert frame["units"].is_monotonic_increasing
    with pytest.raises(kf.InvalidInputError, match="repartition_ratio"):
        kf.store_dataset_from_ddf(from_frames(frames), file_store, "x", repartition_ratio=0)


def test_read_modify_write_round_trip(store) -> None:
    expected = write_sales(store)
    ddf = kf.read_dataset_as_ddf("ds", store)
    doubled = ddf.assign(units=ddf["units"] * 2)
    kf.store_dataset_from_ddf(
        doubled, store, "doubled", partition_on=["country"], secondary_indices=["product"]
    ).compute()
    got = kf.read_table("doubled", store)
    want = expected.assign(units=expected["units"] * 2)
    pd.testing.assert_frame_equal(canonical(got), canonical(want[got.columns]))


def test_write_on_a_distributed_cluster(store, dask_client) -> None:
    frames = [sales(12, 12 * i) for i in range(4)]
    job = kf.store_dataset_from_ddf(
        from_frames(frames),
        store,
        "w",
        partition_on=["country"],
        shuffle=True,
        secondary_indices=["product"],
    )
    dask_client.compute(job).result()
    assert files_per_value(store, "w") == {"DE": 1, "FR": 1, "IT": 1}
    bad = kf.update_dataset_from_ddf(
        from_frames([sales(3).assign(units="x")]).map_partitions(lambda d: d, meta=sales(0)),
        store,
        "w",
    )
    with pytest.raises(kf.SchemaError):
        dask_client.compute(bad).result()
    assert len(kf.read_table("w", store)) == 48
