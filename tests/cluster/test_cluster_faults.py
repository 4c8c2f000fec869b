"""Processes killed in the middle of a write, on real clusters, over the S3 API server.

A Spark executor's Python worker, or a dask worker process, dies (SIGKILL) right after it
wrote a complete data file. The engine runs the task again elsewhere; kartoframe must still
commit exactly once, with every input row once, and the dead attempt's file must not
survive: the Spark write deletes it itself when its job had failed task attempts, the dask
write leaves it to ``garbage_collect_dataset``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import cluster_fs
import dask.dataframe as dd
import pandas as pd
import pytest

import kartoframe as kf
import kartoframe.spark as kfs
from kartoframe.format import naming

pytestmark = [pytest.mark.cluster, pytest.mark.spark, pytest.mark.s3]


def killing_store(store: kf.Store, side_dir: Path, engine: str) -> kf.Store:
    ffs = cluster_fs.KillAfterWriteFileSystem(store.fs, side_dir=str(side_dir), engine=engine)
    return kf.Store(store.url, filesystem=ffs, **store.storage_options)


def data_keys(store: kf.Store, uuid: str) -> set[str]:
    prefix = naming.table_prefix(uuid, "table")
    return {k for k in store.iter_keys(prefix) if k.endswith(".parquet")}


def referenced_keys(store: kf.Store, uuid: str) -> set[str]:
    """The data files the current version references."""
    return set(kf.read_dataset_metadata(uuid, store).partitions.values())


def sales(n: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "p": [i % 4 for i in range(n)],
            "k": list(range(n)),
            "v": [float(i) / 2 for i in range(n)],
        }
    )


def test_spark_task_killed_mid_write_is_retried_and_commits_once(
    cluster_spark: Any, standalone_cluster: Any, s3_store: kf.Store, tmp_path: Path
) -> None:
    """Proves: on a standalone cluster with Spark's default retries, a write task whose
    executor Python worker is SIGKILLed after writing a complete data file (attempt 0 of
    partition 0) is retried; the dataset gets exactly one commit (one version in the log)
    holding every input row exactly once; the file the killed attempt wrote is gone from
    the store (the write's own cleanup of failed attempts), so garbage collection finds
    nothing left; and the killed process was an executor's, not the driver's.
    """
    store = killing_store(s3_store, tmp_path, "spark")
    df = sales(400)
    sdf = cluster_spark.createDataFrame(df).repartition(2)

    kfs.store_dataset_from_sdf(sdf, store, "killed", partition_on=["p"])

    (victim,) = cluster_fs.victims(tmp_path)
    assert victim["pid"] != os.getpid()
    assert standalone_cluster.worker.pid in victim["pids"]  # an executor's Python worker
    history = kf.dataset_history("killed", s3_store)
    assert [r.version for r in history] == [0]
    got = kf.read_table("killed", s3_store).sort_values("k", ignore_index=True)
    pd.testing.assert_frame_equal(got[df.columns.tolist()], df, check_dtype=False)
    killed_key = victim["path"].split("/root/", 1)[1]
    assert killed_key not in data_keys(s3_store, "killed")
    assert data_keys(s3_store, "killed") == referenced_keys(s3_store, "killed")
    assert kf.garbage_collect_dataset("killed", s3_store, grace_hours=0, force=True) == []


def test_dask_worker_killed_mid_write_is_rescheduled_and_commits_once(
    process_dask_client: Any, s3_store: kf.Store, tmp_path: Path
) -> None:
    """Proves: on a ``LocalCluster(processes=True)``, a write whose worker process is
    SIGKILLed after writing a complete data file is rescheduled by dask on a live worker;
    the dataset gets exactly one commit holding every input row exactly once; the dead
    worker's file stays unreferenced and ``garbage_collect_dataset`` removes exactly that
    file (and nothing the commit references); the killed process was a worker, not the
    client.
    """
    store = killing_store(s3_store, tmp_path, "dask")
    df = sales(400)
    ddf = dd.from_pandas(df, npartitions=4)

    job = kf.store_dataset_from_ddf(ddf, store, "killed", partition_on=["p"])
    process_dask_client.compute(job).result()

    (victim,) = cluster_fs.victims(tmp_path)
    # a worker process the LocalCluster spawned from this one, not this (the client)
    assert victim["pid"] != os.getpid() and victim["pids"][1] == os.getpid()
    assert [r.version for r in kf.dataset_history("killed", s3_store)] == [0]
    got = kf.read_table("killed", s3_store).sort_values("k", ignore_index=True)
    pd.testing.assert_frame_equal(got[df.columns.tolist()], df, check_dtype=False)
    killed_key = victim["path"].split("/root/", 1)[1]
    referenced = referenced_keys(s3_store, "killed")
    assert killed_key not in referenced
    assert data_keys(s3_store, "killed") == referenced | {killed_key}

    deleted = kf.garbage_collect_dataset("killed", s3_store, grace_hours=0, force=True)

    assert deleted == [killed_key]
    assert data_keys(s3_store, "killed") == referenced
    assert len(kf.read_table("killed", s3_store)) == len(df)
