"""Time travel through the Spark reader (``version=`` / ``as_of=``, docs/transactions.md)."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

import kartoframe as kf

pytestmark = pytest.mark.spark


def test_spark_reads_a_past_version(spark: Any, tmp_path: Any) -> None:
    import kartoframe.spark as kfs

    url = f"file://{tmp_path}/store"
    df = pd.DataFrame({"p": [0, 1], "k": [0, 0]})
    kf.store_dataframes_as_dataset(url, "ds", [df], partition_on=["p"])
    kf.update_dataset_from_dataframes([df.assign(k=1)], url, "ds", delete_scope=[{"p": 0}])
    when = kf.dataset_history("ds", url)[1].timestamp

    def ks(**kwargs: Any) -> list[int]:
        return sorted(r["k"] for r in kfs.read_dataset_as_sdf(spark, "ds", url, **kwargs).collect())

    assert ks(version=0) == [0, 0]
    assert ks() == [0, 1, 1]
    assert ks(as_of=when) == [0, 0]
