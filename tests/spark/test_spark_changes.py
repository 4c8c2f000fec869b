"""``kartoframe.spark.read_changes_as_sdf``: the change data feed as a Spark DataFrame on a
real local SparkSession, real Parquet files and real stores (a local folder, the S3
server). Its rows must equal ``kf.read_changes``'s after every kind of commit.
"""

from __future__ import annotations

import datetime as dt
import pathlib
from typing import Any

import numpy as np
import pandas as pd
import pytest
from spark_helpers import assert_tables_equal

import kartoframe as kf
import kartoframe.spark as kfs
from kartoframe.api.changes import Changes
from kartoframe.errors import ChangesUnavailableError, ColumnNotFoundError, InvalidInputError
from kartoframe.execution.changes import load_changes, read_changes_table
from kartoframe.format.spark_types import spark_arrow_schema, to_spark_table

UUID = "ds"
FEED = ["_change_type", "_commit_version", "_commit_timestamp"]


def _frame(country: list[str], ids: list[int], v: list[float]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "country": country,
            "id": np.asarray(ids, dtype="int64"),
            "v": np.asarray(v, dtype="float64"),
        }
    )


def _build(store: Any) -> None:
    """Versions 0 create, 1 append, 2 replace FR, 3 merge (update, insert, delete),
    4 optimize (no row changes).
    """
    kf.store_dataframes_as_dataset(
        store,
        UUID,
        [_frame(["DE", "DE", "FR"], [1, 2, 3], [1.0, 2.0, 3.0])],
        partition_on=["country"],
    )
    kf.update_dataset_from_dataframes(  # 1: append, a second DE file
        [_frame(["DE", "IT"], [4, 5], [4.0, 5.0])], store, UUID
    )
    kf.update_dataset_from_dataframes(  # 2: replace partition FR
        [_frame(["FR"], [6], [6.0])], store, UUID, delete_scope=[{"country": "FR"}]
    )
    kf.merge_dataset(  # 3: within DE, update 1, insert 7, delete 2 and 4 (not in source)
        _frame(["DE", "DE"], [1, 7], [10.0, 7.0]),
        store,
        UUID,
        on=["id"],
        predicates=[[("country", "==", "DE")]],
        when_not_matched_by_source="delete",
    )
    kf.optimize_dataset(UUID, store, min_files=1)  # 4: compaction


def _norm(df: pd.DataFrame) -> pd.DataFrame:
    """Comparable: plain Python strings, UTC microsecond instants, sorted rows."""
    out = df.copy()
    for c in out.columns:
        if isinstance(out[c].dtype, pd.DatetimeTZDtype):
            out[c] = out[c].dt.tz_convert("UTC").astype("datetime64[us, UTC]")
        elif not pd.api.types.is_numeric_dtype(out[c]):
            out[c] = out[c].astype(object)
    keys = [c for c in out.columns if c != "_commit_timestamp"]
    return out.sort_values(keys).reset_index(drop=True)


def _collect(changes: Changes[Any]) -> pd.DataFrame:
    return _norm(changes.rows.toArrow().to_pandas())


def _assert_same(got: Changes[Any], want: Changes[pd.DataFrame]) -> None:
    assert got.next_version == want.next_version
    assert list(got.rows.columns) == list(want.rows.columns)
    pd.testing.assert_frame_equal(_collect(got), _norm(want.rows))


def _types(sdf: Any) -> dict[str, str]:
    return {f.name: f.dataType.simpleString() for f in sdf.schema.fields}


@pytest.fixture(scope="module")
def url(tmp_path_factory) -> str:
    root = tmp_path_factory.mktemp("spark-changes") / "store"
    _build(root.as_uri())
    return root.as_uri()


def test_every_kind_of_commit_gives_the_rows_of_read_changes(spark: Any, url: str) -> None:
    got = kfs.read_changes_as_sdf(spark, UUID, url, start_version=0)
    want = kf.read_changes(UUID, url, start_version=0)
    assert isinstance(got, Changes) and got.next_version == 5
    assert _types(got.rows) == {
        "country": "string",
        "id": "bigint",
        "v": "double",
        "_change_type": "string",
        "_commit_version": "bigint",
        "_commit_timestamp": "timestamp",  # an instant (TimestampType), not timestamp_ntz
    }
    _assert_same(got, want)
    rows = _collect(got)
    by_version = rows.groupby("_commit_version")["_change_type"].apply(sorted).to_dict()
    assert by_version == {
        0: ["insert"] * 3,
        1: ["insert"] * 2,
        2: ["delete", "insert"],
        3: ["delete", "delete", "insert", "update_postimage", "update_preimage"],
    }  # the optimize (version 4) changed no row
    merge = rows[rows["_commit_version"] == 3].set_index("_change_type")
    assert merge.loc["update_preimage", "v"] == 1.0
    assert merge.loc["update_postimage", "v"] == 10.0
    assert merge.loc["insert", "id"] == 7
    # the commit times of the log, as instants
    history = {r.version: r.timestamp for r in kf.dataset_history(UUID, url)}
    for version, stamp in rows.groupby("_commit_version")["_commit_timestamp"].first().items():
        assert stamp == pd.Timestamp(history[version]).tz_convert("UTC").floor("ms")


def test_each_version_alone_matches_read_changes(spark: Any, url: str) -> None:
    for version in range(5):
        got = kfs.read_changes_as_sdf(spark, UUID, url, start_version=version, end_version=version)
        want = kf.read_changes(UUID, url, start_version=version, end_version=version)
        assert got.next_version == version + 1
        _assert_same(got, want)
    optimize = kfs.read_changes_as_sdf(spark, UUID, url, start_version=4)
    assert optimize.rows.count() == 0 and optimize.next_version == 5


def test_columns_and_predicates(spark: Any, url: str) -> None:
    args: dict[str, Any] = {
        "start_version": 1,
        "columns": ["id", "v"],
        "predicates": [[("country", "==", "DE")], [("v", ">", 5.5)]],
    }
    got = kfs.read_changes_as_sdf(spark, UUID, url, **args)
    want = kf.read_changes(UUID, url, **args)
    assert list(got.rows.columns) == ["id", "v", *FEED]
    _assert_same(got, want)
    assert sorted(_collect(got)["id"]) == [1, 1, 2, 4, 4, 6, 7]


def test_an_empty_range_is_an_empty_frame_with_the_feed_schema(spark: Any, url: str) -> None:
    got = kfs.read_changes_as_sdf(spark, UUID, url, start_version=5, columns=["v", "id"])
    assert got.next_version == 5
    assert _types(got.rows) == {
        "v": "double",
        "id": "bigint",
        "_change_type": "string",
        "_commit_version": "bigint",
        "_commit_timestamp": "timestamp",
    }
    assert got.rows.count() == 0
    assert got.rows.toArrow().num_rows == 0


def test_errors_come_before_spark_runs(spark: Any, url: str, tmp_path: pathlib.Path) -> None:
    with pytest.raises(InvalidInputError, match="beyond the current version"):
        kfs.read_changes_as_sdf(spark, UUID, url, start_version=0, end_version=9)
    with pytest.raises(ColumnNotFoundError):
        kfs.read_changes_as_sdf(spark, UUID, url, start_version=0, columns=["nope"])
    with pytest.raises(InvalidInputError, match="memory"):
        kfs.read_changes_as_sdf(spark, UUID, "memory://kf-spark-changes", start_version=0)
    # a vacuumed start version
    other = (tmp_path / "vacuumed").as_uri()
    kf.store_dataframes_as_dataset(other, UUID, [_frame(["DE"], [1], [1.0])])
    kf.merge_dataset(_frame(["DE"], [1], [2.0]), other, UUID, on=["id"])
    kf.store_dataframes_as_dataset(other, UUID, [_frame(["FR"], [2], [2.0])], overwrite=True)
    kf.vacuum_dataset(UUID, other, retention_hours=0, force=True)
    with pytest.raises(ChangesUnavailableError, match="oldest version"):
        kfs.read_changes_as_sdf(spark, UUID, other, start_version=1)


def test_a_cursor_tails_the_dataset(spark: Any, tmp_path: pathlib.Path) -> None:
    url = tmp_path.as_uri()
    kf.store_dataframes_as_dataset(url, UUID, [_frame(["DE"], [1], [1.0])])
    seen: list[pd.DataFrame] = []
    cursor = 0
    for step in range(3):
        rows, cursor = kfs.read_changes_as_sdf(spark, UUID, url, start_version=cursor)
        seen.append(rows.toArrow().to_pandas())
        if step == 0:
            kf.update_dataset_from_dataframes([_frame(["DE"], [2], [2.0])], url, UUID)
            kf.merge_dataset(_frame(["DE"], [1], [11.0]), url, UUID, on=["id"])
    assert cursor == 3
    assert [len(df) for df in seen] == [1, 3, 0]  # insert; insert + update pair; nothing
    assert sorted(seen[1]["_change_type"]) == ["insert", "update_postimage", "update_preimage"]
    _assert_same(
        kfs.read_changes_as_sdf(spark, UUID, url, start_version=0),
        kf.read_changes(UUID, url, start_version=0),
    )


def test_an_object_store(spark: Any, s3_store: kf.Store) -> None:
    _build(s3_store)
    got = kfs.read_changes_as_sdf(spark, UUID, s3_store, start_version=2)
    want = kf.read_changes(UUID, s3_store, start_version=2)
    assert len(want.rows) == 7
    _assert_same(got, want)


def test_column_types_are_those_of_spark_reads(spark: Any, tmp_path: pathlib.Path) -> None:
    """uint64, dates, zoned and naive microsecond timestamps, categoricals and lists: the
    Arrow types Spark gives them in reads, values exact (the eager feed, cast the same way).
    """
    url = tmp_path.as_uri()
    stamps = ["2024-01-01 10:00:00.123456", "2024-01-02 00:00:00.000001", "2024-01-03"]
    df = pd.DataFrame(
        {
            "id": np.array([1, 2, 3], dtype="uint64"),
            "day": [dt.date(2024, 1, i) for i in (1, 2, 3)],
            "at": pd.to_datetime(stamps, format="ISO8601").tz_localize("Europe/Berlin"),
            "naive": pd.to_datetime(stamps, format="ISO8601"),
            "cat": pd.Categorical(["a", "b", "a"]),
            "tags": [[1, 2], [], None],
        }
    )
    kf.store_dataframes_as_dataset(url, UUID, [df])
    kf.merge_dataset(df.iloc[[0]].assign(cat=pd.Categorical(["z"])), url, UUID, on="id")
    got = kfs.read_changes_as_sdf(spark, UUID, url, start_version=0)
    assert _types(got.rows) == {
        "at": "timestamp",
        "cat": "string",
        "day": "date",
        "id": "decimal(20,0)",
        "naive": "timestamp_ntz",
        "tags": "array<bigint>",
        "_change_type": "string",
        "_commit_version": "bigint",
        "_commit_timestamp": "timestamp",
    }
    store = kf.Store(url)
    plan = load_changes(store, UUID, start_version=0)
    want = to_spark_table(read_changes_table(store, plan), spark_arrow_schema(plan.output_schema))
    assert want.num_rows == 5
    assert_tables_equal(got.rows.toArrow(), want, key=["_commit_version", "_change_type", "id"])
