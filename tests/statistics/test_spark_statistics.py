"""Spark writes statistics and its reads skip files by them (local SparkSession)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import kartoframe as kf

pytestmark = pytest.mark.spark


def test_spark_write_and_read_skip_by_statistics(spark, tmp_path) -> None:
    kfs = pytest.importorskip("kartoframe.spark")
    store = kf.Store(f"file://{tmp_path}/store")
    df = pd.DataFrame(
        {"p": np.arange(40) % 2, "x": np.arange(40), "s": [f"v{i}" for i in range(40)]}
    )
    sdf = spark.createDataFrame(df).repartitionByRange(4, "x")  # clustered on x
    kfs.store_dataset_from_sdf(sdf, store, "ds", partition_on=["p"], repartition=False)
    st = kf.dataset_statistics("ds", store)
    assert st["has_statistics"].all() and st["rows"].sum() == 40
    pred = [[("x", ">=", 38)]]
    got = kfs.read_dataset_as_sdf(spark, "ds", store, predicates=pred)
    opened = len(got.inputFiles())
    assert opened < len(st)
    expected = int((st["x.max"] >= 38).sum())
    assert opened == expected
    assert sorted(r["x"] for r in got.collect()) == [38, 39]
