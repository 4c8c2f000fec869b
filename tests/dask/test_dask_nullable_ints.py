"""Integer columns have one dtype in every frame of a read (issue 13 §2).

Integers holding nulls read as pandas ``Int64`` (never ``float64``). Which integer columns
get ``Int64`` is decided once, when the read is planned (``kartoframe.plan.integers``: the
stored pandas metadata, the field's nullability, partition labels and the per-file null
counts of kartoframe's statistics), so a dask collection's ``meta`` equals every computed
partition, iterator batches agree, and per-partition frames agree. It used to be decided
per frame from its own nulls: only the partitions holding nulls were ``Int64``.
"""

from __future__ import annotations

from typing import Any

import dask
import pandas as pd
import pyarrow as pa
import pytest

import kartoframe as kf
from kartoframe.plan.integers import integer_statistics_needed, nullable_integer_columns
from kartoframe.plan.scan import FilePart
from kartoframe.storage.resolve import statistics_ref
from kartoframe.storage.store import Store

BIG = 2**60 + 1  # not representable as float64

pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
]


def _dtypes(df: pd.DataFrame) -> dict[str, str]:
    return {c: str(t) for c, t in df.dtypes.items()}


def _ints(values: pd.Series) -> list[int | None]:
    return [None if pd.isna(v) else int(v) for v in values]


def _partitions(ddf: Any, scheduler: Any) -> list[pd.DataFrame]:
    return [ddf.get_partition(i).compute(scheduler=scheduler) for i in range(ddf.npartitions)]


def _plateau_dataset(url: str) -> None:
    """p=1 holds no null in ``x``, p=2 does; ``y`` has no null anywhere (no statistics)."""
    plateau = pytest.importorskip("plateau.api.dataset")
    df = pd.DataFrame(
        {
            "p": [1, 1, 2, 2],
            "x": pd.array([1, BIG, None, -BIG], dtype="Int64"),
            "y": [1, 2, 3, 4],
        }
    )
    plateau.store_dataframes_as_dataset(
        store=f"hfs://{url}", dataset_uuid="ds", dfs=[df], partition_on=["p"]
    )


def _check_ddf(ddf: Any, scheduler: Any) -> list[pd.DataFrame]:
    parts = _partitions(ddf, scheduler)
    assert len(parts) == 2
    for part in parts:
        assert _dtypes(part) == _dtypes(ddf._meta)
    whole = ddf.compute(scheduler=scheduler)
    assert _dtypes(whole) == _dtypes(ddf._meta)
    return parts


# -- plateau-written datasets (no statistics: every file may hold nulls) ------------------
@pytest.mark.interop
def test_plateau_nulls_in_some_files_sync(tmp_path) -> None:
    url = str(tmp_path / "store")
    _plateau_dataset(url)
    ddf = kf.read_dataset_as_ddf("ds", url)
    assert _dtypes(ddf._meta) == {"p": "int64", "x": "Int64", "y": "Int64"}
    with dask.config.set(scheduler="sync"):
        parts = _check_ddf(ddf, "sync")
    assert [_ints(p["x"]) for p in parts] == [[1, BIG], [None, -BIG]]
    assert [_ints(p["y"]) for p in parts] == [[1, 2], [3, 4]]


@pytest.mark.interop
def test_plateau_nulls_in_some_files_distributed(tmp_path, dask_client) -> None:
    url = str(tmp_path / "store")
    _plateau_dataset(url)
    ddf = kf.read_dataset_as_ddf("ds", url, columns=["x", "p"])
    assert _dtypes(ddf._meta) == {"x": "Int64", "p": "int64"}
    parts = _check_ddf(ddf, dask_client)
    assert [_ints(p["x"]) for p in parts] == [[1, BIG], [None, -BIG]]
    # a projection dask pushes down keeps the dtype
    assert str(ddf["x"].compute(scheduler=dask_client).dtype) == "Int64"


@pytest.mark.interop
def test_plateau_nulls_in_some_files_iterator_and_frames(tmp_path) -> None:
    url = str(tmp_path / "store")
    _plateau_dataset(url)
    want = {"p": "int64", "x": "Int64", "y": "Int64"}
    batches = list(kf.read_dataset_as_dataframes__iterator("ds", url))
    assert [_dtypes(b) for b in batches] == [want, want]
    frames = kf.read_dataset_as_dataframes("ds", url)
    assert [_dtypes(f) for f in frames] == [want, want]
    assert [_ints(f["x"]) for f in frames] == [[1, BIG], [None, -BIG]]
    delayed = kf.read_dataset_as_delayed("ds", url)
    assert [_dtypes(d.compute(scheduler="sync")) for d in delayed] == [want, want]
    # one frame for the whole read: its own nulls decide (as plateau's read_table)
    assert _dtypes(kf.read_table("ds", url)) == {"p": "int64", "x": "Int64", "y": "int64"}


# -- kartoframe-written datasets (statistics know the null counts) ------------------------
def test_kartoframe_pyarrow_integers_with_nulls_in_some_files(tmp_path) -> None:
    """int32 without nulls first, then int32[pyarrow] with nulls: the stored pandas
    metadata stays numpy int64, the statistics say which files hold nulls."""
    url = str(tmp_path / "store")
    first = pd.DataFrame({"p": [1, 1], "y": pd.array([1, 2], dtype="int32"), "z": [5, 6]})
    more = pd.DataFrame(
        {"p": [2, 2], "y": pd.array([None, 2**31 - 1], dtype="int32[pyarrow]"), "z": [7, 8]}
    )
    kf.store_dataframes_as_dataset(url, "ds", [first], partition_on=["p"])
    kf.update_dataset_from_dataframes([more], store=url, dataset_uuid="ds", partition_on=["p"])
    want = {"p": "int64", "y": "Int64", "z": "int64"}  # z: no nulls anywhere -> numpy
    ddf = kf.read_dataset_as_ddf("ds", url)
    assert _dtypes(ddf._meta) == want
    with dask.config.set(scheduler="sync"):
        parts = _check_ddf(ddf, "sync")
    assert [_ints(p["y"]) for p in parts] == [[1, 2], [None, 2**31 - 1]]
    assert [_dtypes(f) for f in kf.read_dataset_as_dataframes__iterator("ds", url)] == [
        want,
        want,
    ]
    # pruned to the file without nulls: numpy dtypes again
    only = kf.read_dataset_as_ddf("ds", url, predicates=[[("p", "==", 1)]])
    numpy = {"p": "int64", "y": "int64", "z": "int64"}
    assert _dtypes(only._meta) == _dtypes(only.compute(scheduler="sync")) == numpy


def test_kartoframe_integers_without_nulls_stay_numpy(tmp_path) -> None:
    """The fast default: integer columns without nulls are numpy int64 everywhere."""
    url = str(tmp_path / "store")
    df = pd.DataFrame({"p": [1, 2, 3], "a": [1, 2, 3], "b": pd.array([4, 5, 6], dtype="int32")})
    kf.store_dataframes_as_dataset(url, "ds", [df], partition_on=["p"])
    ddf = kf.read_dataset_as_ddf("ds", url)
    want = {"p": "int64", "a": "int64", "b": "int64"}
    assert _dtypes(ddf._meta) == want
    assert {_dtypes(p) == want for p in _partitions(ddf, "sync")} == {True}
    assert [_dtypes(f) for f in kf.read_dataset_as_dataframes("ds", url)] == [want] * 3


@pytest.mark.interop
def test_files_the_statistics_do_not_describe_may_hold_nulls(tmp_path) -> None:
    """A kartoframe dataset that plateau appended to: its file has no statistics row."""
    plateau = pytest.importorskip("plateau.api.dataset")
    url = str(tmp_path / "store")
    kf.store_dataframes_as_dataset(
        url, "ds", [pd.DataFrame({"p": [1, 1], "x": [1, 2]})], partition_on=["p"]
    )
    plateau.update_dataset_from_dataframes(
        [pd.DataFrame({"p": [2, 2], "x": pd.array([None, BIG], dtype="Int64")})],
        store=f"hfs://{url}",
        dataset_uuid="ds",
        partition_on=["p"],
    )
    ddf = kf.read_dataset_as_ddf("ds", url)
    assert _dtypes(ddf._meta) == {"p": "int64", "x": "Int64"}
    with dask.config.set(scheduler="sync"):
        parts = _check_ddf(ddf, "sync")
    assert [_ints(p["x"]) for p in parts] == [[1, 2], [None, BIG]]


def test_missing_statistics_file_falls_back_to_nullable(tmp_path) -> None:
    """A statistics file that is gone does not fail a read that only types with it."""
    url = str(tmp_path / "store")
    kf.store_dataframes_as_dataset(
        url, "ds", [pd.DataFrame({"p": [1, 1], "x": [1, 2]})], partition_on=["p"]
    )
    more = pd.DataFrame({"p": [2, 2], "x": pd.array([None, BIG], dtype="int64[pyarrow]")})
    kf.update_dataset_from_dataframes([more], store=url, dataset_uuid="ds")
    st = Store(url)
    ref = statistics_ref(kf.read_dataset_metadata("ds", url).header)
    assert ref is not None and ref.key is not None
    st.delete(ref.key)
    want = {"p": "int64", "x": "Int64"}
    ddf = kf.read_dataset_as_ddf("ds", url)
    assert _dtypes(ddf._meta) == want
    assert [_dtypes(p) for p in _partitions(ddf, "sync")] == [want, want]
    assert [_dtypes(f) for f in kf.read_dataset_as_dataframes("ds", url)] == [want, want]


# -- the planning function ----------------------------------------------------------------
def _schema(**numpy_types: str) -> pa.Schema:
    import json

    fields = [
        pa.field("p", pa.int64()),
        pa.field("a", pa.int64()),
        pa.field("b", pa.int64(), nullable=False),
        pa.field("c", pa.int64()),
        pa.field("s", pa.string()),
    ]
    cols = [{"name": f.name, "numpy_type": numpy_types.get(f.name, "int64")} for f in fields]
    return pa.schema(fields, metadata={b"pandas": json.dumps({"columns": cols}).encode()})


def _stats(rows: list[tuple[str, str, int | None, int | None]]) -> pa.Table:
    labels, keys, a, c = zip(*rows)
    counts = pa.StructArray.from_arrays(
        [pa.array(a, pa.int64()), pa.array(c, pa.int64())], names=["a", "c"]
    )
    return pa.table(
        {"label": list(labels), "key": list(keys), "rows": [2] * len(rows), "null_count": counts}
    )


def test_nullable_integer_columns_rules() -> None:
    schema = _schema(c="Int64")
    files = [FilePart("p=1/f1", "ds/t/p=1/f1.parquet", (1,)), FilePart("p=2/f2", "k2", (2,))]
    cols = ["p", "a", "b", "c", "s"]
    # no statistics: nullable fields may hold nulls; declared Int64 (c) needs no decision
    assert nullable_integer_columns(schema, cols, files, ["p"], None) == ("a",)
    # statistics: no null anywhere -> numpy
    stats = _stats([("p=1/f1", "ds/t/p=1/f1.parquet", 0, 0), ("p=2/f2", "k2", 0, 3)])
    assert nullable_integer_columns(schema, cols, files, ["p"], stats) == ()
    # one file with nulls, an unknown count, a row of another data file, a missing row
    for rows in (
        [("p=1/f1", "ds/t/p=1/f1.parquet", 0, 0), ("p=2/f2", "k2", 1, 0)],
        [("p=1/f1", "ds/t/p=1/f1.parquet", 0, 0), ("p=2/f2", "k2", None, 0)],
        [("p=1/f1", "ds/t/p=1/f1.parquet", 0, 0), ("p=2/f2", "old-key", 0, 0)],
        [("p=1/f1", "ds/t/p=1/f1.parquet", 0, 0)],
    ):
        assert nullable_integer_columns(schema, cols, files, ["p"], _stats(rows)) == ("a",)
    # only the planned files count; categoricals are not integers in pandas
    assert nullable_integer_columns(schema, cols, files[:1], ["p"], _stats(rows)) == ()
    assert nullable_integer_columns(schema, cols, files, ["p"], None, ["a"]) == ()
    # a partition key is null only where a label says so
    null_key = [*files, FilePart("p=__null__/f3", "k3", (None,))]
    assert nullable_integer_columns(schema, ["p"], null_key, ["p"], None) == ("p",)
    # statistics are needed only for nullable integer columns that are not keys
    assert integer_statistics_needed(schema, None, ["p"])
    assert not integer_statistics_needed(schema, ["p", "b", "c", "s"], ["p"])
    assert not integer_statistics_needed(schema, ["a"], ["p"], ["a"])


def test_cube_dask_query_groups_agree(tmp_path) -> None:
    """query_cube_dataframe: one partition per group, the seed's integer column typed
    once for all of them (a group without nulls used to be int64 under Int64 meta)."""
    url = str(tmp_path / "store")
    cube = kf.Cube(dimension_columns=["x"], partition_columns=["p"], uuid_prefix="c")
    kf.build_cube(data=pd.DataFrame({"x": [1, 2], "p": [1, 1], "v": [1, 2]}), cube=cube, store=url)
    more = pd.DataFrame({"x": [3, 4], "p": [2, 2], "v": pd.array([None, BIG], dtype="Int64")})
    kf.append_to_cube(data=more, cube=cube, store=url)
    ddf = kf.query_cube_dataframe(cube=cube, store=url, partition_by=["p"])
    want = {"p": "int64", "v": "Int64", "x": "int64"}
    assert _dtypes(ddf._meta) == want
    parts = _partitions(ddf, "sync")
    assert [_dtypes(p) for p in parts] == [want, want]
    assert [_ints(p["v"]) for p in parts] == [[1, 2], [None, BIG]]
    assert [_dtypes(f) for f in kf.query_cube(cube=cube, store=url, partition_by=["p"])] == [
        want,
        want,
    ]
