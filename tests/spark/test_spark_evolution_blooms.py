"""Spark dataset writes evolve schemas (``schema_evolution``) and maintain bloom filters,
as the eager and dask writers do."""

from __future__ import annotations

import decimal
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import kartoframe as kf
import kartoframe.spark as kfs
from kartoframe.api.read import plan_read
from kartoframe.errors import InvalidInputError, SchemaError
from kartoframe.storage.resolve import load_dataset, load_statistics, statistics_ref

pytestmark = pytest.mark.spark

HEADER = "ds.by-dataset-metadata.json"


def _keys(store: kf.Store) -> list[str]:
    return sorted(store.iter_keys(""))


def _never_runs(spark: Any, ddl: str) -> Any:
    """A DataFrame with the schema ``ddl`` whose computation fails if Spark ever runs it."""

    def fail(batches: Any) -> Any:
        raise RuntimeError("the Spark job ran")
        yield  # pragma: no cover

    return spark.range(0, 4, 1, 2).mapInArrow(fail, ddl)


def _base(store: kf.Store) -> None:
    kf.store_dataframes_as_dataset(
        store=store,
        dataset_uuid="ds",
        dfs=[pd.DataFrame({"p": [1, 2], "v": [1.0, 2.0]})],
        partition_on=["p"],
    )


def _rows(table: pa.Table) -> list[dict[str, Any]]:
    return sorted(table.to_pylist(), key=lambda r: (r["p"], r["v"]))


def test_new_nullable_column_needs_add_columns(spark, tmp_path) -> None:
    store = kf.Store(f"file://{tmp_path}/store")
    _base(store)
    before = _keys(store)
    header = store.get(HEADER)
    wider = spark.createDataFrame(
        pa.table(
            {
                "p": pa.array([2, 3], pa.int64()),
                "v": [3.0, 4.0],
                "extra": pa.array([7, None], pa.int64()),
            }
        )
    )
    # refused by default, before Spark runs a job: nothing is written
    with pytest.raises(SchemaError, match="'extra'"):
        kfs.update_dataset_from_sdf(wider, store, "ds")
    with pytest.raises(SchemaError, match="'extra'"):
        kfs.update_dataset_from_sdf(_never_runs(spark, "p long, v double, extra long"), store, "ds")
    with pytest.raises(InvalidInputError, match="schema_evolution"):
        kfs.update_dataset_from_sdf(wider, store, "ds", schema_evolution="anything")  # type: ignore[arg-type]
    assert _keys(store) == before
    assert store.get(HEADER) == header
    assert kf.read_dataset_schema("ds", store).names == ["p", "v"]

    kfs.update_dataset_from_sdf(wider, store, "ds", schema_evolution="add_columns")
    schema = kf.read_dataset_schema("ds", store)
    assert schema.names == ["p", "extra", "v"]
    assert schema.field("extra").type == pa.int64()
    want = [
        {"p": 1, "extra": None, "v": 1.0},
        {"p": 2, "extra": None, "v": 2.0},
        {"p": 2, "extra": 7, "v": 3.0},
        {"p": 3, "extra": None, "v": 4.0},
    ]
    for reader in ("native", "arrow"):
        got = kfs.read_dataset_as_sdf(spark, "ds", store, reader=reader).toArrow()
        assert got.schema.field("extra").type == pa.int64(), reader  # typed nulls
        assert _rows(got) == want, reader
    eager = kf.read_table("ds", store)
    assert int(eager["extra"].isna().sum()) == 3
    events = kf.schema_history("ds", store)
    assert [(e.change, e.added) for e in events] == [
        ("create", {}),
        ("add_columns", {"extra": "int64"}),
    ]
    last = max(kf.dataset_history("ds", store), key=lambda r: r.version)
    assert last.parameters["schema_evolution"] == "add_columns"


def test_empty_dataframe_adds_its_columns(spark, tmp_path) -> None:
    """As with an empty pandas frame: the schema evolves although no file is written."""
    store = kf.Store(f"file://{tmp_path}/store")
    _base(store)
    files = [k for k in _keys(store) if k.endswith(".parquet")]
    empty = spark.createDataFrame(
        pa.table(
            {
                "p": pa.array([], pa.int64()),
                "v": pa.array([], pa.float64()),
                "s": pa.array([], pa.string()),
            }
        )
    )
    kfs.update_dataset_from_sdf(empty, store, "ds", schema_evolution="add_columns")
    assert kf.read_dataset_schema("ds", store).field("s").type == pa.string()
    assert [k for k in _keys(store) if k.endswith(".parquet")] == files
    assert [e.added for e in kf.schema_history("ds", store)][-1] == {"s": "string"}


def test_type_changes_and_dropped_columns_are_refused_with_add_columns(spark, tmp_path) -> None:
    store = kf.Store(f"file://{tmp_path}/store")
    _base(store)
    before = _keys(store)
    header = store.get(HEADER)
    retyped = spark.createDataFrame(pa.table({"p": pa.array([1], pa.int64()), "v": ["text"]}))
    with pytest.raises(SchemaError, match=r"'v'.*type changes are not supported"):
        kfs.update_dataset_from_sdf(retyped, store, "ds", schema_evolution="add_columns")
    with pytest.raises(SchemaError, match="type changes are not supported"):
        kfs.update_dataset_from_sdf(
            _never_runs(spark, "p long, v string, extra long"),
            store,
            "ds",
            schema_evolution="add_columns",
        )
    dropped = spark.createDataFrame(pa.table({"p": pa.array([1], pa.int64()), "w": [1.0]}))
    with pytest.raises(SchemaError, match=r"'v'.*dropping a column"):
        kfs.update_dataset_from_sdf(dropped, store, "ds", schema_evolution="add_columns")
    assert _keys(store) == before
    assert store.get(HEADER) == header
    assert len(kf.read_table("ds", store)) == 2


def test_decimal_widening(spark, tmp_path) -> None:
    store = kf.Store(f"file://{tmp_path}/store")
    kf.store_dataframes_as_dataset(
        store=store,
        dataset_uuid="ds",
        dfs=[pa.table({"id": [1], "d": pa.array([decimal.Decimal("1.25")], pa.decimal128(10, 2))})],
    )
    wide = spark.createDataFrame(
        pa.table({"id": [2], "d": pa.array([decimal.Decimal("123456.789")], pa.decimal128(12, 3))})
    )
    with pytest.raises(SchemaError, match="'d'"):
        kfs.update_dataset_from_sdf(wide, store, "ds")
    kfs.update_dataset_from_sdf(wide, store, "ds", schema_evolution="add_columns")
    assert kf.read_dataset_schema("ds", store).field("d").type == pa.decimal128(12, 3)
    assert kf.schema_history("ds", store)[-1].widened == {
        "d": ("decimal128(10, 2)", "decimal128(12, 3)")
    }
    got = kf.read_table("ds", store).sort_values("id")
    assert got["d"].tolist() == [decimal.Decimal("1.250"), decimal.Decimal("123456.789")]


def test_store_accepts_schema_evolution(spark, tmp_path) -> None:
    store = kf.Store(f"file://{tmp_path}/store")
    sdf = spark.createDataFrame(pa.table({"a": [1, 2], "b": ["x", "y"]}))
    with pytest.raises(InvalidInputError, match="schema_evolution"):
        kfs.store_dataset_from_sdf(sdf, store, "ds", schema_evolution="all")  # type: ignore[arg-type]
    assert _keys(store) == []
    kfs.store_dataset_from_sdf(sdf, store, "ds", schema_evolution="add_columns")
    assert kf.read_dataset_schema("ds", store).names == ["a", "b"]
    (record,) = kf.dataset_history("ds", store)
    assert record.parameters["schema_evolution"] == "add_columns"


def _users(prefix: str) -> pa.Table:
    # every file spans "a".."z" with more distinct values than a value list keeps:
    # only the bloom filters tell the files apart
    users = ["a", *(f"{prefix}-{j}" for j in range(50)), "z"]
    return pa.table({"user": users, "n": pa.array(np.arange(len(users)), pa.int64())})


def test_spark_updates_maintain_bloom_filters(spark, tmp_path) -> None:
    store = kf.Store(f"file://{tmp_path}/store")
    kf.store_dataframes_as_dataset(
        store=store, dataset_uuid="ds", dfs=[_users(f"u{i}") for i in range(3)]
    )
    kf.build_dataset_statistics(store, "ds", bloom_filter_columns=["user"])
    old = set(kf.dataset_statistics("ds", store)["file"])

    kfs.update_dataset_from_sdf(spark.createDataFrame(_users("new")).coalesce(1), store, "ds")
    loaded = load_statistics(store, load_dataset(store, "ds"))
    ref = statistics_ref(loaded.metadata)
    assert ref is not None and ref.bloom_filter_columns == ("user",)
    stats = loaded.statistics
    assert stats is not None
    blooms = dict(
        zip(stats.column("key").to_pylist(), stats.column("bloom").combine_chunks().field("user"))
    )
    (new_key,) = set(blooms) - old
    assert blooms[new_key].is_valid  # the Spark-written file has a bloom filter
    assert all(blooms[k].is_valid for k in old)

    # a value absent from the new file (inside its min/max range): the file is skipped
    absent = [[("user", "==", "u1-17")]]
    plan, _ = plan_read("ds", store, predicates=absent)
    planned = {f.key for t in plan.tasks for f in t.files}
    assert plan.stats.after_statistics == 1
    assert len(planned) == 1 and new_key not in planned
    sdf = kfs.read_dataset_as_sdf(spark, "ds", store, predicates=absent)
    assert len(sdf.inputFiles()) == 1
    assert [r["n"] for r in sdf.collect()] == [18]
    # a value only the new file holds: only the new file is read
    plan, _ = plan_read("ds", store, predicates=[[("user", "==", "new-17")]])
    assert {f.key for t in plan.tasks for f in t.files} == {new_key}
