"""The names writes generate (``kartoframe.format.generated``): what maintenance may delete."""

from __future__ import annotations

import pytest

from kartoframe.format import generated, naming

HEX = "0123456789abcdef" * 2

GENERATED = [
    f"ds/table/p=1/{HEX}.parquet",
    f"ds/table/p=1/q=a%2Fb/{HEX}.parquet",
    f"ds/table/{HEX}.parquet",
    f"ds/table/p=1/{HEX}.csv",
    f"ds/table/p=1/{HEX}.csv.gz",
    "ds/indices/v/2024-01-01T00%3A00%3A00.by-dataset-index.parquet",
    "ds/_kartoframe/stats/2024-01-01T00%3A00%3A00.statistics.pq",
]
TEMPS = [
    f"ds/table/p=1/.{HEX}.parquet.tmp-{HEX}",
    f"ds/_kartoframe/log/.00000000000000000003.json.tmp-{HEX}",
    f".ds.by-dataset-metadata.json.tmp-{HEX}",
    ".ds.by-dataset-metadata.msgpack.zstd.tmp-ff",
]
FOREIGN = [
    "ds/table/notes.txt",
    "ds/table/p=1/data.parquet",  # not a file uuid
    f"ds/table/p=1/{HEX.upper()}.parquet",
    f"ds/_kartoframe/p=1/{HEX}.parquet",  # a reserved "table"
    f"ds/indices/p=1/{HEX}.parquet",
    "ds/indices/readme.md",
    "ds/_kartoframe/stats/notes.json",
    ".ds.notes.tmp-backup",
    f".ds.by-dataset-metadata.json.tmp-{HEX}x",
    f"ds/table/.notes.txt.tmp-{HEX}",
    f"other/table/p=1/{HEX}.parquet",
    f"ds2/table/p=1/{HEX}.parquet",
]


@pytest.mark.parametrize("key", GENERATED)
def test_collectable_names(key: str) -> None:
    assert generated.is_collectable(key, "ds", "table")
    assert generated.is_dataset_file(key, "ds")


@pytest.mark.parametrize("key", TEMPS)
def test_temp_names(key: str) -> None:
    assert generated.is_temp_file(key, "ds", "table")
    assert not generated.is_collectable(key, "ds", "table")
    assert generated.is_dataset_file(key, "ds")


@pytest.mark.parametrize("key", FOREIGN)
def test_foreign_names_are_never_generated(key: str) -> None:
    assert not generated.is_collectable(key, "ds", "table")
    assert not generated.is_temp_file(key, "ds", "table")
    assert not generated.is_dataset_file(key, "ds")


def test_data_files_of_another_table_only_without_a_table() -> None:
    key = f"ds/other/p=1/{HEX}.parquet"
    assert not generated.is_data_file(key, "ds", "table")
    assert generated.is_data_file(key, "ds")


def test_schema_log_and_header_names() -> None:
    assert generated.is_dataset_file("ds/table/_common_metadata", "ds")
    assert generated.is_dataset_file("ds/_kartoframe/log/00000000000000000007.json", "ds")
    assert generated.is_dataset_file(
        "ds/_kartoframe/log/00000000000000000010.checkpoint.json", "ds"
    )
    assert generated.is_dataset_file("ds.by-dataset-metadata.json", "ds")
    assert not generated.is_collectable("ds/_kartoframe/log/00000000000000000007.json", "ds", None)


@pytest.mark.parametrize("name", ["_kartoframe", "indices", "a/b", "", ".", "t.v1", None])
def test_table_names_writes_never_generate(name: object) -> None:
    assert not generated.is_table_name(name)
    assert naming.reserved_table_reason(name) is not None


def test_table_names_writes_generate() -> None:
    for name in ("table", "core", "t-1+x_y"):
        assert generated.is_table_name(name)
