"""Writing datasets from Spark: same format as the pandas engine, one commit on the
driver, nothing left behind by a failed job."""

from __future__ import annotations

import datetime as dt
import decimal

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from spark_helpers import assert_tables_equal, kartoframe_expected

import kartoframe as kf
import kartoframe.spark as kfs
from kartoframe.api.read import plan_read
from kartoframe.errors import (
    DatasetExistsError,
    InvalidInputError,
    NullPartitionValueError,
    SchemaError,
)
from kartoframe.execution import spark_write
from kartoframe.execution.kernel import read_plan_table, read_task_table
from kartoframe.format.convert import table_to_frame
from kartoframe.format.spark_types import to_spark_schema

pytestmark = pytest.mark.spark

N = 40


def spark_input(n: int = N) -> pa.Table:
    """Every Spark type kartoframe stores, with nulls."""
    ids = list(range(n))

    def nulls(values: list, every: int) -> list:
        return [None if i % every == every - 1 else v for i, v in enumerate(values)]

    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "p": pa.array([i % 4 for i in ids], pa.int32()),
            "q": pa.array([["a b", "ü/€"][i % 2] for i in ids]),
            "i8": pa.array(nulls([i - 20 for i in ids], 5), pa.int8()),
            "i16": pa.array([i * 300 for i in ids], pa.int16()),
            "f32": pa.array(nulls([i / 4 for i in ids], 6), pa.float32()),
            "f64": pa.array(nulls([i / 3 if i % 7 else float("nan") for i in ids], 9)),
            "s": pa.array(nulls([f"s{i % 7}" for i in ids], 4), pa.string()),
            "b": pa.array(nulls([i % 3 == 0 for i in ids], 8), pa.bool_()),
            "d": pa.array(
                nulls([dt.date(1969, 12, 25) + dt.timedelta(days=i) for i in ids], 7), pa.date32()
            ),
            "ts": pa.array(
                nulls(
                    [dt.datetime(2021, 1, 1, 0, 0, 0, 123456) + dt.timedelta(hours=i) for i in ids],
                    6,
                ),
                pa.timestamp("us"),
            ),
            "tz": pa.array(
                nulls(
                    [
                        dt.datetime(2021, 3, 28, 0, 30, tzinfo=dt.UTC) + dt.timedelta(minutes=i)
                        for i in ids
                    ],
                    5,
                ),
                pa.timestamp("us", tz="UTC"),
            ),
            "dec": pa.array(
                nulls([decimal.Decimal(i) / 100 for i in ids], 3), pa.decimal128(10, 2)
            ),
            "bin": pa.array(nulls([bytes([i, 0]) for i in ids], 4), pa.binary()),
            "lst": pa.array(nulls([[i, None, i + 1] for i in ids], 5), pa.list_(pa.int64())),
        }
    )


def to_sdf(spark, table: pa.Table):
    """A Spark DataFrame with exactly the Spark types of the Arrow table (naive
    timestamps as ``timestamp_ntz``; ``createDataFrame`` alone makes them instants)."""
    from pyspark.sql.types import StructType

    return spark.createDataFrame(table, schema=StructType.fromJson(to_spark_schema(table.schema)))


def _expected_from_input(table: pa.Table, uuid: str, store: kf.Store) -> pa.Table:
    """The input in the dataset's column order and stored types."""
    schema = kf.read_dataset_metadata(uuid, store).schema
    cols = [table[f.name].cast(f.type) for f in schema]
    return pa.Table.from_arrays(cols, schema=pa.schema(list(schema)))


@pytest.mark.parametrize("partition_on", [[], ["p", "q"]])
def test_spark_to_kartoframe_pandas_dask_and_spark(spark, tmp_path, partition_on) -> None:
    store = kf.Store(f"file://{tmp_path}/store")
    table = spark_input()
    sdf = to_sdf(spark, table).repartition(3)
    kfs.store_dataset_from_sdf(sdf, store, "ds", partition_on=partition_on, secondary_indices=["s"])
    md = kf.read_dataset_metadata("ds", store)
    assert md.partition_keys == partition_on
    assert md.secondary_indices == ["s"]
    want = _expected_from_input(table, "ds", store)
    # exact values through the eager engine's Arrow path
    plan, st = plan_read("ds", store)
    assert_tables_equal(read_plan_table(plan, st, for_pandas=False), want)
    # pandas
    pdf = kf.read_table("ds", store)
    expected_pdf = table_to_frame(want, md.schema)
    pd.testing.assert_frame_equal(
        pdf.sort_values("id").reset_index(drop=True),
        expected_pdf.sort_values("id").reset_index(drop=True),
    )
    # dask
    ddf = kf.read_dataset_as_ddf("ds", store)
    got_dask = ddf.compute(scheduler="sync").sort_values("id").reset_index(drop=True)
    pd.testing.assert_frame_equal(got_dask, pdf.sort_values("id").reset_index(drop=True))
    # Spark again
    back = kfs.read_dataset_as_sdf(spark, "ds", store)
    assert_tables_equal(back.toArrow(), kartoframe_expected("ds", store))
    assert index_of("ds", store, "s") == index_truth("ds", store, "s")


def index_of(uuid: str, store: kf.Store, column: str) -> dict[object, set[str]]:
    index = kf.read_dataset_metadata(uuid, store).load_index(column)
    return {v: set(labels) for v, labels in zip(index[column], index["partition"])}


def index_truth(uuid: str, store: kf.Store, column: str) -> dict[object, set[str]]:
    """Value -> labels of the files holding it, computed from the data."""
    plan, st = plan_read(uuid, store, columns=[column])
    out: dict[object, set[str]] = {}
    for task in plan.tasks:
        for v in set(read_task_table(plan, task, st)[column].to_pylist()) - {None}:
            out.setdefault(v, set()).add(task.files[0].label)
    return out


@pytest.mark.interop
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_plateau_reads_spark_written_dataset(spark, tmp_path) -> None:
    plateau = pytest.importorskip("plateau.api.dataset")
    store = kf.Store(f"file://{tmp_path}/store")
    table = spark_input().drop_columns(["lst", "bin", "dec"])
    kfs.store_dataset_from_sdf(
        to_sdf(spark, table), store, "ds", partition_on=["p"], secondary_indices=["s"]
    )
    got = plateau.read_table("ds", f"hfs://{tmp_path}/store")
    want = kf.read_table("ds", store)
    got = got[list(want.columns)].sort_values("id").reset_index(drop=True)
    want = want.sort_values("id").reset_index(drop=True)
    for c in want.columns:
        a, b = got[c], want[c]
        if c in ("s", "q"):
            a, b = a.astype(object).where(a.notna(), None), b.astype(object).where(b.notna(), None)
        elif b.dtype.kind == "M":
            a = a.dt.as_unit("us")
        pd.testing.assert_series_equal(a, b, check_dtype=False, obj=c)
    sel = plateau.read_table("ds", f"hfs://{tmp_path}/store", predicates=[[("s", "==", "s3")]])
    assert sorted(sel["id"]) == [i for i in range(N) if i % 7 == 3 and i % 4 != 3]


def test_timestamps_are_microseconds_and_exact(spark, tmp_path) -> None:
    store = kf.Store(f"file://{tmp_path}/store")
    values = [
        dt.datetime(1900, 1, 1, 0, 0, 0, 1),
        dt.datetime(2262, 4, 11, 23, 47, 16, 854775),
        dt.datetime(2500, 1, 1, 12, 0, 0, 999999),  # beyond pandas' ns range
    ]
    table = pa.table({"id": [0, 1, 2], "t": pa.array(values, pa.timestamp("us"))})
    kfs.store_dataset_from_sdf(to_sdf(spark, table), store, "ds")
    for key in kf.read_dataset_metadata("ds", store).partitions.values():
        col = pq.read_metadata(store.path(key)).schema.column(1)
        assert col.logical_type.to_json().count("microseconds") == 1
    plan, st = plan_read("ds", store)
    assert sorted(read_plan_table(plan, st, for_pandas=False)["t"].to_pylist()) == values
    df = kf.read_table("ds", store)
    assert df["t"].dtype == "datetime64[us]"
    assert sorted(df["t"].dt.to_pydatetime().tolist()) == values
    back = kfs.read_dataset_as_sdf(spark, "ds", store).orderBy("id").toArrow()
    assert back["t"].to_pylist() == values


def test_update_with_delete_scope_keeps_indices(spark, tmp_path) -> None:
    store = kf.Store(f"file://{tmp_path}/store")
    df = pd.DataFrame(
        {
            "p": [1, 1, 2, 2],
            "k": ["a", "b", "a", "c"],
            "v": [1.0, 2.0, 3.0, 4.0],
            "t": pd.to_datetime(["2024-01-01"] * 4).tz_localize("Europe/Berlin"),
        }
    )
    kf.store_dataframes_as_dataset(
        store=store, dataset_uuid="ds", dfs=[df], partition_on=["p"], secondary_indices=["k"]
    )
    new = spark.createDataFrame(
        pa.table(
            {
                "p": pa.array([2, 3], pa.int64()),
                "k": ["z", "a"],
                "v": [5.0, 6.0],
                "t": pa.array([0, 1], pa.timestamp("us", tz="UTC")),
            }
        )
    )
    kfs.update_dataset_from_sdf(new, store, "ds", delete_scope=[{"p": 2}], metadata={"x": 1})
    md = kf.read_dataset_metadata("ds", store)
    assert md.metadata["x"] == 1
    # tz-aware column keeps the dataset's zone; the schema is unchanged
    assert md.schema.field("t").type == pa.timestamp("us", tz="Europe/Berlin")
    got = kf.read_table("ds", store).sort_values("v")
    assert got["v"].tolist() == [1.0, 2.0, 5.0, 6.0]
    assert got["t"].iloc[2] == pd.Timestamp(0, tz="UTC")
    assert index_of("ds", store, "k") == index_truth("ds", store, "k")
    assert set(index_of("ds", store, "k")) == {"a", "b", "z"}
    # delete-only update without data: the files holding "a" (p=1 and p=3) go
    kfs.update_dataset_from_sdf(None, store, "ds", delete_scope=[{"k": "a"}])
    assert sorted(kf.read_table("ds", store)["v"]) == [5.0]
    assert index_of("ds", store, "k") == index_truth("ds", store, "k")


def _keys(store: kf.Store) -> list[str]:
    return list(store.iter_keys(""))


def test_failed_jobs_leave_the_dataset_unchanged(spark, tmp_path) -> None:
    store = kf.Store(f"file://{tmp_path}/store")
    kf.store_dataframes_as_dataset(
        store=store,
        dataset_uuid="ds",
        dfs=[pd.DataFrame({"p": [1], "v": [1.0]})],
        partition_on=["p"],
    )
    before = _keys(store)
    header = store.get("ds.by-dataset-metadata.json")
    # an executor finds null partition values: the kartoframe error reaches the driver
    nulls = spark.createDataFrame(
        pa.table({"p": pa.array([1, None, 2] * 50, pa.int64()), "v": [1.0, 2.0, 3.0] * 50})
    ).repartition(2)
    with pytest.raises(NullPartitionValueError, match="'p'"):
        kfs.update_dataset_from_sdf(nulls, store, "ds", repartition=False)
    assert _keys(store) == before
    # the user's own computation fails in one Spark partition after others wrote files

    def explode(batches):
        for b in batches:
            if 150 in b.column(0).to_pylist():
                raise RuntimeError("boom at 150")
            yield b

    failing = (
        spark.range(0, 200, 1, 4)
        .mapInArrow(explode, "id long")
        .selectExpr("id % 3 AS p", "CAST(id AS DOUBLE) AS v")
    )
    with pytest.raises(Exception, match="boom at 150"):
        kfs.update_dataset_from_sdf(failing, store, "ds", repartition=False)
    assert _keys(store) == before
    assert store.get("ds.by-dataset-metadata.json") == header
    # schema mismatches are found on the driver before Spark runs anything
    wrong = spark.createDataFrame(pa.table({"p": [1], "v": ["not a float"]}))
    with pytest.raises(SchemaError, match="'v'"):
        kfs.update_dataset_from_sdf(wrong, store, "ds")
    assert _keys(store) == before
    assert len(kf.read_table("ds", store)) == 1


def test_create_rules(spark, tmp_path) -> None:
    store = kf.Store(f"file://{tmp_path}/store")
    sdf = spark.createDataFrame(pa.table({"a": [1, 2], "b": ["x", "y"]}))
    kfs.store_dataset_from_sdf(sdf, store, "ds", metadata_storage_format="msgpack")
    assert store.exists("ds.by-dataset-metadata.msgpack.zstd")
    with pytest.raises(DatasetExistsError):
        kfs.store_dataset_from_sdf(sdf, store, "ds")
    kfs.store_dataset_from_sdf(sdf.filter("a = 1"), store, "ds", overwrite=True)
    assert kf.read_table("ds", store)["a"].tolist() == [1]
    with pytest.raises(InvalidInputError, match="memory"):
        kfs.store_dataset_from_sdf(sdf, kf.Store("memory://x"), "ds")
    with pytest.raises(kf.ColumnNotFoundError):
        kfs.store_dataset_from_sdf(sdf, store, "other", partition_on=["nope"])
    with pytest.raises(kf.InvalidTypeError):
        kfs.store_dataset_from_sdf(pd.DataFrame({"a": [1]}), store, "other")
    # an empty DataFrame creates an empty dataset with its schema
    kfs.store_dataset_from_sdf(sdf.filter("a > 5"), store, "empty", partition_on=["b"])
    empty = kf.read_table("empty", store)
    assert list(empty.columns) == ["b", "a"] and len(empty) == 0
    assert kf.read_dataset_metadata("empty", store).schema.field("a").type == pa.int64()


def test_partitioned_write_makes_one_file_per_value(spark, tmp_path) -> None:
    store = kf.Store(f"file://{tmp_path}/store")
    n = 2000
    sdf = spark.range(0, n, 1, 4).selectExpr("id", "id % 5 AS p", "CAST(id AS STRING) AS s")
    kfs.store_dataset_from_sdf(sdf, store, "ds", partition_on=["p"])
    md = kf.read_dataset_metadata("ds", store)
    assert len(md.partitions) == 5
    assert sorted(kf.read_table("ds", store)["id"]) == list(range(n))
    kfs.store_dataset_from_sdf(sdf, store, "ds2", partition_on=["p"], repartition=False)
    assert len(kf.read_dataset_metadata("ds2", store).partitions) == 20
    # every file name starts with the job prefix, which is how a failed job is cleaned up
    prefixes = {k.rsplit("/", 1)[-1][:16] for k in md.partitions.values()}
    assert len(prefixes) == 1


@pytest.mark.s3
def test_object_store_write_and_read(spark, s3_store) -> None:
    table = spark_input()
    kfs.store_dataset_from_sdf(
        to_sdf(spark, table), s3_store, "ds", partition_on=["q"], secondary_indices=["s"]
    )
    want = _expected_from_input(table, "ds", s3_store)
    plan, st = plan_read("ds", s3_store)
    assert_tables_equal(read_plan_table(plan, st, for_pandas=False), want)
    sdf = kfs.read_dataset_as_sdf(spark, "ds", s3_store, predicates=[[("s", "==", "s1")]])
    assert sorted(r["id"] for r in sdf.collect()) == [
        i for i in range(N) if i % 7 == 1 and i % 4 != 3
    ]
    # a failed job leaves no files in the bucket either
    before = list(s3_store.iter_keys(""))
    rows5 = table.slice(0, 5)
    q_at = rows5.schema.get_field_index("q")
    bad = to_sdf(spark, rows5.set_column(q_at, "q", pa.array(["x", None, "y", "z", "w"])))
    with pytest.raises(NullPartitionValueError):
        kfs.update_dataset_from_sdf(bad, s3_store, "ds", repartition=False)
    assert list(s3_store.iter_keys("")) == before


def test_job_error_mapping() -> None:
    err = RuntimeError(
        "An exception was thrown from the Python worker:\nTraceback (most recent call last):\n"
        '  File "x.py", line 1\nkartoframe.errors.SchemaError: Schemas differ:\n  column x'
    )
    mapped = spark_write._worker_error(err)
    assert isinstance(mapped, kf.SchemaError)
    assert str(mapped) == "Schemas differ:\n  column x"
    assert spark_write._worker_error(RuntimeError("boom")) is None


def test_app_transactions_make_retried_spark_writes_idempotent(spark, tmp_path) -> None:
    store = kf.Store(f"file://{tmp_path}/store")
    sdf = spark.createDataFrame(pd.DataFrame({"p": [1, 2], "v": [1.0, 2.0]}))
    kfs.store_dataset_from_sdf(
        sdf,
        store,
        "ds",
        partition_on=["p"],
        app_id="etl",
        app_version=1,
        commit_info={"run": "a"},
    )
    for _ in range(2):  # the retried step commits once
        kfs.update_dataset_from_sdf(sdf, store, "ds", app_id="etl", app_version=2)
    assert len(kf.read_table("ds", store)) == 4
    history = kf.dataset_history("ds", store)
    assert len(history) == 2
    assert history[-1].commit_info == {"run": "a"}
    kfs.update_dataset_from_sdf(sdf, store, "ds", app_id="etl", app_version=1)  # older
    assert len(kf.read_table("ds", store)) == 4
