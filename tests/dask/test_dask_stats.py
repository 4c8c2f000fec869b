"""``hash_dataset`` and ``collect_dataset_metadata``."""

from __future__ import annotations

import pandas as pd
import pyarrow.parquet as pq
import pytest
from dask_helpers import sales, write_sales

import kartoframe as kf


def test_partition_hashes_are_order_independent_and_content_sensitive(store) -> None:
    write_sales(store, "a")
    shuffled = [sales(12, 12 * c).sample(frac=1.0, random_state=c) for c in range(3)]
    kf.store_dataframes_as_dataset(
        store=store, dataset_uuid="b", dfs=shuffled, partition_on=["country"]
    )
    a = kf.hash_dataset(store, "a").compute()
    b = kf.hash_dataset(store, "b").compute()
    assert a.dtype == "uint64" and len(a) == 9
    assert sorted(a) == sorted(b)
    kf.update_dataset_from_dataframes(
        [sales(1, 500)], store=store, dataset_uuid="b", delete_scope=[{"country": "IT"}]
    )
    assert sorted(kf.hash_dataset(store, "b").compute()) != sorted(a)


def test_group_hashes_do_not_depend_on_the_file_layout(store) -> None:
    everything = write_sales(store, "parted")
    kf.store_dataframes_as_dataset(store=store, dataset_uuid="flat", dfs=[everything])
    by_country = kf.hash_dataset(store, "parted", group_key=["country"]).compute()
    flat = kf.hash_dataset(store, "flat", group_key=["country"]).compute()
    assert by_country.index.tolist() == ["DE", "FR", "IT"]
    pd.testing.assert_series_equal(by_country.sort_index(), flat.sort_index(), check_names=False)
    by_product = kf.hash_dataset(store, "parted", group_key=["product"]).compute().sort_index()
    assert by_product.index.tolist() == [0, 1, 2, 3]
    two = kf.hash_dataset(store, "parted", group_key=["country", "product"]).compute()
    assert len(two) == 12 and two.index.nlevels == 2


def test_hash_subset_and_predicates(store) -> None:
    write_sales(store)
    units = kf.hash_dataset(store, "ds", subset=["units"], group_key=["country"]).compute()
    expected = pd.util.hash_pandas_object(pd.DataFrame({"units": [0, 3, 6]}), index=False)
    subset = kf.hash_dataset(
        store, "ds", subset=["units"], predicates=[[("units", "<", 9), ("country", "==", "DE")]]
    ).compute()
    # only DE files survive pruning; files without matching rows hash to 0
    assert 1 <= len(subset) <= 3
    assert int(subset.astype(object).sum()) % 2**64 == int(expected.sum())
    assert len(units) == 3
    with pytest.raises(kf.ColumnNotFoundError):
        kf.hash_dataset(store, "ds", subset=["nope"])


def test_collect_dataset_metadata(file_store) -> None:
    write_sales(file_store, df_serializer=kf.ParquetSerializer(chunk_size=2))
    stats = kf.collect_dataset_metadata(file_store, "ds").compute()
    assert list(stats.columns) == [
        "partition_label",
        "row_group_id",
        "row_group_compressed_size",
        "row_group_uncompressed_size",
        "number_rows_total",
        "number_row_groups",
        "serialized_size",
        "number_rows_per_row_group",
    ]
    md = kf.read_dataset_metadata("ds", file_store)
    assert set(stats["partition_label"]) == set(md.partitions)
    assert len(stats) == 18  # 9 files of 4 rows in row groups of 2
    assert stats["number_rows_per_row_group"].sum() == 36
    assert (stats["number_row_groups"] == 2).all()
    assert stats.groupby("partition_label")["number_rows_total"].first().sum() == 36
    label, key = next(iter(md.partitions.items()))
    footer = pq.ParquetFile(file_store.path(key)).metadata
    row = stats[stats["partition_label"] == label].iloc[0]
    assert row["serialized_size"] == footer.serialized_size
    assert row["row_group_compressed_size"] == footer.row_group(0).total_byte_size


def test_collect_dataset_metadata_pruning_and_sampling(store) -> None:
    write_sales(store)
    fr = kf.collect_dataset_metadata(store, "ds", predicates=[[("country", "==", "FR")]])
    assert fr.npartitions == 3
    assert set(fr.compute()["partition_label"].str[:10]) == {"country=FR"}
    sample = kf.collect_dataset_metadata(store, "ds", frac=0.3, seed=1).compute()
    assert sample["partition_label"].nunique() == 2
    tiny = kf.collect_dataset_metadata(store, "ds", frac=0.01).compute()
    assert tiny["partition_label"].nunique() == 1
    none = kf.collect_dataset_metadata(store, "ds", predicates=[[("country", "==", "XX")]])
    got = none.compute()
    assert got.empty and got["number_rows_total"].dtype == "int64"
    for bad in (0, 1.5, "x"):
        with pytest.raises(kf.InvalidInputError):
            kf.collect_dataset_metadata(store, "ds", frac=bad)
