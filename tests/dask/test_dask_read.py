"""``read_dataset_as_ddf``: graph construction, projection, divisions, categories, dtypes."""

from __future__ import annotations

import os
import pickle

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from dask_helpers import canonical, data_keys, write_sales

import kartoframe as kf
from kartoframe.execution.dask_engine import PartitionReader
from kartoframe.execution.dask_internals import KartoFromMap


def reader_tasks(collection) -> list:
    """The read tasks of a collection's (unoptimised) graph."""
    graph = dict(collection.__dask_graph__())
    return [t for t in graph.values() if isinstance(getattr(t, "func", None), PartitionReader)]


def pushed_columns(collection) -> list:
    """The ``columns`` operand of every read expression after dask's optimiser ran."""
    expr = collection.optimize(fuse=False).expr
    return [e.operand("columns") for e in expr.find_operations(KartoFromMap)]


def test_graph_construction_opens_no_data_file(file_store) -> None:
    expected = write_sales(file_store)
    keys = data_keys(file_store, "ds")
    for key in keys:
        os.remove(file_store.path(key))
    # header, schema and the index the predicate needs are enough to build everything
    ddf = kf.read_dataset_as_ddf(
        "ds",
        file_store,
        predicates=[[("product", "in", [1, 2])]],
        categoricals=["country"],
        dask_index_on="country",
    )
    assert ddf.npartitions == 3 and ddf.known_divisions
    assert list(ddf.columns) == ["note", "product", "units"]
    assert ddf["units"].dtype == np.int64
    full = kf.read_dataset_as_ddf("ds", file_store)
    assert full.npartitions == len(keys) == 9
    assert len(full[["units"]].optimize().__dask_graph__()) >= 9
    assert len(expected) == 36
    with pytest.raises((FileNotFoundError, kf.StorageError)):
        full.compute(scheduler="sync")


def test_one_partition_per_file_after_pruning(store) -> None:
    write_sales(store)
    ddf = kf.read_dataset_as_ddf("ds", store, predicates=[[("country", "==", "FR")]])
    assert ddf.npartitions == 3
    chunks = [
        pd.DataFrame({"product": [p] * 3, "units": [3 * p, 3 * p + 1, 3 * p + 2]}) for p in range(4)
    ]
    kf.store_dataframes_as_dataset(
        store=store, dataset_uuid="idx", dfs=chunks, secondary_indices=["product"]
    )
    pruned = kf.read_dataset_as_ddf("idx", store, predicates=[[("product", "in", [1, 3])]])
    assert pruned.npartitions == 2
    assert sorted(pruned.compute()["units"]) == [3, 4, 5, 9, 10, 11]


def test_column_projection_reaches_the_parquet_reader(store) -> None:
    write_sales(store)
    ddf = kf.read_dataset_as_ddf("ds", store)
    assert pushed_columns(ddf) == [None]
    assert pushed_columns(ddf[["units", "country"]]) == [["country", "units"]]
    assert pushed_columns(ddf["units"].sum()) == [["units"]]
    assert pushed_columns(ddf[ddf["units"] > 3]["note"]) == [["note", "units"]]
    assert int(ddf["units"].sum().compute()) == sum(range(36))
    got = ddf[["units", "country"]].compute()
    assert list(got.columns) == ["units", "country"]
    # the reader hands the projection to the Parquet scan
    task = reader_tasks(ddf)[0]
    part = task.func(task.args[0], columns=["units"])
    assert list(part.columns) == ["units"] and len(part) == 4


def test_fast_layer_is_used_and_matches_dask(store) -> None:
    write_sales(store)
    ddf = kf.read_dataset_as_ddf("ds", store)
    assert isinstance(ddf.expr, KartoFromMap), "the fast from_map expression was not used"
    projected = ddf[["units"]].optimize()
    fast = dict(projected.__dask_graph__())
    generic = projected.expr.__class__.__mro__[1]._layer(projected.expr)
    assert {k: (v.func, v.args, v.kwargs) for k, v in fast.items() if k in generic} == {
        k: (v.func, v.args, v.kwargs) for k, v in generic.items()
    }
    assert ddf.partitions[[2, 5]].compute().shape[0] == len(ddf.get_partition(2).compute()) + len(
        ddf.get_partition(5).compute()
    )


def test_graph_keys_are_deterministic(store) -> None:
    write_sales(store)
    a = kf.read_dataset_as_ddf("ds", store, columns=["units"])
    b = kf.read_dataset_as_ddf("ds", store, columns=["units"])
    assert a._name == b._name
    assert kf.read_dataset_as_ddf("ds", store, predicates=[[("units", ">", 3)]])._name != a._name
    # same files, different task boundaries or null semantics: different keys
    by_country = kf.read_dataset_as_ddf("ds", store, columns=["units"], dispatch_by=["country"])
    assert by_country._name != a._name
    with_null = [[("note", "in", ["n0", None])]]
    without = [[("note", "in", ["n0"])]]
    assert (
        kf.read_dataset_as_ddf("ds", store, predicates=with_null)._name
        != kf.read_dataset_as_ddf("ds", store, predicates=without)._name
    )
    kf.update_dataset_from_dataframes(
        [pd.DataFrame({"country": ["DE"], "product": [1], "units": [99], "note": ["x"]})],
        store=store,
        dataset_uuid="ds",
    )
    c = kf.read_dataset_as_ddf("ds", store, columns=["units"])
    assert c._name != a._name and c.npartitions == 10


def test_dask_index_on_gives_known_divisions(store) -> None:
    expected = write_sales(store)
    ddf = kf.read_dataset_as_ddf("ds", store, dask_index_on="product")
    assert ddf.divisions == (0, 1, 2, 3, 3)
    assert ddf.index.name == "product" and "product" not in ddf.columns
    two = ddf.loc[2]
    assert two.npartitions == 1
    assert sorted(two.compute()["units"]) == sorted(expected.loc[expected["product"] == 2, "units"])
    names = pd.DataFrame(
        {"name": ["zero", "one", "two", "three"]}, index=pd.Index([0, 1, 2, 3], name="product")
    )
    other = dd.from_pandas(names, npartitions=2, sort=True)
    joined = ddf.join(other, how="inner")
    keys = [str(k) for k in joined.optimize().__dask_graph__()]
    assert not [k for k in keys if "shuffle" in k or "hash-join" in k]  # aligned by divisions
    got = joined.compute().reset_index()
    want = expected.merge(names.reset_index(), on="product")
    cols = ["product", "units", "name"]
    pd.testing.assert_frame_equal(canonical(got, cols), canonical(want, cols), check_dtype=False)


def test_dask_index_on_partition_key_with_projection(store) -> None:
    write_sales(store)
    ddf = kf.read_dataset_as_ddf("ds", store, dask_index_on="country", columns=["units"])
    assert ddf.divisions == ("DE", "FR", "IT", "IT")
    got = ddf.compute()
    assert list(got.columns) == ["units"]
    assert got.index.dtype == ddf._meta.index.dtype
    assert ddf.loc["FR":"FR"].compute().index.unique().tolist() == ["FR"]


def test_dask_index_on_errors(store) -> None:
    write_sales(store)
    with pytest.raises(kf.InvalidInputError, match="cannot be combined"):
        kf.read_dataset_as_ddf("ds", store, dask_index_on="product", dispatch_by=["country"])
    with pytest.raises(kf.InvalidInputError, match="must be indexed"):
        kf.read_dataset_as_ddf("ds", store, dask_index_on="units")
    with pytest.raises(kf.InvalidTypeError):
        kf.read_dataset_as_ddf("ds", store, dask_index_on=["product"])


def test_categoricals_on_indexed_columns_have_dataset_wide_categories(store) -> None:
    write_sales(store)
    ddf = kf.read_dataset_as_ddf(
        "ds",
        store,
        categoricals=["country", "product", "note"],
        predicates=[[("country", "==", "FR")]],
    )
    assert ddf["country"].cat.known and ddf["product"].cat.known
    assert not ddf["note"].cat.known
    assert list(ddf._meta["country"].cat.categories) == ["DE", "FR", "IT"]
    assert list(ddf._meta["product"].cat.categories) == [0, 1, 2, 3]
    for part in dask.compute(*ddf.to_delayed(), scheduler="sync"):
        assert part["country"].dtype == ddf._meta["country"].dtype
        assert part["product"].dtype == ddf._meta["product"].dtype
        assert isinstance(part["note"].dtype, pd.CategoricalDtype)
    got = ddf.compute()
    assert set(got["country"]) == {"FR"}
    assert list(got["country"].cat.categories) == ["DE", "FR", "IT"]


@pytest.mark.parametrize("convert_string", [True, False])
def test_pandas3_str_dtype_is_kept_whatever_dask_config(store, convert_string) -> None:
    write_sales(store)
    str_dtype = pd.Series(["x"]).dtype
    with dask.config.set({"dataframe.convert-string": convert_string}):
        ddf = kf.read_dataset_as_ddf("ds", store)
        assert ddf["country"].dtype == str_dtype and ddf["note"].dtype == str_dtype
        got = ddf.compute()
        upper = ddf["note"].str.upper().compute()
    assert got["country"].dtype == str_dtype and got["note"].dtype == str_dtype
    assert upper.dtype == str_dtype


def test_empty_plan_gives_one_empty_typed_partition(store) -> None:
    write_sales(store)
    ddf = kf.read_dataset_as_ddf("ds", store, predicates=[[("country", "==", "XX")]])
    assert ddf.npartitions == 1
    got = ddf.compute()
    assert got.empty and list(got.columns) == ["country", "note", "product", "units"]
    assert got.dtypes.equals(ddf._meta.dtypes)
    idx = kf.read_dataset_as_ddf(
        "ds", store, predicates=[[("country", "==", "XX")]], dask_index_on="country"
    )
    assert idx.npartitions == 1 and idx.compute().empty


def test_dispatch_by_partitions(store) -> None:
    write_sales(store)
    ddf = kf.read_dataset_as_ddf("ds", store, dispatch_by=["country"])
    assert ddf.npartitions == 3 and not ddf.known_divisions
    parts = dask.compute(*ddf.to_delayed(), scheduler="sync")
    assert [p["country"].unique().tolist() for p in parts] == [["DE"], ["FR"], ["IT"]]


def test_bad_arguments(store) -> None:
    write_sales(store)
    with pytest.raises(kf.InvalidInputError):
        kf.read_dataset_as_ddf("ds", store, columns="units")
    with pytest.raises(kf.InvalidInputError):
        kf.read_dataset_as_ddf("ds", store, predicate_pushdown_to_io="yes")
    with pytest.raises(kf.ColumnNotFoundError):
        kf.read_dataset_as_ddf("ds", store, categoricals=["nope"])
    with pytest.raises(kf.DatasetNotFoundError):
        kf.read_dataset_as_ddf("nope", store)


def test_collections_and_readers_pickle(file_store) -> None:
    write_sales(file_store)
    ddf = kf.read_dataset_as_ddf(
        "ds", file_store, predicates=[[("product", "==", 1)]], categoricals=["country"]
    )
    clone = pickle.loads(pickle.dumps(ddf))
    assert canonical(clone.compute(scheduler="sync")).equals(
        canonical(ddf.compute(scheduler="sync"))
    )
    task = reader_tasks(ddf)[0]
    reader = pickle.loads(pickle.dumps(task.func))
    assert reader.plan.tasks == () and reader.store == file_store


def test_read_on_a_distributed_cluster(store, dask_client) -> None:
    expected = write_sales(store)
    ddf = kf.read_dataset_as_ddf("ds", store, predicates=[[("units", ">=", 10)]])
    got = ddf.compute(scheduler=dask_client)
    want = expected[expected["units"] >= 10]
    assert canonical(got, want.columns).equals(canonical(want))


@pytest.mark.s3
def test_read_and_write_on_s3(s3_store) -> None:
    expected = write_sales(s3_store)
    ddf = kf.read_dataset_as_ddf("ds", s3_store, columns=["units", "country"])
    assert sorted(ddf.compute()["units"]) == sorted(expected["units"])
    kf.store_dataset_from_ddf(
        ddf, s3_store, "copy", partition_on=["country"], shuffle=True
    ).compute()
    assert len(kf.read_dataset_metadata("copy", s3_store).partitions) == 3
    assert sorted(kf.read_table("copy", s3_store)["units"]) == sorted(expected["units"])
