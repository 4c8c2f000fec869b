"""One pipeline over both clusters and the S3 API server: Spark (standalone cluster) writes a
dataset, dask (worker processes) builds a cube from it, Spark queries the cube, and both
engines append to the cube at the same time."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import cluster_fs
import dask.dataframe as dd
import pandas as pd
import pytest

import kartoframe as kf
import kartoframe.spark as kfs
from kartoframe.errors import CommitConflictError

pytestmark = [pytest.mark.cluster, pytest.mark.spark, pytest.mark.s3]

CUBE = kf.Cube(
    dimension_columns=["product", "day"], partition_columns=["country"], uuid_prefix="pipe"
)
COLUMNS = ["country", "day", "product", "revenue", "units"]  # query_cube's order


def recording(store: kf.Store, side_dir: Path) -> kf.Store:
    """``store`` through a :class:`cluster_fs.RecordingFileSystem` writing to ``side_dir``."""
    side_dir.mkdir()
    ffs = cluster_fs.RecordingFileSystem(store.fs, side_dir=str(side_dir))
    return kf.Store(store.url, filesystem=ffs, **store.storage_options)


def sales(days: range, products: range) -> pd.DataFrame:
    rows = [
        {
            "country": ("DE", "FR", "IT")[(d + p) % 3],
            "day": d,
            "product": p,
            "revenue": d * 1.5 + p,
            "units": (d * 7 + p) % 11,
        }
        for d in days
        for p in products
    ]
    return pd.DataFrame(rows, columns=COLUMNS)


def canonical(df: pd.DataFrame) -> pd.DataFrame:
    out = df[COLUMNS].sort_values(["product", "day"], ignore_index=True)
    return out.astype({"day": "int64", "product": "int64", "units": "int64", "country": str})


def spark_frame(spark: Any, df: pd.DataFrame) -> Any:
    return spark.createDataFrame(df).repartition(2)


def ran_in(calls: list[dict[str, Any]], verb: str) -> list[list[int]]:
    """The process chains (pid, parent, ...) of the recorded ``verb`` calls."""
    return [c["pids"] for c in calls if c["verb"] == verb]


def test_spark_dask_pipeline_over_s3(
    cluster_spark: Any,
    standalone_cluster: Any,
    process_dask_client: Any,
    s3_store: kf.Store,
    tmp_path: Path,
) -> None:
    """Proves, over the S3 API server: a dataset written by Spark on the standalone cluster
    is read by dask worker processes, which build a cube from it; Spark queries that cube
    with the answers pandas gives (rows and a group-by); Spark and dask appending to the
    cube at the same time (one thread driving each) lose no acknowledged row and add no
    other (eager and Spark queries return exactly the initial rows plus every acknowledged
    append). Every data file was written and read inside Spark executors (the process
    descends from the cluster's worker daemon, not the driver) or dask worker processes
    (not the client): the object-store options travelled in the pickled ``kf.Store``.
    """
    driver = os.getpid()
    spark_worker = standalone_cluster.worker.pid
    dask_workers = set(process_dask_client.run(os.getpid).values())
    initial = sales(range(8), range(6))

    # 1. Spark writes the raw dataset (in the executors)
    st = recording(s3_store, tmp_path / "spark-write")
    sdf = spark_frame(cluster_spark, initial)
    kfs.store_dataset_from_sdf(sdf, st, "raw", partition_on=["country"])
    writes = ran_in(cluster_fs.calls(tmp_path / "spark-write"), "write")
    assert writes and all(spark_worker in chain and chain[0] != driver for chain in writes)

    # 2. dask worker processes read it and build the cube
    st = recording(s3_store, tmp_path / "dask-build")
    raw = kf.read_dataset_as_ddf("raw", st)
    process_dask_client.compute(kf.build_cube_from_dataframe(raw, CUBE, st)).result()
    calls = cluster_fs.calls(tmp_path / "dask-build")
    for verb in ("read", "write"):
        chains = ran_in(calls, verb)
        assert chains and all(chain[0] in dask_workers for chain in chains), verb

    # 3. Spark queries the cube (read in the executors); pandas gives the same answers
    st = recording(s3_store, tmp_path / "spark-query")
    got = (
        kfs.query_cube_sdf(cluster_spark, CUBE, st, conditions=kf.C("units") > 3)
        .toArrow()
        .to_pandas()
    )
    want = initial[initial["units"] > 3]
    pd.testing.assert_frame_equal(canonical(got), canonical(want))
    totals = (
        kfs.query_cube_sdf(cluster_spark, CUBE, st)
        .groupBy("country")
        .sum("units")
        .toArrow()
        .to_pandas()
    )
    expected_totals = initial.groupby("country")["units"].sum()
    assert dict(zip(totals["country"], totals["sum(units)"], strict=True)) == dict(expected_totals)
    reads = ran_in(cluster_fs.calls(tmp_path / "spark-query"), "read")
    assert reads and all(spark_worker in chain and chain[0] != driver for chain in reads)

    # 4. both engines append at the same time; only acknowledged appends count
    acknowledged: list[pd.DataFrame] = []
    conflicts: list[str] = []
    failures: list[BaseException] = []
    start = threading.Barrier(2)
    lock = threading.Lock()

    def append_spark(df: pd.DataFrame) -> None:
        kfs.append_to_cube_from_sdf(spark_frame(cluster_spark, df), CUBE, s3_store)

    def append_dask(df: pd.DataFrame) -> None:
        job = kf.append_to_cube_from_dataframe(dd.from_pandas(df, npartitions=2), CUBE, s3_store)
        process_dask_client.compute(job).result()

    def appender(append: Any, first_day: int) -> None:
        try:
            start.wait(timeout=60)
            for i in range(3):
                df = sales(range(first_day + i, first_day + i + 1), range(6))
                for _attempt in range(5):  # a rejected commit is retried, as a user would
                    try:
                        append(df)
                    except CommitConflictError as e:
                        with lock:
                            conflicts.append(str(e))
                        continue
                    with lock:
                        acknowledged.append(df)
                    break
        except BaseException as e:  # reported by the test thread
            failures.append(e)

    threads = [
        threading.Thread(target=appender, args=(append_spark, 100)),
        threading.Thread(target=appender, args=(append_dask, 200)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert not failures, failures
    assert len(acknowledged) == 6, (len(acknowledged), conflicts)

    # one commit per acknowledged append, none for the rejected attempts
    history = kf.dataset_history(f"{CUBE.uuid_prefix}++seed", s3_store)
    assert [r.operation for r in reversed(history)][1:] == ["APPEND"] * 6, conflicts
    expected = pd.concat([initial, *acknowledged], ignore_index=True)
    eager = pd.concat(kf.query_cube(CUBE, s3_store), ignore_index=True)
    pd.testing.assert_frame_equal(canonical(eager), canonical(expected))
    on_spark = kfs.query_cube_sdf(cluster_spark, CUBE, s3_store).toArrow().to_pandas()
    pd.testing.assert_frame_equal(canonical(on_spark), canonical(expected))
