"""``kartoframe.spark.merge_dataset_from_sdf``: the Spark engine of ``merge`` on a real
local SparkSession and real Parquet files (one Spark task per candidate file, one commit)."""

from __future__ import annotations

import dataclasses
import pathlib
from typing import Any

import numpy as np
import pandas as pd
import pytest

import kartoframe as kf
import kartoframe.spark as kfs
from kartoframe.errors import CommitConflictError, InvalidInputError, InvalidTypeError


def _build(store: str) -> pd.DataFrame:
    """Four days of 40 rows (one file each) over two countries; a bloom filter on id."""
    frames = []
    for day in range(4):
        ids = np.arange(day * 40, (day + 1) * 40)
        df = pd.DataFrame(
            {
                "country": np.where(ids % 2 == 0, "DE", "FR"),
                "id": ids.astype("int64"),
                "v": ids / 10,
                "s": [f"s{i % 3}" for i in ids],
            }
        )
        frames.append(df)
        kf.update_dataset_from_dataframes(
            [df], store=store, dataset_uuid="ds", partition_on=["country"]
        )
        if day == 0:
            kf.build_dataset_statistics(store, "ds", bloom_filter_columns=["id"])
    return pd.concat(frames, ignore_index=True)


def _changes() -> pd.DataFrame:
    """ids 2 (DE, day 0) and 81 (FR, day 2) updated, id 1000 new."""
    return pd.DataFrame(
        {
            "country": ["DE", "FR", "DE"],
            "id": np.array([2, 81, 1000], dtype="int64"),
            "v": [-2.0, -81.0, 100.0],
            "s": ["u", "u", "new"],
        }
    )


def _rows(df: pd.DataFrame) -> pd.DataFrame:
    return df[["country", "id", "v", "s"]].sort_values("id").reset_index(drop=True)


def test_spark_and_eager_merges_give_the_same_result(spark: Any, tmp_path: pathlib.Path) -> None:
    on_spark, eager = f"{tmp_path}/spark", f"{tmp_path}/eager"
    expected = _build(on_spark)
    _build(eager)
    sdf = spark.createDataFrame(_changes())
    got = kfs.merge_dataset_from_sdf(sdf, on_spark, "ds", on=["country", "id"])
    want = kf.merge_dataset(_changes(), eager, "ds", on=["country", "id"])
    same = {"version": None, "candidates": ()}
    assert dataclasses.replace(got, **same) == dataclasses.replace(want, **same)
    assert (got.rows_updated, got.rows_inserted, got.files_rewritten) == (2, 1, 2)
    assert got.candidate_files == 2  # blooms: one file per updated id
    pd.testing.assert_frame_equal(
        _rows(kf.read_table("ds", on_spark)), _rows(kf.read_table("ds", eager))
    )
    merged = _rows(kf.read_table("ds", on_spark))
    assert len(merged) == len(expected) + 1
    assert merged.set_index("id").loc[81, "v"] == -81.0
    assert kf.dataset_history("ds", on_spark)[0].operation == "MERGE"
    # the Spark merge's tasks wrote the same change feed as the eager merge
    feed_cols = ["country", "id", "v", "_change_type"]

    def feed(url: str) -> pd.DataFrame:
        version = kf.dataset_history("ds", url)[0].version
        rows = kf.read_changes("ds", url, start_version=version).rows[feed_cols]
        return rows.sort_values(feed_cols).reset_index(drop=True)

    spark_feed = feed(on_spark)
    pd.testing.assert_frame_equal(spark_feed, feed(eager))
    assert sorted(spark_feed["_change_type"]) == [
        "insert",
        *["update_postimage"] * 2,
        *["update_preimage"] * 2,
    ]


def test_a_replace_racing_a_spark_merge_one_wins(spark: Any, tmp_path: pathlib.Path) -> None:
    """The replace lands between the plan and the commit: the merge fails and leaves none
    of its files behind (the job-id prefix finds them)."""
    store = f"{tmp_path}/store"
    _build(store)
    sdf = spark.createDataFrame(_changes())

    from kartoframe.api.merge import merge_dataset
    from kartoframe.execution.spark_merge import merge_with_spark
    from kartoframe.front.args import arguments_of
    from kartoframe.front.merge import prepared_merge

    values = arguments_of(merge_dataset, (sdf.toArrow(), store, "ds"), {"on": ["country", "id"]})
    st, plan, commit = prepared_merge(values)
    kf.update_dataset_from_dataframes(
        [_changes().iloc[[1]]], store=store, dataset_uuid="ds", delete_scope=[{"country": "FR"}]
    )
    files = set(pathlib.Path(store).rglob("*.parquet"))
    with pytest.raises(CommitConflictError, match="removed or replaced"):
        merge_with_spark(spark, st, plan, commit=commit)
    assert set(pathlib.Path(store).rglob("*.parquet")) == files


def test_the_source_must_be_a_spark_frame(tmp_path: pathlib.Path) -> None:
    store = f"{tmp_path}/store"
    _build(store)
    with pytest.raises(InvalidTypeError, match="Spark DataFrame"):
        kfs.merge_dataset_from_sdf(_changes(), store, "ds", on="id")


def test_a_store_executors_cannot_reach_is_refused_first(spark: Any) -> None:
    """A memory:// store is refused before the source is collected or anything is read
    (the dataset does not even exist there)."""
    sdf = spark.createDataFrame(_changes())
    with pytest.raises(InvalidInputError, match="in-process memory store"):
        kfs.merge_dataset_from_sdf(sdf, "memory://spark-merge-nothing", "ds", on="id")
