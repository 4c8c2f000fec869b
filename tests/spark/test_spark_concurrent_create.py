"""Spark writers and concurrent creates (issue "No acknowledged write is ever lost", §1).

``update_dataset_from_sdf`` on a missing dataset decides "create" before its Spark job
runs. Here the job itself creates the dataset with another writer (a side effect of the
DataFrame's own evaluation, in the Python worker), so the other commit lands exactly
between the Spark writer's plan and its commit: the Spark write must land as an append
(it used to commit a second CREATE and the other writer's rows were lost). A
``store_dataset_from_sdf`` in the same position must fail and leave no file behind.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pandas as pd
import pytest

import kartoframe as kf
import kartoframe.spark as kfs
from kartoframe.format import naming

pytestmark = pytest.mark.spark


def _racing_frame(spark, url: str, uuid: str):  # type: ignore[no-untyped-def]
    """A Spark DataFrame whose evaluation first creates ``uuid`` with another writer."""
    pdf = pd.DataFrame({"p": [1, 1], "wid": [1, 1]})

    def create_first(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        import kartoframe as kf_worker

        other = pd.DataFrame({"p": [0, 0], "wid": [0, 0]})
        # idempotent: Spark may evaluate the DataFrame more than once, and its tasks race
        # each other to create it (the losers are told so, with either error)
        with contextlib.suppress(kf_worker.DatasetExistsError, kf_worker.CommitConflictError):
            kf_worker.store_dataframes_as_dataset(
                kf_worker.Store(url), uuid, [other], partition_on=["p"]
            )
        yield from batches

    return spark.createDataFrame(pdf).mapInPandas(create_first, "p long, wid long")


def test_spark_update_on_missing_dataset_appends_to_a_concurrent_create(spark, tmp_path) -> None:
    url = f"file://{tmp_path}/store"
    store = kf.Store(url)
    kfs.update_dataset_from_sdf(
        _racing_frame(spark, url, "d"), store, "d", partition_on=["p"], repartition=False
    )
    df = kf.read_table("d", store)
    assert sorted(df["wid"].tolist()) == [0, 0, 1, 1], "an acknowledged write was lost"
    ops = [h.operation for h in kf.dataset_history("d", store)]
    assert ops == ["APPEND", "CREATE"]


def test_spark_create_losing_to_a_concurrent_create_fails_cleanly(spark, tmp_path) -> None:
    url = f"file://{tmp_path}/store"
    store = kf.Store(url)
    with pytest.raises((kf.CommitConflictError, kf.DatasetExistsError)):
        kfs.store_dataset_from_sdf(
            _racing_frame(spark, url, "d"), store, "d", partition_on=["p"], repartition=False
        )
    df = kf.read_table("d", store)
    assert sorted(df["wid"].tolist()) == [0, 0]
    md = kf.read_dataset_metadata("d", store)
    files = {k for k in store.iter_keys("d/table/") if k.endswith(naming.PARQUET_SUFFIX)}
    assert files == set(md.partitions.values()), "the losing Spark write left files"
