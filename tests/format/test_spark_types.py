"""The pure Arrow <-> Spark type mapping (no SparkSession needed)."""

from __future__ import annotations

import datetime as dt
import urllib.parse

import pyarrow as pa
import pytest

from kartoframe.errors import InvalidTypeError, SchemaError
from kartoframe.format import naming
from kartoframe.format.spark_types import (
    from_spark_schema,
    from_spark_table,
    from_spark_type,
    native_parquet_readable,
    partition_text_castable,
    spark_arrow_type,
    spark_unescape,
    to_spark_schema,
    to_spark_table,
    to_spark_type,
)

ROUND_TRIP = [
    (pa.bool_(), "boolean"),
    (pa.int8(), "byte"),
    (pa.int16(), "short"),
    (pa.int32(), "integer"),
    (pa.int64(), "long"),
    (pa.float32(), "float"),
    (pa.float64(), "double"),
    (pa.string(), "string"),
    (pa.binary(), "binary"),
    (pa.date32(), "date"),
    (pa.timestamp("us"), "timestamp_ntz"),
    (pa.timestamp("us", tz="UTC"), "timestamp"),
    (pa.decimal128(10, 2), "decimal(10,2)"),
    (pa.null(), "void"),
]


@pytest.mark.parametrize(("arrow", "spark"), ROUND_TRIP)
def test_round_trip(arrow: pa.DataType, spark: str) -> None:
    assert to_spark_type(arrow) == spark
    assert from_spark_type(spark) == arrow


def test_normalising_mappings() -> None:
    assert to_spark_type(pa.large_string()) == "string"
    assert to_spark_type(pa.dictionary(pa.int32(), pa.string())) == "string"
    assert to_spark_type(pa.uint64()) == "decimal(20,0)"
    assert to_spark_type(pa.uint32()) == "long"
    assert to_spark_type(pa.timestamp("ns", tz="Europe/Berlin")) == "timestamp"
    assert spark_arrow_type(pa.timestamp("ns", tz="Europe/Berlin")) == pa.timestamp("us", "UTC")
    assert spark_arrow_type(pa.uint64()) == pa.decimal128(20, 0)
    assert from_spark_type("varchar(10)") == pa.string()
    assert from_spark_type("string collate UTF8_LCASE") == pa.string()


def test_nested_types() -> None:
    t = pa.struct([("a", pa.list_(pa.int64())), ("m", pa.map_(pa.string(), pa.float64()))])
    spark = to_spark_type(t)
    assert spark["type"] == "struct"
    assert from_spark_type(spark) == t


def test_schema_round_trip() -> None:
    schema = pa.schema([("a", pa.int64()), ("we`ird name", pa.string())])
    struct = to_spark_schema(schema)
    assert [f["name"] for f in struct["fields"]] == ["a", "we`ird name"]
    assert from_spark_schema(struct) == schema
    only = to_spark_schema(schema, ["a"], overrides={"a": "string"})
    assert only["fields"][0]["type"] == "string"


def test_unsupported_types_name_the_column() -> None:
    with pytest.raises(InvalidTypeError, match="'t'"):
        to_spark_type(pa.time64("us"), "t")
    with pytest.raises(InvalidTypeError, match="interval"):
        from_spark_type("interval day to second", "iv")
    dup = {"type": "struct", "fields": [{"name": "a", "type": "long"}] * 2}
    with pytest.raises(InvalidTypeError, match="Duplicate"):
        from_spark_schema(dup)


def test_to_spark_table_refuses_lossy_nanoseconds() -> None:
    target = pa.schema([("ts", pa.timestamp("us"))])
    with pytest.raises(SchemaError, match="'ts'"):
        to_spark_table(pa.table({"ts": pa.array([1_001], pa.timestamp("ns"))}), target)
    exact = to_spark_table(pa.table({"ts": pa.array([2_000], pa.timestamp("ns"))}), target)
    assert exact["ts"].to_pylist() == [dt.datetime(1970, 1, 1, 0, 0, 0, 2)]


def test_to_spark_table_casts_by_name() -> None:
    table = pa.table(
        {
            "u": pa.array([2**64 - 1], pa.uint64()),
            "i": pa.array([1], pa.int8()),
            "n": pa.array([None], pa.null()),
            "c": pa.array(["x"]).dictionary_encode(),
        }
    )
    target = pa.schema(
        [
            ("c", pa.string()),
            ("n", pa.string()),
            ("i", pa.int64()),
            ("u", pa.decimal128(20, 0)),
        ]
    )
    got = to_spark_table(table, target)
    assert got.schema == target
    assert got.to_pylist() == [{"c": "x", "n": None, "i": 1, "u": 2**64 - 1}]


def test_from_spark_table_moves_instants_to_the_dataset_zone() -> None:
    t = pa.table({"t": pa.array([0], pa.timestamp("us", tz="America/New_York"))})
    assert from_spark_table(t)["t"].type == pa.timestamp("us", tz="UTC")
    berlin = from_spark_table(t, {"t": "Europe/Berlin"})["t"]
    assert berlin.type.tz == "Europe/Berlin"
    assert berlin.cast(pa.int64()).to_pylist() == [0]  # same instant


def test_native_readable() -> None:
    assert native_parquet_readable(pa.int64())
    assert native_parquet_readable(pa.list_(pa.string()))
    assert not native_parquet_readable(pa.uint64())
    assert not native_parquet_readable(pa.null())
    assert not native_parquet_readable(pa.struct([("u", pa.uint8())]))


@pytest.mark.parametrize(
    "value", ["abc", "a b", "a/b", "x=y", "100%", "ü", "€", "日本", "tab\tx", "Ã¼"]
)
def test_spark_unescape_matches_kartoframe_for_ascii_only(value: str) -> None:
    quoted = naming.quote(value)
    same = spark_unescape(quoted) == naming.unquote(quoted)
    assert same == value.isascii()
    # Spark's decoding is the Latin-1 reading of the escaped bytes
    assert spark_unescape(quoted) == urllib.parse.unquote(quoted, encoding="latin-1")


@pytest.mark.parametrize(
    ("text", "t", "ok"),
    [
        ("001", pa.int64(), True),
        ("-5", pa.int64(), True),
        ("1_000", pa.int64(), False),
        (" 1", pa.int64(), False),
        ("1.5", pa.float64(), True),
        ("1e3", pa.float64(), True),
        ("nan", pa.float64(), False),
        ("True", pa.bool_(), True),
        ("1", pa.bool_(), False),
        ("2024-01-31", pa.date32(), True),
        ("2024-01-31 00:00:00", pa.date32(), False),
        ("2024-01-31 10:00:00.123456", pa.timestamp("us"), True),
        ("2024-01-31 10:00:00+01:00", pa.timestamp("us"), False),
        ("2024-01-31 10:00:00+01:00", pa.timestamp("us", tz="UTC"), True),
        ("2024-01-31 10:00:00", pa.timestamp("us", tz="UTC"), False),
        ("12.34", pa.decimal128(5, 2), True),
        ("12.345", pa.decimal128(5, 2), False),
        ("1234.5", pa.decimal128(5, 2), False),
        ("18446744073709551615", pa.uint64(), True),
        ("anything", pa.string(), True),
    ],
)
def test_partition_text_castable(text: str, t: pa.DataType, ok: bool) -> None:
    assert partition_text_castable(text, t) is ok
