"""plateau's delayed and bag API and utilities, on kartoframe's plans."""

from __future__ import annotations

import uuid

import dask
import dask.bag as db
import dask.dataframe as dd
import pandas as pd
import pyarrow as pa
import pytest
from dask.delayed import delayed

import kartoframe as kf


@pytest.fixture
def url() -> str:
    return f"memory://delayed-{uuid.uuid4().hex}"


def _frames() -> list[pd.DataFrame]:
    return [pd.DataFrame({"p": [i % 2, 1], "x": [i, i + 10], "s": ["a", "b"]}) for i in range(3)]


def _made(df: object) -> object:
    return df


def _fail() -> pd.DataFrame:
    raise RuntimeError("task failed")


def _sorted(df: pd.DataFrame) -> dict[str, list[object]]:
    return df.sort_values("x").reset_index(drop=True).to_dict("list")


def test_store_delayed_one_task_per_input_and_one_commit(url: str) -> None:
    tasks = [delayed(_made)(df) for df in _frames()]
    job = kf.store_delayed_as_dataset(tasks, url, "ds", partition_on=["p"], secondary_indices=["x"])
    keys = [str(k) for k in dict(job.__dask_graph__())]
    assert sum("kartoframe-write-" in k for k in keys) == 3
    assert sum("kartoframe-commit-" in k for k in keys) == 1
    assert job.compute(scheduler="sync").uuid == "ds"
    expected = pd.concat(_frames(), ignore_index=True)[["p", "s", "x"]]
    assert _sorted(kf.read_table("ds", url)) == _sorted(expected)
    assert kf.read_dataset_metadata("ds", url).secondary_indices == ["x"]


def test_store_delayed_failure_commits_nothing(url: str) -> None:
    tasks = [delayed(_made)(_frames()[0]), delayed(_fail)()]
    job = kf.store_delayed_as_dataset(tasks, url, "ds", partition_on=["p"])
    with pytest.raises(RuntimeError, match="task failed"):
        job.compute(scheduler="sync")
    assert list(kf.Store(url).iter_keys()) == []


def test_store_delayed_input_shapes_and_errors(url: str) -> None:
    a, b, c = _frames()
    job = kf.store_delayed_as_dataset([{"data": a}, [b, None], {"table": c}, None], url, "ds")
    job.compute(scheduler="sync")
    assert len(kf.read_table("ds", url)) == 6
    with pytest.raises(kf.DatasetExistsError):
        kf.store_delayed_as_dataset([a], url, "ds")
    with pytest.raises(kf.InvalidTypeError, match="must compute to a DataFrame"):
        kf.store_delayed_as_dataset([42], url, "other").compute(scheduler="sync")
    with pytest.raises(kf.InvalidInputError, match="partition columns"):
        kf.store_delayed_as_dataset([a], url, "x", partition_on=["p"], secondary_indices=["p"])


def test_read_as_delayed_prunes_and_update_from_delayed(url: str) -> None:
    kf.store_dataframes_as_dataset(
        url, "ds", _frames(), partition_on=["p"], secondary_indices=["x"]
    )
    assert len(kf.read_dataset_as_delayed("ds", url)) == 5  # one task per file
    tasks = kf.read_dataset_as_delayed("ds", url, predicates=[[("x", "==", 11)]], columns=["x"])
    assert len(tasks) == 1
    assert dask.compute(*tasks, scheduler="sync")[0].to_dict("list") == {"x": [11]}
    new = pd.DataFrame({"p": [5], "x": [99], "s": ["z"]})
    job = kf.update_dataset_from_delayed(
        [delayed(_made)(new)], url, "ds", delete_scope=[{"p": 0}], metadata={"k": "v"}
    )
    job.compute(scheduler="sync")
    out = kf.read_table("ds", url)
    assert sorted(out["x"]) == [1, 10, 11, 12, 99]
    assert kf.read_dataset_metadata("ds", url).metadata["k"] == "v"
    assert kf.read_table("ds", url, predicates=[[("x", "==", 99)]])["s"].tolist() == ["z"]
    with pytest.raises(kf.InvalidInputError, match="partition keys"):
        kf.update_dataset_from_delayed([new], url, "ds", partition_on=["s"])


def test_bag_read_and_write(url: str) -> None:
    kf.store_bag_as_dataset(
        db.from_sequence(_frames(), npartitions=2), url, "ds", partition_on=["p"]
    ).compute(scheduler="sync")
    assert len(kf.read_table("ds", url)) == 6
    bag = kf.read_dataset_as_dataframe_bag("ds", url)
    parts = bag.compute(scheduler="sync")
    assert all(isinstance(d, pd.DataFrame) for d in parts) and sum(map(len, parts)) == 6
    assert kf.read_dataset_as_dataframe_bag("ds", url, partition_size=10).npartitions == 1
    none = kf.read_dataset_as_dataframe_bag("ds", url, predicates=[[("p", "==", 7)]])
    assert none.compute(scheduler="sync") == []
    with pytest.raises(kf.InvalidTypeError, match=r"dask\.bag\.Bag"):
        kf.store_bag_as_dataset(_frames(), url, "other")


def test_build_indices_bag_matches_eager(url: str) -> None:
    kf.store_dataframes_as_dataset(url, "a", _frames(), partition_on=["p"])
    kf.store_dataframes_as_dataset(url, "b", _frames(), partition_on=["p"])
    job = kf.build_dataset_indices__bag(url, "a", ["x"])
    keys = [str(k) for k in dict(job.__dask_graph__())]
    assert sum("_index_file" in k for k in keys) == 5  # one task per file
    job.compute(scheduler="sync")
    kf.build_dataset_indices(url, "b", ["x"])
    ia = kf.read_dataset_metadata("a", url).load_index("x")
    ib = kf.read_dataset_metadata("b", url).load_index("x")
    assert len(ia) == len(ib)
    assert kf.read_table("a", url, predicates=[[("x", "==", 2)]])["x"].tolist() == [2]
    with pytest.raises(kf.InvalidInputError, match="partition columns"):
        kf.build_dataset_indices__bag(url, "a", ["p"])


def test_gc_and_delete_delayed(url: str) -> None:
    kf.store_dataframes_as_dataset(url, "ds", _frames(), partition_on=["p"])
    kf.update_dataset_from_dataframes([], url, "ds", delete_scope=[{"p": 0}])
    assert kf.garbage_collect_dataset__delayed("ds", url, retention_hours=0) == []  # grace
    tasks = kf.garbage_collect_dataset__delayed(
        "ds", url, chunk_size=1, retention_hours=0, grace_hours=0, force=True
    )
    deleted = [k for chunk in dask.compute(*tasks, scheduler="sync") for k in chunk]
    assert len(tasks) == len(deleted)  # chunks of one key
    assert sorted(k.split("/")[2] for k in deleted if "/table/" in k) == ["p=0", "p=0"]
    assert len(kf.read_table("ds", url)) == 4
    kf.delete_dataset__delayed("ds", url).compute(scheduler="sync")
    with pytest.raises(kf.DatasetNotFoundError):
        kf.read_table("ds", url)


def test_dask_table_factory_and_metadata_merger_keywords(url: str) -> None:
    ddf = dd.from_pandas(pd.concat(_frames(), ignore_index=True), npartitions=2)
    kf.store_dataset_from_ddf(
        ddf, url, "ds", table="rows", partition_on=["p"], metadata_merger=lambda m: m[0]
    ).compute(scheduler="sync")
    assert kf.read_dataset_metadata("ds", url).table_name == "rows"
    assert len(kf.read_dataset_as_ddf("ds", url, table="rows").compute(scheduler="sync")) == 6
    with pytest.raises(kf.InvalidInputError, match="no table 'table'"):
        kf.read_dataset_as_ddf("ds", url, table="table")
    with pytest.raises(kf.InvalidInputError, match="disagree"):
        kf.store_dataset_from_ddf(ddf, url, "x", table="a", table_name="b")

    class Factory:  # the attributes of plateau's DatasetFactory kartoframe uses
        dataset_uuid = "ds"

        def store_factory(self) -> kf.Store:
            return kf.Store(url)

    fac = Factory()
    assert len(kf.read_dataset_as_ddf(factory=fac).compute(scheduler="sync")) == 6
    kf.update_dataset_from_ddf(ddf, factory=fac, table="rows").compute(scheduler="sync")
    assert len(kf.read_dataset_as_dataframe_bag(factory=fac).compute(scheduler="sync")) >= 1
    with pytest.raises(kf.InvalidTypeError, match="DatasetFactory"):
        kf.read_dataset_as_delayed(factory=object())
    with pytest.raises(kf.InvalidInputError, match="differs from the factory"):
        kf.read_dataset_as_delayed("other", factory=fac)


def test_utilities_match_plateau() -> None:
    import plateau.api.dataset as pl

    for t, tpd, tnp in [
        (pa.int8(), "int8", "int8"),
        (pa.float32(), "float32", "float32"),
        (pa.uint16(), "uint16", "uint16"),
        (pa.list_(pa.int16()), "list[int16]", "object"),
        (pa.string(), "unicode", "object"),
    ]:
        assert kf.normalize_type(t, tpd, tnp, None) == pl.normalize_type(t, tpd, tnp, None)
    df = pd.DataFrame({"b": [1], "p": ["x"], "a": [1.5]})
    assert kf.make_meta(df, "o", ["p"]).names == pl.make_meta(df, "o", ["p"]).names
    assert kf.normalize_column_order(kf.make_meta(df, "o"), ["p"]).names == ["p", "a", "b"]
    schema = kf.make_meta(df, "o")
    empty = kf.empty_dataframe_from_schema(schema, columns=["b", "a"])
    assert list(empty.columns) == ["b", "a"] and len(empty) == 0
    assert empty.dtypes.to_dict() == {"b": "int64", "a": "float64"}
    with pytest.raises(kf.ColumnNotFoundError):
        kf.empty_dataframe_from_schema(schema, columns=["nope"])
    assert kf.validate_compatible([]) is None
    assert kf.validate_compatible([schema, kf.make_meta(df.astype({"b": "int8"}), "o")]) == schema
    with pytest.raises(ValueError, match="column 'b'") as info:
        kf.validate_compatible([schema, kf.make_meta(df.assign(b="s"), "o")])
    assert isinstance(info.value, kf.SchemaError)
    assert kf.lazy_store("memory://lazy")() == kf.Store("memory://lazy")
    assert kf.ensure_store("memory://lazy") == kf.Store("memory://lazy")


@pytest.mark.filterwarnings("ignore::kartoframe.storage.kvstore.KVStoreWarning")
def test_eager_functions_take_plateaus_factory() -> None:
    import plateau.api.dataset as pl
    from minimalkv import get_store_from_url

    kv = get_store_from_url("hmemory://")
    kf.store_dataframes_as_dataset(kv, "ds", _frames(), partition_on=["p"])
    fac = pl.DatasetFactory("ds", lambda: kv)  # plateau's own factory over the same store
    assert len(kf.read_table(factory=fac)) == 6
    assert sum(map(len, kf.read_dataset_as_dataframes(factory=fac))) == 6
    assert sum(map(len, kf.read_dataset_as_dataframes__iterator(factory=fac))) == 6
    assert kf.hash_dataset(factory=fac, table="table").compute(scheduler="sync").size == 5
    assert len(kf.collect_dataset_metadata(factory=fac).compute(scheduler="sync")) == 5
    kf.update_dataset_from_dataframes([_frames()[0]], factory=fac)
    kf.build_dataset_indices(None, None, ["x"], factory=fac)
    assert kf.read_dataset_metadata("ds", kv).secondary_indices == ["x"]
    kf.garbage_collect_dataset(factory=fac)
    with pytest.raises(kf.InvalidInputError, match="no table 'other'"):
        kf.hash_dataset(factory=fac, table="other")
    kf.delete_dataset(factory=fac)
    with pytest.raises(kf.DatasetNotFoundError):
        kf.read_table(factory=fac)
