"""``plan/pruning.partition_values_table`` parses labels column-wise (Arrow splits them, each
distinct value is parsed once); it must give exactly what the per-label parser gives, and
fall back to it for labels it cannot split (legacy values with an unescaped ``/``).
"""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from kartoframe.errors import CorruptMetadataError
from kartoframe.format.naming import make_label
from kartoframe.format.values import render_partition_value
from kartoframe.plan.pruning import partition_values, partition_values_table

SCHEMA = pa.schema(
    [
        ("s", pa.string()),
        ("i", pa.int64()),
        ("d", pa.date32()),
        ("b", pa.bool_()),
        ("f", pa.float64()),
        ("x", pa.float64()),
    ]
)
KEYS = ["s", "i", "d", "b", "f"]
STRINGS = ["DE", "a/b", "x=y", "100%", "ü ñ", "", "__HIVE__", "a b+c"]


def _value(key: str, j: int) -> object:
    return {
        "s": STRINGS[j % len(STRINGS)],
        "i": j % 7 - 3,
        "d": dt.date(2024, 1, 1) + dt.timedelta(days=j % 5),
        "b": j % 2 == 0,
        "f": (j % 3) / 4,
    }[key]


def _labels(n: int, keys: list[str] = KEYS) -> list[str]:
    return [
        make_label([(k, render_partition_value(_value(k, j))) for k in keys], f"file{j:04d}")
        for j in range(n)
    ]


def _per_label(labels: list[str], keys: list[str]) -> pa.Table:
    rows = [partition_values(lb, keys, SCHEMA) for lb in labels]
    cols = {"__label__": pa.array(labels, type=pa.string())}
    for i, k in enumerate(keys):
        cols[k] = pa.array([r[i] for r in rows], type=SCHEMA.field(k).type)
    return pa.table(cols)


@pytest.mark.parametrize("keys", [KEYS, ["i"], ["d", "s"], []])
def test_column_wise_equals_per_label(keys: list[str]) -> None:
    labels = _labels(200, keys)
    got = partition_values_table(labels, keys, SCHEMA)
    assert got.equals(_per_label(labels, keys))
    assert got.num_rows == 200
    if keys:
        assert got[keys[0]].to_pylist() == [_value(keys[0], j) for j in range(200)]


def test_legacy_labels_fall_back_to_the_per_label_parser() -> None:
    # plateau wrote "/" inside a value unescaped: the value spans two components
    labels = ["s=a/b/i=1/d=2024-01-01/b=True/f=0.5/file1", *_labels(3)]
    got = partition_values_table(labels, KEYS, SCHEMA)
    assert got.equals(_per_label(labels, KEYS))
    assert got["s"][0].as_py() == "a/b"


def test_keys_in_another_order_fall_back() -> None:
    labels = ["i=1/s=x/file1", "s=y/i=2/file2"]
    got = partition_values_table(labels, ["s", "i"], SCHEMA)
    assert got.to_pydict() == {"__label__": labels, "s": ["x", "y"], "i": [1, 2]}


def test_a_label_without_a_key_is_corrupt() -> None:
    with pytest.raises(CorruptMetadataError, match="lacks partition key"):
        partition_values_table(["s=x/file1", "s=y/i=2/file2"], ["s", "i"], SCHEMA)


def test_a_value_of_the_wrong_type_is_corrupt() -> None:
    with pytest.raises(CorruptMetadataError):
        partition_values_table(["i=abc/file1"], ["i"], SCHEMA)


def test_no_labels() -> None:
    got = partition_values_table([], ["s", "i"], SCHEMA)
    assert got.num_rows == 0 and got.column_names == ["__label__", "s", "i"]


def test_well_formed_labels_take_the_column_wise_path() -> None:
    from kartoframe.plan import pruning

    names = pa.array(_labels(50), type=pa.string())
    assert pruning._key_columns(names, KEYS, SCHEMA) is not None
    legacy = pa.array(["s=a/b/i=1/d=2024-01-01/b=True/f=0.5/file1"], type=pa.string())
    assert pruning._key_columns(legacy, KEYS, SCHEMA) is None


@pytest.mark.parametrize("keys", [KEYS, ["i"], ["d", "s"], []])
def test_value_rows_equal_the_per_label_values(keys: list[str]) -> None:
    from kartoframe.plan.pruning import partition_value_rows

    labels = _labels(100, keys)
    rows = partition_value_rows(labels, keys, SCHEMA)
    expected = [partition_values(lb, keys, SCHEMA) for lb in labels]
    assert rows == expected
    assert [tuple(map(type, r)) for r in rows] == [tuple(map(type, r)) for r in expected]


def test_value_rows_keep_what_the_per_label_parser_keeps() -> None:
    from kartoframe.plan.pruning import partition_value_rows

    small = pa.schema([("i", pa.int8()), ("t", pa.timestamp("us"))])
    labels = ["i=1/t=2024-01-01%2000%3A00%3A00/f1", "i=300/t=2024-01-02%2000%3A00%3A00/f2"]
    assert partition_value_rows(labels, ["i", "t"], small) == [
        partition_values(lb, ["i", "t"], small) for lb in labels
    ]
    # out of int8's range: the column-wise path gives up, the per-label parser answers
    assert partition_value_rows(["i=1/f1", "i=300/f2"], ["i"], small) == [(1,), (300,)]
