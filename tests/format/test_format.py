"""Pure format code: naming/quoting, header codec, schema normalisation, values, indices."""

from __future__ import annotations

import datetime as dt
import json

import msgpack
import pandas as pd
import pyarrow as pa
import pytest
import zstandard

from kartoframe.errors import (
    CorruptMetadataError,
    InvalidTypeError,
    InvalidUUIDError,
    UnsafePathError,
    UnsupportedVersionError,
)
from kartoframe.format import naming
from kartoframe.format.header import DatasetHeader, decode_header, encode_header
from kartoframe.format.index import build_index, index_from_bytes, index_to_bytes, merge_index
from kartoframe.format.schema import (
    compatible_merge,
    normalize_schema,
    schema_from_bytes,
    schema_to_bytes,
)
from kartoframe.format.values import (
    normalize_literal,
    parse_partition_value,
    render_partition_value,
)


@pytest.mark.parametrize("good", ["a", "A-b_c+d", "my_cube++seed", "0d6de3c6-b7a4"])
def test_valid_uuids(good: str) -> None:
    assert naming.validate_uuid(good) == good


@pytest.mark.parametrize("bad", ["", "a.b", "a/b", "..", "a\\b", "a\x00", "ü", " a", 5, None])
def test_invalid_uuids(bad) -> None:
    with pytest.raises(InvalidUUIDError):
        naming.validate_uuid(bad)


@pytest.mark.parametrize(
    ("value", "quoted"),
    [("a=b%c", "a%3Db%25c"), ("ü x", "%C3%BC%20x"), ("a/b", "a%2Fb"), ("~.-_", "~.-_"), ("", "")],
)
def test_quote(value: str, quoted: str) -> None:
    assert naming.quote(value) == quoted
    assert naming.unquote(quoted) == value


def test_label_round_trip_and_legacy_slash() -> None:
    label = naming.make_label([("P", "1"), ("L", "a b/c")], "f00")
    assert label == "P=1/L=a%20b%2Fc/f00"
    assert naming.parse_label(label, ["P", "L"]) == [("P", "1"), ("L", "a b/c")]
    # plateau wrote "/" unescaped: the value spans two components
    legacy = "P=1/L=a%20b/c/f00"
    assert naming.parse_label(legacy, ["P", "L"]) == [("P", "1"), ("L", "a b/c")]
    assert naming.parse_label("f00", []) == []


@pytest.mark.parametrize(
    "key", ["../x.parquet", "/abs/x.parquet", "ds/../x", "other/x.parquet", "ds/a\\b"]
)
def test_keys_outside_dataset_are_refused(key: str) -> None:
    with pytest.raises(UnsafePathError):
        naming.check_key_inside(key, "ds")


def _header() -> DatasetHeader:
    return DatasetHeader(
        uuid="ds",
        partitions={"p=1/abc": "ds/table/p=1/abc.parquet"},
        partition_keys=("p",),
        indices={"x": "ds/indices/x/2020.by-dataset-index.parquet"},
        metadata={"creation_time": "2020-01-01T00:00:00+00:00", "ü": "Grüße"},
    )


@pytest.mark.parametrize("fmt", ["json", "msgpack"])
def test_header_round_trip_keeps_key_order(fmt) -> None:
    md = _header().replace(storage_format=fmt)
    data = encode_header(md)
    back = decode_header(data, "ds", fmt)
    assert back.to_dict() == md.to_dict()
    raw = (
        json.loads(data)
        if fmt == "json"
        else msgpack.unpackb(zstandard.ZstdDecompressor().decompress(data))
    )
    assert list(raw) == [
        "dataset_metadata_version",
        "dataset_uuid",
        "indices",
        "metadata",
        "partitions",
        "partition_keys",
    ]
    assert raw["partitions"]["p=1/abc"] == {"files": {"table": "ds/table/p=1/abc.parquet"}}


def test_header_errors_name_the_key() -> None:
    good = _header().to_dict()
    for key, value in [
        ("partition_keys", 5),
        ("partitions", []),
        ("dataset_metadata_version", "4"),
        ("metadata", "x"),
        ("indices", [1]),
    ]:
        raw = dict(good, **{key: value})
        with pytest.raises(CorruptMetadataError, match=key):
            decode_header(json.dumps(raw).encode(), "ds", "json")
    for version in (3, 5):
        with pytest.raises(UnsupportedVersionError, match=str(version)):
            decode_header(
                json.dumps(dict(good, dataset_metadata_version=version)).encode(), "ds", "json"
            )
    with pytest.raises(CorruptMetadataError):
        decode_header(encode_header(_header())[:-5], "ds", "json")
    with pytest.raises(CorruptMetadataError):
        decode_header(
            encode_header(_header().replace(storage_format="msgpack"))[:-3], "ds", "msgpack"
        )


def test_unknown_top_level_keys_are_preserved() -> None:
    raw = dict(_header().to_dict(), kartoframe={"v": 1})
    md = decode_header(json.dumps(raw).encode(), "ds", "json")
    assert md.to_dict()["kartoframe"] == {"v": 1}


def test_schema_normalisation() -> None:
    df = pd.DataFrame(
        {
            "z": pd.array([1], dtype="int8"),
            "a": pd.array([1.0], dtype="float32"),
            "c": pd.Categorical(["x"]),
            "s": ["x"],
            "p": [1],
            "ts": pd.to_datetime(["2020-01-01"]).as_unit("ns"),
            "n": pd.array([1], dtype="Int16"),
        }
    )
    schema = normalize_schema(pa.Schema.from_pandas(df, preserve_index=False), ["p"])
    assert schema.names == ["p", "a", "c", "n", "s", "ts", "z"]
    assert [str(t) for t in schema.types] == [
        "int64",
        "double",
        "string",
        "int64",
        "string",
        "timestamp[us]",
        "int64",
    ]
    back = schema_from_bytes(schema_to_bytes(schema), ["p"])
    assert back.equals(schema)
    meta = json.loads(schema.metadata[b"pandas"])
    by_name = {c["name"]: c for c in meta["columns"]}
    assert by_name["n"]["numpy_type"] == "Int64"
    assert by_name["ts"]["numpy_type"] == "datetime64[ns]"
    assert meta["index_columns"] == []


def test_schema_compatibility() -> None:
    a = pa.schema([("x", pa.int64()), ("y", pa.null())])
    b = pa.schema([("x", pa.int64()), ("y", pa.string())])
    assert compatible_merge(a, b, dataset_uuid="d", origin="o").field("y").type == pa.string()
    c = pa.schema([("x", pa.string()), ("y", pa.string())])
    with pytest.raises(ValueError, match="column 'x': int64 in reference, string in new data"):
        compatible_merge(b, c, dataset_uuid="d", origin="partition 2")
    d = pa.schema([("x", pa.uint64()), ("y", pa.string())])
    with pytest.raises(ValueError, match="uint64"):
        compatible_merge(b, d, dataset_uuid="d", origin="o")


@pytest.mark.parametrize(
    ("value", "t", "text"),
    [
        (True, pa.bool_(), "True"),
        (False, pa.bool_(), "False"),
        (-5, pa.int64(), "-5"),
        (1.5, pa.float64(), "1.5"),
        ("a b/c", pa.string(), "a b/c"),
        (dt.date(2021, 1, 1), pa.date32(), "2021-01-01"),
        (pd.Timestamp("2021-06-30 13:14:15.5"), pa.timestamp("us"), "2021-06-30 13:14:15.500000"),
        (
            pd.Timestamp("2021-01-01 10:00", tz="Europe/Berlin"),
            pa.timestamp("us", tz="Europe/Berlin"),
            "2021-01-01 10:00:00+01:00",
        ),
    ],
)
def test_partition_value_round_trip(value, t, text) -> None:
    assert render_partition_value(value) == text
    back = parse_partition_value(text, t, "c")
    assert back == value
    if isinstance(value, pd.Timestamp) and value.tzinfo is not None:
        assert str(back.tzinfo) == "Europe/Berlin"


def test_partition_value_errors() -> None:
    with pytest.raises(CorruptMetadataError, match="'c'"):
        parse_partition_value("maybe", pa.bool_(), "c")
    with pytest.raises(CorruptMetadataError):
        parse_partition_value("x1", pa.int64(), "c")


@pytest.mark.parametrize(
    ("t", "value"),
    [
        (pa.int64(), "1"),
        (pa.int64(), 1.5),
        (pa.int64(), True),
        (pa.bool_(), 1),
        (pa.string(), 1),
        (pa.date32(), dt.datetime(2020, 1, 1)),
        (pa.timestamp("us"), pd.Timestamp("2020-01-01", tz="UTC")),
        (pa.timestamp("us", tz="UTC"), pd.Timestamp("2020-01-01")),
    ],
)
def test_wrong_literal_types(t, value) -> None:
    with pytest.raises(InvalidTypeError):
        normalize_literal("c", t, value)


def test_index_build_merge_and_codec() -> None:
    pairs = [
        pa.table({"x": pa.array([1, 2]), "label": ["a", "a"]}),
        pa.table({"x": pa.array([2, 3]), "label": ["b", "b"]}),
    ]
    idx = build_index("x", pa.int64(), pairs)
    as_dict = {
        v: sorted(lbls) for v, lbls in zip(idx["x"].to_pylist(), idx["partition"].to_pylist())
    }
    assert as_dict == {1: ["a"], 2: ["a", "b"], 3: ["b"]}
    merged = merge_index("x", idx, [pa.table({"x": pa.array([3, 4]), "label": ["c", "c"]})], ["a"])
    as_dict = {
        v: sorted(lbls) for v, lbls in zip(merged["x"].to_pylist(), merged["partition"].to_pylist())
    }
    assert as_dict == {2: ["b"], 3: ["b", "c"], 4: ["c"]}
    back = index_from_bytes(index_to_bytes(merged), "x")
    assert back.equals(merged)
    with pytest.raises(CorruptMetadataError):
        index_from_bytes(b"not parquet", "x")
    with pytest.raises(CorruptMetadataError, match="must have columns"):
        index_from_bytes(index_to_bytes(merged), "y")
