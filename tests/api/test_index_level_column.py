"""A user column named like pandas' index columns is data (issue 12, §4).

``__index_level_0__`` was written to the Parquet files but dropped on read: the schema
normalisation took every column with that name for a stray pandas index. Only columns the
pandas metadata lists in ``index_columns`` are index columns; the others are kept, in every
engine, and files plateau wrote with a real stray index column still read without it.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import dask.dataframe as dd
import pandas as pd
import pyarrow.parquet as pq
import pytest

import kartoframe as kf


def _frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "p": [1, 1, 2, 2],
            "__index_level_0__": [10, 20, 30, 40],
            "__index_level_1__": ["a", "b", "c", "d"],
            "v": [1.5, 2.5, 3.5, 4.5],
        }
    )


def _sorted(df: pd.DataFrame) -> pd.DataFrame:
    return df.sort_values("__index_level_0__").reset_index(drop=True)[list(_frame().columns)]


def test_eager_round_trip(store: kf.Store) -> None:
    df = _frame()
    kf.store_dataframes_as_dataset(
        store, "ds", [df], partition_on=["p"], secondary_indices=["__index_level_0__"]
    )
    assert "__index_level_0__" in kf.read_dataset_metadata("ds", store).schema.names
    pd.testing.assert_frame_equal(_sorted(kf.read_table("ds", store)), df, check_dtype=False)
    # predicates and the secondary index on the column work
    got = kf.read_table("ds", store, predicates=[[("__index_level_0__", "==", 30)]])
    assert got["__index_level_1__"].tolist() == ["c"]
    got = kf.read_table("ds", store, columns=["__index_level_1__"])
    assert sorted(got["__index_level_1__"]) == ["a", "b", "c", "d"]
    # an update keeps it too
    kf.update_dataset_from_dataframes([df], store, "ds")
    assert kf.read_table("ds", store)["__index_level_0__"].tolist().count(10) == 2


def test_dask_round_trip(store: kf.Store) -> None:
    df = _frame()
    kf.store_dataset_from_ddf(
        dd.from_pandas(df, npartitions=2), store, "ds", partition_on=["p"]
    ).compute()
    ddf = kf.read_dataset_as_ddf("ds", store)
    assert "__index_level_0__" in ddf.columns
    pd.testing.assert_frame_equal(_sorted(ddf.compute()), df, check_dtype=False)
    pd.testing.assert_frame_equal(_sorted(kf.read_table("ds", store)), df, check_dtype=False)


def test_unpartitioned_file_keeps_the_column(tmp_path: Path) -> None:
    kf.store_dataframes_as_dataset(str(tmp_path), "ds", [_frame()])
    (data,) = (tmp_path / "ds" / "table").glob("*.parquet")
    assert "__index_level_0__" in pq.read_schema(data).names
    assert sorted(kf.read_table("ds", str(tmp_path)).columns) == sorted(_frame().columns)


@pytest.mark.interop
def test_plateau_interop(tmp_path: Path) -> None:
    plateau_api = pytest.importorskip("plateau.api.dataset")
    from minimalkv import get_store_from_url

    url = str(tmp_path)
    factory = partial(get_store_from_url, f"hfs://{url}")
    df = _frame()
    # plateau writes the column (rows out of order: plateau adds its own stray index too)
    plateau_api.store_dataframes_as_dataset(
        store=factory, dataset_uuid="pl", dfs=[df.iloc[[0, 2, 1, 3]]], partition_on=["p"]
    )
    pd.testing.assert_frame_equal(_sorted(kf.read_table("pl", url)), df, check_dtype=False)
    # plateau reads what kartoframe writes
    kf.store_dataframes_as_dataset(url, "kf", [df], partition_on=["p"])
    got = plateau_api.read_table("kf", factory)
    pd.testing.assert_frame_equal(_sorted(got), df, check_dtype=False)
    # a real stray pandas index column in plateau's files is still not a column
    plain = df.drop(columns=["__index_level_0__", "__index_level_1__"])
    plateau_api.store_dataframes_as_dataset(
        store=factory, dataset_uuid="stray", dfs=[plain.iloc[[0, 2, 1, 3]]], partition_on=["p"]
    )
    files = list((tmp_path / "stray" / "table").rglob("*.parquet"))
    assert all("__index_level_0__" in pq.read_schema(f).names for f in files)
    assert sorted(kf.read_table("stray", url).columns) == ["p", "v"]
