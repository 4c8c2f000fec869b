"""The eager API: plateau-compatible semantics and the reference bugs we fix."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import kartoframe as kf
from kartoframe.format import naming


def frame(n: int = 6, offset: int = 0) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "p": np.arange(n) % 2,
            "k": [f"k{(i + offset) % 3}" for i in range(n)],
            "v": np.arange(offset, offset + n, dtype="int64"),
        }
    )


def header_bytes(store: kf.Store, uuid: str = "ds") -> bytes | None:
    for fmt in ("json", "msgpack"):
        data = store.get_or_none(naming.header_key(uuid, fmt))
        if data is not None:
            return data
    return None


def test_round_trip_types(store) -> None:
    df = pd.DataFrame(
        {
            "s": pd.array(["a", None, "c"], dtype="str"),
            "sp": pd.array(["a", None, "c"], dtype="string"),
            "i": pd.array([1, None, 3], dtype="Int64"),
            "b": pd.array([True, None, False], dtype="boolean"),
            "f": [1.0, np.nan, 3.0],
            "ns": pd.to_datetime(["2020-01-01", None, "2020-01-03"]).as_unit("ns"),
            "tz": pd.to_datetime(["2020-01-01", None, "2020-01-03"]).tz_localize("Asia/Tokyo"),
            "d": [dt.date(2020, 1, 1), None, dt.date(2020, 1, 3)],
            "bytes": [b"x", None, b"\x00\xff"],
            "l": [[1, 2], None, []],
        }
    )
    kf.store_dataframes_as_dataset(store=store, dataset_uuid="ds", dfs=[df])
    got = kf.read_table("ds", store)
    pd.testing.assert_frame_equal(got[df.columns], df)


def test_bool_tz_and_slash_partitions_read_back_exactly(store) -> None:
    df = pd.DataFrame(
        {
            "b": [True, False, False],
            "t": pd.to_datetime(["2021-01-01 10:00", "2021-01-01 11:00", "2021-01-01 10:00"])
            .tz_localize("Europe/Berlin")
            .as_unit("us"),
            "s": ["a/b", "ü €", "../x"],
            "v": [1, 2, 3],
        }
    )
    kf.store_dataframes_as_dataset(
        store=store, dataset_uuid="ds", dfs=[df], partition_on=["b", "t", "s"]
    )
    got = kf.read_table("ds", store).sort_values("v").reset_index(drop=True)
    pd.testing.assert_frame_equal(got[df.columns], df)
    sel = kf.read_table("ds", store, predicates=[[("b", "==", False), ("s", "==", "../x")]])
    assert sel["v"].tolist() == [3]
    ts = pd.Timestamp("2021-01-01 11:00", tz="Europe/Berlin")
    assert kf.read_table("ds", store, predicates=[[("t", "==", ts)]])["v"].tolist() == [2]
    assert kf.read_table("ds", store, predicates=[[("t", ">", ts.tz_convert("UTC"))]]).empty


def test_update_with_delete_scope_and_indices(store) -> None:
    kf.store_dataframes_as_dataset(
        store=store,
        dataset_uuid="ds",
        dfs=[frame()],
        partition_on=["p"],
        secondary_indices=["k"],
        metadata={"owner": "me"},
    )
    created = kf.read_dataset_metadata("ds", store).metadata["creation_time"]
    kf.update_dataset_from_dataframes(
        [frame(4, offset=100)],
        store=store,
        dataset_uuid="ds",
        delete_scope=[{"p": 1}],
        metadata={"note": "x"},
    )
    got = kf.read_table("ds", store)
    assert sorted(got["v"]) == [0, 2, 4, 100, 101, 102, 103]
    md = kf.read_dataset_metadata("ds", store)
    assert md.metadata == {"creation_time": created, "owner": "me", "note": "x"}
    # the index was maintained: k1 exists in old p=0 rows (v=4) and new rows (v=100, 103)
    assert sorted(kf.read_table("ds", store, predicates=[[("k", "==", "k1")]])["v"]) == [
        4,
        100,
        103,
    ]
    idx = md.load_index("k")
    labels = {lb for lbs in idx["partition"] for lb in lbs}
    assert labels <= set(md.partitions)


def test_delete_scope_on_unindexed_column_is_refused(store) -> None:
    kf.store_dataframes_as_dataset(
        store=store, dataset_uuid="ds", dfs=[frame()], partition_on=["p"]
    )
    before = header_bytes(store)
    with pytest.raises(kf.InvalidInputError, match="neither partition keys nor indexed"):
        kf.update_dataset_from_dataframes(
            [], store=store, dataset_uuid="ds", delete_scope=[{"v": 1}]
        )
    assert header_bytes(store) == before


def test_delete_scope_via_secondary_index(store) -> None:
    kf.store_dataframes_as_dataset(
        store=store, dataset_uuid="ds", dfs=[frame(2), frame(2, offset=1)], secondary_indices=["k"]
    )
    kf.update_dataset_from_dataframes(
        [], store=store, dataset_uuid="ds", delete_scope=[{"k": "k2"}]
    )
    assert sorted(kf.read_table("ds", store)["v"]) == [0, 1]


def test_storage_format_is_sticky_and_delete_removes_it(store) -> None:
    kf.store_dataframes_as_dataset(
        store=store, dataset_uuid="ds", dfs=[frame()], metadata_storage_format="msgpack"
    )
    kf.update_dataset_from_dataframes([frame(2, 50)], store=store, dataset_uuid="ds")
    assert not store.exists("ds.by-dataset-metadata.json")
    assert store.exists("ds.by-dataset-metadata.msgpack.zstd")
    kf.delete_dataset("ds", store)
    assert list(store.iter_keys("ds")) == []
    with pytest.raises(kf.DatasetNotFoundError):
        kf.read_table("ds", store)


def test_overwrite_and_garbage_collection(store) -> None:
    kf.store_dataframes_as_dataset(
        store=store, dataset_uuid="ds", dfs=[frame()], partition_on=["p"], secondary_indices=["k"]
    )
    with pytest.raises(kf.DatasetExistsError):
        kf.store_dataframes_as_dataset(store=store, dataset_uuid="ds", dfs=[frame()])
    kf.store_dataframes_as_dataset(
        store=store, dataset_uuid="ds", dfs=[frame(3, 10)], partition_on=["p"], overwrite=True
    )
    assert sorted(kf.read_table("ds", store)["v"]) == [10, 11, 12]
    # version 0 was current a moment ago: inside the default retention window, kept
    assert kf.garbage_collect_dataset("ds", store) == []
    # the old files are younger than the 1-hour grace window: kept unless forced
    assert kf.garbage_collect_dataset("ds", store, retention_hours=0) == []
    removed = kf.garbage_collect_dataset("ds", store, retention_hours=0, grace_hours=0, force=True)
    assert len(removed) == 4  # two old data files + the old index + the old statistics
    assert sum("/_kartoframe/stats/" in k for k in removed) == 1
    assert (
        kf.garbage_collect_dataset("ds", store, retention_hours=0, grace_hours=0, force=True) == []
    )
    assert sorted(kf.read_table("ds", store)["v"]) == [10, 11, 12]


def test_build_dataset_indices(store) -> None:
    kf.store_dataframes_as_dataset(
        store=store, dataset_uuid="ds", dfs=[frame(), frame(3, 7)], partition_on=["p"]
    )
    with pytest.raises(kf.InvalidInputError, match="not indexed yet"):
        kf.update_dataset_from_dataframes(
            [frame()], store=store, dataset_uuid="ds", secondary_indices=["k"]
        )
    kf.build_dataset_indices(store, "ds", ["k"])
    md = kf.read_dataset_metadata("ds", store)
    assert md.secondary_indices == ["k"]
    got = kf.read_table("ds", store, predicates=[[("k", "==", "k0")]])
    assert sorted(got["v"]) == [0, 3, 9]
    with pytest.raises(kf.ColumnNotFoundError):
        kf.build_dataset_indices(store, "ds", ["nope"])


def test_empty_frames(store) -> None:
    empty = frame().iloc[:0]
    kf.store_dataframes_as_dataset(store=store, dataset_uuid="plain", dfs=[empty])
    assert len(kf.read_dataset_metadata("plain", store).partitions) == 1
    kf.store_dataframes_as_dataset(
        store=store, dataset_uuid="parted", dfs=[empty], partition_on=["p"]
    )
    md = kf.read_dataset_metadata("parted", store)
    assert md.partitions == {} and md.partition_keys == ["p"]
    got = kf.read_table("parted", store)
    assert got.empty and list(got.columns) == ["p", "k", "v"]
    assert str(got["v"].dtype) == "int64"
    with pytest.raises(kf.EmptyInputError):
        kf.store_dataframes_as_dataset(store=store, dataset_uuid="none", dfs=[])


def test_projection_categoricals_dates_dispatch(store) -> None:
    df = frame().assign(d=[dt.date(2020, 1, i + 1) for i in range(6)])
    kf.store_dataframes_as_dataset(
        store=store, dataset_uuid="ds", dfs=[df], partition_on=["p"], secondary_indices=["k"]
    )
    assert list(kf.read_table("ds", store, columns=["v", "p"]).columns) == ["v", "p"]
    none = kf.read_table("ds", store, columns=[])
    assert none.shape == (6, 0)
    cat = kf.read_table("ds", store, categoricals=["k", "p"])
    assert isinstance(cat["k"].dtype, pd.CategoricalDtype)
    dates = kf.read_table("ds", store, dates_as_object=False)
    assert dates["d"].dtype.kind == "M"
    assert isinstance(kf.read_table("ds", store)["d"].iloc[0], dt.date)
    frames = kf.read_dataset_as_dataframes("ds", store, dispatch_by=["k"])
    assert [sorted(f["k"].unique()) for f in frames] == [["k0"], ["k1"], ["k2"]]
    assert sum(len(f) for f in frames) == 6
    assert len(kf.read_dataset_as_dataframes("ds", store, dispatch_by=[])) == 1
    assert len(kf.read_dataset_as_dataframes("ds", store)) == 2
    with pytest.raises(kf.InvalidInputError, match="must be indexed"):
        kf.read_dataset_as_dataframes("ds", store, dispatch_by=["v"])


def test_implicit_dataset_write_single_partition_and_commit(store) -> None:
    kf.create_empty_dataset_header(
        store=store, dataset_uuid="ds", schema=frame().iloc[:0], partition_on=["p"]
    )
    assert kf.read_table("ds", store).empty
    mp = kf.write_single_partition(store=store, dataset_uuid="ds", data=frame())
    # implicit datasets see written files by listing
    assert sorted(kf.read_table("ds", store)["v"]) == list(range(6))
    with pytest.raises(kf.SchemaError):
        kf.write_single_partition(store=store, dataset_uuid="ds", data=frame().assign(v="x"))
    kf.commit_dataset(store=store, dataset_uuid="ds", new_partitions=[mp])
    md = kf.read_dataset_metadata("ds", store)
    assert md.explicit_partitions and len(md.partitions) == 2
    assert sorted(kf.read_table("ds", store)["v"]) == list(range(6))


def test_failed_write_leaves_dataset_unchanged(store) -> None:
    kf.store_dataframes_as_dataset(
        store=store, dataset_uuid="ds", dfs=[frame()], partition_on=["p"]
    )
    before = header_bytes(store)
    keys_before = sorted(store.iter_keys("ds"))
    with pytest.raises(kf.SchemaError, match="column 'v'"):
        kf.update_dataset_from_dataframes(
            [frame(), frame().assign(v="x")], store=store, dataset_uuid="ds"
        )
    assert header_bytes(store) == before
    assert sorted(store.iter_keys("ds")) == keys_before
    with pytest.raises(kf.NullPartitionValueError):
        kf.update_dataset_from_dataframes(
            [frame().assign(p=pd.array([1, None] * 3, dtype="Int64"))],
            store=store,
            dataset_uuid="ds",
        )
    assert header_bytes(store) == before
    assert sorted(kf.read_table("ds", store)["v"]) == list(range(6))


def test_bad_input_errors(store) -> None:
    kf.store_dataframes_as_dataset(
        store=store, dataset_uuid="ds", dfs=[frame()], partition_on=["p"]
    )
    with pytest.raises(kf.ColumnNotFoundError):
        kf.read_table("ds", store, columns=["nope"])
    with pytest.raises(kf.ColumnNotFoundError):
        kf.read_table("ds", store, predicates=[[("nope", "==", 1)]])
    with pytest.raises(kf.InvalidTypeError):
        kf.read_table("ds", store, predicates=[[("v", "==", "1")]])
    with pytest.raises(kf.InvalidPredicateError):
        kf.read_table("ds", store, predicates=[[("v", "~", 1)]])
    with pytest.raises(kf.InvalidPredicateError):
        kf.read_table("ds", store, predicates=[])
    with pytest.raises(kf.ColumnNotFoundError):
        kf.store_dataframes_as_dataset(
            store=store, dataset_uuid="x", dfs=[frame()], partition_on=["nope"]
        )
    with pytest.raises(kf.InvalidUUIDError):
        kf.store_dataframes_as_dataset(store=store, dataset_uuid="../x", dfs=[frame()])
    with pytest.raises(kf.InvalidTypeError):
        kf.store_dataframes_as_dataset(store=store, dataset_uuid="x", dfs=frame())
    with pytest.raises(kf.InvalidInputError, match="partition keys"):
        kf.update_dataset_from_dataframes(
            [frame()], store=store, dataset_uuid="ds", partition_on=["k"]
        )
    with pytest.raises(kf.InvalidInputError, match="msgpack"):
        kf.store_dataframes_as_dataset(
            store=store, dataset_uuid="x", dfs=[frame()], metadata_storage_format="yaml"
        )
    with pytest.raises(kf.SchemaError, match="whole"):
        kf.store_dataframes_as_dataset(
            store=store,
            dataset_uuid="ns",
            dfs=[pd.DataFrame({"t": pd.to_datetime(["2020-01-01 00:00:00.000000001"])})],
        )
    assert isinstance(kf.DatasetNotFoundError("x"), FileNotFoundError)
    assert issubclass(kf.InvalidTypeError, TypeError) and issubclass(kf.SchemaError, ValueError)


def test_timestamp_units_round_trip(store) -> None:
    df = pd.DataFrame(
        {
            "ns": pd.to_datetime(["2020-01-01"]).as_unit("ns"),
            "s": pd.to_datetime(["2020-01-01"]).as_unit("s"),
        }
    )
    kf.store_dataframes_as_dataset(store=store, dataset_uuid="ds", dfs=[df])
    got = kf.read_table("ds", store)
    assert str(got["ns"].dtype) == "datetime64[ns]" and str(got["s"].dtype) == "datetime64[s]"
    schema = kf.read_dataset_metadata("ds", store).schema
    assert schema.field("ns").type == pa.timestamp("us")


def test_row_group_pruning_with_sorted_partitions(tmp_path) -> None:
    store = kf.Store(str(tmp_path))
    df = pd.DataFrame({"x": np.arange(10_000)[::-1], "y": 1})
    kf.store_dataframes_as_dataset(
        store=store,
        dataset_uuid="ds",
        dfs=[df],
        sort_partitions_by=["x"],
        df_serializer=kf.ParquetSerializer(chunk_size=1000),
    )
    import pyarrow.parquet as pq

    key = next(iter(kf.read_dataset_metadata("ds", store).partitions.values()))
    md = pq.ParquetFile(store.path(key)).metadata
    assert md.num_row_groups == 10
    assert md.row_group(0).column(0).statistics.max == 999
    assert kf.read_table("ds", store, predicates=[[("x", "<", 5)]])["x"].tolist() == [0, 1, 2, 3, 4]
