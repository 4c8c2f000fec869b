"""Cubes on Spark: queries equal ``query_cube`` (rows, order, types), Spark-written cubes
are queryable by the eager engine, failed cube writes change nothing."""

from __future__ import annotations

import datetime as dt
import json
import operator
import pathlib
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from spark_helpers import rows

import kartoframe as kf
import kartoframe.spark as kfs
from kartoframe.execution.spark_cube import cube_output_schema
from kartoframe.format.spark_types import spark_arrow_schema, to_spark_table
from kartoframe.front.cube_query import plan_cube_query

pytestmark = pytest.mark.spark

GOLDEN = pathlib.Path(__file__).parent.parent / "data" / "golden" / "kartothek-5.3"
OPS = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def eager_result(cube: kf.Cube, store: Any, **query: Any) -> pa.Table:
    """``pd.concat(query_cube(...))`` in the Arrow types Spark uses."""
    plan, _ = plan_cube_query(cube, store, **query)
    schema = cube_output_schema(plan)
    frames = kf.query_cube(cube, store, **query)
    if not frames:
        return to_spark_table(schema.empty_table(), spark_arrow_schema(schema))
    df = pd.concat(frames, ignore_index=True)
    table = pa.Table.from_pandas(df, schema=schema, preserve_index=False)
    return to_spark_table(table, spark_arrow_schema(schema))


def assert_same_in_order(got: pa.Table, want: pa.Table) -> None:
    assert got.column_names == want.column_names
    assert got.schema.types == want.schema.types
    assert rows_in_order(got) == rows_in_order(want)


def rows_in_order(table: pa.Table) -> list[dict[str, Any]]:
    return [rows(table.slice(i, 1), key=table.column_names[0])[0] for i in range(table.num_rows)]


def _value(value: Any, t: pa.DataType) -> Any:
    if isinstance(value, list):
        return [_value(v, t) for v in value]
    if value is None:
        return None
    if pa.types.is_date(t):
        return dt.date.fromisoformat(value)
    if pa.types.is_timestamp(t):
        return pd.Timestamp(value)
    return value


def _conditions(raw: list[list[Any]], types: dict[str, pa.DataType]) -> list[Any]:
    out = []
    for col, op, value in raw:
        v = _value(value, types[col])
        c = kf.C(col)
        if op == "in":
            out.append(c.isin(v))
        elif op == "in_interval":
            out.append(c.in_interval(*v))
        else:
            out.append(OPS[op](c, v))
    return out


def _golden_queries() -> list[dict[str, Any]]:
    return json.loads((GOLDEN / "queries.json").read_text())["queries"]


def test_golden_cube_queries_equal_query_cube(spark) -> None:
    """Every query of the kartothek golden cubes (overlays, inner/left joins, projection,
    partition_by on physical and index columns, empty results)."""
    store = kf.Store(f"file://{GOLDEN / 'store'}")
    for q in _golden_queries():
        spec = q["cube"]
        cube = kf.Cube(
            spec["dimension_columns"],
            spec["partition_columns"],
            uuid_prefix=spec["uuid_prefix"],
            index_columns=spec.get("index_columns") or (),
            seed_dataset=spec.get("seed_dataset", "seed"),
            suppress_index_on=spec.get("suppress_index_on") or (),
        )
        types: dict[str, pa.DataType] = {}
        for md in kf.discover_datasets(cube, store).values():
            types.update({f.name: f.type for f in md.schema})
        query = {
            "conditions": _conditions(q["conditions"], types),
            "dimension_columns": q["dimension_columns"],
            "partition_by": q["partition_by"],
            "payload_columns": q["payload_columns"],
            "datasets": q["datasets"],
        }
        got = kfs.query_cube_sdf(spark, cube, store, **query).toArrow()
        assert_same_in_order(got, eager_result(cube, store, **query))


def _geo_frames() -> dict[str, pd.DataFrame]:
    seed = pd.DataFrame(
        {
            "x": [0, 1, 2, 0, 1, 2, 3],
            "y": [0, 0, 0, 1, 1, 1, 1],
            "p": [0, 0, 1, 0, 0, 1, 1],
            "i": [5, 6, 5, 6, 5, 6, 7],
            "v1": [0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5],
            "when": pd.to_datetime(["2024-01-01"] * 7).tz_localize("Europe/Berlin"),
        }
    )
    enrich = pd.DataFrame(
        {
            "x": [0, 1, 2, 3],
            "y": [0, 0, 0, 1],
            "p": [0, 0, 1, 1],
            "v2": ["a", "b", "c", "ü"],
            "n": [10, 20, 30, 40],
        }
    )
    low = pd.DataFrame({"x": [0, 1, 2], "p": [0, 0, 1], "v3": [True, False, True]})
    return {"seed": seed, "enrich": enrich, "low": low}


CUBE = kf.Cube(["x", "y"], ["p"], uuid_prefix="geo", index_columns=["i"])


def _overlay() -> dict[str, pd.DataFrame]:
    return {
        "seed": pd.DataFrame(
            {
                "x": [1],
                "y": [0],
                "p": [0],
                "i": [9],
                "v1": [-1.5],
                "when": pd.to_datetime(["2025-06-01"]).tz_localize("Europe/Berlin"),
            }
        ),
        "enrich": pd.DataFrame({"x": [2], "y": [0], "p": [1], "v2": ["C"], "n": [31]}),
    }


QUERIES: list[dict[str, Any]] = [
    {},
    {"conditions": kf.C("v2") != "b"},
    {"conditions": (kf.C("p") == 0) & (kf.C("x") >= 1)},
    {"partition_by": ["p"]},
    {"partition_by": ["i"]},
    {"dimension_columns": ["x"], "payload_columns": ["v3"]},
    {"dimension_columns": ["y", "x"]},
    {"payload_columns": ["n"], "datasets": ["seed", "enrich"]},
    {"conditions": kf.C("v1") > 1000.0},
]


def _in_utc(frames: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """The same instants labelled UTC (as Spark, which has no zone per column, stores them)."""
    out = {}
    for k, df in frames.items():
        df = df.copy()
        if "when" in df.columns:
            df["when"] = df["when"].dt.tz_convert("UTC")
        out[k] = df
    return out


def _pandas_cube(store: kf.Store, utc: bool = False) -> None:
    frames = _in_utc(_geo_frames()) if utc else _geo_frames()
    kf.build_cube({"seed": frames["seed"], "enrich": frames["enrich"]}, CUBE, store)
    kf.extend_cube({"low": frames["low"]}, CUBE, store, partition_on={"low": ["p"]})
    kf.append_to_cube(_in_utc(_overlay()) if utc else _overlay(), CUBE, store)


def _spark_cube(spark, store: kf.Store) -> None:
    frames = {k: spark.createDataFrame(v) for k, v in _geo_frames().items()}
    kfs.build_cube_from_sdf({"seed": frames["seed"], "enrich": frames["enrich"]}, CUBE, store)
    kfs.extend_cube_from_sdf({"low": frames["low"]}, CUBE, store)
    kfs.append_to_cube_from_sdf(
        {k: spark.createDataFrame(v) for k, v in _overlay().items()}, CUBE, store
    )


def test_cube_queries_with_overlay_equal_query_cube(spark, tmp_path) -> None:
    store = kf.Store(f"file://{tmp_path}/store")
    _pandas_cube(store)
    for query in QUERIES:
        got = kfs.query_cube_sdf(spark, CUBE, store, **query).toArrow()
        assert_same_in_order(got, eager_result(CUBE, store, **query))
    unsorted = kfs.query_cube_sdf(spark, CUBE, store, sort=False).toArrow()
    assert sorted(rows_in_order(unsorted), key=str) == sorted(
        rows_in_order(eager_result(CUBE, store)), key=str
    )


def test_spark_conditions_see_rows_before_the_overlay(spark, tmp_path) -> None:
    """As kartothek 5.3 and the eager engine: a condition rejecting a cell's appended row
    returns its older row (conditions are applied per file, then the last row per cell is
    kept; kartothek-plateau-facts.md §3.2, tests/cube/test_cube_interop.py
    ``test_kartothek_agrees_conditions_see_rows_before_the_overlay``)."""
    store = kf.Store(f"file://{tmp_path}/store")
    _pandas_cube(store)  # the append corrects seed (1, 0) v1 1.5 -> -1.5, enrich (2, 0) c -> C
    cases = [(kf.C("v1") > 1.0, (1, 0), "v1", 1.5), (kf.C("v2") == "c", (2, 0), "v2", "c")]
    for cond, (x, y), col, stale in cases:
        got = kfs.query_cube_sdf(spark, CUBE, store, conditions=cond).toArrow()
        assert_same_in_order(got, eager_result(CUBE, store, conditions=cond))
        found = [r[col] for r in rows_in_order(got) if (r["x"], r["y"]) == (x, y)]
        assert found == [stale]


def test_large_query_is_sorted_by_spark(spark, tmp_path, capsys) -> None:
    """Many files: the groups run in parallel and a Spark sort restores the order."""
    store = kf.Store(f"file://{tmp_path}/store")
    n = 600
    seed = pd.DataFrame({"x": np.arange(n) % 50, "y": np.arange(n) // 50, "p": np.arange(n) % 30})
    seed["v1"] = seed["x"] * 0.5
    enrich = seed[["x", "y", "p"]].assign(v2=seed["x"].astype(str))
    kf.build_cube({"seed": seed, "enrich": enrich.iloc[::2]}, CUBE, store)
    for query in ({}, {"conditions": kf.C("v2") != "3"}):
        sdf = kfs.query_cube_sdf(spark, CUBE, store, **query)
        sdf.explain()
        assert "Sort [" in capsys.readouterr().out
        assert_same_in_order(sdf.toArrow(), eager_result(CUBE, store, **query))


def test_spark_written_cube_is_queryable_by_the_eager_engine(spark, tmp_path) -> None:
    """A cube written from Spark answers every query exactly as the same cube written
    from pandas (datasets, partitions, indices, overlay)."""
    ours = kf.Store(f"file://{tmp_path}/spark")
    ref = kf.Store(f"file://{tmp_path}/pandas")
    _spark_cube(spark, ours)
    _pandas_cube(ref, utc=True)
    assert kf.discover_cube("geo", ours) == kf.discover_cube("geo", ref)
    for ds_id, md in kf.discover_datasets(CUBE, ours).items():
        other = kf.discover_datasets(CUBE, ref)[ds_id]
        assert md.partition_keys == other.partition_keys, ds_id
        assert md.secondary_indices == other.secondary_indices, ds_id
        assert md.schema.remove_metadata() == other.schema.remove_metadata(), ds_id
    for query in QUERIES:
        got = kf.query_cube(CUBE, ours, **query)
        want = kf.query_cube(CUBE, ref, **query)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            pd.testing.assert_frame_equal(g, w)


def test_failed_cube_writes_change_nothing(spark, tmp_path) -> None:
    store = kf.Store(f"file://{tmp_path}/store")
    _pandas_cube(store)
    before = list(store.iter_keys(""))
    seed = _geo_frames()["seed"]
    dup = spark.createDataFrame(pd.concat([seed, seed.iloc[:1]], ignore_index=True))
    with pytest.raises(kf.InvalidInputError, match="duplicate cells"):
        kfs.append_to_cube_from_sdf(dup, CUBE, store)
    nulls = spark.createDataFrame(
        pa.table(
            {
                "x": pa.array([7, None], pa.int64()),
                "p": [0, 1],
                "v9": [1.0, 2.0],
            }
        )
    )
    with pytest.raises(kf.InvalidInputError, match='NULL-values in dimension column "x"'):
        kfs.extend_cube_from_sdf({"extra": nulls}, CUBE, store)
    # a later dataset's job fails after an earlier one was written: both are removed
    good = spark.createDataFrame(pd.DataFrame({"x": [1], "p": [0], "w": [1.0]}))
    with pytest.raises(kf.InvalidInputError, match="NULL"):
        kfs.extend_cube_from_sdf(
            {"a_good": good, "b_bad": nulls.withColumnRenamed("v9", "z")}, CUBE, store
        )
    assert list(store.iter_keys("")) == before
    # rules that only need the schema are checked before Spark runs
    with pytest.raises(kf.InvalidInputError, match="Missing dimension columns"):
        kfs.build_cube_from_sdf(dup.drop("y"), CUBE, store, overwrite=True)
    with pytest.raises(kf.InvalidInputError, match="already present"):
        kfs.extend_cube_from_sdf({"more": good.withColumnRenamed("w", "v2")}, CUBE, store)
    with pytest.raises(kf.EmptyInputError):
        kfs.append_to_cube_from_sdf(dup.filter("x > 100"), CUBE, store)
    assert list(store.iter_keys("")) == before


@pytest.mark.s3
def test_cube_on_object_store(spark, s3_store) -> None:
    frames = {k: spark.createDataFrame(v) for k, v in _geo_frames().items()}
    kfs.build_cube_from_sdf(frames, CUBE, s3_store, partition_on={"low": ["p"]})
    for query in ({"conditions": kf.C("v2") == "ü"}, {"partition_by": ["p"]}):
        got = kfs.query_cube_sdf(spark, CUBE, s3_store, **query).toArrow()
        assert_same_in_order(got, eager_result(CUBE, s3_store, **query))


def test_spark_cube_writes_take_transactions_and_evolve(spark, tmp_path) -> None:
    """``app_id``/``app_version`` make a retried Spark cube append a no-op;
    ``schema_evolution="add_columns"`` adds a payload column (older rows: nulls)."""
    store = kf.Store(f"file://{tmp_path}/store")
    cube = kf.Cube(["x"], ["p"], uuid_prefix="sp")
    kf.build_cube(pd.DataFrame({"x": [1, 2], "p": [0, 1], "v": [1.0, 2.0]}), cube, store)
    new = spark.createDataFrame(pd.DataFrame({"x": [3], "p": [0], "v": [3.0], "w": ["new"]}))
    with pytest.raises(kf.SchemaError):
        kfs.append_to_cube_from_sdf(new, cube, store)
    kwargs: dict[str, Any] = {"app_id": "spark-job", "app_version": 1}
    kfs.append_to_cube_from_sdf(new, cube, store, schema_evolution="add_columns", **kwargs)

    def files() -> int:
        return sum(1 for k in store.iter_keys("sp++seed/") if k.endswith(".parquet"))

    n = files()
    out = kfs.append_to_cube_from_sdf(new, cube, store, schema_evolution="add_columns", **kwargs)
    assert list(out) == ["seed"] and files() == n
    (df,) = kf.query_cube(cube, store)
    df = df.sort_values("x")
    assert df["w"].isna().tolist() == [True, True, False]
    assert df["w"].tolist()[2] == "new"
    assert df["x"].tolist().count(3) == 1
    record = kf.dataset_history("sp++seed", store)[0]
    assert (record.app_id, record.app_version) == ("spark-job", 1)
