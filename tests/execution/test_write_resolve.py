"""The one write front (``execution/write_resolve.store_target`` / ``update_target``):
every engine checks a write's arguments the same way and treats a retried step the same way.

Before the fronts were one, the dask and Spark creates resolved the request before looking
for the application transaction, so a retried ``store_dataset_from_ddf`` /
``store_dataset_from_sdf`` with ``app_id``/``app_version`` failed with
``DatasetExistsError`` where the eager create returned the dataset; and only the delayed
create refused an index on a partition column before writing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import dask
import dask.dataframe as dd
import pandas as pd
import pytest

import kartoframe as kf

DF = pd.DataFrame({"p": [1, 1, 2], "x": [1.0, 2.0, 3.0]})


def _eager(store: kf.Store, uuid: str, **kw: Any) -> None:
    kf.store_dataframes_as_dataset(store, uuid, [DF], **kw)


def _dask(store: kf.Store, uuid: str, **kw: Any) -> None:
    kf.store_dataset_from_ddf(dd.from_pandas(DF, npartitions=2), store, uuid, **kw).compute(
        scheduler="sync"
    )


def _delayed(store: kf.Store, uuid: str, **kw: Any) -> None:
    parts = [dask.delayed(DF)]
    kf.store_delayed_as_dataset(parts, store, uuid, **kw).compute(scheduler="sync")


CREATES: dict[str, Callable[..., None]] = {"eager": _eager, "dask": _dask, "delayed": _delayed}
TRANSACTIONAL = {"eager": _eager, "dask": _dask}


@pytest.mark.parametrize("engine", sorted(TRANSACTIONAL))
def test_a_retried_create_writes_nothing(file_store: kf.Store, engine: str) -> None:
    create = TRANSACTIONAL[engine]
    create(file_store, "ds", partition_on=["p"], app_id="job", app_version=3)
    keys = set(file_store.iter_keys())
    create(file_store, "ds", partition_on=["p"], app_id="job", app_version=3)  # the retry
    assert set(file_store.iter_keys()) == keys
    assert [h.app_version for h in kf.dataset_history("ds", file_store)] == [3]
    with pytest.raises(kf.DatasetExistsError):  # another step still may not replace it
        create(file_store, "ds", partition_on=["p"], app_id="job", app_version=4)


@pytest.mark.parametrize("engine", sorted(CREATES))
@pytest.mark.parametrize(
    "kwargs,error,match",
    [
        ({"overwrite": "yes"}, kf.InvalidTypeError, "overwrite must be a bool"),
        (
            {"partition_on": ["p"], "secondary_indices": ["p"]},
            kf.InvalidInputError,
            r"secondary index on partition columns: \['p'\]",
        ),
        ({"table_name": "a/b"}, kf.InvalidInputError, "table_name"),
        ({"metadata_storage_format": "xml"}, kf.InvalidInputError, "metadata_storage_format"),
    ],
)
def test_every_create_refuses_bad_arguments_before_writing(
    file_store: kf.Store, engine: str, kwargs: dict[str, Any], error: type, match: str
) -> None:
    with pytest.raises(error, match=match):
        CREATES[engine](file_store, "ds", **kwargs)
    assert list(file_store.iter_keys()) == []


def test_spark_retried_create_writes_nothing(spark: Any, file_store: kf.Store) -> None:
    import kartoframe.spark as kfs

    sdf = spark.createDataFrame(DF)
    kfs.store_dataset_from_sdf(sdf, file_store, "ds", partition_on=["p"], app_id="j", app_version=1)
    keys = set(file_store.iter_keys())
    kfs.store_dataset_from_sdf(sdf, file_store, "ds", partition_on=["p"], app_id="j", app_version=1)
    assert set(file_store.iter_keys()) == keys
    assert [h.app_version for h in kf.dataset_history("ds", file_store)] == [1]
    with pytest.raises(kf.InvalidInputError, match="secondary index on partition columns"):
        kfs.store_dataset_from_sdf(
            sdf, file_store, "other", partition_on=["p"], secondary_indices=["p"]
        )
    assert not any("other" in k for k in file_store.iter_keys())
