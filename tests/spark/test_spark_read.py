"""Reading kartoframe datasets as Spark DataFrames: same rows, types and predicate
semantics as the eager engine, pruning done by kartoframe's planner."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
import pathlib
import random
import sys
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from spark_helpers import assert_tables_equal, kartoframe_expected, predicate_table, rows

import kartoframe as kf
import kartoframe.spark as kfs
from kartoframe.api.read import plan_read
from kartoframe.errors import InvalidInputError, MissingDependencyError, SchemaError
from kartoframe.execution import spark_predicates
from kartoframe.execution.kernel import read_plan_table
from kartoframe.format.spark_types import spark_arrow_schema, to_spark_table
from kartoframe.plan.predicates import bind, to_expression

pytestmark = pytest.mark.spark

GOLDEN = pathlib.Path(__file__).parent.parent / "data" / "golden"


def all_types_frame(n: int = 12) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame(
        {
            "id": np.arange(n),
            "p": np.arange(n) % 3,
            "q": np.where(np.arange(n) % 2 == 0, "a b", "ü/€"),
            "i8": rng.integers(-100, 100, n).astype("int8"),
            "i64": rng.integers(-(10**12), 10**12, n),
            "f32": rng.random(n).astype("float32"),
            "f64": [None if i % 4 == 0 else float(i) / 3 for i in range(n)],
            "b": rng.random(n) > 0.5,
            "s": [None if i % 5 == 0 else f"s{i}" for i in range(n)],
            "d": [dt.date(2020, 1, 1) + dt.timedelta(days=i) for i in range(n)],
            "ts": pd.date_range("2021-01-01", periods=n, freq="h").as_unit("us"),
            "tz": pd.date_range("2021-01-01", periods=n, freq="h", tz="Europe/Berlin").as_unit(
                "us"
            ),
            "cat": pd.Categorical(["x", "y", "z"] * (n // 3)),
            "lst": [[i, i + 1] if i % 3 else None for i in range(n)],
            "bin": [bytes([i, 0, 255]) for i in range(n)],
            "dec": [decimal.Decimal(i) / 8 for i in range(n)],
        }
    )


@pytest.mark.parametrize("partition_on", [[], ["p"], ["p", "q"]])
def test_pandas_to_spark_round_trip(spark, tmp_path, partition_on: list[str]) -> None:
    store = kf.Store(f"file://{tmp_path}/store")
    df = all_types_frame()
    kf.store_dataframes_as_dataset(
        store=store,
        dataset_uuid="ds",
        dfs=[df.iloc[:5], df.iloc[5:]],
        partition_on=partition_on,
        secondary_indices=["s"],
    )
    sdf = kfs.read_dataset_as_sdf(spark, "ds", store)
    assert sdf.inputFiles(), "local data of supported types is read by Spark's Parquet reader"
    want = kartoframe_expected("ds", store)
    assert_tables_equal(sdf.toArrow(), want)
    # the pandas view of the Spark result equals the eager read
    pdf = kf.read_table("ds", store)
    got = sdf.toArrow().to_pandas().sort_values("id").reset_index(drop=True)
    assert list(got.columns) == list(pdf.columns)
    assert got["q"].tolist() == pdf.sort_values("id")["q"].tolist()
    # projection keeps the requested order
    proj = kfs.read_dataset_as_sdf(spark, "ds", store, columns=["s", "id", *partition_on])
    assert proj.columns == ["s", "id", *partition_on]
    assert_tables_equal(
        proj.toArrow(), kartoframe_expected("ds", store, columns=["s", "id", *partition_on])
    )


def test_partition_columns_carry_kartoframe_types(spark, tmp_path) -> None:
    """Spark's inference would give 1 for '001', int for int64, strings for bools and
    mojibake for 'ü'; kartoframe's types and values come out."""
    store = kf.Store(f"file://{tmp_path}/store")
    df = pd.DataFrame(
        {
            "code": ["001", "010", "ü", "a%2Fb"],
            "big": [1, 2, 3_000_000_000, 1],
            "flag": [True, False, True, False],
            "day": [dt.date(2024, 1, 1)] * 2 + [dt.date(2024, 2, 29)] * 2,
            "at": pd.to_datetime(["2024-01-01 10:00:00.123456"] * 4).as_unit("us"),
            "at_tz": pd.to_datetime(["2024-01-01 10:00"] * 4).tz_localize("Europe/Berlin"),
            "x": [1.5, 2.5, 3.5, 4.5],
            "id": [0, 1, 2, 3],
        }
    )
    pon = ["code", "big", "flag", "day", "at", "at_tz", "x"]
    kf.store_dataframes_as_dataset(store=store, dataset_uuid="ds", dfs=[df], partition_on=pon)
    want = kartoframe_expected("ds", store)
    for reader in ("native", "arrow"):
        sdf = kfs.read_dataset_as_sdf(spark, "ds", store, reader=reader)
        types = {f.name: f.dataType.simpleString() for f in sdf.schema.fields}
        assert types == {
            "code": "string",
            "big": "bigint",
            "flag": "boolean",
            "day": "date",
            "at": "timestamp_ntz",
            "at_tz": "timestamp",
            "x": "double",
            "id": "bigint",
        }
        got = sdf.toArrow()
        assert_tables_equal(got, want)
        assert sorted(got["code"].to_pylist()) == ["001", "010", "a%2Fb", "ü"]


def test_unsupported_types_fall_back_to_arrow_reader(spark, tmp_path) -> None:
    store = kf.Store(f"file://{tmp_path}/store")
    df = pd.DataFrame({"id": [1, 2, 3], "u": np.array([1, 2, 2**64 - 1], dtype="uint64")})
    kf.store_dataframes_as_dataset(store=store, dataset_uuid="ds", dfs=[df])
    sdf = kfs.read_dataset_as_sdf(spark, "ds", store)
    assert sdf.inputFiles() == []  # mapInArrow, not Spark's Parquet reader
    assert sdf.schema["u"].dataType.simpleString() == "decimal(20,0)"
    assert_tables_equal(sdf.toArrow(), kartoframe_expected("ds", store))
    with pytest.raises(InvalidInputError, match="column 'u'"):
        kfs.read_dataset_as_sdf(spark, "ds", store, reader="native")
    # columns Spark's reader can read still use it
    assert kfs.read_dataset_as_sdf(spark, "ds", store, columns=["id"]).inputFiles()


def test_pruning_happens_in_kartoframe(spark, tmp_path) -> None:
    store = kf.Store(f"file://{tmp_path}/store")
    df = pd.DataFrame({"p": [1, 1, 2, 2, 3, 3], "k": ["a", "b", "c", "a", "b", "c"], "v": range(6)})
    kf.store_dataframes_as_dataset(
        store=store,
        dataset_uuid="ds",
        dfs=[df.iloc[:3], df.iloc[3:]],
        partition_on=["p"],
        secondary_indices=["k"],
    )
    total = len(kf.read_dataset_metadata("ds", store).partitions)
    assert len(kfs.read_dataset_as_sdf(spark, "ds", store).inputFiles()) == total
    by_key = kfs.read_dataset_as_sdf(spark, "ds", store, predicates=[[("p", "==", 2)]])
    assert len(by_key.inputFiles()) == 2
    by_index = kfs.read_dataset_as_sdf(spark, "ds", store, predicates=[[("k", "==", "a")]])
    plan, _ = plan_read("ds", store, predicates=[[("k", "==", "a")]])
    assert len(by_index.inputFiles()) == len(plan.tasks) == 2
    assert sorted(r["v"] for r in by_index.collect()) == [0, 3]
    nothing = kfs.read_dataset_as_sdf(spark, "ds", store, predicates=[[("p", "==", 9)]])
    assert nothing.count() == 0
    assert nothing.columns == ["p", "k", "v"]
    assert nothing.schema["p"].dataType.simpleString() == "bigint"


def test_many_files_and_session_settings(spark, tmp_path) -> None:
    """Above 32 files Spark would start a listing job; kartoframe lets it stat the local
    files on the driver for the DataFrame's creation only, and restores the setting."""
    key = "spark.sql.sources.parallelPartitionDiscovery.threshold"
    store = kf.Store(f"file://{tmp_path}/store")
    df = pd.DataFrame({"p": np.arange(120) % 40, "v": np.arange(120)})
    kf.store_dataframes_as_dataset(store=store, dataset_uuid="ds", dfs=[df], partition_on=["p"])
    before = spark.conf.get(key, None)
    sdf = kfs.read_dataset_as_sdf(spark, "ds", store, columns=["v", "p"])
    assert spark.conf.get(key, None) == before
    assert len(sdf.inputFiles()) == 40
    assert_tables_equal(sdf.toArrow(), kartoframe_expected("ds", store, columns=["v", "p"]), "v")


def _literal_pool() -> list[tuple[str, str, Any]]:
    base = dt.datetime(2021, 3, 1, 12, 0, 0)
    t5 = base + dt.timedelta(seconds=5, microseconds=5)
    sub_us = pd.Timestamp("2021-03-01 12:00:05.000005500")
    berlin = pd.Timestamp("2021-03-01 14:00", tz="Europe/Berlin")
    pool: list[tuple[str, str, Any]] = []
    for op in ("==", "!=", "<", "<=", ">", ">="):
        pool += [
            ("i", op, 0),
            ("f", op, 1.5),
            ("s", op, "s3"),
            ("b", op, True),
            ("d", op, dt.date(2020, 1, 7)),
            ("ts", op, t5),
            ("ts", op, sub_us),
            ("tz", op, berlin),
            ("dec", op, decimal.Decimal("1.25")),
            ("p", op, 1),
            ("q", op, "ü/€"),
        ]
    for col in ("i", "f", "s", "b", "d", "ts", "tz", "dec", "q"):
        pool += [(col, "==", None), (col, "!=", None)]
    pool += [
        ("i", "in", [0, 2, None]),
        ("i", "in", [0, 2]),
        ("i", "in", []),
        ("i", "not in", [0, 2]),
        ("f", "in", [1.5, 2.0, np.nan]),
        ("f", "in", [1.5, 2.0]),
        ("f", "not in", [1.5]),
        ("s", "in", ["s1", "s3"]),
        ("s", "not in", ["s1", None]),
        ("ts", "in", [t5, sub_us]),
        ("tz", "in", [berlin]),
        ("d", "not in", [dt.date(2020, 1, 7)]),
        ("q", "in", ["ü/€", "x"]),
        ("q", "not in", ["ü/€"]),
        ("i", "is distinct from", 0),
        ("f", "is distinct from", 1.5),
        ("f", "is distinct from", None),
        ("s", "is distinct from", "s3"),
        ("ts", "is distinct from", sub_us),
        ("f", "==", math.nan),
    ]
    return pool


@pytest.fixture(scope="module")
def predicate_dataset(tmp_path_factory) -> kf.Store:
    store = kf.Store(f"file://{tmp_path_factory.mktemp('pred')}/store")
    table = predicate_table()
    kf.store_dataframes_as_dataset(
        store=store,
        dataset_uuid="ds",
        dfs=[table.slice(0, 30), table.slice(30)],
        partition_on=["p", "q"],
        secondary_indices=["s", "i"],
    )
    return store


def test_predicate_translation_matches_pyarrow(spark, predicate_dataset) -> None:
    """Every single literal and 200 random DNF predicates select exactly the rows the
    eager engine's pyarrow expression selects (nulls, NaN, sub-µs literals included)."""
    store = predicate_dataset
    plan, st = plan_read("ds", store)
    table = read_plan_table(plan, st)
    pool = _literal_pool()
    rng = random.Random(5)
    predicates: list[list[list[tuple[str, str, Any]]]] = [[[lit]] for lit in pool]
    for _ in range(200):
        predicates.append([rng.sample(pool, rng.randint(1, 3)) for _ in range(rng.randint(1, 3))])
    sdf = kfs.read_dataset_as_sdf(spark, "ds", store, reader="native")
    bound = [bind(p, plan.schema) for p in predicates]
    cols = [spark_predicates.predicate_to_column(b).alias(f"m{i}") for i, b in enumerate(bound)]
    got = sdf.select("id", *cols).toArrow()
    ids = got["id"].to_pylist()
    for i, (pred, b) in enumerate(zip(predicates, bound)):
        mask = got[f"m{i}"].to_pylist()
        spark_ids = sorted(x for x, m in zip(ids, mask) if m is True)
        want = sorted(table.filter(to_expression(b))["id"].to_pylist())
        assert spark_ids == want, pred


@pytest.mark.parametrize("reader", ["native", "arrow"])
def test_read_with_predicates_equals_eager(spark, predicate_dataset, reader: str) -> None:
    store = predicate_dataset
    cases = [
        [[("f", ">", 1.0)], [("s", "==", None)]],
        [[("q", "==", "ü/€"), ("f", "==", None)]],
        [[("p", "in", [0, 2]), ("i", "not in", [0, None])]],
        [[("s", "==", "s3")], [("ts", ">=", pd.Timestamp("2021-03-01 12:00:40"))]],
        [[("tz", "<", pd.Timestamp("2021-03-01 15:00", tz="Europe/Berlin"))]],
    ]
    for pred in cases:
        sdf = kfs.read_dataset_as_sdf(
            spark, "ds", store, columns=["id", "f", "q"], predicates=pred, reader=reader
        )
        want = kartoframe_expected("ds", store, columns=["id", "f", "q"], predicates=pred)
        assert_tables_equal(sdf.toArrow(), want)


def _golden_cases() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for writer in ("plateau-4.6.2", "kartothek-5.3"):
        manifest = json.loads((GOLDEN / writer / "manifest.json").read_text())
        out += [(writer, entry) for entry in manifest["datasets"]]
    return out


def test_golden_datasets(spark) -> None:
    """Datasets written by plateau and kartothek (nanosecond timestamps, unsigned ints,
    slashes and non-ASCII in partition values) read into Spark with exact content."""
    for writer, entry in _golden_cases():
        store = kf.Store(f"file://{GOLDEN / writer / 'store'}")
        expected = pq.read_table(GOLDEN / writer / entry["expected"])
        expected = to_spark_table(expected, spark_arrow_schema(expected.schema))
        sdf = kfs.read_dataset_as_sdf(spark, entry["uuid"], store)
        assert sdf.columns == expected.column_names, entry["uuid"]
        got = sdf.toArrow()
        assert_tables_equal(got, expected, key=entry["sort_columns"])


def test_lossy_nanosecond_files_read_exactly_by_pandas_refused_by_spark(spark, tmp_path) -> None:
    """A foreign file with nanosecond values that are not whole microseconds: the pandas
    engines read it exactly (the dataset was written from a nanosecond frame, so pandas
    gets nanoseconds back), Spark (µs only) refuses it instead of losing precision."""
    store = kf.Store(f"file://{tmp_path}/store")
    kf.store_dataframes_as_dataset(
        store=store, dataset_uuid="ds", dfs=[pd.DataFrame({"id": [1], "t": [pd.Timestamp(0)]})]
    )
    key = next(iter(kf.read_dataset_metadata("ds", store).partitions.values()))
    ns = pa.table({"id": [1], "t": pa.array([1_500], pa.timestamp("ns"))})
    pq.write_table(ns, store.path(key))  # a foreign writer's file under the same key
    assert kf.read_table("ds", store)["t"].tolist() == [pd.Timestamp(1_500)]
    sdf = kfs.read_dataset_as_sdf(spark, "ds", store)
    assert sdf.inputFiles() == []  # Spark's reader refuses TIMESTAMP(NANOS): arrow reader
    with pytest.raises(Exception, match="lose data"):
        sdf.collect()
    with pytest.raises(SchemaError, match="'t'"):
        to_spark_table(ns, pa.schema([("id", pa.int64()), ("t", pa.timestamp("us"))]))


def test_refusals(spark, tmp_path, monkeypatch) -> None:
    with pytest.raises(InvalidInputError, match="memory"):
        kfs.read_dataset_as_sdf(spark, "ds", kf.Store("memory://x"))
    with pytest.raises(kf.DatasetNotFoundError):
        kfs.read_dataset_as_sdf(spark, "nope", kf.Store(f"file://{tmp_path}"))
    monkeypatch.setitem(sys.modules, "pyspark", None)
    with pytest.raises(MissingDependencyError, match=r"kartoframe\[spark\]"):
        kfs.read_dataset_as_sdf(spark, "ds", kf.Store(f"file://{tmp_path}"))


@pytest.mark.s3
def test_object_store_round_trip(spark, s3_store) -> None:
    """Executors read object stores through fsspec (Spark has no s3a connector here)."""
    df = all_types_frame()
    kf.store_dataframes_as_dataset(
        store=s3_store, dataset_uuid="ds", dfs=[df], partition_on=["p", "q"]
    )
    sdf = kfs.read_dataset_as_sdf(spark, "ds", s3_store, predicates=[[("p", "!=", 1)]])
    want = kartoframe_expected("ds", s3_store, predicates=[[("p", "!=", 1)]])
    assert_tables_equal(sdf.toArrow(), want)
    assert rows(want)[0]["p"] != 1
